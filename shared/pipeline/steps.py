"""The step-by-step path's judge calls (internal to the core).

Round 1: the questions (:mod:`.questions`, shared with the other paths), claim extraction
(:func:`check_claims`) and the style review (:func:`review_style`, the one judge call of the
text-quality dimensions); round 2: answers from the summary and claim verification (against the
full source, or against BM25-retrieved passages when the full-source prompt would exceed
``context_budget``); round 3: grades. Each step checks the reply's shape (one entry per index,
non-empty fields: :mod:`.calls`) so the validating judge retries a bad one, and returns typed
evidence; no scoring here. :mod:`shared.dimensions` never sees a judge: it receives the style
review's reply.

Languages: every step takes ``language`` (the summary's, an ISO 639-1 code) and, where the
source is read, ``source_language``; the prompts then ask for everything in the summary's
language (docs/LANGUAGES.md, "Judge"). The language is part of the prompt text, so it is part of
every cache key. None, or English with an English source, sends exactly the English prompts.

The two-call path (:mod:`.two_call`) and the sentences path (:mod:`.sentences`) fall back on
these steps past the context budget.

Internal: the pipeline is its only caller; its names may change without notice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import prompts as p
from ..core.bridge import attached
from ..evaluation.options import ScoreOptions
from ..evaluation.result import ClaimEvidence, QuestionEvidence
from ..judge.wrappers import CachedJudge, Judge, base_judge, robust_judge
from ..prompts import schemas
from .calls import (
    IDK_ANSWERS,
    VERIFY_CLAIMS,
    Route,
    ask_about_source,
    by_index,
    indexed,
    normal,
    sized,
)

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
        sized(schemas.summary_answers_schema(len(counted)), langs),
        check=lambda r: indexed(r.answers, len(counted), "answer"),
    )
    answered = [
        q.model_copy(update={"summary_answer": a.answer.strip()})
        for q, a in zip(counted, by_index(answers.answers), strict=True)
    ]
    to_grade = [q for q in answered if normal(q.summary_answer or "") not in IDK_ANSWERS]
    grades: dict[int, p.AnswerGrade] = {}
    if to_grade:
        reply = await judge.generate(
            p.grade_answers_prompt(
                [(q.question, q.reference_answer, q.summary_answer or "") for q in to_grade],
                **langs,
            ),
            sized(schemas.grades_schema(len(to_grade)), langs),
            check=lambda r: indexed(r.grades, len(to_grade), "grade"),
        )
        grades = {id(q): g for q, g in zip(to_grade, by_index(reply.grades), strict=True)}
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
        sized(schemas.claims_schema(schemas.max_claims(summary)), langs),
        check=check_extracted,
    )
    claims = [c.strip() for c in extracted.claims]
    if not claims:
        return []
    verdicts = await ask_about_source(VERIFY_CLAIMS, source, claims, options, judge, route, langs)
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
        sized(schemas.style_review_schema(len(sentences)), langs),
        check=lambda r: check_review(r, len(sentences)),
    )
