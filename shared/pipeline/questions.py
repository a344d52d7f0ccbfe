"""The question flow, written once for every judge path (internal to the core): a source's
weighted questions with reference answers, or the reference answers of the user's questions.

One call per source (``one_call=True``, the two-call and sentences paths: the call begins with
the source's prefix and carries its cache hint) when that prompt fits the context budget;
otherwise, and on the step-by-step path, the step prompts: the whole source when it fits, part
by part (:func:`chunked_questions`) or retrieved passages (user questions) past the budget.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Sequence
from typing import Any

from .. import prompts as p
from ..core.cache_hints import cache_hint
from ..core.tokens import estimate_tokens
from ..evaluation.options import ScoreOptions
from ..evaluation.result import QuestionEvidence
from ..judge.wrappers import CachedJudge
from ..prompts import schemas
from .calls import (
    ANSWER_USER_QUESTIONS,
    NOT_IN_SOURCE,
    Route,
    ask_about_source,
    fits,
    normal,
    sized,
    source_hint,
)
from .chunking import Part, split_parts


@functools.lru_cache(maxsize=8)
def _parts(source: str, max_tokens: int) -> tuple[Part, ...]:
    return tuple(split_parts(source, max_tokens))


def _spread(index: int, count: int) -> float:
    """Bit-reversed position of ``index`` among ``count`` parts: 0, 1/2, 1/4, 3/4, … so ties in
    importance are broken evenly across the source instead of favouring its beginning."""
    bits = max(1, (count - 1).bit_length())
    return int(f"{index:0{bits}b}"[::-1], 2) / (1 << bits)


async def chunked_questions(
    source: str, options: ScoreOptions, judge: CachedJudge, langs: dict[str, str | None]
) -> list[QuestionEvidence]:
    """Questions from every part of a long source, asked in parallel (one round), merged
    deterministically: by importance, then by rank within the part, ties spread evenly over
    the source; identical questions kept once; the chosen ones listed in source order."""
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
                sized(schemas.questions_schema(per_part), langs),
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
        key = normal(item[4].question)
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


async def source_questions(
    source: str,
    options: ScoreOptions,
    judge: CachedJudge,
    route: Route | None = None,
    *,
    one_call: bool = True,
    language: str | None = None,
    source_language: str | None = None,
) -> list[QuestionEvidence]:
    """The source's questions, once per (source, options, summary language): written in
    ``language``, they are shared only among summaries in it (the cached judge de-duplicates
    identical prompts). ``one_call``: try the per-source call first (see the module's text);
    ``route.long`` records a source read in parts or passages. Questions frozen for the
    source's text (``options.questions_file``) are used as they are."""
    route = route if route is not None else Route()
    langs = {"language": language, "source_language": source_language}
    frozen = options.questions_file.get(source) if options.questions_file is not None else None
    if frozen:  # the questions frozen for this text: no call
        return [q.evidence() for q in frozen]
    user = options.questions
    if one_call:
        if user is None:
            prompt = p.source_questions_prompt(source, options.n, **langs)
            if fits(prompt, options):
                with cache_hint(source_hint(source)):
                    return await _generated(prompt, options, judge, langs)
        else:
            texts = [q.question for q in user]
            prompt = p.source_reference_answers_prompt(source, texts, **langs)
            if fits(prompt, options):
                with cache_hint(source_hint(source)):
                    answers = await ANSWER_USER_QUESTIONS.entries(judge, prompt, len(texts), langs)
                return _user_evidence(user, answers)
    if user is None:
        prompt = p.generate_questions_prompt(source, options.n, **langs)
        if not fits(prompt, options):
            route.long = True
            return await chunked_questions(source, options, judge, langs)
        return await _generated(prompt, options, judge, langs)
    answers = await ask_about_source(
        ANSWER_USER_QUESTIONS, source, [q.question for q in user], options, judge, route, langs
    )
    return _user_evidence(user, answers)


async def reference_questions(
    source: str,
    options: ScoreOptions,
    judge: CachedJudge,
    route: Route | None = None,
    **langs: str | None,
) -> list[QuestionEvidence]:
    """The step-by-step path's questions: :func:`source_questions` without the per-source call
    (``language``, ``source_language``: as there)."""
    return await source_questions(source, options, judge, route, one_call=False, **langs)


async def _generated(
    prompt: str, options: ScoreOptions, judge: CachedJudge, langs: dict[str, str | None]
) -> list[QuestionEvidence]:
    generated = await judge.generate(
        prompt,
        sized(schemas.questions_schema(options.n), langs),
        check=functools.partial(_check_generated, n=options.n),
    )
    return _generated_evidence(generated)


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
                counted=normal(answer) not in NOT_IN_SOURCE,
            )
        )
    return out
