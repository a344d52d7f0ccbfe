"""The result of scoring one summary: sub-scores, the evidence behind them, and a signature."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from ..core.language import LanguageEvidence
from ..core.subscores import SUB_SCORE_NAMES, on_change
from ..dimensions.evidence import DimensionEvidence
from ..dimensions.spec import score_fields, sync_fields
from ..prompts.pointing import ERROR_TYPES, ErrorType
from ..prompts.schemas import Verdict
from .reasons import sub_score_reason

NO_JUDGE = (
    "no judge: alignment, coverage and the score need a judge (none was given); "
    "only the deterministic dimensions were computed"
)
"""The ``error`` of an evaluation made without a judge."""


class QuestionEvidence(BaseModel):
    """One coverage question and what happened to it."""

    question: str
    importance: int = Field(ge=1, le=5)
    reference_answer: str
    summary_answer: str | None = None
    grade: int | None = Field(default=None, ge=0, le=5)
    grade_reason: str = ""
    counted: bool = True
    """False when the source itself does not answer a user's question (left out of coverage)."""
    sentence: int | None = None
    """The sentences path: the number of the summary sentence the judge pointed at as the
    answer (0: none answers it; ``summary_answer`` is then "" and holds that sentence's text
    otherwise). None on the claims paths, where the judge writes the answer out; a None field is
    left out of the serialized form, so those paths' results keep their shape."""
    edited: bool | None = None
    """A frozen question (the ``questions_file`` option, docs/QUESTIONS.md): whether a person
    edited it in the questions file. None for a question generated or given in this run (left
    out of the serialized form)."""

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), ("sentence", "edited"))


class ClaimEvidence(BaseModel):
    """One atomic claim of the summary and the judge's verdict against the full source."""

    claim: str
    verdict: Verdict
    reason: str = ""
    quote: str = ""
    error_type: ErrorType | None = None
    """The sentences path (where each entry is one summary sentence): FineSurE's error category
    of an unsupported sentence (:data:`shared.prompts.ERROR_TYPES`); None for a supported one
    and on the claims paths."""
    span: str | None = None
    """The sentences path: the shortest wrong span of an unsupported sentence."""

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), ("error_type", "span"))


def _without_none(data: Any, names: tuple[str, ...]) -> Any:
    """``data`` less the ``names`` whose value is None (fields only one path fills)."""
    if isinstance(data, dict):
        for name in names:
            if data.get(name, 0) is None:
                del data[name]
    return data


def count_error_types(claims: list[ClaimEvidence]) -> dict[str, int]:
    """Unsupported sentences per error category, every category listed (0 included)."""
    counts = dict.fromkeys(ERROR_TYPES, 0)
    for c in claims:
        if c.error_type is not None:
            counts[c.error_type] += 1
    return counts


class SummaryEvaluation(BaseModel):
    """Every sub-score (float in [0, 1], or None when unscored), evidence and provenance.

    ``error`` is None for a scored result and says why otherwise; an unscored result never
    carries a partial score. The text-quality dimensions (``density`` … ``grounding``) are
    reported beside the score and do not enter it: an unscored result (including ``judge=None``)
    still carries the dimensions that could be computed, and a failed dimension is None with its
    reason in ``dimension_evidence`` without unscoring the result.
    """

    score: float | None = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    alignment: float | None = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    coverage: float | None = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    error: str | None = None
    reason: str = ""
    """The short account: the headline, then one line per part (alignment, coverage, each
    dimension), the part that pulled the score down first, each line clipped to about 100
    characters so it reads in a terminal or a results table."""
    reason_detail: str = ""
    """The full account behind ``reason``: every unsupported claim, every missed question and each
    dimension's whole reason, one item per line (``reason`` when there is nothing more to say)."""
    questions: list[QuestionEvidence] = Field(default_factory=list)
    claims: list[ClaimEvidence] = Field(default_factory=list)
    """The verdicts behind alignment: one per atomic claim on the claims paths, one per summary
    sentence on the sentences path (``claim`` is then the sentence)."""
    error_types: dict[str, int] | None = None
    """The sentences path: unsupported sentences per FineSurE error category (every category,
    0 included); None on the claims paths (left out of the serialized form)."""
    # here: one ``float | None`` field per registered dimension (``density``, ``specificity``,
    # ...), in report order, added by _sync_dimension_fields below
    dimension_evidence: DimensionEvidence = Field(default_factory=DimensionEvidence)
    """Per text-quality dimension: its score, the reason (or why it is None), the raw evidence.
    A dimension switched off by the ``dimensions`` option has no entry (None)."""
    signature: str = ""
    language: LanguageEvidence | None = None
    """The row's languages: the source's and the summary's (detected, or the ``language``
    option), and the one the dimensions analysed the summary as, with its spaCy pipeline. None
    for a row rejected before scoring."""
    sample_scores: list[dict[str, float | None]] = Field(default_factory=list)
    """With ``samples=k > 1``: each judge sample's sub-scores, in sample order (the sub-scores
    above are their means). Empty for a single-sample run."""
    spread: dict[str, float | None] = Field(default_factory=dict)
    """With ``samples=k > 1``: the standard deviation over samples of each sub-score (None where
    fewer than two samples have a value). Empty for a single-sample run."""
    usage: dict[str, int] = Field(default_factory=dict)
    """The judge requests made for this row (:mod:`shared.core.usage`): ``calls``, ``retries``,
    ``prompt_tokens``, ``cached_tokens``, ``completion_tokens``; answers from the cache count
    nothing. Empty without a judge."""
    cost: float | None = None
    """US$ for ``usage`` at the judge's prices (:mod:`shared.core.pricing`; $0 on a local server);
    None when no price is known or without a judge."""

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), ("error_types",))

    @model_validator(mode="after")
    def _detail_defaults_to_reason(self) -> SummaryEvaluation:
        if not self.reason_detail:
            self.reason_detail = self.reason
        return self

    @property
    def scored(self) -> bool:
        return self.error is None and self.score is not None

    def sub_scores(self) -> dict[str, float | None]:
        """The headline score and every sub-score by name (what adapters put in columns)."""
        return {name: getattr(self, name) for name in SUB_SCORE_NAMES}

    def reason_for(self, name: str) -> str:
        """The reason for sub-score ``name`` alone (what a per-sub-score metric reports): its
        value and its own evidence, not the headline's account; ``"score"`` gives ``reason``."""
        return sub_score_reason(self, name)

    def spread_columns(self) -> dict[str, float | None]:
        """``<sub-score>_sd`` for every sub-score, when the result has samples; else empty."""
        if not self.sample_scores:
            return {}
        return {f"{name}_sd": self.spread.get(name) for name in SUB_SCORE_NAMES}

    def to_row(self) -> dict[str, Any]:
        """A flat dict for tables: sub-scores, reason, error, signature."""
        return {
            **self.sub_scores(),
            **self.spread_columns(),
            "reason": self.reason,
            "error": self.error,
            "signature": self.signature,
        }


def _sync_dimension_fields() -> None:
    """A ``float | None`` field per registered dimension, after ``error_types`` (and the
    rebuilt evidence model under ``dimension_evidence``)."""
    sync_fields(SummaryEvaluation, score_fields(), after="error_types")


_sync_dimension_fields()
on_change(_sync_dimension_fields)
