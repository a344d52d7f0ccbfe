"""What :class:`~shared.judge.openai.OpenAIJudge` knows about servers: structured modes and what
each server and model was found to take, probes, the context window and slots a server reports,
errors and their wording, prompt-cache and speed fields of a reply, retry back-off.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import re
import weakref
from collections.abc import AsyncIterator
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, Field

from ..core.redact import redact
from .wrappers import JudgeFailed

T = TypeVar("T", bound=BaseModel)

DEFAULT_MODEL = "gpt-4o-mini"

DEFAULT_TIMEOUT = 120.0
"""Seconds one judge call may take, its retries included, before it counts as failed."""

DEFAULT_CONTEXT_BUDGET = 16_000
"""Largest prompt the core sends, in estimated tokens (:mod:`shared.core.tokens`, which overshoots
real o200k counts on English by about a fifth). A source whose full-source prompts fit is scored
exactly as if there were no budget; a longer one is read part by part for questions and checked
claim by claim against retrieved passages. 16k leaves room under every current 32k+ context
window for the reply, and keeps the number of parts (parallel calls) of a 100,000-word source
near ten."""

MIN_CONTEXT_BUDGET = 2_000
"""Below this the fixed instructions and one retrieved passage would not leave room to work."""

SAMPLE_TEMPERATURE = 0.7
"""Temperature of a judge sample (``samples=k > 1``) when the judge itself is at 0: k greedy
decodes of one prompt would mostly agree by construction and hide the judge's uncertainty."""

SYSTEM_PROMPT = (
    "You are a careful, strict evaluator of summaries. Follow the task exactly and reply with a "
    "single JSON object only."
)

Mode = Literal["json_schema", "json_object_schema", "json_object", "text"]
MODES: tuple[Mode, ...] = get_args(Mode)
"""The structured-output modes, strongest first (the order ``structured="auto"`` tries)."""

# What a server's error body says when it refuses the structured-output request itself.
_NAMES_FORMAT = re.compile(r"response_format|json_schema|json_object|\bschema\b|grammar", re.I)
_NAMES_RESPONSE_FORMAT = re.compile(r"response_format", re.I)

_learned: dict[tuple[str, str], Mode] = {}
"""The mode to use, per (server, model), shared by every judge in this process."""
_confirmed: set[tuple[str, str, Mode]] = set()
"""(server, model, mode) seen to be accepted by the server."""
_probes: dict[tuple[str, str, str], ServerProbe] = {}
"""The probe's findings per (server, model, structured setting), in this process."""
_probe_tasks: dict[tuple[tuple[str, str, str], asyncio.AbstractEventLoop], asyncio.Task[Any]] = {}

PROBE_MAX_TOKENS = 16
"""The probe's reply: ``{"ok": true}`` is 5-7 tokens; a grammar-bound model stops there."""
PROBE_TIMEOUT = 60.0
"""The probe's own limit (or ``timeout`` when smaller): a server that cannot write a handful of
tokens in a minute is reported before the run, not waited on."""
FIT_MARGIN = 1.25
"""Room left by a per-call limit fitted to a measured speed."""
FIT_MIN_TOKENS = 200
"""Completion tokens measured before a fitted limit is trusted."""
FIT_CEILING_S = 900.0
"""The most a fitted per-call limit grows to (a server that stops answering mid-run is still
found out within it)."""
PROBE_PROMPT = 'Reply with the JSON object {"ok": true} and nothing else.'


class JudgeProbe(BaseModel):
    """The probe's one-field schema."""

    ok: bool = Field(description="true")


@dataclasses.dataclass(frozen=True)
class ServerProbe:
    """What the probe found: the structured ``mode`` that works, the server's generation speed
    (``tokens_per_s``, where the server reports it: llama.cpp ``timings.predicted_per_second``;
    a few tokens over the wall time would measure latency, not speed), its parallel ``slots``
    when published, the probe's wall ``seconds``, and ``error`` when it got no usable answer.
    ``from_cache``: read from the persistent cache, not measured now."""

    mode: str
    tokens_per_s: float | None = None
    slots: int | None = None
    seconds: float | None = None
    error: str | None = None
    from_cache: bool = False


class JudgeTimeout(JudgeFailed):
    """A judge call got no reply within its deadline (``timeout``, its retries included)."""


TRUNCATION_CHARS_PER_TOKEN = 6
"""A prompt of ``c`` non-blank characters is at least ``c / 6`` tokens for every tokenizer we know
(English runs at 4-5 characters per token, other scripts at fewer): a server that counts fewer
(by a clear margin) did not read the whole prompt."""
TRUNCATION_MARGIN = 256


class PromptTruncatedError(JudgeFailed):
    """The server read only part of the prompt (its context window is smaller than the prompt).

    A :class:`JudgeFailed`: the answer is not used and not retried (the same prompt would be cut
    the same way); the row ends unscored with this reason.
    """


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _error_text(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    return f"{exc} {json.dumps(body, default=str) if body is not None else ''}"


def is_mode_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is a server refusing a structured-output mode (not a transport fault)."""
    status = _status(exc)
    if status is None:
        return False
    text = _error_text(exc)
    if status in (400, 422):
        return bool(_NAMES_FORMAT.search(text))
    if status >= 500:
        return bool(_NAMES_RESPONSE_FORMAT.search(text))
    return False


def _server_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


async def _close_at_loop_end(
    client: Any,
    clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any],
    closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any],
    loop: asyncio.AbstractEventLoop,
) -> AsyncIterator[None]:
    try:
        yield
    finally:
        # the client's connections refer to the loop, so the weak-keyed entry would otherwise
        # keep the loop and the client alive for as long as the judge lives
        if clients.get(loop) is client:
            del clients[loop]
        closers.pop(loop, None)
        await client.close()


def _request_parts(
    mode: Mode, prompt: str, schema: type[BaseModel]
) -> tuple[list[dict[str, str]], dict[str, Any] | None]:
    """The messages and response_format of one request in ``mode``."""
    json_schema = schema.model_json_schema()
    if mode == "json_schema":
        system = SYSTEM_PROMPT
        response_format: dict[str, Any] | None = {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": json_schema, "strict": False},
        }
    else:
        system = f"{SYSTEM_PROMPT}\nJSON schema: {json.dumps(json_schema)}"
        if mode == "json_object_schema":
            response_format = {"type": "json_object", "schema": json_schema}
        elif mode == "json_object":
            response_format = {"type": "json_object"}
        else:
            response_format = None
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    return messages, response_format


def _check_not_truncated(messages: list[dict[str, str]], prompt_tokens: int | None) -> None:
    if not prompt_tokens:
        return  # not reported: nothing to compare
    chars = sum(len(" ".join(m["content"].split())) for m in messages)
    least = chars // TRUNCATION_CHARS_PER_TOKEN
    if prompt_tokens < least - TRUNCATION_MARGIN:
        raise PromptTruncatedError(
            f"prompt truncated by the server: it counted {prompt_tokens} prompt tokens for a "
            f"prompt of at least {least} ({chars} characters), so the judge did not read all of "
            "it; raise the server's context size (Ollama: num_ctx; llama.cpp: -c / -np) or "
            "lower context_budget"
        )


async def discover_context_window(
    base_url: str, model: str, api_key: str | None = None, *, timeout: float = 10.0
) -> int | None:
    """See :meth:`OpenAIJudge.context_window`; any failure to ask counts as "not told"."""
    import httpx

    from .reply_size import bounded_client_args

    root = _server_root(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout, **bounded_client_args(headers=headers)) as http:

        async def get_json(method: str, url: str, **kwargs: Any) -> Any:
            try:
                response = await http.request(method, url, **kwargs)
                if response.status_code != 200:
                    return None
                return response.json()
            except (httpx.HTTPError, ValueError):
                return None

        props = await get_json("GET", f"{root}/props")
        if isinstance(props, dict):
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                return n_ctx
        models = await get_json("GET", f"{base_url.rstrip('/')}/models")
        if isinstance(models, dict):
            entries = [m for m in models.get("data") or [] if isinstance(m, dict)]
            matching = [m for m in entries if m.get("id") == model] or entries[:1]
            for entry in matching:
                for value in (entry.get("max_model_len"), (entry.get("meta") or {}).get("n_ctx")):
                    if isinstance(value, int) and value > 0:
                        return value
        show = await get_json("POST", f"{root}/api/show", json={"model": model})
        if isinstance(show, dict) and ("model_info" in show or "parameters" in show):
            match = re.search(r"^\s*num_ctx\s+(\d+)", str(show.get("parameters") or ""), re.M)
            if match:
                return int(match.group(1))
            return OLLAMA_DEFAULT_NUM_CTX
    return None


OLLAMA_DEFAULT_NUM_CTX = 2048
"""Ollama's smallest default context (older versions; newer ones default higher): assumed when a
model sets no ``num_ctx``, the safe side for a server that truncates silently."""


def _backoff(attempt: int, exc: BaseException) -> float:
    """Seconds before retry ``attempt + 1``: the server's ``Retry-After`` when it gives a short
    one, else 0.5 s doubling per attempt (at most 8 s), with jitter."""
    response = getattr(exc, "response", None)
    header = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        after = float(header) if header is not None else None
    except ValueError:
        after = None
    if after is not None and 0 <= after <= 60:
        return after
    return min(0.5 * 2**attempt, 8.0) * (0.75 + random.random() / 2)


def retry_reason(exc: BaseException) -> str:
    """Why a transport fault was tried again, in a few words for the bill: the HTTP status
    (429: the server is busy; 5xx: a server error), else the connection fault and its cause (a
    connection the server dropped or refused: e.g. a full listen queue)."""
    status = _status(exc)
    if status == 429:
        return "HTTP 429 (server busy)"
    if status is not None:
        return f"HTTP {status} (server error)"
    cause = exc.__cause__ or exc.__context__
    what = type(cause).__name__ if cause is not None else type(exc).__name__
    return f"connection failed ({what})"


def failure_reason(exc: BaseException) -> str:
    """A failed call in one line: the judge's own message for its errors, else the type too."""
    if isinstance(exc, JudgeFailed):
        return str(exc)  # redacted when it was made
    return redact(f"{type(exc).__name__}: {exc}")


def cached_prompt_tokens(response: Any) -> int:
    """The prompt tokens a reply says came from the server's prompt cache:
    ``usage.prompt_tokens_details.cached_tokens`` (OpenAI, vLLM, recent llama.cpp), else
    llama.cpp's ``timings.cache_n``; 0 when the server says nothing."""
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if cached is None and isinstance(details, dict):
        cached = details.get("cached_tokens")
    if isinstance(cached, int) and not isinstance(cached, bool):
        return max(cached, 0)
    timings = getattr(response, "timings", None)
    if isinstance(timings, dict):
        cache_n = timings.get("cache_n")
        if isinstance(cache_n, int) and not isinstance(cache_n, bool):
            return max(cache_n, 0)
    return 0


def _reported_speed(response: Any) -> float | None:
    """llama.cpp's own generation speed for a reply (``timings.predicted_per_second``)."""
    timings = getattr(response, "timings", None)
    if isinstance(timings, dict):
        speed = timings.get("predicted_per_second")
        if isinstance(speed, int | float) and not isinstance(speed, bool) and speed > 0:
            return float(speed)
    return None


def not_a_completion(body: Any, base_url: str) -> str:
    """Why a reply that is no chat completion cannot be used, naming what the server sent."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    text = body if isinstance(body, str) else json.dumps(body, default=str)[:2000]
    start = text.lstrip()
    if start[:1] == "<":
        kind = (
            "an HTML page (a web page, not the API: check that --base-url is the server's "
            "OpenAI-compatible API, usually ending in /v1)"
        )
    elif start.startswith(("data:", "event:")):
        kind = (
            "a streamed reply (server-sent events) although none was asked for (the server or "
            "a proxy in front of it forces streaming; turn that off)"
        )
    elif not start:
        kind = "an empty body"
    else:
        kind = "something that is not a chat completion"
    snippet = " ".join(text.split())[:160]
    return (
        f"judge call failed: the server at {base_url} did not answer with a chat completion: it "
        f"sent {kind}: {snippet!r}"
    )


async def discover_slots(
    base_url: str, api_key: str | None = None, *, timeout: float = 10.0
) -> int | None:
    """How many requests the server decodes in parallel, where it says: llama.cpp ``/props``
    ``total_slots`` (its ``-np``). vLLM and Ollama publish no such figure (their limits are
    launch settings: ``--max-num-seqs``, ``OLLAMA_NUM_PARALLEL``). None when not told."""
    import httpx

    from .reply_size import bounded_client_args

    bounded = bounded_client_args(headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        async with httpx.AsyncClient(timeout=timeout, **bounded) as http:
            response = await http.get(f"{_server_root(base_url)}/props")
            if response.status_code != 200:
                return None
            props = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    slots = props.get("total_slots") if isinstance(props, dict) else None
    if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0:
        return slots
    return None
