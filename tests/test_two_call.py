"""The two-call path (the default): one judge call per source, two per summary, source-first
prompts that a provider's prefix cache can reuse, and a cache hint per source (issue 23)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shared import ScoreOptions, ascore_summaries, score_summaries, score_summary, signature
from shared import prompts as p
from shared.core.cache_hints import cache_hint, current_cache_hint, request_fields
from shared.core.tokens import estimate_tokens
from shared.judge.openai import OpenAIJudge
from shared.testing import FakeJudge, stub_server
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
    result = score_summary(*seed, judge=judge, judge_path="two-call")
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
    score_summary(
        source, summary, judge=judge, judge_path="two-call", n=1
    )  # the fake's one reference: sentence 1
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
    results = score_summaries(pairs, judge=judge, judge_path="two-call")
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
    two = score_summary(*seed, judge=judge, judge_path="two-call")  # same judge, same cache
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
    first, second = score_summaries([seed, other], judge=judge, judge_path="two-call")
    assert first.score is None and "server went away" in (first.error or "")
    assert first.specificity is None
    assert second.scored


def test_without_judged_dimensions_the_review_is_coverage_only(seed: tuple[str, str]) -> None:
    judge = FakeJudge()
    result = score_summary(*seed, judge=judge, judge_path="two-call", dimensions=("density",))
    assert result.scored
    (prompt,) = judge.prompts_for("SummaryReview")
    assert p.task_of(prompt) == "answer_and_grade" and "<<<SENTENCES>>>" not in prompt


def test_a_long_source_is_chunked_as_before_on_the_two_call_path() -> None:
    judge = FakeJudge()
    summary = "The committee approved the budget. The report was published."
    result = score_summary(
        long_source(), summary, judge=judge, judge_path="two-call", context_budget=BUDGET, n=4
    )
    assert result.scored, result.error
    assert f"|long:{p.long_prompts_hash()}|budget:{BUDGET}|" in result.signature
    assert judge.calls["GeneratedQuestions"] > 1  # one per part, as on the step path
    assert "CheckedClaims" not in judge.calls  # claims checked against retrieved passages
    for _, prompt in judge.prompts:
        assert estimate_tokens(prompt) <= BUDGET


def test_user_questions_get_reference_answers_in_the_source_call(seed: tuple[str, str]) -> None:
    judge = FakeJudge()
    result = score_summary(
        *seed, judge=judge, judge_path="two-call", questions=["What does the app track?"]
    )
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
        results = score_summaries(
            [seed, (seed[0], "The app tracks water intake.")], judge=judge, judge_path="two-call"
        )
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
        assert score_summary(*seed, judge=judge, judge_path="two-call").scored
        sources = [
            r for r in url.requests if p.task_of(r["messages"][-1]["content"]) == "check_claims"
        ]
    assert sources and all(r["x"] == 1 and r["cache_prompt"] is False for r in sources)


def test_many_summaries_in_one_batch_make_one_source_call_per_source() -> None:
    a = "The council approved a new park on Monday. It will cost 2 million dollars."
    b = "The river flooded the town on Friday. Two bridges were closed."
    pairs = [(a, "A park was approved."), (b, "A river flooded."), (a, "The park costs 2 million.")]
    judge = FakeJudge()
    results = asyncio.run(ascore_summaries(pairs, judge=judge, judge_path="two-call"))
    assert all(r.scored for r in results)
    assert judge.calls["GeneratedQuestions"] == 2
    assert judge.total_calls == 2 + 2 * 3


# Shorter replies by design (issue 23: completion tokens are most of the bill and of a local
# judge's time): the two-call check asks for a reason only for an unsupported claim and a short
# quote; the review for a grade's reason only below 5. The step path's prompts stay as they were.

SHORT_CHECK = {
    "claims": [
        {
            "claim": "A company launches a fitness app.",
            "verdict": "supported",
            "reason": "",
            "quote": "launched a fitness app",
        },
        {"claim": "The app logs meals.", "verdict": "supported", "reason": "", "quote": "meals"},
        {
            "claim": "The app costs 5 dollars.",
            "verdict": "not_in_source",
            "reason": "The source gives no price.",
            "quote": "",
        },
    ]
}
SHORT_REVIEW = {
    "answers": [
        {"index": 1, "answer": "A fitness tracking app.", "grade": 4, "reason": "no smartphone"},
        {"index": 2, "answer": "Exercise goals, meals and water.", "grade": 5, "reason": ""},
        {"index": 3, "answer": "Workout suggestions and reminders.", "grade": 5, "reason": ""},
        {"index": 4, "answer": "idk", "grade": 0, "reason": "not in the summary"},
    ],
    "sentences": [{"index": 1, "vague": False, "reason": ""}],
    "repeated_points": [],
}


def test_the_two_call_prompts_ask_for_short_replies() -> None:
    from shared.prompts import schemas

    check = p.check_claims_prompt("The council approved the park.", "A park was approved.")
    rule = " ".join(check.split())
    assert "Quote the shortest source passage that decides it" in rule
    assert f"(at most {schemas.CHECK_QUOTE_WORDS} words; empty for not_in_source)" in rule
    assert "give a one-sentence reason only if it is not supported (else empty)" in rule
    review = p.review_summary_prompt("A park.", [("What?", "A park.")], ("A park.",))
    assert "Give a one-sentence reason only for a grade below 5 (else empty)." in review
    answer_only = p.review_summary_prompt("A park.", [("What?", "A park.")], ())
    assert "only for a grade below 5" in answer_only
    # the schema bounds the quote accordingly; the step path's verdict keeps its longer quote
    quote = schemas.checked_claims_schema(4).model_json_schema()["properties"]["claims"]["items"]
    assert quote["properties"]["quote"]["maxLength"] == schemas.CHECK_QUOTE_CHARS < 200
    step = schemas.verdicts_schema(1).model_json_schema()["properties"]["verdicts"]
    assert step["prefixItems"][0]["properties"]["quote"]["maxLength"] == schemas.QUOTE_CHARS
    # the step path's verify prompt still asks for a reason and a quote for every claim
    verify = p.verify_claims_prompt("The council approved the park.", ["A park was approved."])
    assert "Give a one-sentence reason and quote the source passage" in verify


def test_the_step_path_prompt_hash_is_unchanged_by_the_short_replies() -> None:
    from tests.test_prompts import PINNED_PROMPTS_HASH, PINNED_TASK_HASHES

    assert p.prompts_hash() == PINNED_PROMPTS_HASH == "622c2046"
    assert p.prompt_hashes()["verify_claims"] == PINNED_TASK_HASHES["verify_claims"]
    sig = signature(FakeJudge(model_id="m"), ScoreOptions(judge_path="steps"))
    assert "|prompts:622c2046|path:steps|" in sig


def test_supported_claims_without_reasons_score_and_render(seed: tuple[str, str]) -> None:
    from deepeval_ext._metrics import _evidence_steps
    from shared.cli.report import ReportInfo, evidence_view, render_report
    from shared.runs.results import evaluation_row

    judge = FakeJudge(
        {
            p.GeneratedQuestions: QUESTIONS,
            "CheckedClaims": SHORT_CHECK,
            "SummaryReview": SHORT_REVIEW,
        }
    )
    result = score_summary(*seed, judge=judge, judge_path="two-call")
    assert result.error is None and result.scored
    assert result.alignment == pytest.approx(2 / 3)
    assert result.coverage == pytest.approx(55 / 65)
    assert [c.reason for c in result.claims] == ["", "", "The source gives no price."]
    # the reasons speak of what exists: the unsupported claim and its reason, nothing "missing"
    assert "The source gives no price." in result.reason_detail
    assert "missing reason" not in result.reason_detail.lower()
    assert "()" not in result.reason_detail
    steps = "\n".join(_evidence_steps(result))
    assert "()" not in steps and "grade 5/5\n" in steps
    row = evaluation_row(row_id="r1", position=0, input_hash="h", summary=seed[1], ev=result)
    view = evidence_view(row["evidence"])
    assert [c["claim"] for c in view["claims"]] == ["The app costs 5 dollars."]
    html = render_report([row], ["score", "alignment", "coverage"], ReportInfo(judge="fake"))
    assert "The source gives no price." in html


def test_the_fake_answers_the_short_check_as_a_compliant_model(seed: tuple[str, str]) -> None:
    from shared.prompts import schemas

    source, summary = seed
    judge = FakeJudge()
    result = score_summary(
        source, summary + " The app costs 5 dollars on Mars.", judge=judge, judge_path="two-call"
    )
    assert result.claims
    for claim in result.claims:
        assert (claim.reason == "") == (claim.verdict == "supported")
        assert len(claim.quote) <= schemas.CHECK_QUOTE_CHARS
        assert len(claim.quote.split()) <= schemas.CHECK_QUOTE_WORDS
        assert (claim.quote == "") == (claim.verdict == "not_in_source")
    for q in result.questions:
        if q.counted and q.summary_answer != "idk":
            assert (q.grade_reason == "") == (q.grade == 5)


def _claims_bound(request: dict[str, Any]) -> int:
    schema = request["response_format"]["json_schema"]["schema"]
    return int(schema["properties"]["claims"]["maxItems"])


def test_a_local_server_gets_the_exact_claim_bound_and_a_hosted_one_the_rounded(
    seed: tuple[str, str],
) -> None:
    # the rounding keeps one schema per source for a provider that caches on the schema
    # (OpenAI); a local server's grammar is outside its prompt cache, and a small model fills a
    # list to its bound, so there the bound is exact
    exact = p.schemas.max_claims(seed[1])
    assert exact % p.schemas.CLAIMS_STEP  # the seed summary's bound is not a multiple already
    with stub_server() as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        assert judge.caches_schema is False
        result = score_summary(*seed, judge=judge, judge_path="two-call")
        checks = [
            r for r in url.requests if p.task_of(r["messages"][-1]["content"]) == "check_claims"
        ]
    assert result.scored and [_claims_bound(r) for r in checks] == [exact]
    assert "|path:two-call|claims:exact|" in (result.signature or "")
    hosted = OpenAIJudge("gpt-4o-mini", base_url="https://api.openai.com/v1", api_key="test")
    assert hosted.caches_schema is True
    opts = ScoreOptions()
    assert "claims:exact" not in signature(hosted, opts)
    # a user's own judge says nothing: it keeps the rounded bound (and the old signature)
    assert "claims:exact" not in signature(FakeJudge({}), opts)
    rounded = p.schemas.checked_claims_schema(exact).model_json_schema()
    assert rounded["properties"]["claims"]["maxItems"] == p.schemas.CLAIMS_STEP


def test_the_claim_bound_step_is_checked() -> None:
    assert (
        p.schemas.checked_claims_schema(14, 1).model_json_schema()["properties"]["claims"][
            "maxItems"
        ]
        == 14
    )
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="step"):
            p.schemas.checked_claims_schema(14, bad)
