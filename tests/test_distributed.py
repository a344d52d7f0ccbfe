"""Ray Data engine (:mod:`shared.runs.distributed`) on a local Ray instance with the stub judge
server.

Marked ``ray``; skipped when the ``ray`` extra is not installed. Ray runs with two CPUs, no
dashboard, every address on 127.0.0.1. Nothing waits on time: the actor-kill test kills the
actor from inside its own judge call once it has made a set number of calls.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from shared import OpenAIJudge, score_summaries  # noqa: E402
from shared.core.usage import USAGE_KEYS  # noqa: E402
from shared.runs.distributed import OpenAIJudgeConfig, score_dataset  # noqa: E402
from shared.runs.results import evaluation_row, score_keys  # noqa: E402
from shared.testing import stub_server  # noqa: E402

pytestmark = pytest.mark.ray

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "summaries.jsonl"
ROWS = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
SOURCES = {row["source"] for row in ROWS}
RESULT_COLUMNS = ["status", *score_keys(), "reason", "error", "signature", "input_hash"]
FAST = {"dimensions": ("density", "conciseness")}  # no spaCy parse beyond these, no MiniLM


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.verbose_stats_logs = False
    yield ray
    ray.shutdown()


def _run(ds: Any, url: str, **kwargs: Any) -> dict[str, dict[str, Any]]:
    kwargs.setdefault("actors", 2)
    kwargs.setdefault("concurrency", 8)
    out = score_dataset(
        ds, judge=OpenAIJudgeConfig("fake-judge", base_url=url), id_column="id", **kwargs
    )
    rows = out.take_all()
    by_id = {row["id"]: row for row in rows}
    assert len(by_id) == len(rows), "a row came out twice"
    return by_id


def test_results_equal_score_summaries_row_by_row(local_ray) -> None:
    with stub_server() as url:
        got = _run(ray.data.from_items(ROWS), url, groups=2)
        ray_calls = url.judge.calls["GeneratedQuestions"]
    assert ray_calls == len(SOURCES), "question generation must be one call per source"
    with stub_server() as url:
        local = score_summaries(
            [(r["source"], r["summary"]) for r in ROWS],
            judge=OpenAIJudge("fake-judge", base_url=url),
        )
    assert set(got) == {r["id"] for r in ROWS}
    for row, ev in zip(ROWS, local, strict=True):
        want = evaluation_row(
            row_id=row["id"], position=0, input_hash="", summary=row["summary"], ev=ev
        )
        mine = got[row["id"]]
        assert mine["status"] == "ok", mine["error"]
        for column in RESULT_COLUMNS:
            if column == "input_hash":
                continue
            assert mine[column] == want[column], (row["id"], column)
        assert json.loads(mine["evidence"]) == want["evidence"], row["id"]
        assert mine["source"] == row["source"] and mine["summary"] == row["summary"]


def test_question_generation_once_per_source_with_many_groups(local_ray) -> None:
    many = [{**r, "id": f"{r['id']}-{k}"} for k in range(3) for r in ROWS]
    with stub_server() as url:
        got = _run(ray.data.from_items(many).repartition(4), url, groups=5, **FAST)
        calls = url.judge.calls["GeneratedQuestions"]
    assert len(got) == len(many)
    assert all(row["status"] == "ok" for row in got.values())
    assert calls == len(SOURCES)


def test_bad_row_becomes_error_row_and_the_job_goes_on(local_ray) -> None:
    rows = [
        *ROWS,
        {"id": "empty", "source": ROWS[0]["source"], "summary": "   "},
        {"id": "nosource", "source": None, "summary": "A summary."},
        {"id": "notext", "source": ROWS[0]["source"], "summary": 42},
        {"id": 7, "source": ROWS[0]["source"], "summary": 3.5},
    ]
    # one row per block: a block whose summary column is int64 or float64 must still join the
    # string blocks at the shuffle (as it does when Ray splits a dataset over many CPUs)
    ds = ray.data.from_items(rows, override_num_blocks=len(rows))
    with stub_server() as url:
        got = _run(ds, url, groups=2, **FAST)
    assert got["nosource"]["status"] == "bad_input"
    assert "source must be a string" in got["nosource"]["error"]
    assert got["notext"]["status"] == "bad_input" and got["notext"]["score"] is None
    assert got["notext"]["error"] == "summary must be a string, got int"
    assert got["7"]["status"] == "bad_input"
    assert got["7"]["error"] == "summary must be a string, got float"
    # an empty summary follows the one rule (README "Bad input"): scored 0.0, no judge call
    assert got["empty"]["status"] == "ok" and got["empty"]["score"] == 0.0
    assert all(got[r["id"]]["status"] == "ok" for r in ROWS)


def test_a_row_with_bad_questions_is_a_bad_row_and_the_job_goes_on(local_ray) -> None:
    # the reader takes any list of questions; the core's check refuses importance 9 and a blank
    # question: that row is bad input, its neighbours are scored
    rows = [
        {**ROWS[0], "id": "good", "questions": None},
        {**ROWS[1], "id": "loud", "questions": json.dumps([{"question": "Q?", "importance": 9}])},
        {**ROWS[2], "id": "blank", "questions": json.dumps([{"question": "  "}])},
    ]
    with stub_server() as url:
        got = _run(ray.data.from_items(rows), url, groups=1, questions_column="questions", **FAST)
    assert got["good"]["status"] == "ok"
    for row_id in ("loud", "blank"):
        assert got[row_id]["status"] == "bad_input", got[row_id]
        assert "question" in got[row_id]["error"]


class KillOnce:
    """A judge factory whose judge SIGKILLs its own actor process on its first summary-side call
    (the two-call path's review of the summary alone, asked after the group's questions were
    answered by the stub), once per job; the marker file, created exclusively, records which pid
    died."""

    def __init__(self, url: str, marker: str) -> None:
        self.url, self.marker = str.__str__(url), marker  # a plain str: no stub state travels

    def __call__(self) -> Any:
        inner = OpenAIJudge("fake-judge", base_url=self.url)
        marker = self.marker

        class Killer:
            model_id = inner.model_id

            async def generate(self, prompt: str, schema: Any) -> Any:
                if schema.__name__ in ("SummaryReview", "PointedReview"):
                    try:
                        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    except FileExistsError:
                        pass
                    else:
                        os.write(fd, str(os.getpid()).encode())
                        os.close(fd)
                        os.kill(os.getpid(), signal.SIGKILL)
                return await inner.generate(prompt, schema)

        return Killer()


def test_actor_killed_mid_job_still_yields_every_row_once(local_ray, tmp_path: Path) -> None:
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(__import__(__name__))
    marker = tmp_path / "killed"
    many = [{**r, "id": f"{r['id']}-{k}"} for k in range(2) for r in ROWS]
    with stub_server() as url:
        out = score_dataset(
            ray.data.from_items(many),
            judge=KillOnce(url, str(marker)),
            id_column="id",
            actors=1,
            concurrency=4,
            groups=2,
            actor_cpus=0.5,
            **FAST,
        )
        rows = out.take_all()
        questions = url.judge.calls["GeneratedQuestions"]
    assert marker.exists(), "the actor was never killed"
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    ids = [row["id"] for row in rows]
    assert sorted(ids) == sorted(r["id"] for r in many), "every row exactly once"
    assert all(row["status"] == "ok" for row in rows)
    # the dead actor's questions were answered, then asked again by its replacement
    assert questions > len(SOURCES)


def test_a_judge_instance_is_refused(local_ray) -> None:
    with pytest.raises(TypeError, match="picklable factory"):
        score_dataset(ray.data.from_items(ROWS), judge=OpenAIJudge("m", base_url="http://x/v1"))


def test_cli_ray_engine_parquet_bad_rows_exit_1_and_resume(local_ray, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from shared.cli.app import app

    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS[:5]))
    bad = [*ROWS[5:], {"id": "no-summary", "source": ROWS[0]["source"]}]
    (inputs / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bad) + "{not json\n")
    out = tmp_path / "res.parquet"
    cache = tmp_path / "cache.sqlite3"

    def run() -> tuple[int, str]:
        args = ["score", str(inputs), "-o", str(out), "--no-report", "--engine", "ray"]
        args += ["--base-url", url, "--model", "fake-judge", "--cache", str(cache)]
        args += ["--dimensions", "density,conciseness", "--concurrency", "4"]
        result = CliRunner().invoke(app, args, catch_exceptions=False)
        return result.exit_code, " ".join(result.output.split())

    with stub_server() as url:
        code, text = run()
        assert code == 1, text
        first_calls = url.count
        import pyarrow.parquet as pq

        rows = pq.read_table(out).to_pylist()
        assert [r["id"] for r in rows] == [r["id"] for r in ROWS] + ["no-summary", "10"]
        by_id = {r["id"]: r for r in rows}
        assert by_id["no-summary"]["status"] == "bad_input"
        assert "missing field 'summary'" in by_id["no-summary"]["error"]
        assert by_id["10"]["status"] == "bad_input" and "not valid JSON" in by_id["10"]["error"]
        assert all(by_id[r["id"]]["status"] == "ok" for r in ROWS)
        code, text = run()
        assert code == 1, text
        assert "Resuming: 8 of 10 rows already done" in text
        assert url.count == first_calls  # nothing scored twice
    assert pq.read_table(out).to_pylist() == rows


def test_cli_ray_engine_passes_every_core_option_like_local(local_ray, tmp_path: Path) -> None:
    """Non-default core flags (samples, n, beta, combine, dimension settings, timeout) give the
    same results file on both engines: every option reaches the Ray actors as it reaches the
    local scorer, and samples > 1 writes the spread columns there too."""
    from typer.testing import CliRunner

    from shared.cli.app import app
    from shared.runs.results import read_results, spread_keys

    inputs = tmp_path / "in.jsonl"
    inputs.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:4]))
    flags = ["--samples", "2", "--n", "4", "--beta", "2", "--combine", "min"]
    flags += ["--dimensions", "density,conciseness", "--density-target", "0.2"]
    flags += ["--density-tolerance", "0.1", "--timeout", "30", "--no-cache", "--no-report"]

    def run(url: str, engine: str) -> list[dict[str, Any]]:
        out = tmp_path / f"{engine}.jsonl"
        args = ["score", str(inputs), "-o", str(out), "--engine", engine, *flags]
        args += ["--base-url", url, "--model", "fake-judge", "--concurrency", "4"]
        result = CliRunner().invoke(app, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return read_results(out)

    with stub_server() as url:
        local = run(url, "local")
    with stub_server() as url:
        on_ray = run(url, "ray")
    assert [r["id"] for r in on_ray] == [r["id"] for r in local]
    # A source's shared call is billed to the row that asked first, which depends on scheduling
    # (either engine): the bill is compared over the whole run, the rest row by row.
    shared_keys = ("usage", "cost")
    for key in USAGE_KEYS:
        assert sum(r["evidence"]["usage"][key] for r in on_ray) == sum(
            r["evidence"]["usage"][key] for r in local
        ), key
    assert sum(r["evidence"]["usage"]["calls"] for r in local) > 0
    for mine, want in zip(on_ray, local, strict=True):
        assert "|samples:2" in want["signature"]
        assert any(want[k] is not None for k in spread_keys())
        for column in want:
            if column == "evidence":  # the run's own record differs: another server (URL)
                run_keys = ("settings", "run", *shared_keys)
                mine_ev = {k: v for k, v in mine[column].items() if k not in run_keys}
                want_ev = {k: v for k, v in want[column].items() if k not in run_keys}
                assert mine_ev == want_ev, (want["id"], column)
                continue
            assert mine.get(column) == want[column], (want["id"], column)


def test_cli_ray_engine_fits_the_context_budget_to_the_servers_window(
    local_ray, tmp_path: Path
) -> None:
    """As on the local engine (tests/test_cli.py): without --context-budget the actors' core
    fits the budget to a server that publishes its window; a given budget is kept."""
    from typer.testing import CliRunner

    from shared.cli.app import app
    from shared.runs.results import read_results

    text = " ".join(
        f"In year {1900 + i} the council of Harwick approved budget line {i} for road works."
        for i in range(400)
    )  # about 6,000 estimated tokens: within the default budget, not within 4,096
    inputs = tmp_path / "in.jsonl"
    row = {"id": "r1", "source": text, "summary": "The council approved budget lines."}
    inputs.write_text(json.dumps(row) + "\n")

    def run(url: str, name: str, *flags: str) -> dict[str, Any]:
        out = tmp_path / f"{name}.jsonl"
        args = ["score", str(inputs), "-o", str(out), "--engine", "ray", "--no-cache"]
        args += ["--no-report", "--dimensions", "density", "--base-url", url]
        args += ["--model", "fake-judge", "--concurrency", "4", *flags]
        result = CliRunner().invoke(app, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return read_results(out)[0]

    with stub_server(context_window=4_096) as url:
        fitted = run(url, "fitted")
        given = run(url, "given", "--context-budget", "3000")
    assert "|budget:2048|" in fitted["signature"]
    assert "|budget:3000|" in given["signature"]


@dataclass(frozen=True)
class _RecordingJudge:
    """The judge of ``config`` on each actor, which appends after every answered call its
    per-call limit and whether that limit follows the measured speed to ``log`` (the actors are
    other processes: a file is how they tell the test)."""

    config: OpenAIJudgeConfig
    log: str

    def __call__(self) -> Any:
        judge = self.config()
        send, log = judge._request, self.log

        async def recorded(*args: Any, **kwargs: Any) -> str:
            reply = await send(*args, **kwargs)
            with open(log, "a") as f:
                f.write(f"{os.getpid()} {judge.timeout} {judge.fit_timeout}\n")
            return reply

        judge._request = recorded
        return judge


def test_the_actors_fit_the_per_call_limit_to_a_slow_server_as_the_cli_does(
    local_ray, tmp_path: Path
) -> None:
    """A server that reports 2 tokens/s: the longest reply the run's schemas allow cannot come
    within the default 120 s, so each actor's judge, given no timeout, raises its limit and
    follows the measured speed (the one afit_run, as in
    tests/test_judge_limits.py::test_the_library_fits_the_per_call_limit_as_the_cli_does); a
    timeout the run gave is kept."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the factory travels whole

    def limits(url: str, name: str, **settings: Any) -> list[tuple[float, bool]]:
        log = tmp_path / f"{name}.log"
        config = OpenAIJudgeConfig("fake-judge", base_url=url, settings=settings)
        out = score_dataset(
            ray.data.from_items(ROWS[:4]),
            judge=_RecordingJudge(config, str(log)),
            id_column="id",
            actors=2,
            concurrency=4,
            **FAST,
        )
        rows = out.take_all()
        assert len(rows) == 4 and all(row["status"] == "ok" for row in rows), rows
        seen = [line.split() for line in log.read_text().splitlines()]
        assert seen, "no call answered"
        return [(float(limit), follows == "True") for _, limit, follows in seen]

    with stub_server(tokens_per_s=2.0) as url:
        fitted = limits(url, "fitted")
        kept = limits(url, "kept", timeout=30)
    assert all(limit > 120 and follows for limit, follows in fitted), fitted
    assert all(limit == 30 and not follows for limit, follows in kept), kept
