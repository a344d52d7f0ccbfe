"""Frozen questions: a source's weighted questions, with reference answers and importance, as a
file people read, edit and keep (``summary-eval questions``, :func:`shared.freeze_questions`).

The file is JSON Lines, one object per question::

    {"source_id": "a1", "source_hash": "3f0c9b1e2d4a6c58", "question": "...",
     "reference_answer": "...", "importance": 4, "judge": "gpt-4o-mini",
     "date": "2026-12-06", "edited": false}

``source_hash`` (:func:`source_hash`) keys a source's questions: a run uses them only for a
source whose text hashes the same, so a source edited since its questions were frozen is never
scored against another text's questions. ``edited`` is for people: the command writes false and
never sets it; whoever edits a question sets it true, and the flag reaches the results.

:class:`FrozenQuestions` is the value of the ``questions_file`` option (a path is read into
one). It is hashable by its content, so options holding it stay usable as cache keys.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import bounded_json
from ..core.files import open_for_writing, read_regular
from ..core.redact import safe_record
from ..prompts.schemas import ANSWER_CHARS, QUESTION_CHARS
from .result import QuestionEvidence

FIELDS = (
    "source_id",
    "source_hash",
    "question",
    "reference_answer",
    "importance",
    "judge",
    "date",
    "edited",
)
"""The keys of one line of a questions file, in written order."""

MAX_PER_SOURCE = 100
"""The most questions one source may have in a questions file: the cap on generated ones
(``n``, :data:`shared.evaluation.options.MAX_N`)."""
TEXT_CHARS = {"question": QUESTION_CHARS, "reference_answer": ANSWER_CHARS}
"""The longest question and reference answer, in characters: a generated one's bounds
(:mod:`shared.prompts.schemas`), so frozen questions never make a longer prompt than generated
ones."""
IMPORTANCE = range(1, 6)
"""The importance a question may have: 1 (a minor detail) to 5 (a central point)."""


def source_hash(source: str) -> str:
    """The key of a source's questions: 16 hex digits of the SHA-256 of its text as the core
    scores it (:func:`~shared.evaluation.options.normalise_source`: stripped, a list of
    passages joined by blank lines; give that text)."""
    return hashlib.sha256(source.strip().encode()).hexdigest()[:16]


@dataclass(frozen=True)
class FrozenQuestion:
    """One line of a questions file."""

    source_id: str
    source_hash: str
    question: str
    reference_answer: str
    importance: int
    judge: str = ""
    date: str = ""
    edited: bool = False

    def as_json(self) -> str:
        """The line as a questions file holds it: no known secret in it (a judge may quote
        one from the source), the judge named as a results file names it."""
        record = safe_record({name: getattr(self, name) for name in FIELDS})
        return json.dumps(record, ensure_ascii=False)

    def evidence(self) -> QuestionEvidence:
        return QuestionEvidence(
            question=self.question,
            importance=self.importance,
            reference_answer=self.reference_answer,
            edited=self.edited,
        )


@dataclass(frozen=True, eq=False)
class FrozenQuestions:
    """Every question of a questions file, grouped by source hash, in file order.

    Equal (and hashed) by content: the questions, answers and importance of every source
    (:attr:`digest`). ``path``: the file it was read from, for messages."""

    items: tuple[FrozenQuestion, ...]
    path: str | None = None
    _by_hash: dict[str, tuple[FrozenQuestion, ...]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        groups: dict[str, list[FrozenQuestion]] = {}
        for item in self.items:
            groups.setdefault(item.source_hash, []).append(item)
        object.__setattr__(self, "_by_hash", {h: tuple(g) for h, g in groups.items()})

    @property
    def digest(self) -> str:
        """Six hex digits over every source's questions, answers and importance."""
        return _digest(self.items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrozenQuestions) and other.items == self.items

    def __hash__(self) -> int:
        return hash(self.digest)

    def __str__(self) -> str:
        counts = f"{len(self._by_hash)} sources, {len(self.items)} questions"
        return f"{self.path} ({counts})" if self.path else f"frozen questions: {counts}"

    @property
    def hashes(self) -> tuple[str, ...]:
        return tuple(self._by_hash)

    def ids(self) -> dict[str, set[str]]:
        """Each source id of the file and the source hashes it was frozen under."""
        out: dict[str, set[str]] = {}
        for item in self.items:
            out.setdefault(item.source_id, set()).add(item.source_hash)
        return out

    def get(self, source: str) -> tuple[FrozenQuestion, ...] | None:
        """The questions frozen for ``source``'s text (normalised), or None."""
        return self._by_hash.get(source_hash(source))

    def of_hash(self, key: str) -> tuple[FrozenQuestion, ...]:
        return self._by_hash.get(key, ())

    def narrowed(self, source: str) -> FrozenQuestions | None:
        """Only ``source``'s questions (None when the file has none for its text)."""
        found = self.get(source)
        if found is None:
            return None
        return self if found == self.items else FrozenQuestions(found, self.path)

    def write(self, path: str | os.PathLike[str]) -> None:
        """The file, one line per question (a new file: an existing one is refused)."""
        with open_for_writing(path, "x") as handle:
            handle.writelines(item.as_json() + "\n" for item in self.items)


def _digest(items: Iterable[FrozenQuestion]) -> str:
    text = "\n".join(
        f"{q.source_hash}:{q.importance}:{q.question}\t{q.reference_answer}" for q in items
    )
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def signature_n(frozen: FrozenQuestions) -> str:
    """The signature's ``n`` field of a row scored with ``frozen`` (narrowed to its source):
    ``frozen<count>:<digest>``, so a result scored with frozen questions never shares a
    signature with one scored with generated or other questions."""
    return f"frozen{len(frozen.items)}:{frozen.digest}"


@dataclass
class FrozenUse:
    """Which distinct sources of a run take their questions from a questions file: by the id
    each was first seen under."""

    frozen: list[str] = field(default_factory=list)
    generated: list[str] = field(default_factory=list)
    """Sources the file has no questions for: generated as without the file."""
    stale: list[str] = field(default_factory=list)
    """Sources whose id is in the file under another text (changed since frozen): generated
    anew, never scored against the other text's questions."""

    def line(self, where: str) -> str:
        total = len(self.frozen) + len(self.generated) + len(self.stale)
        text = (
            f"Questions: {len(self.frozen)} of {total} sources use the frozen questions of "
            f"{where}; {len(self.generated) + len(self.stale)} generated"
        )
        if self.stale:
            ids = ", ".join(self.stale)
            text += f" ({len(self.stale)} stale, changed since frozen: {ids})"
        return text + "."

    def facts(self, where: str) -> dict[str, Any]:
        """The run facts a results file records (``evidence.run.questions``)."""
        return {
            "file": where,
            "frozen": len(self.frozen),
            "generated": len(self.generated) + len(self.stale),
            "stale": self.stale,
        }


def frozen_use(frozen: FrozenQuestions, sources: Iterable[tuple[str, str]]) -> FrozenUse:
    """How ``frozen`` serves ``sources`` ((row id, normalised text) pairs; a text repeated under
    several ids counts once)."""
    seen: dict[str, list[str]] = {}
    for row_id, text in sources:
        seen.setdefault(source_hash(text), []).append(row_id)
    known = frozen.ids()
    use = FrozenUse()
    for key, ids in seen.items():
        if frozen.of_hash(key):
            use.frozen.append(ids[0])
        elif any(i in known for i in ids):
            use.stale.append(next(i for i in ids if i in known))
        else:
            use.generated.append(ids[0])
    return use


class QuestionsFileError(ValueError):
    """A questions file that cannot be used; the message names the file and the line."""


def read_questions(path: str | os.PathLike[str]) -> FrozenQuestions:
    """A questions file read and checked; :class:`QuestionsFileError` names the first bad line."""
    where = os.fspath(path)
    try:
        text = read_regular(where, encoding="utf-8-sig")  # a BOM some editors write
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionsFileError(f"cannot read the questions file {where}: {exc}") from None
    items = []
    counts: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            item = parse_line(line, f"{where} line {number}")
            counts[item.source_hash] = counts.get(item.source_hash, 0) + 1
            if counts[item.source_hash] > MAX_PER_SOURCE:
                raise QuestionsFileError(
                    f"{where} line {number}: source {item.source_id!r} has more than "
                    f"{MAX_PER_SOURCE} questions (the most a source is asked); split it or "
                    "remove some"
                )
            items.append(item)
    if not items:
        raise QuestionsFileError(f"the questions file {where} holds no question")
    return FrozenQuestions(tuple(items), where)


def parse_line(line: str, where: str) -> FrozenQuestion:
    """One line of a questions file, checked (``where`` names it in an error)."""
    try:
        record = bounded_json.loads(line)
    except json.JSONDecodeError as exc:
        raise QuestionsFileError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise QuestionsFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
    return question_from_record(record, where)


def question_from_record(record: Mapping[str, Any], where: str) -> FrozenQuestion:
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise QuestionsFileError(
            f"{where}: unknown field(s) {', '.join(unknown)}; expected {', '.join(FIELDS)}"
        )
    values: dict[str, Any] = {}
    for name in ("source_id", "source_hash", "question", "reference_answer"):
        value = record.get(name)
        if not isinstance(value, str) or not value.strip():
            raise QuestionsFileError(
                f"{where}: {name} must be a non-empty string, got {_shown(value)}"
            )
        values[name] = value.strip()
        if name in TEXT_CHARS and len(values[name]) > TEXT_CHARS[name]:
            raise QuestionsFileError(
                f"{where}: {name} is {len(values[name])} characters; at most {TEXT_CHARS[name]} "
                "(a generated one's bound)"
            )
    for name in ("judge", "date"):
        value = record.get(name, "")
        if not isinstance(value, str):
            raise QuestionsFileError(f"{where}: {name} must be a string, got {_shown(value)}")
        values[name] = value
    edited = record.get("edited", False)
    if not isinstance(edited, bool):
        raise QuestionsFileError(f"{where}: edited must be true or false, got {_shown(edited)}")
    importance = record.get("importance")
    integral = isinstance(importance, int) or (
        isinstance(importance, float) and importance.is_integer()
    )
    if isinstance(importance, bool) or not integral or importance not in IMPORTANCE:
        raise QuestionsFileError(
            f"{where}: importance must be an integer 1-5, got {_shown(importance)}"
        )
    return FrozenQuestion(**values, importance=int(importance), edited=edited)  # type: ignore[arg-type]


def _shown(value: Any) -> str:
    """A bad value for a message, cut short (an integer of thousands of digits)."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else "a huge integer"
    return text if len(text) <= 60 else text[:59] + "…"


def check_questions_file(name: str, value: Any) -> FrozenQuestions | None:
    """The ``questions_file`` option: None, a path (read and checked here, before any judge
    call), or :class:`FrozenQuestions` (from :func:`shared.freeze_questions`)."""
    if value is None or isinstance(value, FrozenQuestions):
        return value
    if isinstance(value, str | os.PathLike):
        try:
            return read_questions(value)
        except QuestionsFileError as exc:
            raise ValueError(f"{name}: {exc}") from None
    raise TypeError(f"{name} must be a path to a questions file or FrozenQuestions, got {value!r}")


__all__ = [
    "FIELDS",
    "IMPORTANCE",
    "MAX_PER_SOURCE",
    "FrozenQuestion",
    "FrozenQuestions",
    "FrozenUse",
    "QuestionsFileError",
    "check_questions_file",
    "frozen_use",
    "parse_line",
    "read_questions",
    "signature_n",
    "source_hash",
]
