"""The sentences path (the default; docs/DESIGN.md, "How the judge is asked"): the judge points
at numbered sentences instead of writing claims and answers out again.

Two calls per summary, as on the two-call path, but with replies that carry text only where
something is wrong:

- **The sentence check** (with the full source, after :func:`~shared.prompts.source_prefix`):
  the summary's sentences, split offline and numbered; per sentence, in order, a verdict:
  ``supported`` or one of FineSurE's error categories (Song et al., ACL 2024). Only an
  unsupported sentence gets its shortest wrong span, the deciding source quote (or "") and a
  one-sentence reason.
- **The pointed review** (the summary only, never the source): per question, the grade 0-5
  against the reference answer and the number of the summary sentence that answers it (0 when
  none does); a reason only for grades 1-4. With the judged dimensions, the style review in the
  same spirit: per sentence ``vague`` true or false, a reason only for a vague one.

The lists are positional (JSON-schema ``prefixItems`` with each entry's ``index`` fixed), so a
small model cannot overfill them, and every entry is one of two shapes (``anyOf``): the short
one (``{"index": 3, "verdict": "supported"}``) has no text field at all, so a grammar-constrained
model cannot fill one. Bounds follow :mod:`shared.prompts.schemas`.

For a judge whose provider keys its prompt cache on the response schema too (OpenAI), the checks
of one source may instead share one schema (:func:`sentence_checks_schema` with ``step`` > 1:
indices bounded, not fixed; the count is checked after the reply). See
:data:`SENTENCE_STEP`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any, Literal, Union, get_args

from pydantic import Field, create_model

from .schemas import (
    CHECK_QUOTE_CHARS,
    CHECK_QUOTE_WORDS,
    MAX_ITEMS,
    REASON_CHARS,
    RepeatedPoint,
    ReplySchema,
    _count,
    _text,
    style_review_schema,
)

# ---------------------------------------------------------------------------------------------
# Error categories and bounds
# ---------------------------------------------------------------------------------------------

ErrorType = Literal[
    "out-of-context",
    "predicate",
    "entity",
    "circumstantial",
    "coreference",
    "discourse-link",
    "other",
]
"""FineSurE's factuality error categories, in its order."""

ERROR_TYPES: tuple[str, ...] = get_args(ErrorType)
"""The categories as a tuple (the reply schema's enum, the report's rows)."""

ERROR_DEFINITIONS: dict[str, str] = {
    "out-of-context": "it states facts the source does not contain (added, not contradicted)",
    "predicate": "its main verb or relation contradicts the source",
    "entity": "a person, place, organisation, number or date is wrong",
    "circumstantial": "the time, place, manner or other circumstance is wrong",
    "coreference": "a pronoun or reference points to the wrong person or thing",
    "discourse-link": "the link between statements (cause, order, contrast) is wrong",
    "other": "any other factual error",
}

SPAN_WORDS = 12
"""An unsupported sentence's wrong span: the shortest part of the summary sentence that is
wrong, at most this many words."""
SPAN_CHARS = 90
""":data:`SPAN_WORDS` words of English run about 80 characters (about 6.5 a word with the
space)."""

SENTENCE_STEP = 8
"""For a judge whose provider puts the response schema in its prompt-cache key (OpenAI), the
sentence check's bound is the sentence count rounded up to a multiple of this, with indices
bounded rather than fixed, so the summaries of one source (most of similar length) send one and
the same schema and find the source's prefix cached. A judge on a local server (its cache key is
the prompt alone) gets the exact positional list (step 1). ``benchmarks/peers.py`` measures both
(docs/PERFORMANCE.md)."""


def _index(bound: int, fixed: int | None, what: str = "sentence judged") -> Any:
    description = f"The number of the {what}."
    if fixed is not None:
        return (Literal[fixed], Field(description=description))
    return (int, Field(ge=1, le=bound, description=description))


# ---------------------------------------------------------------------------------------------
# Generic classes (routing names)
# ---------------------------------------------------------------------------------------------


class SupportedSentence(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the sentence judged.")
    verdict: Literal["supported"]


class FlaggedSentence(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the sentence judged.")
    verdict: ErrorType
    span: _text(SPAN_CHARS, 1) = Field(
        description=f"The shortest wrong part of the sentence, <= {SPAN_WORDS} words."
    )
    quote: _text(CHECK_QUOTE_CHARS) = Field(
        description=f"The deciding source passage, <= {CHECK_QUOTE_WORDS} words; empty if none."
    )
    reason: _text(REASON_CHARS, 1) = Field(description="One short sentence.")


class SentenceChecks(ReplySchema):
    sentences: list[Union[SupportedSentence, FlaggedSentence]] = Field(  # noqa: UP007
        min_length=1, max_length=MAX_ITEMS
    )


class PointedGrade(ReplySchema):
    """A grade needing no reason: 0 (not answered, or wrong) or 5 (equivalent). The answering
    sentence comes before the grade: the judge finds it, then grades it."""

    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the question graded.")
    sentence: int = Field(ge=0, le=MAX_ITEMS, description="The answering sentence; 0 if none.")
    grade: Literal[0, 5]


class ReasonedGrade(ReplySchema):
    """A partial grade (1-4), with its one-sentence reason."""

    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the question graded.")
    sentence: int = Field(ge=0, le=MAX_ITEMS, description="The answering sentence; 0 if none.")
    grade: Literal[1, 2, 3, 4]
    reason: _text(REASON_CHARS, 1) = Field(description="One short sentence.")


class PlainSentence(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the sentence judged.")
    vague: Literal[False]


class VagueSentence(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the sentence judged.")
    vague: Literal[True]
    reason: _text(REASON_CHARS, 1) = Field(description="One short sentence.")


class PointedReview(ReplySchema):
    answers: list[Union[PointedGrade, ReasonedGrade]] = Field(  # noqa: UP007
        default_factory=list, max_length=MAX_ITEMS
    )
    sentences: list[Union[PlainSentence, VagueSentence]] = Field(  # noqa: UP007
        default_factory=list, max_length=MAX_ITEMS
    )
    repeated_points: list[RepeatedPoint] = Field(default_factory=list, max_length=MAX_ITEMS)


# ---------------------------------------------------------------------------------------------
# Per-call classes
# ---------------------------------------------------------------------------------------------


def _variants(
    kinds: Sequence[type[ReplySchema]], bound: int, fixed: int | None, **extra: Any
) -> Any:
    what = kinds[0].model_fields["index"].description or "The number of the sentence judged."
    index = _index(bound, fixed, what.removeprefix("The number of the ").rstrip("."))
    made = tuple(
        create_model(kind.__name__, __base__=kind, __module__=__name__, index=index, **extra)
        for kind in kinds
    )
    return Union[made]  # noqa: UP007


def _entries(kinds: Sequence[type[ReplySchema]], count: int, **extra: Any) -> Any:
    """``count`` positional entries, each one of ``kinds`` with its ``index`` fixed."""
    return tuple[tuple(_variants(kinds, count, i, **extra) for i in range(1, count + 1))]  # type: ignore[misc]


@functools.lru_cache(maxsize=256, typed=True)
def sentence_checks_schema(count: int, step: int = 1) -> type[SentenceChecks]:
    """The sentence check's reply for a summary of ``count`` sentences. ``step`` 1: exactly one
    entry per sentence, indices fixed (positional). ``step`` > 1: 1 to ``count`` rounded up to a
    multiple of ``step`` entries with bounded indices, one schema for summaries of similar
    length (the pipeline checks the count; see :data:`SENTENCE_STEP`)."""
    _count(count, "sentence")
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise ValueError(f"step must be a positive int, got {step!r}")
    if step == 1:
        field: Any = (_entries((SupportedSentence, FlaggedSentence), count), ...)
    else:
        bound = min(MAX_ITEMS, -(-count // step) * step)
        field = (
            list[_variants((SupportedSentence, FlaggedSentence), bound, None)],
            Field(min_length=1, max_length=bound),
        )
    return create_model(
        "SentenceChecks", __base__=SentenceChecks, __module__=__name__, sentences=field
    )


@functools.lru_cache(maxsize=256)
def pointed_review_schema(questions: int, sentences: int, style: bool) -> type[ReplySchema]:
    """The pointed review: exactly one grade per question (pointers 0..``sentences``) and, with
    ``style``, one vagueness verdict per sentence and the repeated points of
    :func:`~shared.prompts.schemas.style_review_schema`. A part left out is not in the schema."""
    n = _count(sentences, "sentence")
    if questions < 0 or (questions == 0 and not style):
        raise ValueError("a pointed review needs questions or the style review")
    pointer = (int, Field(ge=0, le=n, description="The answering sentence; 0 if none."))
    fields: dict[str, Any] = {}
    if questions:
        fields["answers"] = (
            _entries((PointedGrade, ReasonedGrade), questions, sentence=pointer),
            ...,
        )
    if style:
        fields["sentences"] = (_entries((PlainSentence, VagueSentence), n), ...)
        repeated = style_review_schema(n).model_fields["repeated_points"]
        fields["repeated_points"] = (
            repeated.annotation,
            Field(default_factory=list, max_length=n - 1),
        )
    return create_model("PointedReview", __base__=ReplySchema, __module__=__name__, **fields)


def per_call_rules(generic: type[ReplySchema]) -> str:
    """What the per-call classes of ``generic`` look like, for the prompt hashes."""
    if generic is SentenceChecks:
        exact = sentence_checks_schema(2).model_json_schema()
        shared = sentence_checks_schema(2, SENTENCE_STEP).model_json_schema()
        return json.dumps([exact, shared], sort_keys=True) + f"|step={SENTENCE_STEP}"
    if generic is PointedReview:
        return json.dumps(pointed_review_schema(2, 2, True).model_json_schema(), sort_keys=True)
    return ""


# ---------------------------------------------------------------------------------------------
# Sentence split (offline, framework-free)
# ---------------------------------------------------------------------------------------------

_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|Gen|Col|Lt|Sgt|Capt|Gov|Sen|Rep|Rev|Hon|No|vs|etc|"
    r"e\.g|i\.e|Inc|Ltd|Co|Corp|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)|\b[A-Z])\.$"
)
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-ÖØ-Þ])|(?<=[。！？])")


def split_rules() -> str:
    """The split's rules as text, for the prompt hash (a change to the split renumbers what
    the judge sees, so it must change the signature)."""
    return _ABBREVIATION.pattern + "|" + _BOUNDARY.pattern


def split_sentences(text: str) -> tuple[str, ...]:
    """``text``'s sentences by end punctuation followed by a capital or a digit, not after a
    common abbreviation or an initial ("Dr.", "U.S."); CJK full stops end a sentence anywhere.
    The judge's numbering when the row has no spaCy parse (the pipeline uses spaCy's split when
    it has one)."""
    text = " ".join(text.split())
    if not text:
        return ()
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        head = text[start : match.start()].rstrip("\"'”’)]")
        if _ABBREVIATION.search(head):
            continue
        piece = text[start : match.end()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The tasks' texts (the templates are built in shared/prompts/templates.py)
# ---------------------------------------------------------------------------------------------

_CATEGORY_LINES = "".join(f'- "{name}": {text};\n' for name, text in ERROR_DEFINITIONS.items())

CHECK_SENTENCES_TASK = (
    """Check each numbered sentence of the summary below against the source, in order, one entry
per sentence. A sentence is "supported" if the source states everything it says or it follows
directly from the source. Otherwise give the category of its first error:
"""
    + _CATEGORY_LINES
    + f"""For a supported sentence write nothing else. For any other, give the shortest wrong span of the
sentence (at most {SPAN_WORDS} words, copied from it), the source passage that decides it (at most
{CHECK_QUOTE_WORDS} words, copied; empty if the source says nothing about it) and a one-sentence
reason."""
)

CHECK_SENTENCES_REPLY = (
    "Reply with JSON in this shape, where <...> describes what goes in its place, one entry per "
    "sentence, in order:\n"
    '{{"sentences": [<for a supported sentence:> {{"index": <its number>, "verdict": '
    '"supported"}}, <for any other:> {{"index": <its number>, "verdict": <its category>, '
    '"span": <the wrong words, copied from the sentence>, "quote": <the deciding source words, '
    'copied, or "">, "reason": <one sentence: what is wrong>}}]}}\n'
)

POINTED_COVERAGE_TASK = """Each numbered item is a JSON object with a "question" about the text the summary summarises and
its "reference" answer. For each item, find the summary sentence that answers the question and
grade how much of the reference's information it conveys correctly:
5 = equivalent; 4 = nearly all, minor detail missing; 3 = the main point with notable gaps;
2 = partly right; 1 = barely related; 0 = wrong, contradictory or missing.
Give the number of that sentence, or 0 if no sentence answers it (then the grade is 0). Never
take the answer from the reference: it is there only for grading. Write a one-sentence reason
only for grades 1 to 4."""

POINTED_STYLE_TASK = """Vagueness. For each sentence, decide whether it is vague: it tells the reader what the text is
about or what its author does ("the article discusses the reasons for...", "the author
describes...") instead of stating the facts, names, figures or outcomes themselves. A sentence
that states concrete content is not vague, however short. Write a one-sentence reason only for a
vague sentence.

Repetition. List every point the summary states more than once without need: the same fact or
idea restated, in the same or in other words. For each, name the point in a few words and give the
numbers of all the sentences that state it (at least two). List nothing if no point is repeated."""

POINTED_ANSWERS_REPLY = (
    '"answers": [<one entry per item:> {{"index": <the item\'s number>, "sentence": <the '
    'number of the sentence that answers it, or 0>, "grade": <0 to 5>, "reason": <one sentence, '
    "only for grades 1 to 4>}}]"
)
POINTED_STYLE_REPLY = (
    '"sentences": [<one entry per sentence:> {{"index": <its number>, "vague": <true or false>, '
    '"reason": <one sentence, only when vague>}}], '
    '"repeated_points": [<one entry per repeated point, or none:> {{"point": <a few words>, '
    '"sentences": <the numbers of all the sentences that state it>}}]'
)


__all__ = [
    "CHECK_SENTENCES_REPLY",
    "CHECK_SENTENCES_TASK",
    "ERROR_DEFINITIONS",
    "ERROR_TYPES",
    "POINTED_ANSWERS_REPLY",
    "POINTED_COVERAGE_TASK",
    "POINTED_STYLE_REPLY",
    "POINTED_STYLE_TASK",
    "SENTENCE_STEP",
    "SPAN_CHARS",
    "SPAN_WORDS",
    "ErrorType",
    "FlaggedSentence",
    "PlainSentence",
    "PointedGrade",
    "PointedReview",
    "ReasonedGrade",
    "SentenceChecks",
    "SupportedSentence",
    "VagueSentence",
    "per_call_rules",
    "pointed_review_schema",
    "sentence_checks_schema",
    "split_rules",
    "split_sentences",
]
