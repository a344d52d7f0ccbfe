"""The judge calls of the sentences path (the default; docs/DESIGN.md, "How the judge is
asked"): the per-source call is the two-call path's (:func:`.questions.source_questions`); per
summary, the sentence check and the pointed review (:mod:`shared.prompts.pointing`). The
pipeline is the only caller.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import Any

from .. import prompts as p
from ..core.cache_hints import cache_hint, source_key
from ..evaluation.result import ClaimEvidence, QuestionEvidence
from ..judge.wrappers import CachedJudge, base_judge
from ..prompts.pointing import SENTENCE_STEP, pointed_review_schema, sentence_checks_schema
from .calls import (
    VERIFY_CLAIMS,
    SummaryJob,
    ask_about_source,
    fits,
    review_and_check,
    sized,
)

NO_POINTER_REASON = "no summary sentence answers it"
"""The grade reason of a question the judge pointed at no sentence for (grade 0)."""


def sentence_step(judge: object) -> int:
    """:data:`~shared.prompts.pointing.SENTENCE_STEP` for a judge whose provider keys its prompt
    cache on the response schema too (hosted: OpenAI), so a source's checks share one schema;
    1 (the exact positional list) for a judge that says its server does not
    (``caches_schema = False``: an :class:`~shared.OpenAIJudge` on a local server)."""
    return SENTENCE_STEP if getattr(base_judge(judge), "caches_schema", True) else 1


# ---------------------------------------------------------------------------------------------
# The first check of a source goes out alone
# ---------------------------------------------------------------------------------------------

_FIRST_CHECKS: weakref.WeakKeyDictionary[Any, dict[str, asyncio.Future[None]]] = (
    weakref.WeakKeyDictionary()
)


async def after_first_check(judge: CachedJudge, key: str, call: Any) -> Any:
    """Run ``call()`` (a sentence check of the source ``key``); the first of a source's checks
    in this judge's loop goes out at once and the others wait until it has finished, whatever
    its outcome, so that a provider caching by prefix finds the source cached for them."""
    loop = asyncio.get_running_loop()
    gates = _FIRST_CHECKS.setdefault(judge, {})
    gate = gates.get(key)
    if gate is not None and gate.get_loop() is loop:
        await asyncio.wait([gate])
        return await call()
    gate = loop.create_future()
    gates[key] = gate
    try:
        return await call()
    finally:
        if not gate.done():
            gate.set_result(None)


# ---------------------------------------------------------------------------------------------
# The sentence check
# ---------------------------------------------------------------------------------------------


def _check_sentences(reply: Any, count: int) -> None:
    indices = [s.index for s in reply.sentences]
    if indices != list(range(1, count + 1)):
        raise ValueError(
            f"expected one entry for each of sentences 1..{count} in order, got indices {indices}"
        )
    for s in reply.sentences:
        if s.verdict != "supported" and not (_says(s.span) and _says(s.reason)):
            raise ValueError(
                f"sentence {s.index} is unsupported: it needs a span (the wrong words, copied "
                "from the sentence) and a reason in words"
            )


def _says(text: str) -> bool:
    """Whether a reply's text holds a word or a number: "..." or "-" says nothing (a small model
    copies a format's placeholder), and an unexplained flag is no evidence."""
    return any(ch.isalnum() for ch in text)


def _verdict(error_type: str, quote: str) -> str:
    """The claims paths' verdict of an unsupported sentence: ``not_in_source`` when the source
    says nothing about it (out-of-context, or no deciding quote), else ``contradicted``."""
    return "not_in_source" if error_type == "out-of-context" or not quote else "contradicted"


def sentence_evidence(sentences: Sequence[str], entries: Sequence[Any]) -> list[ClaimEvidence]:
    """One :class:`ClaimEvidence` per sentence from the check's entries (in order)."""
    out = []
    for text, entry in zip(sentences, entries, strict=True):
        if entry.verdict == "supported":
            out.append(ClaimEvidence(claim=text, verdict="supported"))
            continue
        quote = entry.quote.strip()
        out.append(
            ClaimEvidence(
                claim=text,
                verdict=_verdict(entry.verdict, quote),  # type: ignore[arg-type]
                reason=entry.reason.strip(),
                quote=quote,
                error_type=entry.verdict,
                span=entry.span.strip(),
            )
        )
    return out


async def check_sentences(job: SummaryJob, sentences: Sequence[str]) -> list[ClaimEvidence]:
    """Every sentence of the summary judged against the full source, in one reply. When that
    prompt exceeds the context budget, each sentence is verified against the passages retrieved
    for it with the step path's verification (its verdicts map to ``out-of-context`` for
    ``not_in_source`` and ``other`` for ``contradicted``, without a span: docs/DESIGN.md)."""
    if not sentences:
        return []
    source, judge, langs = job.source, job.judge, job.langs
    prompt = p.check_sentences_prompt(source, sentences, **langs)
    if not fits(prompt, job.options):
        return await _check_sentences_long(job, sentences)
    count = len(sentences)
    schema = sized(sentence_checks_schema(count, sentence_step(judge)), langs)
    key = source_key(p.source_prefix(source))

    async def call() -> Any:
        with cache_hint(key):
            return await judge.generate(prompt, schema, check=lambda r: _check_sentences(r, count))

    reply = await after_first_check(judge, key, call)
    return sentence_evidence(sentences, reply.sentences)


async def _check_sentences_long(job: SummaryJob, sentences: Sequence[str]) -> list[ClaimEvidence]:
    langs = job.langs
    verdicts = await ask_about_source(
        VERIFY_CLAIMS, job.source, sentences, job.options, job.judge, job.route, langs
    )
    out = []
    for text, v in zip(sentences, verdicts, strict=True):
        if v.verdict == "supported":  # the step verification quotes every verdict: kept
            out.append(ClaimEvidence(claim=text, verdict="supported", quote=v.quote.strip()))
            continue
        kind = "out-of-context" if v.verdict == "not_in_source" else "other"
        out.append(
            ClaimEvidence(
                claim=text,
                verdict=v.verdict,
                reason=v.reason.strip(),
                quote=v.quote.strip(),
                error_type=kind,  # type: ignore[arg-type]
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# The pointed review (coverage by pointing; the style review of the same sentences)
# ---------------------------------------------------------------------------------------------


def _check_pointed(reply: Any, questions: int, sentences: int, style: bool) -> None:
    for a in reply.answers if questions else ():
        if a.sentence == 0 and a.grade != 0:
            raise ValueError(
                f"item {a.index}: grade {a.grade} needs the number of the sentence that answers "
                "it (0 means no sentence does, and then the grade is 0)"
            )
        if 1 <= a.grade <= 4 and not _says(getattr(a, "reason", "")):
            raise ValueError(f"item {a.index}: grade {a.grade} needs a reason in words")
    if style:
        for v in reply.sentences:
            if v.vague and not _says(getattr(v, "reason", "")):
                raise ValueError(f"sentence {v.index} is vague: it needs a reason in words")
        for point in reply.repeated_points:
            if len(set(point.sentences)) < 2:
                raise ValueError(f"repeated point {point.point!r} must name at least two sentences")


async def review_pointed(
    questions: list[QuestionEvidence],
    sentences: Sequence[str],
    style: bool,
    judge: CachedJudge,
    *,
    language: str | None = None,
    source_language: str | None = None,
) -> tuple[list[QuestionEvidence], p.StyleReview | None]:
    """The summary-only call of the sentences path: the counted questions graded by pointing at
    the numbered ``sentences`` and, with ``style``, the style review of the same sentences, in
    one reply. It never sees the source. The evidence a reader sees is the pointed-at sentence
    (``summary_answer``); no pointer means grade 0. Neither part: no call."""
    langs = {"language": language, "source_language": source_language}
    counted = [q for q in questions if q.counted]
    if not sentences or (not counted and not style):
        return questions, None
    schema = sized(pointed_review_schema(len(counted), len(sentences), style), langs)
    reply = await judge.generate(
        p.pointed_review_prompt(
            sentences, [(q.question, q.reference_answer) for q in counted], style, **langs
        ),
        schema,
        check=lambda r: _check_pointed(r, len(counted), len(sentences), style),
    )
    graded = []
    for q, a in zip(counted, reply.answers if counted else (), strict=True):
        answer = sentences[a.sentence - 1] if a.sentence else ""
        reason = getattr(a, "reason", "").strip() if a.sentence else NO_POINTER_REASON
        graded.append(
            q.model_copy(
                update={
                    "summary_answer": answer,
                    "sentence": a.sentence,
                    "grade": a.grade,
                    "grade_reason": reason,
                }
            )
        )
    review = None
    if style:
        review = p.StyleReview(
            sentences=[
                p.SentenceVerdict(index=s.index, vague=s.vague, reason=getattr(s, "reason", ""))
                for s in reply.sentences
            ],
            repeated_points=[
                p.RepeatedPoint(point=r.point, sentences=list(r.sentences))
                for r in reply.repeated_points
            ],
        )
    by_question = iter(graded)
    return [next(by_question) if q.counted else q for q in questions], review


# ---------------------------------------------------------------------------------------------
# One summary's calls on this path
# ---------------------------------------------------------------------------------------------


async def judge_sentences(summary: str, text: Any, settings: Any) -> tuple[tuple[str, ...], bool]:
    """The numbered sentences the judge sees, and whether the style review goes with them:
    spaCy's split when the row was parsed (the dimensions' own sentences, so the style review
    numbers the same sentences), else the offline :func:`shared.prompts.split_sentences`."""
    if text is not None and not text.error and text.sentences:
        return tuple(text.sentences), settings.needs_judge
    return p.split_sentences(summary), False


async def sentence_calls(job: SummaryJob) -> list[Any]:
    """The sentence check, the pointed review and the dimensions of one summary, side by side
    (``return_exceptions`` as on the other paths)."""
    judge, langs = job.judge, job.langs
    settings = job.options.dimension_settings

    async def split() -> tuple[tuple[str, ...], bool]:
        return await judge_sentences(job.summary, await job.parsed(), settings)

    split_task = asyncio.ensure_future(split())

    async def check() -> list[ClaimEvidence]:
        sentences, _ = await asyncio.shield(split_task)
        return await check_sentences(job, sentences)

    async def review() -> tuple[list[QuestionEvidence], p.StyleReview | None]:
        questions = await asyncio.shield(job.questions_task)
        sentences, style = await asyncio.shield(split_task)
        return await review_pointed(questions, sentences, style, judge, **langs)

    review_task = asyncio.ensure_future(review())
    return await review_and_check(review_task, check(), job.dimensions, also=(split_task,))
