"""Legacy-API Ragas metrics (what ``ragas.evaluate()`` drives): the headline score and sub-scores.

Every metric reads one field of one core :class:`shared.SummaryEvaluation`. Metrics that use the
same LLM and the same options share that evaluation per row (:class:`ragas_ext._judge.RowMemo`),
so putting the score and six sub-scores in one ``evaluate()`` call costs what the score alone
costs.

Unscored rows (the judge never produced valid output) return NaN with the reason logged, rather
than raising: an unscored row is a result, and it stays NaN under ``raise_exceptions=True`` too.
Bad input (an empty source, a non-string response) raises, which Ragas turns into NaN plus its own
error log (or propagates with ``raise_exceptions=True``).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import typing as t
from dataclasses import dataclass, field
from typing import Any

from ragas.metrics.base import MetricOutputType, MetricType, MetricWithLLM, SingleTurnMetric

from shared import (
    DIMENSION_NAMES,
    NO_LLM_SUB_SCORES,
    OPTION_NAMES,
    SUB_SCORE_NAMES,
    ScoreOptions,
    SummaryEvaluation,
    ascore_summary,
)
from shared.adapter_kit import OptionFields, attached

from ._judge import RagasEmbedder, judge_for

if t.TYPE_CHECKING:
    from langchain_core.callbacks import Callbacks
    from ragas.dataset_schema import SingleTurnSample

logger = logging.getLogger("ragas_ext")

SUB_SCORES: tuple[str, ...] = SUB_SCORE_NAMES
"""What a metric can report: the headline F-beta ``score`` and each sub-score by its name in
:meth:`shared.SummaryEvaluation.sub_scores` (the core's list, :data:`shared.SUB_SCORES`)."""

DIMENSIONS = DIMENSION_NAMES


def option_values(fields: OptionFields) -> dict[str, Any]:
    """The core options a metric holds, by name: its :class:`OptionFields` fields (a dimension
    registered after the class was made has no field here; the core uses its default)."""
    own = {f.name for f in dataclasses.fields(fields)}
    return {name: getattr(fields, name) for name in OPTION_NAMES if name in own}


def embedder_for(embeddings: Any) -> RagasEmbedder:
    """The single :class:`RagasEmbedder` of a Ragas embeddings object, so that options built by
    different metrics compare equal and share one evaluation per row (kept on the embeddings
    object, freed with it)."""
    return attached(embeddings, RagasEmbedder, lambda: RagasEmbedder(embeddings))


@dataclass
class SummarySettings(OptionFields):
    """The options shared by the legacy and the collections metrics, checked once, up front.

    The core's option fields are inherited (:class:`shared.adapter_kit.OptionFields`), not
    copied; ``embeddings`` (Ragas or LangChain embeddings) is the Ragas way to give ``embedder``.
    """

    sub_score: str = "score"
    embeddings: Any = None

    def __post_init__(self) -> None:
        if self.sub_score not in SUB_SCORES:
            raise ValueError(
                f"sub_score must be one of {', '.join(SUB_SCORES)}; got {self.sub_score!r}"
            )
        if isinstance(self.dimensions, str):
            raise TypeError("dimensions must be a list of names, not one string")
        if (
            self.dimensions is not None
            and self.sub_score in DIMENSIONS
            and self.sub_score not in self.dimensions
        ):
            raise ValueError(
                f"sub_score {self.sub_score!r} is not among dimensions={list(self.dimensions)}: "
                "it would never be computed"
            )
        self.options()  # bad options fail here, at construction, not once per row

    def options(self) -> ScoreOptions:
        return ScoreOptions.from_kwargs(self.core_kwargs())

    def core_kwargs(self) -> dict[str, Any]:
        """Keyword options for :func:`shared.ascore_summary` (every core option)."""
        kwargs: dict[str, Any] = option_values(self)
        if self.dimensions is not None:
            kwargs["dimensions"] = tuple(self.dimensions)
        if self.embeddings is not None:
            if self.embedder is not None:
                raise ValueError("give embeddings (Ragas) or embedder (the core's), not both")
            kwargs["embedder"] = embedder_for(self.embeddings)
        return kwargs

    async def evaluate(self, llm: Any, source: Any, summary: Any) -> SummaryEvaluation:
        """The core's evaluation of one row, shared with every metric on the same LLM+options."""
        kwargs = self.core_kwargs()
        if (llm is None or llm is NO_LLM) and self.sub_score in NO_LLM_SUB_SCORES:
            # a sub-score computed without any judge: no LLM, no API key
            return await ascore_summary(source, summary, judge=None, **kwargs)
        if llm is None or llm is NO_LLM:
            raise ValueError(
                "no LLM: pass llm= to ragas.evaluate() or to the metric (e.g. llm_factory(...))"
            )
        judge = judge_for(llm)
        options = ScoreOptions.from_kwargs(kwargs)
        source_key = tuple(source) if isinstance(source, list | tuple) else source
        # ScoreOptions leaves the embedder out of its equality: key on its identity here
        embedder = id(kwargs.get("embedder"))
        try:
            key: Any = (source_key, summary, options, embedder)
            hash(key)
        except TypeError:  # an option value that cannot be hashed: compare by its text
            key = (repr(source_key), repr(summary), repr(options), embedder)
        return await judge.rows.get(
            key,
            lambda: ascore_summary(source, summary, judge=judge, **kwargs),
            keep=options.cache is not False,
        )

    def value(self, evaluation: SummaryEvaluation, metric_name: str) -> float:
        """This metric's number, or NaN with the reason logged.

        A dimension is reported whenever the core computed it, even on a row whose headline
        score the judge could not produce: the dimensions are measured beside the score, not
        from it, and the core never carries a partial score, alignment or coverage.
        """
        value = evaluation.sub_scores().get(self.sub_score)
        if value is not None:
            return float(value)
        logger.warning("%s: %s", metric_name, self.missing_reason(evaluation))
        return math.nan

    def missing_reason(self, evaluation: SummaryEvaluation) -> str:
        """Why an evaluation has no value for this sub-score (the core's words if any)."""
        if self.sub_score not in DIMENSIONS and not evaluation.scored:
            return f"row unscored: {evaluation.error}"
        evidence = getattr(evaluation.dimension_evidence, self.sub_score, None)
        why = getattr(evidence, "reason", "") or (
            "not produced by this core (it reports "
            + ", ".join(k for k, v in evaluation.sub_scores().items() if v is not None)
            + ")"
        )
        if not evaluation.scored and evaluation.score is None:
            why = f"{why} (the row is also unscored: {evaluation.error})"
        return f"sub-score {self.sub_score!r} has no value for this row: {why}"


class _NoLLM:
    """Stands in for the LLM of a metric whose sub-score needs none (ragas requires one)."""

    def __repr__(self) -> str:
        return "NO_LLM"


NO_LLM: Any = _NoLLM()


def _required() -> dict[MetricType, set[str]]:
    # the same columns as ragas's own SummarizationScore, so its datasets work unchanged
    return {MetricType.SINGLE_TURN: {"reference_contexts", "response"}}


@dataclass
class SummaryQuality(MetricWithLLM, SingleTurnMetric, OptionFields):
    """The summary's F-beta of alignment (precision) and coverage (recall), for ``evaluate()``.

    Options are the core's (:data:`shared.OPTION_NAMES`, fields inherited from
    :class:`shared.adapter_kit.OptionFields` with the core's defaults): ``n`` questions, user
    ``questions`` (strings or ``{"question", "importance"}``), ``beta``, ``combine``, which
    ``dimensions`` to compute (``[]`` for none, which saves the style call and the
    spaCy/embedding work), ``retries``, ``cache``, ``concurrency``, ``context_budget``, ...
    ``embeddings`` are Ragas (or LangChain) embeddings for the embedding-based dimensions; the
    core's default embedder is used when they are None. ``evaluate(embeddings=...)`` does not
    reach this metric (Ragas hands embeddings only to its ``MetricWithEmbeddings``, and would
    build OpenAI embeddings for one that has none), so give them here.
    """

    name: str = "summary_quality"
    _required_columns: dict[MetricType, set[str]] = field(default_factory=_required)
    output_type: MetricOutputType | None = MetricOutputType.CONTINUOUS
    sub_score: str = "score"
    embeddings: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._settings = SummarySettings(
            sub_score=self.sub_score,
            embeddings=self.embeddings,
            **option_values(self),
        )

    async def _single_turn_ascore(self, sample: SingleTurnSample, callbacks: Callbacks) -> float:
        evaluation = await self.evaluate_sample(sample)
        return self._settings.value(evaluation, self.name)

    async def evaluate_sample(self, sample: SingleTurnSample) -> SummaryEvaluation:
        """The full core result for one sample (every sub-score, evidence, reason, signature)."""
        return await self._settings.evaluate(self.llm, sample.reference_contexts, sample.response)


@dataclass
class SummarySubScore(SummaryQuality):
    """One sub-score as its own ``evaluate()`` column, named ``summary_<sub_score>``.

    ``sub_score`` is one of alignment, coverage, density, specificity, non_redundancy, coherence,
    conciseness. Give every metric of one ``evaluate()`` call the same options (or build them
    with :func:`summary_metrics`) and they share one evaluation per row.
    """

    name: str = ""
    sub_score: str = "alignment"

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"summary_{self.sub_score}"
        if self.llm is None and self.sub_score in NO_LLM_SUB_SCORES:
            # not None, so ragas.evaluate() neither builds a default OpenAI LLM nor asks for a key
            self.llm = NO_LLM  # type: ignore[assignment]
        super().__post_init__()


def summary_metrics(
    *sub_scores: str, llm: Any = None, **options: Any
) -> list[SummaryQuality | SummarySubScore]:
    """Metrics with identical options for ``evaluate(metrics=...)``: ``summary_quality`` plus one
    per named sub-score (when none is named: alignment, coverage and every requested dimension)."""
    dimensions = options.get("dimensions")
    if dimensions is not None and not isinstance(dimensions, str):
        # read once here and again by each metric: a generator would be empty the second time
        dimensions = options["dimensions"] = tuple(dimensions)
    # None = the core's default (all); [] = none, not "all"
    wanted = DIMENSIONS if dimensions is None else dimensions
    names = sub_scores or ("score", "alignment", "coverage", *wanted)
    metrics: list[SummaryQuality | SummarySubScore] = []
    for name in names:
        if name == "score":
            metrics.append(SummaryQuality(llm=llm, **options))
        else:
            metrics.append(SummarySubScore(llm=llm, sub_score=name, **options))
    return metrics
