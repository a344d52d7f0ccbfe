"""JSON from users' files, read within bounds: a reader never recurses without limit nor
converts a number without limit.

Python's ``json.loads`` raises ``RecursionError`` on ``[[[[...`` nested some thousand levels
deep, and ``ValueError`` on an integer of more than 4,300 digits (``sys.int_info``); neither is a
``JSONDecodeError``, so a reader that caught only that crashed. :func:`loads` refuses both with
a ``JSONDecodeError`` saying what is wrong, so every reader's existing handling (a bad row, a
usage error) applies. The nesting check is a scan of the brackets outside strings, before any
parsing, linear in the text's length.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
"""Deepest nesting of lists and objects read (our results' evidence is under ten levels)."""
MAX_INT_DIGITS = 4300
"""Longest integer read, in digits (Python's own default limit for int/str conversion)."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of the JSON ``text`` (brackets inside strings don't count)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return text.count("[") + text.count("{")  # cannot be deeper than that
    depth = deepest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooLong(len(text.lstrip("-")))
    return int(text)


class _TooLong(Exception):
    def __init__(self, digits: int) -> None:
        self.digits = digits


def loads(text: str) -> Any:
    """``json.loads(text)``, refusing (``json.JSONDecodeError``) nesting deeper than
    :data:`MAX_DEPTH` and integers longer than :data:`MAX_INT_DIGITS` digits."""
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, 0)
    try:
        return json.loads(text, parse_int=_bounded_int)
    except _TooLong as exc:
        raise json.JSONDecodeError(
            f"an integer of {exc.digits} digits (at most {MAX_INT_DIGITS} are read)", text, 0
        ) from None
    except RecursionError:  # not reached after the depth check; kept as a guard
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
