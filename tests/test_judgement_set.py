"""The judgement set's checks (tests/judgement_set.py) can fail and can pass: a judge that calls
every sentence "supported" and grades every question 5 fails them, an oracle that knows which
sentence was changed passes them, and the word-overlap fake (which cannot see a negation or a
swapped name) fails the twin checks. The set itself is what its docstring says. The real judge
runs them in tests/test_real_model_judgement.py (the real-model CI stage)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from judgement_set import KINDS, judgement_failures, load_set, score_set, table
from pydantic import BaseModel

from shared import prompts as p
from shared.testing import FakeJudge


def _sentences_of(prompt: str) -> list[str]:
    block = prompt.split("<<<SENTENCES>>>", 1)[1].split("<<<END SENTENCES>>>", 1)[0]
    return [m.group(1).strip() for m in re.finditer(r"^\[\d+\] (.*)$", block, re.M)]


class _Rewriting(FakeJudge):
    """The word-overlap fake with the sentence checks and pointed reviews rewritten."""

    def _answer(self, prompt: str, schema: type[Any], seed: int | None = None) -> Any:
        answer = super()._answer(prompt, schema, seed)
        if "task: check_sentences" in prompt:
            return schema.model_validate({"sentences": self.checks(_sentences_of(prompt))})
        if "task: point_and_grade" in prompt or "task: pointed_review" in prompt:
            return self.review(prompt, answer)
        return answer

    def checks(self, sentences: list[str]) -> list[dict[str, Any]]:
        return [{"index": i, "verdict": "supported"} for i in range(1, len(sentences) + 1)]

    def review(self, prompt: str, answer: BaseModel) -> BaseModel:
        return answer


class AlwaysSupported(_Rewriting):
    """Every sentence "supported", every question answered in full by sentence 1."""

    def review(self, prompt: str, answer: BaseModel) -> BaseModel:
        reply = answer.model_dump()
        reply["answers"] = [
            {"index": a["index"], "grade": 5, "sentence": 1} for a in reply["answers"]
        ]
        return type(answer).model_validate(reply)


class Oracle(_Rewriting):
    """Flags exactly the sentences that were changed in a twin (it knows them)."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = set()
        for item in load_set():
            faithful = set(p.split_sentences(item["faithful"]))
            self.changed |= set(p.split_sentences(item["twin"])) - faithful

    def checks(self, sentences: list[str]) -> list[dict[str, Any]]:
        out = []
        for i, text in enumerate(sentences, start=1):
            if text in self.changed:
                words = text.split()[:6]
                out.append(
                    {
                        "index": i,
                        "verdict": "entity",
                        "span": " ".join(words),
                        "quote": "",
                        "reason": "The source says otherwise.",
                    }
                )
            else:
                out.append({"index": i, "verdict": "supported"})
        return out


def test_the_set_is_eight_sources_with_one_changed_sentence_each() -> None:
    items = load_set()
    assert len(items) == 8
    assert sorted(item["kind"] for item in items) == sorted(
        ["number", "name", "negation", "addition"] * 2
    )
    for item in items:
        assert 90 <= len(item["source"].split()) <= 150, item["id"]
        faithful = p.split_sentences(item["faithful"])
        twin = p.split_sentences(item["twin"])
        assert len(faithful) == len(twin) == 3, item["id"]
        differ = [i + 1 for i, (a, b) in enumerate(zip(faithful, twin, strict=True)) if a != b]
        assert differ == [item["changed"]], item["id"]
        assert item["omission"] != item["faithful"]


def test_a_judge_that_calls_everything_supported_fails_the_checks() -> None:
    failures = judgement_failures(score_set(AlwaysSupported()))
    text = "\n".join(failures)
    assert "twin alignment below" in text
    assert "changed sentence flagged" in text
    assert "omission coverage below" in text


def test_an_oracle_that_flags_the_changed_sentences_passes_the_checks() -> None:
    scored = score_set(Oracle())
    assert judgement_failures(scored) == [], table(scored)


def test_the_word_overlap_fake_flags_only_the_twins_that_bring_new_words() -> None:
    """The baseline the reference judge is read against (docs/JUDGES.md): word overlap flags
    the twins whose changed sentence brings words the source lacks (a number, an addition), and
    none of the negations or of the names taken from elsewhere in the source."""
    scored = score_set(FakeJudge())
    flagged = {s.item["id"] for s in scored if s.twin.claims[s.item["changed"] - 1].error_type}
    assert flagged == {"J1", "J4", "J8"}, table(scored)


@pytest.mark.parametrize("kind", KINDS)
def test_an_unscored_row_is_a_failure(kind: str) -> None:
    scored = score_set(Oracle())
    broken = getattr(scored[0], kind).model_copy(update={"score": None, "error": "judge down"})
    setattr(scored[0], kind, broken)
    failures = judgement_failures(scored)
    assert any("unscored rows" in f and "judge down" in f for f in failures), failures
