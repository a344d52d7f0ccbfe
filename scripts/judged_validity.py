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
  source (the n-gram baseline of docs/VALIDITY.md's grounding rounds: ``grounding_fit.py``'s
  ``ngram_precision``).

With ``--replies`` (the bench's ``ours-replies.sqlite3``), ``--model`` and ``--base-url`` (the
bench's own), ours' rows are scored again through the bench's recording, so every judge reply is
replayed (the calls asked anew, if any, are counted and printed), and ours' judged sub-scores
(alignment, coverage) join the table; on the sentences path also a parameter-free combination
of evidence per sentence (:func:`sentence_product`: the judge's verdict times grounding's
support of the same sentence). ``--combine`` then cross-validates, leaving one article
out at a time, the one explainable mix this script tries: ``(1 - w) * ours + w * offline`` for
each offline sub-score, ``w`` picked from 0, 0.1, ..., 1 on the other articles (the mean of
their consistency and relevance Spearman), the held-out article scored with it.

Every other number is a plain correlation of a shipped score. A benchmark that prints, not a
test.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from grounding_fit import ngram_precision  # noqa: E402
from validity import summary_level  # noqa: E402

from shared import SummaryEvaluation, score_summaries  # noqa: E402
from shared.analysis.agreement import agreement  # noqa: E402
from shared.analysis.bench_data import SUMMEVAL_PATH, Usage  # noqa: E402
from shared.core.scoring import f_beta  # noqa: E402

RATINGS = ("consistency", "relevance", "coherence", "fluency")


def trigram_precision(source: str, summary: str) -> float | None:
    """The share of the summary's word trigrams (lower-cased) that occur in the source; None
    for a summary of fewer than three words."""
    return ngram_precision(source, summary, 3)


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


def replayed_results(
    rows: dict[str, dict], replies: Path, model: str, base_url: str, judge_path: str
) -> tuple[dict[str, SummaryEvaluation], Usage]:
    """Ours' full results for ``rows``, one article at a time as the bench scores them, every
    judge call answered from the bench's recording where it holds the request."""
    from shared.analysis.bench_data import JudgeConfig, UsageCounter
    from shared.analysis.bench_recording import Recording
    from shared.judge.openai import OpenAIJudge

    counter = UsageCounter(recording=Recording(replies))
    judge = JudgeConfig(model=model, base_url=base_url, timeout=3600)
    by_article: dict[str, list[str]] = {}
    for row_id in rows:
        by_article.setdefault(rows[row_id]["article_id"], []).append(row_id)
    out: dict[str, SummaryEvaluation] = {}
    for ids in by_article.values():
        inner = OpenAIJudge(model, client=judge.client(counter), timeout=judge.timeout)
        pairs = [(rows[i]["article"], rows[i]["summary"]) for i in ids]
        results = score_summaries(pairs, judge=inner, cache=True, judge_path=judge_path)
        out.update(zip(ids, results, strict=True))
    return out, counter.usage


def sentence_product(result: SummaryEvaluation) -> tuple[float | None, float | None]:
    """The sentences path's verdicts weighed by grounding's support, sentence by sentence: each
    sentence counts ``verdict * support`` (1 or 0 from the judge, grounding's 0-1 support of the
    same sentence), alignment is their mean, the score its F1 with the judged coverage. Nothing
    is fitted. (None, None) where the judge's sentences and grounding's differ in number."""
    grounding = result.dimension_evidence.grounding
    support = [s.support for s in grounding.sentences] if grounding else []
    if not result.claims or len(support) != len(result.claims):
        return None, None
    # the pipeline's own rule for alignment: a sentence counts when its verdict is "supported"
    per = [(c.verdict == "supported") * s for c, s in zip(result.claims, support, strict=True)]
    alignment = sum(per) / len(per)
    if result.coverage is None:
        return alignment, None
    return alignment, f_beta(alignment, result.coverage)


def cross_validated_mix(
    ours: dict[str, float | None], offline: dict[str, float | None], rows: dict[str, dict]
) -> tuple[dict[str, float], list[float]]:
    """Leave one article out: ``w`` fitted on the others (mean of their consistency and
    relevance summary-level Spearman), the held-out article's Spearman per rating with it."""
    grid = [i / 10 for i in range(11)]
    ids = [i for i in ours if i in rows]
    ordered = [rows[i] for i in ids]
    articles = sorted({r["article_id"] for r in ordered})

    def mixed(w: float) -> list[float | None]:
        return [
            None
            if ours[i] is None or offline.get(i) is None
            else (1 - w) * ours[i] + w * offline[i]  # type: ignore[operator]
            for i in ids
        ]

    def rho(values: list[float | None], rating: str, keep: set[str]) -> float | None:
        value, _, units = summary_level(ordered, values, rating, keep)
        return value if units else None

    held: dict[str, list[float]] = {r: [] for r in RATINGS}
    weights = []
    for out in articles:
        others = set(articles) - {out}

        def fit(w: float, others: set[str] = others) -> float:
            values = mixed(w)
            found = [rho(values, rating, others) for rating in ("consistency", "relevance")]
            defined = [f for f in found if f is not None]
            return sum(defined) / len(defined) if defined else float("-inf")

        w = max(grid, key=fit)
        weights.append(w)
        values = mixed(w)
        for rating in RATINGS:
            found = rho(values, rating, {out})
            if found is not None:
                held[rating].append(found)
    return {r: sum(v) / len(v) for r, v in held.items() if v}, weights


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
    parser.add_argument("--replies", type=Path, help="the bench's ours-replies.sqlite3")
    parser.add_argument("--model", help="the bench's --model (with --replies)")
    parser.add_argument("--base-url", help="the bench's --base-url (with --replies)")
    parser.add_argument("--judge-path", default="sentences", help="ours' path (with --replies)")
    parser.add_argument("--combine", action="store_true", help="cross-validate ours + offline")
    args = parser.parse_args(argv)
    if args.replies and not (args.model and args.base_url):
        parser.error("--replies needs the bench's --model and --base-url")
    judged = load_bench(args.bench_json)
    if not judged:
        raise SystemExit("the bench files name no metric")
    first = next(iter(judged.values()))
    rows = summeval_rows(set().union(*(set(s) for s in judged.values())), args.summeval)
    kept = {i: rows[i] for i, v in first.items() if i in rows and v is not None}
    offline = offline_scores(kept)
    print(
        "Summary-level Spearman (per article, then the mean), 95% bootstrap interval over "
        f"articles ({args.resamples} resamples, seed {args.seed}), articles with a value in "
        "brackets; offline sub-scores on the rows scored by "
        f"{next(iter(judged))}.\n"
    )
    extra: dict[str, dict[str, float | None]] = {}
    if args.replies:
        results, usage = replayed_results(
            kept, args.replies, args.model, args.base_url, args.judge_path
        )
        print(f"ours' rows scored again from {args.replies}: {usage}\n")
        extra["ours: alignment"] = {i: r.alignment for i, r in results.items()}
        extra["ours: coverage"] = {i: r.coverage for i, r in results.items()}
        extra["ours: again"] = {i: r.score for i, r in results.items()}
        if args.judge_path == "sentences":
            products = {i: sentence_product(r) for i, r in results.items()}
            extra["ours: alignment x grounding support"] = {i: a for i, (a, _) in products.items()}
            extra["ours: F1 of that and coverage"] = {i: f for i, (_, f) in products.items()}
    print(table({**judged, **extra, **offline}, rows, args.resamples, args.seed))
    if args.combine:
        name = next(iter(judged))
        print(f"\nLeave-one-article-out mixes (1 - w) * {name} + w * offline (held-out mean):\n")
        print("| mix | " + " | ".join(RATINGS) + " | w per fold |")
        print("|---|" + "---|" * len(RATINGS) + "---|")
        for off_name, off in offline.items():
            held, weights = cross_validated_mix(first, off, rows)
            cells = " | ".join(f"{held[r]:+.2f}" if r in held else "n/a" for r in RATINGS)
            print(f"| {name} + {off_name} | {cells} | {', '.join(f'{w:g}' for w in weights)} |")


if __name__ == "__main__":
    main()
