"""Every judge call of an evaluation, in one place (internal to the core).

Round 1: question generation (:func:`reference_questions`, part by part for a long source:
:func:`chunked_questions`), claim extraction (:func:`check_claims`) and the style review
(:func:`review_style`, the one judge call of the text-quality dimensions); round 2: answers from
the summary and claim verification (against the full source, or against BM25-retrieved passages
when the full-source prompt would exceed ``context_budget``); round 3: grades. Each step checks
the reply's shape (one entry per index, non-empty fields) so the validating judge retries a bad
one, and returns typed evidence; no scoring here. :mod:`shared.dimensions` never sees a judge:
it receives the style review's reply.

Languages: every step takes ``language`` (the summary's, an ISO 639-1 code) and, where the
source is read, ``source_language``; the prompts then ask for everything in the summary's
language (docs/LANGUAGES.md, "Judge"). The language is part of the prompt text, so it is part of
every cache key: questions of one source are shared only among its summaries in one language
(the cached judge de-duplicates identical prompts; there is no other grouping). None, or
English with an English source, sends exactly the English prompts.

The two-call path (the default) has its own steps at the end of this module:
:func:`source_questions` (per source), :func:`check_claims_at_once` and :func:`review_summary`
(per summary); past the context budget they fall back on the step-by-step steps above.

Internal: the pipeline is its only caller; its names may change without notice.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import prompts as p
from ..core.bridge import attached
from ..core.tokens import estimate_tokens
from ..evaluation.options import ScoreOptions
from ..evaluation.result import ClaimEvidence, QuestionEvidence
from ..judge.wrappers import CachedJudge, Judge, base_judge, robust_judge
from ..prompts import schemas
from .chunking import Part, split_parts
from .retrieval import TOP_PASSAGES, group_items, passage_index

MAX_CLAIMS_PER_CALL = 40
"""Claims checked in one retrieval-based call: keeps the reply (a verdict, reason and quote per
claim) well under common output limits."""

IDK_ANSWERS = frozenset({"idk", "i don't know", "i do not know", "unknown", "not mentioned", ""})
NOT_IN_SOURCE = frozenset({"not in source", "not in the source", "idk", ""})

# ---------------------------------------------------------------------------------------------
# Judge wrapping, shared across calls with the same user judge
# ---------------------------------------------------------------------------------------------


def prepare_judge(judge: Judge | None, options: ScoreOptions) -> CachedJudge | None:
    """The robust wrapper around ``judge``; the same one for every call with the same judge.

    Reusing it is what lets separate ``ascore_summary`` calls on one source share the question
    generation. A judge the user already wrapped with :func:`robust_judge` is used as is.
    ``None`` (no judge: deterministic dimensions only) stays None. The wrappers live on the
    judge object itself (:func:`shared.adapter_kit.attached`), so they and their cached answers
    are freed with it; a judge that refuses attributes falls back to a process-wide table.
    """
    if judge is None:
        return None
    if isinstance(judge, CachedJudge):
        return judge
    if not callable(getattr(judge, "generate", None)):
        raise TypeError(f"judge must have an async generate(prompt, schema); got {judge!r}")
    cache = options.cache
    cache_id = str(cache) if isinstance(cache, bool | str | Path) else f"store:{id(cache)}"
    key = ("robust_judge", options.retries, cache_id, options.concurrency)
    return attached(
        judge,
        key,
        lambda: robust_judge(
            judge, retries=options.retries, cache=cache, concurrency=options.concurrency
        ),
        owner_of=base_judge,
    )


# ---------------------------------------------------------------------------------------------
# Steps (each returns typed evidence; no scoring here)
# ---------------------------------------------------------------------------------------------


def _indexed(items: Sequence[Any], expected: int, what: str) -> None:
    """Check a reply has exactly one entry per index 1..expected (any order)."""
    indices = sorted(getattr(item, "index", None) for item in items)
    if indices != list(range(1, expected + 1)):
        raise ValueError(
            f"expected one {what} for each of indices 1..{expected}, got indices {indices}"
        )


def _by_index(items: Sequence[Any]) -> list[Any]:
    return sorted(items, key=lambda item: item.index)


def _sized(schema: type[Any], langs: dict[str, str | None]) -> type[Any]:
    """``schema`` with a ``max_tokens`` that fits replies in these languages (Chinese, Japanese
    and Korean need about three times the tokens of English per character:
    :func:`shared.prompts.schemas.for_languages`); the schema itself, and so its name, is
    unchanged."""
    return schemas.for_languages(schema, langs["language"], langs["source_language"])


# ---------------------------------------------------------------------------------------------
# Long sources: parts for question generation, retrieved passages for claim checks
# ---------------------------------------------------------------------------------------------


@dataclass
class Route:
    """What one evaluation did with its source: ``long`` once any step chunked it."""

    long: bool = False


def fits(prompt: str, options: ScoreOptions) -> bool:
    return estimate_tokens(prompt) <= options.context_budget


@functools.lru_cache(maxsize=8)
def _parts(source: str, max_tokens: int) -> tuple[Part, ...]:
    return tuple(split_parts(source, max_tokens))


def _spread(index: int, count: int) -> float:
    """Bit-reversed position of ``index`` among ``count`` parts: 0, 1/2, 1/4, 3/4, … so ties in
    importance are broken evenly across the source instead of favouring its beginning."""
    bits = max(1, (count - 1).bit_length())
    return int(f"{index:0{bits}b}"[::-1], 2) / (1 << bits)


async def chunked_questions(
    source: str,
    options: ScoreOptions,
    judge: CachedJudge,
    *,
    language: str | None = None,
    source_language: str | None = None,
) -> list[QuestionEvidence]:
    """Questions from every part of a long source, asked in parallel (one round), merged
    deterministically: by importance, then by rank within the part, ties spread evenly over
    the source; identical questions kept once; the chosen ones listed in source order."""
    langs = {"language": language, "source_language": source_language}
    overhead = estimate_tokens(p.generate_questions_part_prompt("", 99, 99, options.n, **langs))
    parts = await asyncio.to_thread(_parts, source, options.context_budget - overhead - 16)
    per_part = min(options.n, max(2, math.ceil(2 * options.n / len(parts))))

    def check_part(reply: p.GeneratedQuestions) -> None:
        if len(reply.questions) > per_part:
            raise ValueError(f"expected at most {per_part} questions, got {len(reply.questions)}")
        for q in reply.questions:
            if not q.question.strip() or not q.reference_answer.strip():
                raise ValueError("every question needs a question and a reference answer")

    replies = await asyncio.gather(
        *(
            judge.generate(
                p.generate_questions_part_prompt(part.text, i, len(parts), per_part, **langs),
                _sized(schemas.questions_schema(per_part), langs),
                check=check_part,
            )
            for i, part in enumerate(parts, start=1)
        )
    )
    candidates = [
        (-q.importance, rank, _spread(part, len(parts)), part, q)
        for part, reply in enumerate(replies)
        for rank, q in enumerate(reply.questions)
    ]
    chosen, seen = [], set()
    for item in sorted(candidates, key=lambda c: c[:4]):
        key = _normal(item[4].question)
        if key not in seen:
            seen.add(key)
            chosen.append(item)
        if len(chosen) == options.n:
            break
    if not chosen:
        raise ValueError("no part of the source yielded a question")
    chosen.sort(key=lambda c: (c[3], c[1]))
    return [
        QuestionEvidence(
            question=q.question.strip(),
            importance=q.importance,
            reference_answer=q.reference_answer.strip(),
        )
        for *_, q in chosen
    ]


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


async def _ask_about_source(
    source: str,
    items: list[str],
    options: ScoreOptions,
    judge: CachedJudge,
    route: Route,
    full: Callable[[str, list[str]], str],
    build: Callable[[list[tuple[int, str]], list[str], int | None], str],
    schema: Callable[[int], type[Any]],
    field: str,
    what: str,
) -> list[Any]:
    """One reply entry per item (claim or question), in item order.

    When the full-source prompt fits the budget, one call sees the whole source. Otherwise each
    item is asked against the passages most relevant to it; items sharing passages share a call;
    all calls in parallel (the same round as a full-source call)."""
    prompt = full(source, items)
    if fits(prompt, options):
        reply = await judge.generate(
            prompt,
            schema(len(items)),
            check=lambda r: _indexed(getattr(r, field), len(items), what),
        )
        return _by_index(getattr(reply, field))
    route.long = True
    passages, groups = await _retrieved_groups(source, items, options, build([], [], None))
    last = len(passages) - 1

    async def one(group: Any) -> list[Any]:
        asked = [items[i] for i in group.items]
        reply = await judge.generate(
            build([(j, passages[j].text) for j in group.passages], asked, last),
            schema(len(asked)),
            check=lambda r: _indexed(getattr(r, field), len(asked), what),
        )
        return _by_index(getattr(reply, field))

    entries: list[Any] = [None] * len(items)
    for group, reply in zip(groups, await asyncio.gather(*(one(g) for g in groups)), strict=True):
        for i, entry in zip(group.items, reply, strict=True):
            entries[i] = entry
    return entries


async def reference_questions(
    source: str,
    options: ScoreOptions,
    judge: CachedJudge,
    route: Route | None = None,
    *,
    language: str | None = None,
    source_language: str | None = None,
) -> list[QuestionEvidence]:
    """Questions with reference answers and importances, once per (source, options, summary
    language): written in ``language``, they are shared only among summaries in it.

    A source whose prompt would exceed the context budget is read part by part
    (:func:`chunked_questions`), and user questions get their reference answers from retrieved
    passages; ``route.long`` records that.
    """
    route = route if route is not None else Route()
    langs = {"language": language, "source_language": source_language}
    if options.questions is None:
        prompt = p.generate_questions_prompt(source, options.n, **langs)
        if not fits(prompt, options):
            route.long = True
            return await chunked_questions(source, options, judge, **langs)

        generated = await judge.generate(
            prompt,
            _sized(schemas.questions_schema(options.n), langs),
            check=functools.partial(_check_generated, n=options.n),
        )
        return _generated_evidence(generated)

    user = options.questions
    texts = [q.question for q in user]
    answers = await _ask_about_source(
        source,
        texts,
        options,
        judge,
        route,
        functools.partial(p.answer_user_questions_prompt, **langs),
        functools.partial(p.answer_user_questions_excerpts_prompt, **langs),
        lambda count: _sized(schemas.reference_answers_schema(count), langs),
        "answers",
        "reference answer",
    )
    return _user_evidence(user, answers)


def _check_generated(reply: p.GeneratedQuestions, n: int) -> None:
    if not 1 <= len(reply.questions) <= n:
        raise ValueError(f"expected 1 to {n} questions, got {len(reply.questions)}")
    for q in reply.questions:
        if not q.question.strip() or not q.reference_answer.strip():
            raise ValueError("every question needs a question and a reference answer")


def _generated_evidence(generated: p.GeneratedQuestions) -> list[QuestionEvidence]:
    return [
        QuestionEvidence(
            question=q.question.strip(),
            importance=q.importance,
            reference_answer=q.reference_answer.strip(),
        )
        for q in generated.questions
    ]


def _user_evidence(user: Sequence[Any], answers: Sequence[Any]) -> list[QuestionEvidence]:
    out = []
    for q, a in zip(user, answers, strict=True):
        answer = a.reference_answer.strip()
        out.append(
            QuestionEvidence(
                question=q.question,
                importance=q.importance,
                reference_answer=answer,
                counted=_normal(answer) not in NOT_IN_SOURCE,
            )
        )
    return out


def _normal(text: str) -> str:
    return " ".join(text.lower().strip().strip(".!\"'").split())


async def answer_and_grade(
    summary: str,
    questions: list[QuestionEvidence],
    judge: CachedJudge,
    *,
    language: str | None = None,
    source_language: str | None = None,
) -> list[QuestionEvidence]:
    """Answer the counted questions from the summary alone, then grade non-"idk" answers;
    answers and grade reasons in ``language`` (the summary's)."""
    langs = {"language": language, "source_language": source_language}
    counted = [q for q in questions if q.counted]
    if not counted:
        return questions
    answers = await judge.generate(
        p.answer_from_summary_prompt(summary, [q.question for q in counted], **langs),
        _sized(schemas.summary_answers_schema(len(counted)), langs),
        check=lambda r: _indexed(r.answers, len(counted), "answer"),
    )
    answered = [
        q.model_copy(update={"summary_answer": a.answer.strip()})
        for q, a in zip(counted, _by_index(answers.answers), strict=True)
    ]
    to_grade = [q for q in answered if _normal(q.summary_answer or "") not in IDK_ANSWERS]
    grades: dict[int, p.AnswerGrade] = {}
    if to_grade:
        reply = await judge.generate(
            p.grade_answers_prompt(
                [(q.question, q.reference_answer, q.summary_answer or "") for q in to_grade],
                **langs,
            ),
            _sized(schemas.grades_schema(len(to_grade)), langs),
            check=lambda r: _indexed(r.grades, len(to_grade), "grade"),
        )
        grades = {id(q): g for q, g in zip(to_grade, _by_index(reply.grades), strict=True)}
    graded = [
        q.model_copy(update={"grade": grades[id(q)].grade, "grade_reason": grades[id(q)].reason})
        if id(q) in grades
        else q.model_copy(update={"grade": 0, "grade_reason": "the summary does not answer it"})
        for q in answered
    ]
    by_question = iter(graded)
    return [next(by_question) if q.counted else q for q in questions]


async def check_claims(
    source: str,
    summary: str,
    judge: CachedJudge,
    options: ScoreOptions | None = None,
    route: Route | None = None,
    *,
    language: str | None = None,
    source_language: str | None = None,
) -> list[ClaimEvidence]:
    """Extract the summary's atomic claims, then judge each against the full source, or, when
    that prompt would exceed the context budget, against the passages retrieved for it. Claims
    and reasons in ``language`` (the summary's); quotes in the source's own language."""
    options = options if options is not None else ScoreOptions()
    route = route if route is not None else Route()
    langs = {"language": language, "source_language": source_language}

    def check_extracted(reply: p.ExtractedClaims) -> None:
        if any(not c.strip() for c in reply.claims):
            raise ValueError("claims must be non-empty strings")

    extracted = await judge.generate(
        p.extract_claims_prompt(summary, **langs),
        _sized(schemas.claims_schema(schemas.max_claims(summary)), langs),
        check=check_extracted,
    )
    claims = [c.strip() for c in extracted.claims]
    if not claims:
        return []
    verdicts = await _ask_about_source(
        source,
        claims,
        options,
        judge,
        route,
        functools.partial(p.verify_claims_prompt, **langs),
        functools.partial(p.verify_claims_excerpts_prompt, **langs),
        lambda count: _sized(schemas.verdicts_schema(count), langs),
        "verdicts",
        "verdict",
    )
    return [
        ClaimEvidence(claim=c, verdict=v.verdict, reason=v.reason.strip(), quote=v.quote.strip())
        for c, v in zip(claims, verdicts, strict=True)
    ]


# ---------------------------------------------------------------------------------------------
# Style review (specificity and the judged part of non-redundancy)
# ---------------------------------------------------------------------------------------------


def check_review(reply: p.StyleReview, sentence_count: int) -> None:
    """One verdict per sentence, reasons for vague ones, valid sentence numbers in repeats."""
    indices = sorted(v.index for v in reply.sentences)
    if indices != list(range(1, sentence_count + 1)):
        raise ValueError(
            f"expected one sentence verdict for each of 1..{sentence_count}, got indices {indices}"
        )
    for v in reply.sentences:
        if v.vague and not v.reason.strip():
            raise ValueError(f"sentence {v.index} is flagged vague without a reason")
    for point in reply.repeated_points:
        numbers = set(point.sentences)
        if not numbers <= set(range(1, sentence_count + 1)):
            raise ValueError(
                f"repeated point {point.point!r} names sentences {sorted(numbers)} outside "
                f"1..{sentence_count}"
            )
        if len(numbers) < 2:
            raise ValueError(f"repeated point {point.point!r} must name at least two sentences")


async def review_style(
    sentences: tuple[str, ...],
    judge: Any,
    *,
    language: str | None = None,
    source_language: str | None = None,
) -> p.StyleReview:
    """Ask the (cached, validating) judge once for vague sentences and repeated points; reasons
    and points in ``language`` (the summary's)."""
    langs = {"language": language, "source_language": source_language}
    return await judge.generate(
        p.review_style_prompt(sentences, **langs),
        _sized(schemas.style_review_schema(len(sentences)), langs),
        check=lambda r: check_review(r, len(sentences)),
    )
