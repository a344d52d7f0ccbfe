"""Validity of the deterministic dimensions against SummEval's human ratings.

Summary-level correlation, the field's convention (see ../shared/data/summeval/README.md): for
each article, Spearman and Kendall over its 16 summaries between a metric and a human rating,
then the mean over articles. Articles where the metric is constant or missing for too many
summaries give no correlation and are left out (the count used is printed).

Besides the five dimension scores it reports their raw inputs (entity density, the unclipped
coherence mean, deterministic redundancy), so a weak score can be told apart from a weak signal.

    .venv/bin/python scripts/validity.py [--data ../shared/data/summeval/dev.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections import defaultdict
from pathlib import Path

from scipy.stats import ConstantInputWarning, kendalltau, spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shared import score_summaries  # noqa: E402

HUMAN = ("coherence", "consistency", "fluency", "relevance")
DETERMINISTIC = ["density", "non_redundancy", "coherence", "conciseness"]


def metric_values(rows: list[dict]) -> dict[str, list[float | None]]:
    results = score_summaries(
        [(r["article"], r["summary"]) for r in rows], judge=None, dimensions=DETERMINISTIC
    )
    out: dict[str, list[float | None]] = defaultdict(list)
    for res in results:
        ev = res.dimension_evidence
        out["density (score)"].append(res.density)
        out["entity density (raw)"].append(ev.density.entity_density)
        out["non_redundancy (det.)"].append(res.non_redundancy)
        out["coherence (score)"].append(res.coherence)
        sims = ev.coherence.similarities
        out["coherence mean (raw)"].append(sum(sims) / len(sims) if sims else None)
        out["conciseness"].append(res.conciseness)
    return out


def summary_level(
    rows: list[dict], values: list[float | None], human: str
) -> tuple[float, float, int]:
    by_article: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row, value in zip(rows, values, strict=True):
        if value is not None and math.isfinite(value):
            by_article[row["article_id"]].append((value, float(row[human])))
    rhos, taus = [], []
    for pairs in by_article.values():
        if len(pairs) < 3:
            continue
        xs, ys = zip(*pairs, strict=True)
        if len(set(xs)) < 2 or len(set(ys)) < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantInputWarning)
            rho = spearmanr(xs, ys).statistic
            tau = kendalltau(xs, ys).statistic
        if math.isfinite(rho) and math.isfinite(tau):
            rhos.append(rho)
            taus.append(tau)
    if not rhos:
        return math.nan, math.nan, 0
    return sum(rhos) / len(rhos), sum(taus) / len(taus), len(rhos)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/summeval/dev.jsonl")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    values = metric_values(rows)
    articles = len({r["article_id"] for r in rows})
    print(f"{len(rows)} summaries, {articles} articles; summary-level Spearman ρ / Kendall τ")
    print("(mean over articles; in brackets: articles with a defined correlation)\n")
    print("| metric | " + " | ".join(HUMAN) + " | None |")
    print("|---|" + "---|" * len(HUMAN) + "---|")
    for name, vals in values.items():
        cells = []
        for human in HUMAN:
            rho, tau, n = summary_level(rows, vals, human)
            cells.append(f"{rho:+.3f} / {tau:+.3f} ({n})")
        missing = sum(v is None for v in vals)
        print(f"| {name} | " + " | ".join(cells) + f" | {missing} |")


if __name__ == "__main__":
    main()
