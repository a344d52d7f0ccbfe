"""The DeepEval adapter through DeepEval's own runners: ``evaluate()``, ``assert_test``, plain
``measure``/``a_measure``; output normalisation, retries, errors, costs, per-case isolation.

(``deepeval test run`` on the example file is in ``test_deepeval_cli.py``.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from deepeval import assert_test, evaluate
from deepeval.errors import MissingTestCaseParamsError
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
from deepeval.metrics.utils import copy_metrics, initialize_model
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import LLMTestCase
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

import shared.prompts as p
from deepeval_ext import (
    SUB_SCORE_METRICS,
    DeepEvalJudge,
    SummaryAlignmentMetric,
    SummaryCoherenceMetric,
    SummaryCoverageMetric,
    SummaryDensityMetric,
    SummaryGroundingMetric,
    SummaryQualityMetric,
    SummaryScoringError,
    SummarySubScoreMetric,
    normalise_output,
)
from deepeval_ext.testing import FakeDeepEvalModel
from shared import JudgeOutputError, OpenAIJudge, score_summary
from shared.testing import FakeJudge, default_answer, stub_server

REPO = Path(__file__).resolve().parents[1]

SOURCE_B = (
    "The city council approved a budget of 40 million dollars for new bicycle lanes. Construction "
    "starts in March and will take two years. Critics say the money should go to bus services "
    "instead."
)
SUMMARY_B = "The council approved 40 million dollars for bicycle lanes, to be built over two years."
HALLUCINATED = (
    "A company launched a cooking robot that prepares dinner automatically. It costs 999 dollars "
    "and ships from Mars."
)
QUIET = DisplayConfig(print_results=False, show_indicator=False)


def repo_deepeval_files() -> set[str] | None:
    """What ``.deepeval/`` in the repository holds (None: no such folder)."""
    folder = REPO / ".deepeval"
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else None


@pytest.fixture(autouse=True)
def _run_outside_the_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """DeepEval writes ``./.deepeval/`` (cache, last run): keep it in a temp dir, and prove
    nothing was written into the repository's."""
    before = repo_deepeval_files()
    monkeypatch.chdir(tmp_path)
    yield
    assert repo_deepeval_files() == before, "a test wrote into .deepeval/ in the repository"


def case(source: str, summary: str) -> LLMTestCase:
    return LLMTestCase(input=source, actual_output=summary)


def results_by_output(result: Any) -> dict[str, Any]:
    return {r.actual_output: r for r in result.test_results}


# ---------------------------------------------------------------------------------------------
# deepeval.evaluate()
# ---------------------------------------------------------------------------------------------


def test_evaluate_with_fake_backed_model_scores_and_thresholds(seed: tuple[str, str]) -> None:
    source, summary = seed
    model = FakeDeepEvalModel()
    quality = SummaryQualityMetric(model=model, threshold=0.5)
    alignment = SummaryAlignmentMetric(model=model, threshold=0.9)
    result = evaluate(
        [case(source, summary), case(source, HALLUCINATED)],
        metrics=[quality, alignment],
        display_config=QUIET,
    )
    by_output = results_by_output(result)
    good = {m.name: m for m in by_output[summary].metrics_data}
    bad = {m.name: m for m in by_output[HALLUCINATED].metrics_data}

    # the same pair scored by the core directly, for the expected numbers
    expected = score_summary(source, summary, judge=FakeJudge())
    assert good["Summary Quality"].score == pytest.approx(expected.score)
    assert good["Summary Alignment"].score == pytest.approx(expected.alignment) == 1.0
    assert good["Summary Quality"].success and good["Summary Alignment"].success
    assert by_output[summary].success is True
    assert good["Summary Quality"].error is None
    assert good["Summary Quality"].evaluation_model == "fake-deepeval-model"
    assert "Sub-scores: score=" in good["Summary Quality"].verbose_logs
    assert "F1 of alignment" in good["Summary Quality"].reason
    assert "Signature: judge:fake-deepeval-model|n:10" in good["Summary Quality"].verbose_logs

    assert bad["Summary Alignment"].score == 0.0
    assert not bad["Summary Alignment"].success and not bad["Summary Quality"].success
    assert by_output[HALLUCINATED].success is False
    assert "out-of-context" in bad["Summary Quality"].reason  # the sentence's error type


class OpenAICompatibleModel(DeepEvalBaseLLM):
    """A user's custom DeepEval model for an OpenAI-compatible server: JSON mode, returns
    ``(JSON text, cost)`` with a made-up price per token, and ignores the schema."""

    PRICE = 1e-6

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.costs: list[float] = []
        super().__init__("stub-model")

    def load_model(self) -> AsyncOpenAI:
        return AsyncOpenAI(base_url=self.base_url, api_key="not-needed", max_retries=0)

    def get_model_name(self) -> str:
        return self.name

    async def a_generate(self, prompt: str) -> tuple[str, float]:
        reply = await self.model.chat.completions.create(
            model=self.name,
            messages=[{"role": "user", "content": prompt}],
            response_format={"type": "json_object"},
        )
        usage = reply.usage
        cost = (usage.prompt_tokens + usage.completion_tokens) * self.PRICE
        self.costs.append(cost)
        return reply.choices[0].message.content or "", cost

    def generate(self, prompt: str) -> tuple[str, float]:
        client = OpenAI(base_url=self.base_url, api_key="not-needed", max_retries=0)
        reply = client.chat.completions.create(
            model=self.name, messages=[{"role": "user", "content": prompt}]
        )
        return reply.choices[0].message.content or "", 0.0


def test_evaluate_with_custom_model_on_stub_server(seed: tuple[str, str]) -> None:
    source, summary = seed
    with stub_server() as url:
        model = OpenAICompatibleModel(url)
        result = evaluate(
            [case(source, summary), case(SOURCE_B, SUMMARY_B)],
            metrics=[SummaryQualityMetric(model=model)],
            display_config=QUIET,
        )
        requests = url.count
    by_output = results_by_output(result)
    scored = [by_output[s].metrics_data[0] for s in (summary, SUMMARY_B)]
    assert all(m.error is None and m.success for m in scored)
    assert requests == len(model.costs) > 0
    # every call's cost lands on exactly one case: nothing lost, nothing counted twice
    assert sum(m.evaluation_cost for m in scored) == pytest.approx(sum(model.costs))
    assert all(m.evaluation_cost > 0 for m in scored)


def test_a_summary_eval_judge_is_used_as_the_model(seed: tuple[str, str]) -> None:
    """``model=OpenAIJudge(...)``: the core's own client (structured-output negotiation, replies
    bounded by the schemas) judges, with no DeepEval wrapper in between, in evaluate()'s copies
    of the metric too; the requests carry each call's JSON schema."""
    source, summary = seed
    with stub_server() as url:
        judge = OpenAIJudge("local-model", base_url=url)
        metric = SummaryQualityMetric(model=judge)
        assert metric.model is judge and metric.evaluation_model == judge.model_id
        result = evaluate(
            [case(source, summary), case(SOURCE_B, SUMMARY_B)],
            metrics=[metric],
            display_config=QUIET,
        )
        requests = list(url.requests)
    by_output = results_by_output(result)
    for text in (summary, SUMMARY_B):
        data = by_output[text].metrics_data[0]
        assert data.error is None and data.score == pytest.approx(
            score_summary(source if text == summary else SOURCE_B, text, judge=FakeJudge()).score
        )
    assert requests and all(r["model"] == "local-model" for r in requests)
    assert all(r["response_format"]["type"] == "json_schema" for r in requests)
    assert judge.usage["calls"] == len(requests)


def test_model_name_string_resolves_like_deepeval(
    seed: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, summary = seed
    with stub_server() as url:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        metric = SummaryQualityMetric(model="gpt-4.1")
        native = type(initialize_model("gpt-4.1")[0])  # OpenAIModel (GPTModel before DeepEval 4)
        assert type(metric.model) is native and metric.using_native_model
        metric.measure(case(source, summary), _show_indicator=False)
        assert url.count > 0 and all(r["model"] == "gpt-4.1" for r in url.requests)
    assert metric.error is None and metric.score == pytest.approx(
        score_summary(source, summary, judge=FakeJudge()).score
    )
    assert metric.evaluation_cost > 0  # native models return (result, cost) tuples


def test_evaluate_sync_mode_uses_the_models_sync_generate(seed: tuple[str, str]) -> None:
    source, summary = seed

    class SyncOnly(FakeDeepEvalModel):
        async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
            raise AssertionError("async_mode=False must not call a_generate")

    model = SyncOnly()
    result = evaluate(
        [case(source, summary)],
        metrics=[SummaryQualityMetric(model=model, async_mode=False)],
        async_config=AsyncConfig(run_async=False),
        display_config=QUIET,
    )
    data = result.test_results[0].metrics_data[0]
    assert data.error is None and data.success
    assert model.judge.total_calls > 0


def test_ignore_errors_keeps_scoring_the_other_cases(seed: tuple[str, str]) -> None:
    source, summary = seed

    def claims(prompt: str) -> Any:
        if "Mars" in prompt:
            return "this is not JSON"
        return default_answer(prompt, p.SentenceChecks)

    model = FakeDeepEvalModel(FakeJudge({p.SentenceChecks: [claims] * 20}), output="json")
    metric = SummaryQualityMetric(model=model)
    cases = [case(source, summary), case(source, HALLUCINATED)]

    with pytest.raises(SummaryScoringError, match="SentenceChecks"):
        evaluate(cases, metrics=[metric], display_config=QUIET)

    result = evaluate(
        cases, metrics=[metric], display_config=QUIET, error_config=ErrorConfig(ignore_errors=True)
    )
    by_output = results_by_output(result)
    good, bad = by_output[summary].metrics_data[0], by_output[HALLUCINATED].metrics_data[0]
    assert good.error is None and good.success and good.score > 0.5
    assert bad.success is False and bad.score is None
    assert "still invalid after 3 attempt(s)" in bad.error and "SentenceChecks" in bad.error


# ---------------------------------------------------------------------------------------------
# assert_test (plain pytest)
# ---------------------------------------------------------------------------------------------


def test_assert_test_passes_and_fails_by_threshold(seed: tuple[str, str]) -> None:
    source, summary = seed
    model = FakeDeepEvalModel()
    assert_test(case(source, summary), [SummaryQualityMetric(model=model, threshold=0.6)])
    with pytest.raises(AssertionError, match="Summary Alignment"):
        assert_test(
            case(source, HALLUCINATED), [SummaryAlignmentMetric(model=model, threshold=0.9)]
        )
    # the good summary fails a threshold above its score: thresholds decide, not the metric
    with pytest.raises(AssertionError, match="Summary Quality"):
        assert_test(case(source, summary), [SummaryQualityMetric(model=model, threshold=0.99)])


# ---------------------------------------------------------------------------------------------
# No per-case state
# ---------------------------------------------------------------------------------------------


def test_one_instance_judges_each_case_against_its_own_source(seed: tuple[str, str]) -> None:
    source_a, summary_a = seed
    judge = FakeJudge()
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(judge))

    metric.measure(case(source_a, summary_a), _show_indicator=False)
    logs_a = metric.verbose_logs
    metric.measure(case(SOURCE_B, SUMMARY_B), _show_indicator=False)
    logs_b = metric.verbose_logs

    question_prompts = judge.prompts_for(p.GeneratedQuestions)
    verify_prompts = judge.prompts_for(p.SentenceChecks)
    assert len(question_prompts) == 2 and len(verify_prompts) == 2
    assert p.read_block(question_prompts[0], "SOURCE") == source_a
    assert p.read_block(question_prompts[1], "SOURCE") == SOURCE_B  # new questions, new source
    assert p.read_block(verify_prompts[1], "SOURCE") == SOURCE_B
    assert "bicycle" in logs_b and "bicycle" not in logs_a
    assert "smartphone" in logs_a and "smartphone" not in logs_b
    assert metric.score == pytest.approx(
        score_summary(SOURCE_B, SUMMARY_B, judge=FakeJudge()).score
    )


def test_concurrent_cases_on_one_instance_get_their_own_scores_and_costs(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    expected = {
        s: score_summary(src, s, judge=FakeJudge()).score
        for src, s in ((source, summary), (SOURCE_B, SUMMARY_B))
    }
    model = FakeDeepEvalModel(output="tuple", cost_per_call=0.25, judge=FakeJudge(latency=0.01))
    metric = SummaryQualityMetric(model=model)

    async def both() -> list[float]:
        return list(
            await asyncio.gather(
                metric.a_measure(case(source, summary), _show_indicator=False),
                metric.a_measure(case(SOURCE_B, SUMMARY_B), _show_indicator=False),
            )
        )

    alone = {}
    for src, s in ((source, summary), (SOURCE_B, SUMMARY_B)):
        solo = FakeDeepEvalModel(output="tuple", cost_per_call=0.25)
        SummaryQualityMetric(model=solo).measure(case(src, s), _show_indicator=False)
        alone[s] = solo.judge.total_calls * 0.25

    scores = asyncio.run(both())
    assert scores == [pytest.approx(expected[summary]), pytest.approx(expected[SUMMARY_B])]
    # the instance holds the last finished case, with that case's own cost, not a shared total
    assert model.judge.total_calls * 0.25 == pytest.approx(sum(alone.values()))
    assert metric.evaluation_cost in (
        pytest.approx(alone[summary]),
        pytest.approx(alone[SUMMARY_B]),
    )


def test_source_only_work_is_shared_across_evaluate_copies(seed: tuple[str, str]) -> None:
    source, summary = seed
    judge = FakeJudge()
    model = FakeDeepEvalModel(judge, output="tuple", cost_per_call=0.5)
    result = evaluate(
        [case(source, summary), case(source, summary + " It also tracks sleep.")],
        metrics=[SummaryQualityMetric(model=model)],
        display_config=QUIET,
    )
    assert judge.calls["GeneratedQuestions"] == 1  # two summaries of one source: asked once
    costs = [r.metrics_data[0].evaluation_cost for r in result.test_results]
    assert sum(costs) == pytest.approx(judge.total_calls * 0.5)


def test_adapter_is_shared_per_model_and_freed_with_it(seed: tuple[str, str]) -> None:
    """The adapter lives on the model object, not in a module registry whose entries (an
    adapter referring back to its model) would never be released."""
    import copy
    import gc
    import weakref

    from deepeval_ext._judge import judge_for

    source, summary = seed
    model = FakeDeepEvalModel()
    result = evaluate(
        [case(source, summary)], metrics=[SummaryQualityMetric(model=model)], display_config=QUIET
    )
    assert result.test_results[0].metrics_data[0].success
    judge = judge_for(model)
    assert judge is judge_for(model) and judge is not judge_for(model, use_async=False)
    twin = copy.copy(model)  # a copy gets an adapter of its own, over itself
    assert judge_for(twin) is not judge and judge_for(twin).model is twin
    alive = [weakref.ref(x) for x in (model, judge, twin)]
    del model, judge, twin, result
    gc.collect()
    assert [ref() for ref in alive] == [None, None, None]


# ---------------------------------------------------------------------------------------------
# Model output normalisation and retries
# ---------------------------------------------------------------------------------------------


def test_normalise_output_accepts_each_deepeval_shape() -> None:
    expected = p.ExtractedClaims(claims=["The app tracks meals."])
    as_json = expected.model_dump_json()

    class Lookalike(BaseModel):
        claims: list[str]

    assert normalise_output(expected, p.ExtractedClaims, "m") is expected
    assert normalise_output(as_json, p.ExtractedClaims, "m") == expected
    assert normalise_output(f"```json\n{as_json}\n```", p.ExtractedClaims, "m") == expected
    assert (
        normalise_output({"claims": ["The app tracks meals."]}, p.ExtractedClaims, "m") == expected
    )
    assert normalise_output(
        Lookalike(claims=["The app tracks meals."]), p.ExtractedClaims, "m"
    ) == (expected)
    with pytest.raises(JudgeOutputError, match=r"m returned output that does not match Extracted"):
        normalise_output('{"claims": "not a list"}', p.ExtractedClaims, "m")
    with pytest.raises(JudgeOutputError, match="does not match"):
        normalise_output('{"claims": ["cut off', p.ExtractedClaims, "m")
    with pytest.raises(JudgeOutputError, match="returned a int"):
        normalise_output(42, p.ExtractedClaims, "m")


@pytest.mark.parametrize("shape", ["instance", "json", "tuple"])
def test_every_reply_shape_gives_the_same_score(seed: tuple[str, str], shape: str) -> None:
    source, summary = seed
    model = FakeDeepEvalModel(output=shape, cost_per_call=0.1)  # type: ignore[arg-type]
    metric = SummaryQualityMetric(model=model)
    score = metric.measure(case(source, summary), _show_indicator=False)
    assert score == pytest.approx(score_summary(source, summary, judge=FakeJudge()).score)
    # a cost is reported only in the tuple shape; a model that reports none gives None, not 0
    expected_cost = pytest.approx(0.1 * model.judge.total_calls) if shape == "tuple" else None
    assert metric.evaluation_cost == expected_cost


def test_model_without_schema_parameter_gets_prompt_only(seed: tuple[str, str]) -> None:
    source, summary = seed
    seen: list[tuple[Any, ...]] = []

    class TextOnly(FakeDeepEvalModel):
        async def a_generate(self, prompt: str) -> str:  # type: ignore[override]
            seen.append((prompt,))
            schema = p.SCHEMA_FOR_TASK[p.task_of(prompt)]  # type: ignore[index]
            return self.judge.answer_text(prompt, schema)

    judge = DeepEvalJudge(TextOnly())
    assert not judge._passes_schema
    metric = SummaryQualityMetric(model=TextOnly())
    metric.measure(case(source, summary), _show_indicator=False)
    direct = FakeJudge()
    score_summary(source, summary, judge=direct)
    assert metric.error is None and len(seen) == direct.total_calls


def test_model_that_raises_type_error_inside_is_not_retried_without_schema(
    seed: tuple[str, str],
) -> None:
    """DeepEval's own helper retries without the schema on any TypeError; we look at the
    signature instead, so a bug inside the model surfaces as the model's error."""
    source, summary = seed
    calls: list[bool] = []

    class Buggy(FakeDeepEvalModel):
        async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
            calls.append(schema is not None)
            raise TypeError("bug inside the model")

    metric = SummaryQualityMetric(model=Buggy())
    with pytest.raises(SummaryScoringError, match="bug inside the model"):
        metric.measure(case(source, summary), _show_indicator=False)
    assert calls and all(calls)


def test_invalid_output_is_retried_with_the_error_fed_back(seed: tuple[str, str]) -> None:
    source, summary = seed
    judge = FakeJudge({p.SentenceChecks: ['{"claims": "not a list"}']})
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(judge, output="json"))
    metric.measure(case(source, summary), _show_indicator=False)
    assert metric.error is None and metric.success
    retry_prompt = judge.prompts_for(p.SentenceChecks)[1]
    assert "Your previous reply could not be used" in retry_prompt
    assert "does not match SentenceChecks" in retry_prompt


def test_output_invalid_after_retries_sets_a_clear_error(seed: tuple[str, str]) -> None:
    source, summary = seed
    judge = FakeJudge({p.SentenceChecks: ["not json"] * 3})
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(judge, output="json"), retries=2)
    with pytest.raises(SummaryScoringError) as raised:
        metric.measure(case(source, summary), _show_indicator=False)
    assert metric.error == str(raised.value)
    assert "SentenceChecks still invalid after 3 attempt(s)" in metric.error
    assert metric.score is None and metric.success is False and not metric.is_successful()
    assert judge.calls["SentenceChecks"] == 3


# ---------------------------------------------------------------------------------------------
# Options, DeepEval semantics, bad test cases
# ---------------------------------------------------------------------------------------------


def test_strict_mode_rounds_down_like_deepeval(seed: tuple[str, str]) -> None:
    source, summary = seed
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(), strict_mode=True, threshold=0.3)
    assert metric.threshold == 1
    metric.measure(case(source, summary), _show_indicator=False)
    assert metric.score == 0.0 and metric.success is False
    assert 0 < metric.score_breakdown["coverage"] < 1  # the breakdown keeps the real values


def test_include_reason_false_and_options_reach_the_core(seed: tuple[str, str]) -> None:
    source, summary = seed
    judge = FakeJudge()
    metric = SummaryQualityMetric(
        model=FakeDeepEvalModel(judge),
        include_reason=False,
        n=3,
        beta=2.0,
        combine="min",
        assessment_questions=["What can users log?", {"question": "What does it remind users of?"}],
    )
    metric.measure(case(source, summary), _show_indicator=False)
    assert metric.reason is None
    assert judge.calls["GeneratedQuestions"] == 0 and judge.calls["ReferenceAnswers"] == 1
    assert "What can users log?" in judge.prompts_for(p.ReferenceAnswers)[0]
    breakdown = metric.score_breakdown
    assert metric.score == pytest.approx(min(breakdown["alignment"], breakdown["coverage"]))
    assert "combine:min" in metric.verbose_logs and "n:user2:" in metric.verbose_logs


def test_coherence_formula_reaches_the_core(seed: tuple[str, str]) -> None:
    source = seed[0]
    summary = (
        "A company is launching a fitness app. The app logs meals and water intake. "
        "It also sends motivational reminders."
    )
    metric = SummaryCoherenceMetric(model=FakeDeepEvalModel(), coherence_formula="article")
    metric.measure(case(source, summary), _show_indicator=False)
    assert "coh:article" in metric.verbose_logs
    copy = copy_metrics([metric])[0]  # deepeval.evaluate() copies metrics per case
    assert copy.coherence_formula == "article"
    with pytest.raises(ValueError, match="coherence"):
        SummaryQualityMetric(model=FakeDeepEvalModel(), coherence_formula="vibes")


def test_bad_options_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="combine"):
        SummaryQualityMetric(model=FakeDeepEvalModel(), combine="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n must be"):
        SummaryQualityMetric(model=FakeDeepEvalModel(), n=0)
    with pytest.raises(ValueError, match="sub_score"):
        SummarySubScoreMetric("score", model=FakeDeepEvalModel())
    with pytest.raises(ValueError, match="scores 'alignment'"):
        SummaryAlignmentMetric(sub_score="coverage", model=FakeDeepEvalModel())


def test_missing_fields_give_deepevals_own_error(seed: tuple[str, str]) -> None:
    source, _ = seed
    metric = SummaryQualityMetric(model=FakeDeepEvalModel())
    with pytest.raises(MissingTestCaseParamsError, match="'actual_output' cannot be None"):
        metric.measure(LLMTestCase(input=source, actual_output=None), _show_indicator=False)
    # an empty summary is not missing: it scores 0.0, as everywhere (README, "Bad input")
    assert metric.measure(case(source, ""), _show_indicator=False) == 0.0
    with pytest.raises(SummaryScoringError, match="bad test case: source is empty"):
        metric.measure(case("   \n ", "A summary."), _show_indicator=False)


def test_whitespace_summary_scores_zero_without_judge_calls(seed: tuple[str, str]) -> None:
    source, _ = seed
    judge = FakeJudge()
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(judge))
    assert metric.measure(case(source, "   "), _show_indicator=False) == 0.0
    assert metric.success is False and judge.total_calls == 0 and "empty" in metric.reason


def test_copies_made_by_evaluate_keep_every_option() -> None:
    model = FakeDeepEvalModel()
    originals = [
        SummaryQualityMetric(model=model, threshold=0.7, n=4, beta=0.5, strict_mode=True),
        SummaryCoverageMetric(model=model, threshold=0.8, async_mode=False, retries=1),
        SummarySubScoreMetric("alignment", model=model, include_reason=False, cache=False),
    ]
    for original, copy in zip(originals, copy_metrics(originals), strict=True):
        assert type(copy) is type(original) and copy is not original
        assert copy.model is model and copy.__name__ == original.__name__
        for field in ("threshold", "n", "beta", "combine", "strict_mode", "async_mode", "retries"):
            assert getattr(copy, field) == getattr(original, field), field
        assert copy.include_reason == original.include_reason and copy.cache == original.cache


def test_measure_works_inside_a_running_event_loop(seed: tuple[str, str]) -> None:
    source, summary = seed
    metric = SummaryQualityMetric(model=FakeDeepEvalModel())

    async def from_async_code() -> float:
        return metric.measure(case(source, summary), _show_indicator=False)

    assert asyncio.run(from_async_code()) == pytest.approx(
        score_summary(source, summary, judge=FakeJudge()).score
    )


# ---------------------------------------------------------------------------------------------
# Sub-score metrics
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SUB_SCORE_METRICS))
def test_each_sub_score_metric_reports_the_cores_value(seed: tuple[str, str], name: str) -> None:
    source, summary = seed
    if name == "grounding":  # the seed summary states no name, number or date to check
        source, summary = SOURCE_B, SUMMARY_B
    longer = f"{summary} The app sends reminders. Users can log water. It gives workouts."
    for text in (summary, longer):  # one sentence and four
        metric = SUB_SCORE_METRICS[name](model=FakeDeepEvalModel(), threshold=0.0)
        core = score_summary(source, text, judge=FakeJudge(), **metric._score_options())
        assert core.scored
        expected = core.sub_scores()[name]
        assert expected is not None
        assert metric.measure(case(source, text), _show_indicator=False) == pytest.approx(expected)
        assert metric.success is True and metric.reason.startswith(f"{name} ")


def test_sub_score_left_out_of_dimensions_is_an_error_not_zero(seed: tuple[str, str]) -> None:
    source, summary = seed
    metric = SummaryDensityMetric(model=FakeDeepEvalModel(), dimensions=["conciseness"])
    with pytest.raises(SummaryScoringError, match="sub-score 'density' was not computed"):
        metric.measure(case(source, summary), _show_indicator=False)
    assert metric.score is None and metric.success is False
    assert "computed: score, alignment, coverage, conciseness" in metric.error
    with pytest.raises(ValueError, match="made_up"):
        SummarySubScoreMetric("made_up", model=FakeDeepEvalModel())


def test_dimension_metric_succeeds_when_the_judge_fails_only_the_headline(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    healthy = score_summary(source, summary, judge=FakeJudge())
    for name in ("density", "specificity", "coherence"):
        broken = FakeJudge({p.SentenceChecks: ["not json"] * 10})  # claims never extract
        model = FakeDeepEvalModel(broken, output="json")
        metric = SUB_SCORE_METRICS[name](model=model, threshold=0.0)
        assert metric.measure(case(source, summary), _show_indicator=False) == pytest.approx(
            healthy.sub_scores()[name]
        )
        assert metric.error is None and metric.success is True, name
        # its own account (the dimension's evidence), not the failed headline's reason
        assert metric.reason.startswith(f"{name} ") and "Unscored:" not in metric.reason
    # a dimension that itself failed is an error with the core's reason, never 0
    # (on the two-call path the style review is part of the summary review)
    no_style = FakeJudge({"PointedReview": ["not json"] * 10})
    specificity = SummarySubScoreMetric("specificity", model=FakeDeepEvalModel(no_style))
    with pytest.raises(
        SummaryScoringError, match=r"'specificity' was not computed: .*PointedReview"
    ):
        specificity.measure(case(source, summary), _show_indicator=False)
    assert specificity.score is None and specificity.success is False
    broken = FakeJudge({p.SentenceChecks: ["not json"] * 10})
    coverage = SummaryCoverageMetric(model=FakeDeepEvalModel(broken, output="json"))
    with pytest.raises(SummaryScoringError, match=r"unscored: .*SentenceChecks"):
        coverage.measure(case(source, summary), _show_indicator=False)
    assert coverage.score is None and coverage.success is False


def test_grounding_metric_runs_without_an_llm_in_evaluate() -> None:
    """No model, no OPENAI_API_KEY (conftest removes it): nothing is built or called."""
    made_up = "The council approved 45 million dollars for tram lines in Oslo."
    want_good = score_summary(SOURCE_B, SUMMARY_B, judge=None, dimensions=["grounding"])
    want_bad = score_summary(SOURCE_B, made_up, judge=None, dimensions=["grounding"])
    assert want_good.grounding > want_bad.grounding
    threshold = round((want_good.grounding + want_bad.grounding) / 2, 4)
    metric = SummaryGroundingMetric(threshold)
    assert metric.model is None and metric.threshold == threshold
    result = evaluate(
        [case(SOURCE_B, SUMMARY_B), case(SOURCE_B, made_up)], metrics=[metric], display_config=QUIET
    )
    by_output = {k: v.metrics_data[0] for k, v in results_by_output(result).items()}
    good, bad = by_output[SUMMARY_B], by_output[made_up]
    assert good.error is None and good.success
    assert good.score == pytest.approx(want_good.grounding)
    assert good.reason.startswith(f"grounding {good.score:.2f}: ") and "Unscored" not in good.reason
    assert bad.error is None and not bad.success and bad.score < threshold
    assert "'45 million dollars'" in bad.reason and "'Oslo'" in bad.reason
    expected = score_summary(SOURCE_B, made_up, judge=None, dimensions=["grounding"])
    assert bad.score == pytest.approx(expected.grounding)
    assert copy_metrics([metric])[0].model is None
    # with a model it is an ordinary sub-score metric (its breakdown has the judged scores)
    judged = SummaryGroundingMetric(threshold, model=FakeDeepEvalModel())
    assert judged.measure(case(SOURCE_B, made_up), _show_indicator=False) == pytest.approx(
        expected.grounding
    )
    assert judged.score_breakdown["alignment"] is not None


def test_alignment_threshold_separates_faithful_from_hallucinating(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    metric = SummaryAlignmentMetric(model=FakeDeepEvalModel(), threshold=0.9)
    metric.measure(case(source, summary), _show_indicator=False)
    assert metric.success and metric.score == 1.0
    metric.measure(
        case(source, summary + " It was built on Mars by robots."), _show_indicator=False
    )
    assert not metric.success and metric.score == pytest.approx(0.5)
    assert metric.__name__ == "Summary Alignment"


def test_docs_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """The first Python block of docs/deepeval.md (pasted into the README) runs offline."""
    text = (REPO / "docs" / "deepeval.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/deepeval.md", "exec"), {"__name__": "docs_example"})
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Summary ")]
    parsed = sorted(
        (name, float(score), flag == "success=True")
        for name, rest in (line.split(": ", 1) for line in lines)
        for score, flag in [rest.split()]
    )
    quality = [row for row in parsed if row[0] == "Summary Quality"]
    alignment = [row for row in parsed if row[0] == "Summary Alignment"]
    assert [row[2] for row in quality] == [False, True] and quality[0][1] < 0.5 < quality[1][1]
    assert alignment == [("Summary Alignment", 0.5, False), ("Summary Alignment", 1.0, True)]


def test_evaluation_cost_is_the_rows_bill_with_a_summary_eval_judge(
    seed: tuple[str, str],
) -> None:
    source, summary = seed
    with stub_server(cached_tokens=20) as url:
        judge = OpenAIJudge("local-model", base_url=url, price_in=3.0, price_out=15.0)
        metric = SummaryQualityMetric(model=judge, async_mode=True)
        metric.measure(case(source, summary), _show_indicator=False)
        replies = [r for r in url.replies if r["schema"] != "JudgeProbe"]
    assert metric.error is None
    prompt = sum(r["prompt_tokens"] for r in replies)
    completion = sum(r["completion_tokens"] for r in replies)
    # no cached price given: cached tokens cost the input price
    assert metric.evaluation_cost == pytest.approx((prompt * 3.0 + completion * 15.0) / 1e6)
    assert metric.evaluation_cost > 0
