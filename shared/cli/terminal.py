"""Text from users and servers printed literally: never as rich markup, never as terminal
control sequences.

An id ``[link=http://evil]click[/link]`` would print as a hyperlink and ``[bold red]X[/]`` be
consumed as markup; an id holding ``ESC ] 0 ; … BEL`` would set the terminal's title, and
``ESC [ 2 J`` clear the screen. :func:`plain` shows every control character (C0, DEL, C1) and
every bidirectional override as a visible escape (``\\x1b``, ``\\u202e``), keeping newlines and
tabs; :func:`literal` also escapes rich markup, for a value put into a message that has markup
of its own.
"""

from __future__ import annotations

import re

from rich.console import Console, ConsoleDimensions
from rich.markup import escape

from ..core.redact import redact

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def plain(value: object) -> str:
    """``str(value)`` with control characters and bidi overrides shown as escapes, and its
    secrets masked (:func:`shared.core.redact.redact`)."""
    return _CONTROL.sub(_visible, redact(str(value)))


def literal(value: object) -> str:
    """:func:`plain`, with rich markup escaped: safe inside a markup string."""
    return escape(plain(value))


_FLAG_WORDS = {
    "api_key=": "--api-key",
    "base_url / OPENAI_BASE_URL (--base-url)": "--base-url / OPENAI_BASE_URL",
    "price_in": "--price-in",
    "price_cached": "--price-cached",
    "price_out": "--price-out",
    "timeout=": "--timeout",
    "max_tokens=": "--max-tokens",
}


def _in_flags(message: str) -> str:
    """A core error in the command line's words: ``pass api_key= (--api-key)`` becomes
    ``pass --api-key``."""
    message = re.sub(r"(\w+=) \((--[\w-]+)\)", r"\2", message)
    for python, flag in _FLAG_WORDS.items():
        message = message.replace(python, flag)
    return message


PIPED_WIDTH = 10_000
"""The width a console prints at when its stream is no terminal (a pipe, a file) and
``COLUMNS`` is not set: whole lines, so ``| grep`` and ``> log`` see each line as one."""


class WholeLines(Console):
    """A rich console that wraps at the terminal's width on a terminal, and prints whole lines
    (:data:`PIPED_WIDTH`) when its stream is piped or redirected; an exported ``COLUMNS`` (or a
    ``width=``) still decides. Checked at each print, so a stream swapped later counts."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self._width is None and "COLUMNS" not in self._environ and not self.is_terminal:
            return ConsoleDimensions(PIPED_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


def console(*, stderr: bool = False) -> Console:
    """The console of a command's stdout (or ``stderr``): no highlighting, whole lines when
    piped (:class:`WholeLines`)."""
    return WholeLines(stderr=stderr, highlight=False)
