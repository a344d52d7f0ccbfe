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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..prompts import StyleReview, split_sentences
from .embedding import DEFAULT_EMBEDDING_MODEL, default_embedder, embedder_id, unit_rows
from .evidence import (
    DIMENSIONS,
    NEEDS_EMBEDDINGS,
    NEEDS_JUDGE,
    NEEDS_SPACY,
    DimensionEvidence,
)
from .grounding import SourceIndex
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
from .spec import (
    DimensionInput,
    dimension_options,
    dimension_spec,
    dimension_specs,
    reserve_option_names,
)

_SPLIT_ONLY: ContextVar[bool] = ContextVar("split_only", default=False)


@contextmanager
def split_only() -> Iterator[None]:
    """Inside it (this context, and the tasks and worker threads it starts), the text analysis is
    the offline sentence split (:func:`shared.prompts.split_sentences`) and nothing else: no
    spaCy, NLTK or embedding model is loaded. The dimensions that need more are then None. For
    counting what a run asks its judge (the command line's estimate), never for scores."""
    token = _SPLIT_ONLY.set(True)
    try:
        yield
    finally:
        _SPLIT_ONLY.reset(token)


def normalise_dimensions(dimensions: Iterable[str] | None) -> tuple[str, ...]:
    """Validate dimension names; keep report order; None means all of them."""
    if dimensions is None:
        return tuple(DIMENSIONS)  # a snapshot, not the registry's live view
    if isinstance(dimensions, str):
        raise TypeError(f"dimensions must be a list of names, not one string ({dimensions!r})")
    names = list(dimensions)
    for name in names:
        if name not in DIMENSIONS:
            expected = ", ".join(DIMENSIONS)
            raise ValueError(f"unknown dimension {name!r}; expected some of {expected}")
    return tuple(d for d in DIMENSIONS if d in names)


@dataclass(frozen=True, init=False)
class DimensionSettings:
    """The options that shape the dimensions (a view of the pipeline's ScoreOptions).

    ``dimensions``, ``spacy_model``, ``embedder`` and ``language`` are every dimension's; each
    dimension's own options (``density_target``, ``coherence_formula``, ...: the ``options`` of
    its :class:`~shared.dimensions.spec.DimensionSpec`) are keywords too, read as attributes,
    checked by their declared check, their default the declared one.
    """

    dimensions: tuple[str, ...]
    spacy_model: str | Mapping[str, str]
    """The English pipeline (a str, as before), or language -> pipeline (a hashable mapping,
    :class:`shared.dimensions.pipelines.SpacyModels`)."""
    embedder: Any = field(compare=False)
    language: str | None
    """The ``language`` option: None detects each row's language; a code is trusted."""
    options: tuple[tuple[str, Any], ...]
    """Every registered dimension option's value, by name (e.g. ``coherence_formula``:
    ``"entity_grid"``, counted jumps, repeats, fragments, or ``"article"``, the article's mean
    cosine of sentences i and i+2)."""

    def __init__(
        self,
        dimensions: Iterable[str] | None = DIMENSIONS,
        spacy_model: str | Mapping[str, str] = DEFAULT_SPACY_MODEL,
        embedder: Any = None,
        language: str | None = None,
        **options: Any,
    ) -> None:
        declared = {o.name: o for o in dimension_options()}
        unknown = sorted(set(options) - set(declared))
        if unknown:
            raise TypeError(
                f"unknown dimension option(s) {', '.join(unknown)}; "
                f"expected some of {', '.join(declared)}"
            )
        values = tuple(
            (name, o.check(name, options.get(name, o.default))) for name, o in declared.items()
        )
        from .pipelines import check_spacy_model

        object.__setattr__(self, "dimensions", normalise_dimensions(dimensions))
        object.__setattr__(self, "spacy_model", check_spacy_model("spacy_model", spacy_model))
        object.__setattr__(self, "embedder", embedder)
        object.__setattr__(self, "language", language)
        object.__setattr__(self, "options", values)
        if self.embedder is not None and not callable(getattr(self.embedder, "embed", None)):
            raise TypeError(f"embedder must have embed(texts) -> vectors; got {self.embedder!r}")

    def __getattr__(self, name: str) -> Any:
        """A dimension option's value (``settings.density_target``)."""
        if not name.startswith("_"):
            for key, value in self.__dict__.get("options", ()):
                if key == name:
                    return value
            for o in dimension_options():  # registered after these settings were made
                if o.name == name:
                    return o.default
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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
        return self.needs_spacy and self.language in (None, "en") and not _SPLIT_ONLY.get()

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
        """Each requested dimension's own part (its spec's ``signature``), with the parts every
        dimension shares (``spacy:<pipeline>-<version>`` when one parses, ``emb:<model>`` when
        one embeds) after the parts of the dimensions that use no embeddings: ``|dens:<target>/
        <tol>|spacy:<pipeline>-<version>|emb:<model>|coh:<formula>|gnd:v<version>/<hash of its
        constants>`` for the default dimensions."""
        specs = [dimension_spec(name) for name in self.dimensions]
        parts = [s.signature(self) for s in specs if s.signature and not s.needs_embeddings]
        if self.needs_spacy:
            parts.append(f"spacy:{pipeline_id(self.english_model)}")
        if self.needs_embeddings:
            parts.append(f"emb:{embedder_id(self.resolved_embedder())}")
        parts += [s.signature(self) for s in specs if s.signature and s.needs_embeddings]
        return "".join(f"|{part}" for part in parts)


# a dimension's option is read as an attribute of the settings: none may be named like their own
reserve_option_names(
    {f.name for f in fields(DimensionSettings)}
    | {name for name in dir(DimensionSettings) if not name.startswith("_")}
)


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
    if _SPLIT_ONLY.get():
        langs = languages or ["en"] * len(texts)
        return [
            TextAnalysis(sentences=split_sentences(text), language=language)
            for text, language in zip(texts, langs, strict=True)
        ]
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
    if _SPLIT_ONLY.get():
        unembedded = "not embedded: sentences only"
        return [SummaryAnalysis(text=a, embed_error=unembedded) for a in analyses]
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
    return DimensionEvidence(
        **{
            name: dimension_spec(name).not_computed(settings, source, reason)
            for name in settings.dimensions
        }
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
    """Every requested dimension from the analysis and the judge's review: each one's spec's
    ``score`` (:class:`~shared.dimensions.spec.DimensionInput` says what it reads).

    ``judge_problem``: "" when no judge was given, a reason when the style call failed, None when
    ``review`` is there (or no call was needed). ``source_index``: grounding's index of
    ``source``, when the caller shares one across the summaries of that source (built here
    otherwise).
    """
    inp = DimensionInput(
        settings, source, summary, analysis, review, judge_problem, source_index=source_index
    )
    wanted = set(settings.dimensions)
    return DimensionEvidence(
        **{spec.name: spec.score(inp) for spec in dimension_specs() if spec.name in wanted}
    )
