"""Moved to :mod:`shared.pipeline.steps`;
``shared._judge_steps`` is the same module object, kept for one release.
"""

import sys

from .pipeline import steps as _moved

sys.modules[__name__] = _moved
