"""What the report's "worst summaries" are sorted by.

With a judge: the headline score. Without one there is no score, and the mean of every
sub-score would let density and conciseness decide, which docs/VALIDITY.md shows do not track
human ratings (a length ratio ranks a good short summary below a bad long one). Offline rows are
ranked by the dimensions that do track quality, listed once in :data:`QUALITY_DIMENSIONS`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.subscores import HEADLINE
from ..dimensions import QUALITY_DIMENSIONS

__all__ = ["QUALITY_DIMENSIONS", "rank_basis", "rank_value"]
# QUALITY_DIMENSIONS: the dimensions whose spec has a validity_rho (shared/dimensions/)
# (docs/VALIDITY.md:
# grounding rho 0.43 with human consistency, coherence 0.41 and non_redundancy 0.25 with human
# coherence). A new validated dimension says so in its spec, and only there.


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def rank_value(row: Mapping[str, Any], keys: Sequence[str] = ()) -> float | None:
    """The headline score, else the mean of the quality dimensions present, else None (the row
    is not ranked). ``keys`` is accepted for the report's call and not needed."""
    score = _number(row.get(HEADLINE))
    if score is not None:
        return score
    values = [v for k in QUALITY_DIMENSIONS if (v := _number(row.get(k))) is not None]
    return statistics.fmean(values) if values else None


def rank_basis(has_score: bool) -> str:
    """The sentence the report shows above the ranking."""
    if has_score:
        return HEADLINE
    return (
        f"the mean of {', '.join(QUALITY_DIMENSIONS[:-1])} and {QUALITY_DIMENSIONS[-1]} "
        "(no judge, so no score; the dimensions that track human ratings per "
        "docs/VALIDITY.md — density and conciseness do not)"
    )
