"""Inputs of the performance benchmark, built deterministically from the SummEval articles.

- :func:`seed_pair`: the seed example (Ragas docs), as in the tests.
- :func:`article_with_summaries`: a ~2,500-word article (consecutive SummEval articles joined)
  and 20 different ~500-word summaries of it, each made of SummEval system summaries of its
  parts (human-readable casing restored), picked differently per summary.
- :func:`long_source`: a source of any length: the 50 SummEval articles in order, repeated,
  every repetition after the first with its names replaced by invented ones (consistently within
  the repetition), so the copies share their wording but not their facts: retrieval has to find
  the right copy by names, as in a long report that repeats a structure per region or quarter.
- :func:`deep_claims`: claims for the retrieval case: renamed system-summary sentences of
  articles that sit past the middle of the long source, each with the position of the source
  sentence that supports it.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "summeval" / "dev.jsonl"

SEED_SOURCE = (
    "A company is launching a new product, a smartphone app designed to help users track their "
    "fitness goals. The app allows users to set daily exercise targets, log their meals, and track "
    "their water intake. It also provides personalized workout recommendations and sends "
    "motivational reminders throughout the day."
)
SEED_SUMMARY = (
    "A company is launching a fitness tracking app that helps users set exercise goals, log meals, "
    "and track water intake, with personalized workout suggestions and motivational reminders."
)

_SYLLABLES = (
    "ka ri lo ven dor mi sa tel qua bri no zan fe lu gor pa thi mon ra vel sto cas dri".split()
)
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Article:
    text: str
    summaries: tuple[str, ...]  # SummEval system summaries, casing restored


def seed_pair() -> tuple[str, str]:
    return SEED_SOURCE, SEED_SUMMARY


@cache
def _rows() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


@cache
def names() -> frozenset[str]:
    """Words written capitalised in the articles and never in lower case: names, mostly."""
    text = "\n".join(dict.fromkeys(r["article"] for r in _rows()))
    lower = set(re.findall(r"\b[a-z]{3,}\b", text))
    return frozenset(w for w in set(_CAPITALISED.findall(text)) if w.lower() not in lower)


def _detokenise(summary: str) -> str:
    """SummEval's lower-cased, tokenised summaries as ordinary sentences with names capitalised."""
    text = summary.replace("-lrb-", "(").replace("-rrb-", ")").replace("`", "'")
    text = re.sub(r" (['’]s|n't|[.,;:!?)'])", r"\1", text)
    text = re.sub(r"\( ", "(", text)
    proper = {n.lower(): n for n in names()}
    text = _WORD.sub(lambda m: proper.get(m.group(0), m.group(0)), text)
    return re.sub(r"(^|[.!?] )([a-z])", lambda m: m.group(1) + m.group(2).upper(), text).strip()


@cache
def articles() -> tuple[Article, ...]:
    by_article: dict[str, list[str]] = {}
    for row in _rows():
        by_article.setdefault(row["article"], []).append(_detokenise(row["summary"]))
    return tuple(Article(text, tuple(s)) for text, s in by_article.items())


def article_with_summaries(
    words: int = 2500, count: int = 20, summary_words: int = 500
) -> tuple[str, list[str]]:
    parts: list[Article] = []
    for article in articles():
        parts.append(article)
        if sum(len(a.text.split()) for a in parts) >= words:
            break
    source = "\n\n".join(a.text for a in parts)
    summaries = []
    for i in range(count):
        rng = random.Random(i)
        chosen: list[str] = []
        step = 0
        while sum(len(s.split()) for s in chosen) < summary_words:
            pick = rng.choice(parts[step % len(parts)].summaries)
            if pick not in chosen:
                chosen.append(pick)
            step += 1
        summaries.append(" ".join(chosen))
    if len(set(summaries)) != count:
        raise AssertionError("the summaries must all differ")
    return source, summaries


def _invented(name: str, copy: int) -> str:
    digest = hashlib.sha256(f"{name}:{copy}".encode()).digest()
    length = 2 + digest[0] % 2
    word = "".join(_SYLLABLES[b % len(_SYLLABLES)] for b in digest[1 : 1 + length])
    return word.capitalize()


def rename(text: str, copy: int) -> str:
    """``text`` with every name replaced by its invented name for copy ``copy`` (0 = unchanged);
    matches names case-insensitively and keeps the case they were written in."""
    if copy == 0:
        return text
    known = {n.lower() for n in names()}

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        if word.lower() not in known:
            return word
        new = _invented(word.lower(), copy)
        return new if word[0].isupper() else new.lower()

    return _WORD.sub(swap, text)


@dataclass(frozen=True)
class LongSource:
    text: str
    # (copy, article index, start offset, end offset) of every article copy in the text
    spans: tuple[tuple[int, int, int, int], ...]


@cache
def long_source(words: int = 100_000) -> LongSource:
    pieces: list[str] = []
    spans: list[tuple[int, int, int, int]] = []
    total = 0
    offset = 0
    copy = 0
    while total < words:
        for index, article in enumerate(articles()):
            text = rename(article.text, copy)
            pieces.append(text)
            spans.append((copy, index, offset, offset + len(text)))
            offset += len(text) + 2
            total += len(text.split())
            if total >= words:
                break
        copy += 1
    return LongSource("\n\n".join(pieces), tuple(spans))


def summary_of_long(source: LongSource, summary_words: int = 500) -> str:
    """A ~500-word summary of a long source: renamed system summaries of articles spread evenly
    over it (one sentence group per article copy, every k-th copy)."""
    step = max(1, len(source.spans) // 8)
    chosen = []
    for copy, index, _, _ in source.spans[::step]:
        chosen.append(rename(articles()[index].summaries[copy % 16], copy))
        if sum(len(s.split()) for s in chosen) >= summary_words:
            break
    return " ".join(chosen)


def summaries_of_long(source: LongSource, count: int = 5, summary_words: int = 500) -> list[str]:
    """``count`` different ~500-word summaries of a long source: like :func:`summary_of_long`,
    the k-th starting at article copy k and taking another system's summary of each article."""
    step = max(1, len(source.spans) // 8)
    out = []
    for k in range(count):
        chosen: list[str] = []
        for copy, index, _, _ in source.spans[k::step]:
            chosen.append(rename(articles()[index].summaries[(copy + k) % 16], copy))
            if sum(len(s.split()) for s in chosen) >= summary_words:
                break
        out.append(" ".join(chosen))
    return out


@dataclass(frozen=True)
class DeepClaim:
    claim: str
    start: int  # offsets of the supporting source sentence
    end: int
    copy: int


def deep_claims(source: LongSource, count: int = 60, after: float = 0.5) -> list[DeepClaim]:
    """Claims whose support sits past ``after`` of the source, in a renamed copy: sentences of
    the renamed system summaries, each paired with the source sentence sharing most of its
    words (skipped when that sentence shares fewer than half of them: no clear support)."""
    from shared.pipeline.chunking import sentence_spans
    from shared.pipeline.retrieval import terms

    out: list[DeepClaim] = []
    cut = after * len(source.text)
    candidates = [s for s in source.spans if s[2] >= cut and s[0] > 0]
    for n, (copy, index, start, end) in enumerate(candidates):
        summary = rename(articles()[index].summaries[n % 16], copy)
        body = source.text[start:end]
        sentences = [(start + a, start + b) for a, b in sentence_spans(body)]
        for claim in re.split(r"(?<=[.!?])\s+", summary):
            words = set(terms(claim))
            if len(words) < 4:
                continue
            best = max(sentences, key=lambda s: len(words & set(terms(source.text[s[0] : s[1]]))))
            shared = len(words & set(terms(source.text[best[0] : best[1]])))
            if shared >= len(words) / 2:
                out.append(DeepClaim(claim, best[0], best[1], copy))
                break  # one claim per article copy: spread over the deep half
        if len(out) >= count:
            break
    return out
