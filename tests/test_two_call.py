"""The two-call path (the default): one judge call per source, two per summary, source-first
prompts that a provider's prefix cache can reuse, and a cache hint per source (issue 23)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shared import ScoreOptions, ascore_summaries, score_summaries, score_summary, signature
from shared import prompts as p
from shared.cache_hints import cache_hint, current_cache_hint, request_fields
from shared.openai_judge import OpenAIJudge
from shared.testing import FakeJudge, stub_server
from shared.tokens import estimate_tokens
from tests.test_long_source import BUDGET, long_source
from tests.test_pipeline import QUESTIONS

CHECKED = {
    "claims": [
        {
            "claim": "A company launches a fitness app.",
            "verdict": "supported",
            "reason": "r",
            "quote": "q",
        },
        {"claim": "The app logs meals.", "verdict": "supported", "reason": "r", "quote": "q"},
        {
            "claim": "The app costs 5 dollars.",
            "verdict": "not_in_source",
            "reason": "r",
            "quote": "",
        },
    ]
}
REVIEW = {
    "answers": [
        {"index": 1, "answer": "A fitness tracking app.", "grade": 4, "reason": "no smartphone"},
        {"index": 2, "answer": "Exercise goals, meals and water.", "grade": 5, "reason": "same"},
        {"index": 3, "answer": "Workout suggestions and reminders.", "grade": 5, "reason": "same"},
        # a judge that grades an "idk" above 0 is overruled: the summary does not answer it
        {"index": 4, "answer": "idk", "grade": 3, "reason": "guessed"},
    ],
    "sentences": [{"index": 1, "vague": False, "reason": ""}],
    "repeated_points": [],
}


def test_scores_from_the_two_replies_follow_the_metric_definitions(seed: tuple[str, str]) -> None:
    judge = FakeJudge(
        {p.GeneratedQuestions: QUESTIONS, "CheckedClaims": CHECKED, "SummaryReview": REVIEW}
    )
    result = score_summary(*seed, judge=judge)
    assert result.error is None
    # coverage = (5·4 + 4·5 + 3·5 + 1·0) / (5 · 13); alignment = 2/3
    assert result.coverage == pytest.approx(55 / 65)
    assert result.alignment == pytest.approx(2 / 3)
    assert [c.verdict for c in result.claims] == ["supported", "supported", "not_in_source"]
    last = result.questions[-1]
    assert last.summary_answer == "idk" and last.grade == 0
    assert dict(judge.calls) == {"GeneratedQuestions": 1, "CheckedClaims": 1, "SummaryReview": 1}
    assert "|path:two-call|" in result.signature


def test_the_summary_review_never_sees_the_source(seed: tuple[str, str]) -> None:
    source, summary = seed
    judge = FakeJudge()
    score_summary(source, summary, judge=judge, n=1)  # the fake's one reference: sentence 1
    (review,) = judge.prompts_for("SummaryReview")
    assert "<<<SOURCE>>>" not in review
    last = source.strip().rstrip(".").rsplit(". ", 1)[-1]
    assert last[:40] in source and last[:40] not in review  # no other sentence of the source
    (check,) = judge.prompts_for("CheckedClaims")
    assert check.startswith(p.source_prefix(source))


class _Ordered(FakeJudge):
    """Records when each call starts and ends, per task, in event order (no clocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []

    async def generate(self, prompt: str, schema: type[Any], *, seed: int | None = None) -> Any:
        task = p.task_of(prompt) or "?"
        self.events.append(("start", task))
        await asyncio.sleep(0)  # let every other ready call start if it can
        try:
            return await super().generate(prompt, schema, seed=seed)
        finally:
            self.events.append(("end", task))


def test_the_source_call_ends_before_any_summary_call_starts(seed: tuple[str, str]) -> None:
    judge = _Ordered()
    pairs = [(seed[0], f"{seed[1]} ({i})") for i in range(5)]
    results = score_summaries(pairs, judge=judge)
    assert all(r.scored for r in results)
    assert judge.events[:2] == [("start", "source_questions"), ("end", "source_questions")]
    # the longest chain for one summary: the source's call, then its two calls side by side
    assert sorted(t for e, t in judge.events[2:] if e == "start") == sorted(
        ["check_claims"] * 5 + ["review_summary"] * 5
    )


def test_the_two_paths_never_share_a_signature_or_a_cached_answer(seed: tuple[str, str]) -> None:
    judge = FakeJudge()
    steps = score_summary(*seed, judge=judge, judge_path="steps")
    before = judge.total_calls
    two = score_summary(*seed, judge=judge)  # same judge, same cache
    assert steps.signature != two.signature
    assert "|path:steps|" in steps.signature and "|path:two-call|" in two.signature
    # every two-call prompt is new to the cache (the step path's questions are not reused)
    assert judge.total_calls - before == 3
    assert signature(judge, ScoreOptions()) != signature(judge, ScoreOptions(judge_path="steps"))


def test_a_failed_review_unscores_the_row_and_the_judged_dimensions_say_why(
    seed: tuple[str, str],
) -> None:
    judge = FakeJudge({"SummaryReview": [ConnectionError("server went away")]})
    other = ("The river flooded the town on Monday.", "The river flooded the town.")
    first, second = score_summaries([seed, other], judge=judge)
    assert first.score is None and "server went away" in (first.error or "")
    assert first.specificity is None
    assert second.scored


def test_without_judged_dimensions_the_review_is_coverage_only(seed: tuple[str, str]) -> None:
    judge = FakeJudge()
    result = score_summary(*seed, judge=judge, dimensions=("density",))
    assert result.scored
    (prompt,) = judge.prompts_for("SummaryReview")
    assert p.task_of(prompt) == "answer_and_grade" and "<<<SENTENCES>>>" not in prompt


def test_a_long_source_is_chunked_as_before_on_the_two_call_path() -> None:
    judge = FakeJudge()
    summary = "The committee approved the budget. The report was published."
    result = score_summary(long_source(), summary, judge=judge, context_budget=BUDGET, n=4)
    assert result.scored, result.error
    assert f"|long:{p.long_prompts_hash()}|budget:{BUDGET}|" in result.signature
    assert judge.calls["GeneratedQuestions"] > 1  # one per part, as on the step path
    assert "CheckedClaims" not in judge.calls  # claims checked against retrieved passages
    for _, prompt in judge.prompts:
        assert estimate_tokens(prompt) <= BUDGET


def test_user_questions_get_reference_answers_in_the_source_call(seed: tuple[str, str]) -> None:
    judge = FakeJudge()
    result = score_summary(*seed, judge=judge, questions=["What does the app track?"])
    assert result.scored, result.error
    (prompt,) = judge.prompts_for("ReferenceAnswers")
    assert p.task_of(prompt) == "source_reference_answers"
    assert prompt.startswith(p.source_prefix(seed[0]))


# -- cache hints ---------------------------------------------------------------------------------


def test_request_fields_name_the_hint_only_where_the_server_takes_it() -> None:
    assert request_fields("https://api.openai.com/v1", "k") == {"prompt_cache_key": "k"}
    assert request_fields("http://127.0.0.1:8080/v1", "k") == {"cache_prompt": True}
    assert request_fields("http://localhost:11434/v1", "k") == {"cache_prompt": True}
    assert request_fields("http://192.168.1.5:8000/v1", "k") == {"cache_prompt": True}
    assert request_fields("https://api.example.com/v1", "k") == {}
    assert request_fields("https://api.openai.com/v1", None) == {}


def test_the_hint_is_scoped_to_its_block() -> None:
    assert current_cache_hint() is None
    with cache_hint("a"):
        assert current_cache_hint() == "a"
    assert current_cache_hint() is None


def test_source_calls_carry_one_cache_hint_and_the_review_none(seed: tuple[str, str]) -> None:
    with stub_server() as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        results = score_summaries([seed, (seed[0], "The app tracks water intake.")], judge=judge)
        assert all(r.scored for r in results)
        by_task: dict[str, list[dict]] = {}
        for request in url.requests:
            prompt = request["messages"][-1]["content"]
            by_task.setdefault(p.task_of(prompt) or "?", []).append(request)
    assert len(by_task["source_questions"]) == 1 and len(by_task["check_claims"]) == 2
    for request in by_task["source_questions"] + by_task["check_claims"]:
        assert request.get("cache_prompt") is True
    for request in by_task["review_summary"]:
        assert "cache_prompt" not in request
    # the source-carrying prompts of one source share their opening bytes
    prompts = [
        r["messages"][-1]["content"] for r in by_task["source_questions"] + by_task["check_claims"]
    ]
    prefix = p.source_prefix(seed[0])
    assert all(prompt.startswith(prefix) for prompt in prompts)


def test_a_users_extra_body_is_kept_beside_the_hint(seed: tuple[str, str]) -> None:
    with stub_server() as url:
        judge = OpenAIJudge(
            "stub-model", base_url=url, api_key="test", extra_body={"cache_prompt": False, "x": 1}
        )
        assert score_summary(*seed, judge=judge).scored
        sources = [
            r for r in url.requests if p.task_of(r["messages"][-1]["content"]) == "check_claims"
        ]
    assert sources and all(r["x"] == 1 and r["cache_prompt"] is False for r in sources)


def test_many_summaries_in_one_batch_make_one_source_call_per_source() -> None:
    a = "The council approved a new park on Monday. It will cost 2 million dollars."
    b = "The river flooded the town on Friday. Two bridges were closed."
    pairs = [(a, "A park was approved."), (b, "A river flooded."), (a, "The park costs 2 million.")]
    judge = FakeJudge()
    results = asyncio.run(ascore_summaries(pairs, judge=judge))
    assert all(r.scored for r in results)
    assert judge.calls["GeneratedQuestions"] == 2
    assert judge.total_calls == 2 + 2 * 3
