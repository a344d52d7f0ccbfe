"""Specificity, and the one judge call ("style review") shared with non-redundancy.

``specificity = 1 - vague sentences / sentences``, the judge flagging each spaCy sentence that
says what the text is about ("the article discusses...") instead of stating the content. One call
covers all sentences and also names repeated points for non-redundancy: the summary is sent once,
and the call runs in the pipeline's first round beside question generation and claim extraction,
so it adds no sequential round.
"""

from __future__ import annotations

from typing import Any

from .. import prompts as p
from .evidence import FlaggedSentence, SpecificityEvidence


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


async def review_style(sentences: tuple[str, ...], judge: Any) -> p.StyleReview:
    """Ask the (cached, validating) judge once for vague sentences and repeated points."""
    return await judge.generate(
        p.review_style_prompt(sentences),
        p.StyleReview,
        check=lambda r: check_review(r, len(sentences)),
    )


def score_specificity(sentences: tuple[str, ...], review: p.StyleReview) -> SpecificityEvidence:
    n = len(sentences)
    flagged = [
        FlaggedSentence(index=v.index, sentence=sentences[v.index - 1], reason=v.reason.strip())
        for v in sorted(review.sentences, key=lambda v: v.index)
        if v.vague
    ]
    return SpecificityEvidence(
        score=1 - len(flagged) / n,
        reason=f"{len(flagged)}/{n} sentence(s) flagged as vague by the judge",
        sentence_count=n,
        flagged=flagged,
    )
