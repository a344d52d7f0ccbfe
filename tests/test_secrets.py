"""No secret in any file (issue 34): an API key given with ``--api-key`` or ``OPENAI_API_KEY``,
credentials in ``--base-url`` and a bearer token a server echoes in its error never reach the
results file, the report, a rebuilt report, the cache, bench's JSON and HTML, or the terminal.

Each run plants distinct keys and then reads every byte of every file it wrote."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared import score_summaries
from shared.cli.app import app
from shared.cli.stub_judge import peer_schemas
from shared.core.redact import MASK, command_line, redact, redact_url
from shared.testing import FakeJudge, stub_server
from tests.test_bench import PeerFake

CLI_KEY = "sk-plantedCLIkey0123456789abcdef"
ENV_KEY = "sk-plantedENVkey0123456789abcdef"
URL_PASSWORD = "plantedURLpass4567"
SECRETS = (CLI_KEY, ENV_KEY, URL_PASSWORD)

ROWS = [
    {
        "id": f"r{i}",
        "source": "The council approved a new bike network. Work starts in March. It will cost "
        "nine million euros and take three years.",
        "summary": "The council approved a bike network that starts in March.",
    }
    for i in range(2)
]


def _rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://judge:{URL_PASSWORD}@", 1)


def _invoke(monkeypatch: pytest.MonkeyPatch, *args: Any) -> tuple[int, str]:
    """Run the CLI as a user would: ``sys.argv`` is what the run records as its command."""
    argv = [str(a) for a in args]
    monkeypatch.setattr(sys, "argv", ["summary-eval", *argv])
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"}, catch_exceptions=False)
    return result.exit_code, result.output


def _score(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str, *extra: Any
) -> tuple[int, str]:
    """``score`` of the two rows against ``url``, with a cache, into ``tmp_path``."""
    return _invoke(
        monkeypatch, "score", _rows_file(tmp_path), "--base-url", url, "--model", "stub",
        "--cache", tmp_path / "cache.sqlite3", "--dimensions", "density",
        "-o", tmp_path / "rows.results.jsonl", *extra,
    )  # fmt: skip


def _leaks(folder: Path, output: str = "") -> list[str]:
    """Every (file, secret) pair where a planted secret appears, bytes and all."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.name}: {s}" for s in SECRETS if s.encode() in data]
    found += [f"terminal: {s}" for s in SECRETS if s in output]
    return found


def test_score_report_and_cache_hold_no_key_or_url_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with stub_server(FakeJudge()) as url:
        code, output = _score(
            monkeypatch, tmp_path, _with_password(url), "--api-key", CLI_KEY,
            "--report", tmp_path / "rows.report.html",
        )  # fmt: skip
        assert code == 0, output
        assert url.auth and all(url.auth)  # credentials were sent (httpx: Basic from the URL)
    code, rebuilt = _invoke(
        monkeypatch, "report", tmp_path / "rows.results.jsonl", "-o", tmp_path / "again.html"
    )
    assert code == 0, rebuilt
    written = {p.name for p in tmp_path.rglob("*") if p.is_file()}
    assert {"rows.results.jsonl", "rows.report.html", "again.html", "cache.sqlite3"} <= written
    assert _leaks(tmp_path, output + rebuilt) == []
    # the command is still recorded, with the secrets masked
    results = [json.loads(line) for line in (tmp_path / "rows.results.jsonl").open()]
    command = results[0]["evidence"]["run"]["command"]
    assert f"--api-key {MASK}" in command.replace("'", "") and "judge:" not in command
    assert f"http://{MASK}@127.0.0.1" in command.replace("'", "")
    assert f"--api-key {MASK}" in (tmp_path / "again.html").read_text().replace("&#39;", "")


def test_the_environments_key_reaches_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    with stub_server(FakeJudge()) as url:
        # a command that quotes the key (a pasted line) still records it masked
        code, output = _score(monkeypatch, tmp_path, f"{url}?api_key={ENV_KEY}")
    assert code == 0, output
    assert _leaks(tmp_path, output) == []


def test_bench_json_and_html_hold_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with stub_server(PeerFake(), schemas=peer_schemas()) as url:
        _code, output = _invoke(
            monkeypatch,
            "bench",
            "--base-url",
            _with_password(url),
            "--api-key",
            CLI_KEY,
            "--model",
            "stub",
            "--articles",
            "1",
            "--summaries",
            "3",  # a correlation needs three rated rows
            "--workdir",
            tmp_path / "w",
            "--json",
            tmp_path / "b.json",
            "--resamples",
            "20",
        )
    assert (tmp_path / "b.json").is_file() and (tmp_path / "w" / "bench-report.html").is_file()
    assert _leaks(tmp_path, output) == [], output


class _EchoingProxy(BaseHTTPRequestHandler):
    """Lists one model, and answers every chat request with HTTP 400 quoting the request's
    headers, as some proxies do."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items()}
        self._send(400, {"error": {"message": f"bad request; headers were {headers}"}})


@pytest.fixture
def echoing_proxy() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingProxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_judge_error_echoing_the_bearer_token_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, echoing_proxy: str
) -> None:
    rows = _rows_file(tmp_path)
    _code, output = _invoke(
        monkeypatch,
        "score",
        rows,
        "--base-url",
        echoing_proxy,
        "--model",
        "stub",
        "--api-key",
        CLI_KEY,
        "--no-cache",
        "--retries",
        "0",
        "--dimensions",
        "density",
        "-o",
        tmp_path / "rows.results.jsonl",
        "--report",
        tmp_path / "rows.report.html",
    )
    results = [json.loads(line) for line in (tmp_path / "rows.results.jsonl").open()]
    assert [r["status"] for r in results] == ["unscored", "unscored"], output
    assert all("400" in r["error"] for r in results), results[0]["error"]
    assert _leaks(tmp_path, output) == []


def test_the_python_api_error_is_redacted_too(echoing_proxy: str) -> None:
    from shared.judge.openai import OpenAIJudge

    judge = OpenAIJudge("stub", base_url=echoing_proxy, api_key=CLI_KEY, structured="json_object")
    (result,) = score_summaries([(ROWS[0]["source"], ROWS[0]["summary"])], judge=judge, cache=False)
    assert result.score is None and result.error and "400" in result.error
    assert CLI_KEY not in result.error and CLI_KEY not in (result.reason or "")


# --- the rule itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('{"Authorization": "Bearer abcDEF123456"}', '{"Authorization": "Bearer ***"}'),
        ("authorization: Basic dXNlcjpwYXNz", "authorization: Basic ***"),
        ("x-api-key: 12345678", "x-api-key: ***"),
        ("GET /v1?api_key=abc123&model=m", "GET /v1?api_key=***&model=m"),
        ("at http://me:pw@host:1/v1 now", "at http://***@host:1/v1 now"),
        ("key sk-proj-abcdefghijklmnop0", "key ***"),
        # prose and the program's own hints stay as they were
        ("the bearer of bad news", "the bearer of bad news"),
        ("pass api_key= (--api-key) or set it", "pass api_key= (--api-key) or set it"),
        ("prompt_tokens: 12, completion_tokens: 3", "prompt_tokens: 12, completion_tokens: 3"),
    ],
)
def test_redact_masks_secret_shapes_and_keeps_prose(text: str, kept: str) -> None:
    assert redact(text) == kept


def test_redact_url_and_command_line() -> None:
    assert redact_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert redact_url("https://TOKEN123@h/v1?token=t&a=1") == "https://***@h/v1?token=***&a=1"
    recorded = command_line(["score", "x.jsonl", "--api-key", "k1", "--api-key=k2", "-o", "y"])
    assert recorded == "summary-eval score x.jsonl --api-key '***' '--api-key=***' -o y"


def test_a_report_rebuilt_from_an_older_results_file_masks_its_recorded_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows_file(tmp_path)
    code, output = _invoke(
        monkeypatch, "score", rows, "--no-judge", "--no-cache", "--dimensions", "density",
        "-o", tmp_path / "rows.results.jsonl",
    )  # fmt: skip
    assert code == 0, output
    # a results file of an earlier version recorded the key as typed
    old_key = "plainOLDkey9876"
    lines = [json.loads(line) for line in (tmp_path / "rows.results.jsonl").open()]
    for line in lines:
        line["evidence"]["run"]["command"] = f"summary-eval score rows.jsonl --api-key {old_key}"
    old = tmp_path / "old.results.jsonl"
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, output = _invoke(monkeypatch, "report", old, "-o", tmp_path / "old.html")
    assert code == 0, output
    page = (tmp_path / "old.html").read_text()
    assert old_key not in page and "--api-key ***" in page


def test_parquet_results_hold_no_known_secret(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from shared.core.redact import register_secret
    from shared.runs.parquet import ParquetResults
    from shared.runs.results import score_keys

    register_secret(CLI_KEY)
    command = f"summary-eval score x --api-key {CLI_KEY}"
    row = {"id": "a", "position": 0, "status": "unscored", "error": f"echo {CLI_KEY}",
           "evidence": {"run": {"command": command}}}  # fmt: skip
    ParquetResults(tmp_path / "out.parquet", score_keys()).rewrite([row])
    assert _leaks(tmp_path) == [] and (tmp_path / "out.parquet").stat().st_size > 0
