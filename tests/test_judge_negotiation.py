"""OpenAIJudge against servers that differ: structured-output negotiation, server-specific
fields, context windows, truncated prompts, and event loops closed cleanly."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest

from shared import OpenAIJudge, score_summary
from shared import prompts as p
from shared.judge.openai import discover_context_window, is_mode_refusal
from shared.testing import FakeJudge, stub_server


def _formats(url: Any) -> list[str | None]:
    return [(r.get("response_format") or {}).get("type") for r in url.requests]


def test_llama_cpp_python_refusal_switches_mode_once_without_backoff(
    seed: tuple[str, str],
) -> None:
    # llama-cpp-python answers json_schema with HTTP 500; the SDK would retry a 500 with backoff
    # max_retries times before the judge saw it. One refused request, then the schema goes in
    # response_format.schema for every later call.
    with stub_server(refuse_json_schema=True) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", max_retries=4)
        result = score_summary(*seed, judge=judge)
        assert result.scored, result.error
        formats = _formats(url)
        assert formats[0] == "json_schema"
        assert formats.count("json_schema") == 1
        assert formats[1:] == ["json_object"] * (len(formats) - 1)
        assert all("schema" in r["response_format"] for r in url.requests[1:])
        assert judge.mode == "json_object_schema"
        assert judge.mode_notes == ["json_schema refused (HTTP 500): using json_object_schema"]
        # remembered: a second row asks in the working mode straight away
        before = url.count
        again = score_summary(seed[0], "The app logs meals.", judge=judge, dimensions=[])
        assert again.scored, again.error
        assert "json_schema" not in _formats(url)[before:]
        # and so does another judge of the same model on the same server
        other = OpenAIJudge("stub-model", base_url=url, api_key="test")
        assert other.mode == "json_object_schema"


def test_an_explicit_mode_is_kept_and_a_refusal_is_not_retried(seed: tuple[str, str]) -> None:
    with stub_server(refuse_json_schema=True) as url:
        judge = OpenAIJudge(
            "stub-model", base_url=url, api_key="test", structured="json_schema", max_retries=4
        )
        result = score_summary(*seed, judge=judge, dimensions=[])
        assert result.score is None
        assert "response_format" in (result.error or "")
        assert set(_formats(url)) == {"json_schema"}
        # the probe, then one request per failed step (questions, claims), no backoff
        assert url.count <= 3


@pytest.mark.parametrize(
    ("structured", "expected_format"),
    [
        ("json_schema", {"type": "json_schema"}),
        ("json_object_schema", {"type": "json_object", "schema": ...}),
        ("json_object", {"type": "json_object"}),
        ("text", None),
    ],
)
def test_every_mode_scores_and_sends_what_it_says(
    seed: tuple[str, str], structured: str, expected_format: dict | None
) -> None:
    with stub_server() as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", structured=structured)
        result = score_summary(*seed, judge=judge, dimensions=[])
        assert result.scored, result.error
        first = url.requests[0]
    sent = first.get("response_format")
    if expected_format is None:
        assert sent is None
    else:
        assert sent["type"] == expected_format["type"]
        assert ("schema" in sent) == ("schema" in expected_format)
    system = first["messages"][0]["content"]
    assert ("JSON schema:" in system) == (structured != "json_schema")


def test_unknown_structured_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="structured must be"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", structured="grammar")  # type: ignore[arg-type]


def _status_error(status: int, body: dict) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx.Response(status, json=body, request=request)
    cls = {400: openai.BadRequestError, 422: openai.UnprocessableEntityError}.get(
        status, openai.InternalServerError
    )
    return cls(f"Error code: {status} - {json.dumps(body)}", response=response, body=body)


@pytest.mark.parametrize(
    ("status", "message", "refusal"),
    [
        (400, "response_format json_schema is not supported", True),  # vLLM/OpenAI style
        (422, "Invalid schema for response_format 'X'", True),
        (500, "response_format type must be one of text or json_object", True),  # llama.cpp old
        (400, "This model's maximum context length is 8192 tokens", False),
        (500, "CUDA out of memory", False),
        (503, "server overloaded", False),
    ],
)
def test_what_counts_as_a_mode_refusal(status: int, message: str, refusal: bool) -> None:
    assert is_mode_refusal(_status_error(status, {"error": {"message": message}})) is refusal


def test_extra_body_reaches_the_server_and_the_settings(seed: tuple[str, str]) -> None:
    with stub_server() as url:
        extra = {"options": {"num_ctx": 16384}}
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", extra_body=extra)
        result = score_summary(*seed, judge=judge, dimensions=[])
        assert result.scored, result.error
        assert all(r["options"] == {"num_ctx": 16384} for r in url.requests)
    assert judge.settings["extra_body"] == extra
    assert "extra_body" not in OpenAIJudge("m", base_url=url, api_key="t").settings


def test_context_window_from_llama_cpp_props() -> None:
    with stub_server(context_window=4096) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        assert asyncio.run(judge.context_window()) == 4096
    with stub_server() as url:  # publishes nothing (as OpenAI): unknown, not a guess
        assert asyncio.run(OpenAIJudge("m", base_url=url, api_key="t").context_window()) is None


@contextmanager
def _json_server(routes: dict[tuple[str, str], Any]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, method: str) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            payload = routes.get((method, self.path))
            body = json.dumps(payload or {"error": "no route"}).encode()
            self.send_response(200 if payload is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_context_window_from_vllm_models_and_ollama_show() -> None:
    vllm = {("GET", "/v1/models"): {"data": [{"id": "qwen", "max_model_len": 32768}]}}
    with _json_server(vllm) as url:
        assert asyncio.run(discover_context_window(url, "qwen")) == 32768
    ollama_set = {("POST", "/api/show"): {"parameters": "num_ctx 16384\nstop <|im_end|>"}}
    with _json_server(ollama_set) as url:
        assert asyncio.run(discover_context_window(url, "qwen")) == 16384
    ollama_default = {("POST", "/api/show"): {"model_info": {"qwen2.context_length": 32768}}}
    with _json_server(ollama_default) as url:  # Ollama truncates at its num_ctx, not this
        assert asyncio.run(discover_context_window(url, "qwen")) == 2048


def test_a_silently_truncated_prompt_is_unscored_never_trusted(seed: tuple[str, str]) -> None:
    long_source = " ".join(
        f"In year {i} the town council of Harwick approved budget line {i} for road works."
        for i in range(200)
    )
    with stub_server(context_window=512) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test")
        result = score_summary(long_source, seed[1], judge=judge, dimensions=[])
    assert result.score is None
    assert "prompt truncated by the server" in (result.error or "")
    questions = [
        json.dumps(r["messages"]) for r in url.requests if "GeneratedQuestions" in json.dumps(r)
    ]
    # the same prompt would be cut the same way: none is retried (a window this small is below
    # the smallest context budget, so the source is also read in parts, each asked once)
    assert questions and len(questions) == len(set(questions))


async def _collect_inside_a_loop() -> None:
    gc.collect()
    for _ in range(10):
        await asyncio.sleep(0)


def test_repeated_sync_calls_leave_no_event_loop_noise(
    seed: tuple[str, str], capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Invalid replies make every call retry over kept-alive connections; each sync call runs
    # its own loop. Clients must be closed on their own loop, not by the garbage collector
    # after the loop is gone.
    # Objects an earlier test left for the garbage collector are not this test's calls:
    # collect them before the capture starts.
    gc.collect()
    capfd.readouterr()
    bad = ["not json"] * 12
    fake = FakeJudge({p.ExtractedClaims: bad, p.GeneratedQuestions: bad})
    caplog.set_level(logging.DEBUG)
    caplog.clear()
    with stub_server(fake) as url:
        judge = OpenAIJudge("stub-model", base_url=url, api_key="test", max_retries=0)
        results = []
        for _ in range(4):
            results.append(score_summary(*seed, judge=judge, dimensions=[], cache=False))
            # the call's client was closed with its loop, not left for the garbage collector
            assert len(judge._clients) == 0
            # the garbage collector may run during the next call's loop: make it do so here
            asyncio.run(_collect_inside_a_loop())
    assert all(r.score is None and "still invalid" in (r.error or "") for r in results)
    captured = capfd.readouterr()
    noise = captured.err + captured.out + caplog.text
    assert "Event loop is closed" not in noise
    assert "Traceback" not in noise
