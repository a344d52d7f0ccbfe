"""Moved to :mod:`shared.runs.results`;
``shared.cli.results`` is the same module object, kept for one release.
"""

import sys

from ..runs import results as _moved

sys.modules[__name__] = _moved
