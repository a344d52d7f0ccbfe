"""DeepEval adapter: summary-eval's metrics as ``deepeval.metrics.BaseMetric`` subclasses.

``SummaryQualityMetric`` replaces ``SummarizationMetric`` (``input`` = source,
``actual_output`` = summary); ``Summary<SubScore>Metric`` thresholds one sub-score. They work with
``deepeval.evaluate()``, ``deepeval test run`` and ``assert_test``. A DeepEval model backed by the
package's fake judge, for offline tests, is in :mod:`deepeval_ext.testing`.
"""

from ._judge import DeepEvalJudge, normalise_output
from ._metrics import (
    SUB_SCORE_METRICS,
    SummaryAlignmentMetric,
    SummaryCoherenceMetric,
    SummaryConcisenessMetric,
    SummaryCoverageMetric,
    SummaryDensityMetric,
    SummaryGroundingMetric,
    SummaryNonRedundancyMetric,
    SummaryQualityMetric,
    SummaryScoringError,
    SummarySpecificityMetric,
    SummarySubScoreMetric,
)

__all__ = [
    "SUB_SCORE_METRICS",
    "DeepEvalJudge",
    "SummaryAlignmentMetric",
    "SummaryCoherenceMetric",
    "SummaryConcisenessMetric",
    "SummaryCoverageMetric",
    "SummaryDensityMetric",
    "SummaryGroundingMetric",
    "SummaryNonRedundancyMetric",
    "SummaryQualityMetric",
    "SummaryScoringError",
    "SummarySpecificityMetric",
    "SummarySubScoreMetric",
    "normalise_output",
]
