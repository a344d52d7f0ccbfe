"""Split a long source into sentence-aligned parts that fit a token budget.

Used only when a source does not fit the context budget in one prompt (see
:mod:`shared.pipeline.steps`): question generation reads the source part by part, and claim
verification retrieves small passages. Splitting is regex-based (sentence ends and blank lines),
not spaCy: it runs over 100,000-word sources in a fraction of a second and needs no model.
Parts never cut a sentence unless that single sentence is itself over the limit, in which case
it is cut between words.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..core.tokens import CHARS_PER_TOKEN, estimate_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n\s*\n")


@dataclass(frozen=True)
class Part:
    """A contiguous piece of the source: ``text`` is ``source[start:end]`` (stripped)."""

    index: int
    start: int
    end: int
    text: str
    tokens: int


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text``, whitespace excluded."""
    spans: list[tuple[int, int]] = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > position:
            spans.append((position, match.start()))
        position = match.end()
    if position < len(text):
        spans.append((position, len(text)))
    out = []
    for start, end in spans:
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + lead + len(stripped)))
    return out


def _cut_long(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """Cut one over-long sentence between words into spans of at most ``limit`` tokens."""
    pieces: list[tuple[int, int]] = []
    words = list(re.finditer(r"\S+", text[start:end]))
    piece_start = None
    piece_end = start
    for word in words:
        w_start, w_end = start + word.start(), start + word.end()
        if piece_start is None:
            piece_start = w_start
        elif estimate_tokens(text[piece_start:w_end]) > limit:
            pieces.append((piece_start, piece_end))
            piece_start = w_start
        piece_end = w_end
    if piece_start is not None:
        pieces.append((piece_start, piece_end))
    return pieces


def split_parts(text: str, max_tokens: int) -> list[Part]:
    """Greedy packing of whole sentences into parts of at most ``max_tokens`` estimated tokens.

    Sizes are balanced: each part aims at an equal share of the source (its size over the fewest
    parts that could hold it), so a source just over one part is split into two halves rather
    than one full part and a sliver; no part exceeds ``max_tokens``.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    spans: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        if estimate_tokens(text[start:end]) > max_tokens:
            spans.extend(_cut_long(text, start, end, max_tokens))
        else:
            spans.append((start, end))
    if not spans:
        return []
    # float sizes of each sentence with the whitespace before it, so that a part's size is
    # the sum of its sentences' sizes (estimate_tokens rounds up once per text, not per piece)
    sizes = [_size(text[spans[i - 1][1] if i else s : e]) for i, (s, e) in enumerate(spans)]
    wanted = math.ceil(sum(sizes) / max_tokens)
    target = sum(sizes) / wanted
    parts: list[Part] = []
    first = 0
    size = 0
    for i, span_size in enumerate(sizes):
        # close the part before this sentence if it would overflow, or if the part is nearer
        # its share without the sentence than with it
        if i > first and (
            math.ceil(size + span_size) > max_tokens or size + span_size / 2 > target
        ):
            parts.append(_part(text, len(parts), spans[first][0], spans[i - 1][1]))
            first, size = i, 0
        size += span_size
    parts.append(_part(text, len(parts), spans[first][0], spans[-1][1]))
    return parts


def _size(piece: str) -> float:
    ascii_chars = len(piece.encode("ascii", "ignore"))
    return ascii_chars / CHARS_PER_TOKEN + (len(piece) - ascii_chars)


def _part(text: str, index: int, start: int, end: int) -> Part:
    piece = text[start:end]
    return Part(index=index, start=start, end=end, text=piece, tokens=estimate_tokens(piece))
