"""The stub server: an OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 that answers
through a :class:`~shared.testing.FakeJudge`, so the real ``openai`` client path (and anything
built on it) runs offline.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pydantic
from pydantic import BaseModel

from .. import prompts as p
from .fake import ANSWERED_BY_NAME, FakeJudge, minimal_instance

# ---------------------------------------------------------------------------------------------
# Stub server
# ---------------------------------------------------------------------------------------------

_SCHEMAS_BY_NAME = {schema.__name__: schema for schema in p.SCHEMA_FOR_TASK.values()}


class StubURL(str):
    """The stub's base URL (``http://127.0.0.1:PORT/v1``), carrying what the server saw.

    ``requests`` holds each request body; ``judge`` is the FakeJudge answering them.
    """

    requests: list[dict[str, Any]]
    judge: FakeJudge
    usage: dict[str, int]
    replies: list[dict[str, Any]]
    auth: list[str | None]

    @property
    def count(self) -> int:
        return len(self.requests)


@contextmanager
def stub_server(
    judge: FakeJudge | None = None,
    *,
    fail_first: int = 0,
    fail_status: int = 429,
    schemas: Sequence[type[BaseModel]] = (),
    refuse_json_schema: bool = False,
    context_window: int | None = None,
    port: int = 0,
    cached_tokens: int = 0,
    cached_field: Literal["openai", "llama"] = "openai",
    slots: int | None = None,
    before_answer: Callable[[dict[str, Any]], None] | None = None,
    raw_reply: tuple[str, str] | None = None,
    tokens_per_s: float | None = None,
    more_schemas: Callable[[], Sequence[type[BaseModel]]] | None = None,
) -> Iterator[StubURL]:
    """Serve ``/v1/chat/completions`` (and ``GET /v1/models``) on 127.0.0.1 (``port``; 0 = a
    free one) through ``judge``.

    ``fail_first`` requests get HTTP ``fail_status`` (429 or 5xx) before any is answered, to
    exercise client retries. The schema of a request is taken from its JSON-schema
    ``response_format`` name, from the task line of one of this project's prompts, from the
    title of the JSON schema it sends (in ``response_format`` or in its system message, as
    Ragas' JSON mode does), or from ``schemas`` (extra models, matched by name in the
    request). Yields the base URL.

    Opt-in imitations of real servers: ``refuse_json_schema`` answers a ``json_schema``
    ``response_format`` with HTTP 500 naming it, as llama-cpp-python's server does (it takes
    only ``text`` or ``json_object``, the schema under ``response_format.schema``).
    ``context_window`` publishes that size at ``GET /props`` as llama.cpp does, and counts at
    most that many prompt tokens, as a server that silently cuts longer prompts does (Ollama).
    ``slots`` publishes ``total_slots`` at ``/props`` (llama.cpp's ``-np``). ``cached_tokens``
    reports that many of each reply's prompt tokens as cached, in
    ``usage.prompt_tokens_details.cached_tokens`` (``cached_field="openai"``) or llama.cpp's
    ``timings.cache_n`` (``"llama"``). ``before_answer(request)`` runs in the request's thread
    before it is answered: a test blocks there on its events to hold a reply (a slow or a hung
    server). ``raw_reply=(content_type, body)`` answers every chat request with that body (an
    HTML page, a stream). ``url.usage`` sums what the stub reported: ``calls`` (requests
    received), ``prompt_tokens``, ``cached_tokens``, ``completion_tokens``; ``url.replies``
    lists each answered request's counts and ``json_schema`` name. ``tokens_per_s`` reports
    that generation speed in llama.cpp's ``timings.predicted_per_second``. ``url.auth`` holds
    each chat request's ``Authorization`` header. ``more_schemas()`` returns more models like
    ``schemas``, called once, on the first request that is none of this project's prompts (so a
    server started for them alone never imports what they come from).
    """
    state = _Stub(
        fake=judge if judge is not None else FakeJudge(),
        known={**_SCHEMAS_BY_NAME, **{s.__name__: s for s in schemas}},
        fail_left=fail_first,
        fail_status=fail_status,
        refuse_json_schema=refuse_json_schema,
        context_window=context_window,
        cached_tokens=cached_tokens,
        cached_field=cached_field,
        slots=slots,
        before_answer=before_answer,
        raw_reply=raw_reply,
        tokens_per_s=tokens_per_s,
        more=more_schemas,
    )
    server = _QuietServer(("127.0.0.1", port), _Handler)
    server.stub = state
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="stub-server", daemon=True)
    thread.start()
    url = StubURL(f"http://127.0.0.1:{server.server_address[1]}/v1")
    url.requests = state.seen
    url.judge = state.fake
    url.usage = state.reported
    url.replies = state.replies
    url.auth = state.auth
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@dataclass
class _Stub:
    """One stub server's settings (see :func:`stub_server`) and what it saw, shared by the
    request threads under ``lock``."""

    fake: FakeJudge
    known: dict[str, type[BaseModel]]
    fail_left: int
    fail_status: int
    refuse_json_schema: bool
    context_window: int | None
    cached_tokens: int
    cached_field: Literal["openai", "llama"]
    slots: int | None
    before_answer: Callable[[dict[str, Any]], None] | None
    raw_reply: tuple[str, str] | None
    tokens_per_s: float | None
    more: Callable[[], Sequence[type[BaseModel]]] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    more_lock: threading.Lock = field(default_factory=threading.Lock)
    seen: list[dict[str, Any]] = field(default_factory=list)
    reported: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("calls", "prompt_tokens", "cached_tokens", "completion_tokens"), 0
        )
    )
    replies: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)

    def props(self) -> dict[str, Any] | None:
        """What ``GET /props`` publishes, as llama.cpp does (None: no such route)."""
        if self.context_window is None and self.slots is None:
            return None
        props: dict[str, Any] = {}
        if self.context_window is not None:
            props["default_generation_settings"] = {"n_ctx": self.context_window}
        if self.slots is not None:
            props["total_slots"] = self.slots
        return props

    def received(self, request: dict[str, Any], authorization: str | None) -> bool:
        """Record a chat request; whether it is one of the first ``fail_first`` (to fail)."""
        with self.lock:
            self.seen.append(request)
            self.auth.append(authorization)
            self.reported["calls"] += 1
            fail = self.fail_left > 0
            if fail:
                self.fail_left -= 1
        return fail

    def refusal(self, request: dict[str, Any]) -> str | None:
        """llama-cpp-python's error for a ``json_schema`` response format, when imitating it."""
        response_format = request.get("response_format") or {}
        if not (self.refuse_json_schema and response_format.get("type") == "json_schema"):
            return None
        return (
            "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
            "  Input should be 'text' or 'json_object' [type=literal_error, "
            "input_value='json_schema', input_type=str]"
        )

    def content(self, request: dict[str, Any]) -> str:
        """The fake's reply text for ``request``; :class:`_NoSchema` when the schema cannot be
        told, and a scripted exception propagates (the request fails)."""
        response_format = request.get("response_format") or {}
        messages = request.get("messages", [])
        prompt = "\n\n".join(
            _message_text(m.get("content")) for m in messages if m.get("role") == "user"
        )
        self.load_more(request, prompt)
        sent = (
            (response_format.get("json_schema") or {}).get("schema")
            or response_format.get("schema")
            or _schema_in_system(messages)
        )
        schema = _schema_for(request, prompt, self.known, sent)
        if schema is None:
            if isinstance(sent, dict):  # a schema the fake has no builder for (a probe's)
                return json.dumps(minimal_instance(sent))
            raise _NoSchema
        seed = request.get("seed")
        if getattr(self.fake, "vary_by_seed", False) and isinstance(seed, int):
            return self.fake.answer_text(prompt, schema, seed)
        return self.fake.answer_text(prompt, schema)  # overrides of (prompt, schema) keep working

    def load_more(self, request: dict[str, Any], prompt: str) -> None:
        """Add ``more()``'s schemas to the known ones, once, when ``request`` is none of this
        project's prompts (a peer's)."""
        if self.more is None:
            return
        name = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name in self.known or p.task_of(prompt) in p.SCHEMA_FOR_TASK:
            return
        with self.more_lock:  # a second peer's request waits for the first one's load
            if self.more is not None:
                self.known = {**self.known, **{s.__name__: s for s in self.more()}}
                self.more = None

    def completion(self, request: dict[str, Any], content: str) -> dict[str, Any]:
        """The chat completion answering ``request`` with ``content``, its usage counted."""
        messages = request.get("messages", [])
        prompt_tokens = sum(len(_message_text(m.get("content"))) for m in messages) // 4
        if self.context_window is not None:
            prompt_tokens = min(prompt_tokens, self.context_window)
        completion_tokens = len(content) // 4
        cached = min(self.cached_tokens, prompt_tokens)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        extra: dict[str, Any] = {}
        if self.cached_tokens and self.cached_field == "openai":
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        elif self.cached_tokens:
            extra["timings"] = {"cache_n": cached, "prompt_n": prompt_tokens - cached}
        if self.tokens_per_s is not None:
            extra.setdefault("timings", {})["predicted_per_second"] = self.tokens_per_s
        response_format = request.get("response_format") or {}
        with self.lock:
            self.reported["prompt_tokens"] += prompt_tokens
            self.reported["cached_tokens"] += cached
            self.reported["completion_tokens"] += completion_tokens
            self.replies.append(
                {
                    "schema": (response_format.get("json_schema") or {}).get("name"),
                    "prompt_tokens": prompt_tokens,
                    "cached_tokens": cached,
                    "completion_tokens": completion_tokens,
                }
            )
            number = len(self.seen)
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }
        return {
            **extra,
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", self.fake.model_id),
            "choices": [choice],
            "usage": usage,
        }


class _NoSchema(Exception):
    """The stub cannot tell which schema a request wants."""


class _Handler(BaseHTTPRequestHandler):
    """One request to a stub server; its :class:`_Stub` is ``self.server.stub``."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self._send_body(status, "application/json", json.dumps(payload).encode())

    def _send_body(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        stub: _Stub = self.server.stub  # type: ignore[attr-defined]
        path = self.path.rstrip("/")
        props = stub.props()
        if path.endswith("/models"):
            model = {"id": stub.fake.model_id, "object": "model", "owned_by": "stub"}
            self._send(200, {"object": "list", "data": [model]})
        elif path == "/props" and props is not None:
            self._send(200, props)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        stub: _Stub = self.server.stub  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length", 0))
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            # not a judge call (e.g. a context-window probe of /api/show): not recorded
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        fail = stub.received(request, self.headers.get("Authorization"))
        if stub.before_answer is not None:
            stub.before_answer(request)
        if stub.raw_reply is not None:
            self._send_body(200, stub.raw_reply[0], stub.raw_reply[1].encode())
            return
        if fail:
            self._send(stub.fail_status, {"error": {"message": "stub: simulated failure"}})
            return
        refused = stub.refusal(request)
        if refused is not None:
            self._send(500, {"error": {"message": refused, "type": "internal_server_error"}})
            return
        try:
            content = stub.content(request)
        except _NoSchema:
            self._send(400, {"error": {"message": "stub: cannot tell which schema to answer"}})
            return
        except Exception as exc:  # a scripted exception: the server fails this request
            self._send(500, {"error": {"message": f"stub: {exc}"}})
            return
        self._send(200, stub.completion(request, content))


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up on a held reply (its deadline passed) is no server error."""

    request_queue_size = 128
    """Connections waiting to be accepted. socketserver's 5 overflowed when a run sent more
    than 5 new connections at once (``--samples 4`` with cache hits letting the samples race
    ahead): the client saw dropped connections and retried them, so the bill showed retries
    the stub alone caused."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            return
        super().handle_error(request, client_address)


_SCHEMA_MARKERS = ("JSON schema: ", "json_schema:")
"""What precedes the JSON schema in a system message: this project's judge (modes without a
schema field), and instructor's JSON mode (Ragas' ``llm_factory`` on an OpenAI client: "...
match the following json_schema:" then the schema, then a line of text)."""


def _schema_in_system(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The JSON schema a client put in its system message (modes without a schema field)."""
    for message in messages:
        text = _message_text(message.get("content"))
        if message.get("role") != "system":
            continue
        for marker in _SCHEMA_MARKERS:
            if marker in text:
                try:
                    schema, _ = json.JSONDecoder().raw_decode(text.split(marker, 1)[1].lstrip())
                except json.JSONDecodeError:
                    return None
                return schema if isinstance(schema, dict) else None
    return None


def _message_text(content: object) -> str:
    """A message's text: plain content, or the text parts of a list of content parts (the form
    DeepEval's OpenAI model sends)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _schema_for(
    request: dict[str, Any],
    prompt: str,
    known: dict[str, type[BaseModel]],
    sent: dict[str, Any] | None = None,
) -> type[BaseModel] | None:
    response_format = request.get("response_format") or {}
    name = (response_format.get("json_schema") or {}).get("name")
    if name in known:
        return known[name]
    task = p.task_of(prompt)
    if task in p.SCHEMA_FOR_TASK:
        return p.SCHEMA_FOR_TASK[task]
    title = sent.get("title") if isinstance(sent, dict) else None
    if title in known:
        return known[title]
    if isinstance(title, str) and title in ANSWERED_BY_NAME:
        # a schema the fake answers by its name (Ragas' SummaryScore) though its class was not
        # given (``schemas=``): the sent JSON schema names it
        return _named_schema(title)
    text = json.dumps(request.get("messages", []))
    # the longest name the request holds: Ragas' "QuestionsGenerated" schema names its field
    # "Questions", which is also the name of a DeepEval schema
    named = [name for name in known if name in text]
    return known[max(named, key=len)] if named else None


@functools.cache
def _named_schema(name: str) -> type[BaseModel]:
    """A model named ``name`` that keeps whatever fields it is given: the fake builds the
    answer of a schema it answers by name (:data:`~shared.testing.fake.ANSWERED_BY_NAME`), the
    client that sent the schema validates it."""
    return pydantic.create_model(name, __config__=pydantic.ConfigDict(extra="allow"))
