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
``response_format`` (llama-cpp-python answers a ``json_schema`` request with HTTP 500).

The mode is found by one tiny probe (:meth:`OpenAIJudge.negotiate`: a one-field schema, a
handful of output tokens) before a run's first judging call, and kept per (base URL, model) in
this process and, when the judge has a persistent cache, there too, so a rerun does not probe
again. The probe also measures the server's generation speed and reads its parallel slots
(llama.cpp ``/props`` ``total_slots``). Judging calls never wait on another call: a call that
meets a refusal (the probe failed, or the judge was called directly) steps the shared mode down
once and asks again in the next mode. Invalid JSON raises :class:`JudgeOutputError`, which the
validating wrapper retries with the error fed back.

Time limits: ``timeout`` bounds each call end to end. Its attempts share one deadline; a
transport fault (429, 5xx, a dropped connection) is retried after a backoff, at most
``max_retries`` times and only while the deadline leaves room; the OpenAI SDK's own retries are
off, so nothing multiplies them. A call unanswered at its deadline ends with
:class:`JudgeTimeout`: against a server that never answers, a call costs one request and
``timeout`` seconds. A reply is read with a bound on its decoded size (:mod:`.reply_size`), so a
compressed body that inflates without end fails its call after a few MB.

The server's context window is read from what it publishes (llama.cpp ``/props``, vLLM
``/v1/models`` ``max_model_len``, Ollama ``/api/show``): :meth:`OpenAIJudge.context_window`. A
reply whose counted prompt tokens fall far below the prompt's size means the server cut the
prompt (Ollama does so silently at its ``num_ctx``): :class:`PromptTruncatedError`, never a
trusted answer.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import dataclasses
import json
import os
import weakref
from typing import Any, Literal

from pydantic import BaseModel

from ..core import bounded_json
from ..core.cache_hints import current_cache_hint, request_fields
from ..core.pricing import Prices, is_local_url, resolve_prices
from ..core.redact import redact_url, register_secret, url_secrets
from ..core.usage import new_usage, outside_collectors, record_usage
from ..prompts.schemas import reply_token_limit
from .replies import parse_json_reply
from .server import (  # noqa: F401 (re-exported: the names this module had)
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT,
    FIT_CEILING_S,
    FIT_MARGIN,
    FIT_MIN_TOKENS,
    MODES,
    OLLAMA_DEFAULT_NUM_CTX,
    PROBE_MAX_TOKENS,
    PROBE_PROMPT,
    PROBE_TIMEOUT,
    SAMPLE_TEMPERATURE,
    SYSTEM_PROMPT,
    TRUNCATION_CHARS_PER_TOKEN,
    TRUNCATION_MARGIN,
    JudgeProbe,
    JudgeTimeout,
    Mode,
    PromptTruncatedError,
    ServerProbe,
    T,
    _backoff,
    _check_not_truncated,
    _close_at_loop_end,
    _confirmed,
    _learned,
    _probe_tasks,
    _probes,
    _reported_speed,
    _request_parts,
    _status,
    cached_prompt_tokens,
    discover_context_window,
    discover_slots,
    failure_reason,
    is_mode_refusal,
    not_a_completion,
    retry_reason,
)
from .wrappers import JudgeFailed, JudgeOutputError


def _client_args(base_url: str | None, api_key: str | None, timeout: float) -> dict[str, Any]:
    """The arguments of the judge's own clients: the server and key given, else from the
    environment (a local server needs no key)."""
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    if api_key is None:
        if base_url is None:
            raise ValueError(
                "no API key: pass api_key= (--api-key) or set OPENAI_API_KEY (or point "
                "base_url / OPENAI_BASE_URL (--base-url) at a local OpenAI-compatible server)"
            )
        api_key = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) ignore it
    return {
        "base_url": base_url,
        "api_key": api_key,
        "timeout": timeout,
        "max_retries": 0,  # the judge retries within each call's deadline (_send)
    }


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
        timeout: float | None = None,
        max_retries: int = 4,
        client: Any | None = None,
        price_in: float | None = None,
        price_cached: float | None = None,
        price_out: float | None = None,
        fit_timeout: bool = False,
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
        self.timeout_given = timeout is not None
        """Whether ``timeout`` was given: one not given (:data:`DEFAULT_TIMEOUT`) is raised to fit
        a slow server's longest reply (:func:`shared.pipeline.fit.afit_run`)."""
        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.fit_timeout = fit_timeout
        """Let a call's limit grow past ``timeout`` to what its longest allowed reply takes at
        the speed measured so far (:meth:`fitted_limit`); ``summary-eval score`` sets it when
        ``--timeout`` is not given."""
        self._own_clients = client is None
        if client is None:
            self._client_args = _client_args(base_url, api_key, timeout)
            client = AsyncOpenAI(**self._client_args)
        self.client = client
        # the judge retries within each call's deadline: a caller's client must not retry too
        with_options = None if self._own_clients else getattr(client, "with_options", None)
        self._caller_client = with_options(max_retries=0) if with_options else client
        self.base_url = str(client.base_url)
        register_secret(getattr(client, "api_key", None))
        for secret in url_secrets(self.base_url):
            register_secret(secret)
        # An AsyncOpenAI client's kept-alive connections belong to the event loop that opened
        # them; each sync call (asyncio.run) has a new loop, so a client is made per loop and
        # closed on that loop when it shuts down (see _client).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._clients = weakref.WeakKeyDictionary()
        self._closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._closers = weakref.WeakKeyDictionary()
        self._store: Any = None
        self._context_window: int | Literal[False] | None = False  # False: not asked yet
        self.mode_notes: list[str] = []
        """Why a mode was left (one line per step down), for check_judge and reports."""
        self.usage = new_usage()
        self.retry_reasons: collections.Counter[str] = collections.Counter()  # why, for the bill
        """Every request of this judge (and its sample twins): ``calls``, ``retries``,
        ``prompt_tokens``, ``cached_tokens``, ``completion_tokens`` (:mod:`shared.core.usage`)."""
        self.generation = {"tokens": 0, "seconds": 0.0}
        """Completion tokens of answered calls and the seconds those calls took, summed (a
        per-call speed: ``tokens / seconds``)."""
        self.prices: Prices | None = resolve_prices(
            self.model,
            self.base_url,
            price_in=price_in,
            price_cached=price_cached,
            price_out=price_out,
        )
        """US$ per million tokens (:mod:`shared.core.pricing`): the given prices, $0 on a local
        server, a hosted model's dated list price, or None when unknown."""

    def cost(self, usage: dict[str, int] | None = None) -> float | None:
        """Dollars for ``usage`` (this judge's own by default), None when no price is known."""
        return None if self.prices is None else self.prices.cost(usage or self.usage)

    # -- clients -------------------------------------------------------------------------------

    async def _client(self) -> Any:
        if not self._own_clients:
            return self._caller_client  # the caller's client: the caller owns its loop
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            from .reply_size import capped_http_client, reply_byte_limit

            # its httpx client stops reading a reply past the size any allowed reply has
            http_client = capped_http_client(reply_byte_limit(self.max_tokens))
            client = AsyncOpenAI(**self._client_args, http_client=http_client)
            self._clients[loop] = client
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
            "base_url": redact_url(
                self.base_url
            ),  # two servers may serve different weights under one name
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
        if self.extra_body:
            settings["extra_body"] = self.extra_body
        return settings

    @property
    def caches_schema(self) -> bool:
        """Whether the server may key its prompt cache on the response schema (OpenAI puts the
        schema before the prompt): True unless the server is local (llama.cpp, vLLM, Ollama and
        LM Studio turn the schema into a grammar outside the prompt). The two-call claim bound is
        exact where this is False (:func:`shared.pipeline.compose.claims_step`)."""
        return not is_local_url(self.base_url)

    @property
    def mode(self) -> Mode:
        """The structured mode the next call uses (found by :meth:`negotiate`)."""
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
        """One judging call. No lock and no waiting on other calls: it goes out in the mode
        known to work (or the strongest not yet refused); a refusal steps the shared mode down
        once and this call asks again in the next mode."""
        while True:
            mode = self.mode
            messages, response_format = _request_parts(mode, prompt, schema)
            max_tokens = (
                self.max_tokens if self.max_tokens is not None else reply_token_limit(schema)
            )
            try:
                content = await self._request(messages, response_format, max_tokens)
            except JudgeOutputError:
                self._confirm(mode)  # the server took the mode; the reply was bad
                raise
            except Exception as exc:
                if self.structured == "auto" and mode != MODES[-1] and is_mode_refusal(exc):
                    self._step_down(mode, exc)
                    continue
                raise
            self._confirm(mode)
            return content

    def _confirm(self, mode: Mode) -> None:
        _confirmed.add((self.base_url, self.model, mode))

    def _step_down(self, mode: Mode, exc: BaseException) -> None:
        following = MODES[MODES.index(mode) + 1]
        key = (self.base_url, self.model)
        if _learned.get(key, MODES[0]) == mode:  # concurrent refusals step down once
            _learned[key] = following
            self.mode_notes.append(f"{mode} refused (HTTP {_status(exc)}): using {following}")

    def _count(self, **counts: int) -> None:
        for key, value in counts.items():
            self.usage[key] = self.usage.get(key, 0) + value
        record_usage(**counts)

    async def _request(self, *call: Any, **limits: Any) -> str:
        """The reply's text of :meth:`_send`'s call (same arguments); an empty or cut-off reply
        is a :class:`JudgeOutputError`."""
        response = await self._send(*call, **limits)
        choice = response.choices[0]
        content = choice.message.content
        if not content:
            raise JudgeOutputError(f"empty reply (finish_reason={choice.finish_reason})")
        if choice.finish_reason == "length":
            raise JudgeOutputError(
                "reply cut off at the token limit (finish_reason=length)", content
            )
        return content

    async def _send(
        self,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        max_tokens: int | None,
        *,
        timeout: float | None = None,
        retries: int | None = None,
    ) -> Any:
        """One call, end to end: every attempt within one deadline, ``timeout`` seconds (the
        judge's ``timeout`` by default) from now. A transport fault (429, 5xx, a dropped
        connection) is tried again after a backoff, at most ``max_retries`` times, only while
        the deadline leaves room; the SDK's own retries are off, so nothing multiplies them. A
        call still unanswered at its deadline is abandoned: :class:`JudgeTimeout`."""
        import openai

        from .reply_size import reply_too_large

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        hinted = request_fields(self.base_url, current_cache_hint())  # shared.core.cache_hints
        if hinted:
            kwargs["extra_body"] = {**hinted, **(self.extra_body or {})}
        limit = self.timeout if timeout is None else timeout
        fitted = timeout is None and self.fit_timeout and bool(max_tokens)
        if fitted:
            limit = max(limit, self.fitted_limit(max_tokens))
        allowed = self.max_retries if retries is None else retries
        client = await self._client()
        loop = asyncio.get_running_loop()
        began = loop.time()
        deadline = began + limit
        # a fitted limit may grow while the call runs (the calls finishing meanwhile measure the
        # server under the run's real load): the transport gets the ceiling, the deadline is ours
        ceiling = began + max(limit, FIT_CEILING_S) if fitted else deadline
        attempt = 0
        while True:
            self._count(calls=1, retries=1 if attempt else 0)
            started = loop.time()
            request = asyncio.ensure_future(
                client.chat.completions.create(**kwargs, timeout=max(ceiling - started, 0.001))
            )
            try:
                while True:
                    done, _ = await asyncio.wait({request}, timeout=max(deadline - loop.time(), 0))
                    if done:
                        response = request.result()
                        break
                    later = began + self.fitted_limit(max_tokens) if fitted else deadline
                    if later <= deadline or later <= loop.time():
                        raise TimeoutError
                    deadline = min(later, ceiling)
            except (TimeoutError, openai.APITimeoutError):
                tries = f" ({attempt + 1} attempts)" if attempt else ""
                raise JudgeTimeout(
                    f"judge call timed out: no reply within {deadline - began:g} s{tries} (the "
                    "per-call limit, timeout= / --timeout); the server is too slow for this limit "
                    "or not answering"
                ) from None
            except (
                openai.APIConnectionError,
                openai.RateLimitError,
                openai.InternalServerError,
            ) as exc:
                if (too_large := reply_too_large(exc)) is not None:  # the same again if retried
                    raise JudgeFailed(str(too_large)) from None
                if attempt >= allowed or is_mode_refusal(exc):
                    raise
                wait = _backoff(attempt, exc)
                if loop.time() + wait >= deadline:
                    raise
                await asyncio.sleep(wait)
                attempt += 1
                self.retry_reasons[retry_reason(exc)] += 1
                continue
            finally:
                request.cancel()  # a no-op once it is done; else the connection is dropped
            self._note_reply(response, messages, loop.time() - started)
            return response

    def fitted_limit(self, max_tokens: int) -> float:
        """With ``fit_timeout``: the seconds a reply of ``max_tokens`` takes at the per-call
        speed measured so far (``generation``: completion tokens over the seconds their calls
        took, queueing and prompt included), with 25% room, at most :data:`FIT_CEILING_S`; 0
        before any call has been measured (``timeout`` applies)."""
        tokens, seconds = self.generation["tokens"], self.generation["seconds"]
        if tokens < FIT_MIN_TOKENS or seconds <= 0:
            return 0.0
        return min(max_tokens * seconds / tokens * FIT_MARGIN, FIT_CEILING_S)

    def _note_reply(self, response: Any, messages: list[dict[str, str]], seconds: float) -> None:
        """Count a reply's tokens; refuse a body that is no chat completion (an HTML page, a
        stream) with what the server sent, and a prompt the server cut."""
        if isinstance(response, str | bytes) or not getattr(response, "choices", None):
            raise JudgeFailed(not_a_completion(response, self.base_url))
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        cached = cached_prompt_tokens(response)
        self._count(prompt_tokens=prompt, cached_tokens=cached, completion_tokens=completion)
        if completion and seconds > 0:
            self.generation["tokens"] += completion
            self.generation["seconds"] += seconds
        if usage is not None:
            _check_not_truncated(messages, prompt)

    # -- the probe -----------------------------------------------------------------------------

    def remember_in(self, store: Any) -> None:
        """Keep what the probe learns (mode, speed, slots) in ``store`` (the persistent judge
        cache: a rerun against the same server and model does not probe again)."""
        self._store = store

    async def negotiate(self) -> ServerProbe:
        """The server's structured mode, generation speed and slots, found once per (base URL,
        model): from this process, else from the persistent cache (:meth:`remember_in`), else
        by one tiny probe (a one-field schema, at most :data:`PROBE_MAX_TOKENS` tokens, within
        ``min(timeout, PROBE_TIMEOUT)`` seconds). The pipeline asks before a run's first judging
        call; judging calls never wait on it (see :meth:`_complete`). Never raises: a probe
        that fails says why in ``error``, and judging calls find the mode themselves."""
        key = (self.base_url, self.model, self.structured)
        found = _probes.get(key)
        if found is not None:
            return found
        loop = asyncio.get_running_loop()
        task = _probe_tasks.get((key, loop))
        if task is None:
            # outside any row's usage collector: the probe is the run's, not a row's
            task = loop.create_task(self._find_probe(), context=outside_collectors())
            _probe_tasks[(key, loop)] = task
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():
                _probe_tasks.pop((key, loop), None)

    async def _find_probe(self) -> ServerProbe:
        key = (self.base_url, self.model, self.structured)
        stored = self._stored_probe()
        if stored is not None:
            _probes[key] = stored
            return stored
        result = await self._probe()
        _probes[key] = result
        if result.error is None and self._store is not None:
            with contextlib.suppress(Exception):  # a cache that cannot be written: probe again
                self._store.put(self._probe_key(), json.dumps(dataclasses.asdict(result)))
        return result

    def _probe_key(self) -> str:
        return "server-probe:" + json.dumps(
            [redact_url(self.base_url), self.model, self.structured]
        )

    def _stored_probe(self) -> ServerProbe | None:
        if self._store is None:
            return None
        try:
            raw = self._store.get(self._probe_key())
            data = bounded_json.loads(raw) if raw else None
            if not isinstance(data, dict) or data.get("mode") not in MODES:
                return None
            probe = ServerProbe(**{**data, "from_cache": True})
        except Exception:  # unreadable or from another version: probe again
            return None
        if self.structured == "auto":
            _learned[(self.base_url, self.model)] = probe.mode
        self._confirm(probe.mode)
        return probe

    async def _probe(self) -> ServerProbe:
        loop = asyncio.get_running_loop()
        limit = min(self.timeout, PROBE_TIMEOUT)
        started = loop.time()
        while True:
            mode = self.mode
            messages, response_format = _request_parts(mode, PROBE_PROMPT, JudgeProbe)
            try:
                response = await self._send(
                    messages, response_format, PROBE_MAX_TOKENS, timeout=limit, retries=1
                )
            except Exception as exc:
                if self.structured == "auto" and mode != MODES[-1] and is_mode_refusal(exc):
                    self._step_down(mode, exc)
                    continue
                return ServerProbe(
                    mode=mode,
                    seconds=round(loop.time() - started, 3),
                    error=failure_reason(exc),
                )
            self._confirm(mode)
            # the server's own figure only: a handful of tokens over the wall time measures the
            # latency, not the speed (the progress line measures the speed during the run)
            speed = _reported_speed(response)
            slots = await discover_slots(
                self.base_url, getattr(self.client, "api_key", None), timeout=min(limit, 10.0)
            )
            return ServerProbe(
                mode=mode,
                tokens_per_s=round(speed, 2) if speed else None,
                slots=slots,
                seconds=round(loop.time() - started, 3),
            )

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
