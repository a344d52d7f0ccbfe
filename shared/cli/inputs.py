"""Moved to :mod:`shared.runs.inputs`;
``shared.cli.inputs`` is the same module object, kept for one release.
"""

import sys

from ..runs import inputs as _moved

sys.modules[__name__] = _moved
