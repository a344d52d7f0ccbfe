"""The fake judge's notion of words and sentences (shared by :mod:`shared.testing.fake` and
:mod:`shared.testing.fake_ragas`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .. import prompts as p

_STOP = frozenset(
    "a an the and or but of to in on at for with by from as is are was were be been being it its "
    "this that these those he she they them his her their we you i not no do does did has have had "
    "will would can could should may might than then there here which who whom what when where why "
    "how about into over after before also just so such very more most some any all each other "
    "says said say source summary question".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z0-9])")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


_MARKER = re.compile(r"⟦[^⟦⟧]*⟧ ")


def language_marker(prompt: str) -> str:
    """``"⟦French⟧ "`` when ``prompt`` asks the judge to write in French; "" for a prompt with no
    language block (English as today)."""
    name = p.asked_language(prompt)
    return f"⟦{name}⟧ " if name else ""


def content_words(text: str) -> list[str]:
    """Lower-cased, crudely stemmed words without stop words (the fake's notion of meaning);
    language markers are not words."""
    text = _MARKER.sub("", text)
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _overlap(a: Sequence[str], b: set[str]) -> float:
    return sum(w in b for w in a) / len(a) if a else 0.0
