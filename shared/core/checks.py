"""Checks an option's value passes: each takes ``(option name, value)`` and returns the value,
or raises an error whose message starts with the option's name. Shared by the options'
declaration (:mod:`shared.evaluation.options`) and the dimensions' own options (each
:class:`~shared.dimensions.spec.DimensionSpec` declares its options with one of these).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Check = Callable[[str, Any], Any]


def is_number(value: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def positive_number(name: str, value: Any) -> float:
    if not (is_number(value) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def one_of(*allowed: str) -> Check:
    def check(name: str, value: Any) -> str:
        if value not in allowed:
            expected = " or ".join(repr(a) for a in allowed)
            raise ValueError(f"{name} must be {expected}, got {value!r}")
        return value

    return check


__all__ = ["Check", "is_number", "one_of", "positive_number"]
