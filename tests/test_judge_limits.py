"""A local judge that is slow, hung or odd: no call waits behind another, each call ends at its
deadline, the bill equals what the server reported, and a reply that is no chat completion says
what the server sent. Every wait here is on an event set by the stub's request threads; the
events' own timeouts are fuses that turn a deadlock into a failure, never a measurement."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from shared import OpenAIJudge, robust_judge, score_summaries, score_summary
from shared import openai_judge
from shared.testing import stub_server
from shared.usage import USAGE_KEYS

FUSE = 120.0
"""Seconds after which a wait that should have ended long before is reported as a failure."""

SUMMARIES = [
    "The app tracks fitness goals and logs meals.",
    "The app gives workout suggestions.",
    "The app tracks water intake and sends reminders.",
    "The app is a smartphone app for fitness goals.",
]


def _is_probe(request: dict[str, Any]) -> bool:
    return openai_judge.PROBE_PROMPT in str(request.get("messages"))


def _forget_this_process() -> None:
    openai_judge._learned.clear()
    openai_judge._confirmed.clear()
    openai_judge._probes.clear()


def test_a_slow_first_judging_reply_holds_up_no_other_call(seed: tuple[str, str]) -> None:
    # The first judging request is held at the server until three later ones have arrived:
    # were any call waiting behind the first (a negotiation lock, a retry holding it), the
    # later ones could never arrive and the fuse would end the wait unreleased.
    lock = threading.Lock()
    state = {"first": None, "later": 0}
    released = threading.Event()
    outcome: dict[str, bool] = {}

    def before_answer(request: dict[str, Any]) -> None:
        if _is_probe(request):
            return
        with lock:
            first = state["first"] is None
            if first:
                state["first"] = request
            else:
                state["later"] += 1
                if state["later"] >= 3:
                    released.set()
        if first:
            outcome["released_by_later_calls"] = released.wait(FUSE)

    with stub_server(before_answer=before_answer) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        results = score_summaries(
            [(seed[0], s) for s in SUMMARIES], judge=judge, concurrency=4, dimensions=[]
        )
    assert outcome == {"released_by_later_calls": True}
    assert all(r.scored for r in results), [r.error for r in results]


def test_a_server_that_never_answers_ends_each_call_at_its_deadline(
    seed: tuple[str, str],
) -> None:
    # Accepts every request and never answers. Each call ends at its deadline as one request:
    # no SDK retry multiplies it, and the row is unscored with the reason.
    release = threading.Event()
    with stub_server(before_answer=lambda request: release.wait(FUSE)) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", timeout=1, max_retries=4)
        try:
            result = score_summary(*seed, judge=judge, dimensions=[])
        finally:
            release.set()
    assert result.score is None
    assert "judge call timed out: no reply within 1 s" in (result.error or "")
    # the probe and round 1's two calls (questions, claims); nothing else was sent
    assert url.usage["calls"] == judge.usage["calls"] == 3
    assert judge.usage["retries"] == 0
    assert result.usage["calls"] == 2  # the row's own calls; the probe is the run's
    probe = openai_judge._probes[(judge.base_url, judge.model, "auto")]
    assert probe.error is not None and "timed out" in probe.error


def test_transport_faults_are_retried_within_the_deadline_and_counted(
    seed: tuple[str, str],
) -> None:
    with stub_server(fail_first=1, fail_status=503) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", max_retries=2)
        result = score_summary(*seed, judge=judge, dimensions=[])
    assert result.scored, result.error
    assert judge.usage["calls"] == url.usage["calls"]
    assert judge.usage["retries"] == 1


@pytest.mark.parametrize("field", ["openai", "llama"])
def test_the_bill_equals_what_the_server_reported(seed: tuple[str, str], field: str) -> None:
    # cached tokens from usage.prompt_tokens_details.cached_tokens (OpenAI, vLLM) or from
    # llama.cpp's timings.cache_n
    with stub_server(cached_tokens=40, cached_field=field) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        results = score_summaries([(seed[0], s) for s in SUMMARIES[:2]], judge=judge)
    assert all(r.scored for r in results), [r.error for r in results]
    assert url.usage["cached_tokens"] > 0
    assert {key: judge.usage[key] for key in url.usage} == url.usage
    assert judge.usage["retries"] == 0
    # the rows' bills add up to everything but the run's probe, exactly
    probe = [r for r in url.replies if r["schema"] == "JudgeProbe"]
    assert len(probe) == 1
    for key in ("prompt_tokens", "cached_tokens", "completion_tokens"):
        assert sum(r.usage[key] for r in results) == url.usage[key] - probe[0][key]
    assert sum(r.usage["calls"] for r in results) == url.usage["calls"] - 1
    assert set(results[0].usage) == set(USAGE_KEYS)
    assert all(r.cost == 0.0 for r in results)  # a server on 127.0.0.1 costs nothing


def test_given_prices_bill_every_row(seed: tuple[str, str]) -> None:
    with stub_server(cached_tokens=10) as url:
        judge = OpenAIJudge(
            "stub-model",
            base_url=url,
            api_key="test",
            price_in=2.0,
            price_cached=0.5,
            price_out=8.0,
        )
        result = score_summary(*seed, judge=judge, dimensions=[])
    usage = result.usage
    expected = (
        (usage["prompt_tokens"] - usage["cached_tokens"]) * 2.0
        + usage["cached_tokens"] * 0.5
        + usage["completion_tokens"] * 8.0
    ) / 1e6
    assert usage["completion_tokens"] > 0
    assert result.cost == pytest.approx(expected)


@pytest.mark.parametrize(
    ("content_type", "body", "said"),
    [
        ("text/html", "<!doctype html><html><body>Welcome to the chat UI</body></html>", "HTML"),
        ("text/event-stream", 'data: {"choices": []}\n\ndata: [DONE]\n\n', "streamed reply"),
    ],
)
def test_a_reply_that_is_no_chat_completion_says_what_the_server_sent(
    seed: tuple[str, str], content_type: str, body: str, said: str
) -> None:
    with stub_server(raw_reply=(content_type, body)) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        result = score_summary(*seed, judge=judge, dimensions=[])
    assert result.score is None
    error = result.error or ""
    assert "did not answer with a chat completion" in error and said in error
    assert "AttributeError" not in error
    assert body.split()[0][:10] in error  # the start of what was sent


def test_the_probe_is_remembered_in_the_persistent_cache(
    seed: tuple[str, str], tmp_path: Any
) -> None:
    cache = tmp_path / "judge-cache.sqlite3"
    with stub_server(refuse_json_schema=True, slots=3) as url:
        first = OpenAIJudge("stub-model", base_url=url, api_key="test")
        result = score_summary(*seed, judge=robust_judge(first, cache=cache), dimensions=[])
        assert result.scored, result.error
        probes = [r for r in url.requests if _is_probe(r)]
        # json_schema refused by the probe, json_object_schema accepted by it
        assert [r["response_format"]["type"] for r in probes] == ["json_schema", "json_object"]
        found = openai_judge._probes[(first.base_url, "stub-model", "auto")]
        assert (found.mode, found.slots, found.error) == ("json_object_schema", 3, None)

        _forget_this_process()  # as a new process would start
        before = url.count
        again = OpenAIJudge("stub-model", base_url=url, api_key="test")
        result = score_summary(
            seed[0], "The app logs meals.", judge=robust_judge(again, cache=cache), dimensions=[]
        )
        assert result.scored, result.error
        later = url.requests[before:]
    assert later and not any(_is_probe(r) for r in later)
    assert {r["response_format"]["type"] for r in later} == {"json_object"}
    assert openai_judge._probes[(again.base_url, "stub-model", "auto")].from_cache
