"""The registered text-quality dimensions, in report order: the one place a dimension is listed.

Each module declares its :class:`~shared.dimensions.spec.DimensionSpec` as ``SPEC``; this list
registers them (importing :mod:`shared.dimensions` runs it). The order is the report's: the
columns of a results file, the lines of a reason, the fields of a result.
"""

from __future__ import annotations

from . import coherence, conciseness, density, grounding, redundancy, specificity
from .spec import DimensionSpec, register_dimension

BUILT_IN: tuple[DimensionSpec, ...] = (
    density.SPEC,
    specificity.SPEC,
    redundancy.SPEC,
    coherence.SPEC,
    conciseness.SPEC,
    grounding.SPEC,
)

for _spec in BUILT_IN:
    register_dimension(_spec)

__all__ = ["BUILT_IN"]
