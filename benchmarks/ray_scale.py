"""Throughput of the Ray engine against one process, with a judge of fixed latency.

Scores ROWS summaries over SOURCES sources through the stub judge server (an OpenAI-compatible
server on 127.0.0.1 whose every reply takes DELAY seconds), three ways with the same total
judge budget (calls in flight): locally with ``score_summaries``, and on a local Ray instance
with 1 and 2 actors (``shared.runs.distributed.score_dataset``). Prints rows/s, judge calls per row,
Ray's overhead per row, and a projection of throughput on N nodes under a judge rate limit.

    PYTHONPATH=. python benchmarks/ray_scale.py [--rows 2000 --sources 100 --delay 0.2]

Not a test: the numbers depend on the machine (docs/PERFORMANCE.md records one run).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from pydantic import BaseModel

from shared import OpenAIJudge, score_summaries
from shared.testing import FakeJudge, stub_server


class SlowStub(FakeJudge):
    """Every request takes ``delay`` seconds inside the server, like a remote judge."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def answer_text(self, prompt: str, schema: type[BaseModel]) -> str:
        time.sleep(self.delay)
        return super().answer_text(prompt, schema)


class StubProcess:
    """The stub server in its own process, so the local run does not share its GIL with the
    server (in-process, the server's threads slowed the local engine down by about half)."""

    def __init__(self, delay: float) -> None:
        import multiprocessing as mp

        self._conn, child = mp.Pipe()
        self._proc = mp.get_context("spawn").Process(
            target=_serve, args=(child, delay), daemon=True
        )
        self._proc.start()
        self.url = self._conn.recv()

    def counts(self) -> tuple[int, int]:
        """(requests so far, question-generation requests so far)."""
        self._conn.send("counts")
        return self._conn.recv()

    def close(self) -> None:
        self._conn.send("stop")
        self._proc.join(timeout=10)


def _serve(conn: Any, delay: float) -> None:
    with stub_server(SlowStub(delay)) as url:
        conn.send(str(url))
        while conn.recv() == "counts":
            conn.send((url.count, url.judge.calls["GeneratedQuestions"]))


def make_rows(rows: int, sources: int) -> list[dict[str, Any]]:
    """Synthetic news-like sources of eight sentences, summaries of two to four of them."""
    out = []
    for i in range(rows):
        s = i % sources
        facts = [
            f"Station {s} recorded {s * 7 + k} millimetres of rain in week {k}, "
            f"a change of {k * 3 + s % 5} percent on the year before."
            for k in range(8)
        ]
        picked = facts[(i // sources) % 4 : (i // sources) % 4 + 2 + i % 3]
        own = f"Observer {i} filed this report."  # every summary distinct: no shared calls
        out.append({"id": str(i), "source": " ".join(facts), "summary": " ".join([*picked, own])})
    return out


def run_local(rows: list[dict[str, Any]], url: str, budget: int, options: dict) -> float:
    start = time.perf_counter()
    results = score_summaries(
        [(r["source"], r["summary"]) for r in rows],
        judge=OpenAIJudge("fake-judge", base_url=url),
        concurrency=budget,
        cache=False,
        **options,
    )
    wall = time.perf_counter() - start
    assert all(ev.error is None for ev in results), "a row failed"
    return wall


def run_ray(rows: list[dict[str, Any]], url: str, budget: int, actors: int, options: dict) -> float:
    import ray

    from shared.runs.distributed import OpenAIJudgeConfig, score_dataset

    ds = ray.data.from_items(rows).materialize()
    start = time.perf_counter()
    out = score_dataset(
        ds,
        judge=OpenAIJudgeConfig("fake-judge", base_url=url),
        id_column="id",
        actors=actors,
        concurrency=budget,
        cache=False,
        actor_cpus=0.5,
        groups=max(actors, len(rows) // 250),
        **options,
    ).take_all()
    wall = time.perf_counter() - start
    assert len({r["id"] for r in out}) == len(rows), "rows lost or doubled"
    assert all(r["status"] == "ok" for r in out), "a row failed"
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--sources", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per judge reply")
    parser.add_argument("--budget", type=int, default=32, help="judge calls in flight, in all")
    parser.add_argument(
        "--dimensions", default="", help="text dimensions (default none: judge-bound)"
    )
    parser.add_argument("--rate-limit", type=float, default=10_000, help="judge RPM, projection")
    args = parser.parse_args()
    options = {"dimensions": tuple(d for d in args.dimensions.split(",") if d)}
    rows = make_rows(args.rows, args.sources)
    report: dict[str, Any] = {"rows": args.rows, "sources": args.sources, "delay": args.delay}
    report["budget"] = args.budget
    report["cpus"] = os.cpu_count()
    report["load_avg_at_start"] = round(os.getloadavg()[0], 1)  # other work on the machine

    stub = StubProcess(args.delay)
    url = stub.url
    try:
        wall = run_local(rows, url, args.budget, options)
        calls, questions = stub.counts()
        report["local"] = {"wall_s": round(wall, 1), "rows_per_s": round(args.rows / wall, 2)}
        report["calls_per_row"] = round(calls / args.rows, 3)
        report["question_calls"] = questions

        import ray

        t0 = time.perf_counter()
        ray.init(
            num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
        )
        ray.data.DataContext.get_current().enable_progress_bars = False
        report["ray_init_s"] = round(time.perf_counter() - t0, 1)
        small = rows[: args.sources]  # one summary per source: startup, shuffle, model load
        wall = run_ray(small, url, args.budget, 1, options)
        report["ray_1_small"] = {"rows": len(small), "wall_s": round(wall, 1)}
        for actors in (1, 2):
            before, q_before = stub.counts()
            wall = run_ray(rows, url, args.budget, actors, options)
            after, q_after = stub.counts()
            report[f"ray_{actors}"] = {
                "wall_s": round(wall, 1),
                "rows_per_s": round(args.rows / wall, 2),
                "calls": after - before,
                "question_calls": q_after - q_before,
            }
        ray.shutdown()
    finally:
        stub.close()

    report["load_avg_at_end"] = round(os.getloadavg()[0], 1)
    local, one = report["local"]["wall_s"], report["ray_1"]["wall_s"]
    report["ray_overhead_ms_per_row"] = round(1000 * (one - local) / args.rows, 1)
    # marginal cost: what each further row costs once the job is running (fixed cost removed)
    small_wall, small_rows = report["ray_1_small"]["wall_s"], report["ray_1_small"]["rows"]
    marginal = (args.rows - small_rows) / max(1e-9, one - small_wall)
    report["ray_1_marginal_rows_per_s"] = round(marginal, 2)
    report["ray_marginal_overhead_ms_per_row"] = round(1000 * (1 / marginal - local / args.rows), 1)
    # Projection: an actor with budget c keeps c calls in flight, so it scores about
    # c / (delay * calls_per_row) rows/s when the judge is the bottleneck; measured rate per
    # actor is what the cluster multiplies, capped by the judge's rate limit.
    per_actor = report["ray_1_marginal_rows_per_s"]
    cap = args.rate_limit / 60 / report["calls_per_row"]
    report["projection"] = {
        "per_actor_rows_per_s_at_budget": per_actor,
        "rate_limit_rpm": args.rate_limit,
        "rate_limit_cap_rows_per_s": round(cap, 1),
        "nodes": {
            str(n): round(min(n * per_actor, cap), 1) for n in (1, 2, 4, 8, 16, 32)
        },  # one actor per node, each with the measured budget
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
