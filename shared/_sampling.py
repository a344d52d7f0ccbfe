"""Moved to :mod:`shared.pipeline.sampling`;
``shared._sampling`` is the same module object, kept for one release.
"""

import sys

from .pipeline import sampling as _moved

sys.modules[__name__] = _moved
