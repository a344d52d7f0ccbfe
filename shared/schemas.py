"""Moved to :mod:`shared.prompts.schemas`;
``shared.schemas`` is the same module object, kept for one release.
"""

import sys

from .prompts import schemas as _moved

sys.modules[__name__] = _moved
