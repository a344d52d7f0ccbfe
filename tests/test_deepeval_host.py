"""DeepEval's own conventions: a metric's usage in ``evaluation_cost``, ``input_tokens`` and
``output_tokens`` (as DeepEval 4's metrics fill them; ``deepeval test run`` sums the cost and
records the tokens), and ``inconclusive="flaky"``: a case whose samples give no clear verdict is
DeepEval-flaky (it warns instead of failing) on DeepEval 4.2 and newer, a clear error before."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from deepeval import assert_test, evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig
from deepeval.test_case import LLMTestCase

from deepeval_ext import SummaryQualityMetric
from deepeval_ext._host import HAS_FLAKY, check_inconclusive_as
from deepeval_ext.testing import FakeDeepEvalModel
from shared import OpenAIJudge
from shared.testing import FakeJudge, stub_server
from tests.test_docs_code import installed_version
from tests.test_verdict import FLAGGED, SUPPORTED


@pytest.fixture(autouse=True)
def _run_outside_the_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """DeepEval writes ``./.deepeval/`` (cache, last run) when it evaluates: in a temp dir."""
    from tests.test_deepeval_cli import repo_deepeval_files

    before = repo_deepeval_files()
    monkeypatch.chdir(tmp_path)
    yield
    assert repo_deepeval_files() == before, "a test wrote into .deepeval/ in the repository"


needs_flaky = pytest.mark.skipif(not HAS_FLAKY, reason="DeepEval before 4.2 has no flaky metrics")


class CountingModel(FakeDeepEvalModel):
    """Counts the calls, to know what the metric should have summed."""

    calls = 0

    async def _reply(self, prompt: str, schema: Any) -> Any:
        type(self).calls += 1
        return await super()._reply(prompt, schema)


def test_a_deepeval_models_tokens_and_cost_are_summed_per_case(seed: tuple[str, str]) -> None:
    CountingModel.calls = 0
    model = CountingModel(output="tuple", cost_per_call=0.001, tokens_per_call=(120, 30))
    metric = SummaryQualityMetric(model=model, cache=False)
    metric.measure(LLMTestCase(input=seed[0], actual_output=seed[1]), _show_indicator=False)
    calls = CountingModel.calls
    assert metric.error is None and calls > 0
    assert (metric.input_tokens, metric.output_tokens) == (120 * calls, 30 * calls)
    assert metric.evaluation_cost == pytest.approx(0.001 * calls)
    # the next case starts from nothing: a model that reports no tokens leaves them None
    metric.model = FakeDeepEvalModel(output="tuple", cost_per_call=0.001)
    metric.measure(LLMTestCase(input=seed[0], actual_output=seed[1]), _show_indicator=False)
    assert (metric.input_tokens, metric.output_tokens) == (None, None)


def test_a_summary_eval_judges_tokens_are_the_rows_usage(seed: tuple[str, str]) -> None:
    with stub_server() as url:
        metric = SummaryQualityMetric(model=OpenAIJudge("local", base_url=url), cache=False)
        metric.measure(LLMTestCase(input=seed[0], actual_output=seed[1]), _show_indicator=False)
        replies = [r for r in url.replies if r["schema"] != "JudgeProbe"]  # the run's, not a row's
    assert metric.error is None
    assert metric.input_tokens == sum(r["prompt_tokens"] for r in replies) > 0
    assert metric.output_tokens == sum(r["completion_tokens"] for r in replies) > 0


def inconclusive_metric(**options: Any) -> SummaryQualityMetric:
    """Two of four samples find the summary supported: an inconclusive verdict."""
    judge = FakeJudge({"SentenceChecks": [SUPPORTED] * 2 + [FLAGGED] * 2})
    return SummaryQualityMetric(model=FakeDeepEvalModel(judge), samples=4, cache=False, **options)


@needs_flaky
def test_inconclusive_as_flaky_warns_instead_of_failing(seed: tuple[str, str]) -> None:
    case = LLMTestCase(input=seed[0], actual_output=seed[1])
    with pytest.warns(UserWarning, match=r"counted as flaky \(inconclusive='flaky'\)"):
        result = evaluate(
            [case],
            [inconclusive_metric(inconclusive="flaky")],
            display_config=DisplayConfig(print_results=False, show_indicator=False),
            async_config=AsyncConfig(run_async=False),
        )
    (test,) = result.test_results
    (data,) = test.metrics_data
    assert data.flaky is True and data.success is False
    assert test.success is not False  # a flaky metric does not decide the case
    assert "Counted as flaky" in data.reason
    with pytest.warns(UserWarning, match="counted as flaky"):
        assert_test(case, [inconclusive_metric(inconclusive="flaky")], run_async=False)
    # "fail" still fails, and a clear verdict is never flaky
    with pytest.raises(AssertionError, match="Verdict: inconclusive"):
        assert_test(case, [inconclusive_metric(inconclusive="fail")], run_async=False)


@needs_flaky
def test_the_flaky_mark_lasts_one_case_and_keeps_the_users_own(seed: tuple[str, str]) -> None:
    case = LLMTestCase(input=seed[0], actual_output=seed[1])
    metric = inconclusive_metric(inconclusive="flaky")
    with pytest.warns(UserWarning):
        metric.measure(case, _show_indicator=False)
    assert metric.flaky is True
    metric.model = FakeDeepEvalModel(FakeJudge({"SentenceChecks": [SUPPORTED] * 4}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clear pass: no warning
        metric.measure(case, _show_indicator=False)
    assert metric.flaky is False and metric.success is True
    own = inconclusive_metric(inconclusive="flaky", flaky=True)
    own.model = metric.model
    own.measure(case, _show_indicator=False)
    assert own.flaky is True


def test_flaky_needs_deepeval_4_2() -> None:
    with pytest.raises(ValueError, match=r"inconclusive='flaky' needs DeepEval 4\.2 or newer"):
        check_inconclusive_as("flaky", has_flaky=False)
    assert check_inconclusive_as("flaky", has_flaky=True) == "flaky"
    with pytest.raises(ValueError, match="inconclusive must be 'pass' or 'fail'"):
        check_inconclusive_as("maybe", has_flaky=True)
    if not HAS_FLAKY:  # the installed DeepEval is older: the metric says so at construction
        with pytest.raises(ValueError, match=r"needs DeepEval 4\.2"):
            inconclusive_metric(inconclusive="flaky")


TOKENS_TEST = """
from deepeval import assert_test
from deepeval.test_case import LLMTestCase

from deepeval_ext import SummaryQualityMetric
from deepeval_ext.testing import FakeDeepEvalModel

MODEL = FakeDeepEvalModel(output="tuple", cost_per_call=0.25, tokens_per_call=(1000, 100))


def test_summary() -> None:
    assert_test(
        LLMTestCase(input={source!r}, actual_output={summary!r}),
        [SummaryQualityMetric(model=MODEL, threshold=0.1, cache=False)],
    )
"""


def test_deepeval_test_run_shows_ours_cost_and_records_its_tokens(
    tmp_path: Path, seed: tuple[str, str]
) -> None:
    from tests.test_deepeval_cli import BIN, GUARD_ARGS, run

    (tmp_path / "test_tokens.py").write_text(
        TOKENS_TEST.format(source=seed[0], summary=seed[1]), encoding="utf-8"
    )
    proc = run([str(BIN / "deepeval"), "test", "run", str(tmp_path), *GUARD_ARGS], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    shown = re.search(r"token cost: ([0-9.]+) USD", proc.stdout)
    assert shown, proc.stdout[-3000:]
    cost = float(shown.group(1))
    calls = round(cost / 0.25)
    assert calls > 0 and cost == pytest.approx(0.25 * calls)  # ours' cost, in DeepEval's line
    saved = tmp_path / ".deepeval" / ".latest_test_run.json"
    if installed_version("deepeval") < (4, 1):
        # DeepEval 3.9 saves no record under the network guard, and records no tokens
        pytest.skip("DeepEval before 4.1 records no token counts")
    assert saved.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    run_data = json.loads(saved.read_text(encoding="utf-8"))
    run_data = run_data.get("testRunData", run_data)
    (metric,) = run_data["testCases"][0]["metricsData"]
    assert metric["evaluationCost"] == pytest.approx(cost)
    assert (metric["inputTokenCount"], metric["outputTokenCount"]) == (1000 * calls, 100 * calls)
