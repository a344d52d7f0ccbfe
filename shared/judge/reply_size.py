"""A bound on the size of a judge's reply as it is decoded, so a compressed body that inflates
without end (400 KB of gzip holding 400 MB) is refused after a few MB instead of being inflated
whole in memory.

The OpenAI SDK reads a reply through httpx, which inflates ``Content-Encoding`` gzip or deflate
completely before the SDK sees a byte. :func:`capped_http_client` is the httpx client
:class:`~shared.judge.openai.OpenAIJudge` gives the SDK, and the reads of what a server tells
about itself (:mod:`shared.judge.server`) use the same arguments (:func:`bounded_client_args`):
it asks only for the encodings it can measure (gzip, deflate), and a response hook wraps every
body in :class:`CappedBody`, which
inflates each chunk on its own, in bounded steps whose output is counted and dropped, before
handing the chunk on; the first chunk that would take the decoded body past the limit ends the
read with :class:`ReplyTooLarge`. The limit (:func:`reply_byte_limit`) is a few MB over what
the longest reply the judge allows (``max_tokens``) can hold, so no real reply comes near it.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from ..prompts.schemas import MAX_REPLY_TOKENS

REPLY_BYTES_PER_TOKEN = 64
"""Bytes one reply token may take in the chat completion's JSON, generously: a token of a few
characters, each escaped as ``\\uXXXX``, and the fields around the text."""

REPLY_SLACK_BYTES = 4_000_000
"""Room over the token bound for what a server adds (ids, usage, timings, a verbose echo)."""

ASKED_ENCODINGS = "gzip, deflate"
"""The ``Accept-Encoding`` the judge sends: the encodings :class:`CappedBody` can measure."""

_STEP = 64 * 1024
"""Most bytes one bounded inflation step produces (and holds) at a time."""


class ReplyTooLarge(httpx.DecodingError):
    """A reply whose decoded body passed the limit, or came in an encoding the judge did not
    ask for (one whose decoded size it cannot bound); the read stopped there. An httpx error,
    so code that treats a failed read as "not told" (the server's metadata) does so here too."""


def reply_byte_limit(max_tokens: int | None = None) -> int:
    """Most decoded bytes a reply may have: the longest reply ``max_tokens`` allows (at least
    :data:`MAX_REPLY_TOKENS`) at :data:`REPLY_BYTES_PER_TOKEN`, plus :data:`REPLY_SLACK_BYTES`,
    rounded up to whole MB (6 MB by default)."""
    tokens = max(max_tokens or 0, MAX_REPLY_TOKENS)
    return math.ceil((tokens * REPLY_BYTES_PER_TOKEN + REPLY_SLACK_BYTES) / 1e6) * 1_000_000


def too_large(limit: int) -> str:
    return (
        f"judge reply larger than {limit / 1e6:g} MB once decoded, far more than the "
        "longest reply the judge allows: the read was stopped there"
    )


class _Inflater:
    """One content-coding layer (gzip or deflate) inflated in bounded steps, as httpx's own
    decoders read it (deflate: zlib-wrapped, else raw)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        wbits = zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS
        self.inflate = zlib.decompressobj(wbits)
        self.first = coding == "deflate"

    def steps(self, data: bytes) -> Iterator[bytes]:
        """The output of ``data``, in pieces of at most :data:`_STEP` bytes."""
        while True:
            try:
                out = self.inflate.decompress(data, _STEP)
            except zlib.error as exc:
                if not self.first:
                    raise httpx.DecodingError(str(exc)) from exc
                self.first = False
                self.inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self.first = False
            if out:
                yield out
            data = self.inflate.unconsumed_tail
            if not data and len(out) < _STEP:
                return


class CappedBody(httpx.AsyncByteStream):
    """``raw`` (the body as sent) passed through unchanged, each chunk measured first: its
    decoded size through ``codings`` (gzip, deflate, as the response lists them) is counted,
    and a chunk that would take the total past ``limit`` raises :class:`ReplyTooLarge`."""

    def __init__(self, raw: Any, codings: list[str], limit: int) -> None:
        self.raw = raw
        self.layers = [_Inflater(c) for c in reversed(codings) if c in ("gzip", "deflate")]
        self.limit = limit
        self.size = 0

    def _count(self, level: int, data: bytes) -> None:
        if level == len(self.layers):
            self.size += len(data)
            if self.size > self.limit:
                raise ReplyTooLarge(too_large(self.limit))
            return
        for piece in self.layers[level].steps(data):
            self._count(level + 1, piece)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.raw:
            self._count(0, chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.raw.aclose()


async def _cap_body(response: httpx.Response, limit: int) -> None:
    codings = [
        c.strip().lower()
        for c in response.headers.get_list("content-encoding", split_commas=True)
        if c.strip().lower() not in ("", "identity")
    ]
    unmeasured = [c for c in codings if c not in ("gzip", "deflate")]
    if any(c in ("br", "zstd") for c in unmeasured):  # httpx would inflate these unbounded
        await response.aclose()
        raise ReplyTooLarge(
            f"judge reply sent with Content-Encoding {', '.join(unmeasured)}, which was not asked "
            f"for (only {ASKED_ENCODINGS}): its decoded size cannot be bounded"
        )
    length = response.headers.get("content-length", "")
    if not codings and length.isdigit() and int(length) > limit:
        await response.aclose()
        raise ReplyTooLarge(too_large(limit))
    response.stream = CappedBody(response.stream, codings, limit)


def bounded_client_args(
    limit: int | None = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Arguments of an ``httpx.AsyncClient`` that asks for gzip or deflate only and refuses a
    body past ``limit`` decoded bytes (:func:`reply_byte_limit` by default) with
    :class:`ReplyTooLarge`; ``headers`` are sent too."""
    cap = reply_byte_limit() if limit is None else limit

    async def hook(response: httpx.Response) -> None:
        await _cap_body(response, cap)

    return {
        "headers": {"Accept-Encoding": ASKED_ENCODINGS, **(headers or {})},
        "event_hooks": {"response": [hook]},
    }


def capped_http_client(limit: int) -> httpx.AsyncClient:
    """The OpenAI SDK's default async httpx client (its timeouts, connection limits,
    redirects) with :func:`bounded_client_args`: the SDK's read of a reply past ``limit``
    decoded bytes raises its connection error from :class:`ReplyTooLarge`."""
    from openai import DefaultAsyncHttpxClient

    return DefaultAsyncHttpxClient(**bounded_client_args(limit))


def reply_too_large(exc: BaseException) -> ReplyTooLarge | None:
    """The :class:`ReplyTooLarge` behind ``exc`` (the SDK raises its connection error from
    it), or None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ReplyTooLarge):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return None
