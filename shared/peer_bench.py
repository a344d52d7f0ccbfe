"""Moved to :mod:`shared.analysis.bench`;
``shared.peer_bench`` is the same module object, kept for one release.
"""

import sys

from .analysis import bench as _moved

sys.modules[__name__] = _moved
