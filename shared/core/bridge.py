"""Ties between the core and its callers' objects and threads.

- :func:`attached`: one helper object per user object (an LLM, a model, a judge), kept on that
  object so it is freed with it, with a guard for objects that refuse attributes.
- :func:`run_sync`: run a coroutine from sync code, inside a running event loop too.

The pipeline uses both; :mod:`shared.adapter_kit` re-exports them for the adapters.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

A = TypeVar("A")
R = TypeVar("R")

_SLOT = "_summary_eval_adapters"
_lock = threading.Lock()
_fallback: dict[tuple[int, Any], Any] = {}


class _Adapters:
    """The adapters made for one user object, stored in that object's ``__dict__``.

    Kept on the object rather than in a module registry: an adapter references its object, so
    a registry entry (a dict, or a WeakKeyDictionary whose value refers to its own key) would
    keep both alive for the process's life. On the object, the pair is a plain reference cycle
    that the garbage collector frees once the user drops the object. Copies and pickles of the
    object start with no adapters, since an adapter belongs to one object.
    """

    __slots__ = ("adapters", "owner")

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.adapters: dict[Any, Any] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> None:
        return None

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(None), ())


def attached(
    owner: object,
    key: Any,
    make: Callable[[], A],
    *,
    owner_of: Callable[[A], object] | None = None,
) -> A:
    """The adapter ``make()`` built once per (``owner``, ``key``), kept on ``owner`` itself.

    An object that takes no attributes (``__slots__``, a class's read-only namespace, a builtin)
    gets a new adapter on every call (same results, nothing shared), unless ``owner_of`` is
    given: then the adapter is kept in a process-wide table by the object's id, and
    ``owner_of(adapter) is owner`` tells a live entry from one whose object died and whose id
    was reused.
    """
    with _lock:
        try:
            store = vars(owner)
        except TypeError:
            store = None
        if store is not None:
            slot = store.get(_SLOT)
            if not isinstance(slot, _Adapters) or slot.owner is not owner:  # absent, or a copy's
                slot = _Adapters(owner)
                try:
                    store[_SLOT] = slot
                except TypeError:  # a read-only namespace (a class's mappingproxy)
                    store = None
        if store is None:
            if owner_of is None:
                return make()
            adapter = _fallback.get((id(owner), key))
            if adapter is None or owner_of(adapter) is not owner:
                adapter = _fallback[(id(owner), key)] = make()
            return adapter
        adapter = slot.adapters.get(key)
        if adapter is None:
            adapter = slot.adapters[key] = make()
        return adapter


def run_sync(make: Callable[[], Awaitable[R]]) -> R:
    """Run a coroutine to completion from sync code, with or without a running loop.

    Inside a running loop (Jupyter, an async framework) it runs in a worker thread with its own
    loop, so callers never see "asyncio.run() cannot be called from a running event loop".
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(make))
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(_as_coroutine(make))
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=worker, name="summary-eval-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _as_coroutine(make: Callable[[], Awaitable[R]]) -> R:
    return await make()
