"""The one lookup of the analysis results: the first item that matches, or a KeyError."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def find(items: Iterable[T], matches: Callable[[T], bool], missing: str) -> T:
    """The first of ``items`` that ``matches``; a KeyError saying ``missing`` when none does."""
    for item in items:
        if matches(item):
            return item
    raise KeyError(missing)
