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

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .evidence import GroundingEvidence, GroundingItem
from .nlp import DEFAULT_SPACY_MODEL, load_pipeline
from .support import SentenceParse, SourceSentences, index_sentences, score_sentences

PRIOR = 4.0
"""Pseudo-items counted as supported: the value most cross-validation folds chose on SummEval
(docs/VALIDITY.md; the grid was nearly flat, 0.429 to 0.433)."""
NUMBER_WEIGHT = 2.0
"""Weight of a number or date item against a name item: an invented number is a definite error,
while a name can be missed by NER or spelled another way; chosen by the same cross-validation."""

NAME_LABELS = frozenset(
    {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW"}
    | {"PER", "MISC"}
)
"""People, places, organisations, events, works, products, nationalities/groups (and laws);
``PER`` and ``MISC`` are the WikiNER labels of the French (and most other non-English) spaCy
pipelines, whose ``LOC`` and ``ORG`` are already here."""
NUMBER_LABELS = frozenset({"CARDINAL", "MONEY", "PERCENT", "QUANTITY", "ORDINAL"})
DATE_LABELS = frozenset({"DATE", "TIME"})

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:['\u2019][^\W\d_]+)*|[%$\u20ac\u00a3\u00a5]")
"""Digit runs (with ``.``/``,`` inside), words (with an inner apostrophe), currency and ``%``.
Hyphens and slashes split: "42-kilometre" is "42", "kilometre"; "15/03/2015" is three numbers."""
_URL = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\w+", re.IGNORECASE)
_DOTTED = re.compile(r"\b(?:[A-Za-z]\.){2,}")
"""Dotted acronyms ("U.S.", "U.N."), which the tokenizer splits into letters."""
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DOT_THOUSANDS = re.compile(r"\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?")
"""Thousands grouped by dots, as German and Spanish write them ("1.500.000"); with one dot
("1.500") the number is left as a decimal, since English reads it so."""
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOP = frozenset({"the", "of", "and", "a", "an", "de", "la", "le", "van", "von", "der", "for"})

_SMALL = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    w: 10 * i
    for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split())
    if w != "_"
}
_ORDINAL_WORDS = {
    w: i + 1
    for i, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
        "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
        "twentieth".split()
    )
}
_ORDINAL_WORDS.update({"thirtieth": 30, "fortieth": 40, "fiftieth": 50, "hundredth": 100})
_SCALES = {
    "hundred": 1e2,
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "m": 1e6,
    "mn": 1e6,
    "mln": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
}
_CURRENCY_BEFORE = {"$": "USD", "\u20ac": "EUR", "\u00a3": "GBP", "\u00a5": "JPY", "us": "USD"}
_UNITS = {
    # currencies written after the number
    "euro": "EUR",
    "eur": "EUR",
    "dollar": "USD",
    "usd": "USD",
    "pound": "GBP",
    "gbp": "GBP",
    "sterling": "GBP",
    "yen": "JPY",
    "yuan": "CNY",
    "rupee": "INR",
    "franc": "CHF",
    # percentages
    "%": "%",
    "percent": "%",
    "pc": "%",
    "percentage": "%",
    # lengths, masses, volumes, areas, speeds, durations
    "km": "km",
    "kilometre": "km",
    "kilometer": "km",
    "metre": "m",
    "meter": "m",
    "cm": "cm",
    "centimetre": "cm",
    "centimeter": "cm",
    "mm": "mm",
    "millimetre": "mm",
    "millimeter": "mm",
    "mile": "mile",
    "mi": "mile",
    "foot": "ft",
    "feet": "ft",
    "ft": "ft",
    "inch": "in",
    "yard": "yd",
    "kg": "kg",
    "kilogram": "kg",
    "kilo": "kg",
    "gram": "g",
    "tonne": "t",
    "ton": "t",
    "lb": "lb",
    "ounce": "oz",
    "oz": "oz",
    "litre": "l",
    "liter": "l",
    "gallon": "gal",
    "hectare": "ha",
    "ha": "ha",
    "acre": "acre",
    "mph": "mph",
    "kph": "kph",
    "degree": "deg",
    "hour": "h",
    "hr": "h",
    "minute": "min",
    "min": "min",
    "second": "s",
    "sec": "s",
    "day": "day",
    "week": "week",
    "month": "month",
    "year": "year",
    "yr": "year",
}
_ORDINAL_SUFFIX = frozenset({"st", "nd", "rd", "th"})
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_WEEKDAYS = {
    name: i
    for i, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}

Quantity = tuple[float, str | None]
"""A value (rounded, scale applied) and its unit: a currency code, ``%``, a unit, ``ord``."""


def norm_word(word: str) -> str:
    """Lower-cased, possessive and a plural ``s`` dropped: "Townsend's" -> "townsend"."""
    w = word.lower().replace("\u2019", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'")
    if w == "s":  # a possessive written apart, as in tokenized text: "north 's"
        return ""
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w


def _key(value: float) -> float:
    """Rounded to 6 significant digits, so 1.5 * 1e6 and 1500000 are one key."""
    return float(f"{value:.6g}")


def _parse_digits(text: str) -> float | None:
    if _DOT_THOUSANDS.fullmatch(text):
        text = text.replace(".", "").replace(",", ".")
    elif _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    elif text.count(",") == 1 and "." not in text:
        text = text.replace(",", ".")  # a decimal comma: "1,5"
    try:
        return float(text)
    except ValueError:
        return None


def _word_number(words: Sequence[str], i: int) -> tuple[float, int] | None:
    """A spelled-out number starting at ``words[i]`` ("twenty five", "three hundred"), with the
    index after it; None when ``words[i]`` is no number word."""
    total, current, j, seen = 0.0, 0.0, i, False
    while j < len(words):
        w = words[j]
        if w in _SMALL:
            current += _SMALL[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred" and seen:
            current = max(current, 1) * 100
        elif w == "and" and seen and j + 1 < len(words) and words[j + 1] in _SMALL | _TENS:
            pass
        else:
            break
        seen = True
        j += 1
    if not seen:
        return None
    return total + current, j


def scan_quantities(words: Sequence[str]) -> list[tuple[Quantity, int, int]]:
    """Every number in lower-cased tokens, as ((value, unit), first token, end token).

    Reads a currency sign or code before the number, a scale word after it ("million", "m",
    "bn"), then an ordinal suffix, a currency or a unit ("per cent" is ``%``). Bare "one" (more
    often a pronoun than a count) is skipped.
    """
    out: list[tuple[Quantity, int, int]] = []
    n = len(words)
    i = 0
    while i < n:
        w = words[i]
        start = i
        if w[0].isdigit():
            value = _parse_digits(w)
            j = i + 1
            if value is None:
                i += 1
                continue
        elif w in _ORDINAL_WORDS:
            out.append(((float(_ORDINAL_WORDS[w]), "ord"), i, i + 1))
            i += 1
            continue
        else:
            parsed = _word_number(words, i)
            if parsed is None or (words[i] == "one" and parsed[1] == i + 1):
                i += 1
                continue
            value, j = parsed
        currency = None
        if start > 0 and words[start - 1] in _CURRENCY_BEFORE:
            currency = _CURRENCY_BEFORE[words[start - 1]]
            start -= 1
        if j < n and words[j] in _SCALES:
            value *= _SCALES[words[j]]
            j += 1
        unit: str | None = currency
        if j < n:
            nxt = words[j]
            if nxt in _ORDINAL_SUFFIX:
                unit, j = "ord", j + 1
            elif nxt == "per" and j + 1 < n and words[j + 1] == "cent":
                unit, j = "%", j + 2
            elif currency is None and norm_word(nxt) in _UNITS:
                unit, j = _UNITS[norm_word(nxt)], j + 1
            elif currency is None and nxt in _UNITS:
                unit, j = _UNITS[nxt], j + 1
        out.append(((_key(value), unit), start, j))
        i = max(j, i + 1)
    return out


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token, char offset) with URLs and e-mail addresses blanked out (their digits are no
    facts)."""
    text = _URL.sub(lambda m: " " * len(m.group()), text)
    return [(m.group(), m.start()) for m in _TOKEN.finditer(text)]


@dataclass
class SourceIndex:
    """What one source states, for constant-time look-ups; built in one pass by
    :func:`index_source`."""

    text: str
    part_starts: list[int] = field(default_factory=lambda: [0])
    words: list[str] = field(default_factory=list)
    """Normalised content words (stop words out), in order."""
    offsets: list[int] = field(default_factory=list)
    positions: dict[str, list[int]] = field(default_factory=dict)
    chunks: dict[str, set[int]] = field(default_factory=dict)
    """Word -> ids of the capitalised name runs it occurs in (partial names)."""
    acronyms: dict[str, int] = field(default_factory=dict)
    """Initials of capitalised runs of 2+ words -> char offset ("european union" -> "eu")."""
    quantities: dict[Quantity, int] = field(default_factory=dict)
    values: dict[float, int] = field(default_factory=dict)
    months: dict[int, int] = field(default_factory=dict)
    weekdays: dict[int, int] = field(default_factory=dict)
    sentences: SourceSentences | None = None
    """The source's sentences for version 2's per-sentence support (:mod:`.support`)."""

    def where(self, offset: int) -> tuple[int, str]:
        """(part number, a snippet) for a char offset into the joined source."""
        part = bisect.bisect_right(self.part_starts, offset) - 1
        return part, self.text[max(0, offset - 30) : offset + 50].replace("\n", " ")


def index_source(source: str | Sequence[str]) -> SourceIndex:
    """Index a source (a string, or a list of strings such as Ragas's ``reference_contexts``)."""
    if isinstance(source, str):
        parts = [source]
    else:
        parts = [p if isinstance(p, str) else str(p) for p in source]
    starts, pos = [], 0
    for p in parts:
        starts.append(pos)
        pos += len(p) + 2
    text = "\n\n".join(parts)
    idx = SourceIndex(text=text, part_starts=starts or [0], sentences=index_sentences(text))
    toks = _tokens(text)
    lower = [t.lower() for t, _ in toks]
    chunk_id, in_chunk, chunk_words, chunk_start = 0, False, [], 0
    for tok, off in toks:
        w = norm_word(tok)
        capital = tok[:1].isupper()
        if capital and w and tok.lower() not in _STOP:
            if not in_chunk:
                chunk_id, in_chunk, chunk_words, chunk_start = chunk_id + 1, True, [], off
            idx.chunks.setdefault(w, set()).add(chunk_id)
            chunk_words.append(w)
        elif not (in_chunk and tok.lower() in _STOP):
            if in_chunk and len(chunk_words) >= 2:
                idx.acronyms.setdefault("".join(c[0] for c in chunk_words), chunk_start)
            in_chunk = False
        if w and w not in _STOP:
            idx.positions.setdefault(w, []).append(len(idx.words))
            idx.words.append(w)
            idx.offsets.append(off)
        if w in _MONTHS and (tok[:1].isupper() or w != "may"):
            idx.months.setdefault(_MONTHS[w], off)
        if w in _WEEKDAYS and (tok[:1].isupper() or len(w) > 3):
            idx.weekdays.setdefault(_WEEKDAYS[w], off)
    if in_chunk and len(chunk_words) >= 2:
        idx.acronyms.setdefault("".join(c[0] for c in chunk_words), chunk_start)
    for m in _DOTTED.finditer(text):
        idx.acronyms.setdefault(m.group().replace(".", "").lower(), m.start())
    for (value, unit), first, _ in scan_quantities(lower):
        off = toks[first][1]
        idx.quantities.setdefault((value, unit), off)
        idx.values.setdefault(value, off)  # a date's "15th" is also the day 15
    # a scaled number also states its base: "1.5 million" says 1.5
    for k, tok in enumerate(lower):
        if tok[0].isdigit() and k + 1 < len(lower) and lower[k + 1] in _SCALES:
            value = _parse_digits(tok)
            if value is not None:
                idx.values.setdefault(_key(value), toks[k][1])
    return idx


@dataclass(frozen=True)
class CheckItem:
    """One checkable item of a summary: its text, kind (spaCy label, or NUMBER) and sentence."""

    text: str
    label: str
    sentence: str


def summary_items(doc: Any, *, number_words: bool = True) -> list[CheckItem]:
    """The checkable items of a parsed summary (a spaCy ``Doc`` with sentences and entities).

    Cheap: it reads the parse; meant to be called where the dimensions already parse summaries.
    ``number_words=False`` (a language other than English, whose number words this module does
    not read) keeps only number tokens with a digit: French "un" is a number to spaCy.
    """
    items: list[CheckItem] = []
    covered: set[int] = set()
    wanted = NAME_LABELS | NUMBER_LABELS | DATE_LABELS
    for ent in doc.ents:
        if ent.label_ not in wanted or not ent.text.strip():
            continue
        covered.update(range(ent.start, ent.end))
        items.append(CheckItem(ent.text.strip(), ent.label_, ent.sent.text.strip()))
    for tok in doc:
        if tok.i in covered or not tok.like_num or tok.like_url:
            continue
        if tok.lower_ in ("one", "a") or not _TOKEN.fullmatch(tok.text):
            continue
        if not number_words and not any(ch.isdigit() for ch in tok.text):
            continue
        items.append(CheckItem(tok.text, "NUMBER", tok.sent.text.strip()))
    return items


def number_items(sentences: Sequence[str]) -> list[CheckItem]:
    """The numbers of a summary with no pipeline (no entities, or a tokenizer that splits digits
    apart), read off its sentences' text: digit runs in any script ("１２", "2024年", "3,5 %"),
    outside URLs and e-mail addresses."""
    items: list[CheckItem] = []
    for sentence in sentences:
        text = _URL.sub(lambda m: " " * len(m.group()), sentence)
        items.extend(CheckItem(m.group(), "NUMBER", sentence) for m in _NUMBER.finditer(text))
    return items


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
