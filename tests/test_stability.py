"""Judge stability: ``samples=k`` scores each row k times with independent judge samples.

Known answers: a deterministic judge gives k identical scorings (spread exactly 0, mean = the
single-run value); a judge whose answers vary by seed gives a non-zero spread; the judge calls are
k times a single run's summary-dependent calls plus the source-level calls once, and a sample's
answers are never replayed as another's from the cache.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared import (
    OpenAIJudge,
    SummaryEvaluation,
    flip_rate,
    score_summaries,
    score_summary,
    stability,
)
from shared.cli.app import app
from shared.core.subscores import SUB_SCORE_NAMES
from shared.judge import MemoryStore
from shared.runs.results import read_results
from shared.testing import FakeJudge, stub_server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "summaries.jsonl"

SOURCE_LEVEL = {"GeneratedQuestions"}
"""The calls that depend on the source only (shared across samples)."""

SECOND = (
    "The company's new smartphone app tracks fitness goals. The app sends motivational "
    "reminders. The article discusses the app."
)


def _summary_level(calls: Counter[str]) -> Counter[str]:
    return Counter({name: n for name, n in calls.items() if name not in SOURCE_LEVEL})


def test_deterministic_judge_gives_zero_spread_and_the_single_run_values(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    single_judge, sampled_judge = FakeJudge(), FakeJudge()
    single = score_summary(source, summary, judge=single_judge, cache=False)
    sampled = score_summary(source, summary, judge=sampled_judge, cache=False, samples=3)
    assert single.scored and sampled.scored
    assert single.sample_scores == [] and single.spread == {}
    assert len(sampled.sample_scores) == 3
    for name, value in single.sub_scores().items():
        if value is None:
            assert sampled.sub_scores()[name] is None
            continue
        assert sampled.sub_scores()[name] == pytest.approx(value, abs=1e-12), name
        assert sampled.spread[name] == 0.0, name
    assert "|samples:3|" in sampled.signature and "samples" not in single.signature
    assert sampled.reason.startswith("Mean over 3 judge samples: score")
    assert sampled.spread_columns()["score_sd"] == 0.0 and single.spread_columns() == {}


def test_judge_calls_are_k_times_the_summary_calls_plus_the_source_calls_once(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    single_judge, sampled_judge = FakeJudge(), FakeJudge()
    score_summary(source, summary, judge=single_judge, cache=False)
    score_summary(source, summary, judge=sampled_judge, cache=False, samples=3)
    single, sampled = single_judge.calls, sampled_judge.calls
    assert single["GeneratedQuestions"] == sampled["GeneratedQuestions"] == 1
    per_run = _summary_level(single)
    assert sum(per_run.values()) == 2  # the claim check and the summary review (two-call)
    assert _summary_level(sampled) == Counter({name: 3 * n for name, n in per_run.items()})


def test_batch_of_one_source_shares_questions_across_rows_and_samples(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    judge = FakeJudge()
    results = score_summaries([(source, summary), (source, SECOND)], judge=judge, samples=2)
    assert all(r.scored and len(r.sample_scores) == 2 for r in results)
    assert judge.calls["GeneratedQuestions"] == 1
    assert judge.calls["SentenceChecks"] == 4  # 2 rows x 2 samples
    # the deterministic dimensions are computed once per row and agree across samples
    for r in results:
        assert r.spread["density"] == r.spread["coherence"] == r.spread["conciseness"] == 0.0


def test_a_judge_that_varies_by_seed_gives_a_non_zero_spread(seed: tuple[str, str]) -> None:
    source, summary = seed
    judge = FakeJudge(vary_by_seed=True)
    result = score_summary(source, summary, judge=judge, cache=False, samples=3)
    assert result.scored
    seeds = [
        s
        for (name, _), s in zip(judge.prompts, judge.seeds, strict=True)
        if name != "GeneratedQuestions"
    ]
    assert sorted(set(seeds)) == [0, 1, 2]
    coverages = [s["coverage"] for s in result.sample_scores]
    scores = [s["score"] for s in result.sample_scores]
    assert len(set(coverages)) > 1
    assert result.spread["coverage"] > 0 and result.spread["score"] > 0
    assert result.spread["coverage"] == pytest.approx(statistics.stdev(coverages))
    assert result.spread["score"] == pytest.approx(statistics.stdev(scores))
    assert result.score == pytest.approx(statistics.fmean(scores))
    assert result.coverage == pytest.approx(statistics.fmean(coverages))
    assert result.spread["alignment"] == 0.0  # verdicts do not depend on the seed


def test_the_cache_keeps_each_sample_apart_and_replays_it_on_a_rerun(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    store = MemoryStore()
    judge = FakeJudge(vary_by_seed=True)
    first = score_summary(source, summary, judge=judge, cache=store, samples=3)
    calls = judge.total_calls
    assert calls == 1 + 3 * 2
    again = score_summary(
        source, summary, judge=FakeJudge(vary_by_seed=True), cache=store, samples=3
    )
    assert again.sample_scores == first.sample_scores  # each sample replayed as itself
    # one more sample: only sample 4's calls are new; samples 1-3 and the questions are cached
    judge4 = FakeJudge(vary_by_seed=True)
    four = score_summary(source, summary, judge=judge4, cache=store, samples=4)
    assert judge4.total_calls == 2
    assert four.sample_scores[:3] == first.sample_scores
    # a single-sample run is not served a sample's answers
    plain = FakeJudge(vary_by_seed=True)
    score_summary(source, summary, judge=plain, cache=store)
    assert _summary_level(plain.calls).total() == 2


def test_openai_judge_samples_send_distinct_seeds_and_a_temperature(seed: tuple[str, str]) -> None:
    source, summary = seed
    with stub_server(FakeJudge(vary_by_seed=True)) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        result = score_summary(source, summary, judge=judge, cache=False, samples=3)
        requests = list(url.requests)
    assert result.scored and result.spread["score"] > 0
    assert len(requests) == 1 + 1 + 3 * 2  # the probe, the questions, 3 samples x 2
    sampled = [r for r in requests if r.get("seed") is not None]
    assert len(sampled) == 6
    assert Counter(r["seed"] for r in sampled) == {0: 2, 1: 2, 2: 2}
    assert {r["temperature"] for r in sampled} == {0.7}
    unsampled = [r for r in requests if r.get("seed") is None]
    # the structured-mode probe and the questions
    assert len(unsampled) == 2 and {r["temperature"] for r in unsampled} == {0.0}
    assert judge.usage["calls"] == 8  # the samples' calls (and the probe) count on the judge


def test_openai_judge_own_seed_and_temperature_are_kept() -> None:
    judge = OpenAIJudge(
        "m", base_url="http://127.0.0.1:9/v1", api_key="x", temperature=0.3, seed=40
    )
    twin = judge.with_sample(2, 42)
    assert (twin.temperature, twin.seed) == (0.3, 42)
    assert (judge.temperature, judge.seed) == (0.3, 40)
    assert judge.with_sample(2, 42) is twin
    assert twin.settings != judge.settings


def test_an_unscored_sample_unscores_the_row_and_says_which(seed: tuple[str, str]) -> None:
    source, summary = seed
    judge = FakeJudge({"PointedReview": [None, RuntimeError("boom"), None]}, vary_by_seed=True)
    result = score_summary(source, summary, judge=judge, cache=False, samples=3, retries=0)
    assert not result.scored and result.score is None and result.coverage is None
    assert result.error is not None and result.error.startswith("1 of 3 judge samples unscored")
    assert "boom" in result.error
    assert len(result.sample_scores) == 3


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3", 101])
def test_bad_samples_is_rejected_before_any_call(seed: tuple[str, str], bad: Any) -> None:
    judge = FakeJudge()
    with pytest.raises(ValueError, match=r"^samples must be"):
        score_summary(*seed, judge=judge, samples=bad)
    assert judge.total_calls == 0


# -- stability over rows ---------------------------------------------------------------------


def _row(*scores: float) -> SummaryEvaluation:
    mean = statistics.fmean(scores)
    return SummaryEvaluation(
        score=mean,
        alignment=mean,
        coverage=mean,
        sample_scores=[dict.fromkeys(SUB_SCORE_NAMES, s) for s in scores],
        spread={"score": statistics.stdev(scores)},
    )


def test_flip_rate_counts_rows_on_both_sides_of_the_threshold() -> None:
    rows = [_row(0.4, 0.6, 0.7), _row(0.6, 0.7, 0.8), _row(0.1, 0.2, 0.3), _row(0.5, 0.49)]
    rate = flip_rate(rows, 0.5)
    assert (rate.rows, rate.flipped, rate.share) == (4, 2, 0.5)
    assert rate.line() == "score at threshold 0.5: 2/4 rows flip between samples (50.0%)"
    # a single-sample result, and a results-file row, are read alike
    single = SummaryEvaluation(score=0.5, alignment=0.5, coverage=0.5)
    file_row = {"score": 0.55, "evidence": {"sample_scores": [{"score": 0.6}, {"score": 0.45}]}}
    rate = flip_rate([single, file_row], 0.5)
    assert (rate.rows, rate.flipped) == (1, 1)
    assert flip_rate([single], 0.5).share is None
    with pytest.raises(KeyError, match="unknown sub-score"):
        flip_rate(rows, 0.5, sub_score="nope")


def test_stability_is_the_mean_and_largest_per_row_sd() -> None:
    rows = [_row(0.4, 0.6), _row(0.5, 0.5), SummaryEvaluation(score=1, alignment=1, coverage=1)]
    summary = stability(rows, ["score"])["score"]
    sd = statistics.stdev([0.4, 0.6])
    assert summary.rows == 2
    assert summary.mean_sd == pytest.approx(sd / 2)
    assert summary.max_sd == pytest.approx(sd)


# -- CLI -------------------------------------------------------------------------------------


def test_cli_samples_write_spread_columns_and_report_flips(
    tmp_path: Path, seed: tuple[str, str]
) -> None:
    source, summary = seed
    rows = [
        {"id": "a", "source": source, "summary": summary},
        {"id": "b", "source": source, "summary": SECOND},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.csv"
    with stub_server(FakeJudge(vary_by_seed=True)) as url:
        result = CliRunner().invoke(
            app,
            [
                "score",
                str(path),
                "-o",
                str(out),
                "--report",
                str(tmp_path / "report.html"),
                "--no-cache",
                "--base-url",
                url,
                "--model",
                "fake-judge",
                "--samples",
                "3",
                "--flip-threshold",
                "0.6",
            ],
            catch_exceptions=False,
        )
        requests = len(url.requests)
    text = " ".join(result.output.split())
    assert result.exit_code == 0, text
    # the probe; questions once for the source; 3 samples x 2 per row
    assert requests == 1 + 1 + 2 * 3 * 2
    with out.open(newline="") as handle:
        written = list(csv.DictReader(handle))
    header = list(written[0])
    assert header.index("score_sd") > header.index("conciseness")
    for row in written:
        samples = json.loads(row["evidence"])["sample_scores"]
        values = [s["score"] for s in samples]
        assert float(row["score_sd"]) == pytest.approx(statistics.stdev(values))
        assert float(row["score"]) == pytest.approx(statistics.fmean(values))
        assert float(row["density_sd"]) == 0.0
    assert any(float(row["score_sd"]) > 0 for row in written)
    expected = flip_rate(read_results(out), 0.6)
    assert expected.rows == 2
    assert f"Pass/fail flips: {expected.line()}" in text
    assert "Spread over judge samples (mean sd per row): score" in text
    # the report shows the same: the spread per judged sub-score and the flips
    html = " ".join((tmp_path / "report.html").read_text().split())
    assert 'id="stability-table"' in html and f"Pass/fail flips: {expected.line()}." in html
    spread = stability(read_results(out), ["score"])["score"]
    assert f'<td>score</td><td class="num">2</td> <td class="num">{spread.mean_sd:.3f}</td>' in html


def test_cli_single_sample_results_have_no_spread_columns(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    with stub_server() as url:
        result = CliRunner().invoke(
            app,
            [
                "score",
                str(EXAMPLES),
                "-o",
                str(out),
                "--report",
                str(tmp_path / "report.html"),
                "--no-cache",
                "--base-url",
                url,
                "--model",
                "fake-judge",
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    with out.open(newline="") as handle:
        header = next(csv.reader(handle))
    assert not [c for c in header if c.endswith("_sd")]
    assert "Pass/fail flips" not in result.output
    html = (tmp_path / "report.html").read_text()
    assert "Stability over judge samples" not in html and "Pass/fail flips" not in html


# -- adapters --------------------------------------------------------------------------------


def test_deepeval_metric_reports_the_mean_and_the_spread(seed: tuple[str, str]) -> None:
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel

    source, summary = seed
    judge = FakeJudge()
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(judge), samples=3, cache=False)
    metric.measure(LLMTestCase(input=source, actual_output=summary), _show_indicator=False)
    single = score_summary(source, summary, judge=FakeJudge(), cache=False)
    assert metric.score == pytest.approx(single.score)
    breakdown = metric.score_breakdown
    assert breakdown["coverage"] == pytest.approx(single.coverage)
    # a DeepEval model offers no with_sample: each sample is its own call, and this one is
    # deterministic, so the spread is 0 (reported, not left out)
    assert breakdown["score_sd"] == breakdown["coverage_sd"] == 0.0
    assert metric.reason.startswith("Mean over 3 judge samples")
    assert judge.calls["SentenceChecks"] == 3 and judge.calls["GeneratedQuestions"] == 1


def test_compare_pairs_the_means_not_the_spread_columns() -> None:
    from shared import compare

    a = [{"id": str(i), "score": 0.5, "score_sd": 0.1} for i in range(5)]
    b = [{"id": str(i), "score": 0.6, "score_sd": 0.0} for i in range(5)]
    result = compare(a, b, resamples=50, trials=50)
    assert "score_sd" not in result.names and result.get("score").delta == pytest.approx(0.1)
    assert "score_sd" in compare(a, b, keys=["score", "score_sd"], resamples=50, trials=50).names


def test_ragas_collections_metric_gives_the_mean_and_the_spread_in_its_reason(
    seed: tuple[str, str],
) -> None:
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory

    from ragas_ext.collections import SummaryQuality

    source, summary = seed
    with stub_server() as url:
        llm = llm_factory("m", client=AsyncOpenAI(base_url=url, api_key="x", max_retries=0))
        metric = SummaryQuality(llm, samples=2, cache=False)
        result = metric.score(reference_contexts=[source], response=summary)
        calls = url.judge.calls
    single = score_summary(source, summary, judge=FakeJudge(), cache=False)
    assert result.value == pytest.approx(single.score)
    assert result.reason.startswith("Mean over 2 judge samples: score")
    assert "(sd 0.00)" in result.reason  # the Ragas LLM is called as is: deterministic here
    assert calls["GeneratedQuestions"] == 1 and calls["SentenceChecks"] == 2


def test_samples_share_the_judge_concurrency_limit(seed: tuple[str, str]) -> None:
    """The per-sample copies of the wrappers keep one limit: never more calls in flight than
    ``concurrency``, however many samples (counted at each call, no timing involved)."""
    import asyncio

    class Counting(FakeJudge):
        def __init__(self) -> None:
            super().__init__()
            self.now = self.most = 0

        async def generate(self, prompt: str, schema: Any, *, seed: int | None = None) -> Any:
            self.now += 1
            self.most = max(self.most, self.now)
            try:
                for _ in range(3):
                    await asyncio.sleep(0)  # let every other ready call start meanwhile
                return await super().generate(prompt, schema, seed=seed)
            finally:
                self.now -= 1

    source, summary = seed
    judge = Counting()
    score_summaries(
        [(source, summary), (source, SECOND)], judge=judge, cache=False, samples=4, concurrency=2
    )
    assert judge.total_calls == 1 + 2 * 4 * 2
    assert judge.most == 2
