"""What the judge paths' steps share (internal to the core): the reply-shape checks, the
reply bound for the summary's languages, the context-budget test, the source's cache hint, and
asking about the source item by item (whole, or passage by passage past the budget).

The step-by-step path (:mod:`.steps`), the two-call path (:mod:`.two_call`), the sentences path
(:mod:`.sentences`) and the question flow (:mod:`.questions`) are built from these; none of them
imports another's private helpers.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import prompts as p
from ..core.cache_hints import source_key
from ..core.tokens import estimate_tokens
from ..evaluation.options import ScoreOptions
from ..judge.wrappers import CachedJudge
from ..prompts import schemas, source_prefix
from .chunking import Part
from .retrieval import TOP_PASSAGES, group_items, passage_index

MAX_CLAIMS_PER_CALL = 40
"""Claims checked in one retrieval-based call: keeps the reply (a verdict, reason and quote per
claim) well under common output limits."""

IDK_ANSWERS = frozenset({"idk", "i don't know", "i do not know", "unknown", "not mentioned", ""})
NOT_IN_SOURCE = frozenset({"not in source", "not in the source", "idk", ""})


def indexed(items: Sequence[Any], expected: int, what: str) -> None:
    """Check a reply has exactly one entry per index 1..expected (any order)."""
    indices = sorted(getattr(item, "index", None) for item in items)
    if indices != list(range(1, expected + 1)):
        raise ValueError(
            f"expected one {what} for each of indices 1..{expected}, got indices {indices}"
        )


def by_index(items: Sequence[Any]) -> list[Any]:
    return sorted(items, key=lambda item: item.index)


def sized(schema: type[Any], langs: dict[str, str | None]) -> type[Any]:
    """``schema`` with a ``max_tokens`` that fits replies in these languages (Chinese, Japanese
    and Korean need about three times the tokens of English per character:
    :func:`shared.prompts.schemas.for_languages`); the schema itself, and so its name, is
    unchanged."""
    return schemas.for_languages(schema, langs["language"], langs["source_language"])


def normal(text: str) -> str:
    return " ".join(text.lower().strip().strip(".!\"'").split())


def source_hint(source: str) -> str:
    return source_key(source_prefix(source))


@dataclass
class Route:
    """What one evaluation did with its source: ``long`` once any step chunked it."""

    long: bool = False


def fits(prompt: str, options: ScoreOptions) -> bool:
    return estimate_tokens(prompt) <= options.context_budget


async def _retrieved_groups(
    source: str, queries: Sequence[str], options: ScoreOptions, empty_prompt: str
) -> tuple[tuple[Part, ...], list[Any]]:
    """Passages per query (BM25 top :data:`TOP_PASSAGES`) packed into calls within budget."""

    def build() -> tuple[tuple[Part, ...], list[Any]]:
        passages, index = passage_index(source)
        own = [index.top(q, TOP_PASSAGES) or [0] for q in queries]
        capacity = options.context_budget - estimate_tokens(empty_prompt) - 16
        sizes = [estimate_tokens(q) + 8 for q in queries]
        # each shown passage may add a "[…]" line and a newline: count them with the passage
        groups = group_items(own, sizes, passages, capacity - 4, MAX_CLAIMS_PER_CALL)
        return passages, groups

    return await asyncio.to_thread(build)


@dataclass(frozen=True)
class SourceAsk:
    """One question put to the source item by item: its prompts (the whole source, or
    passages), its reply schema for a number of items, the reply's field holding the entries,
    and what one entry is called in a shape error."""

    full: Callable[..., str]
    """``full(source, items, language=..., source_language=...)``: the whole-source prompt."""
    excerpts: Callable[..., str]
    """``excerpts(passages, items, last, language=..., source_language=...)``."""
    schema: Callable[[int], type[Any]]
    field: str
    what: str

    async def entries(
        self, judge: CachedJudge, prompt: str, count: int, langs: dict[str, str | None]
    ) -> list[Any]:
        """The reply's ``count`` entries to ``prompt``, in item order."""
        reply = await judge.generate(
            prompt,
            sized(self.schema(count), langs),
            check=lambda r: indexed(getattr(r, self.field), count, self.what),
        )
        return by_index(getattr(reply, self.field))


VERIFY_CLAIMS = SourceAsk(
    p.verify_claims_prompt,
    p.verify_claims_excerpts_prompt,
    schemas.verdicts_schema,
    "verdicts",
    "verdict",
)
"""Each claim's verdict against the whole source, or against the passages retrieved for it past
the context budget: the step path's verification, which the sentences path uses for a long
source."""

ANSWER_USER_QUESTIONS = SourceAsk(
    p.answer_user_questions_prompt,
    p.answer_user_questions_excerpts_prompt,
    schemas.reference_answers_schema,
    "answers",
    "reference answer",
)
"""The source's answer to each of the user's own questions."""


async def ask_about_source(
    ask: SourceAsk,
    source: str,
    items: Sequence[str],
    options: ScoreOptions,
    judge: CachedJudge,
    route: Route,
    langs: dict[str, str | None],
) -> list[Any]:
    """One reply entry per item (claim or question), in item order.

    When the full-source prompt fits the budget, one call sees the whole source. Otherwise each
    item is asked against the passages most relevant to it; items sharing passages share a call;
    all calls in parallel (the same round as a full-source call)."""
    items = list(items)
    build = functools.partial(ask.excerpts, **langs)
    prompt = ask.full(source, items, **langs)
    if fits(prompt, options):
        return await ask.entries(judge, prompt, len(items), langs)
    route.long = True
    passages, groups = await _retrieved_groups(source, items, options, build([], [], None))
    last = len(passages) - 1

    async def one(group: Any) -> list[Any]:
        shown = [(j, passages[j].text) for j in group.passages]
        prompt = build(shown, [items[i] for i in group.items], last)
        return await ask.entries(judge, prompt, len(group.items), langs)

    entries: list[Any] = [None] * len(items)
    for group, reply in zip(groups, await asyncio.gather(*(one(g) for g in groups)), strict=True):
        for i, entry in zip(group.items, reply, strict=True):
            entries[i] = entry
    return entries


async def review_and_check(
    review_task: asyncio.Future[tuple[Any, Any]],
    check: Awaitable[Any],
    dimensions: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]],
    *,
    also: Sequence[asyncio.Future[Any]] = (),
) -> list[Any]:
    """A summary's sides at once: its coverage (the review's first part), its ``check`` and its
    ``dimensions`` (given the review's style part to await); each side's exception is returned
    in its place. The review task, and ``also``, are cancelled if they have not finished."""

    async def coverage() -> Any:
        return (await asyncio.shield(review_task))[0]

    async def style() -> Any:
        return (await asyncio.shield(review_task))[1]

    try:
        return await asyncio.gather(coverage(), check, dimensions(style), return_exceptions=True)
    finally:
        for task in (review_task, *also):
            if not task.done():
                task.cancel()


@dataclass(frozen=True)
class SummaryJob:
    """What one summary's judge calls are given, on every path that calls per summary
    (:func:`shared.pipeline.sentences.sentence_calls`, :func:`shared.pipeline.two_call.
    two_call_calls`): ``parsed`` awaits the row's spaCy analysis (None without one),
    ``dimensions(style)`` computes the dimensions with the review's style part, ``langs`` the
    summary's and the source's languages."""

    source: str
    summary: str
    judge: CachedJudge
    options: ScoreOptions
    route: Route
    questions_task: asyncio.Future[Any]
    parsed: Callable[[], Awaitable[Any]]
    dimensions: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
    langs: dict[str, str | None]
