"""The one list of sub-scores: every number a :class:`~shared.SummaryEvaluation` reports.

Each entry says what the number needs (a judge always, a judge for part of it, or never), which
way is better, and its short column name. The result's ``sub_scores()``, the text-quality
dimension names, both adapters' metric sets, the CLI's columns and table, and the report all read
this list, so a new sub-score is declared here once (see "How to add a sub-score" below).

How to add a sub-score (a new text-quality dimension ``foo``):

1. Add ``SubScore("foo", ...)`` to :data:`SUB_SCORES` below (report order), saying what it
   needs (``needs``, ``needs_spacy``, ``needs_embeddings``) and, once validated against human
   ratings, its ``validity_rho``. Every set below (what a run without a judge skips, what loads
   spaCy or the embedder, what offline rows are ranked by) is computed from these fields.
2. Add ``foo`` to ``DimensionName`` in :mod:`shared.dimensions.evidence`, its evidence model
   and a ``foo`` field on ``DimensionEvidence``; compute it in :mod:`shared.dimensions.compute`
   (``build_evidence``). If it needs the judge, extend the style review in
   :mod:`shared.pipeline.steps` (the dimensions package never calls a judge).
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
    needs_spacy: bool = False
    """Computed from a spaCy parse of the summary (a dimension; grounding's source side needs
    none)."""
    needs_embeddings: bool = False
    """Computed with sentence embeddings (grounding version 2 compares each summary sentence's
    embedding with its source's)."""
    validity_rho: float | None = None
    """Spearman rho with the human rating it tracks on SummEval (docs/VALIDITY.md); None for a
    sub-score that does not track quality there (density and conciseness, or a judged one)."""

    @property
    def needs_judge(self) -> bool:
        """A judge fills it, fully or in part."""
        return self.needs != "nothing"

    @property
    def tracks_quality(self) -> bool:
        """Validated against human ratings: the offline ranking reads it."""
        return self.validity_rho is not None


HEADLINE = "score"
"""The headline sub-score: the F-beta (or min) of alignment and coverage."""

SUB_SCORES: tuple[SubScore, ...] = (
    SubScore("score", "judge", "score", False, description="F-beta of alignment and coverage"),
    SubScore("alignment", "judge", "align", False, description="share of claims supported"),
    SubScore("coverage", "judge", "cover", False, description="weighted share of points covered"),
    SubScore(
        "density",
        "nothing",
        "dens",
        True,
        description="entity density near the target",
        needs_spacy=True,
    ),
    SubScore(
        "specificity",
        "judge",
        "spec",
        True,
        description="1 - share of vague sentences",
        needs_spacy=True,
    ),
    SubScore(
        "non_redundancy",
        "judge_partly",
        "nonred",
        True,
        description="1 - repetition",
        needs_spacy=True,
        needs_embeddings=True,
        validity_rho=0.25,
    ),
    SubScore(
        "coherence",
        "nothing",
        "coher",
        True,
        description="local coherence",
        needs_spacy=True,
        needs_embeddings=True,
        validity_rho=0.41,
    ),
    SubScore("conciseness", "nothing", "concis", True, description="length penalty"),
    SubScore(
        "grounding",
        "nothing",
        "ground",
        True,
        description="share of names/numbers/dates sourced",
        needs_spacy=True,
        needs_embeddings=True,
        validity_rho=0.43,
    ),
)

SUB_SCORE_NAMES: tuple[str, ...] = tuple(s.name for s in SUB_SCORES)
"""Every sub-score name, headline first, in report order."""

DIMENSION_NAMES: tuple[str, ...] = tuple(s.name for s in SUB_SCORES if s.dimension)
"""The text-quality dimensions, in report order (the default of the ``dimensions`` option)."""

JUDGE_ONLY: tuple[str, ...] = tuple(s.name for s in SUB_SCORES if s.needs == "judge")
"""What a run without a judge leaves empty."""

USES_JUDGE: frozenset[str] = frozenset(s.name for s in SUB_SCORES if s.needs_judge)
"""What a judge call contributes to (fully or in part)."""

JUDGED_DIMENSIONS: frozenset[str] = frozenset(
    s.name for s in SUB_SCORES if s.dimension and s.needs_judge
)
"""The dimensions a judge contributes to (non_redundancy has a judged and a deterministic part;
without a judge only the latter runs)."""

SPACY_DIMENSIONS: frozenset[str] = frozenset(s.name for s in SUB_SCORES if s.needs_spacy)
"""The dimensions that parse the summary with spaCy."""

EMBEDDING_DIMENSIONS: frozenset[str] = frozenset(s.name for s in SUB_SCORES if s.needs_embeddings)
"""The dimensions that embed sentences."""

QUALITY_DIMENSIONS: tuple[str, ...] = tuple(
    s.name for s in sorted(SUB_SCORES, key=lambda s: -(s.validity_rho or 0.0)) if s.tracks_quality
)
"""The dimensions that track human ratings on SummEval, strongest first: what offline rows are
ranked by (the mean of those present)."""


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
    "EMBEDDING_DIMENSIONS",
    "HEADLINE",
    "JUDGED_DIMENSIONS",
    "JUDGE_ONLY",
    "NO_LLM_SUB_SCORES",
    "QUALITY_DIMENSIONS",
    "SPACY_DIMENSIONS",
    "SUB_SCORES",
    "SUB_SCORE_NAMES",
    "USES_JUDGE",
    "SubScore",
    "sub_score",
]
