"""A judge for any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, llama.cpp,
llama-cpp-python, LM Studio).

Structured output is negotiated: servers differ in what ``response_format`` they take, and a
refused mode must cost one request, not a batch. ``structured="auto"`` walks a ladder, stepping
down once on a refusal and remembering the mode that works for this model on this server:

    json_schema          response_format={"type": "json_schema", ...}   OpenAI, vLLM, llama.cpp
    json_object_schema   {"type": "json_object", "schema": ...}         llama-cpp-python
    json_object          {"type": "json_object"}, schema in the prompt  JSON mode only
    text                 no response_format, schema in the prompt       anything that chats

A refusal is a 400 or 422 that names the structured-output request, or a 5xx whose body names
``response_format`` (llama-cpp-python answers a ``json_schema`` request with HTTP 500). A mode
not yet seen to work is tried without the SDK's retries, so a refusal is never retried with
backoff; once a mode has worked, transport errors (429, 5xx, timeouts) are retried with
exponential backoff by the OpenAI SDK (``max_retries``). Invalid JSON raises
:class:`JudgeOutputError`, which the validating wrapper retries with the error fed back.

The server's context window is read from what it publishes (llama.cpp ``/props``, vLLM
``/v1/models`` ``max_model_len``, Ollama ``/api/show``): :meth:`OpenAIJudge.context_window`. A
reply whose counted prompt tokens fall far below the prompt's size means the server cut the
prompt (Ollama does so silently at its ``num_ctx``): :class:`PromptTruncatedError`, never a
trusted answer.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import weakref
from collections.abc import AsyncIterator
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel

from ._replies import parse_json_reply
from .cache_hints import current_cache_hint, request_fields
from .judge import JudgeFailed, JudgeOutputError
from .schemas import reply_token_limit

T = TypeVar("T", bound=BaseModel)

DEFAULT_MODEL = "gpt-4o-mini"
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
"""The mode that worked, per (server, model), shared by every judge in this process."""

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


class OpenAIJudge:
    """``OpenAIJudge(model, base_url=..., api_key=...)``; unset arguments come from the
    environment: ``OPENAI_MODEL`` (else gpt-4o-mini), ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``.

    ``structured``: ``"auto"`` (negotiate, see the module docstring) or one mode of
    :data:`MODES`, used as given. ``extra_body``: server-specific request fields sent with every
    call (Ollama ``{"options": {"num_ctx": 16384}}``, vLLM ``{"structured_outputs": ...}``,
    llama.cpp ``{"grammar": ...}``). ``usage`` accumulates prompt/completion tokens and calls
    reported by the server; ``mode`` is the structured mode in use.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
        structured: Literal["auto", "json_schema", "json_object_schema", "json_object", "text"] = (
            "auto"
        ),
        extra_body: dict[str, Any] | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        client: Any | None = None,
    ) -> None:
        from openai import AsyncOpenAI

        self.model = model or os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        if structured != "auto" and structured not in MODES:
            raise ValueError(
                f"structured must be auto or one of {', '.join(MODES)}: {structured!r}"
            )
        if extra_body is not None and not isinstance(extra_body, dict):
            raise TypeError(f"extra_body must be a dict, got {type(extra_body).__name__}")
        self.structured = structured
        self.extra_body = dict(extra_body) if extra_body else None
        self.timeout = timeout
        self._own_clients = client is None
        if client is None:
            base_url = base_url or os.environ.get("OPENAI_BASE_URL")
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
            if api_key is None:
                if base_url is None:
                    raise ValueError(
                        "no API key: pass api_key= or set OPENAI_API_KEY (or point base_url / "
                        "OPENAI_BASE_URL at a local OpenAI-compatible server)"
                    )
                api_key = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) ignore it
            self._client_args = {
                "base_url": base_url,
                "api_key": api_key,
                "timeout": timeout,
                "max_retries": max_retries,
            }
            client = AsyncOpenAI(**self._client_args)
        self.client = client
        self.base_url = str(client.base_url)
        # An AsyncOpenAI client's kept-alive connections belong to the event loop that opened
        # them; each sync call (asyncio.run) has a new loop, so a client is made per loop and
        # closed on that loop when it shuts down (see _client).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._clients = weakref.WeakKeyDictionary()
        self._closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._closers = weakref.WeakKeyDictionary()
        self._confirmed: set[Mode] = set()
        self._probe_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]
        self._probe_locks = weakref.WeakKeyDictionary()
        self._context_window: int | Literal[False] | None = False  # False: not asked yet
        self.mode_notes: list[str] = []
        """Why a mode was left (one line per step down), for check_judge and reports."""
        self.usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}

    # -- clients -------------------------------------------------------------------------------

    async def _client(self) -> Any:
        if not self._own_clients:
            return self.client  # the caller's client: the caller owns its loop
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = AsyncOpenAI(**self._client_args)
            # asyncio.run() finalises every live async generator on its loop before closing it
            # (loop.shutdown_asyncgens): this one closes the client there, on its own loop, so
            # its connections are not left to the garbage collector after the loop is gone
            # ("Event loop is closed" noise on every later sync call).
            closer = _close_at_loop_end(client, self._clients, self._closers, loop)
            self._closers[loop] = closer
            await closer.__anext__()  # runs to its yield; registered with the loop from here
        return client

    async def aclose(self) -> None:
        """Close the client of the running loop now (optional: loop shutdown does it too)."""
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        self._closers.pop(loop, None)
        if client is not None:
            await client.close()

    # -- identity ------------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return self.model

    @property
    def settings(self) -> dict[str, Any]:
        """What changes the output (cache keys, signature); not timeouts or retry counts."""
        settings: dict[str, Any] = {
            "base_url": self.base_url,  # two servers may serve different weights under one name
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
        if self.extra_body:
            settings["extra_body"] = self.extra_body
        return settings

    @property
    def mode(self) -> Mode:
        """The structured mode the next call uses."""
        if self.structured != "auto":
            return self.structured  # type: ignore[return-value]
        return _learned.get((self.base_url, self.model), MODES[0])

    # -- calls ---------------------------------------------------------------------------------

    def with_sample(self, index: int, seed: int) -> OpenAIJudge:
        """This judge drawing independent sample ``index`` (the hook the core's ``samples=k``
        calls): the same model, server and client, with ``seed`` and, when this judge is at
        temperature 0, :data:`SAMPLE_TEMPERATURE`. Servers that ignore ``seed`` still sample at
        that temperature. One twin per (index, seed), kept here; it shares ``usage``."""
        twins: dict[tuple[int, int], OpenAIJudge] = self.__dict__.setdefault("_sample_twins", {})
        twin = twins.get((index, seed))
        if twin is None:
            twin = copy.copy(self)
            twin._sample_twins = {}
            twin.seed = seed
            twin.temperature = self.temperature or SAMPLE_TEMPERATURE
            twins[(index, seed)] = twin
        return twin

    async def generate(self, prompt: str, schema: type[T]) -> T:
        content = await self._complete(prompt, schema)
        return parse_json_reply(content, schema)

    async def _complete(self, prompt: str, schema: type[BaseModel]) -> str:
        if self.mode in self._confirmed:
            messages, response_format = _request_parts(self.mode, prompt, schema)
            return await self._request(messages, response_format, schema)
        # Until a mode has worked, one call at a time finds it (a batch's first calls would
        # otherwise all be refused at once); afterwards calls run freely.
        loop = asyncio.get_running_loop()
        lock = self._probe_locks.setdefault(loop, asyncio.Lock())
        async with lock:
            return await self._negotiate(prompt, schema)

    async def _negotiate(self, prompt: str, schema: type[BaseModel]) -> str:
        while True:
            mode = self.mode
            messages, response_format = _request_parts(mode, prompt, schema)
            if mode in self._confirmed:
                return await self._request(messages, response_format, schema)
            try:
                # first use of a mode: no SDK retries, so a refusal is not retried with backoff
                content = await self._request(messages, response_format, schema, retries=False)
            except JudgeOutputError:
                self._confirmed.add(mode)  # the server took the mode; the reply was bad
                raise
            except Exception as exc:
                if not is_mode_refusal(exc):
                    if _status(exc) is not None and _status(exc) in (400, 401, 403, 404, 422):
                        raise  # a client error: retrying changes nothing
                    if isinstance(exc, PromptTruncatedError):
                        raise
                    # a transport fault on a mode's first try: now with the SDK's retries
                    return await self._request(messages, response_format, schema)
                if self.structured != "auto" or mode == MODES[-1]:
                    raise
                following = MODES[MODES.index(mode) + 1]
                if _learned.get((self.base_url, self.model), MODES[0]) == mode:
                    _learned[(self.base_url, self.model)] = following
                    self.mode_notes.append(
                        f"{mode} refused (HTTP {_status(exc)}): using {following}"
                    )
                continue
            self._confirmed.add(mode)
            return content

    async def _request(
        self,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        schema: type[BaseModel],
        *,
        retries: bool = True,
    ) -> str:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.seed is not None:
            kwargs["seed"] = self.seed
        # bounded replies: the user's max_tokens, else the most the schema's bounds allow
        max_tokens = self.max_tokens if self.max_tokens is not None else reply_token_limit(schema)
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        hinted = request_fields(self.base_url, current_cache_hint())  # shared.cache_hints
        if hinted:
            kwargs["extra_body"] = {**hinted, **(self.extra_body or {})}
        client = await self._client()
        if not retries:
            client = client.with_options(max_retries=0)
        response = await client.chat.completions.create(**kwargs)
        self.usage["calls"] += 1
        if response.usage is not None:
            self.usage["prompt_tokens"] += response.usage.prompt_tokens or 0
            self.usage["completion_tokens"] += response.usage.completion_tokens or 0
            _check_not_truncated(messages, response.usage.prompt_tokens)
        choice = response.choices[0]
        content = choice.message.content
        if not content:
            raise JudgeOutputError(f"empty reply (finish_reason={choice.finish_reason})")
        if choice.finish_reason == "length":
            raise JudgeOutputError(
                "reply cut off at the token limit (finish_reason=length)", content
            )
        return content

    # -- what the server tells about itself ----------------------------------------------------

    async def context_window(self) -> int | None:
        """The context size (tokens per request) the server publishes, or None if it tells none.

        Asked once per judge: llama.cpp ``/props`` (``n_ctx`` per slot), vLLM ``/v1/models``
        (``max_model_len``), llama.cpp's ``/v1/models`` (``meta.n_ctx``), Ollama ``/api/show``
        (``num_ctx`` when the model sets it, else Ollama's smallest default, 2048: its OpenAI
        endpoint truncates silently beyond its ``num_ctx``). OpenAI publishes none.
        """
        if self._context_window is False:
            api_key = getattr(self.client, "api_key", None)
            self._context_window = await discover_context_window(
                self.base_url, self.model, api_key, timeout=min(self.timeout, 10.0)
            )
        return self._context_window


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

    root = _server_root(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout, headers=headers) as http:

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
