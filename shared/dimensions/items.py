"""The items of a summary that grounding checks (names, numbers, dates) and the source index
they are looked up in: token and number parsing, :func:`summary_items`, :func:`number_items`,
:func:`index_source`. No scoring here; :mod:`shared.dimensions.nlp` reads items from a parse
without importing the scorer.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .support import SourceSentences, index_sentences

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
