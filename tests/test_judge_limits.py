"""A local judge that is slow, hung or odd: no call waits behind another, each call ends at its
deadline, the bill equals what the server reported, and a reply that is no chat completion says
what the server sent. Every wait here is on an event set by the stub's request threads; the
events' own timeouts are fuses that turn a deadlock into a failure, never a measurement."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from shared import (
    OpenAIJudge,
    SQLiteStore,
    robust_judge,
    score_summaries,
    score_summary,
)
from shared.core.usage import USAGE_KEYS
from shared.judge import openai as openai_judge
from shared.testing import stub_server

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
        # one source per summary: on the two-call path a source's summaries wait (by design)
        # for that source's own first call, which warms the prefix cache; other sources do not
        results = score_summaries(
            [(f"{seed[0]} (copy {i})", s) for i, s in enumerate(SUMMARIES)],
            judge=judge,
            concurrency=4,
            dimensions=[],
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


# -- the command line ---------------------------------------------------------------------------


def _cli(*args: Any) -> tuple[int, str]:
    from typer.testing import CliRunner

    from shared.cli.app import app

    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


def _rows(tmp_path: Any, seed: tuple[str, str], count: int = 2) -> Any:
    import json

    path = tmp_path / "in.jsonl"
    lines = [{"id": f"r{i}", "source": seed[0], "summary": SUMMARIES[i]} for i in range(count)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_dry_run_prints_the_estimate_and_calls_no_judge(
    seed: tuple[str, str], tmp_path: Any
) -> None:
    with stub_server() as url:
        code, text = _cli(
            "score", _rows(tmp_path, seed), "--base-url", url, "--model", "gpt-4o-mini",
            "--no-cache", "--dry-run", "--price-in", "1", "--price-out", "4",
            "-o", tmp_path / "out.jsonl",
        )  # fmt: skip
        assert url.count == 0
    assert code == 0, text
    assert "Estimate for 2 row(s): about" in text and "judge calls" in text
    assert "(given)" in text and "no judge was called" in text
    assert not (tmp_path / "out.jsonl").exists()


def test_the_run_bill_equals_the_servers_counts_everywhere(
    seed: tuple[str, str], tmp_path: Any
) -> None:
    import json

    out = tmp_path / "out.jsonl"
    with stub_server(cached_tokens=25, slots=2) as url:
        code, text = _cli(
            "score", _rows(tmp_path, seed), "--base-url", url, "--model", "stub",
            "--no-cache", "-o", out,
        )  # fmt: skip
        reported = dict(url.usage)
    assert code == 0, text
    bill = (
        f"{reported['calls']} calls (0 retries), {reported['prompt_tokens']:,} prompt tokens "
        f"({reported['cached_tokens']:,} cached), {reported['completion_tokens']:,} completion "
        "tokens, $0.00 (local server)"
    )
    assert f"Judge bill: {bill}" in text
    # the server published 2 slots and --concurrency was not given
    assert "2 parallel slot(s)" in text and "Concurrency 2: the server's slots" in text
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    per_row = [row["evidence"]["usage"] for row in rows]
    assert sum(u["calls"] for u in per_row) == reported["calls"] - 1  # all but the probe
    assert all(row["evidence"]["cost"] == 0.0 for row in rows)
    report = (tmp_path / "out.report.html").read_text()
    assert f'id="judge-bill">{bill}' in report


def test_the_bill_says_why_each_retry_happened(seed: tuple[str, str], tmp_path: Any) -> None:
    from shared.testing import FakeJudge

    # the probe's first request gets a 503 (tried again), and one sentence check comes back as
    # no JSON (asked again with the error): two retries, each named in the bill
    fake = FakeJudge({"SentenceChecks": ["not json"]})
    with stub_server(fake, fail_first=1, fail_status=503) as url:
        code, text = _cli(
            "score", _rows(tmp_path, seed), "--base-url", url, "--model", "stub",
            "--no-cache", "-o", tmp_path / "out.jsonl",
        )  # fmt: skip
        sent = url.usage["calls"]
    assert code == 0, text
    assert (
        f"Judge bill: {sent} calls (2 retries: 1 HTTP 503 (server error); 1 invalid reply "
        "(asked again with the error))," in text
    )


def test_judge_samples_over_a_warm_cache_cost_no_retries(tmp_path: Any) -> None:
    # The cache's hits let the four samples race ahead and open many connections at once;
    # the stub's listen queue (socketserver's 5) overflowed and dropped some, which the judge
    # retried: "83 calls (19 retries)" where the server answered every call it accepted.
    rows = Path(__file__).resolve().parents[1] / "examples" / "summaries.jsonl"
    cache = tmp_path / "cache.sqlite3"
    with stub_server() as url:
        for samples, out in (("1", "one.jsonl"), ("4", "four.jsonl")):
            code, text = _cli(
                "score", rows, "--base-url", url, "--model", "stub", "--samples", samples,
                "--cache", cache, "-o", tmp_path / out,
            )  # fmt: skip
            assert code == 0, text
            assert "calls (0 retries)" in text, text


def test_a_slow_server_gets_a_per_call_limit_that_fits_or_advice(
    seed: tuple[str, str], tmp_path: Any
) -> None:
    # llama.cpp reports its generation speed; at 2 tokens/s the longest reply the schemas allow
    # cannot be written in 120 s
    with stub_server(tokens_per_s=2.0) as url:
        code, text = _cli(
            "score", _rows(tmp_path, seed, 1), "--base-url", url, "--model", "stub",
            "--no-cache", "-o", tmp_path / "a.jsonl",
        )  # fmt: skip
        assert code == 0, text
        assert "2 tokens/s" in text and "Per-call limit raised to" in text
        openai_judge._probes.clear()
        code, text = _cli(
            "score", _rows(tmp_path, seed, 1), "--base-url", url, "--model", "stub",
            "--no-cache", "--timeout", "30", "-o", tmp_path / "b.jsonl",
        )  # fmt: skip
    assert code == 0, text
    assert "--timeout 30 may be too short" in text and "pass --timeout" in text
    assert "Per-call limit raised" not in text


def test_the_library_fits_the_per_call_limit_as_the_cli_does(seed: tuple[str, str]) -> None:
    """score_summaries with an OpenAIJudge given no timeout: the same fit as `score` (the one
    afit_run); a timeout given is kept."""
    source, summary = seed
    with stub_server(tokens_per_s=2.0) as url:
        fitted = OpenAIJudge("stub", base_url=url)
        (result,) = score_summaries([(source, summary)], judge=fitted, cache=False, dimensions=[])
        assert result.score is not None
        assert fitted.timeout > 120 and fitted.fit_timeout  # raised, and follows the speed
        openai_judge._probes.clear()
        kept = OpenAIJudge("stub", base_url=url, timeout=30)
        (result,) = score_summaries([(source, summary)], judge=kept, cache=False, dimensions=[])
    assert result.score is not None
    assert kept.timeout == 30 and not kept.fit_timeout


def test_a_ray_actors_judge_fits_its_limit_unless_the_run_gave_one() -> None:
    """The CLI's recipe leaves a --timeout not given out, so each judge built from it (the
    driver's, and every Ray actor's, which score through the library) fits its own limit."""
    from shared.cli.common import judge_recipe

    free = judge_recipe(model="m", base_url="http://127.0.0.1:9/v1", api_key=None)()
    fixed = judge_recipe(model="m", base_url="http://127.0.0.1:9/v1", api_key=None, timeout=30)()
    assert not free.timeout_given and free.timeout == 120.0
    assert fixed.timeout_given and fixed.timeout == 30.0


def test_api_key_flag_reaches_the_server_and_errors_speak_in_flags(
    seed: tuple[str, str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with stub_server() as url:
        code, text = _cli(
            "score", _rows(tmp_path, seed, 1), "--base-url", url, "--model", "stub",
            "--api-key", "sk-test-123", "--no-cache", "-o", tmp_path / "a.jsonl",
        )  # fmt: skip
        assert code == 0, text
        assert url.auth and set(url.auth) == {"Bearer sk-test-123"}
    code, text = _cli(
        "score", _rows(tmp_path, seed, 1), "--model", "gpt-4o-mini", "--no-cache",
        "-o", tmp_path / "b.jsonl",
    )  # fmt: skip
    assert code == 2
    assert "pass --api-key or set OPENAI_API_KEY" in text and "api_key=" not in text
    code, text = _cli("check-judge", "--model", "gpt-4o-mini")
    assert code == 2
    assert "--api-key or set OPENAI_API_KEY" in text


def test_the_progress_line_shows_the_judge_from_its_first_call() -> None:
    # Injected clock; the judge answers only when the test sets its event.
    from pydantic import BaseModel

    from shared.cli.judge_wait import (
        InFlightJudge,
        JudgeActivityColumn,
        activity_text,
        waiting_text,
    )

    class Answer(BaseModel):
        text: str

    class Gate:
        model_id = "gate"

        def __init__(self) -> None:
            self.started = asyncio.Event()
            self.release = asyncio.Event()
            self.usage = {"completion_tokens": 0}

        async def generate(self, prompt: str, schema: type[Answer]) -> Answer:
            self.started.set()
            await self.release.wait()
            self.usage["completion_tokens"] += 250
            return Answer(text=prompt)

    now = {"t": 500.0}
    seen: list[str] = []

    async def scenario() -> None:
        inner = Gate()
        tracked = InFlightJudge(inner, clock=lambda: now["t"])
        column = JudgeActivityColumn(tracked, expected_completion_tokens=1000)
        seen.append(column.render(None).plain)  # no call yet
        call = asyncio.ensure_future(tracked.generate("one", Answer))
        await inner.started.wait()
        now["t"] = 502.0
        seen.append(column.render(None).plain)  # in flight, nothing written yet
        now["t"] = 515.0
        seen.append(waiting_text(tracked, now["t"]))  # 15 s: the waiting notice, no row done
        inner.release.set()
        await call
        now["t"] = 525.0  # 250 tokens in 25 s: 10 tok/s, 750 left: 75 s
        seen.append(column.render(None).plain)

        # 4 calls estimated at 1,000 tokens in all, but the one answered wrote 250 (and the
        # judge counts its request): 4 x 250 = 1,000, so the same ETA; with 8 calls, 2,000
        inner.usage["calls"] = 1
        seen.append(activity_text(tracked, now["t"], 1000, expected_calls=8))

    asyncio.run(scenario())
    assert seen == [
        "",
        "judge: 1 in flight, -- tok/s, 2 s since the first call",
        "waiting on the judge: 1 call in flight, oldest 15 s",
        "judge: 0 in flight, 10.0 tok/s, 25 s since the first call, ETA ~1m15s",
        "judge: 0 in flight, 10.0 tok/s, 25 s since the first call, ETA ~2m55s",
    ]


def test_a_fitted_limit_follows_the_measured_speed_only_when_asked() -> None:
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", timeout=120)
    assert judge.fitted_limit(1000) == 0.0  # nothing measured yet: the timeout applies
    judge.generation.update(tokens=400, seconds=100.0)  # 4 tokens/s per call
    assert judge.fitted_limit(1000) == pytest.approx(1000 / 4 * openai_judge.FIT_MARGIN)
    assert judge.fitted_limit(100_000) == openai_judge.FIT_CEILING_S
    assert judge.fit_timeout is False  # the Python default: timeout is the limit


class _Ok(BaseModel):
    ok: bool


class _FakeClient:
    """An OpenAI client stand-in whose ``create`` records the transport timeout it was sent and
    answers ``{"ok": true}``: at once, or after ``hold`` seconds. With ``judge`` set, the call
    lets that judge measure a slow server (4 tokens/s per call) while it runs, as other calls
    finishing meanwhile would."""

    base_url = "http://127.0.0.1:9/v1/"
    api_key = "x"

    def __init__(self, hold: float = 0.0) -> None:
        self.hold, self.sent, self.cancelled = hold, [], False
        self.judge: OpenAIJudge | None = None

    def with_options(self, **kwargs: Any) -> _FakeClient:
        return self

    @property
    def chat(self) -> _FakeClient:
        return self

    @property
    def completions(self) -> _FakeClient:
        return self

    async def create(self, **kwargs: Any) -> Any:
        from openai.types.chat import ChatCompletion

        self.sent.append(kwargs["timeout"])
        if self.judge is not None:  # 1000 tokens now need about 312 s
            self.judge.generation.update(tokens=400, seconds=100.0)
        if self.hold:
            try:
                await asyncio.sleep(self.hold)  # the slow server; never shorter than asked
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return ChatCompletion.model_validate(
            {
                "id": "x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": '{"ok": true}'}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
            }
        )  # fmt: skip


def test_each_call_is_sent_with_its_fitted_limit() -> None:
    client = _FakeClient()
    for fit in (False, True):
        judge = OpenAIJudge("m", client=client, timeout=30, max_tokens=1000, fit_timeout=fit)
        judge.generation.update(tokens=400, seconds=100.0)  # measured: 4 tokens/s per call
        assert asyncio.run(judge.generate("p", _Ok)).ok
    assert client.sent[0] == pytest.approx(30, abs=1)  # fit_timeout off: the timeout
    # fit_timeout on: the transport may wait to the ceiling; the judge's own deadline (the
    # fitted limit, which may grow during the call: next test) ends the call
    assert client.sent[1] == pytest.approx(openai_judge.FIT_CEILING_S, abs=1)


@pytest.mark.parametrize("fit", [True, False])
def test_a_fitted_limit_grows_with_what_the_run_measures_during_the_call(fit: bool) -> None:
    # The first calls of a local run are measured with few calls in parallel; once every slot is
    # busy each call runs slower, and a long reply started early was cut just before it ended
    # (seen on llama-server: the server then finished it anyway, for nothing). A fitted limit is
    # therefore re-read at the deadline; a limit the user gave (--timeout) stays fixed.
    client = _FakeClient(hold=0.5)  # longer than the 0.2 s limit the call starts with
    judge = OpenAIJudge("m", client=client, timeout=0.2, max_tokens=1000, fit_timeout=fit)
    client.judge = judge
    if fit:
        assert asyncio.run(judge.generate("p", _Ok)).ok
        assert judge.usage["calls"] == 1 and not client.cancelled
    else:
        with pytest.raises(openai_judge.JudgeTimeout, match=r"within 0\.2 s"):
            asyncio.run(judge.generate("p", _Ok))
        assert client.cancelled  # the request is dropped, not left running


def test_score_against_a_server_that_never_answers_ends_with_reasons(
    seed: tuple[str, str], tmp_path: Any
) -> None:
    import json

    release = threading.Event()
    out = tmp_path / "out.jsonl"
    with stub_server(before_answer=lambda request: release.wait(FUSE)) as url:
        try:
            code, text = _cli(
                "score", _rows(tmp_path, seed), "--base-url", url, "--model", "stub",
                "--no-cache", "--timeout", "1", "-o", out,
            )  # fmt: skip
        finally:
            release.set()
        sent = url.usage["calls"]
    assert code == 1, text
    assert "did not answer a one-line probe" in text
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["status"] for row in rows] == ["unscored", "unscored"]
    assert all("judge call timed out: no reply within 1 s" in row["error"] for row in rows)
    # one request per call, none retried: the bill says what the server received
    assert f"Judge bill: {sent} calls (0 retries)" in text


def test_a_rerun_on_the_same_cache_file_sends_no_probe(
    seed: tuple[str, str], tmp_path: Path
) -> None:
    # The learned structured mode is kept in the persistent cache: a later process (here: the
    # in-process memory cleared) scoring the same row from that cache sends nothing at all.
    cache = tmp_path / "judge.sqlite3"
    with stub_server() as url:
        first = OpenAIJudge("stub-model", base_url=url, api_key="test")
        assert score_summaries([seed], judge=first, cache=cache, dimensions=[])[0].scored
        assert first.usage["calls"] == 1 + 3  # the probe, then the row's three calls
        openai_judge._probes.clear()
        openai_judge._confirmed.clear()
        again = OpenAIJudge("stub-model", base_url=url, api_key="test")
        rescored = score_summaries([seed], judge=again, cache=SQLiteStore(cache), dimensions=[])
    assert rescored[0].scored
    assert again.usage["calls"] == 0


def test_the_longest_reply_is_sized_for_the_path_and_the_summaries() -> None:
    # The per-call limit is fitted to the longest reply a call of the run can be sent; on the
    # two-call path that is the claim check of the longest summary (seen on llama-server: a
    # 2,951-token claim check cut at a limit sized for the step path's 1,786-token replies).
    from shared.pipeline.fit import longest_reply
    from shared.prompts.schemas import (
        checked_claims_schema,
        max_claims,
        questions_schema,
        reply_token_limit,
        verdicts_schema,
    )

    short, long = "One fact. Another.", " ".join(f"Fact number {i}." for i in range(40))
    steps = longest_reply("steps", 10)
    assert steps == max(
        reply_token_limit(questions_schema(10)), reply_token_limit(verdicts_schema(10))
    )
    two_short = longest_reply("two-call", 10, [short])
    two_long = longest_reply("two-call", 10, [short, long])
    assert two_long == reply_token_limit(checked_claims_schema(max_claims(long)))
    assert steps < two_short < two_long


# -- replies too large to be a chat completion ------------------------------------------------


def _gzip_bomb(megabytes: int) -> tuple[bytes, int]:
    """A gzip body of a chat completion whose content is ``megabytes`` MiB of spaces, and its
    inflated size: the same sync-flushed deflate block repeated (about 1 KB per MiB), so it is
    built in a fraction of a second and never held inflated."""
    import struct
    import zlib

    head = (
        b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": '
        b'[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "'
    )
    tail, run = b'"}}]}', b" " * (1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = deflate.compress(head + run) + deflate.flush(zlib.Z_SYNC_FLUSH)
    block = deflate.compress(run) + deflate.flush(zlib.Z_SYNC_FLUSH)
    assert deflate.compress(run) + deflate.flush(zlib.Z_SYNC_FLUSH) == block  # a steady state
    last = deflate.compress(tail) + deflate.flush()
    crc = zlib.crc32(head + run)
    for _ in range(megabytes - 1):
        crc = zlib.crc32(run, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + megabytes * len(run) + len(tail)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    body = header + first + block * (megabytes - 1) + last + struct.pack("<II", crc, size % 2**32)
    return body, size


class _Bomb:
    """A server on 127.0.0.1 answering every chat request with ``body`` and ``headers``;
    ``posts`` holds each request body it received."""

    def __init__(self, body: bytes, headers: dict[str, str]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.posts: list[bytes] = []
        bomb = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                bomb.posts.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:  # the client stopped reading: the point of the test
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up mid-body: expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _Bomb:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_gzip_reply_that_inflates_to_400_mb_is_refused_in_bounded_memory(
    seed: tuple[str, str],
) -> None:
    # 400 KB on the wire, 400 MB inflated: httpx inflated it whole, the SDK parsed it, and the
    # process peaked at 1.3 GB. Now the read stops a few MB in and the row says why.
    import tracemalloc

    from shared.judge.reply_size import reply_byte_limit

    body, inflated = _gzip_bomb(400)
    assert len(body) < 500_000 and inflated > 400_000_000
    headers = {"Content-Encoding": "gzip", "Content-Length": str(len(body))}
    with _Bomb(body, headers) as bomb:
        judge = OpenAIJudge("stub-model", base_url=bomb.url, api_key="test", timeout=60)
        tracemalloc.start()
        try:
            result = score_summary(*seed, judge=judge, dimensions=[])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    limit = reply_byte_limit()
    assert limit == 6_000_000  # a few MB over the longest reply max_tokens allows (16,384)
    assert result.score is None
    assert f"judge reply larger than {limit // 1_000_000} MB" in (result.error or "")
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    # not retried as a transport fault: each request was sent once (a retry repeats its body)
    assert bomb.posts and len(bomb.posts) == len(set(bomb.posts))


def test_a_plain_reply_announcing_a_huge_body_is_refused_before_it_is_read(
    seed: tuple[str, str],
) -> None:
    # The length alone says it cannot be a reply: refused without waiting for a byte of it.
    with _Bomb(b"", {"Content-Length": str(10**9)}) as bomb:
        judge = OpenAIJudge("stub-model", base_url=bomb.url, api_key="test", timeout=30)
        result = score_summary(*seed, judge=judge, dimensions=[])
    assert result.score is None
    assert "judge reply larger than 6 MB" in (result.error or "")


def test_the_bound_passes_real_replies_in_every_asked_encoding_and_stops_the_rest() -> None:
    import gzip
    import json
    import zlib

    import httpx

    from shared.judge.reply_size import ReplyTooLarge, bounded_client_args

    text = json.dumps({"answer": "é" * 5_000}).encode()
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    bodies = {
        "gzip": gzip.compress(text),
        "deflate": zlib.compress(text),  # zlib-wrapped, as the RFC says
        "raw-deflate": raw_deflate.compress(text) + raw_deflate.flush(),  # as some servers send
        "identity": text,
        "deflate, gzip": gzip.compress(zlib.compress(text)),
    }
    asked: list[str | None] = []

    class Chunks(httpx.AsyncByteStream):  # as read off a socket (bytes content is read at once)
        def __init__(self, body: bytes) -> None:
            self.body = body

        async def __aiter__(self) -> Any:
            for start in range(0, len(self.body), 1_000):
                yield self.body[start : start + 1_000]

    def reply(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("accept-encoding"))
        coding = request.url.params["coding"]
        body = gzip.compress(b" " * 200_000) if coding == "big" else bodies.get(coding, text)
        header = {"raw-deflate": "deflate", "big": "gzip"}.get(coding, coding)
        return httpx.Response(200, headers={"Content-Encoding": header}, stream=Chunks(body))

    async def fetch(coding: str, limit: int = 100_000) -> bytes:
        transport = httpx.MockTransport(reply)
        async with httpx.AsyncClient(transport=transport, **bounded_client_args(limit)) as http:
            return (await http.get("http://127.0.0.1/x", params={"coding": coding})).content

    for coding in bodies:
        assert asyncio.run(fetch(coding)) == text, coding
    assert set(asked) == {"gzip, deflate"}
    with pytest.raises(ReplyTooLarge, match="larger than"):
        asyncio.run(fetch("big"))  # 200 KB of spaces in a few hundred bytes of gzip
    with pytest.raises(ReplyTooLarge, match=r"br, which was not asked for"):
        asyncio.run(fetch("br"))
