"""Glue for the pipeline: settings, the batched analysis (spaCy + embeddings), and assembly.

The analysis is CPU work done once per batch: one ``nlp.pipe`` over every summary, then one
``embed`` call over every sentence of every summary. Each summary's slice of it is then combined
with the judge's style review (if any) into :class:`DimensionEvidence`.

Summaries in several languages are parsed one ``nlp.pipe`` per language, each with its language's
pipeline (:mod:`shared.core.language` keeps the registry), or split by a rule-based sentencizer when
the language has none; the English pipeline never analyses another language. The default
embedder (English MiniLM) embeds only English sentences: other languages keep the lexical part
of non-redundancy, unless the user passes an ``embedder``, which is used for every language.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..prompts import StyleReview
from .coherence import FORMULAS, score_coherence
from .coherence import VERSION_TAG as COHERENCE_VERSION
from .conciseness import score_conciseness
from .density import DEFAULT_TARGET, DEFAULT_TOLERANCE, score_density
from .embedding import DEFAULT_EMBEDDING_MODEL, default_embedder, embedder_id, unit_rows
from .evidence import (
    DIMENSIONS,
    NEEDS_EMBEDDINGS,
    NEEDS_JUDGE,
    NEEDS_SPACY,
    CoherenceEvidence,
    ConcisenessEvidence,
    DensityEvidence,
    DimensionEvidence,
    GroundingEvidence,
    NonRedundancyEvidence,
    SpecificityEvidence,
)
from .grounding import PRIOR, SourceIndex, ground_summary, index_source
from .nlp import (
    DEFAULT_SPACY_MODEL,
    MissingSpacyModelError,
    TextAnalysis,
    analyse_rule_based,
    analyse_texts,
    is_loaded,
    load_pipeline,
    pipeline_id,
)
from .redundancy import score_non_redundancy
from .specificity import score_specificity
from .support import VERSION as GROUNDING_VERSION
from .support import constants_id as grounding_constants


def normalise_dimensions(dimensions: Iterable[str] | None) -> tuple[str, ...]:
    """Validate dimension names; keep report order; None means all of them."""
    if dimensions is None:
        return DIMENSIONS
    if isinstance(dimensions, str):
        raise TypeError(f"dimensions must be a list of names, not one string ({dimensions!r})")
    names = list(dimensions)
    for name in names:
        if name not in DIMENSIONS:
            expected = ", ".join(DIMENSIONS)
            raise ValueError(f"unknown dimension {name!r}; expected some of {expected}")
    return tuple(d for d in DIMENSIONS if d in names)


@dataclass(frozen=True)
class DimensionSettings:
    """The options that shape the dimensions (a view of the pipeline's ScoreOptions)."""

    dimensions: tuple[str, ...] = DIMENSIONS
    spacy_model: str | Mapping[str, str] = DEFAULT_SPACY_MODEL
    """The English pipeline (a str, as before), or language -> pipeline (a hashable mapping,
    :class:`shared.dimensions.pipelines.SpacyModels`)."""
    embedder: Any = field(default=None, compare=False)
    density_target: float = DEFAULT_TARGET
    density_tolerance: float = DEFAULT_TOLERANCE
    coherence_formula: str = FORMULAS[0]
    """``"entity_grid"`` (default: counted jumps, repeats, fragments) or ``"article"`` (mean
    cosine of sentences i and i+2, the article's formula). Both values are in the evidence."""
    language: str | None = None
    """The ``language`` option: None detects each row's language; a code is trusted."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimensions", normalise_dimensions(self.dimensions))
        if self.coherence_formula not in FORMULAS:
            raise ValueError(
                f"coherence_formula must be one of {', '.join(map(repr, FORMULAS))}, "
                f"got {self.coherence_formula!r}"
            )
        from .pipelines import check_spacy_model

        object.__setattr__(self, "spacy_model", check_spacy_model("spacy_model", self.spacy_model))
        for name in ("density_target", "density_tolerance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if self.embedder is not None and not callable(getattr(self.embedder, "embed", None)):
            raise TypeError(f"embedder must have embed(texts) -> vectors; got {self.embedder!r}")

    @property
    def needs_spacy(self) -> bool:
        return bool(NEEDS_SPACY & set(self.dimensions))

    @property
    def needs_embeddings(self) -> bool:
        return bool(NEEDS_EMBEDDINGS & set(self.dimensions))

    @property
    def needs_judge(self) -> bool:
        return bool(NEEDS_JUDGE & set(self.dimensions))

    def resolved_embedder(self) -> Any:
        return self.embedder if self.embedder is not None else default_embedder()

    @property
    def english_model(self) -> str:
        """The pipeline English rows use."""
        from .pipelines import english_pipeline

        return english_pipeline(self.spacy_model)

    def pipeline_for(self, language: str) -> str | None:
        """The pipeline configured for ``language`` (None: none is)."""
        from .pipelines import spacy_models

        return spacy_models(self.spacy_model).get(language)

    def pipeline_used(self, language: str) -> str | None:
        """The pipeline that analysed a summary in ``language``, once the analysis has run
        (None: the rule-based splitter, the language having no installed pipeline)."""
        model = self.english_model if language == "en" else self.pipeline_for(language)
        return model if model is not None and is_loaded(model) else None

    def embeds(self, language: str) -> bool:
        """Whether sentences in ``language`` are embedded: always with the user's embedder;
        with the default (English MiniLM), English only."""
        return self.embedder is not None or language == "en"

    @property
    def _checks_english(self) -> bool:
        return self.needs_spacy and self.language in (None, "en")

    def check_available(self) -> None:
        """Load the English spaCy pipeline now, so a missing one fails before any judge call
        (unless every row is declared another language: pipelines for other languages are
        looked up per row, and a missing one leaves its dimensions None with the reason)."""
        if self._checks_english:
            load_pipeline(self.english_model)

    @property
    def available(self) -> bool:
        """True when :meth:`check_available` has nothing left to load, so async callers can
        skip its worker thread (a thread hop per call would stagger concurrent calls)."""
        return not self._checks_english or is_loaded(self.english_model)

    def signature_part(self) -> str:
        """``|dens:<target>/<tol>|spacy:<pipeline>-<version>|emb:<model>|coh:<formula>``
        ``|gnd:v<version>/<hash of its constants>`` for what is used."""
        parts = []
        if "density" in self.dimensions:
            parts.append(f"dens:{self.density_target:g}/{self.density_tolerance:g}")
        if self.needs_spacy:
            parts.append(f"spacy:{pipeline_id(self.english_model)}")
        if self.needs_embeddings:
            parts.append(f"emb:{embedder_id(self.resolved_embedder())}")
        if "coherence" in self.dimensions:
            tag = COHERENCE_VERSION if self.coherence_formula == "entity_grid" else ""
            parts.append(f"coh:{self.coherence_formula}{tag}")
        if "grounding" in self.dimensions:
            parts.append(f"gnd:v{GROUNDING_VERSION}/{grounding_constants()}")
        return "".join(f"|{part}" for part in parts)


@dataclass(frozen=True)
class SummaryAnalysis:
    """One summary's slice of the batch analysis."""

    text: TextAnalysis | None = None
    unit: np.ndarray | None = None
    embed_error: str | None = None
    embed_skipped: str | None = None
    """Why the sentences were not embedded on purpose (a language the default embedder does not
    cover): the dimensions then use their lexical parts only."""

    @property
    def sentences(self) -> tuple[str, ...]:
        return self.text.sentences if self.text is not None and not self.text.error else ()


def analyse_spacy(
    texts: Sequence[str],
    settings: DimensionSettings,
    languages: Sequence[str] | None = None,
) -> list[TextAnalysis | None]:
    """spaCy + NLTK over all texts, one ``nlp.pipe`` per language (None each when no dimension
    needs it). ``languages``: each text's language (None: all English, as before).

    Should a language's batch fail as a whole, each text is retried alone, so one pathological
    text gets its own ``error`` instead of taking the batch's dimensions with it.
    """
    if not settings.needs_spacy:
        return [None] * len(texts)
    if languages is None:
        return _analyse_language(list(texts), "en", settings)
    groups: dict[str, list[int]] = {}
    for i, language in enumerate(languages):
        groups.setdefault(language, []).append(i)
    out: list[TextAnalysis | None] = [None] * len(texts)
    for language, indexes in groups.items():
        analysed = _analyse_language([texts[i] for i in indexes], language, settings)
        for i, analysis in zip(indexes, analysed, strict=True):
            out[i] = analysis
    return out


def _analyse_language(
    texts: list[str], language: str, settings: DimensionSettings
) -> list[TextAnalysis | None]:
    """One language's texts: its pipeline, or the rule-based analysis with what to install."""
    from .pipelines import missing_pipeline_hint

    model = settings.english_model if language == "en" else settings.pipeline_for(language)
    run: Any
    if model is None:
        hint = missing_pipeline_hint(language, None)
        run = lambda batch: analyse_rule_based(batch, language, hint)  # noqa: E731
    else:
        try:
            load_pipeline(model)
        except MissingSpacyModelError as exc:
            if language == "en":
                raise
            # not installed (say what to install), or installed without a parser or NER
            hint = (
                missing_pipeline_hint(language, model)
                if "is not installed" in str(exc)
                else str(exc)
            )
            run = lambda batch: analyse_rule_based(batch, language, hint)  # noqa: E731
        else:
            run = lambda batch: analyse_texts(batch, model, language=language)  # noqa: E731
    try:
        return list(run(texts))
    except MissingSpacyModelError:
        raise
    except Exception:
        out: list[TextAnalysis | None] = []
        for text in texts:
            try:
                out.extend(run([text]))
            except Exception as exc:
                out.append(TextAnalysis(error=f"spaCy failed: {type(exc).__name__}: {exc}"))
        return out


def add_embeddings(
    analyses: Sequence[TextAnalysis | None], settings: DimensionSettings
) -> list[SummaryAnalysis]:
    """Embed every sentence of every analysed text in one ``embed`` call.

    An embedder failure becomes ``embed_error`` on every analysis with sentences (the dimensions
    that need embeddings are then None with that reason); it is never raised.
    """
    if not settings.needs_embeddings:
        return [SummaryAnalysis(text=a) for a in analyses]
    skipped = [
        None if a is None or settings.embeds(a.language) else _embed_skip_reason(a.language)
        for a in analyses
    ]
    counts = [
        0 if a is None or a.error or skip else len(a.sentences)
        for a, skip in zip(analyses, skipped, strict=True)
    ]
    sentences = [s for a, c in zip(analyses, counts, strict=True) if c for s in a.sentences]
    unit: np.ndarray | None = None
    error: str | None = None
    if sentences:
        # a text that repeats its sentences (one said thousands of times) embeds each distinct
        # sentence once; other batches are embedded as they come, so their vectors stay
        # bit-identical (the batches' composition changes the last bits of an embedding)
        index: dict[str, int] = {}
        where = [index.setdefault(s, len(index)) for s in sentences]
        repetitive = len(index) <= len(sentences) // 2
        texts = list(index) if repetitive else sentences
        try:
            embedded = unit_rows(settings.resolved_embedder().embed(texts), len(texts))
            unit = embedded[where] if repetitive else embedded
        except Exception as exc:  # a user embedder may fail in any way; never sink the batch
            error = f"embedder failed: {type(exc).__name__}: {exc}"
    out: list[SummaryAnalysis] = []
    offset = 0
    for a, count, skip in zip(analyses, counts, skipped, strict=True):
        if skip:
            out.append(SummaryAnalysis(text=a, embed_skipped=skip))
        elif count == 0:
            out.append(SummaryAnalysis(text=a, unit=np.zeros((0, 1))))
        elif unit is None:
            out.append(SummaryAnalysis(text=a, embed_error=error))
        else:
            out.append(SummaryAnalysis(text=a, unit=unit[offset : offset + count]))
        offset += count
    return out


def _embed_skip_reason(language: str) -> str:
    from ..core.language import language_name

    return (
        f"the default embedder ({DEFAULT_EMBEDDING_MODEL}) is English-only, so "
        f"{language_name(language)} ({language}) sentences are not embedded; pass embedder= "
        "a multilingual model to use embeddings"
    )


def analyse_summaries(
    texts: Sequence[str],
    settings: DimensionSettings,
    languages: Sequence[str] | None = None,
) -> list[SummaryAnalysis]:
    """The whole batch analysis in one go: one ``nlp.pipe`` per language, then one ``embed``
    call."""
    return add_embeddings(analyse_spacy(texts, settings, languages), settings)


def unavailable_evidence(
    settings: DimensionSettings, source: str, reason: str = "the summary is empty"
) -> DimensionEvidence:
    """Every requested dimension None with ``reason`` (an empty summary has no text quality to
    measure; an unexpected analysis failure is reported the same way)."""
    reason = f"not computed: {reason}"
    return _only(
        settings,
        density=DensityEvidence(
            reason=reason, target=settings.density_target, tolerance=settings.density_tolerance
        ),
        specificity=SpecificityEvidence(reason=reason),
        non_redundancy=NonRedundancyEvidence(reason=reason),
        coherence=CoherenceEvidence(reason=reason),
        conciseness=ConcisenessEvidence(reason=reason, summary_chars=0, source_chars=len(source)),
        grounding=GroundingEvidence(reason=reason, prior=PRIOR),
    )


def build_evidence(
    settings: DimensionSettings,
    source: str,
    summary: str,
    analysis: SummaryAnalysis,
    review: StyleReview | None,
    judge_problem: str | None,
    source_index: SourceIndex | None = None,
) -> DimensionEvidence:
    """Every requested dimension from the analysis and the judge's review.

    ``judge_problem``: "" when no judge was given, a reason when the style call failed, None when
    ``review`` is there (or no call was needed). ``source_index``: grounding's index of
    ``source``, when the caller shares one across the summaries of that source (built here
    otherwise).
    """
    wanted = set(settings.dimensions)
    out: dict[str, Any] = {}
    if "conciseness" in wanted:
        out["conciseness"] = score_conciseness(summary, source)
    if not settings.needs_spacy:
        return _only(settings, **out)
    text = analysis.text
    problem = None
    if text is None:
        problem = "the summary was not analysed"
    elif text.error:
        problem = text.error
    if "density" in wanted:
        no_entities = None if text is None else text.no_entities
        out["density"] = (
            score_density(text, settings.density_target, settings.density_tolerance)
            if text is not None and no_entities is None
            else DensityEvidence(
                reason=f"not computed: {problem or f'density needs named entities: {no_entities}'}",
                target=settings.density_target,
                tolerance=settings.density_tolerance,
            )
        )
    sentences = analysis.sentences
    if "specificity" in wanted:
        out["specificity"] = _specificity(sentences, problem, review, judge_problem)
    embed_problem = problem or analysis.embed_error
    unit = analysis.unit
    if "coherence" in wanted:
        if text is None or problem:
            out["coherence"] = CoherenceEvidence(
                formula=settings.coherence_formula, reason=f"not computed: {problem}"
            )
        elif text.no_parse:
            out["coherence"] = _coherence_without_parse(
                text, unit, settings.coherence_formula, analysis
            )
        else:
            # the default formula needs only the parse; an embedder failure leaves it defined
            out["coherence"] = score_coherence(
                text,
                None if analysis.embed_error or unit is None else unit,
                settings.coherence_formula,
                analysis.embed_error or analysis.embed_skipped,
            )
    if "non_redundancy" in wanted:
        if text is not None and not embed_problem and analysis.embed_skipped:
            out["non_redundancy"] = score_non_redundancy(
                sentences,
                None,
                text.words,
                text.stop,
                review,
                judge_problem,
                lexical_only=analysis.embed_skipped,
            )
        elif embed_problem or unit is None or text is None:
            out["non_redundancy"] = NonRedundancyEvidence(
                sentence_count=len(sentences), reason=f"not computed: {embed_problem}"
            )
        else:
            out["non_redundancy"] = score_non_redundancy(
                sentences, unit, text.words, text.stop, review, judge_problem
            )
    if "grounding" in wanted:
        grounding = _grounding(source, analysis, problem, source_index, settings)
        if text is not None and text.no_entities and not problem:
            grounding = grounding.model_copy(
                update={"reason": f"{grounding.reason} (numbers only: {text.no_entities})"}
            )
        out["grounding"] = grounding
    return _only(settings, **out)


def _coherence_without_parse(
    text: TextAnalysis, unit: np.ndarray | None, formula: str, analysis: SummaryAnalysis
) -> CoherenceEvidence:
    """Coherence of a summary with no usable parse: the entity grid cannot be read, so the
    default formula is None with the reason; the article's formula needs only embeddings."""
    from .coherence import article_coherence

    no_grid = f"the entity grid needs a dependency parse: {text.no_parse}"
    if unit is None:
        why = analysis.embed_error or analysis.embed_skipped or "no sentence embeddings"
        return CoherenceEvidence(
            formula=formula,
            sentence_count=len(text.sentences),
            reason=f"not computed: {no_grid}; article formula: {why}",
        )
    article, gap, sims, reason = article_coherence(unit)
    evidence = {
        "formula": formula,
        "sentence_count": len(text.sentences),
        "truncated": text.truncated,
        "article_score": article,
        "gap": gap,
        "similarities": sims,
    }
    if formula == "article" and article is not None:
        return CoherenceEvidence(score=article, reason=reason, **evidence)
    why = no_grid if formula != "article" else reason
    return CoherenceEvidence(reason=f"not computed: {why}", **evidence)


def _grounding(
    source: str,
    analysis: SummaryAnalysis,
    problem: str | None,
    index: SourceIndex | None,
    settings: DimensionSettings,
) -> GroundingEvidence:
    """Grounding version 2 from the summary's parse and sentence embeddings; odd text gives a
    reason, never raises. The source's candidate sentences are embedded with the same embedder
    (when the summary's language is embedded) and parsed with the English pipeline (English
    summaries; other languages check relations by co-occurrence only)."""
    text = analysis.text
    if text is None or problem:
        return GroundingEvidence(reason=f"not computed: {problem}", prior=PRIOR)
    try:
        unit = None if analysis.embed_error or analysis.embed_skipped else analysis.unit
        embed = None if unit is None else settings.resolved_embedder().embed
        nlp = load_pipeline(settings.english_model) if text.language == "en" else None
        note = analysis.embed_error or analysis.embed_skipped
        return ground_summary(
            text,
            unit,
            index if index is not None else index_source(source),
            embed=embed,
            nlp=nlp,
            note=f"similarity read lexically: {note}" if note else None,
        )
    except Exception as exc:  # odd input must not take the other dimensions with it
        return GroundingEvidence(
            reason=f"not computed: grounding failed: {type(exc).__name__}: {exc}", prior=PRIOR
        )


def _specificity(
    sentences: tuple[str, ...],
    problem: str | None,
    review: StyleReview | None,
    judge_problem: str | None,
) -> SpecificityEvidence:
    n = len(sentences)
    if problem:
        return SpecificityEvidence(reason=f"not computed: {problem}")
    if n == 0:
        return SpecificityEvidence(reason="not computed: the summary has no sentence to judge")
    if review is not None:
        return score_specificity(sentences, review)
    if judge_problem:
        return SpecificityEvidence(sentence_count=n, reason=f"not computed: {judge_problem}")
    return SpecificityEvidence(
        sentence_count=n, reason="not computed: specificity needs a judge (judge=None)"
    )


def _only(settings: DimensionSettings, **evidence: Any) -> DimensionEvidence:
    return DimensionEvidence(**{k: v for k, v in evidence.items() if k in settings.dimensions})
