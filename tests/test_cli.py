"""The ``summary-eval`` command: input reading, error rows, exit codes, no-judge mode, resuming.

In-process runs use typer's CliRunner against :func:`shared.testing.stub_server` (the real
``openai`` client path); the interruption tests start the real console script as a subprocess,
kill it mid-run and count the requests of the rerun.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from shared.cli.app import app
from shared.runs.inputs import Columns, InputError, read_rows
from shared.runs.results import read_results, score_keys
from shared.testing import FakeJudge, stub_server
from tests.conftest import sigint_default

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "summaries.jsonl"
EXAMPLE_IDS = [json.loads(line)["id"] for line in EXAMPLES.read_text().splitlines()]


def run_cli(*args: str) -> tuple[int, str]:
    """Run the command in-process; (exit code, stdout+stderr with line wrapping undone)."""
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


def judge_args(url: str, cache: Path | None) -> list[str]:
    cache_args = ["--cache", str(cache)] if cache else ["--no-cache"]
    return ["--base-url", url, "--model", "fake-judge", *cache_args]


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    )
    return path


class UnscorableFake(FakeJudge):
    """Answers the claim call (the two-call check, or the step path's extraction) for a summary
    containing UNSCORABLE with broken JSON while ``broken`` is set."""

    broken = True

    def answer_text(self, prompt: str, schema: type[BaseModel]) -> str:
        claims = schema.__name__ in ("SentenceChecks", "ExtractedClaims")
        if self.broken and claims and "UNSCORABLE" in prompt:
            with self._lock:
                self.calls[schema.__name__] += 1
            return '{"claims": ["cut off'
        return super().answer_text(prompt, schema)


class SlowFake(FakeJudge):
    """Takes ``delay`` seconds per request inside the stub server (FakeJudge's own ``latency``
    only applies to in-process calls), so a run can be caught mid-way."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def answer_text(self, prompt: str, schema: type[BaseModel]) -> str:
        time.sleep(self.delay)
        return super().answer_text(prompt, schema)


# ---------------------------------------------------------------------------------------------
# Reading input
# ---------------------------------------------------------------------------------------------


def test_jsonl_bad_rows_keep_their_reason(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "ok", "source": "A source.", "summary": "A summary."},
            "{not json",
            "[1, 2]",
            {"id": "nosum", "source": "A source."},
            {"id": "empty", "source": "A source.", "summary": "   "},
            {"id": "number", "source": "A source.", "summary": 42},
            {"id": "ok", "source": "Another source.", "summary": "Another summary."},
            {"id": "listsrc", "source": ["Part one.", "Part two."], "summary": "Both parts."},
            {"id": "badq", "source": "A source.", "summary": "S.", "questions": [3]},
        ],
    )
    rows = read_rows(path, Columns(), "jsonl")
    errors = {row.id: row.error for row in rows}
    assert errors["ok"] is None and errors["listsrc"] is None
    assert "not valid JSON" in errors["2"]
    assert "JSON list, not an object" in errors["3"]
    assert "missing field 'summary'" in errors["nosum"]
    assert errors["empty"] is None  # an empty summary scores 0.0 (README, "Bad input")
    assert "summary must be a string, got int" in errors["number"]
    assert "duplicate id 'ok' (first used by row 1)" in errors["ok#row7"]
    assert "questions" in errors["badq"]
    assert [row.position for row in rows] == [1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_a_run_with_only_empty_or_bad_rows_sends_the_judge_nothing(tmp_path: Path) -> None:
    # Rows that need no judge (an empty summary scores 0.0, bad input is reported): no probe,
    # no source call, nothing but the reachability check before the run.
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "empty", "source": "A source.", "summary": ""}, {"id": "bad", "source": ""}],
    )
    out = tmp_path / "out.jsonl"
    with stub_server() as url:
        code, output = run_cli("score", path, "-o", out, *judge_args(url, None), "--no-report")
        assert url.requests == [], output
    rows = {row["id"]: row for row in read_results(out)}
    assert code == 1  # the bad row
    assert rows["empty"]["status"] == "ok" and rows["empty"]["score"] == 0.0
    assert "empty" in rows["empty"]["reason"] and rows["bad"]["status"] == "bad_input"


def test_csv_column_mapping_and_questions(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "article", "text", "qs"])
        writer.writerow(["a", "The source.", "The summary.", '["What?", "Why?"]'])
        writer.writerow(["b", "The source.", "", "Who?\nWhen?"])
    rows = read_rows(path, Columns("article", "text", "key", "qs"), "csv")
    assert [r.id for r in rows] == ["a", "b"]
    assert rows[0].questions == ["What?", "Why?"] and rows[0].error is None
    assert rows[1].questions == ["Who?", "When?"] and rows[1].error is None  # scores 0.0
    with pytest.raises(InputError, match=r"no 'source' column.*--source-column"):
        read_rows(path, Columns(), "csv")


# ---------------------------------------------------------------------------------------------
# Scoring through the stub server
# ---------------------------------------------------------------------------------------------


def test_examples_score_with_judge_then_rerun_pays_nothing(tmp_path: Path) -> None:
    out, report = tmp_path / "res.jsonl", tmp_path / "rep.html"
    cache = tmp_path / "cache.sqlite3"
    with stub_server() as url:
        code, text = run_cli(
            "score", EXAMPLES, "-o", out, "--report", report, *judge_args(url, cache)
        )
        first = url.count
        assert code == 0, text
        assert "8 of 8 rows scored, 0 unscored, 0 bad input" in text
        # the terminal table: one line per row with its score, then the status
        assert re.search(r"harwick-good ok( \d\.\d\d){8} ", text), text
        rows = read_results(out)
        assert [r["id"] for r in rows] == EXAMPLE_IDS
        for row in rows:
            assert row["status"] == "ok" and row["error"] is None
            assert set(score_keys()) <= set(row)
            assert 0.0 <= row["score"] <= 1.0 and row["signature"].startswith("judge:fake-judge|")
            assert row["evidence"]["claims"] and row["evidence"]["questions"]
        by_id = {r["id"]: r for r in rows}
        assert by_id["harwick-good"]["score"] > by_id["harwick-hallucinated"]["score"]
        assert by_id["harwick-hallucinated"]["alignment"] < 1.0
        # the row with its own questions was scored on them, not on generated ones
        asked = [q["question"] for q in by_id["nordlicht-good"]["evidence"]["questions"]]
        assert asked == [
            "How did revenue change?",
            "Why did profit fall?",
            "What happens to the Kiel factory?",
        ]
        assert first > 0 and report.stat().st_size > 1_000_000  # plotly.js is inlined

        # every row finished: a rerun makes no request, even without the cache
        code, text = run_cli("score", EXAMPLES, "-o", out, "--no-report", *judge_args(url, None))
        assert code == 0, text
        assert url.count == first
        assert "Resuming: 8 of 8 rows already done" in text
        assert read_results(out) == rows

        # a changed setting (n) changes the signature: refused unless --force, then every row is
        # scored again, never mixed in
        code, text = run_cli(
            "score", EXAMPLES, "-o", out, "--no-report", "--n", "3", *judge_args(url, cache)
        )
        assert code == 2 and "--force" in text and read_results(out) == rows
        code, text = run_cli(
            "score",
            EXAMPLES,
            "-o",
            out,
            "--no-report",
            "--n",
            "3",
            "--force",
            *judge_args(url, cache),
        )
        assert code == 0, text
        assert url.count > first
        assert all(
            "|n:3|" in r["signature"] or "|n:user" in r["signature"] for r in read_results(out)
        )


def test_bad_rows_become_error_rows_and_exit_1(tmp_path: Path) -> None:
    good = json.loads(EXAMPLES.read_text().splitlines()[0])
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            good,
            "{broken",
            {"id": "nosource", "summary": "A summary without a source."},
            {"id": "judge-fails", "source": good["source"], "summary": "UNSCORABLE text here."},
        ],
    )
    out = tmp_path / "res.csv"
    with stub_server(UnscorableFake()) as url:
        code, text = run_cli("score", path, "-o", out, "--retries", "1", *judge_args(url, None))
    assert code == 1
    assert "1 of 4 rows scored, 1 unscored, 2 bad input" in text
    rows = {r["id"]: r for r in read_results(out)}
    assert rows[good["id"]]["status"] == "ok" and isinstance(rows[good["id"]]["score"], float)
    assert rows["2"]["status"] == "bad_input" and "not valid JSON" in rows["2"]["error"]
    assert rows["nosource"]["status"] == "bad_input" and "source" in rows["nosource"]["error"]
    failed = rows["judge-fails"]
    assert failed["status"] == "unscored" and failed["score"] is None
    assert "SentenceChecks" in failed["error"]
    assert url.judge.calls["SentenceChecks"] >= 3  # first try + 1 retry for the bad row
    # CSV keeps every column, evidence as JSON
    header = next(csv.reader(out.open()))
    assert header[:3] == ["id", "position", "status"] and set(score_keys()) <= set(header)
    assert rows[good["id"]]["evidence"]["claims"]


def test_retry_unscored_asks_again(tmp_path: Path) -> None:
    good = json.loads(EXAMPLES.read_text().splitlines()[0])
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "x", "source": good["source"], "summary": "UNSCORABLE but fixed later."}],
    )
    out, cache = tmp_path / "res.jsonl", tmp_path / "c.sqlite3"
    fake = UnscorableFake()
    with stub_server(fake) as url:  # one server throughout: its address is part of cache keys
        code, _ = run_cli("score", path, "-o", out, "--no-report", *judge_args(url, cache))
        assert code == 1
        before = url.count
        code, text = run_cli("score", path, "-o", out, "--no-report", *judge_args(url, cache))
        assert code == 1 and url.count == before  # unscored rows count as finished
        assert "--retry-unscored" in text
        fake.broken = False  # the judge works now
        code, text = run_cli(
            "score", path, "-o", out, "--no-report", "--retry-unscored", *judge_args(url, cache)
        )
        retried = url.requests[before:]
    assert code == 0, text
    assert read_results(out)[0]["status"] == "ok"
    # only the call that had no answer is paid: the claim check (it failed); the source's
    # questions and the summary review come from the cache
    names = sorted(r["response_format"]["json_schema"]["name"] for r in retried)
    assert names == ["SentenceChecks"]


def test_no_judge_scores_deterministic_dimensions_and_says_what_was_skipped(
    tmp_path: Path,
) -> None:
    out, report = tmp_path / "res.jsonl", tmp_path / "rep.html"
    code, text = run_cli("score", EXAMPLES, "-o", out, "--report", report)
    assert code == 0, text
    assert "No judge (none configured)" in text
    assert "Skipped (no judge): score, alignment, coverage, specificity" in text
    assert "--base-url URL --model NAME" in text and "OPENAI_API_KEY" in text
    rows = read_results(out)
    assert len(rows) == 8
    for row in rows:
        assert row["status"] == "ok" and row["error"] is None
        assert row["score"] is None and row["coverage"] is None
        assert isinstance(row["conciseness"], float) and isinstance(row["density"], float)
        assert row["signature"].startswith("judge:none|")
    by_id = {r["id"]: r for r in rows}
    # the deterministic redundancy check sees the repetitive summary
    assert by_id["almendra-repetitive"]["non_redundancy"] < by_id["almendra-good"]["non_redundancy"]
    # grounding sees the invented numbers and names, with no judge
    for name in ("harwick", "nordlicht"):
        assert by_id[f"{name}-hallucinated"]["grounding"] < by_id[f"{name}-good"]["grounding"]
    unsupported = by_id["nordlicht-hallucinated"]["evidence"]["dimension_evidence"]["grounding"]
    assert any(i["text"] == "19 percent" for i in unsupported["unsupported"])
    assert "ground" in text  # the table's column (short name)
    html = report.read_text()
    assert 'id="skipped-dimensions"' in html and "score, alignment, coverage" in html
    assert '<mark class="unsupported">19 percent</mark>' in html


def test_odd_files_are_read_row_by_row(tmp_path: Path) -> None:
    """A byte-order mark, bytes that are not UTF-8, a field over csv's default 128 KiB limit and
    one-sentence summaries: each row is read or becomes bad input; the run goes on."""
    source = "The council approved a new cycle lane on Main Street. Work starts in May."
    long_source = ("The council approved a new cycle lane on Main Street. " * 4000).strip()
    jsonl = tmp_path / "odd.jsonl"
    jsonl.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps({"id": "bom", "source": source, "summary": "A lane was approved."}).encode()
        + b"\n"
        + b'{"id": "latin1", "source": "caf\xe9 opened", "summary": "A caf\xe9 opened."}\n'
        + json.dumps({"id": "ok", "source": source, "summary": "Work starts in May."}).encode()
        + b"\n"
    )
    out, report = tmp_path / "odd.results.csv", tmp_path / "odd.html"
    code, text = run_cli("score", jsonl, "-o", out, "--report", report)
    assert code == 1, text  # one bad row
    rows = {r["id"]: r for r in read_results(out)}
    assert rows["bom"]["status"] == "ok" and rows["ok"]["status"] == "ok"
    assert rows["2"]["status"] == "bad_input" and "not valid UTF-8" in rows["2"]["error"]
    # one-sentence summaries have no coherence, but coherence was not skipped for lack of a judge
    assert "Skipped (no judge): score, alignment, coverage, specificity." in text

    big = tmp_path / "big.csv"
    with big.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "source", "summary"])
        writer.writerow(["long", long_source, "The council approved a cycle lane."])
    assert len(long_source) > 131_072
    big_out = tmp_path / "big.results.csv"
    code, text = run_cli("score", big, "-o", big_out, "--no-report")
    assert code == 0, text
    code, text = run_cli("score", big, "-o", big_out, "--no-report")  # resume reads it back
    assert code == 0, text
    assert "Resuming: 1 of 1 rows already done" in text


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    code, text = run_cli("score", tmp_path / "missing.jsonl")
    assert code == 2 and "input file not found" in text
    odd = tmp_path / "in.txt"
    odd.write_text("x")
    code, text = run_cli("score", odd)
    assert code == 2 and "--input-format" in text
    code, text = run_cli("score", EXAMPLES, "-o", tmp_path / "r.jsonl", "--model", "gpt-4o-mini")
    assert code == 2 and "OPENAI_API_KEY" in text
    code, text = run_cli("score", EXAMPLES, "-o", tmp_path / "r.txt")
    assert code == 2 and ".jsonl or .csv" in text
    code, text = run_cli("score", EXAMPLES, "-o", tmp_path / "r.jsonl", "--combine", "max")
    assert code == 2 and "combine" in text


# ---------------------------------------------------------------------------------------------
# Interruption: a killed run, rerun, pays no judge call twice and loses no finished row
# ---------------------------------------------------------------------------------------------


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "shared.cli", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,  # the test presses Ctrl-C
    )


def _wait_for_rows(out: Path, proc: subprocess.Popen[str], at_least: int) -> int:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        done = len(read_results(out)) if out.exists() else 0
        if done >= at_least:
            return done
        if proc.poll() is not None:
            pytest.fail(f"the run ended before it could be interrupted: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail("no row finished within 180 s")


def _cache_entries(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])


def test_killed_run_resumes_without_paying_twice(tmp_path: Path) -> None:
    args = ["--concurrency", "2", "--no-report"]
    # one clean run: how many requests the job needs
    clean_out, clean_cache = tmp_path / "clean.jsonl", tmp_path / "clean.sqlite3"
    with stub_server() as url:
        code, text = run_cli(
            "score", EXAMPLES, "-o", clean_out, *args, *judge_args(url, clean_cache)
        )
        assert code == 0, text
        clean_requests = url.count
    assert clean_requests == _cache_entries(clean_cache)  # one request per distinct call
    clean = {r["id"]: r for r in read_results(clean_out)}

    out, cache = tmp_path / "res.jsonl", tmp_path / "cache.sqlite3"
    slow = SlowFake(delay=0.4)
    with stub_server(slow) as url:  # one server for both runs: its address is in cache keys
        proc = _start(
            ["score", str(EXAMPLES), "-o", str(out), *args, *judge_args(url, cache)], tmp_path
        )
        finished_before_kill = _wait_for_rows(out, proc, at_least=2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=300)
        time.sleep(1.0)  # let requests the server was still answering finish
        killed_requests = url.count
        kept = read_results(out)
        assert proc.returncode == -signal.SIGKILL
        assert 2 <= len(kept) < len(EXAMPLE_IDS), "the kill must land mid-way"
        assert len(kept) >= finished_before_kill
        answered_before_kill = _cache_entries(cache)
        assert 0 < answered_before_kill <= killed_requests

        slow.delay = 0.0
        proc = _start(
            ["score", str(EXAMPLES), "-o", str(out), *args, *judge_args(url, cache)], tmp_path
        )
        _, stderr = proc.communicate(timeout=300)
        rerun_requests = url.count - killed_requests
    assert proc.returncode == 0, stderr
    assert f"Resuming: {len(kept)} of 8 rows already done" in " ".join(stderr.split())
    print(
        f"clean={clean_requests} killed_run={killed_requests} cached_at_kill="
        f"{answered_before_kill} rows_at_kill={len(kept)} rerun={rerun_requests}"
    )
    # the rerun pays exactly for the calls nobody had an answer to
    assert rerun_requests == clean_requests - answered_before_kill
    final = read_results(out)
    assert [r["id"] for r in final] == EXAMPLE_IDS  # every row, once, in input order
    for row in final:
        assert row["status"] == "ok"
        for key in score_keys():
            assert row[key] == pytest.approx(clean[row["id"]][key]), (row["id"], key)
    # rows finished before the kill were kept as they were, not scored again
    assert all(r in final for r in kept)


class HoldingFake(FakeJudge):
    """Answers every request about the first summary it is asked about at once, and holds every
    request about any other summary until ``release`` is set: the run finishes exactly one row
    and then waits, however fast or busy the machine is."""

    def __init__(self, summaries: list[str]) -> None:
        super().__init__()
        self.summaries = summaries
        self.first: str | None = None
        self.release = threading.Event()

    def answer_text(self, prompt: str, schema: type[BaseModel]) -> str:
        mentioned = [s for s in self.summaries if s in prompt]
        with self._lock:
            if self.first is None and mentioned:
                self.first = mentioned[0]
            held = any(s != self.first for s in mentioned)
        if held:
            self.release.wait(timeout=120)  # a safety net only; the test releases it
        return super().answer_text(prompt, schema)


def test_ctrl_c_keeps_finished_rows_and_exits_130(tmp_path: Path) -> None:
    """Deterministic: with one row at a time, the first row finishes and the second is held by
    the server until the process has been interrupted and has exited."""
    out, cache = tmp_path / "res.jsonl", tmp_path / "cache.sqlite3"
    summaries = [json.loads(line)["summary"] for line in EXAMPLES.read_text().splitlines()]
    judge = HoldingFake(summaries)
    with stub_server(judge) as url:
        proc = _start(
            [
                "score",
                str(EXAMPLES),
                "-o",
                str(out),
                "--concurrency",
                "1",
                "--no-report",
                *judge_args(url, cache),
            ],
            tmp_path,
        )
        try:
            _wait_for_rows(out, proc, at_least=1)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=600)  # a safety net only
        finally:
            judge.release.set()  # only now may the held requests be answered
    assert proc.returncode == 130, stderr
    kept = read_results(out)
    text = " ".join(stderr.split())
    assert len(kept) == 1 and kept[0]["status"] == "ok"
    assert "Interrupted. 1 finished rows are saved" in text
    assert "run the same command again to resume" in text
    lines = out.read_text().splitlines()
    assert len(lines) == len(kept)  # no torn or duplicate line


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_torn_last_line_is_redone(tmp_path: Path, suffix: str) -> None:
    lines = EXAMPLES.read_text().splitlines()[:3]
    path = write_jsonl(tmp_path / "in.jsonl", lines)
    out = tmp_path / f"res{suffix}"
    cache = tmp_path / "c.sqlite3"
    with stub_server() as url:
        code, text = run_cli("score", path, "-o", out, "--no-report", *judge_args(url, cache))
        assert code == 0, text
        full = read_results(out)
        # simulate a kill in the middle of writing the last row
        content = out.read_text()
        out.write_text(content[: len(content) - 40])
        assert [r["id"] for r in read_results(out)] == [r["id"] for r in full[:2]]
        before = url.count
        code, text = run_cli("score", path, "-o", out, "--no-report", *judge_args(url, None))
        assert code == 0, text
        assert "Resuming: 2 of 3 rows already done" in text
        assert url.count > before  # the torn row was scored again (without the cache)
    again = read_results(out)
    assert [r["id"] for r in again] == [r["id"] for r in full]
    assert again[2]["score"] == pytest.approx(full[2]["score"])
    # one entry per row, the torn one replaced (CSV has a header)
    if suffix == ".csv":
        assert len(list(csv.reader(out.open()))) == 4
    else:
        assert len(out.read_text().splitlines()) == 3


def test_cli_imports_no_framework() -> None:
    code = (
        "import sys, shared.cli.app, shared.cli.report, shared.runs.runner; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ragas', 'deepeval')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_context_budget_fits_the_servers_window_unless_given(tmp_path: Path) -> None:
    # The CLI passes --context-budget on only when the user gave it, so the core can fit the
    # budget to a server that publishes its window (here 4,096 tokens, llama.cpp's /props).
    text = " ".join(
        f"In year {1900 + i} the council of Harwick approved budget line {i} for road works."
        for i in range(400)
    )  # about 6,000 estimated tokens: within the default budget, not within 4,096
    summary = "Harwick's council approved budget lines for road works."
    source = write_jsonl(tmp_path / "in.jsonl", [{"source": text, "summary": summary}])
    with stub_server(context_window=4_096) as url:
        fitted, given = tmp_path / "fitted.jsonl", tmp_path / "given.jsonl"
        common = [*judge_args(url, None), "--dimensions", "density", "--no-report"]
        assert run_cli("score", source, "-o", fitted, *common)[0] == 0
        assert run_cli("score", source, "-o", given, "--context-budget", "3000", *common)[0] == 0
    assert "|budget:2048|" in read_results(fitted)[0]["signature"]
    assert "|budget:3000|" in read_results(given)[0]["signature"]
