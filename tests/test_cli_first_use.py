"""What a new user meets on a fresh clone (issue 43): piped output in whole lines (item 10), a
command that loads only what it uses (item 12: ``--version``, ``stub-judge``, ``score
--dry-run`` import no text model and no framework; the stub judge writes no ``./.deepeval/``),
and the closing line's flips counted at the run's own pass mark (item 14).

What a command loaded is read from ``sys.modules`` in the child, when it exits, never from a
clock.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from shared.testing import stub_server

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "summaries.jsonl"
HEAVY = ("spacy", "torch", "sentence_transformers", "transformers", "nltk", "deepeval", "ragas")
# The child: the suite's network guard, then the command line; on exit, what it had loaded.
CHILD = """
import atexit, json, sys
import pytest_socket
pytest_socket.socket_allow_hosts(["127.0.0.1", "localhost", "::1"])
HEAVY = {heavy!r}
atexit.register(
    lambda: print("LOADED", json.dumps(sorted(m for m in (*HEAVY, *{more!r}) if m in sys.modules)),
                  file=sys.stderr)
)
from shared.cli import main
sys.argv = ["summary-eval", *sys.argv[1:]]
main()
"""


def _env(**extra: str) -> dict[str, str]:
    """The suite's environment for a child that is piped (no COLUMNS: nothing says a width)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("OPENAI_")}
    return env | {"PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"} | extra


def _stub(url: str) -> list[str]:
    return ["--base-url", url, "--model", "stub", "--no-cache"]


def _child(*more: str) -> list[str]:
    return [sys.executable, "-c", CHILD.format(heavy=HEAVY, more=more)]


def _loaded(stderr: str) -> list[str]:
    line = next(line for line in stderr.splitlines() if line.startswith("LOADED "))
    return json.loads(line.removeprefix("LOADED "))


# -- item 10: whole lines when piped -------------------------------------------------------------


def test_a_console_on_a_pipe_prints_whole_lines_and_a_terminal_still_wraps() -> None:
    from shared.cli.terminal import WholeLines, console

    line = "word " * 60  # 300 characters
    piped = io.StringIO()
    shown = WholeLines(file=piped, highlight=False)
    shown.print(line.strip())
    assert piped.getvalue() == line.strip() + "\n"
    terminal = io.StringIO()
    WholeLines(file=terminal, force_terminal=True, width=80, highlight=False).print(line.strip())
    assert len(terminal.getvalue().splitlines()) > 1  # a terminal's width still wraps
    assert isinstance(console(stderr=True), WholeLines)


OUT = "out.results.jsonl"


def _dry_run(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """``score --dry-run`` of the examples against the stub, piped: the run and the calls the
    stub got."""
    with stub_server() as url:
        done = subprocess.run(
            [
                *_child(),
                "score",
                str(EXAMPLES),
                *_stub(url),
                "--dry-run",
                "-o",
                OUT,
            ],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        return done, url.count


def test_piped_score_output_keeps_each_line_whole(tmp_path: Path) -> None:
    """The estimate line (about 150 characters) and the closing lines reach ``| grep`` whole."""
    done, _ = _dry_run(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    estimate = [line for line in done.stderr.splitlines() if line.startswith("Estimate for ")]
    assert len(estimate) == 1 and estimate[0].endswith("before cache hits"), done.stderr


# -- item 12: a command loads only what it uses ---------------------------------------------------


def test_version_loads_no_command_module(tmp_path: Path) -> None:
    done = subprocess.run(
        [*_child("numpy", "typer", "shared.cli.app", "shared.dimensions"), "--version"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("summary-eval ")
    assert _loaded(done.stderr) == []


def test_dry_run_loads_no_text_model(tmp_path: Path) -> None:
    done, calls = _dry_run(tmp_path)
    assert calls == 0  # --dry-run calls no judge
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Estimate for 8 row(s): about " in done.stderr
    assert _loaded(done.stderr) == []
    assert not (tmp_path / OUT).exists()


def _stub_judge(folder: Path, peer_request: bool) -> tuple[str, str]:
    """``summary-eval stub-judge`` started in ``folder`` with DeepEval's telemetry on (its
    default: DeepEval then creates ``./.deepeval/`` on import), piped, stopped with Ctrl-C after
    its URL (and, with ``peer_request``, one DeepEval-shaped request): (the line it announced
    itself with on stderr, all of its stderr)."""
    drop = ("DEEPEVAL_TELEMETRY_OPT_OUT", "DEEPEVAL_FILE_SYSTEM")
    proc = subprocess.Popen(
        [*_child(), "stub-judge"],
        cwd=folder,
        env={k: v for k, v in _env().items() if k not in drop},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        url = proc.stdout.readline().strip()  # blocks until the server is up
        assert url.startswith("http://127.0.0.1:"), url
        announced = proc.stderr.readline()  # the line after the URL: whole, though piped
        assert announced.startswith(f"Stub judge serving at {url} ")
        if peer_request:
            body = {
                "model": "m",
                "messages": [{"role": "user", "content": "Give verdicts."}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "Verdicts"}},
            }
            request = urllib.request.Request(
                f"{url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=600) as reply:
                answer = json.loads(json.load(reply)["choices"][0]["message"]["content"])
            assert "verdicts" in answer  # DeepEval's own schema, answered
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    return announced, stderr


def test_stub_judge_starts_without_frameworks_or_text_models(tmp_path: Path) -> None:
    announced, stderr = _stub_judge(tmp_path, peer_request=False)
    assert announced.rstrip().endswith("Ctrl-C stops it."), announced  # whole, though piped
    assert _loaded(stderr) == []
    assert not (tmp_path / ".deepeval").exists()


def test_a_peers_request_loads_its_schemas_and_writes_no_deepeval_folder(tmp_path: Path) -> None:
    _, stderr = _stub_judge(tmp_path, peer_request=True)
    loaded = _loaded(stderr)
    assert "deepeval" in loaded  # imported for the peer's request
    assert not {"spacy", "torch", "sentence_transformers"} & set(loaded), loaded
    assert not (tmp_path / ".deepeval").exists()


# -- item 14: flips at the run's pass mark ------------------------------------------------------


SAMPLED = ("--samples", "2", "--dimensions", "", "--no-report")  # no text model: a quick run


def _sampled_run(tmp_path: Path, *flags: str) -> str:
    with stub_server() as url:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "shared.cli",
                "score",
                str(EXAMPLES),
                *_stub(url),
                *SAMPLED,
                *flags,
            ],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode in (0, 3, 4), done.stderr[-3000:]
    return next(line for line in done.stdout.splitlines() if line.startswith("Pass/fail flips"))


def test_flips_are_counted_at_the_runs_pass_mark(tmp_path: Path) -> None:
    line = _sampled_run(tmp_path, "--fail-under", "0.7")
    assert line.startswith("Pass/fail flips: score at threshold 0.7: "), line
    assert "--flip-threshold" not in line


def test_a_flip_threshold_given_is_used_and_said_to_differ(tmp_path: Path) -> None:
    line = _sampled_run(tmp_path, "--fail-under", "0.7", "--flip-threshold", "0.5", "-o", "b.jsonl")
    assert line.startswith("Pass/fail flips: score at threshold 0.5: "), line
    assert line.endswith("(--flip-threshold 0.5, not the run's pass mark 0.7)."), line
