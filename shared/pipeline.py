"""The scoring pipeline: one async path from (source, summary) to a SummaryEvaluation.

Call graph for one summary (three sequential judge rounds, cold cache)::

    round 1   generate questions (source only, shared)   |  extract claims  |  review style
    round 2   answer questions from the summary          |  verify claims against the full source
    round 3   grade answers against reference answers

"Review style" is the one judge call of the text-quality dimensions (vague sentences for
specificity, repeated points for non-redundancy); it waits only for spaCy's sentence split, which
runs in a worker thread while the first judge calls are in flight. The deterministic dimensions
(spaCy, NLTK, embeddings: :mod:`shared.dimensions`) need no judge; with ``judge=None`` they are
the only thing computed and the result is unscored with ``error`` starting "no judge".

A source whose prompts would exceed ``context_budget`` (estimated tokens) is chunked without
adding a round: round 1 asks every part of it for questions in parallel, round 2 checks claims
against BM25-retrieved passages (:mod:`shared.chunking`, :mod:`shared.retrieval`). Sources that
fit are scored exactly as without a budget.

Question generation depends only on the source and the options, so concurrent summaries of one
source share one call (the cached judge de-duplicates identical in-flight requests) and later
summaries hit the cache.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from . import prompts as p
from ._version import __version__
from .chunking import Part, split_parts
from .dimensions import (
    DEFAULT_SPACY_MODEL,
    DEFAULT_TARGET,
    DEFAULT_TOLERANCE,
    DIMENSIONS,
    DimensionEvidence,
    DimensionSettings,
    SummaryAnalysis,
    add_embeddings,
    analyse_spacy,
    build_evidence,
    normalise_dimensions,
    unavailable_evidence,
)
from .dimensions.nlp import TextAnalysis
from .dimensions.specificity import review_style
from .judge import CachedJudge, CacheStore, Judge, JudgeFailed, base_judge, robust_judge
from .result import ClaimEvidence, QuestionEvidence, SummaryEvaluation
from .retrieval import BM25, group_items
from .scoring import alignment_ratio, combine_scores, weighted_coverage
from .tokens import estimate_tokens

R = TypeVar("R")

DEFAULT_N = 10
"""Ten questions: enough that one missed minor point moves coverage by a few points rather than
a fifth (DeepEval's default of 5), few enough that answers and grades for all of them still fit
in one short call each. The number of judge calls does not depend on ``n``."""

DEFAULT_CONTEXT_BUDGET = 16_000
"""Largest prompt the core sends, in estimated tokens (:mod:`shared.tokens`, which overshoots
real o200k counts on English by about a fifth). A source whose full-source prompts fit is scored
exactly as if there were no budget; a longer one is read part by part for questions and checked
claim by claim against retrieved passages. 16k leaves room under every current 32k+ context
window for the reply, and keeps the number of parts (parallel calls) of a 100,000-word source
near ten."""

MIN_CONTEXT_BUDGET = 2_000
"""Below this the fixed instructions and one retrieved passage would not leave room to work."""

PASSAGE_TOKENS = 300
"""Retrieval unit for claim checks on long sources: a few sentences, so a claim's evidence is
shown with its immediate context without spending the budget on unrelated text."""

TOP_PASSAGES = 3
"""Passages retrieved per claim (or user question). Measured on the benchmark's constructed
case (docs/PERFORMANCE.md): the supporting sentence is in the top 3 far more often than in the
top 1, and three passages of 300 tokens per claim keep a 25-claim summary within two calls."""

MAX_CLAIMS_PER_CALL = 40
"""Claims checked in one retrieval-based call: keeps the reply (a verdict, reason and quote per
claim) well under common output limits."""

DEFAULT_CONCURRENCY = 64
"""Judge calls at once: enough for the rounds of 20 summaries scored together to go out at once
(first round: questions + 20 claims + 20 style calls = 41; second: 20 answers + 20 checks), as
DeepEval's 20 concurrent test cases do. At 32 the calls over the limit waited a whole round and
their replies landed on the last round's: measured 0.77x DeepEval's wall time, 0.75x at 64
(docs/PERFORMANCE.md). Lower it for rate-limited APIs."""

IDK_ANSWERS = frozenset({"idk", "i don't know", "i do not know", "unknown", "not mentioned", ""})
NOT_IN_SOURCE = frozenset({"not in source", "not in the source", "idk", ""})

NO_JUDGE = (
    "no judge: alignment, coverage and the score need a judge (judge=None); "
    "only the deterministic dimensions were computed"
)


@dataclass(frozen=True)
class UserQuestion:
    """A question supplied by the user; only its reference answer is generated."""

    question: str
    importance: int = 3


@dataclass(frozen=True)
class ScoreOptions:
    """Options of :func:`ascore_summary` (passed as keyword arguments)."""

    n: int = DEFAULT_N
    questions: tuple[UserQuestion, ...] | None = None
    beta: float = 1.0
    combine: Literal["fbeta", "min"] = "fbeta"
    retries: int = 2
    cache: bool | str | Path | CacheStore = field(default=True, compare=False)
    concurrency: int = DEFAULT_CONCURRENCY
    """Judge calls in flight at once per judge. 32: twenty summaries' first round (three calls
    each) goes out in about two waves; DeepEval's evaluate() runs 20 cases with up to three calls
    each at once, Ragas 16 workers."""
    dimensions: tuple[str, ...] = DIMENSIONS
    """Text-quality dimensions to compute (any of :data:`shared.dimensions.DIMENSIONS`); empty =
    none. They are reported beside the score and never enter it."""
    embedder: Any = field(default=None, compare=False)
    """An object with ``embed(texts) -> vectors``; None = all-MiniLM-L6-v2, loaded once."""
    spacy_model: str = DEFAULT_SPACY_MODEL
    density_target: float = DEFAULT_TARGET
    density_tolerance: float = DEFAULT_TOLERANCE
    coherence_formula: str = "entity_grid"
    """"entity_grid" (default; tracks human coherence on SummEval, docs/VALIDITY.md) or
    "article" (the article's mean cosine of sentence embeddings i and i+2, kept for parity)."""
    context_budget: int = DEFAULT_CONTEXT_BUDGET
    """Largest prompt in estimated tokens; longer sources are chunked (see
    :data:`DEFAULT_CONTEXT_BUDGET`). In the signature only of results where chunking applied."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimensions", normalise_dimensions(self.dimensions))
        object.__setattr__(
            self,
            "_dimension_settings",
            DimensionSettings(
                dimensions=self.dimensions,
                spacy_model=self.spacy_model,
                embedder=self.embedder,
                density_target=self.density_target,
                density_tolerance=self.density_tolerance,
                coherence_formula=self.coherence_formula,
            ),
        )
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 1:
            raise ValueError(f"n must be a positive integer, got {self.n!r}")
        if not (
            isinstance(self.beta, int | float)
            and not isinstance(self.beta, bool)
            and math.isfinite(self.beta)
            and self.beta > 0
        ):
            raise ValueError(f"beta must be a positive finite number, got {self.beta!r}")
        if (
            not isinstance(self.context_budget, int)
            or isinstance(self.context_budget, bool)
            or self.context_budget < MIN_CONTEXT_BUDGET
        ):
            raise ValueError(
                f"context_budget must be an integer >= {MIN_CONTEXT_BUDGET} (estimated tokens), "
                f"got {self.context_budget!r}"
            )
        if self.combine not in ("fbeta", "min"):
            raise ValueError(f"combine must be 'fbeta' or 'min', got {self.combine!r}")
        if self.questions is not None:
            object.__setattr__(self, "questions", _normalise_questions(self.questions))

    @property
    def dimension_settings(self) -> DimensionSettings:
        return self._dimension_settings  # type: ignore[attr-defined]

    @classmethod
    def from_kwargs(cls, options: dict[str, Any]) -> ScoreOptions:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(
                f"unknown option(s) {', '.join(unknown)}; "
                f"expected some of {', '.join(sorted(known))}"
            )
        return cls(**options)


def _importance(value: object, i: int) -> int:
    """A question's importance as an int 1-5 (3.0 from JSON is fine; inf, 2.5, "high" are not)."""
    integral = isinstance(value, int) or (
        isinstance(value, float) and math.isfinite(value) and value.is_integer()
    )
    if isinstance(value, bool) or not integral:
        raise ValueError(f"questions[{i}] importance must be an integer 1-5, got {value!r}")
    if not 1 <= value <= 5:
        raise ValueError(f"questions[{i}] importance must be 1-5, got {value!r}")
    return int(value)


def _normalise_questions(questions: Iterable[Any]) -> tuple[UserQuestion, ...]:
    if isinstance(questions, str):
        raise TypeError("questions must be a list of questions, not one string")
    out: list[UserQuestion] = []
    for i, q in enumerate(questions):
        if isinstance(q, UserQuestion):
            item = q
        elif isinstance(q, str):
            item = UserQuestion(q)
        elif isinstance(q, dict) and isinstance(q.get("question"), str):
            item = UserQuestion(q["question"], _importance(q.get("importance", 3), i))
        else:
            raise TypeError(f"questions[{i}] must be a string or {{'question', 'importance'}}")
        if not item.question.strip():
            raise ValueError(f"questions[{i}] is empty")
        if not 1 <= item.importance <= 5:
            raise ValueError(f"questions[{i}] importance must be 1-5, got {item.importance}")
        out.append(item)
    if not out:
        raise ValueError("questions is empty; pass None to generate questions from the source")
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------------------------


def normalise_source(source: object) -> str:
    """A string, or a list of strings (Ragas's ``reference_contexts``) joined by blank lines."""
    if isinstance(source, str):
        text = source
    elif isinstance(source, list | tuple):
        for i, part in enumerate(source):
            if not isinstance(part, str):
                raise TypeError(f"source[{i}] must be a str, got {type(part).__name__}")
        text = "\n\n".join(part.strip() for part in source if part.strip())
    else:
        raise TypeError(f"source must be a str or a list of str, got {type(source).__name__}")
    if not text.strip():
        raise ValueError("source is empty or whitespace only: there is nothing to summarise")
    return text.strip()


def check_summary(summary: object) -> str:
    if not isinstance(summary, str):
        raise TypeError(f"summary must be a str, got {type(summary).__name__}")
    return summary.strip()


# ---------------------------------------------------------------------------------------------
# Judge wrapping, shared across calls with the same user judge
# ---------------------------------------------------------------------------------------------

_STACKS_ATTR = "_summary_eval_stacks"
_fallback_stacks: dict[tuple[int, int, str, int], CachedJudge] = {}
_stacks_lock = threading.Lock()


def prepare_judge(judge: Judge | None, options: ScoreOptions) -> CachedJudge | None:
    """The robust wrapper around ``judge``; the same one for every call with the same judge.

    Reusing it is what lets separate ``ascore_summary`` calls on one source share the question
    generation. A judge the user already wrapped with :func:`robust_judge` is used as is.
    ``None`` (no judge: deterministic dimensions only) stays None.
    """
    if judge is None:
        return None
    if isinstance(judge, CachedJudge):
        return judge
    if not callable(getattr(judge, "generate", None)):
        raise TypeError(f"judge must have an async generate(prompt, schema); got {judge!r}")
    cache = options.cache
    cache_id = str(cache) if isinstance(cache, bool | str | Path) else f"store:{id(cache)}"
    key = (options.retries, cache_id, options.concurrency)
    with _stacks_lock:
        # The wrappers live on the judge object itself, so they (and their cached answers) are
        # freed with it. A judge that refuses attributes falls back to a process-wide registry.
        stacks = getattr(judge, _STACKS_ATTR, None)
        if not isinstance(stacks, dict):
            stacks = {}
            try:
                setattr(judge, _STACKS_ATTR, stacks)
            except (AttributeError, TypeError):
                stacks = None
        if stacks is None:
            fallback_key = (id(judge), *key)
            stack = _fallback_stacks.get(fallback_key)
            if stack is None or base_judge(stack) is not judge:  # an id reused after a judge died
                stack = _fallback_stacks[fallback_key] = robust_judge(
                    judge, retries=options.retries, cache=cache, concurrency=options.concurrency
                )
            return stack
        stack = stacks.get(key)
        if stack is None:
            stack = stacks[key] = robust_judge(
                judge, retries=options.retries, cache=cache, concurrency=options.concurrency
            )
    return stack


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


@functools.lru_cache(maxsize=4)
def _passage_index(source: str) -> tuple[tuple[Part, ...], BM25]:
    passages = _parts(source, PASSAGE_TOKENS)
    return passages, BM25([part.text for part in passages])


def _spread(index: int, count: int) -> float:
    """Bit-reversed position of ``index`` among ``count`` parts: 0, 1/2, 1/4, 3/4, … so ties in
    importance are broken evenly across the source instead of favouring its beginning."""
    bits = max(1, (count - 1).bit_length())
    return int(f"{index:0{bits}b}"[::-1], 2) / (1 << bits)


async def chunked_questions(
    source: str, options: ScoreOptions, judge: CachedJudge
) -> list[QuestionEvidence]:
    """Questions from every part of a long source, asked in parallel (one round), merged
    deterministically: by importance, then by rank within the part, ties spread evenly over
    the source; identical questions kept once; the chosen ones listed in source order."""
    overhead = estimate_tokens(p.generate_questions_part_prompt("", 99, 99, options.n))
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
                p.generate_questions_part_prompt(part.text, i, len(parts), per_part),
                p.GeneratedQuestions,
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
        passages, index = _passage_index(source)
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
    schema: type[Any],
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
            prompt, schema, check=lambda r: _indexed(getattr(r, field), len(items), what)
        )
        return _by_index(getattr(reply, field))
    route.long = True
    passages, groups = await _retrieved_groups(source, items, options, build([], [], None))
    last = len(passages) - 1

    async def one(group: Any) -> list[Any]:
        asked = [items[i] for i in group.items]
        reply = await judge.generate(
            build([(j, passages[j].text) for j in group.passages], asked, last),
            schema,
            check=lambda r: _indexed(getattr(r, field), len(asked), what),
        )
        return _by_index(getattr(reply, field))

    entries: list[Any] = [None] * len(items)
    for group, reply in zip(groups, await asyncio.gather(*(one(g) for g in groups)), strict=True):
        for i, entry in zip(group.items, reply, strict=True):
            entries[i] = entry
    return entries


async def reference_questions(
    source: str, options: ScoreOptions, judge: CachedJudge, route: Route | None = None
) -> list[QuestionEvidence]:
    """Questions with reference answers and importances, once per (source, options).

    A source whose prompt would exceed the context budget is read part by part
    (:func:`chunked_questions`), and user questions get their reference answers from retrieved
    passages; ``route.long`` records that.
    """
    route = route if route is not None else Route()
    if options.questions is None:
        prompt = p.generate_questions_prompt(source, options.n)
        if not fits(prompt, options):
            route.long = True
            return await chunked_questions(source, options, judge)

        def check_generated(reply: p.GeneratedQuestions) -> None:
            if not 1 <= len(reply.questions) <= options.n:
                raise ValueError(f"expected 1 to {options.n} questions, got {len(reply.questions)}")
            for q in reply.questions:
                if not q.question.strip() or not q.reference_answer.strip():
                    raise ValueError("every question needs a question and a reference answer")

        generated = await judge.generate(
            prompt,
            p.GeneratedQuestions,
            check=check_generated,
        )
        return [
            QuestionEvidence(
                question=q.question.strip(),
                importance=q.importance,
                reference_answer=q.reference_answer.strip(),
            )
            for q in generated.questions
        ]

    user = options.questions
    texts = [q.question for q in user]
    answers = await _ask_about_source(
        source,
        texts,
        options,
        judge,
        route,
        p.answer_user_questions_prompt,
        p.answer_user_questions_excerpts_prompt,
        p.ReferenceAnswers,
        "answers",
        "reference answer",
    )
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
    summary: str, questions: list[QuestionEvidence], judge: CachedJudge
) -> list[QuestionEvidence]:
    """Answer the counted questions from the summary alone, then grade non-"idk" answers."""
    counted = [q for q in questions if q.counted]
    if not counted:
        return questions
    answers = await judge.generate(
        p.answer_from_summary_prompt(summary, [q.question for q in counted]),
        p.SummaryAnswers,
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
                [(q.question, q.reference_answer, q.summary_answer or "") for q in to_grade]
            ),
            p.AnswerGrades,
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
) -> list[ClaimEvidence]:
    """Extract the summary's atomic claims, then judge each against the full source, or, when
    that prompt would exceed the context budget, against the passages retrieved for it."""
    options = options if options is not None else ScoreOptions()
    route = route if route is not None else Route()

    def check_extracted(reply: p.ExtractedClaims) -> None:
        if any(not c.strip() for c in reply.claims):
            raise ValueError("claims must be non-empty strings")

    extracted = await judge.generate(
        p.extract_claims_prompt(summary), p.ExtractedClaims, check=check_extracted
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
        p.verify_claims_prompt,
        p.verify_claims_excerpts_prompt,
        p.ClaimVerdicts,
        "verdicts",
        "verdict",
    )
    return [
        ClaimEvidence(claim=c, verdict=v.verdict, reason=v.reason.strip(), quote=v.quote.strip())
        for c, v in zip(claims, verdicts, strict=True)
    ]


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


def signature(judge: object, options: ScoreOptions, *, long: bool = False) -> str:
    """``judge:<model>|n:<n>|beta:<b>|combine:<c>|prompts:<hash>|version:<v>`` (after sacrebleu).

    With user questions, ``n`` reads ``user<count>:<hash>`` so two question sets never share one.
    ``long=True`` (a result whose source was chunked) adds ``|long:<hash>|budget:<tokens>`` after
    the prompts hash: the long-source templates and the budget that shaped the parts. Results on
    sources that fit carry neither, since the budget does not change them.
    """
    model = "none" if judge is None else getattr(judge, "model_id", type(judge).__name__)
    if options.questions is None:
        n = str(options.n)
    else:
        digest = hashlib.sha256(
            "\n".join(f"{q.importance}:{q.question}" for q in options.questions).encode()
        ).hexdigest()[:6]
        n = f"user{len(options.questions)}:{digest}"
    beta = f"{options.beta:g}"
    return (
        f"judge:{model}|n:{n}|beta:{beta}|combine:{options.combine}"
        f"|prompts:{p.prompts_hash()}"
        + (f"|long:{p.long_prompts_hash()}|budget:{options.context_budget}" if long else "")
        + f"{options.dimension_settings.signature_part()}"
        f"|version:{__version__}"
    )


def _clip(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compose_reason(
    score: float,
    alignment: float,
    coverage: float,
    claims: list[ClaimEvidence],
    questions: list[QuestionEvidence],
    options: ScoreOptions,
) -> str:
    """A readable account of the score, built from the evidence alone (no LLM call)."""
    rule = (
        "min" if options.combine == "min" else ("F1" if options.beta == 1 else f"F{options.beta:g}")
    )
    parts = [
        f"Score {score:.2f} ({rule} of alignment {alignment:.2f} and coverage {coverage:.2f})."
    ]
    supported = sum(c.verdict == "supported" for c in claims)
    if not claims:
        parts.append("Alignment: the summary makes no checkable claim.")
    else:
        parts.append(f"Alignment: {supported}/{len(claims)} claims supported by the source.")
        bad = [c for c in claims if c.verdict != "supported"]
        for c in bad[:3]:
            label = "contradicted" if c.verdict == "contradicted" else "not in source"
            parts.append(f'Unsupported ({label}): "{_clip(c.claim)}" — {_clip(c.reason, 120)}')
        if len(bad) > 3:
            parts.append(f"…and {len(bad) - 3} more unsupported claim(s).")
    counted = [q for q in questions if q.counted]
    full = sum(q.grade == 5 for q in counted)
    parts.append(f"Coverage: {full}/{len(counted)} questions fully answered by the summary.")
    missed = sorted(
        (q for q in counted if (q.grade or 0) <= 2), key=lambda q: (-q.importance, q.grade or 0)
    )
    for q in missed[:3]:
        parts.append(f'Missed (importance {q.importance}, grade {q.grade}): "{_clip(q.question)}"')
    if len(missed) > 3:
        parts.append(f"…and {len(missed) - 3} more weakly covered question(s).")
    skipped = len(questions) - len(counted)
    if skipped:
        parts.append(f"{skipped} user question(s) left out: the source does not answer them.")
    return " ".join(parts)


def unscored(error: str, sig: str, **evidence: Any) -> SummaryEvaluation:
    return SummaryEvaluation(
        score=None,
        alignment=None,
        coverage=None,
        error=error,
        reason=f"Unscored: {error}",
        signature=sig,
        **evidence,
    )


async def _parse_off_loop(
    texts: Sequence[str], settings: DimensionSettings
) -> list[TextAnalysis | None]:
    """:func:`analyse_spacy` in a worker thread, or at once when no dimension needs spaCy (then
    it only returns placeholders, and a thread hop would only delay the judge calls)."""
    if settings.needs_spacy:
        return await asyncio.to_thread(analyse_spacy, texts, settings)
    return analyse_spacy(texts, settings)


async def _embed_off_loop(
    texts: Sequence[TextAnalysis | None], settings: DimensionSettings
) -> list[SummaryAnalysis]:
    """:func:`add_embeddings` in a worker thread, or at once when no dimension embeds."""
    if settings.needs_embeddings:
        return await asyncio.to_thread(add_embeddings, texts, settings)
    return add_embeddings(texts, settings)


class BatchAnalysis:
    """The CPU side of a batch, started at once in worker threads: one ``nlp.pipe`` over every
    summary, then one ``embed`` call over all their sentences. The style call of a summary waits
    only for the spaCy part (it needs the sentences), the dimensions for both."""

    def __init__(self, texts: Sequence[str], settings: DimensionSettings) -> None:
        self._spacy = asyncio.ensure_future(_parse_off_loop(texts, settings))
        self._full = asyncio.ensure_future(self._embed(settings))

    async def _embed(self, settings: DimensionSettings) -> list[SummaryAnalysis]:
        return await _embed_off_loop(await self._spacy, settings)

    async def text(self, index: int) -> TextAnalysis | None:
        return (await self._spacy)[index]

    async def analysis(self, index: int) -> SummaryAnalysis:
        return (await self._full)[index]


BATCH_WINDOW_S = 0.0
"""How long the first of several concurrent single-summary calls waits for others to join its
CPU batch: 0 = one pass of the event loop, which lets every call already scheduled join. Calls
that arrive later queue for the next batch, which starts when the running one is parsed, so no
timer is needed (a 5 ms timer measured no faster and shifted the timing of the judge calls)."""


@dataclass
class _Queued:
    text: str
    parsed: asyncio.Future[TextAnalysis | None]
    analysed: asyncio.Future[SummaryAnalysis]


def _settle(
    future: asyncio.Future[Any], value: Any = None, error: BaseException | None = None
) -> None:
    if future.done():  # its caller was cancelled
        return
    if error is not None:
        future.set_exception(error)
        future.exception()  # retrieved: a caller that stopped at the parse never awaits it
    else:
        future.set_result(value)


class SharedAnalyser:
    """The CPU side of concurrent :func:`ascore_summary` calls in one event loop, batched.

    Framework runners (``deepeval.evaluate``, ``ragas.evaluate``) score one row per call, many
    rows at once in one loop, and their calls arrive staggered. Run apart, each row's spaCy
    parse and embedding would compete for the cores in its own thread. Here two serial stages
    take whatever has queued: a spaCy stage (one ``nlp.pipe`` over the queue) and an embedding
    stage (one ``embed`` over every sentence parsed since its last call), each in one worker
    thread, so a burst of rows costs one or two batches and the embedding of one batch overlaps
    the parse of the next. The first summary waits :data:`BATCH_WINDOW_S` for company.
    Same interface as :class:`BatchAnalysis`: ``text(index)``, ``analysis(index)``.
    """

    _open: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, settings: DimensionSettings, key: Any) -> None:
        self._settings = settings
        self._key = key
        self._to_parse: list[_Queued] = []
        self._to_embed: list[tuple[_Queued, TextAnalysis | None]] = []
        self._parsing: asyncio.Task[None] | None = None
        self._embedding: asyncio.Task[None] | None = None
        self._items: dict[int, _Queued] = {}

    @classmethod
    def join(cls, summary: str, settings: DimensionSettings) -> tuple[SharedAnalyser, int]:
        """Queue ``summary`` with the analyser for these settings in this loop."""
        loop = asyncio.get_running_loop()
        # DimensionSettings compares without the embedder: key on the embedder's identity too
        key = (settings, id(settings.embedder))
        analysers = cls._open.setdefault(loop, {})
        analyser = analysers.get(key)
        if analyser is None:
            analyser = analysers[key] = cls(settings, key)
        item = _Queued(summary, loop.create_future(), loop.create_future())
        index = id(item)
        analyser._items[index] = item
        analyser._to_parse.append(item)
        if analyser._parsing is None:
            analyser._parsing = loop.create_task(analyser._parse(BATCH_WINDOW_S))
        return analyser, index

    async def _parse(self, wait: float) -> None:
        await asyncio.sleep(wait)
        while self._to_parse:
            batch, self._to_parse = self._to_parse, []
            try:
                texts = await _parse_off_loop([i.text for i in batch], self._settings)
            except Exception as exc:  # e.g. the pipeline failed to load in this thread
                for item in batch:
                    _settle(item.parsed, error=exc)
                    _settle(item.analysed, error=exc)
                continue
            for item, text in zip(batch, texts, strict=True):
                _settle(item.parsed, text)
                self._to_embed.append((item, text))
            if self._embedding is None:
                self._embedding = asyncio.get_running_loop().create_task(self._embed())
        self._parsing = None
        self._close()

    async def _embed(self) -> None:
        while self._to_embed:
            batch, self._to_embed = self._to_embed, []
            try:
                out = await _embed_off_loop([text for _, text in batch], self._settings)
            except Exception as exc:
                for item, _ in batch:
                    _settle(item.analysed, error=exc)
                continue
            for (item, _), analysis in zip(batch, out, strict=True):
                _settle(item.analysed, analysis)
        self._embedding = None
        self._close()

    def _close(self) -> None:
        """Leave the registry when idle, so the settings (and a user's embedder) are freed."""
        if self._parsing is None and self._embedding is None and not self._to_parse:
            analysers = self._open.get(asyncio.get_running_loop(), {})
            if analysers.get(self._key) is self:
                del analysers[self._key]

    async def text(self, index: int) -> TextAnalysis | None:
        return await asyncio.shield(self._items[index].parsed)

    async def analysis(self, index: int) -> SummaryAnalysis:
        try:
            return await asyncio.shield(self._items[index].analysed)
        finally:
            self._items.pop(index, None)


def _dimension_fields(evidence: DimensionEvidence) -> dict[str, Any]:
    return {**evidence.scores(), "dimension_evidence": evidence}


def _dimension_line(evidence: DimensionEvidence) -> str:
    """One sentence on the dimensions for the reason (scores, or why a dimension has none)."""
    parts = []
    for name in DIMENSIONS:
        item = getattr(evidence, name)
        if item is None:
            continue
        if item.score is None:
            parts.append(f"{name} none ({_clip(item.reason.removeprefix('not computed: '), 60)})")
        else:
            parts.append(f"{name} {item.score:.2f}")
    return f"Dimensions: {'; '.join(parts)}." if parts else ""


async def _dimensions(
    source: str,
    summary: str,
    judge: CachedJudge | None,
    settings: DimensionSettings,
    batch: BatchAnalysis | SharedAnalyser,
    index: int,
) -> DimensionEvidence:
    """The requested dimensions of one summary; never raises (failures become reasons).

    A failed style call makes specificity and non-redundancy None with the judge's error; it does
    not unscore the headline score, which does not depend on them.
    """
    try:
        text = await batch.text(index)
        sentences = text.sentences if text is not None and not text.error else ()
        review: p.StyleReview | None = None
        problem: str | None = "" if judge is None else None
        if judge is not None and settings.needs_judge and sentences:
            try:
                review = await review_style(sentences, judge)
            except Exception as exc:
                problem = _failure_text(exc)
        analysis = await batch.analysis(index)
        return build_evidence(settings, source, summary, analysis, review, problem)
    except Exception as exc:
        return unavailable_evidence(
            settings, source, f"analysis failed: {type(exc).__name__}: {exc}"
        )


async def _evaluate(
    source: str,
    summary: str,
    judge: CachedJudge | None,
    options: ScoreOptions,
    batch: BatchAnalysis | SharedAnalyser | None = None,
    index: int = 0,
) -> SummaryEvaluation:
    sig = signature(judge, options)
    settings = options.dimension_settings
    if not summary:
        return SummaryEvaluation(
            score=0.0,
            alignment=0.0,
            coverage=0.0,
            reason="Score 0.00: the summary is empty, so it covers nothing and claims nothing.",
            signature=sig,
            **_dimension_fields(unavailable_evidence(settings, source)),
        )
    if batch is None:  # a single call: share the CPU work with concurrent calls in this loop
        batch, index = SharedAnalyser.join(summary, settings)
    dimensions_side = _dimensions(source, summary, judge, settings, batch, index)
    if judge is None:
        dims = await dimensions_side
        result = unscored(NO_JUDGE, sig, **_dimension_fields(dims))
        line = _dimension_line(dims)
        return result.model_copy(update={"reason": f"{result.reason} {line}".strip()})

    route = Route()

    async def coverage_side() -> list[QuestionEvidence]:
        questions = await reference_questions(source, options, judge, route)
        return await answer_and_grade(summary, questions, judge)

    results = await asyncio.gather(
        coverage_side(),
        check_claims(source, summary, judge, options, route),
        dimensions_side,
        return_exceptions=True,
    )
    dims: DimensionEvidence = results.pop()  # type: ignore[assignment]  # never raises
    if isinstance(dims, BaseException):
        raise dims  # only cancellation gets here
    if route.long:
        sig = signature(judge, options, long=True)
    extra = _dimension_fields(dims)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        for f in failures:
            if not isinstance(f, Exception):
                raise f  # cancellation, KeyboardInterrupt: not ours to swallow
        return unscored("; ".join(_failure_text(f) for f in failures), sig, **extra)
    questions, claims = results  # type: ignore[misc]
    counted = [q for q in questions if q.counted]
    if not counted:
        return unscored(
            "coverage is undefined: the source answers none of the given questions",
            sig,
            questions=questions,
            claims=claims,
            **extra,
        )
    coverage = weighted_coverage([q.importance for q in counted], [q.grade or 0 for q in counted])
    alignment = alignment_ratio(sum(c.verdict == "supported" for c in claims), len(claims))
    score = combine_scores(alignment, coverage, beta=options.beta, combine=options.combine)
    return SummaryEvaluation(
        score=score,
        alignment=alignment,
        coverage=coverage,
        reason=" ".join(
            part
            for part in (
                compose_reason(score, alignment, coverage, claims, questions, options),
                _dimension_line(dims),
            )
            if part
        ),
        questions=questions,
        claims=claims,
        signature=sig,
        **extra,
    )


def _failure_text(exc: BaseException) -> str:
    if isinstance(exc, JudgeFailed):
        return str(exc)
    return f"judge call failed: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------


async def ascore_summary(
    source: str | Sequence[str], summary: str, *, judge: Judge | None, **options: Any
) -> SummaryEvaluation:
    """Score one summary of ``source``.

    Raises TypeError/ValueError for bad input (before any judge call), and
    :class:`~shared.dimensions.MissingSpacyModelError` when a dimension needs a spaCy pipeline
    that is not installed; judge failures give an unscored result (``score=None`` and ``error``
    set), never an exception. ``judge=None`` computes only the deterministic dimensions.
    """
    opts = ScoreOptions.from_kwargs(options)
    source_text = normalise_source(source)
    summary_text = check_summary(summary)
    if not opts.dimension_settings.available:
        await asyncio.to_thread(opts.dimension_settings.check_available)
    return await _evaluate(source_text, summary_text, prepare_judge(judge, opts), opts)


async def ascore_summaries(
    pairs: Iterable[tuple[str | Sequence[str], str]], *, judge: Judge | None, **options: Any
) -> list[SummaryEvaluation]:
    """Score many (source, summary) pairs concurrently, in input order.

    A bad pair becomes an unscored result with its reason; it never sinks the batch. Bad options
    (and a missing spaCy pipeline) still raise, since they would fail every row alike. The
    dimensions' CPU work is batched: one ``nlp.pipe`` over all summaries and one ``embed`` call
    over all their sentences, in worker threads, while the judge calls proceed.
    """
    opts = ScoreOptions.from_kwargs(options)
    if not opts.dimension_settings.available:
        await asyncio.to_thread(opts.dimension_settings.check_available)
    stack = prepare_judge(judge, opts)
    sig = signature(stack, opts)

    checked: list[tuple[str, str] | str] = []
    for pair in pairs:
        try:
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError("each item must be a (source, summary) pair")
            checked.append((normalise_source(pair[0]), check_summary(pair[1])))
        except (TypeError, ValueError) as exc:
            checked.append(f"bad input: {exc}")
    texts = [item[1] for item in checked if isinstance(item, tuple) and item[1]]
    batch = BatchAnalysis(texts, opts.dimension_settings) if texts else None

    async def one(item: tuple[str, str] | str, index: int) -> SummaryEvaluation:
        if isinstance(item, str):
            return unscored(item, sig)
        return await _evaluate(item[0], item[1], stack, opts, batch, index)

    jobs = []
    index = 0
    for item in checked:
        jobs.append(one(item, index))
        if isinstance(item, tuple) and item[1]:
            index += 1
    return list(await asyncio.gather(*jobs))


def run_sync(make: Callable[[], Awaitable[R]]) -> R:
    """Run a coroutine to completion from sync code, with or without a running loop.

    Inside a running loop (Jupyter, an async framework) it runs in a worker thread with its own
    loop, so callers never see "asyncio.run() cannot be called from a running event loop".
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(make))
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(_as_coroutine(make))
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=worker, name="summary-eval-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _as_coroutine(make: Callable[[], Awaitable[R]]) -> R:
    return await make()


def score_summary(
    source: str | Sequence[str], summary: str, *, judge: Judge | None, **options: Any
) -> SummaryEvaluation:
    """Sync wrapper of :func:`ascore_summary` (works with or without a running event loop)."""
    return run_sync(lambda: ascore_summary(source, summary, judge=judge, **options))


def score_summaries(
    pairs: Iterable[tuple[str | Sequence[str], str]], *, judge: Judge | None, **options: Any
) -> list[SummaryEvaluation]:
    """Sync wrapper of :func:`ascore_summaries`."""
    pairs = list(pairs)
    return run_sync(lambda: ascore_summaries(pairs, judge=judge, **options))


__all__ = [
    "DEFAULT_CONTEXT_BUDGET",
    "DEFAULT_N",
    "ScoreOptions",
    "UserQuestion",
    "ascore_summaries",
    "ascore_summary",
    "score_summaries",
    "score_summary",
    "signature",
]
