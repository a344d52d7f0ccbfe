"""Pure scoring math over typed evidence: no LLM, no I/O.

Every function here is total over its documented domain and is pinned by the golden tables in
``tests/test_scoring.py``. Keeping the math apart from the judge calls is what makes it testable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Combine = Literal["fbeta", "min"]

MAX_GRADE = 5


def f_beta(precision: float, recall: float, beta: float = 1.0) -> float:
    """F-beta of precision (alignment) and recall (coverage).

    ``beta > 1`` weighs recall (coverage) more, ``beta < 1`` precision (alignment). Defined as 0
    when both inputs are 0 (the limit along any path is 0, and a summary with neither property is
    the worst case), so the function is total on [0, 1]².
    """
    _check_unit("precision", precision)
    _check_unit("recall", recall)
    if beta <= 0 or not math.isfinite(beta):
        raise ValueError(f"beta must be a positive finite number, got {beta!r}")
    b2 = beta * beta
    denominator = b2 * precision + recall
    if denominator == 0:
        return 0.0
    return (1 + b2) * precision * recall / denominator


def combine_scores(
    alignment: float, coverage: float, *, beta: float = 1.0, combine: Combine = "fbeta"
) -> float:
    """The summary score: F-beta by default, ``min`` for parity with DeepEval's rule."""
    if combine == "fbeta":
        return f_beta(alignment, coverage, beta)
    if combine == "min":
        _check_unit("alignment", alignment)
        _check_unit("coverage", coverage)
        return min(alignment, coverage)
    raise ValueError(f"combine must be 'fbeta' or 'min', got {combine!r}")


def weighted_coverage(importances: Sequence[int], grades: Sequence[int]) -> float:
    """``Σ w·g / (5·Σ w)``: importance-weighted mean grade, scaled to [0, 1].

    Raises ValueError on mismatched lengths, no questions, non-positive weights or grades outside
    0-5: coverage over zero questions is undefined, and defaulting it to 1 is a known bug of the
    peers (a summary would get full coverage for nothing).
    """
    if len(importances) != len(grades):
        raise ValueError(f"{len(importances)} importances but {len(grades)} grades")
    if not importances:
        raise ValueError("coverage is undefined without questions")
    for w in importances:
        if w <= 0:
            raise ValueError(f"importance must be positive, got {w!r}")
    for g in grades:
        if not 0 <= g <= MAX_GRADE:
            raise ValueError(f"grade must be in 0..{MAX_GRADE}, got {g!r}")
    total = sum(importances)
    return sum(w * g for w, g in zip(importances, grades, strict=True)) / (MAX_GRADE * total)


def alignment_ratio(supported: int, claims: int) -> float:
    """``supported / claims``; a summary that states no checkable claim aligns at 0.

    A summary with no claims has nothing that is faithful to the source; scoring it 1 would reward
    saying nothing. The pipeline reports the case in the reason, so the 0 is never silent.
    """
    if claims < 0 or supported < 0 or supported > claims:
        raise ValueError(f"need 0 <= supported <= claims, got {supported}/{claims}")
    if claims == 0:
        return 0.0
    return supported / claims


def _check_unit(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
