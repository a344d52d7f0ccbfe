"""The bench's recording of judge replies: every metric's chat-completions requests go through an
httpx transport that keeps each answered request's reply in SQLite in the bench's work folder,
keyed on the exact request (method, URL, body: the model, the messages, every setting), and
answers the same request from there the next time. A rerun of the same command (after an
interruption, or with a result file gone) pays nothing for what was answered; a replayed reply
still carries its ``usage``, so the rows' cost is reported, marked as replayed.

Only a whole reply (HTTP 200, a JSON object with ``choices``) is kept: a failed call (an HTTP
error, a timeout, a dropped connection) is asked again on the rerun. A reply the server ended at
the length limit (``finish_reason=length``) is whole, and is replayed like any other.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ..core import bounded_json

REPLAYED = "summary_eval_replayed"
"""The ``extensions`` key that marks an httpx response answered from the recording."""


class Recording:
    """Replies kept per request key in one SQLite file (thread-safe; any event loop).

    A reply recorded by this instance is not replayed by it: a metric that sends the same
    request twice in one run (DeepEval asks for an article's truths once per summary) pays for
    both, as its users do; a rerun replays both."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._recorded_now: set[str] = set()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        try:
            with self._lock, self._db:
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, body BLOB NOT NULL)"
                )
        except sqlite3.Error:
            self._db.close()
            raise

    @staticmethod
    def key(method: str, url: str, body: bytes) -> str:
        """sha256 of the request as sent: method, URL (server, path) and body (model,
        messages, settings)."""
        digest = hashlib.sha256()
        for part in (method.upper().encode(), url.encode(), body):
            digest.update(len(part).to_bytes(8, "big") + part)
        return digest.hexdigest()

    def get(self, key: str) -> bytes | None:
        """The reply an earlier run recorded for ``key`` (None: none, or recorded in this run)."""
        with self._lock:
            if key in self._recorded_now:
                return None
            row = self._db.execute("SELECT body FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def put(self, key: str, body: bytes) -> None:
        with self._lock, self._db:
            self._recorded_now.add(key)
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, body) VALUES (?, ?)", (key, body)
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _complete(body: bytes) -> bool:
    """Whether ``body`` is a chat completion worth replaying (a JSON object with choices)."""
    try:
        reply = bounded_json.loads(body.decode())
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(reply, dict) and bool(reply.get("choices"))


def recording_transport(inner: Any, recording: Recording) -> Any:
    """An httpx async transport in front of ``inner`` that answers a chat-completions request
    from ``recording`` when it holds its reply, and records each complete reply it forwards."""
    import httpx

    class RecordingTransport(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.method != "POST" or not request.url.path.rstrip("/").endswith(
                "/chat/completions"
            ):
                return await inner.handle_async_request(request)
            key = Recording.key(request.method, str(request.url), await request.aread())
            found = recording.get(key)
            if found is not None:
                return _response(200, found, request, replayed=True)
            response = await inner.handle_async_request(request)
            if response.status_code != 200:
                return response
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            if _complete(body):
                with contextlib.suppress(sqlite3.Error):  # a full disk: no replay, no failure
                    recording.put(key, body)
            return _response(response.status_code, body, request, replayed=False)

        async def aclose(self) -> None:
            await inner.aclose()

    return RecordingTransport()


def _response(status: int, body: bytes, request: Any, *, replayed: bool) -> Any:
    """A plain JSON response holding ``body`` (already decoded: no content-encoding left)."""
    import httpx

    return httpx.Response(
        status,
        headers={"content-type": "application/json"},
        content=body,
        request=request,
        extensions={REPLAYED: True} if replayed else {},
    )
