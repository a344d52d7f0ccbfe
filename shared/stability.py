"""Moved to :mod:`shared.analysis.stability`;
``shared.stability`` is the same module object, kept for one release.
"""

import sys

from .analysis import stability as _moved

sys.modules[__name__] = _moved
