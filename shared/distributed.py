"""Moved to :mod:`shared.runs.distributed`;
``shared.distributed`` is the same module object, kept for one release.
"""

import sys

from .runs import distributed as _moved

sys.modules[__name__] = _moved
