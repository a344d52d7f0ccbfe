"""The reply schemas of every judge call: bounded, inlined, and built per call where counts matter.

Why bounded: a grammar-constrained server (llama.cpp's ``llama-server``, vLLM, Ollama) turns the
JSON schema into a grammar and lets the model generate anything the grammar allows. With
unbounded lists and strings a small model filled the ``claims`` list until the token limit and
every reply was cut off. Every list here has ``minItems``/``maxItems`` and every free-text
string a ``maxLength`` sized to what the prompt asks for ("one short sentence", "a few words"),
so a grammar-constrained reply ends, valid, by construction; pydantic enforces the same bounds.

Why per call: where a prompt asks for one entry per question, claim or sentence, the schema of
that call fixes the count and each entry's ``index`` (a constant per position, JSON-schema
``prefixItems``), so the count and the indices cannot mismatch. These classes are made once per
count (:func:`functools.lru_cache`) and keep the name of their generic class (``ClaimVerdicts``
…), so scripts, call counters and the stub server route on the name as before, while the
schema fingerprint (name + JSON schema) and so the cache key differ per count.

Why inlined: :meth:`ReplySchema.model_json_schema` returns the schema servers handle: no
``$ref``/``$defs`` (nested references are skipped by some grammar converters), ``required``
naming every property and ``additionalProperties: false`` on every object (OpenAI's strict
mode needs both), no titles or defaults. ``tests/test_schemas.py`` walks every schema the core
can send and fails on anything else.

:func:`reply_token_limit` turns those bounds into a ``max_tokens`` for the request, so no reply
can run on to the end of the context.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field, StringConstraints, create_model

# ---------------------------------------------------------------------------------------------
# Bounds (characters for strings, entries for lists)
# ---------------------------------------------------------------------------------------------

QUESTION_CHARS = 200
"""One question: a sentence (news sentences run 100-150 characters; a question is shorter)."""
ANSWER_CHARS = 250
"""One-sentence answers (reference or from the summary)."""
REASON_CHARS = 150
"""'One short sentence' explaining a verdict, grade or vague sentence."""
QUOTE_CHARS = 300
"""The source passage a verdict rests on: one sentence, with room for a long one."""
CHECK_QUOTE_WORDS = 25
"""The two-call claim check asks for the shortest source passage that supports or contradicts a
claim, at most this many words (the step path's verify call still asks for a whole passage)."""
CHECK_QUOTE_CHARS = 160
"""The two-call claim check's quote: :data:`CHECK_QUOTE_WORDS` words of English run about 150
characters (about 6 a word with the space); a separate bound from :data:`QUOTE_CHARS` so the step
path's schemas, and its prompt hash, stay as they are."""
CLAIM_CHARS = 200
"""'A short self-contained sentence that states exactly one fact'."""
POINT_CHARS = 100
"""A repeated point 'in a few words'."""

MAX_ITEMS = 200
"""Upper bound for the generic (count-free) classes: they are never sent for a real call with
more entries than this (the per-call classes are), but they too must be bounded."""

CLAIMS_PER_SENTENCE = 4
"""Atomic claims one summary sentence may yield (see :func:`max_claims`)."""

MAX_REPLY_TOKENS = 16_384
"""Ceiling of :func:`reply_token_limit`: the largest completion many hosted models accept (a
larger ``max_tokens`` is refused outright by some APIs)."""

Verdict = Literal["supported", "contradicted", "not_in_source"]


def _text(max_chars: int, min_chars: int = 0) -> Any:
    return Annotated[str, StringConstraints(min_length=min_chars or None, max_length=max_chars)]


# ---------------------------------------------------------------------------------------------
# Grammar-friendly JSON schema
# ---------------------------------------------------------------------------------------------


class ReplySchema(BaseModel):
    """Base of every reply schema: its JSON schema is inlined and strict (see module doc).

    Extra keys in a reply are ignored by validation (they carry nothing the core reads); the
    sent schema forbids them so that grammar-constrained servers never generate them."""

    chars_per_token: ClassVar[float] = 3
    """Characters a reply token is assumed to hold, for :func:`reply_token_limit`
    (:data:`CHARS_PER_TOKEN`; 1 for a reply in a dense script: :func:`for_languages`)."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return grammar_friendly(super().model_json_schema(*args, **kwargs))


def grammar_friendly(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (pydantic's output) with every ``$ref`` inlined, ``$defs`` dropped, every
    object closed (``additionalProperties: false``) with all its properties required, and no
    ``title``/``default`` annotations."""
    definitions = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(definitions[node["$ref"].rsplit("/", 1)[-1]])
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "title", "default"):
                continue
            if key == "properties":
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        if out.get("type") == "array" and "prefixItems" not in out:
            out.setdefault("minItems", 0)  # explicit: every list states both of its bounds
        if out.get("type") == "object" or "properties" in out:
            out["required"] = list(out.get("properties", {}))
            out["additionalProperties"] = False
        return out

    return walk(schema)


# ---------------------------------------------------------------------------------------------
# Generic classes (the routing names; every per-call class subclasses one of these)
# ---------------------------------------------------------------------------------------------


class GeneratedQuestion(ReplySchema):
    question: _text(QUESTION_CHARS, 1) = Field(
        description="An open-ended question about one main point of the source."
    )
    reference_answer: _text(ANSWER_CHARS, 1) = Field(
        description="One sentence answering it, from the source only."
    )
    importance: int = Field(ge=1, le=5, description="1 = minor detail, 5 = central point.")


class GeneratedQuestions(ReplySchema):
    questions: list[GeneratedQuestion] = Field(min_length=1, max_length=MAX_ITEMS)


class ReferenceAnswer(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the question answered.")
    reference_answer: _text(ANSWER_CHARS)


class ReferenceAnswers(ReplySchema):
    answers: list[ReferenceAnswer] = Field(min_length=1, max_length=MAX_ITEMS)


class ExtractedClaims(ReplySchema):
    claims: list[_text(CLAIM_CHARS, 1)] = Field(
        max_length=MAX_ITEMS, description="Atomic factual claims made by the summary."
    )


class ClaimVerdict(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the claim being judged.")
    verdict: Verdict
    reason: _text(REASON_CHARS) = Field(description="One short sentence explaining the verdict.")
    quote: _text(QUOTE_CHARS) = Field(
        default="", description="The source passage the verdict rests on."
    )


class ClaimVerdicts(ReplySchema):
    verdicts: list[ClaimVerdict] = Field(min_length=1, max_length=MAX_ITEMS)


class SummaryAnswer(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the question answered.")
    answer: _text(ANSWER_CHARS) = Field(description='The answer from the summary alone, or "idk".')


class SummaryAnswers(ReplySchema):
    answers: list[SummaryAnswer] = Field(min_length=1, max_length=MAX_ITEMS)


class AnswerGrade(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the question graded.")
    grade: int = Field(ge=0, le=5, description="0 = wrong or missing, 5 = fully equivalent.")
    reason: _text(REASON_CHARS) = Field(default="", description="One short sentence.")


class AnswerGrades(ReplySchema):
    grades: list[AnswerGrade] = Field(min_length=1, max_length=MAX_ITEMS)


class SentenceVerdict(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the sentence judged.")
    vague: bool = Field(description="True if it says what the text is about instead of the facts.")
    reason: _text(REASON_CHARS) = Field(
        default="", description="One short sentence; required when vague."
    )


class RepeatedPoint(ReplySchema):
    point: _text(POINT_CHARS, 1) = Field(description="The repeated point, in a few words.")
    sentences: list[Annotated[int, Field(ge=1, le=MAX_ITEMS)]] = Field(
        min_length=2,
        max_length=MAX_ITEMS,
        description="Numbers of every sentence stating it (at least 2).",
    )


class StyleReview(ReplySchema):
    sentences: list[SentenceVerdict] = Field(min_length=1, max_length=MAX_ITEMS)
    repeated_points: list[RepeatedPoint] = Field(default_factory=list, max_length=MAX_ITEMS)


# The two-call path (docs/DESIGN.md, "How the judge is asked"): claims extracted and checked in
# one reply; the source's questions answered from the summary and graded, with the style review,
# in one reply.


class CheckedClaim(ReplySchema):
    """One claim of the two-call check. The verdict comes before the reason, so the reason
    justifies a verdict already given and is asked for only where a reader needs it (an
    unsupported claim); the quote is the shortest passage that decides the verdict. Both keep the
    reply short: completion tokens are most of a hosted judge's bill and of a local one's time."""

    claim: _text(CLAIM_CHARS, 1) = Field(description="One atomic factual claim of the summary.")
    verdict: Verdict
    reason: _text(REASON_CHARS) = Field(description="One short sentence; empty if supported.")
    quote: _text(CHECK_QUOTE_CHARS) = Field(
        default="",
        description=f"The shortest deciding source passage, <= {CHECK_QUOTE_WORDS} words.",
    )


class CheckedClaims(ReplySchema):
    claims: list[CheckedClaim] = Field(max_length=MAX_ITEMS)


class GradedAnswer(ReplySchema):
    index: int = Field(ge=1, le=MAX_ITEMS, description="The number of the question answered.")
    answer: _text(ANSWER_CHARS) = Field(description='The answer from the summary alone, or "idk".')
    grade: int = Field(ge=0, le=5, description="0 = wrong or missing, 5 = fully equivalent.")
    reason: _text(REASON_CHARS) = Field(default="", description="One short sentence; empty for 5.")


class SummaryReview(ReplySchema):
    answers: list[GradedAnswer] = Field(default_factory=list, max_length=MAX_ITEMS)
    sentences: list[SentenceVerdict] = Field(default_factory=list, max_length=MAX_ITEMS)
    repeated_points: list[RepeatedPoint] = Field(default_factory=list, max_length=MAX_ITEMS)


# ---------------------------------------------------------------------------------------------
# Per-call classes
# ---------------------------------------------------------------------------------------------


_Schema = TypeVar("_Schema", bound=ReplySchema)


def _narrowed(base: type[_Schema], **fields: Any) -> type[_Schema]:
    """``base`` with ``fields`` bounded for one call; its name, and so the sent schema's, is
    ``base``'s."""
    return create_model(base.__name__, __base__=base, __module__=__name__, **fields)


def _positional(item: type[ReplySchema], count: int) -> Any:
    """``count`` entries of ``item``, the i-th with ``index`` fixed to i (``prefixItems``)."""
    description = item.model_fields["index"].description
    entries = tuple(
        _narrowed(item, index=(Literal[i], Field(description=description)))
        for i in range(1, count + 1)
    )
    return tuple[entries]  # type: ignore[valid-type]


def _one_per(
    count: int, what: str, base: type[_Schema], **field: type[ReplySchema]
) -> type[_Schema]:
    """``base`` whose one list ``field`` holds exactly ``count`` entries, one per ``what``, the
    i-th with ``index`` fixed to i."""
    ((name, item),) = field.items()
    return _narrowed(base, **{name: (_positional(item, _count(count, what)), ...)})


def _count(count: int, what: str) -> int:
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"a reply needs at least one {what}; got {count!r}")
    return count


@functools.lru_cache(maxsize=256)
def questions_schema(at_most: int) -> type[GeneratedQuestions]:
    """1 to ``at_most`` questions: the prompt asks for ``at_most`` and allows fewer when the
    source (or part) has fewer distinct points."""
    _count(at_most, "question")
    return _narrowed(
        GeneratedQuestions,
        questions=(list[GeneratedQuestion], Field(min_length=1, max_length=at_most)),
    )


@functools.lru_cache(maxsize=256)
def reference_answers_schema(count: int) -> type[ReferenceAnswers]:
    """Exactly one reference answer per user question, indices 1..count in order."""
    return _one_per(count, "question", ReferenceAnswers, answers=ReferenceAnswer)


@functools.lru_cache(maxsize=256)
def claims_schema(at_most: int) -> type[ExtractedClaims]:
    """0 to ``at_most`` claims (see :func:`max_claims`)."""
    _count(at_most, "claim")
    return _narrowed(
        ExtractedClaims, claims=(list[_text(CLAIM_CHARS, 1)], Field(max_length=at_most))
    )


@functools.lru_cache(maxsize=256)
def verdicts_schema(count: int) -> type[ClaimVerdicts]:
    """Exactly one verdict per claim shown, indices 1..count in order."""
    return _one_per(count, "claim", ClaimVerdicts, verdicts=ClaimVerdict)


@functools.lru_cache(maxsize=256)
def summary_answers_schema(count: int) -> type[SummaryAnswers]:
    """Exactly one answer per question, indices 1..count in order."""
    return _one_per(count, "question", SummaryAnswers, answers=SummaryAnswer)


@functools.lru_cache(maxsize=256)
def grades_schema(count: int) -> type[AnswerGrades]:
    """Exactly one grade per item, indices 1..count in order."""
    return _one_per(count, "item", AnswerGrades, grades=AnswerGrade)


@functools.lru_cache(maxsize=256)
def style_review_schema(sentence_count: int) -> type[StyleReview]:
    """Exactly one verdict per sentence (indices fixed); repeated points name 2..count sentence
    numbers within 1..count, and there are at most count - 1 of them (with one sentence there is
    nothing to repeat; a chain of restatements needs one more sentence than points)."""
    n = _count(sentence_count, "sentence")
    point = _narrowed(
        RepeatedPoint,
        sentences=(
            list[Annotated[int, Field(ge=1, le=n)]],
            Field(
                min_length=2,
                max_length=max(2, n),
                description=RepeatedPoint.model_fields["sentences"].description,
            ),
        ),
    )
    return _narrowed(
        StyleReview,
        sentences=(_positional(SentenceVerdict, n), ...),
        repeated_points=(list[point], Field(default_factory=list, max_length=n - 1)),
    )


CLAIMS_STEP = 16
"""The claim bound of a two-call check is :func:`max_claims` rounded up to a multiple of this, so
the summaries of one source (mostly of similar length) are sent one and the same schema: OpenAI
places the response schema before the prompt in its cache key, so a schema per summary would
end every shared prefix at the schema. A judge whose server keeps the schema out of its prompt
cache (llama.cpp's grammar, vLLM's guided decoding: a local server) gets the exact bound
(step 1): a small model fills a list to its bound, so the rounding would cost it up to 15 more
claims of reply per summary for nothing."""


@functools.lru_cache(maxsize=256, typed=True)  # typed: step=True is refused, not read as 1
def checked_claims_schema(at_most: int, step: int = CLAIMS_STEP) -> type[CheckedClaims]:
    """0 to ``at_most`` checked claims, ``at_most`` rounded up to a multiple of ``step``
    (at most :data:`MAX_ITEMS`)."""
    _count(at_most, "claim")
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise ValueError(f"step must be a positive int, got {step!r}")
    bound = min(MAX_ITEMS, -(-at_most // step) * step)
    return _narrowed(CheckedClaims, claims=(list[CheckedClaim], Field(max_length=bound)))


@functools.lru_cache(maxsize=256)
def summary_review_schema(question_count: int, sentence_count: int) -> type[ReplySchema]:
    """Exactly one graded answer per question (indices 1..question_count) and, when
    ``sentence_count`` > 0, the style review of :func:`style_review_schema`; a part with count 0
    is left out of the schema (and the prompt)."""
    if question_count < 0 or sentence_count < 0 or question_count + sentence_count == 0:
        raise ValueError("a summary review needs questions or sentences")
    fields: dict[str, Any] = {}
    if question_count:
        fields["answers"] = (_positional(GradedAnswer, question_count), ...)
    if sentence_count:
        style = style_review_schema(sentence_count)
        fields["sentences"] = (style.model_fields["sentences"].annotation, ...)
        fields["repeated_points"] = (
            style.model_fields["repeated_points"].annotation,
            Field(default_factory=list, max_length=sentence_count - 1),
        )
    # built on ReplySchema, not SummaryReview, so a part left out is not in the sent schema at all
    return create_model("SummaryReview", __base__=ReplySchema, __module__=__name__, **fields)


def per_call_rules(generic: type[BaseModel]) -> str:
    """What the per-call classes of ``generic`` look like (its factory at a sample count, and the
    claims-per-sentence rule), for the prompt hashes: a change to how calls are bounded changes
    what is sent, so it must change the signature too."""
    factory = {
        "GeneratedQuestions": questions_schema,
        "ReferenceAnswers": reference_answers_schema,
        "ExtractedClaims": claims_schema,
        "ClaimVerdicts": verdicts_schema,
        "SummaryAnswers": summary_answers_schema,
        "AnswerGrades": grades_schema,
        "StyleReview": style_review_schema,
        "CheckedClaims": checked_claims_schema,
        "SummaryReview": lambda count: summary_review_schema(count, count),
    }.get(generic.__name__)
    if factory is None:
        return ""
    sample = json.dumps(factory(2).model_json_schema(), sort_keys=True)
    rule = (
        f"claims/sentence={CLAIMS_PER_SENTENCE}"
        if factory in (claims_schema, checked_claims_schema)
        else ""
    )
    if factory is checked_claims_schema:
        rule += f"|step={CLAIMS_STEP}"
    return sample + rule


_SENTENCE_END = re.compile(r"[.!?…]+(?:[\"'”’)\]]*)(?=\s|$)|[。！？]+[”’」』）]*")
"""Sentence ends: Latin ones before a space or the end; CJK full stops anywhere (no space
follows them in Chinese or Japanese text)."""


def sentence_count(text: str) -> int:
    """Sentences in ``text`` by end punctuation (at least 1 for non-empty text); a cheap,
    deterministic count for sizing a schema, not the dimensions' spaCy split."""
    text = text.strip()
    if not text:
        return 1
    ends = len(_SENTENCE_END.findall(text))
    return max(1, ends + (0 if _SENTENCE_END.search(text[-4:]) else 1))


def max_claims(summary: str) -> int:
    """How many claims a summary may yield: :data:`CLAIMS_PER_SENTENCE` per sentence, plus 2.

    A summary sentence packs a few facts at most (who did what, a figure, a date, a cause:
    atomic-claim splits of news summaries run at two to three claims a sentence, rarely more than
    four), so four per sentence leaves room for dense sentences; the +2 covers a sentence count
    that misses an abbreviation-heavy or unpunctuated summary. The bound stops a model that keeps
    restating claims from running to its token limit, and never binds for an honest split."""
    return min(MAX_ITEMS, CLAIMS_PER_SENTENCE * sentence_count(summary) + 2)


# ---------------------------------------------------------------------------------------------
# max_tokens from the bounds
# ---------------------------------------------------------------------------------------------

CHARS_PER_TOKEN = 3
"""Conservative: English prose runs about four characters a token; JSON punctuation fewer."""


def _max_chars(node: dict[str, Any]) -> int:
    """The longest JSON text valid under ``node`` (an inlined schema), in characters, with
    every string at its ``maxLength`` (unescaped) and numbers at 6 characters."""
    if "anyOf" in node:  # one of several shapes: the longest
        return max(_max_chars(sub) for sub in node["anyOf"])
    if "const" in node:
        return len(str(node["const"])) + 2
    if "enum" in node:
        return max(len(str(v)) for v in node["enum"]) + 2
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        return 2 + sum(len(name) + 4 + _max_chars(sub) for name, sub in props.items())
    if kind == "array":
        prefix = node.get("prefixItems")
        if prefix:
            return 2 + sum(_max_chars(sub) + 2 for sub in prefix)
        return 2 + node["maxItems"] * (_max_chars(node.get("items", {})) + 2)
    if kind == "string":
        return node["maxLength"] + 2
    if kind == "boolean":
        return 5
    return 6  # integer or number


DENSE_SCRIPT_LANGUAGES = frozenset({"zh", "ja", "ko"})
"""Languages whose text runs about one character a token (Chinese, Japanese, Korean), against
about four for English: a reply in them needs three times the tokens per bounded character."""


@functools.lru_cache(maxsize=1024)
def dense_script(schema: type[ReplySchema]) -> type[ReplySchema]:
    """``schema`` for a reply in a dense script: the same name (routing, call counts) and the
    same JSON schema (what is sent), but a ``max_tokens`` at one character a token, so a valid
    reply in Chinese is not cut off by a limit sized for English."""
    namespace = {"chars_per_token": 1, "__module__": __name__, "__qualname__": schema.__qualname__}
    return type(schema.__name__, (schema,), namespace)


def for_languages(schema: type[ReplySchema], *codes: str | None) -> type[ReplySchema]:
    """``schema``, or its :func:`dense_script` variant when any of ``codes`` (the languages the
    reply's texts are in: the summary's, and the source's for quotes) is in
    :data:`DENSE_SCRIPT_LANGUAGES`."""
    languages = {c.strip().lower().replace("_", "-").split("-")[0] for c in codes if c}
    return dense_script(schema) if languages & DENSE_SCRIPT_LANGUAGES else schema


@functools.lru_cache(maxsize=1024)
def reply_token_limit(schema: type[BaseModel]) -> int | None:
    """``max_tokens`` for a reply to ``schema``: its longest valid JSON text at
    :data:`CHARS_PER_TOKEN`, plus room for whitespace, at most :data:`MAX_REPLY_TOKENS`.

    A grammar-constrained reply can never need more; an unconstrained one that does is invalid
    anyway, so it is cut off here instead of running to the end of the context. None for a
    schema that is not one of ours (another framework's, through an adapter): it has no bounds
    to derive a limit from."""
    if not (isinstance(schema, type) and issubclass(schema, ReplySchema)):
        return None
    return json_schema_token_limit(schema.model_json_schema(), schema.chars_per_token)


def json_schema_token_limit(
    json_schema: dict[str, Any], chars_per_token: float = CHARS_PER_TOKEN
) -> int:
    """:func:`reply_token_limit` of a bounded, inlined JSON schema (what a request carries)."""
    return min(MAX_REPLY_TOKENS, int(_max_chars(json_schema) // chars_per_token) + 64)
