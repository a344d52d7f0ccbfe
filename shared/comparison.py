"""Moved to :mod:`shared.analysis.comparison`;
``shared.comparison`` is the same module object, kept for one release.
"""

import sys

from .analysis import comparison as _moved

sys.modules[__name__] = _moved
