"""Typed evidence for the text-quality dimensions (pydantic only: cheap to import).

Each dimension reports its score (float in [0, 1], higher is better, or None) together with a
``reason`` (how the number was reached, or why there is none) and the raw evidence behind it, so a
number can always be traced back to entities, sentence pairs or the judge's flags.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..core.subscores import (
    DIMENSION_NAMES,
    EMBEDDING_DIMENSIONS,
    JUDGED_DIMENSIONS,
    SPACY_DIMENSIONS,
)
from ..prompts import RepeatedPoint

DimensionName = str
"""A registered dimension's name (:data:`DIMENSIONS`)."""

DIMENSIONS: tuple[DimensionName, ...] = DIMENSION_NAMES  # type: ignore[assignment]
"""Every dimension, in report order (the default of the ``dimensions`` option): a live view of
the registered dimensions (:mod:`shared.dimensions.spec`)."""

# Declared on each dimension's spec; these names are the dimensions package's.
NEEDS_SPACY = SPACY_DIMENSIONS
NEEDS_EMBEDDINGS = EMBEDDING_DIMENSIONS
NEEDS_JUDGE = JUDGED_DIMENSIONS


class DimensionResult(BaseModel):
    """What every dimension carries: its score and the reason for it (or for its absence)."""

    score: float | None = Field(default=None, ge=0.0, le=1.0)
    reason: str = ""


class EntityMention(BaseModel):
    text: str
    label: str


class DensityEvidence(DimensionResult):
    entities: list[EntityMention] = Field(default_factory=list)
    entity_count: int = 0
    token_count: int = 0
    entity_density: float | None = None
    target: float
    tolerance: float


class FlaggedSentence(BaseModel):
    index: int = Field(description="1-based sentence number.")
    sentence: str
    reason: str


class SpecificityEvidence(DimensionResult):
    sentence_count: int = 0
    flagged: list[FlaggedSentence] = Field(default_factory=list)


class SentencePair(BaseModel):
    first: int = Field(description="1-based number of the earlier sentence.")
    second: int = Field(description="1-based number of the later sentence.")
    similarity: float


class NonRedundancyEvidence(DimensionResult):
    sentence_count: int = 0
    near_duplicates: list[SentencePair] = Field(default_factory=list)
    repeated_ngrams: list[str] = Field(default_factory=list)
    ngram_repeat_share: float | None = None
    deterministic_redundancy: float | None = None
    deterministic_score: float | None = None
    repeated_points: list[RepeatedPoint] | None = None
    """The judge's repeated points; None when no judge answered."""
    judge_redundancy: float | None = None


class EntityJump(BaseModel):
    """Adjacent sentences that share no entity or argument noun (a NOCB transition)."""

    first: int = Field(description="1-based number of the earlier sentence.")
    second: int = Field(description="1-based number of the later sentence (first + 1).")
    similarity: float | None = Field(
        default=None, description="Cosine of the two sentence embeddings (shown, not scored)."
    )


class CoherenceEvidence(DimensionResult):
    """Both coherence formulas' inputs, whichever one made ``score``.

    ``formula`` says which: ``"entity_grid"`` (default: ``0.5 ** (penalty / 2)`` with
    ``penalty = jumps + (repeated bigrams + fragments) / 2 + opening + restarts + short / 2``)
    or ``"article"`` (mean cosine of sentences i and i+2). ``article_score`` is the article's
    value either way, for parity.
    """

    formula: str = "entity_grid"
    sentence_count: int = 0
    penalty: float | None = None
    jumps: list[EntityJump] = Field(default_factory=list)
    repeated_bigrams: list[str] = Field(
        default_factory=list, description="Content word bigrams said more than once."
    )
    repeated_bigram_count: int = 0
    fragments: list[int] = Field(
        default_factory=list, description="1-based numbers of sentences without a subject."
    )
    opening: bool = Field(
        default=False, description="The first sentence starts with a pronoun or 'the'."
    )
    restarts: list[int] = Field(
        default_factory=list,
        description="1-based numbers of sentences starting with the previous one's first word.",
    )
    short_sentences: list[int] = Field(
        default_factory=list, description="1-based numbers of sentences of under 5 words."
    )
    truncated: bool | None = Field(
        default=None, description="The text ends without terminal punctuation (not scored)."
    )
    article_score: float | None = None
    gap: int | None = Field(default=None, description="2 (sentences i, i+2) or 1 (two sentences).")
    similarities: list[float] = Field(default_factory=list)


class ConcisenessEvidence(DimensionResult):
    summary_chars: int
    source_chars: int


class GroundingItem(BaseModel):
    """One checkable item of the summary (a name, number or date) and whether the source has it."""

    text: str
    label: str = Field(description="spaCy label (PERSON, MONEY, ...) or NUMBER")
    sentence: str = Field(description="The summary sentence it is in.")
    supported: bool
    how: str = Field(default="", description="Which rule found it in the source, or why not.")
    source_part: int | None = Field(default=None, description="0-based source string it is in.")
    source_offset: int | None = Field(default=None, description="Char offset in that string.")
    source_snippet: str | None = None


class SentenceSupport(BaseModel):
    """How well the source supports one summary sentence (grounding version 2)."""

    index: int = Field(description="1-based sentence number.")
    sentence: str
    support: float = Field(ge=0.0, le=1.0, description="The sentence model's support, 0 to 1.")
    best_source: str | None = Field(
        default=None,
        description="The source sentence that supports it best (None: none shares its words).",
    )
    failed: list[str] = Field(default_factory=list, description="The checks it failed.")
    signals: dict[str, float] = Field(
        default_factory=dict, description="The signals the support was computed from."
    )


class GroundingEvidence(DimensionResult):
    """The grounding dimension. Version 2 (the default): ``score`` combines the support of each
    summary sentence (``sentences``; :mod:`shared.dimensions.support`), the least supported one
    named by ``least_supported``. The names, numbers and dates checked (version 1's items) are
    kept: ``items_score`` is version 1's smoothed, weighted share supported; ``share`` the raw
    one."""

    version: int = Field(default=1, description="1: items only; 2: per-sentence support.")
    sentences: list[SentenceSupport] = Field(default_factory=list)
    least_supported: int | None = Field(
        default=None, description="1-based number of the least supported sentence."
    )
    items_score: float | None = Field(
        default=None, description="Version 1's score (names, numbers, dates only)."
    )

    item_count: int = 0
    supported_count: int = 0
    share: float | None = Field(default=None, description="supported / items, unsmoothed")
    prior: float = Field(description="Pseudo-items counted as supported (the smoothing).")
    unsupported: list[GroundingItem] = Field(default_factory=list)
    supported: list[GroundingItem] = Field(default_factory=list)
    skipped: list[str] = Field(
        default_factory=list, description="Items with nothing checkable (e.g. 'last year')."
    )


class DimensionEvidence(BaseModel):
    """One entry per requested dimension; None for a dimension that was switched off.

    Its fields are the registered dimensions' (``density``, ``specificity``, ...), each typed
    with its spec's evidence model, in report order: :mod:`shared.dimensions.spec` adds them as
    each dimension registers."""

    def scores(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name in DIMENSIONS:
            item = getattr(self, name, None)
            out[name] = None if item is None else item.score
        return out
