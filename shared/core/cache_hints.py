"""Prompt-cache hints: which source a judge call's prompt begins with, for servers that take a hint.

The two-call path (docs/DESIGN.md, "How the judge is asked") begins every call that carries a
source with the same bytes, so a provider's prefix cache can serve all of a source's calls after
the first. Some servers do better when told which calls belong together: OpenAI routes requests
with the same ``prompt_cache_key`` to the same cache, and llama.cpp's server reuses a slot's
prompt when a request sets ``cache_prompt: true`` (its default in recent versions).

The pipeline sets the hint around a call with :func:`cache_hint` (a context variable, so no
judge's ``generate(prompt, schema)`` signature changes and a user's judge may ignore it); a judge
that can use it reads :func:`current_cache_hint` and turns it into request fields with
:func:`request_fields`. The hint never changes a reply, so it is in no cache key or signature.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from urllib.parse import urlsplit

from .pricing import is_local_url

_HINT: ContextVar[str | None] = ContextVar("summary_eval_cache_hint", default=None)


def source_key(prefix: str) -> str:
    """A short, stable key for the calls that begin with ``prefix`` (the source's preamble and
    block): it names no text, only a digest of it."""
    return "summary-eval-" + hashlib.sha256(prefix.encode()).hexdigest()[:24]


@contextmanager
def cache_hint(key: str | None) -> Iterator[None]:
    """Calls made inside this block (and tasks they start) carry ``key`` as their hint."""
    token = _HINT.set(key)
    try:
        yield
    finally:
        _HINT.reset(token)


def current_cache_hint() -> str | None:
    """The hint of the call being made, or None."""
    return _HINT.get()


def request_fields(base_url: str | None, key: str | None) -> dict[str, object]:
    """Extra request-body fields that carry ``key`` to the server at ``base_url``.

    OpenAI (``api.openai.com``): ``prompt_cache_key``. A server on this machine or a private
    network (llama.cpp, vLLM, Ollama, LM Studio): ``cache_prompt: true``, which llama.cpp reads
    and the others ignore. Any other host: nothing, since a hosted API may refuse a field it
    does not know."""
    if not key or not base_url:
        return {}
    host = (urlsplit(str(base_url)).hostname or "").lower()
    if host == "api.openai.com":
        return {"prompt_cache_key": key}
    if is_local_url(str(base_url)):
        return {"cache_prompt": True}
    return {}
