"""Moved to :mod:`shared.analysis.stats`;
``shared.stats`` is the same module object, kept for one release.
"""

import sys

from .analysis import stats as _moved

sys.modules[__name__] = _moved
