"""Moved to :mod:`shared.judge.openai`;
``shared.openai_judge`` is the same module object, kept for one release.
"""

import sys

from .judge import openai as _moved

sys.modules[__name__] = _moved
