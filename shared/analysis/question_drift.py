"""Question drift: what changed between two frozen question sets of the same sources
(``summary-eval questions --against old.jsonl``; docs/QUESTIONS.md, "Drift").

Sources are paired by text (source hash), a source whose text the old file lacks by id. Within a
source, the questions are paired in two passes: first those whose texts are the same once
lowercased with punctuation and spacing ignored (unchanged, or only their importance or reference
answer moved);
then, among the rest, the most alike pairs whose word-level similarity (:func:`similarity`) is at
least :data:`REWORDED` are rewordings. What is left is new (only in the new set) or gone (only in
the old one). So "Who paid?" -> "Who paid the 11 million euros?" is a rewording, while a question
about another fact shares too few words to be one and shows as one gone and one new.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ..evaluation.frozen import FrozenQuestion, FrozenQuestions

REWORDED = 0.6
"""Least word-level similarity (0-1) of two questions told as one reworded."""

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def similarity(a: str, b: str) -> float:
    """How alike two questions' words are, in order: difflib's ratio over their lowercased
    words (1.0: the same words)."""
    return difflib.SequenceMatcher(None, _words(a), _words(b), autojunk=False).ratio()


@dataclass
class Reworded:
    old: str
    new: str
    similarity: float


@dataclass
class ImportanceChange:
    question: str
    old: int
    new: int


@dataclass
class SourceDrift:
    """One source's questions, old against new."""

    source_id: str
    source_hash: str
    old_hash: str | None
    """The source hash of the old questions (None: the old file has none for this source)."""
    unchanged: int = 0
    new: list[dict[str, Any]] = field(default_factory=list)
    gone: list[dict[str, Any]] = field(default_factory=list)
    reworded: list[Reworded] = field(default_factory=list)
    importance: list[ImportanceChange] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    """Questions kept word for word whose reference answer changed."""

    @property
    def changed(self) -> bool:
        return bool(self.new or self.gone or self.reworded or self.importance or self.answers)

    @property
    def text_changed(self) -> bool:
        """The source's text differs from the one the old questions were frozen for."""
        return self.old_hash is not None and self.old_hash != self.source_hash

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "changed": self.changed, "text_changed": self.text_changed}


def _brief(q: FrozenQuestion) -> dict[str, Any]:
    return {"question": q.question, "importance": q.importance}


def _old_block(
    old: FrozenQuestions, old_ids: dict[str, set[str]], source_id: str, key: str
) -> tuple[FrozenQuestion, ...]:
    """The old questions of the same text wherever they are filed (ids shift: the rows of a
    file without ids are numbered), else those of the same id (its text changed); ``old_ids``
    is ``old.ids()``."""
    same_text = old.of_hash(key)
    if same_text:
        return same_text
    hashes = old_ids.get(source_id)
    if hashes:
        chosen = sorted(hashes)[-1]
        return tuple(q for q in old.of_hash(chosen) if q.source_id == source_id)
    return ()


def source_drift(
    source_id: str, key: str, before: tuple[FrozenQuestion, ...], after: tuple[FrozenQuestion, ...]
) -> SourceDrift:
    """The drift of one source's questions ``before`` -> ``after``."""
    drift = SourceDrift(source_id, key, before[0].source_hash if before else None)
    old, new = list(before), list(after)
    pairs: list[tuple[FrozenQuestion, FrozenQuestion]] = []
    for q in list(new):  # pass 1: the same words
        same = next((o for o in old if _words(o.question) == _words(q.question)), None)
        if same is not None:
            old.remove(same)
            new.remove(q)
            pairs.append((same, q))
    scored = sorted(
        (
            (similarity(o.question, q.question), i, j)
            for i, o in enumerate(old)
            for j, q in enumerate(new)
        ),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    used_old: set[int] = set()
    used_new: set[int] = set()
    for ratio, i, j in scored:  # pass 2: the most alike first
        if ratio < REWORDED:
            break
        if i in used_old or j in used_new:
            continue
        used_old.add(i)
        used_new.add(j)
        drift.reworded.append(Reworded(old[i].question, new[j].question, round(ratio, 2)))
        pairs.append((old[i], new[j]))
    for o, q in pairs:
        if o.importance != q.importance:
            drift.importance.append(ImportanceChange(q.question, o.importance, q.importance))
    for o, q in pairs[: len(pairs) - len(drift.reworded)]:
        if _words(o.reference_answer) != _words(q.reference_answer):
            drift.answers.append(q.question)
        elif o.importance == q.importance:
            drift.unchanged += 1
    drift.gone = [_brief(o) for i, o in enumerate(old) if i not in used_old]
    drift.new = [_brief(q) for j, q in enumerate(new) if j not in used_new]
    return drift


def question_drift(old: FrozenQuestions, new: FrozenQuestions) -> list[SourceDrift]:
    """Per source of ``new`` (in its order), what changed from ``old``'s questions."""
    old_ids = old.ids()
    out = []
    for key in new.hashes:
        after = new.of_hash(key)
        source_id = after[0].source_id
        out.append(source_drift(source_id, key, _old_block(old, old_ids, source_id, key), after))
    return out


__all__ = [
    "REWORDED",
    "ImportanceChange",
    "Reworded",
    "SourceDrift",
    "question_drift",
    "similarity",
    "source_drift",
]
