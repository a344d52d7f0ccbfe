"""Time of one summary that repeats two sentences n times (no judge, default dimensions): the
cost must grow linearly with the text, so the time ratio between two lengths should be close to
their length ratio (it was quadratic: a 110 KB summary did not finish in 300 s).

    .venv/bin/python benchmarks/repeated_summary.py [--sizes 1000 5000]

Prints, per size, the summary's length in bytes and the seconds of ``score_summary`` (models
loaded beforehand, untimed), then the time ratio of the largest to the smallest size against
their length ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (
    "The council approved the new budget for the city parks. Residents welcomed the plan. "
    "Work starts in May."
)
SENTENCES = ("The council approved the new budget for the city parks.", "Residents welcomed it.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from shared import score_summary

    score_summary(SOURCE, "Warm up. The models load here.", judge=None)
    timings = []
    for n in sorted(args.sizes):
        summary = " ".join(SENTENCES[i % 2] for i in range(n))
        start = time.perf_counter()
        score_summary(SOURCE, summary, judge=None)
        seconds = time.perf_counter() - start
        timings.append((n, len(summary.encode()), seconds))
        print(f"{n} sentences, {len(summary.encode())} bytes: {seconds:.2f} s", flush=True)
    (_, b0, t0), (_, b1, t1) = timings[0], timings[-1]
    print(f"time ratio {t1 / t0:.2f} for a length ratio of {b1 / b0:.2f} (linear: about equal)")


if __name__ == "__main__":
    main()
