"""What changed, fact by fact, between two runs: per id, the questions B answers worse than A and
the unsupported sentences (or claims) that only B has.

The paired statistics of :func:`shared.compare` say *whether* B scores lower; this says *where*:
it reads the evidence each results row carries (``evidence.questions``: question, importance,
grade, the answer or the pointed sentence; ``evidence.claims``: the sentence or claim, its
verdict, quote, reason and, on the sentences path, the error type and the wrong span).

Rules (docs/COMPARE.md, "Fact-level diff"):

- Questions are matched by their text (whitespace and case ignored; a text asked twice is
  matched in order). A question is *answered worse* when both sides graded it, both counted it,
  and B's grade is lower. It is ranked by its importance-weighted drop, (grade A - grade B) x
  importance (the higher of the two sides' importance when they differ), worst first.
- A question in one file only (the questions were regenerated or edited) is not a worse answer:
  it is listed apart (``questions_only_a`` / ``questions_only_b``), never graded against
  nothing.
- A sentence or claim of B that is not ``supported`` is *new* unless A has an unsupported
  sentence or claim of the same text (matched as questions are). Its verdict, quote, reason,
  error type and span come from B.
- A row whose evidence is missing on either side (scored without a judge, unscored, bad input)
  is not compared: it is listed with the reason, and shows no difference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..runs.results import STATUS_BAD_INPUT, STATUS_UNSCORED, questions_problem
from .lookup import find

NO_EVIDENCE = "no judge evidence"
"""Why a row is not compared when it has no questions and no claims (a run without a judge)."""


@dataclass
class WorseAnswer:
    """A question both runs asked and graded, which B answers worse."""

    question: str
    grade_a: int
    grade_b: int
    importance: int
    """The weight of the drop: the higher of the two sides' importance (1-5)."""
    weighted_drop: int
    """(grade_a - grade_b) x importance: what ranks the question, worst first."""
    reference_answer: str = ""
    answer_a: str | None = None
    answer_b: str | None = None
    grade_reason_b: str = ""

    @property
    def drop(self) -> int:
        return self.grade_a - self.grade_b


@dataclass
class NewUnsupported:
    """A sentence (sentences path) or claim (claims paths) B's judge did not find supported,
    where A has no unsupported one of the same text."""

    text: str
    verdict: str
    quote: str = ""
    reason: str = ""
    error_type: str | None = None
    span: str | None = None


@dataclass
class RowFacts:
    """One paired id. ``unavailable_a`` / ``unavailable_b`` say why a side has no evidence to
    compare ("no judge evidence", "unscored", "bad_input"); the row is then not compared and
    its lists are empty."""

    id: str
    worse_answers: list[WorseAnswer] = field(default_factory=list)
    new_unsupported: list[NewUnsupported] = field(default_factory=list)
    questions_only_a: list[str] = field(default_factory=list)
    questions_only_b: list[str] = field(default_factory=list)
    unavailable_a: str | None = None
    unavailable_b: str | None = None

    @property
    def compared(self) -> bool:
        return self.unavailable_a is None and self.unavailable_b is None

    @property
    def changed(self) -> bool:
        """B answers a question worse or has a new unsupported sentence or claim."""
        return bool(self.worse_answers or self.new_unsupported)

    @property
    def weighted_drop(self) -> int:
        return sum(w.weighted_drop for w in self.worse_answers)


@dataclass
class FactDiff:
    """Every paired id's :class:`RowFacts`, in A's order."""

    rows: list[RowFacts] = field(default_factory=list)

    def changed(self) -> list[RowFacts]:
        """The ids where B got worse fact by fact, worst first: most facts lost (worse answers
        plus new unsupported sentences), then the largest weighted drop, then A's order."""
        hits = [r for r in self.rows if r.changed]
        return sorted(
            hits, key=lambda r: (-len(r.worse_answers) - len(r.new_unsupported), -r.weighted_drop)
        )

    def get(self, row_id: str) -> RowFacts:
        return find(self.rows, lambda row: row.id == row_id, f"no paired id {row_id!r}")

    @property
    def compared(self) -> int:
        return sum(r.compared for r in self.rows)

    def not_compared(self) -> list[RowFacts]:
        return [r for r in self.rows if not r.compared]

    def to_dict(self) -> dict[str, Any]:
        """What ``--json`` writes under ``facts``: the counts, the changed ids (worst first, with
        their lists), the ids not compared and why, and the questions found in one file only."""
        return {
            "compared": self.compared,
            "changed": [_row_dict(r) for r in self.changed()],
            "not_compared": [
                {"id": r.id, "a": r.unavailable_a, "b": r.unavailable_b}
                for r in self.not_compared()
            ],
            "questions_in_one_file": [
                {"id": r.id, "only_a": r.questions_only_a, "only_b": r.questions_only_b}
                for r in self.rows
                if r.questions_only_a or r.questions_only_b
            ],
        }


def _row_dict(row: RowFacts) -> dict[str, Any]:
    return {
        "id": row.id,
        "weighted_drop": row.weighted_drop,
        "worse_answers": [{**asdict(w), "drop": w.drop} for w in row.worse_answers],
        "new_unsupported": [
            {k: v for k, v in asdict(n).items() if v is not None} for n in row.new_unsupported
        ],
    }


# ---------------------------------------------------------------------------------------------
# The diff
# ---------------------------------------------------------------------------------------------


def fact_diff(
    ids: Sequence[str], by_a: Mapping[str, Mapping[str, Any]], by_b: Mapping[str, Mapping[str, Any]]
) -> FactDiff:
    """The fact-level diff of the paired ``ids`` (rows as :func:`shared.compare` reads them)."""
    out = []
    for row_id in ids:
        a, b = by_a[row_id], by_b[row_id]
        facts = RowFacts(id=row_id, unavailable_a=_unavailable(a), unavailable_b=_unavailable(b))
        if facts.compared:
            _diff_questions(facts, _items(a, "questions"), _items(b, "questions"))
            facts.new_unsupported = _new_unsupported(_items(a, "claims"), _items(b, "claims"))
        out.append(facts)
    return FactDiff(out)


def _items(row: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    evidence = row.get("evidence")
    items = evidence.get(kind) if isinstance(evidence, Mapping) else None
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _unavailable(row: Mapping[str, Any]) -> str | None:
    """Why the row has no evidence to compare, or None. An unscored row's evidence may be
    partial, so it is not compared either."""
    status = row.get("status")
    if status in (STATUS_UNSCORED, STATUS_BAD_INPUT):
        return str(status)
    problem = questions_problem(row.get("evidence"))
    if problem is not None:  # a hand-edited field (an importance of -5): never ranked
        return f"bad questions ({problem})"
    if not _items(row, "questions") and not _items(row, "claims"):
        return NO_EVIDENCE
    return None


def _key(text: Any) -> str:
    return " ".join(str(text).split()).casefold()


def _grade(item: Mapping[str, Any]) -> int | None:
    grade = item.get("grade")
    return grade if isinstance(grade, int) and not isinstance(grade, bool) else None


def _importance(item: Mapping[str, Any]) -> int:
    value = item.get("importance")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _diff_questions(
    facts: RowFacts, items_a: list[Mapping[str, Any]], items_b: list[Mapping[str, Any]]
) -> None:
    """Match the two sides' questions by text; record the worse answers and the questions one
    side alone asked."""
    pending: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for item in items_a:
        pending[_key(item.get("question", ""))].append(item)
    for item_b in items_b:
        matches = pending.get(_key(item_b.get("question", "")))
        if not matches:
            facts.questions_only_b.append(str(item_b.get("question", "")))
            continue
        worse = _worse(matches.pop(0), item_b)
        if worse is not None:
            facts.worse_answers.append(worse)
    facts.questions_only_a = [str(i.get("question", "")) for rest in pending.values() for i in rest]
    facts.worse_answers.sort(key=lambda w: (-w.weighted_drop, -w.drop))


def _worse(item_a: Mapping[str, Any], item_b: Mapping[str, Any]) -> WorseAnswer | None:
    grade_a, grade_b = _grade(item_a), _grade(item_b)
    counted = item_a.get("counted", True) is not False and item_b.get("counted", True) is not False
    if grade_a is None or grade_b is None or not counted or grade_b >= grade_a:
        return None
    importance = max(_importance(item_a), _importance(item_b))
    return WorseAnswer(
        question=str(item_b.get("question", "")),
        grade_a=grade_a,
        grade_b=grade_b,
        importance=importance,
        weighted_drop=(grade_a - grade_b) * importance,
        reference_answer=str(item_b.get("reference_answer", "")),
        answer_a=_text(item_a.get("summary_answer")),
        answer_b=_text(item_b.get("summary_answer")),
        grade_reason_b=str(item_b.get("grade_reason", "")),
    )


def _new_unsupported(
    claims_a: list[Mapping[str, Any]], claims_b: list[Mapping[str, Any]]
) -> list[NewUnsupported]:
    seen: dict[str, int] = defaultdict(int)
    for claim in claims_a:
        if claim.get("verdict") != "supported":
            seen[_key(claim.get("claim", ""))] += 1
    out = []
    for claim in claims_b:
        if claim.get("verdict") == "supported":
            continue
        key = _key(claim.get("claim", ""))
        if seen[key]:
            seen[key] -= 1
            continue
        out.append(
            NewUnsupported(
                text=str(claim.get("claim", "")),
                verdict=str(claim.get("verdict", "")),
                quote=str(claim.get("quote", "") or ""),
                reason=str(claim.get("reason", "") or ""),
                error_type=_text(claim.get("error_type")),
                span=_text(claim.get("span")),
            )
        )
    return out
