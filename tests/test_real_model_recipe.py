"""docs/JUDGES.md's local-judge recipe, run as written, against the real model.

The recipe block of docs/JUDGES.md (section "A laptop's first run") holds two commands: start
``llama-server`` and run ``summary-eval score`` on the 8 examples. This test runs them as
written; only what a user's machine decides is filled in: the server binary and GGUF path
(scripts/real_model_setup.sh prints them), a free port instead of the documented one, and a
fresh cache directory. The score command runs in a scratch directory holding a copy of
``examples/``, as a user in a checkout would.

The run is stopped (Ctrl-C, which keeps every finished row) at the deadline the issue set: 600 s
on an idle machine, 900 s while a process the test starts keeps one core busy. The assertion is
on the rows scored by then, read back from the results file; nothing times a call.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server import free_port, running

from tests.conftest import sigint_default

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "JUDGES.md"
SERVER_ENV, MODEL_ENV = "SUMMARY_EVAL_LLAMA_SERVER", "SUMMARY_EVAL_GGUF"
RECIPE_HEADING = "### A laptop's first run"
DOC_PORT = "8089"
AT_LEAST = 6


def recipe() -> tuple[list[str], list[str]]:
    """The (llama-server, summary-eval score) commands of the recipe block, split as a shell
    would."""
    text = DOC.read_text()
    section = text[text.index(RECIPE_HEADING) :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, f"no bash block under {RECIPE_HEADING!r} in {DOC}"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    server = next(shlex.split(line) for line in lines if line.startswith("llama-server "))
    score = next(shlex.split(line) for line in lines if line.startswith("summary-eval score "))
    return server, score


def test_the_recipe_block_is_what_this_file_runs() -> None:
    # in the default run (no model needed): the documented commands keep the shape the
    # real-model tests below rely on
    server, score = recipe()
    assert "-m" in server and "MODEL.gguf" in server and DOC_PORT in server
    assert score[:3] == ["summary-eval", "score", "examples/summaries.jsonl"]
    assert f"http://127.0.0.1:{DOC_PORT}/v1" in score


@pytest.fixture
def recipe_server(tmp_path: Path) -> Iterator[str]:
    """The recipe's llama-server on a free port; yields its port once healthy."""
    binary, gguf = os.environ.get(SERVER_ENV), os.environ.get(MODEL_ENV)
    if not (binary and gguf and Path(binary).exists() and Path(gguf).exists()):
        pytest.skip(f"set {SERVER_ENV} and {MODEL_ENV} (scripts/real_model_setup.sh prints them)")
    server, _ = recipe()
    port = free_port()
    command = [binary] + [
        gguf if arg == "MODEL.gguf" else str(port) if arg == DOC_PORT else arg for arg in server[1:]
    ]
    with running(command, port, tmp_path):
        yield str(port)


def _run_recipe(port: str, workdir: Path, deadline_s: float) -> tuple[list[dict], str, float]:
    """The recipe's score command, stopped with Ctrl-C at ``deadline_s``: the finished rows,
    the command's output, and its wall time."""
    _, score = recipe()
    shutil.copytree(REPO / "examples", workdir / "examples")
    command = [sys.executable, "-m", "shared.cli"] + [
        arg.replace(f":{DOC_PORT}/", f":{port}/") for arg in score[1:]
    ]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "XDG_CACHE_HOME": str(workdir / "cache"),  # a first run: nothing cached
        "COLUMNS": "200",
    }
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=sigint_default,  # stopped with Ctrl-C at the deadline
    )
    try:
        output, _ = process.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # finished rows are kept
        try:
            output, _ = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
    wall = time.monotonic() - started
    results = workdir / "summaries.results.jsonl"
    lines = results.read_text().splitlines() if results.exists() else []
    rows = [json.loads(line) for line in lines]
    return rows, output.decode(errors="replace"), wall


def _report(label: str, rows: list[dict], output: str, wall: float) -> int:
    scored = sum(row.get("status") == "ok" for row in rows)
    bill = re.search(r"Judge bill: [^\n]*", output)
    print(f"\n{label}: {scored} of 8 scored, {len(rows)} finished, wall {wall:.0f} s")
    print("  " + (bill.group(0) if bill else "no bill (stopped before the end)"))
    for line in output.splitlines():
        if line.startswith(("Judge server:", "Per-call limit", "Concurrency", "Estimate")):
            print("  " + line)
    for row in rows:
        if row.get("status") != "ok":
            print(f"  {row.get('id')}: {str(row.get('error'))[:160]}")
    return scored


@pytest.mark.real_model
def test_the_recipe_scores_six_of_eight_within_600_s_idle(
    recipe_server: str, tmp_path: Path
) -> None:
    rows, output, wall = _run_recipe(recipe_server, tmp_path, 600)
    scored = _report("recipe, idle", rows, output, wall)
    assert scored >= AT_LEAST, output[-3000:]
    # every row that was not scored says why
    assert all(row.get("error") for row in rows if row.get("status") != "ok")


@pytest.mark.real_model
def test_the_recipe_scores_six_of_eight_within_900_s_with_one_core_busy(
    recipe_server: str, tmp_path: Path
) -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        rows, output, wall = _run_recipe(recipe_server, tmp_path, 900)
    finally:
        busy.terminate()
        busy.wait(timeout=30)
    scored = _report("recipe, one core busy", rows, output, wall)
    assert scored >= AT_LEAST, output[-3000:]
