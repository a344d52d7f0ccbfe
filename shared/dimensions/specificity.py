"""Specificity, from the judge's style review (asked in :mod:`shared.pipeline.steps`).

``specificity = 1 - vague sentences / sentences``, the judge flagging each spaCy sentence that
says what the text is about ("the article discusses...") instead of stating the content. One call
covers all sentences and also names repeated points for non-redundancy: the summary is sent once,
and the call runs in the pipeline's first round beside question generation and claim extraction,
so it adds no sequential round.
"""

from __future__ import annotations

from .. import prompts as p
from .evidence import FlaggedSentence, SpecificityEvidence
from .spec import About, DimensionInput, declare_dimension


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


def _score(inp: DimensionInput) -> SpecificityEvidence:
    sentences = inp.analysis.sentences
    n = len(sentences)
    if inp.problem:
        return SpecificityEvidence(reason=f"not computed: {inp.problem}")
    if n == 0:
        return SpecificityEvidence(reason="not computed: the summary has no sentence to judge")
    if inp.review is not None:
        return score_specificity(sentences, inp.review)
    if inp.judge_problem:
        return SpecificityEvidence(sentence_count=n, reason=f"not computed: {inp.judge_problem}")
    return SpecificityEvidence(
        sentence_count=n, reason="not computed: specificity needs a judge (judge=None)"
    )


SPEC = declare_dimension(
    About("specificity", "judge", "spec", "1 - share of vague sentences"),
    _score,
    reads=("spacy",),
    metric_doc="1 - share of summary sentences the judge flags as vague.",
)
