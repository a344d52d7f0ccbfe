"""The report's coverage map: each source's sentences shaded by what its summaries cover.

The results file holds no source text (only ``input_hash``), so the map is drawn where the
inputs are known: ``score`` hands the report its input rows, ``report`` reads the input file again
(``--input``, or the input the run recorded). A source is used only for the rows whose
``input_hash`` it reproduces, so a changed input never shades another text.

Each question is placed on the source sentence(s) its reference answer comes from, offline and
deterministically: the answer's content words (:func:`shared.pipeline.retrieval.terms`) weighted
by their rarity in the source (BM25's idf over the sentences); the sentence holding the largest
share of that weight is the question's, provided it holds at least half of it; a second sentence
is added when it holds at least half of what the first lacks (an answer drawn from two
sentences). A question that no sentence matches so is counted as "not placed".

A summary covers a question when the judge graded its answer 3 or more (and, on the sentences
path, pointed at a summary sentence): the rule of the report's "Missed questions" table. A sentence
is *covered* when every summary of its source covers every question placed on it, *missed* when
none does, *partly* covered otherwise; a sentence no question is about stays plain. A source of
more than :data:`WHOLE_SENTENCES` sentences or :data:`WHOLE_CHARS` characters (a chunked long
source) is shown as a window: the sentences with a question and :data:`CONTEXT` sentences either
side, every other run of sentences folded into one "… N sentences …" marker. At most
:data:`MAX_SOURCES` sources are mapped (those with the worst summaries), so a run over thousands
of sources does not copy them all into its report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..evaluation.options import normalise_source
from ..pipeline.chunking import sentence_spans
from ..pipeline.retrieval import BM25, terms
from ..runs.inputs import InputRow
from ..runs.results import STATUS_OK, Row, questions_problem

WHOLE_SENTENCES = 200
"""Sources of up to this many sentences are shown whole; longer ones as a window."""
WHOLE_CHARS = 30_000
"""... and of up to this many characters."""
MAX_SOURCES = 20
"""The sources mapped in one report, in the order of their worst summary."""
CONTEXT = 1
"""Sentences shown either side of a questioned sentence in a window."""
SENTENCE_CHARS = 600
"""A shown sentence longer than this is cut (with "…"): one run-on line cannot swamp the map."""
QUESTION_CHARS = 90
"""A question in a sentence's tooltip longer than this is cut (with "…")."""
COVERED_GRADE = 3
"""A grade from which a summary covers a question (below it the question is missed)."""

CLASSES = {"covered": "cm-c", "partly": "cm-p", "missed": "cm-m"}
"""The one class each questioned sentence's span carries."""


def sources_of(inputs: Iterable[InputRow], rows: Iterable[Row]) -> dict[str, str]:
    """Each result row's source text by id, for the rows whose ``input_hash`` the input row
    reproduces (a source given as several documents is joined by blank lines)."""
    by_id = {row.id: row for row in inputs if row.error is None and row.source}
    out: dict[str, str] = {}
    for row in rows:
        given = by_id.get(str(row.get("id")))
        if given is None or given.input_hash != row.get("input_hash"):
            continue
        try:
            out[given.id] = normalise_source(given.source)  # the text the row was scored on
        except (TypeError, ValueError):
            continue  # bad input: nothing was scored against it
    return out


@dataclass
class _Question:
    text: str
    answer: str
    importance: int
    asked: int = 0
    by: list[str] = field(default_factory=list)
    """The ids of the summaries that cover it."""

    @property
    def covered(self) -> int:
        return len(self.by)


@dataclass
class SourceMap:
    """One source's map, ready for the template."""

    anchor: str
    ids: list[str]
    pieces: list[tuple[str, str, str]]
    """(class, title, text) in source order: a class of :data:`CLASSES`, ``""`` for a plain
    sentence or the whitespace between sentences, ``"cm-gap"`` for a folded run."""
    sentences: int
    shown: int
    questioned: int
    questions: int
    placed: int
    counts: dict[str, int] = field(default_factory=dict)


def _covers(question: Mapping[str, Any]) -> bool:
    grade = question.get("grade")
    pointed = question.get("sentence")
    return isinstance(grade, int) and grade >= COVERED_GRADE and pointed != 0


def _questions(rows: Sequence[Row]) -> list[_Question]:
    """The counted questions of the rows, one entry per (question, reference answer), with how
    many of the rows asked and covered it."""
    merged: dict[tuple[str, str], _Question] = {}
    for row in rows:
        for q in (row.get("evidence") or {}).get("questions") or []:
            if not isinstance(q, dict) or not q.get("counted", True):
                continue
            answer = str(q.get("reference_answer") or "")
            key = (str(q.get("question") or ""), answer)
            entry = merged.setdefault(key, _Question(key[0], answer, int(q.get("importance") or 1)))
            entry.asked += 1
            if _covers(q):
                entry.by.append(str(row.get("id")))
    return list(merged.values())


def place(sentences: Sequence[str], answer: str, index: BM25 | None = None) -> list[int]:
    """The indices of the sentence(s) ``answer`` comes from (see the module's account), best
    first; empty when no sentence holds half of the answer's weight."""
    index = index or BM25(sentences)
    wanted = set(terms(answer))
    top = max(index.idf.values(), default=1.0)
    weight = {t: index.idf.get(t, top) for t in wanted}
    total = sum(weight.values())
    if not total:
        return []

    def share(i: int, among: set[str]) -> float:
        return sum(weight[t] for t in among & index.docs[i].keys())

    candidates = sorted({i for t in wanted for i in index.postings.get(t, [])})
    if not candidates:
        return []
    best = max(candidates, key=lambda i: (share(i, wanted), -i))
    if share(best, wanted) < total / 2:
        return []
    rest = wanted - index.docs[best].keys()
    left = sum(weight[t] for t in rest)
    if not rest or left < total / 4:
        return [best]
    second = max(candidates, key=lambda i: (share(i, rest), -i))
    return [best, second] if share(second, rest) >= left / 2 else [best]


def _state(questions: Sequence[_Question]) -> str:
    asked = sum(q.asked for q in questions)
    covered = sum(q.covered for q in questions)
    return "covered" if covered == asked else "missed" if covered == 0 else "partly"


def _title(number: int, questions: Sequence[_Question]) -> str:
    lines = [f"sentence {number}"]
    for q in sorted(questions, key=lambda q: -q.importance):
        text = _clip(q.text, QUESTION_CHARS)
        who = ", ".join(q.by[:3]) + (", …" if len(q.by) > 3 else "")
        line = f"{text} (importance {q.importance}): covered by {q.covered} of {q.asked}"
        lines.append(f"{line} ({who})" if who and q.asked > 1 else line)
    return "\n".join(lines)


def _folded(count: int, after: bool) -> tuple[str, str, str]:
    """The marker of ``count`` folded sentences, spaced from what it follows."""
    return ("cm-gap", "", f"{' ' if after else ''}[… {count} sentence{'s' * (count > 1)} …] ")


def _clip(text: str, limit: int = SENTENCE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def source_map(source: str, rows: Sequence[Row], anchor: str) -> SourceMap:
    """The map of ``source`` for its summaries ``rows`` (worst first)."""
    spans = sentence_spans(source)
    sentences = [source[a:b] for a, b in spans]
    questions = _questions(rows)
    index = BM25(sentences)
    on: dict[int, list[_Question]] = {}
    placed = 0
    for q in questions:
        where = place(sentences, q.answer, index)
        placed += bool(where)
        for i in where:
            on.setdefault(i, []).append(q)
    near = {j for i in on for j in range(i - CONTEXT, i + CONTEXT + 1)}
    whole = len(spans) <= WHOLE_SENTENCES and len(source) <= WHOLE_CHARS
    shown = set(range(len(spans))) if whole else {j for j in near if 0 <= j < len(spans)}
    pieces: list[tuple[str, str, str]] = []
    counts = dict.fromkeys(CLASSES, 0)
    previous = -1  # the last sentence shown
    for i, (start, end) in enumerate(spans):
        if i not in shown:
            continue
        if i > previous + 1:
            pieces.append(_folded(i - previous - 1, bool(pieces)))
        elif pieces:
            pieces.append(("", "", "\n\n" if "\n\n" in source[spans[i - 1][1] : start] else " "))
        if i in on:
            state = _state(on[i])
            counts[state] += 1
            pieces.append((CLASSES[state], _title(i + 1, on[i]), _clip(source[start:end])))
        else:
            pieces.append(("", "", _clip(source[start:end])))
        previous = i
    if previous < len(spans) - 1:
        pieces.append(_folded(len(spans) - 1 - previous, bool(pieces)))
    return SourceMap(
        anchor=anchor,
        ids=[str(r.get("id")) for r in rows],
        pieces=pieces,
        sentences=len(spans),
        shown=len(shown),
        questioned=len(on),
        questions=len(questions),
        placed=placed,
        counts=counts,
    )


def unmappable(row: Row) -> str | None:
    """Why a scored row's questions cannot be mapped (a hand-edited field), or None."""
    return questions_problem(row.get("evidence"))


def coverage_maps(
    ranked: Sequence[Row], sources: Mapping[str, str]
) -> tuple[list[SourceMap], dict[str, str], int]:
    """One map per distinct source of the scored rows ``ranked`` (worst first: the sources in
    the order of their worst summary; the first :data:`MAX_SOURCES`), each row id's map anchor,
    and how many sources were left unmapped for that limit. Rows with no questions or no known
    source are left out."""
    groups: dict[str, list[Row]] = {}
    for row in ranked:
        text = sources.get(str(row.get("id")))
        questions = (row.get("evidence") or {}).get("questions")
        if row.get("status") == STATUS_OK and text and questions and not unmappable(row):
            groups.setdefault(text, []).append(row)
    mapped = list(groups.items())[:MAX_SOURCES]
    maps = [source_map(text, rows, f"source-{n}") for n, (text, rows) in enumerate(mapped, 1)]
    anchors = {row_id: m.anchor for m in maps for row_id in m.ids}
    return maps, anchors, len(groups) - len(mapped)
