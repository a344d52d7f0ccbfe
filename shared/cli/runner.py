"""Moved to :mod:`shared.runs.runner`;
``shared.cli.runner`` is the same module object, kept for one release.
"""

import sys

from ..runs import runner as _moved

sys.modules[__name__] = _moved
