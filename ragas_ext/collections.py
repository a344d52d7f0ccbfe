"""The ``ragas.metrics.collections`` style metric (Ragas's recommended API; the legacy one that
``evaluate()`` drives is slated for removal in Ragas 1.0).

``SummaryQuality(llm=llm_factory(...)).ascore(reference_contexts=[...], response="...")`` returns
a ``MetricResult`` whose value is the score (NaN when unscored) and whose reason is the core's
account of it; ``traces["output"]`` holds the full evaluation (sub-scores and evidence).
``batch_score`` / ``abatch_score`` score many rows. Ragas 0.4.3's ``evaluate()`` rejects
collections metrics; use :class:`ragas_ext.SummaryQuality` there.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Unpack

try:
    from ragas.metrics.collections.base import BaseMetric
    from ragas.metrics.result import MetricResult
except ImportError as exc:  # Ragas before 0.3.7: no collections API
    raise ImportError(f"ragas_ext.collections needs Ragas 0.4.2 or newer: {exc}") from exc

from shared.adapter_kit import ScoreOptionsKwargs, check_names

from ._metrics import DIMENSIONS, SummarySettings

if TYPE_CHECKING:
    from ragas.llms.base import InstructorBaseRagasLLM


class SummaryQuality(BaseMetric):
    """Alignment/coverage F-beta of a summary (or one sub-score), collections style.

    Same options as :class:`ragas_ext.SummaryQuality` (every core option, by keyword);
    ``sub_score`` picks which number is the value (default the headline ``score``). Like Ragas's
    own collections metrics it requires an instructor LLM (``llm_factory``).
    """

    llm: InstructorBaseRagasLLM

    def __init__(
        self,
        llm: InstructorBaseRagasLLM,
        name: str | None = None,
        *,
        sub_score: str = "score",
        embeddings: Any = None,
        **options: Unpack[ScoreOptionsKwargs],
    ) -> None:
        check_names(options)
        self.llm = llm  # set before super().__init__, which validates it
        self.settings = SummarySettings(sub_score=sub_score, embeddings=embeddings, **options)
        default_name = "summary_quality" if sub_score == "score" else f"summary_{sub_score}"
        super().__init__(name=name or default_name, allowed_values=(0.0, 1.0))

    async def ascore(self, reference_contexts: list[str], response: str) -> MetricResult:  # type: ignore[override]
        """Score one summary; bad input raises (TypeError/ValueError), an unscored row does not."""
        evaluation = await self.settings.evaluate(self.llm, reference_contexts, response)
        value = self.settings.value(evaluation, self.name)
        # the headline's reason ("Unscored: <why>" for an unscored row), or the sub-score's own
        reason = evaluation.reason_for(self.settings.sub_score)
        if math.isnan(value) and (evaluation.scored or self.settings.sub_score in DIMENSIONS):
            reason = self.settings.missing_reason(evaluation)
        return MetricResult(
            value=value,
            reason=reason,
            traces={
                "input": {"reference_contexts": reference_contexts, "response": response},
                "output": evaluation.model_dump(),
            },
        )
