"""Moved to :mod:`shared.analysis.agreement`;
``shared.human_agreement`` is the same module object, kept for one release.
"""

import sys

from .analysis import agreement as _moved

sys.modules[__name__] = _moved
