"""What judge calls used: one counter shape for the judge, each row and the whole run.

A usage mapping has exactly the keys of :data:`USAGE_KEYS`:

``calls``
    HTTP requests sent to the judge server (every attempt, the structured-mode probe included).
``retries``
    Calls that repeated an earlier one: a transport fault (timeout, 429, 5xx) tried again within
    the call's deadline, or an invalid answer asked again with the error fed back.
``prompt_tokens``, ``cached_tokens``, ``completion_tokens``
    As the server reported them. ``cached_tokens`` are the prompt tokens the server took from
    its prompt cache (``usage.prompt_tokens_details.cached_tokens``; llama.cpp's
    ``timings.cache_n`` where it reports no such field); they are part of ``prompt_tokens``.

The judge (:class:`~shared.judge.openai.OpenAIJudge`) adds every request to its own ``usage``
and to each collector open in the calling task (:func:`collect_usage`): the pipeline opens one
per row, so a result's ``usage`` holds the calls made for that row. An answer that came from the
cache costs nothing and counts nothing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

USAGE_KEYS = ("calls", "retries", "prompt_tokens", "cached_tokens", "completion_tokens")

Usage = dict[str, int]

_collectors: contextvars.ContextVar[tuple[Usage, ...]] = contextvars.ContextVar(
    "summary_eval_usage_collectors", default=()
)


def new_usage() -> Usage:
    """A usage mapping with every counter at 0."""
    return dict.fromkeys(USAGE_KEYS, 0)


def add_usage(total: Usage, part: Mapping[str, int]) -> Usage:
    """Add ``part``'s counters into ``total`` (in place) and return ``total``."""
    for key in USAGE_KEYS:
        total[key] = total.get(key, 0) + int(part.get(key, 0) or 0)
    return total


@contextmanager
def collect_usage() -> Iterator[Usage]:
    """Count, in the yielded mapping, every judge request made by this task and the tasks it
    starts while the block runs (contextvars are copied into new tasks)."""
    usage = new_usage()
    token = _collectors.set((*_collectors.get(), usage))
    try:
        yield usage
    finally:
        _collectors.reset(token)


def record_usage(**counts: int) -> None:
    """Add ``counts`` to every collector open in the current context."""
    for usage in _collectors.get():
        for key, value in counts.items():
            usage[key] = usage.get(key, 0) + value


def outside_collectors() -> contextvars.Context:
    """A context with no collector open: work started in it is billed to no row (the judge's
    own ``usage`` still counts it), e.g. the one structured-mode probe of a run."""
    context = contextvars.copy_context()
    context.run(_collectors.set, ())
    return context


def format_usage(
    usage: Mapping[str, int],
    dollars: float | None,
    price_source: str = "",
    retry_reasons: Mapping[str, int] | None = None,
) -> str:
    """``43 calls (2 retries), 25,088 prompt tokens (0 cached), 15,488 completion tokens, $0.00``
    (dollars ``unknown`` when no price is known); with ``retry_reasons`` (why each retry
    happened, with counts) the retries say why: ``(2 retries: 2 HTTP 429 (server busy))``."""
    money = "cost unknown (no price for this model: give --price-in/--price-out)"
    if dollars is not None:
        money = f"${dollars:,.4f}" if 0 < dollars < 0.01 else f"${dollars:,.2f}"
        if price_source:
            money += f" ({price_source})"
    why = "; ".join(f"{n:,} {reason}" for reason, n in (retry_reasons or {}).items() if n)
    why = f": {why}" if why and usage.get("retries", 0) else ""
    return (
        f"{usage.get('calls', 0):,} calls ({usage.get('retries', 0):,} retries{why}), "
        f"{usage.get('prompt_tokens', 0):,} prompt tokens "
        f"({usage.get('cached_tokens', 0):,} cached), "
        f"{usage.get('completion_tokens', 0):,} completion tokens, {money}"
    )
