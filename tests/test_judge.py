"""The wrappers around any judge: cache keys, SQLite persistence, in-flight de-duplication,
the concurrency limit, and what is (not) cached."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from shared import JudgeFailed, SQLiteStore, robust_judge, score_summary
from shared import prompts as p
from shared.judge import cache_key
from shared.judge.openai import OpenAIJudge
from shared.testing import FakeJudge


def claims_prompt(text: str = "The app logs meals.") -> str:
    return p.extract_claims_prompt(text)


def test_cache_key_covers_output_settings_not_timeouts() -> None:
    base = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", timeout=10, max_retries=1)
    patient = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", timeout=999, max_retries=9)
    warmer = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", temperature=0.7)
    other_model = OpenAIJudge("m2", base_url="http://127.0.0.1:9/v1")
    key = cache_key(base, "prompt", p.ExtractedClaims)
    assert cache_key(patient, "prompt", p.ExtractedClaims) == key
    assert cache_key(warmer, "prompt", p.ExtractedClaims) != key
    assert cache_key(other_model, "prompt", p.ExtractedClaims) != key
    assert cache_key(base, "prompt2", p.ExtractedClaims) != key
    assert cache_key(base, "prompt", p.SummaryAnswers) != key


def test_identical_in_flight_requests_share_one_call() -> None:
    fake = FakeJudge(latency=0.05)
    judge = robust_judge(fake, cache=False)  # no storage, but in-flight sharing stays

    async def main() -> None:
        replies = await asyncio.gather(
            *(judge.generate(claims_prompt(), p.ExtractedClaims) for _ in range(10))
        )
        assert all(r.claims == ["The app logs meals."] for r in replies)

    asyncio.run(main())
    assert fake.total_calls == 1
    asyncio.run(judge.generate(claims_prompt(), p.ExtractedClaims))
    assert fake.total_calls == 2  # nothing stored with cache=False


def test_memory_cache_hits() -> None:
    fake = FakeJudge()
    judge = robust_judge(fake)
    for _ in range(3):
        asyncio.run(judge.generate(claims_prompt(), p.ExtractedClaims))
    assert fake.total_calls == 1
    assert (judge.hits, judge.misses) == (2, 1)


def test_sqlite_cache_survives_a_new_process_and_rerun_is_free(
    tmp_path: Path, seed: tuple[str, str]
) -> None:
    path = tmp_path / "cache" / "judge.sqlite"
    first = FakeJudge()
    score_summary(*seed, judge=first, cache=str(path))
    assert first.total_calls == 3  # the two-call path: the source's call and two for the summary
    assert len(SQLiteStore(path)) == 3
    second = FakeJudge()  # a fresh judge object: nothing shared in memory
    again = score_summary(*seed, judge=second, cache=str(path))
    assert second.total_calls == 0
    assert again.scored


def test_failed_answers_are_not_cached() -> None:
    fake = FakeJudge({p.ExtractedClaims: ["bad", "bad"]})
    judge = robust_judge(fake, retries=1)
    with pytest.raises(JudgeFailed, match="after 2 attempt"):
        asyncio.run(judge.generate(claims_prompt(), p.ExtractedClaims))
    reply = asyncio.run(judge.generate(claims_prompt(), p.ExtractedClaims))
    assert reply.claims == ["The app logs meals."]
    assert fake.total_calls == 3


def test_concurrency_limit_is_respected() -> None:
    active = {"now": 0, "peak": 0}

    class SlowJudge:
        model_id = "slow"

        async def generate(self, prompt: str, schema: type) -> object:
            active["now"] += 1
            active["peak"] = max(active["peak"], active["now"])
            await asyncio.sleep(0.02)
            active["now"] -= 1
            return schema.model_validate({"claims": ["x"]})

    judge = robust_judge(SlowJudge(), concurrency=3)

    async def main() -> None:
        await asyncio.gather(
            *(judge.generate(claims_prompt(f"Text {i}."), p.ExtractedClaims) for i in range(12))
        )

    asyncio.run(main())
    assert active["peak"] == 3


def test_check_failures_are_retried_then_reported() -> None:
    fake = FakeJudge()
    judge = robust_judge(fake, retries=2)

    def never_ok(reply: object) -> None:
        raise ValueError("needs exactly 7 claims")

    with pytest.raises(JudgeFailed, match="needs exactly 7 claims"):
        asyncio.run(judge.generate(claims_prompt(), p.ExtractedClaims, check=never_ok))
    assert fake.total_calls == 3
    assert "needs exactly 7 claims" in fake.prompts[-1][1]


def test_cancelling_one_waiter_leaves_the_shared_call_to_the_others() -> None:
    fake = FakeJudge(latency=0.1)
    judge = robust_judge(fake)

    async def main() -> list[str]:
        first = asyncio.ensure_future(judge.generate(claims_prompt(), p.ExtractedClaims))
        second = asyncio.ensure_future(judge.generate(claims_prompt(), p.ExtractedClaims))
        await asyncio.sleep(0.02)  # both are waiting on the one in-flight call
        first.cancel()  # e.g. a per-case timeout in the caller
        reply = await second
        assert first.cancelled()
        return reply.claims

    assert asyncio.run(main()) == ["The app logs meals."]
    assert fake.total_calls == 1
