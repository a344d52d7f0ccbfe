"""What judge calls cost: a small dated price table, user overrides, and $0 for local servers.

Prices are US dollars per million tokens. A reply's ``prompt_tokens`` include its cached prompt
tokens (the OpenAI convention, followed by vLLM and llama.cpp's OpenAI-compatible server), so a
call costs ``(prompt - cached) * input + cached * cached_input + completion * output``.

The table holds list prices for common hosted models as published by their providers on
:data:`PRICES_AS_OF`; providers change them, so every surface that shows dollars says where the
prices came from, and ``price_in`` / ``price_cached`` / ``price_out`` (``--price-in`` ...)
override them. A judge on a local server (loopback or a private address) costs $0 unless prices
are given. An unknown hosted model has no price: dollars are then shown as unknown, never as 0.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

PRICES_AS_OF = "2025-08"
"""When the table's list prices were read off the providers' pricing pages."""

# model prefix -> (input, cached input, output), US$ per 1M tokens
_TABLE: dict[str, tuple[float, float, float]] = {
    "gpt-4o-mini": (0.15, 0.075, 0.60),
    "gpt-4o": (2.50, 1.25, 10.00),
    "gpt-4.1-nano": (0.10, 0.025, 0.40),
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "gpt-4.1": (2.00, 0.50, 8.00),
    "gpt-5-nano": (0.05, 0.005, 0.40),
    "gpt-5-mini": (0.25, 0.025, 2.00),
    "gpt-5": (1.25, 0.125, 10.00),
    "o4-mini": (1.10, 0.275, 4.40),
    "o3": (2.00, 0.50, 8.00),
}


MAX_PRICE = 10_000.0
"""The highest price taken, in US$ per million tokens: above it a price is a typo (or an attack
on the bill's arithmetic: 1e308 makes every bill ``inf``, which is not JSON)."""


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens, and where the numbers came from."""

    input: float
    cached_input: float
    output: float
    source: str

    def __post_init__(self) -> None:
        for name in ("input", "cached_input", "output"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"price {name} must be a number, got {type(value).__name__}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"price {name} must be a finite number >= 0, got {value!r}")
            if value > MAX_PRICE:  # a bill of 1e308 per token overflows to $inf
                raise ValueError(
                    f"price {name} must be at most ${MAX_PRICE:,.0f} per million tokens, "
                    f"got {value:g}"
                )

    def cost(self, usage: Mapping[str, int]) -> float:
        """Dollars for ``usage`` (``prompt_tokens``, ``cached_tokens``, ``completion_tokens``)."""
        prompt = int(usage.get("prompt_tokens", 0) or 0)
        cached = min(int(usage.get("cached_tokens", 0) or 0), prompt)
        completion = int(usage.get("completion_tokens", 0) or 0)
        dollars = (
            (prompt - cached) * self.input + cached * self.cached_input + completion * self.output
        )
        return dollars / 1_000_000


FREE = Prices(0.0, 0.0, 0.0, "local server")


def is_local_url(base_url: str | None) -> bool:
    """True for a server on this machine or a private network (no per-token bill)."""
    if not base_url:
        return False
    host = urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or ""
    if host == "localhost" or host.endswith(".local") or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def table_prices(model: str) -> Prices | None:
    """The dated list price of a hosted model: its name, or its name with a date or ``latest``
    after it (``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``); None for a model not in the
    table."""
    name = model.split("/")[-1].lower()
    match = _SNAPSHOT.fullmatch(name)
    base = match.group(1) if match else name
    if base in _TABLE:
        return Prices(*_TABLE[base], source=f"list price {PRICES_AS_OF}")
    return None


_SNAPSHOT = re.compile(r"(.+?)-(?:\d{4}-\d{2}-\d{2}|\d{4}|latest)")


def resolve_prices(
    model: str,
    base_url: str | None = None,
    *,
    price_in: float | None = None,
    price_cached: float | None = None,
    price_out: float | None = None,
) -> Prices | None:
    """The prices a run is billed at: the user's (any ``price_*`` given; an unset cached price is
    the input price, an unset output price is an error), else $0 on a local server, else the
    table's; None when unknown."""
    if price_in is not None or price_cached is not None or price_out is not None:
        if price_in is None or price_out is None:
            raise ValueError(
                "give both the input and the output price (--price-in and --price-out), "
                "in US$ per million tokens"
            )
        cached = price_in if price_cached is None else price_cached
        return Prices(price_in, cached, price_out, source="given")
    if is_local_url(base_url):
        return FREE
    return table_prices(model)
