"""The judged-validity table (docs/VALIDITY.md, "On a real local judge"): the judged metrics of
one or more ``summary-eval bench --json`` files beside the project's offline sub-scores on the
same rows, against SummEval's human ratings.

    python scripts/judged_validity.py ours.json peers.json [--resamples 1000] [--seed 0]

For each judged metric of the bench files (the first file naming a metric gives its scores) and
each rating: the summary-level Spearman (per article, then the mean over articles) with its
bootstrap interval (articles resampled), the articles that gave a value and the rows scored. The
offline sub-scores are computed here, with no judge, on the rows the first metric of the first
file (ours) scored, so they sit beside it on the same rows:

- ``grounding`` and ``coherence``: the shipped dimensions (``score_summaries(judge=None)``);
- ``trigram precision``: of the summary's lower-cased word trigrams, the share found in the
  source (the n-gram baseline of docs/VALIDITY.md's grounding rounds).

Nothing is fitted: every number is a plain correlation of a shipped score. A benchmark that
prints, not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shared import score_summaries  # noqa: E402
from shared.analysis.agreement import agreement  # noqa: E402
from shared.analysis.bench_data import SUMMEVAL_PATH  # noqa: E402

RATINGS = ("consistency", "relevance", "coherence", "fluency")
_WORD = re.compile(r"\w+")


def trigram_precision(source: str, summary: str) -> float | None:
    """The share of the summary's word trigrams (lower-cased) that occur in the source; None
    for a summary of fewer than three words."""

    def grams(text: str) -> list[tuple[str, ...]]:
        words = _WORD.findall(text.lower())
        return [tuple(words[i : i + 3]) for i in range(len(words) - 2)]

    summary_grams = grams(summary)
    if not summary_grams:
        return None
    source_grams = set(grams(source))
    return sum(g in source_grams for g in summary_grams) / len(summary_grams)


def load_bench(paths: Sequence[Path]) -> dict[str, dict[str, float | None]]:
    """Each metric's per-row scores, in the order the files name them (first file wins)."""
    out: dict[str, dict[str, float | None]] = {}
    for path in paths:
        data = json.loads(path.read_text())
        for metric in data["metrics"]:
            out.setdefault(metric["name"], dict(metric.get("scores") or {}))
    return out


def summeval_rows(ids: set[str], path: Path) -> dict[str, dict]:
    rows = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            key = f"{row['article_id']}/{row['summary_id']}"
            if key in ids:
                rows[key] = row
    return rows


def offline_scores(rows: dict[str, dict]) -> dict[str, dict[str, float | None]]:
    ids = sorted(rows)
    results = score_summaries([(rows[i]["article"], rows[i]["summary"]) for i in ids], judge=None)
    out: dict[str, dict[str, float | None]] = {
        "grounding (offline)": {},
        "coherence (offline)": {},
        "trigram precision": {},
    }
    for row_id, result in zip(ids, results, strict=True):
        out["grounding (offline)"][row_id] = result.grounding
        out["coherence (offline)"][row_id] = result.coherence
        out["trigram precision"][row_id] = trigram_precision(
            rows[row_id]["article"], rows[row_id]["summary"]
        )
    return out


def cell(estimate) -> str:  # type: ignore[no-untyped-def]
    if estimate.value is None:
        return "n/a"
    interval = ""
    if estimate.low is not None and estimate.high is not None:
        interval = f" [{estimate.low:+.2f}, {estimate.high:+.2f}]"
    return f"{estimate.value:+.2f}{interval} ({estimate.units})"


def table(
    scores: dict[str, dict[str, float | None]],
    rows: dict[str, dict],
    resamples: int,
    seed: int,
) -> str:
    labels = [
        {"id": i, "_group": r["article_id"], **{k: r.get(k) for k in RATINGS}}
        for i, r in rows.items()
    ]
    lines = [
        "| metric | rows scored | " + " | ".join(RATINGS) + " |",
        "|---|---|" + "---|" * len(RATINGS),
    ]
    for name, by_id in scores.items():
        results = [{"id": i, "score": v} for i, v in by_id.items() if i in rows]
        scored = sum(v is not None for v in by_id.values())
        found = agreement(
            results,
            labels,
            [("score", rating) for rating in RATINGS],
            group_column="_group",
            resamples=resamples,
            seed=seed,
        )
        cells = [cell(pair.levels[0].spearman) for pair in found.pairs]
        lines.append(f"| {name} | {scored}/{len(by_id)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench_json", type=Path, nargs="+", help="summary-eval bench --json files")
    parser.add_argument("--summeval", type=Path, default=SUMMEVAL_PATH)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    judged = load_bench(args.bench_json)
    if not judged:
        raise SystemExit("the bench files name no metric")
    first = next(iter(judged.values()))
    rows = summeval_rows(set().union(*(set(s) for s in judged.values())), args.summeval)
    offline = offline_scores({i: rows[i] for i, v in first.items() if i in rows and v is not None})
    print(
        "Summary-level Spearman (per article, then the mean), 95% bootstrap interval over "
        f"articles ({args.resamples} resamples, seed {args.seed}), articles with a value in "
        "brackets; offline sub-scores on the rows scored by "
        f"{next(iter(judged))}.\n"
    )
    print(table({**judged, **offline}, rows, args.resamples, args.seed))


if __name__ == "__main__":
    main()
