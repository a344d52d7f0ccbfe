"""BM25 retrieval of source passages for claims (or questions), and grouping into judge calls.

When a source does not fit the context budget, each claim is checked against the passages most
relevant to it instead of the whole source. Okapi BM25 over content words is used because it is
exact-term based: the claims a verification must find are dominated by names, figures and rare
words, which BM25 weights highly, and it needs no model and runs in milliseconds per query.

Claims whose passages overlap are grouped so that one judge call checks several claims against
the union of their passages (in source order), as long as that prompt stays within the budget.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .chunking import Part, split_parts

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_STOP = frozenset(
    "a an the and or but of to in on at for with by from as is are was were be been being it its "
    "this that these those he she they them his her their we you i not no do does did has have had "
    "will would can could should may might than then there here which who whom what when where why "
    "how about into over after before also just so such very more most some any all each other "
    "said says say s t".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased words without stop words, crudely stemmed (plural/-ed/-ing endings)."""
    out = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        out.append(word)
    return out


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75) over a fixed list of passages."""

    def __init__(self, passages: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(terms(p)) for p in passages]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.postings: dict[str, list[int]] = {}
        for i, doc in enumerate(self.docs):
            for t in doc:
                self.postings.setdefault(t, []).append(i)

    def scores(self, query: str) -> dict[int, float]:
        """BM25 score of every passage sharing a term with ``query`` (others score 0)."""
        out: dict[int, float] = {}
        for t in set(terms(query)):
            idf = self.idf.get(t)
            if idf is None:
                continue
            for i in self.postings[t]:
                f = self.docs[i][t]
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / (self.average or 1.0))
                out[i] = out.get(i, 0.0) + idf * f * (self.k1 + 1) / (f + norm)
        return out

    def top(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best passages for ``query``, best first (ties: earlier first)."""
        ranked = sorted(self.scores(query).items(), key=lambda item: (-item[1], item[0]))
        return [i for i, _ in ranked[:k]]


@dataclass(frozen=True)
class Group:
    """Items (claims or questions, by position) checked in one call, and the passages shown."""

    items: tuple[int, ...]
    passages: tuple[int, ...]


def group_items(
    item_passages: Sequence[Sequence[int]],
    item_tokens: Sequence[int],
    passages: Sequence[Part],
    capacity: int,
    max_items: int,
) -> list[Group]:
    """Pack items into calls: each call shows the union of its items' passages.

    Items are taken in the source order of their best passage, so neighbours share passages;
    a call is closed when adding the next item would push passages + items over ``capacity``
    estimated tokens or past ``max_items`` items. An item whose own passages exceed the
    capacity keeps as many of its best passages as fit (at least one).
    """
    order = sorted(
        range(len(item_passages)),
        key=lambda i: (item_passages[i][0] if item_passages[i] else -1, i),
    )
    groups: list[Group] = []
    current: list[int] = []
    shown: set[int] = set()
    used = 0

    def fit(own: Sequence[int], budget: int) -> list[int]:
        kept, size = [], 0
        for j in own:
            if kept and size + passages[j].tokens > budget:
                break
            kept.append(j)
            size += passages[j].tokens
        return kept

    for i in order:
        own = fit(item_passages[i], capacity - item_tokens[i])
        new = [j for j in own if j not in shown]
        extra = sum(passages[j].tokens for j in new) + item_tokens[i]
        if current and (used + extra > capacity or len(current) >= max_items):
            groups.append(Group(tuple(current), tuple(sorted(shown))))
            current, shown, used = [], set(), 0
            new = own
            extra = sum(passages[j].tokens for j in own) + item_tokens[i]
        current.append(i)
        shown.update(new)
        used += extra
    if current:
        groups.append(Group(tuple(current), tuple(sorted(shown))))
    return groups


PASSAGE_TOKENS = 300
"""Retrieval unit for claim checks on long sources: a few sentences, so a claim's evidence is
shown with its immediate context without spending the budget on unrelated text."""

TOP_PASSAGES = 3
"""Passages retrieved per claim (or user question). Measured on the benchmark's constructed
case (docs/PERFORMANCE.md): the supporting sentence is in the top 3 far more often than in the
top 1, and three passages of 300 tokens per claim keep a 25-claim summary within two calls."""


@functools.lru_cache(maxsize=4)
def passage_index(source: str) -> tuple[tuple[Part, ...], BM25]:
    """The source cut into retrieval passages of about :data:`PASSAGE_TOKENS`, and their BM25
    index (cached for the last few sources: every claim check of one source shares it)."""
    passages = tuple(split_parts(source, PASSAGE_TOKENS))
    return passages, BM25([part.text for part in passages])
