"""check_judge / ``summary-eval check-judge``, and the judge checks ``score`` runs first:
reachability (exit 2 naming the URL), ``--timeout``, and failure reasons said once."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from shared import OpenAIJudge, check_judge, score_summary
from shared import prompts as p
from shared.cli.app import app
from shared.testing import FakeJudge, stub_server


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


@contextmanager
def closed_port() -> Iterator[str]:
    """A URL on 127.0.0.1 where nothing listens."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def silent_server() -> Iterator[str]:
    """A server that accepts connections and never answers (a hung judge)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        sock.close()


def test_a_good_judge_passes_every_line() -> None:
    with stub_server() as url:
        result = check_judge(OpenAIJudge("fake-judge", base_url=url, api_key="t"))
    names = [line.name for line in result.lines]
    assert names == ["reachable", "structured output", "latency", "context window", "canary"]
    assert [line.status for line in result.lines] == ["ok"] * 5, result.format()
    assert result.mode == "json_schema"
    assert result.exit_code == 0


def test_a_small_context_window_is_fitted_not_a_caveat() -> None:
    """An 8,192-token slot (llama.cpp -c 16384 -np 2): scoring fits its budget to it by itself
    (``_fit_context``), so the check says so and stays usable without a caveat."""
    with stub_server(context_window=8192) as url:
        result = check_judge(OpenAIJudge("fake-judge", base_url=url, api_key="t"))
    line = next(line for line in result.lines if line.name == "context window")
    assert line.status == "ok", result.format()
    assert "6144" in line.detail and "fits" in line.detail
    assert result.context_window == 8192
    assert result.exit_code == 0


def test_a_window_too_small_for_the_smallest_budget_is_a_caveat() -> None:
    with stub_server(context_window=3000) as url:
        result = check_judge(OpenAIJudge("fake-judge", base_url=url, api_key="t"))
    line = next(line for line in result.lines if line.name == "context window")
    assert line.status == "caveat" and "raise the server's context" in line.advice
    assert result.exit_code == 1


def test_a_wrong_canary_is_a_caveat() -> None:
    wrong = {
        "verdicts": [
            {"index": 1, "verdict": "supported", "reason": "r"},
            {"index": 2, "verdict": "supported", "reason": "r"},
        ]
    }
    with stub_server(FakeJudge({p.ClaimVerdicts: wrong})) as url:
        result = check_judge(OpenAIJudge("fake-judge", base_url=url, api_key="t"))
    canary = result.lines[-1]
    assert canary.name == "canary" and canary.status == "caveat"
    assert result.exit_code == 1


def test_the_mode_fallback_shows_in_the_check() -> None:
    with stub_server(refuse_json_schema=True) as url:
        result = check_judge(OpenAIJudge("fake-judge", base_url=url, api_key="t"))
    assert result.mode == "json_object_schema"
    assert "json_schema refused (HTTP 500)" in result.lines[1].detail
    assert result.exit_code == 0


def test_an_unreachable_judge_is_not_usable() -> None:
    with closed_port() as url:
        result = check_judge(OpenAIJudge("m", base_url=url, api_key="t"))
    assert [(line.name, line.status) for line in result.lines] == [("reachable", "fail")]
    assert url in result.lines[0].detail
    assert result.exit_code == 2


def test_check_judge_command_prints_the_table_and_exits_by_verdict() -> None:
    with stub_server() as url:
        code, output = run_cli("check-judge", "--base-url", url, "--model", "fake-judge")
    assert code == 0, output
    for word in ("reachable", "structured output", "json_schema", "canary", "usable"):
        assert word in output
    with closed_port() as url:
        code, output = run_cli("check-judge", "--base-url", url, "--model", "m")
    assert code == 2 and "cannot connect" in output and "not usable" in output


def test_score_refuses_an_unreachable_judge_before_any_row(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text('{"id": "a", "source": "A cat sat. It slept.", "summary": "A cat sat."}\n')
    out = tmp_path / "out.jsonl"
    with closed_port() as url:
        code, output = run_cli("score", data, "-o", out, "--base-url", url, "--model", "m")
    assert code == 2
    assert "not reachable" in output and url in output
    assert not out.exists()  # nothing scored, nothing written


def test_score_timeout_bounds_a_silent_server(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text('{"id": "a", "source": "A cat sat. It slept.", "summary": "A cat sat."}\n')
    with silent_server() as url:
        code, output = run_cli(
            "score", data, "-o", tmp_path / "o.jsonl", "--base-url", url, "--timeout", "1"
        )
    assert code == 2
    assert "no answer from" in output and url in output


def test_a_failure_of_both_sides_is_said_once(seed: tuple[str, str]) -> None:
    down = ConnectionError("server went away")
    fake = FakeJudge({p.GeneratedQuestions: down, p.ExtractedClaims: down})
    result = score_summary(*seed, judge=fake, dimensions=[], retries=0)
    assert result.score is None
    assert (result.error or "").count("server went away") == 1, result.error
