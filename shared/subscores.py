"""The one list of sub-scores: every number a :class:`~shared.SummaryEvaluation` reports.

Each entry says what the number needs (a judge always, a judge for part of it, or never), which
way is better, and its short column name. The result's ``sub_scores()``, the text-quality
dimension names, both adapters' metric sets, the CLI's columns and table, and the report all read
this list, so a new sub-score is declared here once (see "How to add a sub-score" below).

How to add a sub-score (a new text-quality dimension ``foo``):

1. Add ``SubScore("foo", ...)`` to :data:`SUB_SCORES` below (report order).
2. Add ``foo`` to ``DimensionName`` in :mod:`shared.dimensions.evidence`, its evidence model
   and a ``foo`` field on ``DimensionEvidence``; compute it in :mod:`shared.dimensions.compute`
   (``build_evidence``). If it needs the judge, extend the style review in
   :mod:`shared._judge_steps` (the dimensions package never calls a judge).
3. Add the ``foo: float | None = None`` field to :class:`shared.SummaryEvaluation`.
4. DeepEval: add ``SummaryFooMetric`` to ``deepeval_ext/_metrics.py`` and ``SUB_SCORE_METRICS``
   (``tests/test_option_surfaces.py`` fails until every sub-score has its metric). Ragas,
   the CLI's columns and the report pick it up from this list without an edit.

Dependency-free on purpose: everything else in the package may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Needs = Literal["judge", "judge_partly", "nothing"]


@dataclass(frozen=True)
class SubScore:
    """One reported number: a float in [0, 1] or None (unscored, or not computed)."""

    name: str
    needs: Needs
    """``judge``: only a judge fills it; ``judge_partly``: a judge refines a deterministic part
    that is reported without one; ``nothing``: computed from the text alone."""
    short: str
    """Column name in the CLI's table."""
    dimension: bool
    """True for a text-quality dimension (reported beside the score, never part of it)."""
    higher_is_better: bool = True
    description: str = ""


HEADLINE = "score"
"""The headline sub-score: the F-beta (or min) of alignment and coverage."""

SUB_SCORES: tuple[SubScore, ...] = (
    SubScore("score", "judge", "score", False, description="F-beta of alignment and coverage"),
    SubScore("alignment", "judge", "align", False, description="share of claims supported"),
    SubScore("coverage", "judge", "cover", False, description="weighted share of points covered"),
    SubScore("density", "nothing", "dens", True, description="entity density near the target"),
    SubScore("specificity", "judge", "spec", True, description="1 - share of vague sentences"),
    SubScore("non_redundancy", "judge_partly", "nonred", True, description="1 - repetition"),
    SubScore("coherence", "nothing", "coher", True, description="local coherence"),
    SubScore("conciseness", "nothing", "concis", True, description="length penalty"),
    SubScore(
        "grounding", "nothing", "ground", True, description="share of names/numbers/dates sourced"
    ),
)

SUB_SCORE_NAMES: tuple[str, ...] = tuple(s.name for s in SUB_SCORES)
"""Every sub-score name, headline first, in report order."""

DIMENSION_NAMES: tuple[str, ...] = tuple(s.name for s in SUB_SCORES if s.dimension)
"""The text-quality dimensions, in report order (the default of the ``dimensions`` option)."""

JUDGE_ONLY: tuple[str, ...] = tuple(s.name for s in SUB_SCORES if s.needs == "judge")
"""What a run without a judge leaves empty."""

USES_JUDGE: frozenset[str] = frozenset(s.name for s in SUB_SCORES if s.needs != "nothing")
"""What a judge call contributes to (fully or in part)."""


NO_LLM_SUB_SCORES: tuple[str, ...] = tuple(s.name for s in SUB_SCORES if s.needs == "nothing")
"""Sub-scores computed without any judge; their adapter metrics run without an LLM."""


def sub_score(name: str) -> SubScore:
    """The entry for ``name``; KeyError naming the known ones otherwise."""
    for item in SUB_SCORES:
        if item.name == name:
            return item
    raise KeyError(f"unknown sub-score {name!r}; expected one of {', '.join(SUB_SCORE_NAMES)}")


__all__ = [
    "DIMENSION_NAMES",
    "HEADLINE",
    "JUDGE_ONLY",
    "NO_LLM_SUB_SCORES",
    "SUB_SCORES",
    "SUB_SCORE_NAMES",
    "USES_JUDGE",
    "SubScore",
    "sub_score",
]
