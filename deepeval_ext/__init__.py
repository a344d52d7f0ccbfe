"""DeepEval adapter: summary-eval's metrics as ``deepeval.metrics.BaseMetric`` subclasses.

``SummaryQualityMetric`` replaces ``SummarizationMetric`` (``input`` = source,
``actual_output`` = summary); ``Summary<SubScore>Metric`` thresholds one sub-score. They work with
``deepeval.evaluate()``, ``deepeval test run`` and ``assert_test``. A DeepEval model backed by the
package's fake judge, for offline tests, is in :mod:`deepeval_ext.testing`.
"""

from typing import Any

from . import _metrics
from ._judge import DeepEvalJudge, normalise_output
from ._metrics import (
    SUB_SCORE_METRICS,
    SummaryAlignmentMetric,
    SummaryCoverageMetric,
    SummaryQualityMetric,
    SummaryScoringError,
    SummarySubScoreMetric,
)


def __getattr__(name: str) -> Any:
    """A dimension's metric (``SummaryDensityMetric``, ...), made from its spec (PEP 562)."""
    return getattr(_metrics, name)


__all__ = [
    "SUB_SCORE_METRICS",
    "DeepEvalJudge",
    "SummaryAlignmentMetric",
    "SummaryCoverageMetric",
    "SummaryQualityMetric",
    "SummaryScoringError",
    "SummarySubScoreMetric",
    "normalise_output",
    *(cls.__name__ for cls in SUB_SCORE_METRICS.values() if cls.__name__ not in globals()),
]
