"""The judge calls of the two-call path (the default; docs/DESIGN.md, "How the judge is asked"):
one call per source and two per summary. The pipeline is the only caller.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .. import prompts as p
from ..core.cache_hints import cache_hint
from ..evaluation.result import ClaimEvidence, QuestionEvidence
from ..judge.wrappers import CachedJudge
from ..prompts import schemas
from .calls import (
    IDK_ANSWERS,
    SummaryJob,
    by_index,
    fits,
    indexed,
    normal,
    review_and_check,
    sized,
    source_hint,
)
from .compose import claims_step
from .steps import check_claims, check_review, review_style

# ---------------------------------------------------------------------------------------------
# The two-call path: one call per source, two per summary (docs/DESIGN.md, "How the judge is
# asked"). Every call that carries the source begins with the source's prefix
# (:func:`shared.prompts.source_prefix`) and carries its cache hint
# (:mod:`shared.core.cache_hints`).
# ---------------------------------------------------------------------------------------------


def _check_checked(reply: p.CheckedClaims) -> None:
    if any(not c.claim.strip() for c in reply.claims):
        raise ValueError("claims must be non-empty strings")


async def check_claims_at_once(job: SummaryJob) -> list[ClaimEvidence]:
    """The summary's claims extracted and each judged against the full source, in one reply.
    When that prompt exceeds the context budget: the step-by-step :func:`check_claims`
    (extraction, then retrieved passages per claim)."""
    source, summary, judge, langs = job.source, job.summary, job.judge, job.langs
    prompt = p.check_claims_prompt(source, summary, **langs)
    if not fits(prompt, job.options):
        return await check_claims(source, summary, judge, job.options, job.route, **langs)
    with cache_hint(source_hint(source)):
        reply = await judge.generate(
            prompt,
            sized(
                schemas.checked_claims_schema(schemas.max_claims(summary), claims_step(judge)),
                langs,
            ),
            check=_check_checked,
        )
    return [
        ClaimEvidence(
            claim=c.claim.strip(), verdict=c.verdict, reason=c.reason.strip(), quote=c.quote.strip()
        )
        for c in reply.claims
    ]


def _check_summary_review(reply: Any, questions: int, sentences: int) -> None:
    if questions:
        indexed(reply.answers, questions, "answer")
    if sentences:
        check_review(reply, sentences)


async def review_summary(
    summary: str,
    questions: list[QuestionEvidence],
    sentences: tuple[str, ...],
    judge: CachedJudge,
    *,
    language: str | None = None,
    source_language: str | None = None,
) -> tuple[list[QuestionEvidence], p.StyleReview | None]:
    """The summary-only call: the counted questions answered from the summary and graded
    against their reference answers, and (with ``sentences``) the style review, in one reply.
    It never sees the source. An "idk" answer is graded 0 whatever the judge said, as on the
    step-by-step path. With no counted question it is the style review alone; with neither, no
    call."""
    langs = {"language": language, "source_language": source_language}
    counted = [q for q in questions if q.counted]
    if not counted:
        review = await review_style(sentences, judge, **langs) if sentences else None
        return questions, review
    schema = sized(schemas.summary_review_schema(len(counted), len(sentences)), langs)
    reply = await judge.generate(
        p.review_summary_prompt(
            summary, [(q.question, q.reference_answer) for q in counted], sentences, **langs
        ),
        schema,
        check=lambda r: _check_summary_review(r, len(counted), len(sentences)),
    )
    graded = []
    for q, a in zip(counted, by_index(reply.answers), strict=True):
        answer = a.answer.strip()
        if normal(answer) in IDK_ANSWERS:
            update = {"grade": 0, "grade_reason": "the summary does not answer it"}
        else:
            update = {"grade": a.grade, "grade_reason": a.reason}
        graded.append(q.model_copy(update={"summary_answer": answer, **update}))
    review = (
        p.StyleReview.model_validate(
            {"sentences": reply.sentences, "repeated_points": reply.repeated_points},
            from_attributes=True,
        )
        if sentences
        else None
    )
    by_question = iter(graded)
    return [next(by_question) if q.counted else q for q in questions], review


async def two_call_calls(job: SummaryJob) -> list[Any]:
    """The claim check, the summary review and the dimensions of one summary, side by side, as
    :func:`shared.pipeline.sentences.sentence_calls`. The claim check is sent once the source's
    own call has finished (whatever its outcome), so the provider has the source's prefix cached
    when the summaries' checks arrive; the review waits for the questions and, when a judged
    dimension is asked for, spaCy's sentence split."""
    judge, options, langs = job.judge, job.options, job.langs

    async def review() -> tuple[list[QuestionEvidence], p.StyleReview | None]:
        questions = await asyncio.shield(job.questions_task)
        sentences: tuple[str, ...] = ()
        if options.dimension_settings.needs_judge:
            text = await job.parsed()
            sentences = tuple(text.sentences) if text is not None and not text.error else ()
        return await review_summary(job.summary, questions, sentences, judge, **langs)

    async def claims() -> list[ClaimEvidence]:
        await asyncio.wait([job.questions_task])
        return await check_claims_at_once(job)

    review_task = asyncio.ensure_future(review())
    return await review_and_check(review_task, claims(), job.dimensions)
