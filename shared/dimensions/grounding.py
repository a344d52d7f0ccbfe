"""Grounding: the share of a summary's checkable items (names, numbers, dates) its source has.

A summary's checkable items come from the spaCy parse the other dimensions already make of the
summary: its named entities of the listed labels, plus any number token outside them. The source
side needs no spaCy at all: a regex tokenizer builds a :class:`SourceIndex` (word positions,
capitalised name runs, acronyms, numeric values with their units, months and weekdays) in one
linear pass, so a long source costs no parse, no ``max_length`` error and nothing quadratic, and
the label spaCy would give a source mention does not matter ("an entity the source mentions under
another label still counts"). One index serves every summary of its source
(:func:`grounding_scores` builds it once per distinct source).

Support is decided after normalisations a careful reader accepts: case, punctuation,
possessives, a plural ``s``; number words and digits ("two" / "2", "1.5 million" /
"1,500,000" / "1.5m"); currency and unit spellings ("€" / "euros", "km" / "kilometres", "%" /
"per cent"); date formats (month names and abbreviations, weekday names, day and year numbers in
any order); partial names ("Townsend" and "Andros" are supported by "Andros Townsend"); acronyms
against a capitalised expansion in the source ("EU" / "European Union"), both ways. A number the
summary derives by arithmetic ("three goals" from "two goals ... one more") is **not** supported:
only values the source states count. Relative dates with no month, weekday or number ("last
year") are not checkable and are left out.

The score is ``(supported + PRIOR) / (items + PRIOR)`` with a number or date weighing
``NUMBER_WEIGHT`` names: the share, with ``PRIOR`` pseudo-items counted as supported so that one
slip in a summary of two items does not rank it below three slips in a summary of ten (both
constants chosen by cross-validation over SummEval articles; ``docs/VALIDITY.md``). The raw share
is in the evidence. None with a reason when the summary has no checkable item.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .evidence import GroundingEvidence, GroundingItem
from .items import (  # noqa: F401 (moved)
    _MONTHS,
    _STOP,
    _WEEKDAYS,
    DATE_LABELS,
    NAME_LABELS,
    NUMBER_LABELS,
    CheckItem,
    Quantity,
    SourceIndex,
    _tokens,
    index_source,
    norm_word,
    number_items,
    scan_quantities,
    summary_items,
)
from .nlp import DEFAULT_SPACY_MODEL, load_pipeline
from .spec import About, DimensionInput, declare_dimension
from .support import VERSION, SentenceParse, constants_id, index_sentences, score_sentences

PRIOR = 4.0
"""Pseudo-items counted as supported: the value most cross-validation folds chose on SummEval
(docs/VALIDITY.md; the grid was nearly flat, 0.429 to 0.433)."""
NUMBER_WEIGHT = 2.0
"""Weight of a number or date item against a name item: an invented number is a definite error,
while a name can be missed by NER or spelled another way; chosen by the same cross-validation."""


def _contiguous(idx: SourceIndex, words: Sequence[str]) -> int | None:
    """Char offset where ``words`` occur in a row among the source's content words, or None."""
    lists = [idx.positions.get(w) for w in words]
    if any(p is None for p in lists):
        return None
    k = min(range(len(words)), key=lambda i: len(lists[i]))  # type: ignore[arg-type]
    for p in lists[k]:  # type: ignore[union-attr]
        s = p - k
        if s >= 0 and s + len(words) <= len(idx.words) and idx.words[s : s + len(words)] == words:
            return idx.offsets[s]
    return None


def _check_name(idx: SourceIndex, text: str) -> tuple[bool | None, str, int | None]:
    raw = [t for t, _ in _tokens(text)]
    words = [norm_word(t) for t in raw]
    words = [w for w in words if w and w not in _STOP]
    if not words:
        return None, "no word to check", None
    off = _contiguous(idx, words)
    if off is not None:
        return True, "name found", off
    if len(words) > 1:
        common = set.intersection(*(idx.chunks.get(w, set()) for w in words))
        if common:
            return (
                True,
                "all its words are in one name of the source",
                idx.offsets[idx.positions[words[0]][0]],
            )
        acr = "".join(w[0] for w in words)
        if len(words) >= 2 and acr in idx.positions:
            return (
                True,
                f"the source has its acronym {acr.upper()}",
                idx.offsets[idx.positions[acr][0]],
            )
    else:
        raw_word = re.sub(r"\W", "", text)
        if raw_word.isupper() and 2 <= len(raw_word) <= 6 and raw_word.lower() in idx.acronyms:
            return True, "the source spells out this acronym", idx.acronyms[raw_word.lower()]
        if "." in text:  # "U.S." -> "us"
            joined = re.sub(r"[^\w]", "", text).lower()
            if joined in idx.positions or joined in idx.acronyms:
                return True, "acronym found", None
    missing = [w for w in words if w not in idx.positions]
    why = f"not in the source: {', '.join(missing)}" if missing else "words not together"
    return False, why, None


def _check_numbers(
    idx: SourceIndex, text: str, label: str
) -> tuple[bool | None, str, int | None, bool]:
    """(supported?, how, offset, checked anything?) for a number, money, percent, quantity,
    ordinal, date or time item."""
    lower = [t.lower() for t, _ in _tokens(text)]
    is_date = label in DATE_LABELS
    facts: list[tuple[str, Any]] = []
    for (value, unit), _, _ in scan_quantities(lower):
        if is_date and unit in ("ord", "day", "week", "month", "year", "h", "min", "s", None):
            facts.append(("value", value))
        else:
            facts.append(("quantity", (value, unit)))
    if is_date:
        for w in lower:
            if w in _MONTHS and (w != "may" or text.split()[0:1] != ["may"]):
                facts.append(("month", _MONTHS[w]))
            elif w in _WEEKDAYS:
                facts.append(("weekday", _WEEKDAYS[w]))
    if not facts:
        return None, "nothing checkable", None, False
    first: int | None = None
    for kind, fact in facts:
        if kind == "value":
            off = idx.values.get(fact)
            if off is None and 1 <= fact <= 12 and fact == int(fact):  # "03" in "15/03/2015"
                off = idx.months.get(int(fact))
        elif kind == "month":
            off = idx.months.get(fact)
        elif kind == "weekday":
            off = idx.weekdays.get(fact)
        else:
            value, unit = fact
            off = idx.quantities.get(fact)
            if off is None and unit is None:
                off = idx.values.get(value)
        if off is None:
            return False, f"the source does not state {_describe(kind, fact)}", None, True
        first = off if first is None else min(first, off)
    return True, "value found", first, True


def _describe(kind: str, fact: Any) -> str:
    if kind == "quantity":
        value, unit = fact
        return f"{value:g}" + (f" ({unit})" if unit else "")
    if kind == "month":
        return f"month {fact}"
    if kind == "weekday":
        return f"weekday {fact + 1} (Mon=1)"
    return f"{fact:g}"


def score_grounding(
    items: Iterable[CheckItem],
    index: SourceIndex,
    *,
    prior: float = PRIOR,
    number_weight: float = NUMBER_WEIGHT,
) -> GroundingEvidence:
    """Check each item against the source index; never raises on odd text."""
    supported: list[GroundingItem] = []
    unsupported: list[GroundingItem] = []
    skipped: list[str] = []
    for item in items:
        if item.label in NAME_LABELS:
            ok, how, off = _check_name(index, item.text)
            # a name spaCy labelled with digits inside ("Euro 2016") is checked as a name
        else:
            ok, how, off, _ = _check_numbers(index, item.text, item.label)
            if ok is None and item.label not in DATE_LABELS:
                # e.g. a CARDINAL spaCy found in words we do not parse: check it as words
                ok, how, off = _check_name(index, item.text)
        if ok is None:
            skipped.append(item.text)
            continue
        part = snippet = None
        local = None
        if off is not None:
            part, snippet = index.where(off)
            local = off - index.part_starts[part]
        out = GroundingItem(
            text=item.text,
            label=item.label,
            sentence=item.sentence,
            supported=ok,
            how=how,
            source_part=part,
            source_offset=local,
            source_snippet=snippet,
        )
        (supported if ok else unsupported).append(out)
    n = len(supported) + len(unsupported)
    if n == 0:
        why = "the summary has no name, number or date to check against the source"
        if skipped:
            why += f" (only relative dates or vague items: {', '.join(skipped[:5])})"
        return GroundingEvidence(reason=f"not computed: {why}", skipped=skipped, prior=prior)
    s = len(supported)
    good = sum(1.0 if i.label in NAME_LABELS else number_weight for i in supported)
    bad = sum(1.0 if i.label in NAME_LABELS else number_weight for i in unsupported)
    score = (good + prior) / (good + bad + prior)
    listed = ", ".join(f"{u.text!r} ({u.label})" for u in unsupported[:5])
    reason = f"{s}/{n} names, numbers and dates found in the source"
    reason += f"; not found: {listed}" if unsupported else ""
    return GroundingEvidence(
        score=score,
        reason=reason,
        item_count=n,
        supported_count=s,
        share=s / n,
        prior=prior,
        unsupported=unsupported,
        supported=supported,
        skipped=skipped,
    )


def _source_key(source: str | Sequence[str]) -> str | tuple[str, ...]:
    return source if isinstance(source, str) else tuple(str(p) for p in source)


class SourceIndexCache:
    """Source -> index, so each distinct source is indexed once per batch."""

    def __init__(self) -> None:
        self._cache: dict[str | tuple[str, ...], SourceIndex] = {}

    def get(self, source: str | Sequence[str]) -> SourceIndex:
        key = _source_key(source)
        idx = self._cache.get(key)
        if idx is None:
            idx = self._cache[key] = index_source(source)
        return idx

    def __len__(self) -> int:
        return len(self._cache)


def ground_summary(
    text: Any,
    unit: Any,
    index: SourceIndex,
    *,
    embed: Any = None,
    nlp: Any = None,
    note: str | None = None,
) -> GroundingEvidence:
    """Version 2 for one analysed summary (a :class:`~.nlp.TextAnalysis`): version 1's items,
    then the support of each sentence (:mod:`.support`). ``unit``: its sentences' unit
    embeddings (None: similarity falls back to the lexical window share); ``embed``: the
    embedder's ``embed`` for the source's candidate sentences; ``nlp``: the pipeline that parses
    them (None: relations count co-occurrence only)."""
    v1 = score_grounding(text.items, index)
    items = v1.supported + v1.unsupported
    sentences = text.relations
    if len(sentences) != len(text.sentences):
        sentences = tuple(SentenceParse(s) for s in text.sentences)
    if index.sentences is None:
        index.sentences = index_sentences(index.text)
    return score_sentences(
        sentences,
        unit,
        items,
        index.sentences,
        v1,
        embed=embed,
        nlp=nlp,
        number_weight=NUMBER_WEIGHT,
        name_labels=NAME_LABELS,
        note=note,
    )


def grounding_scores(
    pairs: Sequence[tuple[str | Sequence[str], str]],
    *,
    spacy_model: str = DEFAULT_SPACY_MODEL,
    summary_docs: Sequence[Any] | None = None,
    embedder: Any = None,
    batch_size: int = 64,
) -> list[GroundingEvidence]:
    """Grounding (version 2) of each (source, summary) pair: one ``nlp.pipe`` over the
    summaries (skipped when the caller passes the ``summary_docs`` it already parsed), one
    ``embed`` call over their sentences, one index per distinct source. ``embedder``: anything
    with ``embed(texts)`` (default: the package's MiniLM).

    A summary that cannot be parsed (over ``max_length``, not a string) or a source that cannot
    be indexed gets a None score with the reason; the batch goes on.
    """
    from .embedding import default_embedder, unit_rows
    from .nlp import _analyse_doc

    nlp = load_pipeline(spacy_model)
    docs: list[Any]
    if summary_docs is not None:
        if len(summary_docs) != len(pairs):
            raise ValueError("summary_docs must have one Doc per pair")
        docs = list(summary_docs)
    else:
        docs = [None] * len(pairs)
        todo = [
            i
            for i, (_, s) in enumerate(pairs)
            if isinstance(s, str) and s.strip() and len(s) <= nlp.max_length
        ]
        for i, doc in zip(
            todo, nlp.pipe((pairs[i][1] for i in todo), batch_size=batch_size), strict=True
        ):
            docs[i] = doc
    texts = [None if doc is None else _analyse_doc(doc) for doc in docs]
    embedder = embedder if embedder is not None else default_embedder()
    flat = [s for t in texts if t is not None for s in t.sentences]
    units: Any = None
    if flat:
        try:
            units = unit_rows(embedder.embed(flat), len(flat))
        except Exception:  # similarity then falls back to the lexical share
            units = None
    cache = SourceIndexCache()
    out: list[GroundingEvidence] = []
    offset = 0
    for (source, summary), text in zip(pairs, texts, strict=True):
        if text is None or not text.sentences:
            if text is not None:
                why = "the summary has no sentence"
            elif isinstance(summary, str) and not summary.strip():
                why = "the summary is empty"
            else:
                why = "the summary could not be parsed"
            out.append(GroundingEvidence(reason=f"not computed: {why}", prior=PRIOR))
            continue
        n = len(text.sentences)
        unit = None if units is None else units[offset : offset + n]
        offset += n
        try:
            out.append(ground_summary(text, unit, cache.get(source), embed=embedder.embed, nlp=nlp))
        except Exception as exc:  # odd input must not sink the batch
            out.append(
                GroundingEvidence(reason=f"not computed: {type(exc).__name__}: {exc}", prior=PRIOR)
            )
    return out


def _score(inp: DimensionInput) -> GroundingEvidence:
    """Version 2 from the summary's parse and sentence embeddings; odd text gives a reason,
    never raises. The source's candidate sentences are embedded with the same embedder (when
    the summary's language is embedded) and parsed with the English pipeline (English
    summaries; other languages check relations by co-occurrence only)."""
    text, problem = inp.text, inp.problem
    if text is None or problem:
        return GroundingEvidence(reason=f"not computed: {problem}", prior=PRIOR)
    grounding = _ground(inp, text)
    if text.no_entities:
        reason = f"{grounding.reason} (numbers only: {text.no_entities})"
        grounding = grounding.model_copy(update={"reason": reason})
    return grounding


def _ground(inp: DimensionInput, text: Any) -> GroundingEvidence:
    analysis, settings = inp.analysis, inp.settings
    try:
        unit = None if analysis.embed_error or analysis.embed_skipped else analysis.unit
        embed = None if unit is None else settings.resolved_embedder().embed
        nlp = load_pipeline(settings.english_model) if text.language == "en" else None
        note = analysis.embed_error or analysis.embed_skipped
        index = inp.source_index
        return ground_summary(
            text,
            unit,
            index if index is not None else index_source(inp.source),
            embed=embed,
            nlp=nlp,
            note=f"similarity read lexically: {note}" if note else None,
        )
    except Exception as exc:  # odd input must not take the other dimensions with it
        return GroundingEvidence(
            reason=f"not computed: grounding failed: {type(exc).__name__}: {exc}", prior=PRIOR
        )


def _unavailable(settings: Any, source: str, reason: str) -> GroundingEvidence:
    return GroundingEvidence(reason=reason, prior=PRIOR)


def _signature(settings: Any) -> str:
    return f"gnd:v{VERSION}/{constants_id()}"


SPEC = declare_dimension(
    About(
        "grounding", "nothing", "ground", "share of names/numbers/dates sourced", validity_rho=0.43
    ),
    _score,
    reads=("spacy", "embeddings"),
    unavailable=_unavailable,
    signature=_signature,
    metric_doc=(
        "Share of the summary's names, numbers and dates that its source states, LLM-free: the "
        "summary's spaCy entities and numbers checked against a normalised index of the source "
        "(docs/DIMENSIONS.md). Without ``model`` no LLM is built or called: "
        "``SummaryGroundingMetric(0.8).measure(case)`` runs offline."
    ),
)
