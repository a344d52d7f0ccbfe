"""The verdict over judge samples (``samples=k > 1``): pass, fail or inconclusive.

A scripted judge decides how many of a row's samples pass: its sentence check answers
"supported" (the sample's score is 0.76 on the seed pair) or flags the summary's one sentence
(alignment 0, so the sample's score is 0). Two of four passing samples give a pass probability
of 0.5 with a 95 % Wilson interval of 0.15-0.85: inconclusive. Four of four pass, none of four
fail. The scripted answers are used in the order calls arrive, which does not change how many
samples pass, so nothing depends on timing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shared import score_summary
from shared.analysis.stability import row_verdict, with_verdicts
from shared.evaluation.verdict import samples_needed, verdict, wilson_interval
from shared.runs.results import read_results
from shared.testing import FakeJudge, stub_server
from tests.test_error_types import run_cli

SUPPORTED = json.dumps({"sentences": [{"index": 1, "verdict": "supported"}]})
FLAGGED = json.dumps(
    {
        "sentences": [
            {
                "index": 1,
                "verdict": "out-of-context",
                "span": "fitness tracking app",
                "quote": "",
                "reason": "Not in the source.",
            }
        ]
    }
)


def scripted(passing: int, samples: int = 4) -> FakeJudge:
    """A judge whose sentence check passes ``passing`` of ``samples`` samples (one sentence)."""
    return FakeJudge({"SentenceChecks": [SUPPORTED] * passing + [FLAGGED] * (samples - passing)})


# -- the interval ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("passes", "n", "low", "high"),
    [
        (81, 263, 0.255289, 0.366210),  # Newcombe (1998), Statistics in Medicine 17, example
        (2, 4, 0.150039, 0.849961),
        (3, 3, 0.438503, 1.0),
        (4, 4, 0.510109, 1.0),
        (0, 10, 0.0, 0.277533),
        (1, 8, 0.022417, 0.470888),
        (7, 10, 0.396778, 0.892209),
    ],
)
def test_wilson_interval_known_values(passes: int, n: int, low: float, high: float) -> None:
    assert wilson_interval(passes, n) == pytest.approx((low, high), abs=1e-6)


def test_wilson_interval_rejects_impossible_counts() -> None:
    for passes, n in [(3, 2), (-1, 2), (0, 0)]:
        with pytest.raises(ValueError, match="passes <= n"):
            wilson_interval(passes, n)


def test_the_rule_needs_four_unanimous_samples_for_a_clear_verdict() -> None:
    assert verdict([1.0, 1.0, 1.0], 0.5).verdict == "inconclusive"  # 3 of 3: low 0.44
    assert verdict([0.0, 0.0, 0.0], 0.5).verdict == "inconclusive"
    assert verdict([1.0] * 4, 0.5).verdict == "pass"
    assert verdict([0.0] * 4, 0.5).verdict == "fail"
    assert verdict([1.0, 1.0, 0.0, 0.0], 0.5).verdict == "inconclusive"
    assert verdict([1.0] * 7 + [0.0], 0.5).verdict == "pass"  # 7 of 8: low 0.53
    assert verdict([1.0] * 6 + [0.0], 0.5).verdict == "inconclusive"  # 6 of 7: low 0.49
    assert [samples_needed(d) for d in range(4)] == [4, 8, 11, 14]
    # a sample passes at exactly the threshold (DeepEval's score >= threshold)
    assert verdict([0.5] * 4, 0.5).passes == 4


# -- the core's result and a results row -----------------------------------------------------


@pytest.mark.parametrize(("passing", "expected"), [(2, "inconclusive"), (4, "pass"), (0, "fail")])
def test_a_scripted_judge_gives_the_verdict_of_its_passing_samples(
    seed: tuple[str, str], passing: int, expected: str
) -> None:
    result = score_summary(*seed, judge=scripted(passing), samples=4, cache=False)
    assert result.scored
    assert sum(s["score"] >= 0.5 for s in result.sample_scores) == passing
    found = row_verdict(result, 0.5)
    assert found is not None and found.verdict == expected
    assert found.pass_probability == passing / 4


def test_a_single_sample_has_no_verdict(seed: tuple[str, str]) -> None:
    result = score_summary(*seed, judge=scripted(1, samples=1), cache=False)
    assert result.scored and row_verdict(result, 0.5) is None


def test_with_verdicts_replaces_a_verdict_at_another_threshold_and_drops_it_without_one() -> None:
    row: dict[str, Any] = {
        "id": "a",
        "status": "ok",
        "evidence": {"sample_scores": [{"score": 0.8}, {"score": 0.8}, {"score": 0.2}]},
    }
    with_verdicts([row], 0.1)
    assert row["evidence"]["verdict"]["verdict"] == "inconclusive"  # 3 of 3 pass
    assert row["evidence"]["verdict"]["threshold"] == 0.1
    with_verdicts([row], 0.9)
    assert row["evidence"]["verdict"]["passes"] == 0
    with_verdicts([row], None)
    assert "verdict" not in row["evidence"]
    single = {"id": "b", "status": "ok", "evidence": {}}
    assert with_verdicts([single], 0.5) == [{"id": "b", "status": "ok", "evidence": {}}]


# -- the CLI's exit status -------------------------------------------------------------------


def run_score(
    tmp_path: Path, seed: tuple[str, str], judge: FakeJudge, *args: str
) -> tuple[int, str, Path]:
    """``score`` of the seed pair with ``judge`` behind the stub server: (exit status, output
    on one line, results file)."""
    source, summary = seed
    tmp_path = tmp_path / str(len(list(tmp_path.iterdir())))  # a fresh folder per run
    tmp_path.mkdir()
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "a", "source": source, "summary": summary}) + "\n")
    out = tmp_path / "out.jsonl"
    with stub_server(judge) as url:
        code, text = run_cli(
            "score",
            path,
            "-o",
            out,
            "--report",
            tmp_path / "report.html",
            "--no-cache",
            "--base-url",
            url,
            "--model",
            "fake-judge",
            *args,
        )
    return code, text, out


@pytest.mark.parametrize(
    ("passing", "extra", "code", "words"),
    [
        (2, [], 4, "0 pass, 0 FAIL, 1 inconclusive (exit status 4"),
        (2, ["--inconclusive", "fail"], 3, "0 pass, 0 FAIL, 1 inconclusive (counted as fail"),
        (2, ["--inconclusive", "pass"], 0, "0 pass, 0 FAIL, 1 inconclusive (counted as pass"),
        (4, [], 0, "1 pass, 0 FAIL, 0 inconclusive"),
        (0, [], 3, "0 pass, 1 FAIL, 0 inconclusive"),
    ],
)
def test_fail_under_exit_status_follows_the_verdict(
    tmp_path: Path,
    seed: tuple[str, str],
    passing: int,
    extra: list[str],
    code: int,
    words: str,
) -> None:
    status, text, out = run_score(
        tmp_path, seed, scripted(passing), "--samples", "4", "--fail-under", "0.5", *extra
    )
    assert status == code, text
    assert f"--fail-under 0.5: {words}" in text
    (row,) = read_results(out)
    recorded = row["evidence"]["verdict"]
    assert recorded["passes"] == passing and recorded["samples"] == 4
    assert recorded["verdict"] == {2: "inconclusive", 4: "pass", 0: "fail"}[passing]
    assert recorded["threshold"] == 0.5 and recorded["pass_probability"] == passing / 4
    low, high = wilson_interval(passing, 4)
    assert recorded["interval"] == [round(low, 4), round(high, 4)]


def test_the_table_shows_inconclusive_with_threshold_alone_and_exits_0(
    tmp_path: Path, seed: tuple[str, str]
) -> None:
    status, text, out = run_score(
        tmp_path, seed, scripted(2), "--samples", "4", "--threshold", "0.5"
    )
    assert status == 0, text  # --threshold marks rows; only --fail-under sets the status
    assert "inconclusive" in text and "--fail-under" not in text
    assert read_results(out)[0]["evidence"]["verdict"]["verdict"] == "inconclusive"
    html = " ".join((out.parent / "report.html").read_text().split())
    assert "0.5: 0 pass, 0 FAIL, 1 inconclusive (scored rows" in html


def test_fail_under_with_one_sample_passes_or_fails_on_the_score(
    tmp_path: Path, seed: tuple[str, str]
) -> None:
    good, text, out = run_score(tmp_path, seed, scripted(1, samples=1), "--fail-under", "0.5")
    assert good == 0, text
    assert "verdict" not in read_results(out)[0]["evidence"]
    plain, _, plain_out = run_score(tmp_path, seed, scripted(1, samples=1))
    assert plain == 0
    # the same rows as without the flag (but the command and the stub's port, recorded)
    assert [without_command(r) for r in read_results(plain_out)] == [
        without_command(r) for r in read_results(out)
    ]
    bad, text, _ = run_score(tmp_path, seed, scripted(0, samples=1), "--fail-under", "0.5")
    assert bad == 3, text
    assert "0 pass, 1 FAIL, 0 inconclusive" in text


def without_command(row: dict[str, Any]) -> dict[str, Any]:
    evidence = {k: v for k, v in row["evidence"].items() if k not in ("run", "settings")}
    return {**row, "evidence": evidence}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threshold", "0.4", "--fail-under", "0.5"], "--threshold 0.4 and --fail-under 0.5"),
        (["--inconclusive", "fail"], "add --fail-under"),
        (["--fail-under", "0.5", "--inconclusive", "maybe"], "must be pass or fail"),
    ],
)
def test_pass_mark_flags_that_disagree_are_a_usage_error(
    tmp_path: Path, seed: tuple[str, str], args: list[str], message: str
) -> None:
    judge = scripted(1, samples=1)
    status, text, out = run_score(tmp_path, seed, judge, *args)
    assert status == 2
    assert message in text
    assert not out.exists() and judge.calls["SentenceChecks"] == 0


# -- DeepEval --------------------------------------------------------------------------------


def deepeval_case(seed: tuple[str, str], passing: int, **options: Any) -> Any:
    """``deepeval.evaluate`` of one case with ``SummaryQualityMetric(samples=4)``."""
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, DisplayConfig
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel

    metric = SummaryQualityMetric(
        model=FakeDeepEvalModel(scripted(passing)), samples=4, cache=False, **options
    )
    case = LLMTestCase(input=seed[0], actual_output=seed[1])
    result = evaluate(
        [case],
        [metric],
        display_config=DisplayConfig(print_results=False, show_indicator=False),
        async_config=AsyncConfig(run_async=False),
    )
    return result.test_results[0]


@pytest.mark.parametrize(
    ("passing", "options", "success", "expected"),
    [
        (2, {}, True, "inconclusive"),  # the mean, 0.38, is under 0.5: the old rule failed it
        (2, {"inconclusive": "fail"}, False, "inconclusive"),
        (4, {}, True, "pass"),
        (0, {}, False, "fail"),
        (0, {"inconclusive": "pass"}, False, "fail"),
    ],
)
def test_deepeval_success_follows_the_verdict(
    seed: tuple[str, str], passing: int, options: dict[str, Any], success: bool, expected: str
) -> None:
    case = deepeval_case(seed, passing, **options)
    (data,) = case.metrics_data
    assert case.success is success and data.success is success
    head, line = data.reason.splitlines()[:2]
    assert head.startswith("Mean over 4 judge samples: score")
    assert line.startswith(f"Verdict: {expected} ({passing} of 4 judge samples reach 0.5")
    if expected == "inconclusive":
        counted = "a pass" if options.get("inconclusive", "pass") == "pass" else "a fail"
        assert line.endswith(
            f"Counted as {counted} (inconclusive={options.get('inconclusive', 'pass')!r})."
        )


def test_deepeval_score_breakdown_holds_the_pass_probability_and_interval(
    seed: tuple[str, str],
) -> None:
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel

    metric = SummaryQualityMetric(model=FakeDeepEvalModel(scripted(2)), samples=4, cache=False)
    metric.measure(LLMTestCase(input=seed[0], actual_output=seed[1]), _show_indicator=False)
    breakdown = metric.score_breakdown
    assert breakdown["verdict"] == "inconclusive"
    assert breakdown["pass_probability"] == 0.5
    assert (breakdown["pass_probability_low"], breakdown["pass_probability_high"]) == (
        pytest.approx(wilson_interval(2, 4))
    )
    assert metric.score < metric.threshold and metric.is_successful() is True


def test_deepeval_assert_test_fails_only_on_a_clear_fail(seed: tuple[str, str]) -> None:
    from deepeval import assert_test
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel

    case = LLMTestCase(input=seed[0], actual_output=seed[1])

    def metric(passing: int, **options: Any) -> Any:
        return SummaryQualityMetric(
            model=FakeDeepEvalModel(scripted(passing)), samples=4, cache=False, **options
        )

    assert_test(case, [metric(2)], run_async=False)  # inconclusive: not a failure
    with pytest.raises(AssertionError, match="Verdict: inconclusive"):
        assert_test(case, [metric(2, inconclusive="fail")], run_async=False)
    with pytest.raises(AssertionError, match="Verdict: fail"):
        assert_test(case, [metric(0)], run_async=False)


def test_deepeval_single_sample_keeps_the_old_rule(seed: tuple[str, str]) -> None:
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel

    metric = SummaryQualityMetric(model=FakeDeepEvalModel(scripted(1, samples=1)), cache=False)
    metric.measure(LLMTestCase(input=seed[0], actual_output=seed[1]), _show_indicator=False)
    assert metric.verdict is None and "verdict" not in metric.score_breakdown
    assert "Verdict" not in metric.reason
    assert metric.is_successful() is (metric.score >= metric.threshold)


def test_deepeval_rejects_an_unknown_inconclusive_option() -> None:
    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel

    with pytest.raises(ValueError, match="inconclusive must be 'pass' or 'fail'"):
        SummaryQualityMetric(model=FakeDeepEvalModel(FakeJudge()), inconclusive="maybe")


INCONCLUSIVE_TESTS = """
import json

import pytest
from deepeval import assert_test
from deepeval.test_case import LLMTestCase

from deepeval_ext import SummaryQualityMetric
from deepeval_ext.testing import FakeDeepEvalModel
from shared.testing import FakeJudge

SOURCE = {source!r}
SUMMARY = {summary!r}
SUPPORTED = {supported!r}
FLAGGED = {flagged!r}


def metric(passing, **options):
    judge = FakeJudge({{"SentenceChecks": [SUPPORTED] * passing + [FLAGGED] * (4 - passing)}})
    return SummaryQualityMetric(model=FakeDeepEvalModel(judge), samples=4, cache=False, **options)


@pytest.mark.parametrize(
    ("passing", "options"),
    [(2, {{}}), (2, {{"inconclusive": "fail"}}), (4, {{}}), (0, {{}})],
    ids=["two of four", "two of four, inconclusive=fail", "four of four", "none of four"],
)
def test_samples(passing, options):
    assert_test(LLMTestCase(input=SOURCE, actual_output=SUMMARY), [metric(passing, **options)])
"""


def test_deepeval_test_run_fails_only_on_a_clear_fail_unless_told(
    tmp_path: Path, seed: tuple[str, str]
) -> None:
    """``deepeval test run`` (a subprocess, as tests/test_deepeval_cli.py runs it)."""
    from tests.test_deepeval_cli import BIN, GUARD_ARGS, failure_text, outcomes, run

    source, summary = seed
    (tmp_path / "test_inconclusive.py").write_text(
        INCONCLUSIVE_TESTS.format(
            source=source, summary=summary, supported=SUPPORTED, flagged=FLAGGED
        )
    )
    report = tmp_path / "report.xml"
    proc = run(
        [str(BIN / "deepeval"), "test", "run", str(tmp_path), *GUARD_ARGS, f"--junitxml={report}"],
        tmp_path,
    )
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert outcomes(report) == {
        "test_samples[two of four]": "passed",
        "test_samples[two of four, inconclusive=fail]": "failed",
        "test_samples[four of four]": "passed",
        "test_samples[none of four]": "failed",
    }, proc.stdout[-3000:]
    assert proc.returncode == 1
    text = " ".join(failure_text(report, "test_samples[two of four, inconclusive=fail]").split())
    assert "Verdict: inconclusive (2 of 4 judge samples reach 0.5" in text
    assert "Counted as a fail (inconclusive='fail')" in text
    assert "Verdict: fail (0 of 4" in failure_text(report, "test_samples[none of four]")
