"""Ragas adapter: summary-eval's summary metric for ``ragas.evaluate()`` and the collections API.

- :class:`SummaryQuality` (``summary_quality``): the F-beta of alignment and coverage, as a legacy
  ``MetricWithLLM``/``SingleTurnMetric`` on the ``reference_contexts`` and ``response`` columns.
- :class:`SummarySubScore` (``summary_<name>``): one sub-score per column; :func:`summary_metrics`
  builds a matching set. Metrics with the same LLM and options share one evaluation per row.
- :mod:`ragas_ext.collections`: the same metric in ``ragas.metrics.collections`` style.
- :class:`RagasJudge` / :func:`judge_for`: any Ragas LLM as the core's Judge, for direct use with
  :func:`shared.score_summary`.
"""

from ._judge import RagasEmbedder, RagasJudge, judge_for
from ._metrics import SUB_SCORES, SummaryQuality, SummarySubScore, summary_metrics

__all__ = [
    "SUB_SCORES",
    "RagasEmbedder",
    "RagasJudge",
    "SummaryQuality",
    "SummarySubScore",
    "judge_for",
    "summary_metrics",
]
