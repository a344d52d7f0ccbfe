"""DeepEval's own conventions the metrics follow, across the DeepEval versions supported.

- Usage: a metric fills ``evaluation_cost``, ``input_tokens`` and ``output_tokens`` as DeepEval
  4's metrics do (``deepeval test run`` sums the cost; the tokens go into its test-run record).
  DeepEval's native models report tokens on the cost they return (``EvaluationCost``); a
  summary-eval judge (``OpenAIJudge``) reports them in the result's ``usage``.
- The parameter check: DeepEval 4.2's ``prepare_measure``, or the check it wraps before.
- Flaky: DeepEval 4.2 added flaky metrics (``metric.flaky``): a flaky metric's failure is counted
  apart and never fails its test case. ``inconclusive="flaky"`` marks a case whose samples give
  no clear verdict flaky, with a warning, instead of counting it as a pass or a fail.
"""

from __future__ import annotations

import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

from deepeval.metrics import BaseMetric

try:
    from deepeval.metrics.utils import prepare_measure
except ImportError:  # DeepEval before 4.2: the parameter check its metrics called themselves
    from deepeval.metrics.utils import check_llm_test_case_params

    def prepare_measure(metric: Any, test_case: Any) -> None:
        """DeepEval's own check of the test case's required parameters."""
        multimodal = getattr(test_case, "multimodal", False)
        check_llm_test_case_params(
            test_case, metric._required_params, None, None, metric, metric.model, multimodal
        )


from shared import SummaryEvaluation
from shared.adapter_kit import InconclusiveAs, Verdict, check_inconclusive

from ._judge import CaseUsage

FLAKY = "flaky"
InconclusiveAsOrFlaky = InconclusiveAs | Literal["flaky"]

HAS_FLAKY = hasattr(BaseMetric, "flaky")
"""Whether the installed DeepEval has flaky metrics (4.2 and newer)."""


def deepeval_version() -> str:
    try:
        return version("deepeval")
    except PackageNotFoundError:  # pragma: no cover - imported above, so installed
        return "unknown"


def threshold_rule(metric: Any) -> bool | None:
    """DeepEval 4's ``BaseMetric.is_successful`` (score >= threshold; False on an error; None
    without a threshold), which DeepEval 3.9 leaves abstract."""
    if metric.threshold is None:
        metric.success = None
    elif metric.error is not None:
        metric.success = False
    else:
        try:
            metric.success = metric.score >= metric.threshold
        except TypeError:
            metric.success = False
    return metric.success


def check_inconclusive_as(value: object, *, has_flaky: bool = HAS_FLAKY) -> InconclusiveAsOrFlaky:
    """``value`` if it names what an inconclusive verdict counts as (``"pass"``, ``"fail"``, or
    ``"flaky"`` where DeepEval has flaky metrics), else a clear error."""
    if value == FLAKY:
        if not has_flaky:
            raise ValueError(
                "inconclusive='flaky' needs DeepEval 4.2 or newer (its flaky metrics); "
                f"DeepEval {deepeval_version()} is installed: upgrade it, or pass "
                "inconclusive='pass' or 'fail'"
            )
        return FLAKY
    return check_inconclusive(value)


def counts_as_pass(verdict: Verdict, inconclusive: InconclusiveAsOrFlaky) -> bool:
    """Whether the row passes; a flaky inconclusive one does not (it fails, flagged flaky)."""
    return verdict.counts_as_pass("fail" if inconclusive == FLAKY else inconclusive)


def counted_as(inconclusive: InconclusiveAsOrFlaky) -> str:
    """What an inconclusive verdict counts as, for the reason."""
    return {
        "pass": "a pass",
        "fail": "a fail",
        FLAKY: "flaky (a failure that warns, not failing the test case)",
    }[inconclusive]


def mark_flaky(metric: Any, verdict: Verdict | None) -> None:
    """With ``inconclusive="flaky"``: flag this case's metric flaky when its verdict is
    inconclusive, and warn (pytest lists it under its warnings summary)."""
    if metric.inconclusive != FLAKY or verdict is None or verdict.verdict != "inconclusive":
        return
    if not metric.flaky:
        metric.flaky = metric._flaky_by_verdict = True
    warnings.warn(
        f"{metric.__name__}: the samples give no clear verdict ({verdict.line()}); "
        "counted as flaky (inconclusive='flaky'): it does not fail the test case",
        stacklevel=2,
    )


def unmark_flaky(metric: Any) -> None:
    """Undo :func:`mark_flaky` before the next case (a flag the user set stays)."""
    if getattr(metric, "_flaky_by_verdict", False):
        metric.flaky = metric._flaky_by_verdict = False


def usage_tokens(
    usage: CaseUsage, evaluation: SummaryEvaluation | None, *, core_judge: bool
) -> tuple[int | None, int | None]:
    """The case's input and output tokens: a summary-eval judge's from the result's usage, a
    DeepEval model's from the costs it returned (None where it reported none)."""
    if core_judge and evaluation is not None and evaluation.usage.get("calls"):
        return evaluation.usage.get("prompt_tokens"), evaluation.usage.get("completion_tokens")
    return usage.input_tokens, usage.output_tokens


def record_usage(
    metric: Any, usage: CaseUsage, evaluation: SummaryEvaluation | None, *, core_judge: bool
) -> None:
    """Fill the metric's ``evaluation_cost``, ``input_tokens`` and ``output_tokens``."""
    metric.evaluation_cost = usage.cost
    metric.input_tokens, metric.output_tokens = usage_tokens(
        usage, evaluation, core_judge=core_judge
    )
