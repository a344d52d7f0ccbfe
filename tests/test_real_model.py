"""End to end against a real model: llama.cpp's ``llama-server`` with SmolLM2-135M-Instruct.

Run with ``pytest -m real_model`` after ``eval "$(scripts/real_model_setup.sh)"`` (which builds
the server and unpacks the model, cached; it prints SUMMARY_EVAL_LLAMA_SERVER and
SUMMARY_EVAL_GGUF). Without those variables every test here is skipped, and the default
``pytest`` run deselects them (pyproject's ``-m 'not real_model'``).

A 135M model is no judge: these tests assert the plumbing, not the quality. Every row ends
scored, or unscored with a reason naming what failed; no exception escapes; the server's real
``usage`` is recorded; a rerun from the cache makes no call.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_server import llama_server as start_server

from shared import OpenAIJudge, SQLiteStore, score_summaries

pytestmark = pytest.mark.real_model

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "summaries.jsonl"
SERVER_ENV, MODEL_ENV = "SUMMARY_EVAL_LLAMA_SERVER", "SUMMARY_EVAL_GGUF"
MODEL = "smollm2"
MAX_TOKENS = 1024
"""Only for the framework adapters' own model wrappers below (Ragas's llm_factory, a DeepEval
model), which send what the framework asks: llama-server's default reply length is "until the
context is full". OpenAIJudge needs no such bound: it sets max_tokens from each schema's bounds."""
REASON = re.compile(r"still invalid|judge call failed|truncated|coverage is undefined")
"""What an unscored row's reason names: the judge step that failed and why."""


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama-server on 127.0.0.1 (free port, 32768 context over 4 slots, 2 threads, or
    SUMMARY_EVAL_LLAMA_THREADS: on a busy machine 1 thread is faster); yields
    its OpenAI base URL once ``/health`` answers 200 (it answers 503 while the model loads)."""
    binary, gguf = os.environ.get(SERVER_ENV), os.environ.get(MODEL_ENV)
    if not (binary and gguf and Path(binary).exists() and Path(gguf).exists()):
        pytest.skip(f"set {SERVER_ENV} and {MODEL_ENV} (scripts/real_model_setup.sh prints them)")
    with start_server(
        binary, gguf, MODEL, ["-c", "32768", "-np", "4"], tmp_path_factory.mktemp("llama")
    ) as url:
        yield url


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]


def _judge(url: str) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=url, timeout=900, max_retries=1)


def _assert_plumbing(results: list[Any], n: int) -> None:
    assert len(results) == n
    for result in results:
        if result.score is None:
            assert result.error and REASON.search(result.error), result.error
        else:
            assert 0.0 <= result.score <= 1.0 and not math.isnan(result.score)


@pytest.fixture(scope="module")
def examples_run(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The 8 example rows through score_summaries once (a slow step: shared by the tests)."""
    rows = _rows()
    cache = tmp_path_factory.mktemp("cache") / "judge.sqlite3"
    judge = _judge(llama_server)
    started = time.monotonic()
    results = score_summaries(
        [(r["source"], r["summary"]) for r in rows], judge=judge, cache=cache, concurrency=4
    )
    wall = time.monotonic() - started
    print(
        f"\nreal model: {sum(r.scored for r in results)}/{len(rows)} scored, usage "
        f"{judge.usage}, mode {judge.mode}, wall {wall:.0f} s"
    )
    for row, result in zip(rows, results, strict=True):
        print(f"  {row['id']}: {result.score if result.scored else result.error}")
    return {"rows": rows, "results": results, "judge": judge, "cache": cache}


def test_every_example_row_ends_scored_or_unscored_with_a_reason(
    examples_run: dict[str, Any],
) -> None:
    _assert_plumbing(examples_run["results"], len(examples_run["rows"]))


def test_real_usage_is_recorded_and_the_mode_is_json_schema(examples_run: dict[str, Any]) -> None:
    judge = examples_run["judge"]
    assert judge.usage["calls"] > 0
    assert judge.usage["prompt_tokens"] > 0 and judge.usage["completion_tokens"] > 0
    assert judge.mode == "json_schema"  # llama-server takes it (and enforces it by grammar)


def test_a_cached_rerun_makes_no_call(examples_run: dict[str, Any], llama_server: str) -> None:
    # Only validated answers are cached, so a rerun asks again exactly for the steps that
    # failed: the rows that were scored must come back from the cache without any call.
    scored = [
        (row, result)
        for row, result in zip(examples_run["rows"], examples_run["results"], strict=True)
        if result.scored
    ]
    if not scored:
        pytest.skip("no example row was scored, so no row is wholly in the cache")
    judge = _judge(llama_server)
    again = score_summaries(
        [(row["source"], row["summary"]) for row, _ in scored],
        judge=judge,
        cache=SQLiteStore(examples_run["cache"]),
    )
    assert judge.usage["calls"] == 0
    assert [r.score for r in again] == pytest.approx([r.score for _, r in scored])


def test_at_least_six_of_eight_example_rows_are_scored(examples_run: dict[str, Any]) -> None:
    assert sum(r.scored for r in examples_run["results"]) >= 6


FR_SOURCE = (
    "La ville de Lyon a ouvert une nouvelle bibliothèque le 3 mars. Le bâtiment compte 120 000 "
    "livres et une salle de concert. Les travaux ont coûté 45 millions d'euros. Le maire a "
    "annoncé des horaires prolongés le dimanche."
)
FR_SUMMARY = "Lyon a ouvert une bibliothèque de 120 000 livres, qui a coûté 45 millions d'euros."


def test_a_french_pair_goes_through_the_real_server_with_the_language_block(
    llama_server: str,
) -> None:
    """Plumbing for non-English rows: the prompts with the language block still fit the window,
    the replies still follow the bounded schemas, and the row is scored or unscored with a
    reason. (Whether a 135M model writes good French is not asked.)"""
    judge = _judge(llama_server)
    (result,) = score_summaries([(FR_SOURCE, FR_SUMMARY)], judge=judge, n=3, concurrency=4)
    print(f"\nreal model, French: {result.score if result.scored else result.error}")
    _assert_plumbing([result], 1)
    assert result.language is not None and result.language.summary == "fr"
    assert "|lang-prompts:" in result.signature and "|lang:fr" in result.signature
    assert judge.usage["calls"] > 0 and judge.mode == "json_schema"


def test_ragas_evaluate_against_the_real_model(llama_server: str) -> None:
    from openai import AsyncOpenAI
    from ragas import EvaluationDataset, evaluate
    from ragas.llms import llm_factory

    from ragas_ext import SummaryQuality

    rows = _rows()[:2]
    client = AsyncOpenAI(base_url=llama_server, api_key="x", max_retries=1, timeout=900)
    llm = llm_factory(MODEL, client=client, max_tokens=MAX_TOKENS)
    data = EvaluationDataset.from_list(
        [{"reference_contexts": [r["source"]], "response": r["summary"]} for r in rows]
    )
    frame = evaluate(data, metrics=[SummaryQuality(n=3)], llm=llm, show_progress=False).to_pandas()
    assert len(frame) == 2
    column = frame[SummaryQuality().name]
    assert all(math.isnan(v) or 0.0 <= v <= 1.0 for v in column)


def test_deepeval_evaluate_against_the_real_model(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeepEval with a local server as docs/deepeval.md says: ``model=OpenAIJudge(...)`` (the
    core's client: json_schema with the bounded schemas, max_tokens from their bounds), and
    ``ignore_errors=True`` so a case the small model cannot answer is an error, not a crash.
    DeepEval's own per-metric time limit is lifted: on a loaded 2-core machine it cancelled both
    cases while the judge was still answering (each call is bounded by the judge's deadline)."""
    monkeypatch.setenv("DEEPEVAL_PER_TASK_TIMEOUT_SECONDS_OVERRIDE", "3600")
    from deepeval import evaluate
    from deepeval.evaluate.configs import DisplayConfig, ErrorConfig
    from deepeval.test_case import LLMTestCase

    from deepeval_ext import SummaryQualityMetric
    from shared import OpenAIJudge

    monkeypatch.chdir(tmp_path)  # DeepEval writes ./.deepeval/
    judge = OpenAIJudge(MODEL, base_url=llama_server, timeout=900, max_retries=1)
    rows = _rows()[:2]
    result = evaluate(
        [LLMTestCase(input=r["source"], actual_output=r["summary"]) for r in rows],
        metrics=[SummaryQualityMetric(model=judge, n=3)],
        display_config=DisplayConfig(print_results=False, show_indicator=False),
        error_config=ErrorConfig(ignore_errors=True),
    )
    assert len(result.test_results) == 2
    for test_result in result.test_results:
        data = test_result.metrics_data[0]
        assert (data.score is not None and 0.0 <= data.score <= 1.0) or data.error, data
    assert judge.usage["calls"] > 0 and judge.usage["completion_tokens"] > 0
    assert judge.mode == "json_schema"
    scored = [t for t in result.test_results if t.metrics_data[0].score is not None]
    assert scored, [t.metrics_data[0].error for t in result.test_results]


def test_the_cli_against_the_real_model(llama_server: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from shared.cli.app import app

    data = tmp_path / "two.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()[:2]))
    out = tmp_path / "two.results.jsonl"
    args = ["score", str(data), "-o", str(out), "--base-url", llama_server, "--model", MODEL]
    args += ["--n", "3", "--no-cache", "--timeout", "900", "--concurrency", "4"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # 1: some rows unscored, with reasons
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["status"] in ("ok", "unscored"), row
        if row["status"] == "unscored":
            assert row["error"], row
    check = CliRunner().invoke(
        app, ["check-judge", "--base-url", llama_server, "--model", MODEL, "--timeout", "900"]
    )
    assert check.exit_code in (0, 1), check.output  # reachable; caveats from a 135M model
    assert "json_schema" in check.output


def test_bench_against_the_real_model(llama_server: str, tmp_path: Path) -> None:
    """``summary-eval bench --articles 1`` for every metric (ours in both reply shapes, the
    peers) on the real server, capped at 3
    summaries of the article (``--summaries 3``) and 256 tokens per peer reply to fit a 2-core
    machine: each metric gets its row, with the server's real token counts; the numbers mean
    nothing at 135M."""
    from typer.testing import CliRunner

    from shared.cli.app import app

    out = tmp_path / "bench.json"
    args = ["bench", "--base-url", llama_server, "--model", MODEL, "--articles", "1"]
    args += ["--summaries", "3", "--max-tokens", "256", "--timeout", "900", "--resamples", "200"]
    args += ["--workdir", str(tmp_path / "work"), "--json", str(out)]
    started = time.monotonic()
    result = CliRunner().invoke(app, args, catch_exceptions=False, env={"COLUMNS": "160"})
    print(f"\nbench on the real model: {time.monotonic() - started:.0f} s\n{result.output}")
    assert result.exit_code in (0, 1), result.output  # 1: a metric scored no row (reasons shown)
    data = json.loads(out.read_text())
    names = ["ours", "ours-two-call", "deepeval", "ragas"]
    assert [m["name"] for m in data["metrics"]] == names
    for metric in data["metrics"]:
        assert metric["error"] is None and metric["version"], metric
        assert metric["rows"] == 3 and metric["scored"] + metric["failed"] == 3, metric
        assert sum(metric["reasons"].values()) == metric["failed"], metric
        usage = metric["usage"]
        assert usage["calls"] > 0 and usage["prompt_tokens"] > 0, metric  # llama-server's usage
        assert metric["dollars"] == 0.0 and metric["wall_s"] > 0
        for score in metric["scores"].values():
            assert score is None or 0.0 <= score <= 1.0
    assert (tmp_path / "work" / "bench-report.html").is_file()
    for name in names:
        assert re.search(rf"^\s*{name}\s+\S+\s+\d/3", result.output, re.M), result.output
    assert "ours against ours-two-call: calls " in result.output  # the shapes side by side


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=900) as response:
        return json.loads(response.read())


@pytest.mark.parametrize("path", ["sentences", "two-call"])
def test_each_path_finds_the_source_prefix_cached_on_the_second_summary(
    llama_server: str, path: str
) -> None:
    """Two summaries of one example source, one after the other, on the sentences path (the
    default) and on the two-call path: the second summary's check begins with the bytes its
    source's earlier calls began with, so llama-server serves that prefix from its cache
    (``cached_tokens`` > 0).

    The server's own count is read twice: from the judge's usage when the judge counts cached
    tokens (``usage["cached_tokens"]``), and from the check of a third summary, never sent
    before, with the judge's system message: only the source's prefix can be cached for it (the
    reply's ``prompt_tokens_details.cached_tokens``)."""
    from shared import prompts as p
    from shared.judge.openai import SYSTEM_PROMPT

    rows = [r for r in _rows() if r["id"].startswith("harwick")][:3]
    assert len(rows) == 3 and len({r["source"] for r in rows}) == 1
    source = rows[0]["source"]
    judge = _judge(llama_server)
    options: dict[str, Any] = {"dimensions": [], "n": 2, "judge_path": path}  # kept short
    first = score_summaries([(source, rows[0]["summary"])], judge=judge, **options)
    counted_before = judge.usage.get("cached_tokens")
    second = score_summaries([(source, rows[1]["summary"])], judge=judge, **options)
    _assert_plumbing([*first, *second], 2)
    assert f"|path:{path}|" in (second[0].signature or "")
    counted_after = judge.usage.get("cached_tokens")
    print(f"\nusage after two summaries: {judge.usage}")
    if counted_before is not None and counted_after is not None:
        assert counted_after > counted_before  # the second summary's calls found a warm prefix
    # a third summary's check, as the judge sends it: the server says how much it had cached
    prompt = (
        p.check_sentences_prompt(source, p.split_sentences(rows[2]["summary"]))
        if path == "sentences"
        else p.check_claims_prompt(source, rows[2]["summary"])
    )
    reply = _post(
        llama_server,
        {
            "model": MODEL,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "max_tokens": 4,
            "cache_prompt": True,
        },
    )
    cached = (reply.get("usage", {}).get("prompt_tokens_details") or {}).get("cached_tokens")
    print(f"probe: {reply.get('usage')} timings {reply.get('timings')}")
    assert cached is not None and cached > 0, reply.get("usage")
    assert cached < reply["usage"]["prompt_tokens"]  # the prefix, not the whole new prompt
