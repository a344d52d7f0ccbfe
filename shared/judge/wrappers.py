"""The Judge protocol (the core's only way to reach an LLM) and the wrappers around any judge.

A judge turns a prompt into an instance of a pydantic schema. Everything that is not "ask the
model" lives in small wrappers, composed by :func:`robust_judge`::

    CachedJudge          identical requests: one in flight at a time, answers kept (memory/SQLite)
      ValidatingJudge    invalid output: retried, with the validation error fed back
        LimitedJudge     at most ``concurrency`` calls at once
          <your judge>

The cache sits outside the validation so that only validated answers are stored, and a rerun of
a finished job makes no call at all.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import inspect
import json
import os
import sqlite3
import threading
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from ..core.redact import redact
from ..core.usage import Usage, record_usage
from ..prompts import neutralise, schema_fingerprint

T = TypeVar("T", bound=BaseModel)

Check = Callable[[Any], None]
"""A semantic check on a parsed answer (e.g. "one verdict per claim"); raises ValueError."""


@runtime_checkable
class Judge(Protocol):
    """What the core needs from an LLM: structured output for a prompt."""

    model_id: str

    async def generate(self, prompt: str, schema: type[T]) -> T: ...


class JudgeOutputError(Exception):
    """The judge replied, but the reply does not match the schema (or fails a check).

    ``raw`` keeps the offending reply (possibly truncated) for the error message and retries.
    """

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


class JudgeFailed(Exception):
    """A judge call failed for good: invalid output after every retry, or a transport error.

    Its message is redacted (:func:`shared.core.redact.redact`): a server's error may quote the
    request's headers, and the message reaches results files and reports."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


def judge_settings(judge: object) -> dict[str, Any]:
    """The settings of a judge that change its output (e.g. temperature), for cache keys.

    Judges may expose them as a ``settings`` mapping; timeouts and retry counts do not belong
    there, since they do not change what a successful call returns.
    """
    settings = getattr(judge, "settings", None)
    return dict(settings) if isinstance(settings, dict) else {}


def _being_cancelled() -> bool:
    """True when the running task has been asked to cancel (a real cancellation), as opposed to
    a CancelledError raised by code it awaited."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def check_async_judge(judge: object) -> None:
    """Reject a judge whose ``generate`` is not a coroutine function, before any call.

    A plain ``def generate`` would pass a protocol check and then fail on every call ("can't be
    used in 'await' expression"); wrap a synchronous client in ``async def generate`` (with
    ``asyncio.to_thread`` if it blocks) instead.
    """
    generate = getattr(judge, "generate", None)
    if not callable(generate):
        raise TypeError(f"judge must have an async generate(prompt, schema); got {judge!r}")
    target = generate if inspect.isroutine(generate) else type(generate).__call__
    if not (inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(generate)):
        raise TypeError(
            f"judge {type(judge).__name__}.generate must be async (`async def generate(prompt, "
            "schema)`); wrap a synchronous client with `await asyncio.to_thread(...)` inside an "
            "async generate"
        )


def _unwrap(judge: object) -> object:
    while isinstance(judge, _Wrapper):
        judge = judge.inner
    return judge


class _Wrapper:
    """Base of the wrappers: forwards ``model_id`` and ``settings`` of the wrapped judge."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        return str(getattr(self.inner, "model_id", type(self.inner).__name__))

    @property
    def settings(self) -> dict[str, Any]:
        return judge_settings(self.inner)

    async def _call_inner(self, prompt: str, schema: type[T], check: Check | None) -> T:
        if isinstance(self.inner, _Wrapper):
            return await self.inner.generate(prompt, schema, check=check)
        try:
            return await self.inner.generate(prompt, schema)
        except asyncio.CancelledError:
            if _being_cancelled():
                raise  # the caller's cancellation: let it through
            # the judge's own code raised it (a client bug, an inner timeout): one failed call
            raise JudgeFailed(
                "judge call failed: CancelledError raised by the judge itself"
            ) from None

    async def generate(self, prompt: str, schema: type[T], *, check: Check | None = None) -> T:
        raise NotImplementedError


W = TypeVar("W", bound=_Wrapper)


def find_wrapper(judge: object, kind: type[W]) -> W | None:
    """The wrapper of type ``kind`` in ``judge``'s wrapper stack (outermost first), if any."""
    while isinstance(judge, _Wrapper):
        if isinstance(judge, kind):
            return judge
        judge = judge.inner
    return None


class LimitedJudge(_Wrapper):
    """At most ``concurrency`` calls of the inner judge at once (per event loop)."""

    def __init__(self, inner: Judge, concurrency: int = 8) -> None:
        super().__init__(inner)
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()

    async def generate(self, prompt: str, schema: type[T], *, check: Check | None = None) -> T:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
        async with semaphore:
            return await self._call_inner(prompt, schema, check)


INVALID_REPLY = "invalid reply (asked again with the error)"
"""The retry reason of an answer the validating judge asked again (the bill counts them)."""
RETRY_NOTE = (
    "\n\nYour previous reply could not be used: {error}\n"
    "Reply again to the task above with JSON that matches the requested format exactly."
)


class ValidatingJudge(_Wrapper):
    """Parses and checks answers; retries up to ``retries`` times, feeding the error back.

    An answer is invalid when the inner judge raises :class:`JudgeOutputError` or pydantic's
    ``ValidationError`` (bad JSON, wrong types), or when ``check`` raises ValueError (wrong counts).
    After the last retry it raises :class:`JudgeFailed`, which the pipeline turns into an
    unscored result with that reason. Other exceptions (network, auth) are not retried here: the
    client that owns the transport retries those (the OpenAI SDK backs off on 429/5xx).
    """

    def __init__(self, inner: Judge, retries: int = 2) -> None:
        super().__init__(inner)
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.retries = retries

    async def generate(self, prompt: str, schema: type[T], *, check: Check | None = None) -> T:
        attempt_prompt = prompt
        last_error = ""
        for _attempt in range(self.retries + 1):
            try:
                result = await self._call_inner(attempt_prompt, schema, None)
                if not isinstance(result, schema):
                    result = schema.model_validate(
                        result.model_dump() if isinstance(result, BaseModel) else result
                    )
                if check is not None:
                    check(result)
                return result
            except (JudgeOutputError, ValidationError, ValueError) as exc:
                last_error = _describe(exc)
                # the error quotes the judge's reply: its markers neutralised like any text put
                # in a prompt, so the quote cannot open or close a block
                attempt_prompt = prompt + RETRY_NOTE.format(error=neutralise(last_error))
                if _attempt < self.retries:
                    _count_retry(self)
        raise JudgeFailed(
            f"judge output for {schema.__name__} still invalid after {self.retries + 1} "
            f"attempt(s): {last_error}"
        )


def _count_retry(judge: _Wrapper) -> None:
    """An invalid answer asked again is a retry in the bill of a judge that keeps one
    (``usage["retries"]``, and the row's usage collector)."""
    inner = _unwrap(judge)
    usage = getattr(inner, "usage", None)
    if isinstance(usage, dict) and "retries" in usage:
        usage["retries"] += 1
        record_usage(retries=1)
        reasons = getattr(inner, "retry_reasons", None)
        if isinstance(reasons, collections.Counter):
            reasons[INVALID_REPLY] += 1


def validation_summary(exc: ValidationError) -> str:
    """The first five problems of a pydantic error, as ``field.path: message; ...``."""
    return "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or 'reply'}: {err['msg']}"
        for err in exc.errors()[:5]
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return validation_summary(exc)
    text = redact(str(exc))  # an HTTP error body may quote the request's Authorization header
    return text if len(text) <= 500 else text[:500] + "…"


class CacheStore(Protocol):
    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str) -> None: ...


class NullStore:
    """Keeps nothing: with it, :class:`CachedJudge` only shares identical in-flight calls."""

    def get(self, key: str) -> str | None:
        return None

    def put(self, key: str, value: str) -> None:
        return None


class MemoryStore:
    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._data.get(key)

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._data[key] = value

    def __len__(self) -> int:
        return len(self._data)


class CacheWarning(UserWarning):
    """The judge cache file could not be used: set aside for a fresh one (unreadable), or left
    alone for this run (locked by another process)."""


class CacheUnusable(ValueError):
    """The judge cache path holds a database that is not ours: it is left untouched."""


LOCK_WAIT_S = 10.0
"""How long a judge cache locked by another process is waited for before a run goes on without
it (SQLite's busy timeout)."""

_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def _is_locked(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite refused because another connection holds a lock (not a damaged file)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _set_aside(path: Path) -> Path:
    """Rename an unreadable cache (and its WAL files) to ``<name>.corrupt[-N]``: its bytes are
    kept for the user, never deleted."""
    aside = path.with_name(path.name + ".corrupt")
    number = 1
    while aside.exists():
        number += 1
        aside = path.with_name(f"{path.name}.corrupt-{number}")
    os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, aside.with_name(aside.name + suffix))
    return aside


class SQLiteStore:
    """A persistent store: one table, WAL mode, safe to share between threads and processes.

    Each answer is committed as soon as it arrives, so a run that is interrupted loses nothing
    it already paid for.
    """

    def __init__(self, path: str | Path, *, lock_wait: float | None = None) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.lock_wait = LOCK_WAIT_S if lock_wait is None else float(lock_wait)
        self._fallback: MemoryStore | None = None
        """Set when the file is locked by another process: this run keeps its answers here."""
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if _is_locked(exc):  # a lock is not corruption: the file is left exactly as it is
                warnings.warn(
                    f"the judge cache {self.path} is locked by another process (waited "
                    f"{self.lock_wait:g} s); this run goes on without it (its answers are asked "
                    "for again; the file is left as it is)",
                    CacheWarning,
                    stacklevel=2,
                )
                self._fallback = MemoryStore()
                return
            # random bytes, a truncated file: set it aside
            aside = _set_aside(self.path)
            warnings.warn(
                f"the judge cache {self.path} cannot be read ({exc}); it was set aside as "
                f"{aside} and a fresh cache started (answers in it are asked for again)",
                CacheWarning,
                stacklevel=2,
            )
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=self.lock_wait)
        try:
            # read before anything is written: a database that is not ours stays as it was
            found = [r[1] for r in conn.execute("PRAGMA table_info(judge_cache)")]
            if found and sorted(found) != ["key", "value"]:
                raise CacheUnusable(
                    f"{self.path} is not a summary-eval judge cache (its judge_cache table has "
                    f"the columns {', '.join(found)}); give another --cache path, or --no-cache"
                )
            problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if problem != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed: {problem}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    def get(self, key: str) -> str | None:
        """The stored answer, or None (also when the file went bad during the run: a miss)."""
        if self._fallback is not None:
            return self._fallback.get(key)
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT value FROM judge_cache WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.DatabaseError:
            return None
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        """Keep an answer; a file gone bad during the run drops it (the row keeps its answer)."""
        if self._fallback is not None:
            self._fallback.put(key, value)
            return
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT OR REPLACE INTO judge_cache (key, value) VALUES (?, ?)", (key, value)
                )
                self._conn.commit()
        except sqlite3.DatabaseError as exc:
            warnings.warn(f"the judge cache {self.path}: {exc}", CacheWarning, stacklevel=2)

    def __len__(self) -> int:
        if self._fallback is not None:
            return len(self._fallback)
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])

    def close(self) -> None:
        if self._fallback is not None:
            return
        with self._lock:
            self._conn.close()


def cache_key(judge: object, prompt: str, schema: type[BaseModel]) -> str:
    """sha256 of model, output-affecting settings, prompt and schema (not timeouts or retries)."""
    payload = json.dumps(
        {
            "model": getattr(judge, "model_id", type(judge).__name__),
            "settings": judge_settings(judge),
            "prompt": prompt,
            "schema": schema_fingerprint(schema),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class CachedJudge(_Wrapper):
    """Shares one call among identical in-flight requests and keeps every validated answer.

    ``store`` is a :class:`MemoryStore` (default) or a :class:`SQLiteStore`. ``hits`` and
    ``misses`` count lookups, for tests and reports.
    """

    def __init__(self, inner: Judge, store: CacheStore | None = None) -> None:
        super().__init__(inner)
        self.store: CacheStore = store if store is not None else MemoryStore()
        self.hits = 0
        self.misses = 0
        self._inflight: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[Any]]
        ] = weakref.WeakKeyDictionary()

    async def generate(self, prompt: str, schema: type[T], *, check: Check | None = None) -> T:
        key = cache_key(self, prompt, schema)
        cached = self.store.get(key)
        if cached is not None:
            try:
                result = schema.model_validate_json(cached)
                if check is not None:
                    check(result)
            except (ValidationError, ValueError):
                pass  # a stale or foreign entry: ask again and overwrite it
            else:
                self.hits += 1
                return result
        inflight = self._inflight.setdefault(asyncio.get_running_loop(), {})
        task = inflight.get(key)
        if task is not None:
            self.hits += 1
        else:
            self.misses += 1
            task = asyncio.ensure_future(self._fetch(key, prompt, schema, check))
            inflight[key] = task
            task.add_done_callback(lambda done: _forget(inflight, key, done))
        # shield: a caller that is cancelled (a timeout, a dropped request) leaves the shared
        # call running for everyone else waiting on it
        return schema.model_validate(await asyncio.shield(task))

    async def _fetch(self, key: str, prompt: str, schema: type[T], check: Check | None) -> T:
        result = await self._call_inner(prompt, schema, check)
        self.store.put(key, result.model_dump_json())
        return result


def _forget(inflight: dict[str, asyncio.Future[Any]], key: str, done: asyncio.Future[Any]) -> None:
    if inflight.get(key) is done:
        del inflight[key]
    if not done.cancelled():
        done.exception()  # retrieved here: each waiter re-raises it, nobody else must


def robust_judge(
    judge: Judge,
    *,
    retries: int = 2,
    cache: bool | str | Path | CacheStore = True,
    concurrency: int = 8,
) -> CachedJudge:
    """Wrap ``judge`` with validation/retries, a concurrency limit and (unless ``cache=False``)
    de-duplication plus a cache: ``True`` = in memory, a path = SQLite on disk, or a store.

    Raises TypeError for a judge whose ``generate`` is not async (:func:`check_async_judge`)."""
    if not isinstance(judge, _Wrapper):
        check_async_judge(judge)
    wrapped = ValidatingJudge(LimitedJudge(judge, concurrency), retries)
    if cache is False:
        store: CacheStore = NullStore()  # identical in-flight requests are still shared
    elif cache is True:
        store = MemoryStore()
    elif isinstance(cache, str | Path):
        store = SQLiteStore(cache)
    else:
        store = cache
    remember = getattr(_unwrap(judge), "remember_in", None)
    if isinstance(store, SQLiteStore) and callable(remember):
        remember(store)  # what the judge learns about its server survives a rerun
    return CachedJudge(wrapped, store)


def base_judge(judge: object) -> object:
    """The user's judge inside any wrappers."""
    return _unwrap(judge)


def judge_prices(judge: object) -> Any:
    """The :class:`~shared.core.pricing.Prices` of the user's judge inside any wrappers (None when
    it has none: a judge that is not an OpenAIJudge, or a hosted model without a known price)."""
    return getattr(base_judge(judge), "prices", None)


def usage_fields(judge: object, usage: Usage) -> dict[str, Any]:
    """A result's ``usage`` and ``cost`` (US$, None when no price is known) for one row."""
    if judge is None:
        return {}
    prices = judge_prices(judge)
    return {"usage": dict(usage), "cost": prices.cost(usage) if prices is not None else None}


async def negotiate_judge(judge: object) -> Any:
    """Let the user's judge find its server's structured mode before the first judging call
    (:meth:`~shared.judge.openai.OpenAIJudge.negotiate`: one tiny probe per server and model,
    remembered); None for a judge that has no such step. Never raises."""
    negotiate = getattr(base_judge(judge), "negotiate", None)
    if negotiate is None or not inspect.iscoroutinefunction(negotiate):
        return None
    try:
        return await negotiate()
    except Exception:  # a probe, not a judging call: the first real call reports the problem
        return None
