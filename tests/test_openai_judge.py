"""OpenAIJudge through the real openai client against the local stub server."""

from __future__ import annotations

import time

import pytest

from shared import OpenAIJudge, score_summary
from shared import prompts as p
from shared.testing import FakeJudge, stub_server


def test_full_score_through_the_real_client(seed: tuple[str, str]) -> None:
    with stub_server() as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        result = score_summary(*seed, judge=judge)
        assert result.scored, result.error
        # the structured-mode probe, then the source's questions, the claim check, the review
        assert url.count == 1 + 3
        first = url.requests[0]
        assert first["model"] == "stub-model"
        assert first["temperature"] == 0.0
        assert first["response_format"]["type"] == "json_schema"
        names = {r["response_format"]["json_schema"]["name"] for r in url.requests}
        assert names == {"JudgeProbe", "GeneratedQuestions", "SentenceChecks", "PointedReview"}
    assert judge.usage["calls"] == 1 + 3 and judge.usage["prompt_tokens"] > 0
    # the row's bill: its three calls, not the run's probe
    assert result.usage["calls"] == 3 and result.cost == 0.0  # a local server costs nothing
    assert result.signature.startswith("judge:stub-model|")
    # the same evidence as the in-process fake gives for the same texts
    direct = score_summary(*seed, judge=FakeJudge())
    assert result.score == pytest.approx(direct.score)


def test_malformed_reply_is_retried_through_the_client(seed: tuple[str, str]) -> None:
    fake = FakeJudge({p.SentenceChecks: ['{"claims": [{"claim": "The app', "```json\nnope"]})
    with stub_server(fake) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        result = score_summary(*seed, judge=judge)
    assert result.scored, result.error
    claim_requests = [
        r for r in url.requests if r["response_format"]["json_schema"]["name"] == "SentenceChecks"
    ]
    assert len(claim_requests) == 3
    retry_prompt = claim_requests[1]["messages"][-1]["content"]
    assert "Your previous reply could not be used: reply is not valid SentenceChecks JSON" in (
        retry_prompt
    )


@pytest.mark.parametrize("status", [429, 500])
def test_rate_limit_and_server_errors_are_retried_with_backoff(
    seed: tuple[str, str], status: int
) -> None:
    with stub_server(fail_first=2, fail_status=status) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", max_retries=3)
        started = time.monotonic()
        result = score_summary(*seed, judge=judge, concurrency=1)
        elapsed = time.monotonic() - started
    assert result.scored, result.error
    assert url.count == 3 + 2  # two refused, then every call answered
    assert elapsed >= 0.5  # the SDK waited (exponential backoff from 0.5 s) before retrying


def test_transport_failure_after_retries_is_unscored(seed: tuple[str, str]) -> None:
    with stub_server(fail_first=100, fail_status=503) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", max_retries=0)
        result = score_summary(*seed, judge=judge)
    assert result.score is None
    assert "InternalServerError" in (result.error or "")


def test_settings_come_from_arguments_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    judge = OpenAIJudge()
    assert judge.model_id == "env-model"
    assert str(judge.client.base_url).startswith("http://127.0.0.1:9/v1")
    assert judge.client.api_key == "env-key"
    assert judge.settings == {
        "base_url": "http://127.0.0.1:9/v1/",
        "temperature": 0.0,
        "seed": None,
        "max_tokens": None,
    }
    assert OpenAIJudge("arg-model", temperature=0.3).model_id == "arg-model"


def test_missing_key_and_no_server_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIJudge("some-model")


def test_one_judge_serves_several_sync_calls_over_keep_alive(seed: tuple[str, str]) -> None:
    # Each score_summary runs its own event loop; connections kept alive by the server must not
    # leak from one loop into the next (no retries allowed, so a dead connection would show).
    with stub_server() as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", max_retries=0)
        first = score_summary(seed[0], "The app logs meals.", judge=judge, dimensions=[])
        second = score_summary(seed[0], "The app tracks water intake.", judge=judge, dimensions=[])
    assert first.scored, first.error
    assert second.scored, second.error
    # the probe (once per server and model), 3 calls for the first, 2 for the second (its
    # questions come from the cache)
    assert url.count == 1 + 5
