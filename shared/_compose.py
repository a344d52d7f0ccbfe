"""Moved to :mod:`shared.pipeline.compose`;
``shared._compose`` is the same module object, kept for one release.
"""

import sys

from .pipeline import compose as _moved

sys.modules[__name__] = _moved
