"""Ours on a real local judge, two code trees side by side in one run: per-summary wall, the
server's own prompt and generation timings, and the dependent rounds of one summary.

    .venv/bin/python benchmarks/local_judge.py --base main~1 \\
        --server "$SUMMARY_EVAL_LLAMA_SERVER" --gguf "$SUMMARY_EVAL_QWEN_GGUF"

For each tree (``--base REF``, checked out into a temporary git worktree, then this checkout)
the benchmark starts a fresh ``llama-server`` with the same flags (``--server-args``; cold slots
for both), then, in a subprocess importing that tree's ``shared``:

1. scores one summary alone and records when each judge call started and ended: its
   dependent rounds (the longest chain of calls each starting after the previous ended);
2. scores ``--summaries`` summaries of ``--articles`` SummEval development articles (the
   same rows for both trees) with every default and a fresh judge cache: the wall per summary,
   the calls and the tokens the judge reported.

The server's own counters (``/metrics``: prompt tokens processed and their seconds, tokens
generated and theirs) are read before and after step 2. Nothing is timed in a test; the
numbers go to docs/PERFORMANCE.md with this command.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL = "qwen2.5-coder-1.5b-instruct"

RUNNER = r"""
import asyncio, json, sys, time
from shared import OpenAIJudge, score_summaries

spec = json.loads(sys.argv[1])
calls = []
original = OpenAIJudge.generate

async def timed(self, *args, **kwargs):
    start = time.monotonic()
    try:
        return await original(self, *args, **kwargs)
    finally:
        calls.append((start, time.monotonic()))

OpenAIJudge.generate = timed

def judge():
    return OpenAIJudge(spec["model"], base_url=spec["url"], timeout=3600, max_retries=2)

def rounds():
    ordered = sorted(calls)
    depth = []
    for i, (start, _) in enumerate(ordered):
        before = [depth[j] for j in range(i) if ordered[j][1] <= start + 1e-3]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)

one = spec["one"]
single = judge()
score_summaries([(one["source"], one["summary"])], judge=single, cache=spec["cache"] + ".one")
out = {"rounds": rounds(), "one_calls": len(calls)}
print("one summary alone: rounds", out["rounds"], file=sys.stderr, flush=True)
calls.clear()
run = judge()
started = time.monotonic()
results = score_summaries([(r["source"], r["summary"]) for r in spec["rows"]], judge=run,
                          cache=spec["cache"])
out["wall"] = time.monotonic() - started
out["usage"] = dict(run.usage) if hasattr(run, "usage") else {}
out["calls"] = len(calls)
out["scores"] = [r.score for r in results]
out["errors"] = [r.error for r in results if not r.scored]
print(json.dumps(out))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def _metrics(root: str) -> dict[str, float]:
    wanted = {
        "llamacpp:prompt_tokens_total": "prompt_tokens",
        "llamacpp:prompt_seconds_total": "prompt_seconds",
        "llamacpp:tokens_predicted_total": "predicted_tokens",
        "llamacpp:tokens_predicted_seconds_total": "predicted_seconds",
    }
    out = {}
    for line in _get(f"{root}/metrics").splitlines():
        name, _, value = line.partition(" ")
        if name in wanted:
            out[wanted[name]] = float(value)
    return out


class Server:
    def __init__(self, binary: str, gguf: str, args: list[str], log: Path) -> None:
        self.port = _free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        command = [binary, "-m", gguf, "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--alias", MODEL, "--metrics", *args]
        self.log = log.open("wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)

    def __enter__(self) -> Server:
        deadline = time.monotonic() + 600
        while True:
            try:
                if json.loads(_get(f"{self.root}/health")).get("status") == "ok":
                    return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"llama-server did not start (see {self.log.name})")
            time.sleep(0.5)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


def _rows(path: Path, articles: int, summaries: int) -> tuple[list[dict], dict]:
    by_article: dict[str, list[dict]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        by_article.setdefault(row["article_id"], []).append(row)
    ids = list(by_article)
    rows = [
        {"source": r["article"], "summary": r["summary"], "id": f"{a}/{r['summary_id']}"}
        for a in ids[:articles]
        for r in by_article[a][:summaries]
    ]
    spare = by_article[ids[articles]][0]
    return rows, {"source": spare["article"], "summary": spare["summary"]}


def _data_file() -> Path:
    for candidate in (
        REPO / "shared" / "analysis" / "data" / "summeval" / "dev.jsonl",
        REPO / "examples" / "summeval" / "dev.jsonl",
    ):
        if candidate.exists():
            return candidate
    raise SystemExit("no SummEval development sample found")


def _run_tree(tree: Path, label: str, args: argparse.Namespace, spec: dict, work: Path) -> dict:
    log = work / f"server-{label}.log"
    with Server(args.server, args.gguf, shlex.split(args.server_args), log) as server:
        spec = {**spec, "url": f"{server.root}/v1", "cache": str(work / f"cache-{label}.sqlite3")}
        before = _metrics(server.root)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", RUNNER, json.dumps(spec)],
            env=env,
            cwd=tree,
            capture_output=True,
            text=True,
        )
        total = time.monotonic() - started
        after = _metrics(server.root)
    if done.returncode:
        raise SystemExit(f"{label} failed:\n{done.stderr[-4000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["server"] = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    out["process_wall"] = total
    return out


def _line(label: str, n: int, r: dict) -> str:
    s, u = r["server"], r["usage"]
    prompt_rate = s["prompt_tokens"] / s["prompt_seconds"] if s.get("prompt_seconds") else 0.0
    gen_rate = s["predicted_tokens"] / s["predicted_seconds"] if s.get("predicted_seconds") else 0
    return (
        f"| {label} | {n - len(r['errors'])}/{n} | {r['wall']:.0f} | {r['wall'] / n:.1f} | "
        f"{r['calls']} | {r['rounds']} | {u.get('prompt_tokens', 0):,} | "
        f"{u.get('cached_tokens', 0):,} | {u.get('completion_tokens', 0):,} | "
        f"{s.get('prompt_tokens', 0):,.0f} | {prompt_rate:.1f} | "
        f"{s.get('predicted_tokens', 0):,.0f} | {gen_rate:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the git ref to compare against")
    parser.add_argument("--server", default=os.environ.get("SUMMARY_EVAL_LLAMA_SERVER"))
    parser.add_argument("--gguf", default=os.environ.get("SUMMARY_EVAL_QWEN_GGUF"))
    parser.add_argument("--server-args", default="-t 2 -c 16384 --parallel 2")
    parser.add_argument("--articles", type=int, default=1)
    parser.add_argument("--summaries", type=int, default=6)
    parser.add_argument("--only", choices=["base", "this"], help="run one tree only")
    args = parser.parse_args()
    if not (args.server and args.gguf):
        raise SystemExit("pass --server and --gguf (scripts/real_model_setup.sh --qwen)")
    rows, one = _rows(_data_file(), args.articles, args.summaries)
    spec = {"model": MODEL, "rows": rows, "one": one}
    work = Path(tempfile.mkdtemp(prefix="local-judge-"))
    results = {}
    base_tree = work / "base"
    if args.only != "this":
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(base_tree), args.base],
            check=True,
            capture_output=True,
        )
    try:
        trees = [("base", base_tree), ("this", REPO)]
        for label, tree in trees:
            if args.only and args.only != label:
                continue
            print(f"== {label}: {tree}", file=sys.stderr, flush=True)
            results[label] = _run_tree(tree, label, args, spec, work)
    finally:
        if base_tree.exists():
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(base_tree)]
            )
    n = len(rows)
    load = os.getloadavg()
    print(
        f"\n{n} summaries of {args.articles} article(s); server: {args.server_args}; "
        f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; work files {work}"
    )
    print(
        "| tree | scored | wall s | wall s / summary | calls | rounds (one summary) | prompt tok "
        "| cached tok | completion tok | server prompt tok | prompt tok/s | server generated tok "
        "| gen tok/s |"
    )
    print("|" + "---|" * 13)
    for label, r in results.items():
        print(_line(f"{label} ({args.base})" if label == "base" else label, n, r))
    if len(results) == 2:
        ratio = results["this"]["wall"] / results["base"]["wall"]
        print(f"\nwall per summary, this / base: {ratio:.2f}")
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
