"""Speed of ``shared.compare`` on a large paired comparison (a benchmark, not a test).

10,000 paired rows x 8 sub-scores, 1,000 paired bootstrap resamples and 10,000 approximate
randomization trials (the defaults), synthetic scores from a fixed seed, every 50th row left
unscored on one side so the per-sub-score bookkeeping is exercised. Reports the wall time of
``compare`` (best of ``--repeats``) and the process's peak resident memory. Target: < 3 s.

    .venv/bin/python benchmarks/compare_speed.py [--rows 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared import compare

KEYS = [
    "score",
    "alignment",
    "coverage",
    "density",
    "specificity",
    "non_redundancy",
    "coherence",
    "conciseness",
]


def make_rows(count: int, seed: int = 7) -> tuple[list[dict], list[dict]]:
    rng = np.random.default_rng(seed)
    base = rng.random((count, len(KEYS)))
    shift = rng.normal(0.01, 0.05, size=base.shape)
    other = np.clip(base + shift, 0.0, 1.0)
    rows_a, rows_b = [], []
    for i in range(count):
        a = {"id": str(i), **{k: float(v) for k, v in zip(KEYS, base[i], strict=True)}}
        b = {"id": str(i), **{k: float(v) for k, v in zip(KEYS, other[i], strict=True)}}
        if i % 50 == 0:
            b["score"] = None  # unscored on one side
        rows_a.append(a)
        rows_b.append(b)
    return rows_a, rows_b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows_a, rows_b = make_rows(args.rows)
    walls = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = compare(rows_a, rows_b, keys=KEYS)
        walls.append(time.perf_counter() - start)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.rows} rows x {len(KEYS)} sub-scores, {result.resamples} resamples, "
        f"{result.trials} trials"
    )
    print("walls (s): " + ", ".join(f"{w:.2f}" for w in walls) + f"; best {min(walls):.2f}")
    print(f"peak RSS: {peak_mb:.0f} MB")
    for line in result.verdicts():
        print("  " + line)


if __name__ == "__main__":
    main()
