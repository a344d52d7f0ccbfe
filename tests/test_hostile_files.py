"""Files people edit and files attackers write (issue 43): every file the project reads is read
by one bounded reader (regular files only, within a size, JSON within a depth and a number
length), every file it writes masks the process's known secrets, and every line it prints
escapes control sequences. One probe per class, through every command that reads the file or
prints the text; tests/test_file_rules.py checks that the code goes through the helpers."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from shared.cli.app import app
from shared.core.files import NotRegularFile, TooLarge, open_regular, read_regular
from shared.evaluation.frozen import MAX_PER_SOURCE, FrozenQuestion, source_hash
from shared.evaluation.options import MAX_N
from shared.prompts.schemas import QUESTION_CHARS
from shared.testing import FakeJudge, stub_server

KEY = "key-9c4e7a1f3b"
PASSWORD = "pw-5d8b2e6a0c"
ESC = "t\x1b]0;pwned\x07\x1b[2Jz"
"""Sets the window's title and clears the screen, printed raw."""
SOURCE = "The council approved a new bike network. Work starts in March. It costs nine million."
ROWS = [{"id": "r1", "source": SOURCE, "summary": "The council approved a bike network."}]


def run_cli(*args: Any, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "300", **(env or {})}
    )
    return result.exit_code, result.output


def run_cli_bounded(*args: Any) -> tuple[int, str]:
    """:func:`run_cli` in a thread: a reader that blocks (a FIFO with no writer) fails the test
    instead of hanging the suite."""
    found: list[tuple[int, str]] = []
    done = threading.Event()

    def target() -> None:
        try:
            found.append(run_cli(*args))
        finally:
            done.set()

    threading.Thread(target=target, daemon=True).start()
    assert done.wait(120), f"summary-eval {' '.join(map(str, args))} hung"
    return found[0]


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def judge_args(url: str) -> list[str]:
    return ["--base-url", url, "--model", "fake-judge", "--no-cache"]


def question_line(**changes: Any) -> str:
    line = {
        "source_id": "r1",
        "source_hash": source_hash(SOURCE),
        "question": "What did the council approve?",
        "reference_answer": "A new bike network.",
        "importance": 3,
        "judge": "fake-judge",
        "date": "2026-12-06",
        "edited": False,
        **changes,
    }
    return json.dumps(line)


# --- bounded reading: non-regular files -------------------------------------------------------


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    os.mkfifo(path)
    return path


def _zero(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    path.symlink_to("/dev/zero")
    return path


def _questions_commands(tmp_path: Path, questions: Path, url: str) -> list[list[Any]]:
    sources = write_jsonl(tmp_path / "in.jsonl", ROWS)
    return [
        ["score", sources, "--questions", questions, "-o", tmp_path / "o.jsonl", *judge_args(url)],
        ["questions", sources, "--against", questions, *judge_args(url)],
        ["questions", sources, "-o", questions, *judge_args(url)],
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("make", [_fifo, _zero], ids=["fifo", "link-to-dev-zero"])
def test_a_questions_file_that_is_not_a_regular_file_is_refused(tmp_path: Path, make: Any) -> None:
    questions = make(tmp_path)
    with stub_server() as url:
        for args in _questions_commands(tmp_path, questions, url):
            code, text = run_cli_bounded(*args)
            assert code == 2, (args[0], text)
            assert "not a file" in " ".join(text.split()), text
        assert url.count == 0  # refused before any judge call


def test_the_bounded_reader_refuses_what_is_not_a_file_and_what_is_too_large(
    tmp_path: Path,
) -> None:
    (tmp_path / "f").write_text("a\nb\n")
    assert read_regular(tmp_path / "f") == "a\nb\n"
    with pytest.raises(TooLarge, match="4 bytes; at most 3"):
        read_regular(tmp_path / "f", limit=3)
    with pytest.raises(NotRegularFile, match="a directory"):
        read_regular(tmp_path)
    with open_regular(tmp_path / "f") as handle:
        assert list(handle) == ["a\n", "b\n"]


# --- bounded reading: deep and huge JSON ------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
HUGE_NUMBER = "9" * 5000


@pytest.mark.parametrize(
    "line",
    [
        question_line(question=None).replace("null", DEEP),
        question_line(importance=0).replace('"importance": 0', f'"importance": {HUGE_NUMBER}'),
    ],
    ids=["deep", "5000-digit"],
)
def test_a_deep_or_huge_questions_line_is_a_usage_error(tmp_path: Path, line: str) -> None:
    questions = write_jsonl(tmp_path / "q.jsonl", [line])
    with stub_server() as url:
        for args in _questions_commands(tmp_path, questions, url):
            code, text = run_cli(*args)
            flat = " ".join(text.split())
            assert code == 2 and "line 1: not valid JSON" in flat, (args[0], flat[-400:])


# --- caps: frozen questions obey the generated ones' bounds -----------------------------------


def test_frozen_questions_obey_the_caps_of_generated_ones(tmp_path: Path) -> None:
    assert MAX_PER_SOURCE == MAX_N
    many = [question_line(question=f"Question {i}?") for i in range(MAX_PER_SOURCE + 1)]
    cases = {
        "many": (many, f"more than {MAX_PER_SOURCE} questions"),
        "long": ([question_line(question="Why " * 250_000 + "?")], "at most 200"),
        "negative": ([question_line(importance=-5)], "importance must be an integer 1-5"),
    }
    with stub_server() as url:
        for name, (lines, why) in cases.items():
            questions = write_jsonl(tmp_path / f"{name}.jsonl", lines)
            for args in _questions_commands(tmp_path, questions, url):
                code, text = run_cli(*args)
                flat = " ".join(text.split())
                assert code == 2 and why in flat, (name, args[0], flat[-400:])
        assert url.count == 0  # no prompt was sent
    assert QUESTION_CHARS == 200


# --- hand-edited results files ----------------------------------------------------------------


def _result_row(row_id: str, grade: int, **question: Any) -> dict[str, Any]:
    q = {
        "question": "What did the council approve?",
        "importance": 4,
        "reference_answer": "A new bike network.",
        "summary_answer": "A bike network.",
        "grade": grade,
        "grade_reason": "",
        "counted": True,
        **question,
    }
    return {
        "id": row_id, "position": 1, "status": "ok", "score": 0.5, "coverage": 0.5,
        "reason": "", "error": None, "signature": "s", "language": "en",
        "input_hash": "", "summary": "The council approved a bike network.",
        "evidence": {"questions": [q]},
    }  # fmt: skip


BAD_FIELDS = {
    "NaN importance": ({"importance": float("nan")}, "importance nan"),
    "Infinity importance": ({"importance": float("inf")}, "importance inf"),
    "text importance": ({"importance": "high"}, "importance 'high'"),
    "text grade": ({"grade": "5"}, "grade '5'"),
    "negative importance": ({"importance": -5}, "importance -5"),
}


@pytest.mark.parametrize("name", [*BAD_FIELDS, "questions a number"])
def test_report_on_a_hand_edited_results_file_says_what_it_does_not_show(
    tmp_path: Path, name: str
) -> None:
    row = _result_row("r1", 1)
    if name == "questions a number":
        row["evidence"]["questions"], why = 5, "its questions are a number, not a list"
    else:
        changes, shown = BAD_FIELDS[name]
        row["evidence"]["questions"][0].update(changes)
        why = f"question 1's {shown} is not an integer"
    results = write_jsonl(tmp_path / "r.jsonl", [json.dumps(row)])
    inputs = write_jsonl(tmp_path / "in.jsonl", ROWS)
    code, text = run_cli("report", results, "--input", inputs, "-o", tmp_path / "r.html")
    assert code == 0, text
    page = (tmp_path / "r.html").read_text().replace("&#39;", "'")
    assert f"not shown: {why}" in page


def test_compare_never_ranks_a_question_with_an_importance_outside_1_to_5(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [_result_row("r1", 5)])
    b = write_jsonl(tmp_path / "b.jsonl", [_result_row("r1", 1, importance=-5)])
    code, text = run_cli("compare", a, b, "--json", tmp_path / "c.json")
    assert code == 0, text
    facts = json.loads((tmp_path / "c.json").read_text())["facts"]
    assert facts["changed"] == [] and facts["compared"] == 0
    [row] = facts["not_compared"]
    assert row["a"] is None and "importance -5 is not an integer 1-5" in row["b"]


# --- secrets through every writer -------------------------------------------------------------


class QuotingJudge(FakeJudge):
    """Quotes the secrets into every question it writes (a judge that quotes the source)."""

    def answer_text(self, prompt: str, schema: type[BaseModel], seed: int | None = None) -> str:
        text = super().answer_text(prompt, schema, seed)
        if schema.__name__ == "GeneratedQuestions":
            reply = json.loads(text)
            for q in reply["questions"]:
                q["question"] = f"Was {KEY} or {PASSWORD} used?"
            text = json.dumps(reply)
        return text


def test_the_drift_report_masks_a_key_and_a_url_password_in_question_text(
    tmp_path: Path,
) -> None:
    sources = write_jsonl(tmp_path / "in.jsonl", ROWS)
    old = write_jsonl(tmp_path / "old.jsonl", [question_line()])
    drift = tmp_path / "drift.json"
    with stub_server(QuotingJudge()) as url:
        base = url.replace("http://", f"http://judge:{PASSWORD}@", 1)
        code, text = run_cli(
            "questions", sources, "--against", old, "--json", drift, "--api-key", KEY,
            "--base-url", base, "--model", "fake-judge", "--no-cache",
        )  # fmt: skip
    assert code == 0, text
    assert "new (importance" in text and "Was *** or *** used?" in text
    for secret in (KEY, PASSWORD):
        assert secret not in text and secret not in drift.read_text()
    assert "Was *** or *** used?" in drift.read_text()


def test_compare_masks_a_known_secret_its_inputs_hold(tmp_path: Path) -> None:
    quoted = {"question": f"Did it use {KEY}?", "reference_answer": KEY, "summary_answer": KEY}
    a = write_jsonl(tmp_path / "a.jsonl", [_result_row("r1", 5, **quoted)])
    b = write_jsonl(tmp_path / "b.jsonl", [_result_row("r1", 1, **quoted)])
    out, report = tmp_path / "c.json", tmp_path / "c.html"
    code, text = run_cli("compare", a, b, "--json", out, "-o", report, env={"OPENAI_API_KEY": KEY})
    assert code == 0, text
    assert f"Did it use {KEY}?" in a.read_text()  # the inputs hold it
    for written in (out.read_text(), report.read_text(), text):
        assert KEY not in written and "Did it use ***?" in written


# --- terminal: escapes in every printed field -------------------------------------------------


class FailingJudge(FakeJudge):
    """Answers the questions call with no JSON: the source fails."""

    def answer_text(self, prompt: str, schema: type[BaseModel], seed: int | None = None) -> str:
        if schema.__name__ == "GeneratedQuestions":
            return "no questions today"
        return super().answer_text(prompt, schema, seed)


def _assert_literal(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text[-500:])
    assert "\\x1b]0;pwned\\x07\\x1b[2Jz" in text, text[-500:]


def test_question_text_in_the_drift_report_prints_literally(tmp_path: Path) -> None:
    sources = write_jsonl(tmp_path / "in.jsonl", ROWS)
    old = write_jsonl(tmp_path / "old.jsonl", [question_line(question=f"Who {ESC}?")])
    with stub_server() as url:
        code, text = run_cli("questions", sources, "--against", old, *judge_args(url))
    assert code == 0, text
    _assert_literal(text)


def test_ids_in_the_stale_and_questions_lines_print_literally(tmp_path: Path) -> None:
    rows = [{**ROWS[0], "id": ESC, "source": SOURCE + " Changed."}]
    sources = write_jsonl(tmp_path / "in.jsonl", rows)
    questions = write_jsonl(tmp_path / "q.jsonl", [question_line(source_id=ESC)])
    with stub_server() as url:
        code, text = run_cli(
            "score", sources, "--questions", questions, "-o", tmp_path / "o.jsonl",
            "--no-report", "--dimensions", "", *judge_args(url),
        )  # fmt: skip
    assert code == 0, text
    flat = " ".join(text.split())
    assert "1 stale, changed since frozen" in flat and "Stale: the text of" in flat
    _assert_literal(text)


def test_a_failed_source_id_prints_literally(tmp_path: Path) -> None:
    sources = write_jsonl(tmp_path / "in.jsonl", [{**ROWS[0], "id": ESC}])
    with stub_server(FailingJudge()) as url:
        code, text = run_cli(
            "questions", sources, "-o", tmp_path / "q.jsonl", *judge_args(url), "--retries", "0"
        )
    assert code == 1 and "failed: " in text, text
    _assert_literal(text)


def test_the_questions_file_written_alongside_masks_the_key_too(tmp_path: Path) -> None:
    # the questions file and the drift report of the same run agree: both masked
    sources = write_jsonl(tmp_path / "in.jsonl", ROWS)
    frozen = tmp_path / "q.jsonl"
    with stub_server(QuotingJudge()) as url:
        code, text = run_cli("questions", sources, "-o", frozen, "--api-key", KEY, *judge_args(url))
    assert code == 0, text
    assert KEY not in frozen.read_text() and "***" in frozen.read_text()
    line = FrozenQuestion(**json.loads(frozen.read_text().splitlines()[0]))
    assert KEY not in line.question
