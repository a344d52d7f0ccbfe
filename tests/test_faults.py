"""Faults that lose nothing (issue 34): a locked cache, a full disk, a reader that closes stdout,
a dry run that must touch nothing, prices that would overflow the bill."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared.cli import main
from shared.cli.app import app
from shared.core.pricing import Prices
from shared.judge import wrappers
from shared.judge.wrappers import CacheWarning, SQLiteStore
from shared.runs.results import ResultsWriter
from shared.testing import FakeJudge, stub_server
from tests.test_secrets import ROWS, _rows_file


def _rows(tmp_path: Path) -> Path:
    return _rows_file(tmp_path)


def _cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    return result.exit_code, " ".join(result.output.split())


# --- a cache another process holds locked ------------------------------------------------------


def _hold_exclusive(path: Path) -> sqlite3.Connection:
    """Another connection holding the cache under SQLite's exclusive lock (as a second run, or
    a `sqlite3` shell in a transaction, would)."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT OR REPLACE INTO judge_cache VALUES ('held', 'by another process')")
    return holder


def test_a_locked_cache_is_not_set_aside_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    store = SQLiteStore(path)
    store.put("answer", "paid for")
    store.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    holder = _hold_exclusive(path)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            locked = SQLiteStore(path, lock_wait=0.05)
        messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
        assert len(messages) == 1 and "locked by another process" in messages[0], messages
        names = sorted(p.name for p in tmp_path.iterdir())  # (the holder keeps its own WAL)
        assert set(before) <= set(names) and not [n for n in names if "corrupt" in n], names
        locked.put("new", "kept for this run")  # the run goes on, without the file
        assert locked.get("new") == "kept for this run" and len(locked) == 1
    finally:
        holder.execute("COMMIT")
        holder.close()
    again = SQLiteStore(path)  # the lock is gone: every paid answer is still there
    assert again.get("answer") == "paid for" and again.get("new") is None
    again.close()


def test_score_with_a_locked_cache_says_so_and_scores_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.sqlite3"
    SQLiteStore(path).close()
    monkeypatch.setattr(wrappers, "LOCK_WAIT_S", 0.05)
    holder = _hold_exclusive(path)
    try:
        with stub_server(FakeJudge()) as url:
            code, text = _cli(
                "score", _rows(tmp_path), "--base-url", url, "--model", "stub",
                "--cache", path, "--dimensions", "density", "-o", tmp_path / "out.jsonl",
            )  # fmt: skip
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert code == 0, text
    assert "locked by another process" in text and f"{len(ROWS)} of {len(ROWS)} rows scored" in text
    assert not list(tmp_path.glob("*.corrupt*"))


# --- a full disk --------------------------------------------------------------------------------


def test_a_full_disk_is_one_line_naming_the_file_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = ResultsWriter._write_one
    written: list[str] = []

    def fill_up(self: ResultsWriter, handle: Any, writer: Any, row: dict[str, Any]) -> None:
        if len(written) == 1:  # the disk is full after the first row
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, handle, writer, row)
        written.append(row["id"])

    monkeypatch.setattr(ResultsWriter, "_write_one", fill_up)
    output = tmp_path / "out.results.jsonl"
    argv = ["score", str(_rows(tmp_path)), "--no-judge", "--no-cache", "--dimensions", "density"]
    monkeypatch.setattr(sys, "argv", ["summary-eval", *argv, "-o", str(output)])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(lines) == 1, lines
    assert "no space left" in lines[0] and str(output) in lines[0]
    assert [json.loads(line)["id"] for line in output.open()] == ["r0"]  # kept


# --- a reader that closes stdout ----------------------------------------------------------------


def test_a_closed_stdout_is_exit_0_and_quiet(tmp_path: Path) -> None:
    output = tmp_path / "out.results.jsonl"
    command = [
        sys.executable, "-m", "shared.cli", "score", str(_rows(tmp_path)), "--no-judge",
        "--no-cache", "--dimensions", "density", "-o", str(output),
    ]  # fmt: skip
    reader_gone = subprocess.Popen(  # `summary-eval score … | head -c0`
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "COLUMNS": "120"},
    )
    assert reader_gone.stdout is not None
    reader_gone.stdout.close()
    _, stderr = reader_gone.communicate(timeout=600)
    text = stderr.decode()
    assert reader_gone.returncode == 0, text
    assert "Traceback" not in text and "Exception ignored" not in text, text
    assert len(output.read_text().splitlines()) == len(ROWS)
    assert output.with_name("out.report.html").is_file()  # the report is complete too


# --- --dry-run touches nothing ------------------------------------------------------------------


def test_dry_run_creates_no_file_and_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    rows = _rows(work)
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the default cache's home
    with stub_server(FakeJudge()) as url:
        code, text = _cli("score", rows, "--base-url", url, "--model", "stub", "--dry-run")
        assert url.usage["calls"] == 0
    assert code == 0 and "Estimate" in text, text
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "work",
        "work/rows.jsonl",
    ]


# --- prices that would overflow the bill --------------------------------------------------------


@pytest.mark.parametrize("flags", [["--price-in", "1e308"], ["--price-in", "20000"]])
def test_absurd_prices_are_refused_before_any_call(tmp_path: Path, flags: list[str]) -> None:
    with stub_server(FakeJudge()) as url:
        code, text = _cli(
            "score", _rows(tmp_path), "--base-url", url, "--model", "stub", "--no-cache",
            *flags, "--price-out", "1", "-o", tmp_path / "out.jsonl",
        )  # fmt: skip
        assert url.usage["calls"] == 0
    assert code == 2 and "at most $10,000 per million tokens" in text, text
    assert not (tmp_path / "out.jsonl").exists()
    with pytest.raises(ValueError, match="at most"):
        Prices(1e308, 0.0, 1.0, source="given")
    assert Prices(10_000, 10_000, 10_000, source="given").cost({"completion_tokens": 10**6}) == 1e4
