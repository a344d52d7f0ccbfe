"""Frozen questions (docs/QUESTIONS.md): ``summary-eval questions`` writes each source's weighted
questions to a file people edit; ``score --questions`` (the ``questions_file`` option, and both
adapters) uses them for every source whose text they were frozen for; ``--against`` reports how
a regenerated set drifted. Judges are the stub server's FakeJudge, scripted where a test needs
a change."""

from __future__ import annotations

import asyncio
import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import shared.prompts as p
from shared import (
    FrozenQuestions,
    ScoreOptions,
    freeze_questions,
    question_drift,
    read_questions,
    score_summary,
)
from shared.evaluation.frozen import FrozenQuestion, source_hash
from shared.runs.results import read_results
from shared.testing import FakeJudge, stub_server
from tests.test_cli import EXAMPLES, judge_args, run_cli, write_jsonl

EXAMPLE_ROWS = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
HARWICK = "harwick-good"
"""The first id of the Harwick source (three example rows share it)."""
EDITED = "How much will the plan cost, and who pays for it?"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _edit_second_question(path: Path) -> str:
    """Edit the second question of the file by hand (text, importance, the edited flag); the
    line's old text is returned."""
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    old = record["question"]
    record.update(question=EDITED, importance=5, edited=True)
    lines[1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return old


def _score(url: str, cache: Path | None, *args: Any) -> tuple[int, str]:
    """``score`` on the stub with no report and no dimensions (the questions are the point)."""
    return run_cli("score", *args, "--no-report", "--dimensions", "", *judge_args(url, cache))


def _questions_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    return row["evidence"]["questions"]


def test_round_trip_an_edited_question_is_used_and_its_flag_reaches_the_results(
    tmp_path: Path,
) -> None:
    frozen, out, cache = tmp_path / "q.jsonl", tmp_path / "res.jsonl", tmp_path / "c.sqlite3"
    with stub_server() as url:
        code, text = run_cli("questions", EXAMPLES, "-o", frozen, *judge_args(url, cache))
        assert code == 0, text
        assert "3 generated, 0 kept" in text
        lines = _lines(frozen)
        assert {line["source_id"] for line in lines} == {HARWICK, "almendra-good", "nordlicht-good"}
        assert all(line["edited"] is False and line["judge"] == "fake-judge" for line in lines)
        assert lines[0]["source_hash"] == source_hash(EXAMPLE_ROWS[0]["source"])
        old = _edit_second_question(frozen)
        edited_bytes = frozen.read_bytes()

        # resuming keeps the hand edit, byte for byte, and asks the judge nothing
        before = url.count
        code, text = run_cli("questions", EXAMPLES, "-o", frozen, *judge_args(url, cache))
        assert code == 0 and "0 generated, 3 kept" in text, text
        assert frozen.read_bytes() == edited_bytes and url.count == before

        code, text = _score(url, cache, EXAMPLES, "--questions", frozen, "-o", out)
        assert code == 0, text
        assert "3 of 3 sources use the frozen questions" in text and "0 generated" in text
        assert not url.judge.prompts_for(p.GeneratedQuestions)[3:]  # none since the freeze
        assert any(EDITED in prompt for _, prompt in url.judge.prompts)  # graded against it
        # the same command again resumes every row: the frozen signatures match
        before = url.count
        code, text = _score(url, cache, EXAMPLES, "--questions", frozen, "-o", out)
        assert code == 0 and "Resuming: 8 of 8 rows" in text and url.count == before, text
    rows = {row["id"]: row for row in read_results(out)}
    harwick = _questions_of(rows[HARWICK])
    assert harwick[1]["question"] == EDITED and harwick[1]["edited"] is True
    assert harwick[1]["importance"] == 5
    assert [q["edited"] for q in harwick].count(True) == 1
    assert all(q["question"] != old for q in harwick)
    assert "|n:frozen" in rows[HARWICK]["signature"]
    assert rows[HARWICK]["evidence"]["run"]["questions"] == {
        "file": str(frozen),
        "frozen": 3,
        "generated": 0,
        "stale": [],
    }


def test_a_source_changed_by_one_word_is_stale_and_regenerated(tmp_path: Path) -> None:
    frozen, out = tmp_path / "q.jsonl", tmp_path / "res.jsonl"
    rows = [dict(row) for row in EXAMPLE_ROWS]
    for row in rows:
        row["source"] = row["source"].replace("Tuesday", "Monday")  # the Harwick source only
    changed = write_jsonl(tmp_path / "changed.jsonl", rows)
    with stub_server() as url:
        assert run_cli("questions", EXAMPLES, "-o", frozen, *judge_args(url, None))[0] == 0
        frozen_bytes = frozen.read_bytes()
        code, text = _score(url, None, changed, "--questions", frozen, "-o", out)
        assert code == 0, text
        assert "2 of 3 sources use the frozen questions" in text
        assert "1 stale, changed since frozen: harwick-good" in text
        # the questions command refuses to replace a stale source's questions without --force
        code, text = run_cli("questions", changed, "-o", frozen, *judge_args(url, None))
        assert code == 2 and "harwick-good (its text changed)" in text and "--force" in text
        assert frozen.read_bytes() == frozen_bytes
        code, text = run_cli("questions", changed, "-o", frozen, "--force", *judge_args(url, None))
        assert code == 0 and "1 generated, 2 kept" in text, text
        # rewritten whole, the file stays readable like one the command appended to
        assert frozen.stat().st_mode & 0o777 == 0o644
    results = {row["id"]: row for row in read_results(out)}
    assert results[HARWICK]["evidence"]["run"]["questions"]["stale"] == [HARWICK]
    for row_id in ("harwick-good", "harwick-vague"):
        assert "|n:10|" in results[row_id]["signature"]  # generated, as without the file
        assert all("edited" not in q for q in _questions_of(results[row_id]))
    assert any("Monday" in q["reference_answer"] for q in _questions_of(results[HARWICK]))
    assert "|n:frozen" in results["almendra-good"]["signature"]
    hashes = {line["source_id"]: line["source_hash"] for line in _lines(frozen)}
    assert hashes[HARWICK] == source_hash(rows[0]["source"])  # replaced by the new text's


def test_force_keeps_the_old_text_questions_another_row_still_has(tmp_path: Path) -> None:
    # harwick-good's text changes, harwick-vague keeps the old one: the old text's questions
    # (filed under harwick-good, a hand edit among them) still serve harwick-vague
    frozen = tmp_path / "q.jsonl"
    rows = [dict(row) for row in EXAMPLE_ROWS]
    rows[0]["source"] = rows[0]["source"].replace("Tuesday", "Monday")
    changed = write_jsonl(tmp_path / "changed.jsonl", rows)
    with stub_server() as url:
        assert run_cli("questions", EXAMPLES, "-o", frozen, *judge_args(url, None))[0] == 0
        _edit_second_question(frozen)
        code, text = run_cli("questions", changed, "-o", frozen, "--force", *judge_args(url, None))
        assert code == 0 and "1 generated, 3 kept" in text, text
    on_file = read_questions(frozen)
    old_text = on_file.get(EXAMPLE_ROWS[0]["source"])
    assert old_text is not None and EDITED in [q.question for q in old_text]
    assert on_file.get(rows[0]["source"])  # and the new text's, generated


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_file_of_sources_alone_is_frozen(tmp_path: Path, suffix: str) -> None:
    # questions are frozen before any summary exists: no summary column is needed
    sources = tmp_path / f"sources.{suffix}"
    rows = [{"id": row["id"], "source": row["source"]} for row in EXAMPLE_ROWS]
    if suffix == "jsonl":
        write_jsonl(sources, rows)
    else:
        with sources.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=["id", "source"])
            writer.writeheader()
            writer.writerows(rows)
    frozen = tmp_path / "q.jsonl"
    with stub_server() as url:
        code, text = run_cli("questions", sources, "-o", frozen, *judge_args(url, None))
    assert code == 0 and "3 generated, 0 kept" in text, text
    assert {line["source_id"] for line in _lines(frozen)} == {
        HARWICK,
        "almendra-good",
        "nordlicht-good",
    }


def test_sources_missing_from_the_file_are_generated_and_counted(tmp_path: Path) -> None:
    frozen, out = tmp_path / "q.jsonl", tmp_path / "res.jsonl"
    plain = tmp_path / "plain.jsonl"
    with stub_server() as url:
        assert run_cli("questions", EXAMPLES, "-o", frozen, *judge_args(url, None))[0] == 0
        only_almendra = [line for line in _lines(frozen) if line["source_id"] == "almendra-good"]
        write_jsonl(frozen, only_almendra)
        code, text = _score(url, None, EXAMPLES, "--questions", frozen, "-o", out)
        assert code == 0, text
        assert "1 of 3 sources use the frozen questions" in text and "2 generated" in text
        assert _score(url, None, EXAMPLES, "-o", plain)[0] == 0
    rows = {row["id"]: row for row in read_results(out)}
    plain_rows = {row["id"]: row for row in read_results(plain)}
    assert rows["almendra-good"]["evidence"]["run"]["questions"]["generated"] == 2
    # a generated source is scored as without the file: the same questions and signature
    assert rows[HARWICK]["signature"] == plain_rows[HARWICK]["signature"]
    assert _questions_of(rows[HARWICK]) == _questions_of(plain_rows[HARWICK])
    # a frozen one never shares a signature with a generated one, nor leaks into plain runs
    assert rows["almendra-good"]["signature"] != plain_rows["almendra-good"]["signature"]
    assert "run" not in plain_rows[HARWICK]["evidence"] or (
        "questions" not in plain_rows[HARWICK]["evidence"]["run"]
    )
    assert all("edited" not in q for q in _questions_of(plain_rows["almendra-good"]))


@pytest.mark.parametrize("flag", ["-o", "--report"])
def test_score_never_writes_over_its_questions_file(tmp_path: Path, flag: str) -> None:
    frozen = tmp_path / "q.jsonl"
    with stub_server() as url:
        assert run_cli("questions", EXAMPLES, "-o", frozen, *judge_args(url, None))[0] == 0
        _edit_second_question(frozen)
        edited = frozen.read_bytes()
        args = ["-o", tmp_path / "r.jsonl"] if flag == "--report" else []
        before = url.count
        code, text = run_cli(
            "score", EXAMPLES, "--questions", frozen, flag, frozen, *args, *judge_args(url, None)
        )
        assert url.count == before  # refused before any judge call
    assert code == 2 and "is an input file (--questions file)" in text, text
    assert frozen.read_bytes() == edited


def test_the_questions_file_holds_no_known_secret(tmp_path: Path) -> None:
    # the stub's reference answers are the source's sentences: one that quotes the API key
    # reaches the questions file masked, as it reaches a results file
    key = "key-7f3a9c2e51"
    rows = [{"id": "leak", "source": f"The deploy used the token {key} on Monday. It failed."}]
    sources, frozen = write_jsonl(tmp_path / "s.jsonl", rows), tmp_path / "q.jsonl"
    with stub_server() as url:
        code, text = run_cli(
            "questions", sources, "-o", frozen, "--api-key", key, *judge_args(url, None)
        )
    assert code == 0, text
    assert key not in frozen.read_text() and "***" in frozen.read_text()
    assert key not in text


def test_a_questions_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # editors on Windows save UTF-8 with a BOM: the hand-edited file still serves, and resumes
    frozen, out = tmp_path / "q.jsonl", tmp_path / "res.jsonl"
    rows = [dict(row) for row in EXAMPLE_ROWS]
    for row in rows:
        row["source"] = row["source"].replace("Tuesday", "Monday")
    changed = write_jsonl(tmp_path / "changed.jsonl", rows)
    with stub_server() as url:
        assert run_cli("questions", EXAMPLES, "-o", frozen, *judge_args(url, None))[0] == 0
        _edit_second_question(frozen)
        frozen.write_bytes(b"\xef\xbb\xbf" + frozen.read_bytes())
        code, text = _score(url, None, EXAMPLES, "--questions", frozen, "-o", out)
        assert code == 0 and "3 of 3 sources use the frozen questions" in text, text
        code, text = run_cli("questions", changed, "-o", frozen, "--force", *judge_args(url, None))
        assert code == 0 and "1 generated, 2 kept" in text, text
    assert EDITED in [q["question"] for q in _questions_of(read_results(out)[0])]
    assert len(read_questions(frozen).hashes) == 3


class OneQuestionMoves(FakeJudge):
    """Writes the Harwick source's second question in other words and with another importance
    while ``moved`` is set; every other answer is the fake's own."""

    moved = False

    def answer_text(self, prompt: str, schema: type[BaseModel], seed: int | None = None) -> str:
        text = super().answer_text(prompt, schema, seed)
        if self.moved and schema.__name__ == "GeneratedQuestions" and "Harwick" in prompt:
            reply = json.loads(text)
            second = reply["questions"][1]
            second["question"] = second["question"].rstrip("?") + " in all?"
            second["importance"] = 1 if second["importance"] != 1 else 2
            text = json.dumps(reply)
        return text


def test_the_drift_report_names_exactly_the_question_that_moved(tmp_path: Path) -> None:
    old, drift_json = tmp_path / "old.jsonl", tmp_path / "drift.json"
    judge = OneQuestionMoves()
    with stub_server(judge) as url:
        assert run_cli("questions", EXAMPLES, "-o", old, *judge_args(url, None))[0] == 0
        judge.moved = True
        code, text = run_cli(
            "questions", EXAMPLES, "--against", old, "--json", drift_json,
            *judge_args(url, None),
        )  # fmt: skip
    assert code == 0, text
    before = _lines(old)[1]
    drifts = {d["source_id"]: d for d in json.loads(drift_json.read_text())}
    assert [i for i, d in drifts.items() if d["changed"]] == [HARWICK]
    moved = drifts[HARWICK]
    assert [r["old"] for r in moved["reworded"]] == [before["question"]]
    assert moved["reworded"][0]["new"] == before["question"].rstrip("?") + " in all?"
    assert moved["new"] == [] and moved["gone"] == [] and moved["answers"] == []
    assert [(c["old"], c["new"]) for c in moved["importance"]] == [
        (before["importance"], 1 if before["importance"] != 1 else 2)
    ]
    assert moved["unchanged"] == len([q for q in _lines(old) if q["source_id"] == HARWICK]) - 1
    for other in ("almendra-good", "nordlicht-good"):
        assert drifts[other]["unchanged"] > 0 and not drifts[other]["text_changed"]
    assert "1 of 3 sources changed" in text
    assert "almendra-good: no change" in text and "harwick-good: 1 reworded" in text
    assert not old.with_name("examples.questions.jsonl").exists()  # --against alone writes none


def test_drift_tells_a_rewording_from_a_new_and_a_gone_question() -> None:
    def q(text: str, importance: int = 3) -> FrozenQuestion:
        return FrozenQuestion("s", "h", text, "answer", importance)

    old = FrozenQuestions(
        (q("Who paid for the plan?"), q("When does construction start?"), q("Who objected?", 4))
    )
    new = FrozenQuestions(
        (
            q("Who paid for the whole plan?"),  # reworded
            q("How many cyclists were injured?"),  # new; "When does ...?" is gone
            q("Who objected?", 2),  # importance only
        )
    )
    (drift,) = question_drift(old, new)
    assert [(r.old, r.new) for r in drift.reworded] == [
        ("Who paid for the plan?", "Who paid for the whole plan?")
    ]
    assert [g["question"] for g in drift.gone] == ["When does construction start?"]
    assert [n["question"] for n in drift.new] == ["How many cyclists were injured?"]
    assert [(c.question, c.old, c.new) for c in drift.importance] == [("Who objected?", 4, 2)]
    assert drift.unchanged == 0 and drift.changed


def test_drift_pairs_sources_by_text_when_their_ids_shift() -> None:
    # rows without ids are numbered: a source dropped from the input renumbers the rest, and
    # each remaining source must still meet its own old questions, not its old number's
    def q(source_id: str, key: str, text: str) -> FrozenQuestion:
        return FrozenQuestion(source_id, key, text, "answer", 3)

    old = FrozenQuestions(
        (q("1", "h1", "Who won the vote?"), q("2", "h2", "What does the plan cost?"))
    )
    new = FrozenQuestions((q("1", "h2", "What does the plan cost?"),))
    (drift,) = question_drift(old, new)
    assert not drift.changed and not drift.text_changed and drift.unchanged == 1
    # a text the old file lacks still pairs with its id's old questions
    edited = FrozenQuestions((q("2", "h3", "What does the plan cost?"),))
    (drift,) = question_drift(old, edited)
    assert drift.text_changed and drift.old_hash == "h2" and drift.unchanged == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        ('{"source_id": "a", "source_hash": "h", "question": "Q?", "reference_answer": "A",'
         ' "importance": 9}', "line 2: importance must be an integer 1-5, got 9"),
        ('{"source_id": "a", "source_hash": "h", "question": "Q?", "reference_answer": "A",'
         ' "importance": 3, "edtied": true}', "line 2: unknown field(s) edtied"),
        ('{"source_id": "a", "source_hash": "h", "question": "", "reference_answer": "A",'
         ' "importance": 3}', "line 2: question must be a non-empty string"),
    ],
)  # fmt: skip
def test_a_malformed_questions_file_gives_a_clear_error(
    tmp_path: Path, line: str, message: str
) -> None:
    good = json.dumps(
        {"source_id": "a", "source_hash": "h", "question": "Q?", "reference_answer": "A",
         "importance": 3}
    )  # fmt: skip
    bad = tmp_path / "bad.jsonl"
    bad.write_text(f"{good}\n{line}\n")
    with pytest.raises(ValueError, match=rf"questions_file: .*bad\.jsonl {re.escape(message)}"):
        ScoreOptions(questions_file=bad)
    code, text = run_cli("score", EXAMPLES, "--questions", bad, "-o", tmp_path / "r.jsonl")
    assert code == 2 and f"bad.jsonl {message}" in text, text
    assert not (tmp_path / "r.jsonl").exists()
    with stub_server() as url:
        code, text = run_cli("questions", EXAMPLES, "--against", bad, *judge_args(url, None))
        assert code == 2 and message in text and url.requests == []


def test_freeze_questions_in_python_and_the_signature_tells_them_apart(tmp_path: Path) -> None:
    source = EXAMPLE_ROWS[0]["source"]
    summary = EXAMPLE_ROWS[0]["summary"]
    judge = FakeJudge()
    frozen = freeze_questions({"h": source, "again": source}, judge=judge, n=4)
    assert {q.source_id for q in frozen.items} == {"h"}  # one source, asked once
    assert judge.calls["GeneratedQuestions"] == 1
    path = tmp_path / "q.jsonl"
    frozen.write(path)
    with pytest.raises(FileExistsError):
        frozen.write(path)  # never over a file
    assert read_questions(path) == frozen
    generated = score_summary(source, summary, judge=judge, n=4, dimensions=[])
    used = score_summary(source, summary, judge=judge, questions_file=path, dimensions=[])
    assert [q.question for q in used.questions] == [q.question for q in generated.questions]
    assert used.signature != generated.signature and "|n:frozen4:" in used.signature
    assert judge.calls["GeneratedQuestions"] == 1  # the frozen run asked for none
    edited = FrozenQuestions(
        (
            FrozenQuestion(**{**vars(frozen.items[0]), "question": EDITED, "edited": True}),
            *frozen.items[1:],
        )
    )
    again = score_summary(source, summary, judge=judge, questions_file=edited, dimensions=[])
    assert again.signature != used.signature  # other questions, another signature
    assert again.questions[0].question == EDITED and again.questions[0].edited is True
    other = score_summary(EXAMPLE_ROWS[3]["source"], summary, judge=judge, questions_file=path)
    assert "|n:10|" in other.signature  # a source the file lacks: generated as usual
    with pytest.raises(ValueError, match="questions and questions_file"):
        ScoreOptions(questions=["Q?"], questions_file=path)


def test_both_adapters_accept_the_frozen_questions(tmp_path: Path) -> None:
    from deepeval.test_case import LLMTestCase
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory

    from deepeval_ext import SummaryQualityMetric
    from deepeval_ext.testing import FakeDeepEvalModel
    from ragas_ext.collections import SummaryQuality

    source, summary = EXAMPLE_ROWS[0]["source"], EXAMPLE_ROWS[0]["summary"]
    key = source_hash(source)
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"source_id": "h", "source_hash": key, "question": EDITED,
             "reference_answer": "18 million euros, 11 million from the region.",
             "importance": 5, "edited": True},
        ],
    )  # fmt: skip
    judge = FakeJudge()
    metric = SummaryQualityMetric(model=FakeDeepEvalModel(judge), questions_file=str(path))
    metric.measure(LLMTestCase(input=source, actual_output=summary), _show_indicator=False)
    assert metric.error is None and metric.score is not None
    assert judge.calls["GeneratedQuestions"] == 0
    assert any(EDITED in prompt for _, prompt in judge.prompts)
    with stub_server() as url:
        llm = llm_factory("m", client=AsyncOpenAI(base_url=url, api_key="x", max_retries=0))
        ragas_metric = SummaryQuality(llm=llm, questions_file=str(path))
        result = asyncio.run(ragas_metric.ascore(reference_contexts=[source], response=summary))
        assert result.value is not None
        assert url.judge.calls["GeneratedQuestions"] == 0
        assert any(EDITED in prompt for _, prompt in url.judge.prompts)
