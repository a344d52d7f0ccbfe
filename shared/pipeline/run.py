"""The scoring pipeline: one async path from (source, summary) to a SummaryEvaluation.

Call graph for one summary on the default sentences path (``judge_path="sentences"``;
docs/DESIGN.md, "How the judge is asked"; :mod:`shared.pipeline.sentences`)::

    call 1 (per source, shared)   questions with importance and the source's answers
    side by side with it          the summary's numbered sentences checked against the full
                                  source (the first check of a source alone, the others after it)
    after call 1                  the questions graded by pointing at the summary's sentences,
                                  with the style review (this call never sees the source)

The two-call path (``judge_path="two-call"``) has the same shape with atomic claims extracted
and checked, and the questions answered in writing. Every call that carries the source begins
with the same bytes (:func:`shared.prompts.source_prefix`) and a cache hint
(:mod:`shared.core.cache_hints`). The dependent chain is 2 calls.

The step-by-step path (``judge_path="steps"``) makes three sequential judge rounds::

    round 1   generate questions (source only, shared)   |  extract claims  |  review style
    round 2   answer questions from the summary          |  verify claims against the full source
    round 3   grade answers against reference answers

"Review style" is the one judge call of the text-quality dimensions (vague sentences for
specificity, repeated points for non-redundancy); it waits only for spaCy's sentence split, which
runs in a worker thread while the first judge calls are in flight. The deterministic dimensions
(spaCy, NLTK, embeddings: :mod:`shared.dimensions`) need no judge; with ``judge=None`` they are
the only thing computed and the result is unscored with ``error`` starting "no judge".

A source whose prompts would exceed ``context_budget`` (estimated tokens) is chunked on either
path without adding a round: every part of it is asked for questions in parallel, and claims are
checked against BM25-retrieved passages (:mod:`shared.pipeline.chunking`,
:mod:`shared.pipeline.retrieval`).
Sources that fit are scored exactly as without a budget.

Question generation depends only on the source and the options, so concurrent summaries of one
source share one call (the cached judge de-duplicates identical in-flight requests) and later
summaries hit the cache.

With ``samples=k > 1`` the summary-dependent calls are made once per judge sample
(:mod:`shared.pipeline.sampling`: own seed, own cache keys), against the one set of questions of
round
1, and the result is the mean of the k scorings with their spread.

This module holds the orchestration and the entry points only. Its parts: the options and input
checks (:mod:`shared.evaluation.options`), every judge call (:mod:`shared.pipeline.steps`), the
reason and
signature (:mod:`shared.pipeline.compose`), the dimensions' CPU batching
(:mod:`shared.dimensions.batching`), and the sync bridge (:mod:`shared.adapter_kit`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Unpack

from ..core.bridge import run_sync
from ..core.language import LanguageEvidence, detect, resolve_languages
from ..core.scoring import alignment_ratio, combine_scores, weighted_coverage
from ..core.usage import collect_usage
from ..dimensions import DimensionEvidence, DimensionSettings, build_evidence, unavailable_evidence
from ..dimensions.batching import BatchAnalysis, SharedAnalyser
from ..dimensions.nlp import pipeline_id
from ..evaluation.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_CONTEXT_BUDGET,
    DEFAULT_N,
    ScoreOptions,
    ScoreOptionsKwargs,
    UserQuestion,
    check_summary,
    for_source,
    normalise_source,
)
from ..evaluation.result import (
    QuestionEvidence,
    SummaryEvaluation,
    count_error_types,
)
from ..judge.check import context_budget_for
from ..judge.server import ServerProbe
from ..judge.wrappers import CachedJudge, Judge, base_judge, negotiate_judge, usage_fields
from ..prompts import StyleReview
from .calls import Route, SummaryJob
from .compose import (
    NO_JUDGE,
    compose_reasons,
    dimension_fields,
    failure_text,
    signature,
    unscored,
)
from .fit import apply_fit
from .questions import source_questions
from .sampling import SharedRowAnalysis, combine_samples, sample_judges
from .sentences import sentence_calls
from .steps import answer_and_grade, check_claims, prepare_judge, review_style
from .two_call import two_call_calls


async def _dimensions(
    source: str,
    summary: str,
    judge: CachedJudge | None,
    settings: DimensionSettings,
    batch: BatchAnalysis | SharedAnalyser | SharedRowAnalysis,
    index: int,
    language: str | None = None,
    style: Callable[[], Awaitable[StyleReview | None]] | None = None,
) -> DimensionEvidence:
    """The requested dimensions of one summary; never raises (failures become reasons).

    A failed style call makes specificity and non-redundancy None with the judge's error; it does
    not unscore the headline score, which does not depend on them. ``style``: where the style
    review comes from when it is not a call of its own (the two-call path's summary review).
    """
    try:
        text = await batch.text(index)
        sentences = text.sentences if text is not None and not text.error else ()
        review: StyleReview | None = None
        problem: str | None = "" if judge is None else None
        if judge is not None and settings.needs_judge and sentences:
            try:
                review = await (
                    style()
                    if style is not None
                    else review_style(sentences, judge, language=language)
                )
            except Exception as exc:
                problem = failure_text(exc)
        analysis = await batch.analysis(index)
        source_index = None
        if "grounding" in settings.dimensions:
            try:  # one index per source, shared by its summaries in this batch
                source_index = await batch.source_index(source)
            except Exception:  # build_evidence indexes it again and reports the failure
                source_index = None
        return build_evidence(settings, source, summary, analysis, review, problem, source_index)
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
    language: LanguageEvidence | None = None,
) -> SummaryEvaluation:
    """One row, with its languages recorded in the result (and, when not English, in its
    signature). ``language``: the row's languages when the batch already resolved them."""
    if language is None:
        language = resolve_languages(source, summary, options.language)
    options = for_source(options, source)  # frozen questions: this source's, or none
    with collect_usage() as usage:  # this row's judge requests (cached answers cost none)
        result = await _evaluate_row(source, summary, judge, options, batch, index, language)
    settings = options.dimension_settings
    analysis = None
    if settings.needs_spacy and summary:
        pipeline = settings.pipeline_used(language.dimensions)
        language = language.model_copy(update={"pipeline": pipeline})
        analysis = "rules" if pipeline is None else pipeline_id(pipeline)
    return result.model_copy(
        update={
            "language": language,
            "signature": _with_language(result.signature, language, analysis),
            **usage_fields(judge, usage),
        }
    )


def judge_languages(language: LanguageEvidence) -> tuple[str, str | None]:
    """(the language the judge writes in, the source's language) for the judge steps: the
    summary's language as the dimensions resolved it (the summary's when it can be told, else
    the source's, else English), and the source's when known. English with an English or
    unknown source sends today's English prompts unchanged."""
    return language.dimensions, language.source


def _with_language(sig: str, language: LanguageEvidence, analysis: str | None) -> str:
    """The signature with ``|lang:..`` before ``|version:`` (nothing for an English row)."""
    part = language.signature_part(analysis)
    if not part:
        return sig
    head, sep, tail = sig.rpartition("|version:")
    return f"{head}{part}{sep}{tail}" if sep else sig + part


async def _evaluate_row(
    source: str,
    summary: str,
    judge: CachedJudge | None,
    options: ScoreOptions,
    batch: BatchAnalysis | SharedAnalyser | None,
    index: int,
    language: LanguageEvidence,
) -> SummaryEvaluation:
    # the judge writes in the summary's language (docs/LANGUAGES.md, "Judge"); the dimensions
    # analyse the summary as language.dimensions
    said, source_said = judge_languages(language)
    # the language block's hash only when prompts were sent with it (no judge: no prompts)
    sig = signature(
        judge,
        options,
        language=said if judge is not None else None,
        source_language=source_said if judge is not None else None,
    )
    settings = options.dimension_settings
    if not summary:
        return SummaryEvaluation(
            score=0.0,
            alignment=0.0,
            coverage=0.0,
            reason="Score 0.00: the summary is empty, so it covers nothing and claims nothing.",
            signature=sig,
            **dimension_fields(unavailable_evidence(settings, source)),
        )
    if batch is None:  # a single call: share the CPU work with concurrent calls in this loop
        batch, index = SharedAnalyser.join(summary, settings, language.dimensions)
    if judge is None:
        dims = await _dimensions(source, summary, judge, settings, batch, index, said)
        return unscored(NO_JUDGE, sig, **dimension_fields(dims))

    route = Route()  # the source-level calls' route; each scoring adds its own for claims
    questions = asyncio.ensure_future(
        source_questions(
            source,
            options,
            judge,
            route,
            one_call=options.judge_path != "steps",
            language=said,
            source_language=source_said,
        )
    )
    try:
        if options.samples == 1:
            return await _judged(
                source, summary, judge, options, batch, index, questions, route, language
            )
        shared = SharedRowAnalysis(batch, index)
        runs = await asyncio.gather(
            *(
                _judged(source, summary, sample, options, shared, index, questions, route, language)
                for sample in sample_judges(judge, options.samples)
            )
        )
        return combine_samples(runs)
    finally:
        if not questions.done():
            questions.cancel()


async def _judged(
    source: str,
    summary: str,
    judge: CachedJudge,
    options: ScoreOptions,
    batch: BatchAnalysis | SharedAnalyser | SharedRowAnalysis,
    index: int,
    questions_task: asyncio.Future[list[QuestionEvidence]],
    source_route: Route,
    language: LanguageEvidence,
) -> SummaryEvaluation:
    """One scoring of ``summary`` by ``judge`` (one sample's, with ``samples=k``), against the
    questions of ``questions_task`` (made once per source and shared by the samples).
    ``language``: the row's languages (``language.source``, ``language.summary``), for the
    judged steps."""
    said, source_said = judge_languages(language)
    sig = signature(judge, options, language=said, source_language=source_said)
    settings = options.dimension_settings
    route = Route()

    if options.judge_path in ("sentences", "two-call"):
        calls = sentence_calls if options.judge_path == "sentences" else two_call_calls
        results = await calls(
            SummaryJob(
                source=source,
                summary=summary,
                judge=judge,
                options=options,
                route=route,
                questions_task=questions_task,
                parsed=lambda: batch.text(index),
                dimensions=lambda style: _dimensions(
                    source, summary, judge, settings, batch, index, said, style=style
                ),
                langs={"language": said, "source_language": source_said},
            )
        )
    else:

        async def coverage_side() -> list[QuestionEvidence]:
            questions = await asyncio.shield(questions_task)
            return await answer_and_grade(
                summary, questions, judge, language=said, source_language=source_said
            )

        results = await asyncio.gather(
            coverage_side(),
            check_claims(
                source, summary, judge, options, route, language=said, source_language=source_said
            ),
            _dimensions(source, summary, judge, settings, batch, index, said),
            return_exceptions=True,
        )
    dims: DimensionEvidence = results.pop()  # type: ignore[assignment]  # never raises
    if isinstance(dims, BaseException):
        raise dims  # only cancellation gets here
    if route.long or source_route.long:
        sig = signature(judge, options, long=True, language=said, source_language=source_said)
    extra = dimension_fields(dims)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        for f in failures:
            if not isinstance(f, Exception):
                raise f  # cancellation, KeyboardInterrupt: not ours to swallow
        # both sides often fail for one cause (an unreachable server): say it once
        reason = "; ".join(dict.fromkeys(failure_text(f) for f in failures))
        return unscored(reason, sig, **extra)
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
    reason, detail = compose_reasons(score, alignment, coverage, claims, questions, options, dims)
    return SummaryEvaluation(
        score=score,
        alignment=alignment,
        coverage=coverage,
        reason=reason,
        reason_detail=detail,
        questions=questions,
        claims=claims,
        error_types=count_error_types(claims) if options.judge_path == "sentences" else None,
        signature=sig,
        **extra,
    )


def _options(options: ScoreOptions | None, kwargs: Mapping[str, Any]) -> ScoreOptions:
    """One options object from an entry point's ``options=`` and keywords (keywords on top)."""
    if options is None:
        return ScoreOptions.from_kwargs(dict(kwargs))
    if not isinstance(options, ScoreOptions):
        raise TypeError(f"options must be a ScoreOptions, got {type(options).__name__}")
    return options.merged(**kwargs) if kwargs else options


async def _fit_context(
    opts: ScoreOptions, judge: Judge | None
) -> tuple[ScoreOptions, ServerProbe | None]:
    """``context_budget`` fitted to the judge's context window when the user gave none.

    A judge that tells its window (``await judge.context_window()``: llama.cpp ``/props``, vLLM
    ``max_model_len``, Ollama ``num_ctx``) gets a budget that leaves room for the reply, so a
    source too long for the window is chunked instead of being sent and silently truncated. A
    window that cannot be read changes nothing.
    """
    probe = None
    if judge is not None:
        # wrapped first: a persistent cache hands the judge what an earlier run learned about
        # its server (the structured mode), so a rerun sends no probe
        prepare_judge(judge, opts)
        probe = await negotiate_judge(judge)
    if "context_budget" in opts.given or judge is None:
        return opts, probe
    ask = getattr(base_judge(judge), "context_window", None)
    if ask is None or not inspect.iscoroutinefunction(ask):
        return opts, probe
    try:
        window = await ask()
    except Exception:  # a probe, not a judge call: the first real call reports the problem
        return opts, probe
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        return opts, probe
    budget = context_budget_for(window, opts.context_budget)
    return (opts if budget == opts.context_budget else opts.merged(context_budget=budget)), probe


def _fit_run(
    stack: Judge, opts: ScoreOptions, summaries: list[str], probe: ServerProbe | None
) -> None:
    """The run fitted to the judge's server as the CLI fits it (:mod:`shared.pipeline.fit`)."""
    given = "concurrency" in opts.given
    apply_fit(stack, probe, n=opts.n, judge_path=opts.judge_path, summaries=summaries,
              concurrency=opts.concurrency, concurrency_given=given)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------


async def ascore_summary(
    source: str | Sequence[str],
    summary: str,
    *,
    judge: Judge | None,
    options: ScoreOptions | None = None,
    **kwargs: Unpack[ScoreOptionsKwargs],
) -> SummaryEvaluation:
    """Score one summary of ``source``.

    Options come as keywords (``n=5``), as one :class:`~shared.ScoreOptions` (``options=``), or
    both (the keywords on top of the object).

    Raises TypeError/ValueError for bad input (before any judge call), and
    :class:`~shared.dimensions.MissingSpacyModelError` when a dimension needs a spaCy pipeline
    that is not installed; judge failures give an unscored result (``score=None`` and ``error``
    set), never an exception. ``judge=None`` computes only the deterministic dimensions.
    """
    opts = _options(options, kwargs)
    source_text = normalise_source(source)
    summary_text = check_summary(summary)
    probe = None
    if summary_text:  # an empty summary scores 0.0 without the judge: its server is not asked
        opts, probe = await _fit_context(opts, judge)
    if not opts.dimension_settings.available:
        await asyncio.to_thread(opts.dimension_settings.check_available)
    stack = prepare_judge(judge, opts)
    if stack is not None and summary_text:
        _fit_run(stack, opts, [summary_text], probe)
    return await _evaluate(source_text, summary_text, stack, opts)


async def ascore_summaries(
    pairs: Iterable[tuple[str | Sequence[str], str]],
    *,
    judge: Judge | None,
    options: ScoreOptions | None = None,
    **kwargs: Unpack[ScoreOptionsKwargs],
) -> list[SummaryEvaluation]:
    """Score many (source, summary) pairs concurrently, in input order (options as for
    :func:`ascore_summary`).

    A bad pair becomes an unscored result with its reason; it never sinks the batch. Bad options
    (and a missing spaCy pipeline) still raise, since they would fail every row alike. The
    dimensions' CPU work is batched: one ``nlp.pipe`` over all summaries and one ``embed`` call
    over all their sentences, in worker threads, while the judge calls proceed.
    """
    opts = _options(options, kwargs)
    probe = None
    checked: list[tuple[str, str] | str] = []
    for pair in pairs:
        try:
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError("each item must be a (source, summary) pair")
            checked.append((normalise_source(pair[0]), check_summary(pair[1])))
        except (TypeError, ValueError) as exc:
            checked.append(f"bad input: {exc}")
    if any(isinstance(item, tuple) and item[1] for item in checked):
        # only a row with a summary to judge asks the judge's server anything (bad and empty
        # rows are settled without it)
        opts, probe = await _fit_context(opts, judge)
    if not opts.dimension_settings.available:
        await asyncio.to_thread(opts.dimension_settings.check_available)
    stack = prepare_judge(judge, opts)
    sig = signature(stack, opts)
    languages = _batch_languages(checked, opts.language)
    texts = [item[1] for item in checked if isinstance(item, tuple) and item[1]]
    text_languages = [
        lang.dimensions
        for item, lang in zip(checked, languages, strict=True)
        if isinstance(item, tuple) and item[1] and lang is not None
    ]
    if stack is not None and texts:  # before the analysis threads start: rows keep their order
        _fit_run(stack, opts, texts, probe)
    batch = BatchAnalysis(texts, opts.dimension_settings, text_languages) if texts else None

    async def one(
        item: tuple[str, str] | str, index: int, language: LanguageEvidence | None
    ) -> SummaryEvaluation:
        if isinstance(item, str):
            return unscored(item, sig)
        return await _evaluate(item[0], item[1], stack, opts, batch, index, language)

    jobs = []
    index = 0
    for item, language in zip(checked, languages, strict=True):
        jobs.append(one(item, index, language))
        if isinstance(item, tuple) and item[1]:
            index += 1
    return list(await asyncio.gather(*jobs))


def _batch_languages(
    checked: Sequence[tuple[str, str] | str], given: str | None
) -> list[LanguageEvidence | None]:
    """Each good row's languages (None for a rejected row), each distinct source detected once."""
    sources: dict[str, str | None] = {}
    out: list[LanguageEvidence | None] = []
    for item in checked:
        if isinstance(item, str):
            out.append(None)
            continue
        source, summary = item
        if given is None and source not in sources:
            sources[source] = detect(source)[0]
        out.append(resolve_languages(source, summary, given, source_language=sources.get(source)))
    return out


def score_summary(
    source: str | Sequence[str],
    summary: str,
    *,
    judge: Judge | None,
    options: ScoreOptions | None = None,
    **kwargs: Unpack[ScoreOptionsKwargs],
) -> SummaryEvaluation:
    """Sync wrapper of :func:`ascore_summary` (works with or without a running event loop)."""
    return run_sync(lambda: ascore_summary(source, summary, judge=judge, options=options, **kwargs))


def score_summaries(
    pairs: Iterable[tuple[str | Sequence[str], str]],
    *,
    judge: Judge | None,
    options: ScoreOptions | None = None,
    **kwargs: Unpack[ScoreOptionsKwargs],
) -> list[SummaryEvaluation]:
    """Sync wrapper of :func:`ascore_summaries`."""
    pairs = list(pairs)
    return run_sync(lambda: ascore_summaries(pairs, judge=judge, options=options, **kwargs))


__all__ = [
    "DEFAULT_CONCURRENCY",
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
