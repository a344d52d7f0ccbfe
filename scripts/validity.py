"""Validity of the scores against SummEval's human ratings (summary-level Spearman / Kendall).

The field's convention (examples/summeval/README.md): for each article, correlate a metric
with a human rating over its 16 summaries, then average over articles. Articles where the metric
(or the rating) is constant, or defined for fewer than 3 summaries, give no correlation and are
left out; the number used is printed beside each cell.

Without a judge it scores every deterministic dimension (both coherence formulas, with the
inputs of each; ``grounding``, with its unsupported counts) and, with ``--cv``, cross-validates
the coherence weights and the grounding prior and number weight: 5 folds grouped by article, the
weights picked on 4 folds from a small grid, the Spearman measured on the fifth.
With ``--base-url`` and ``--model`` (any OpenAI-compatible endpoint) it also scores the judged
parts: the F-beta ``score``, ``alignment``, ``coverage``, ``specificity`` and the judged
``non_redundancy``, once per judge path, i.e. per reply shape (``--paths``: by default both the
``sentences`` path, the default, and the ``two-call`` path; ``steps`` may be added, or one path
given alone), each with a judge of its own on the same endpoint, and prints side by side their
agreement with the ratings and their cost (calls, prompt / cached / completion tokens, dollars
at the judge's prices or ``--price-in``/``--price-out``, wall time), so a change of path can be
checked for lost agreement against what it saves. Replies read from ``--cache`` cost nothing.

    .venv/bin/python scripts/validity.py [--data examples/summeval/dev.jsonl] [--cv]
    .venv/bin/python scripts/validity.py --base-url http://host/v1 --model NAME [--limit 160]
        [--paths sentences,two-call] [--price-in 0.15 --price-out 0.6]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import statistics
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from scipy.stats import ConstantInputWarning, kendalltau, spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shared import OpenAIJudge, SummaryEvaluation, score_summaries  # noqa: E402
from shared.dimensions.coherence import (  # noqa: E402
    FRAGMENT_WEIGHT,
    OPENING_WEIGHT,
    REPEAT_WEIGHT,
    RESTART_WEIGHT,
    SHORT_WEIGHT,
)
from shared.dimensions.grounding import (  # noqa: E402
    NAME_LABELS,
    NUMBER_WEIGHT,
    PRIOR,
    GroundingEvidence,
    grounding_scores,
)
from shared.evaluation.options import JUDGE_PATHS  # noqa: E402

HUMAN = ("coherence", "consistency", "fluency", "relevance")
DETERMINISTIC = ["density", "non_redundancy", "coherence", "conciseness"]
WEIGHT_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)
"""Candidate values of each coherence weight (repeat, fragment) in the cross-validation of the
three-count penalty."""
SIX_GRIDS = (
    (0.25, 0.5, 1.0),
    (0.25, 0.5, 1.0),
    (0.0, 0.5, 1.0, 2.0),
    (0.0, 0.5, 1.0),
    (0.0, 0.5, 1.0),
)
"""Candidate (repeat, fragment, opening, restart, short) weights for the six-count penalty."""
PRIOR_GRID = (0.0, 0.5, 1.0, 2.0, 4.0)
"""Candidate grounding priors (pseudo-items counted as supported) in the cross-validation."""
NUMBER_WEIGHT_GRID = (0.5, 1.0, 2.0)
"""Candidate weights of a number/date item against a name item in the cross-validation."""

Values = dict[str, list[float | None]]


def load_rows(path: Path, limit: int | None = None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def deterministic_values(results: Sequence[SummaryEvaluation]) -> Values:
    """Each deterministic dimension, the raw inputs behind it, and both coherence formulas."""
    out: Values = defaultdict(list)
    for res in results:
        ev = res.dimension_evidence
        coh = ev.coherence
        out["density (score)"].append(res.density)
        out["entity density (raw)"].append(ev.density.entity_density)
        out["non_redundancy (det.)"].append(ev.non_redundancy.deterministic_score)
        out["coherence (entity_grid, default)"].append(res.coherence)
        out["coherence (article formula)"].append(coh.article_score)
        out["  - jumps (NOCB count)"].append(_neg(len(coh.jumps), coh.penalty))
        out["  - repeated bigrams"].append(_neg(coh.repeated_bigram_count, coh.penalty))
        out["  - fragments"].append(_neg(len(coh.fragments), coh.penalty))
        out["  - opening without a referent"].append(_neg(int(coh.opening), coh.penalty))
        out["  - restarts"].append(_neg(len(coh.restarts), coh.penalty))
        out["  - short sentences"].append(_neg(len(coh.short_sentences), coh.penalty))
        out["  - truncated (flag, unscored)"].append(
            None if coh.truncated is None else -float(coh.truncated)
        )
        out["conciseness"].append(res.conciseness)
    return out


def _neg(count: int, penalty: float | None) -> float | None:
    """Counts are problems, so the negative is reported (positive rho = tracks humans)."""
    return None if penalty is None else -float(count)


GroundingCounts = tuple[int, int, int, int]
"""(supported names, unsupported names, supported numbers/dates, unsupported numbers/dates)."""


def grounding_counts(evidence: Sequence[GroundingEvidence]) -> list[GroundingCounts | None]:
    out: list[GroundingCounts | None] = []
    for ev in evidence:
        if ev.item_count == 0:  # version 1 had no value: nothing to check
            out.append(None)
            continue
        names = [i.label in NAME_LABELS for i in ev.supported]
        bad = [i.label in NAME_LABELS for i in ev.unsupported]
        out.append((sum(names), sum(bad), len(names) - sum(names), len(bad) - sum(bad)))
    return out


def grounding_formula(
    counts: Sequence[GroundingCounts | None], prior: float, number_weight: float
) -> list[float | None]:
    """``(supported + prior) / (items + prior)``, a number/date item weighing ``number_weight``
    names (the shipped score with prior PRIOR and weight NUMBER_WEIGHT)."""
    out: list[float | None] = []
    for c in counts:
        if c is None:
            out.append(None)
            continue
        good = c[0] + number_weight * c[2]
        total = good + c[1] + number_weight * c[3]
        out.append((good + prior) / (total + prior) if total + prior > 0 else None)
    return out


def grounding_values(evidence: Sequence[GroundingEvidence]) -> Values:
    """The shipped grounding score (version 2), version 1's items score, its raw share, and its
    unsupported counts (negated)."""
    out: Values = defaultdict(list)
    for ev in evidence:
        missing = ev.item_count == 0
        bad_names = sum(i.label in NAME_LABELS for i in ev.unsupported)
        out["grounding"].append(ev.score)
        out["  - version 1 (names, numbers, dates)"].append(ev.items_score)
        out["  - share supported (no prior)"].append(ev.share)
        out["  - unsupported names"].append(None if missing else -float(bad_names))
        out["  - unsupported numbers/dates"].append(
            None if missing else -float(len(ev.unsupported) - bad_names)
        )
    return out


def grouped_cv(
    rows: Sequence[dict],
    candidates: dict[tuple[float, ...], list[float | None]],
    human: str,
    *,
    folds: int = 5,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
) -> tuple[list[str], list[float]]:
    """Pick the candidate with the best train rho on 4 folds of articles, measure the fifth.
    Returns the first seed's per-fold table lines and every fold's test rho."""
    articles = sorted({r["article_id"] for r in rows})
    lines: list[str] = []
    tests: list[float] = []
    for seed in seeds:
        order = articles[:]
        random.Random(seed).shuffle(order)
        for k in range(folds):
            test = set(order[k::folds])
            train = set(articles) - test
            scored = [(summary_level(rows, v, human, train)[0], w) for w, v in candidates.items()]
            scored = [t for t in scored if math.isfinite(t[0])]
            train_rho, best = max(scored, key=lambda t: t[0])  # first of equals: grid order
            test_rho, _, n_test = summary_level(rows, candidates[best], human, test)
            tests.append(test_rho)
            if seed == seeds[0]:
                lines.append(
                    f"| {seed} | {k + 1} | {n_test} | {best} | {train_rho:+.3f} | {test_rho:+.3f} |"
                )
    return lines, tests


def cross_validate_grounding(
    rows: Sequence[dict], counts: Sequence[GroundingCounts | None], *, folds: int = 5
) -> str:
    """Grouped k-fold CV of the grounding prior and number weight against human consistency."""
    grid = list(itertools.product(PRIOR_GRID, NUMBER_WEIGHT_GRID))
    candidates = {w: grounding_formula(counts, *w) for w in grid}
    seeds = (0, 1, 2, 3, 4)
    table_lines, tests = grouped_cv(rows, candidates, "consistency", folds=folds, seeds=seeds)
    finite = [t for t in tests if math.isfinite(t)]
    shipped = summary_level(rows, grounding_formula(counts, PRIOR, NUMBER_WEIGHT), "consistency")
    return "\n".join(
        [
            f"Grounding by {folds}-fold CV grouped by article, against human consistency (grid "
            f"{PRIOR_GRID} for the prior, {NUMBER_WEIGHT_GRID} for the number/date weight):",
            "",
            "| seed | fold | test articles defined | chosen (prior, number weight) | train rho "
            "| test rho |",
            "|---|---|---|---|---|---|",
            *table_lines,
            "",
            f"seed 0: test rho {statistics.mean(finite[:folds]):+.3f} "
            f"± {statistics.stdev(finite[:folds]):.3f} (mean ± sd over {folds} folds)",
            f"seeds {list(seeds)}: test rho {statistics.mean(finite):+.3f} "
            f"± {statistics.stdev(finite):.3f} over {len(finite)} folds",
            f"shipped (prior {PRIOR:g}, number weight {NUMBER_WEIGHT:g}) on all of dev: "
            f"rho {shipped[0]:+.3f} ({shipped[2]} articles defined)",
        ]
    )


JUDGED = (
    "score (F-beta)",
    "alignment",
    "coverage",
    "specificity (judged)",
    "non_redundancy (det. + judged)",
)


def judged_values(results: Sequence[SummaryEvaluation], path: str | None = None) -> Values:
    """The judged sub-scores; with ``path``, each name carries it (``alignment [steps]``)."""
    out: Values = defaultdict(list)
    tag = f" [{path}]" if path else ""
    for res in results:
        values = (res.score, res.alignment, res.coverage, res.specificity, res.non_redundancy)
        for name, value in zip(JUDGED, values, strict=True):
            out[name + tag].append(value)
    return out


def side_by_side(rows: Sequence[dict], by_path: dict[str, Sequence[SummaryEvaluation]]) -> str:
    """One line per judged sub-score and human rating: Spearman rho of each path, side by side,
    over the articles where every path's correlation is defined (their count in brackets)."""
    paths = list(by_path)
    lines = [
        "| sub-score | rating | " + " | ".join(paths) + " | articles |",
        "|---|---|" + "---|" * len(paths) + "---|",
    ]
    values = {path: judged_values(results) for path, results in by_path.items()}
    for name in JUDGED:
        for human in HUMAN:
            keep = None
            for path in paths:
                defined = _defined_articles(rows, values[path][name], human)
                keep = defined if keep is None else keep & defined
            cells = []
            for path in paths:
                rho, _, n = summary_level(rows, values[path][name], human, keep)
                cells.append("n/a" if n == 0 else f"{rho:+.3f}")
            lines.append(f"| {name} | {human} | " + " | ".join(cells) + f" | {len(keep or ())} |")
    return "\n".join(lines)


def cost_side_by_side(costs: dict[str, dict]) -> str:
    """One line per judge path: rows scored, the judge's calls and tokens, dollars, wall time;
    the last column: each path's dollars against the first path's."""
    lines = [
        "| judge path | scored | calls | prompt tok | cached tok | compl tok | $ | wall s "
        "| compl tok vs first | $ vs first |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    first = next(iter(costs.values()), {})
    for path, c in costs.items():
        u = c["usage"]
        dollars = "unknown" if c["dollars"] is None else f"{c['dollars']:.4f}"
        compl = _ratio(u.get("completion_tokens", 0), first["usage"].get("completion_tokens", 0))
        cost = _ratio(c["dollars"], first["dollars"])
        lines.append(
            f"| {path} | {c['scored']}/{c['rows']} | {u.get('calls', 0):,} "
            f"| {u.get('prompt_tokens', 0):,} | {u.get('cached_tokens', 0):,} "
            f"| {u.get('completion_tokens', 0):,} | {dollars} | {c['wall']:.1f} | {compl} "
            f"| {cost} |"
        )
    return "\n".join(lines)


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return "n/a"
    return f"{value / base:.2f}x"


def _defined_articles(rows: Sequence[dict], values: Sequence[float | None], human: str) -> set:
    """Articles whose summary-level correlation of ``values`` with ``human`` is defined."""
    return {
        article
        for article in {r["article_id"] for r in rows}
        if summary_level(rows, values, human, {article})[2] == 1
    }


def summary_level(
    rows: Sequence[dict], values: Sequence[float | None], human: str, keep: set[str] | None = None
) -> tuple[float, float, int]:
    """Mean over articles of Spearman and Kendall over each article's summaries, and the number
    of articles with a defined correlation (NaN, NaN, 0 when there is none)."""
    by_article: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row, value in zip(rows, values, strict=True):
        if keep is not None and row["article_id"] not in keep:
            continue
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


def table(rows: Sequence[dict], values: Values) -> str:
    lines = [
        "| metric | " + " | ".join(HUMAN) + " | None |",
        "|---|" + "---|" * len(HUMAN) + "---|",
    ]
    for name, vals in values.items():
        cells = []
        for human in HUMAN:
            rho, tau, n = summary_level(rows, vals, human)
            cells.append("n/a (0)" if n == 0 else f"{rho:+.3f} / {tau:+.3f} ({n})")
        missing = sum(v is None for v in vals)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {missing} |")
    return "\n".join(lines)


def coherence_counts(results: Sequence[SummaryEvaluation]) -> list[tuple[int, ...] | None]:
    """(jumps, repeated bigrams, fragments, opening, restarts, short sentences) per summary,
    None where coherence has none."""
    out: list[tuple[int, ...] | None] = []
    for res in results:
        coh = res.dimension_evidence.coherence
        if coh is None or coh.penalty is None:
            out.append(None)
        else:
            out.append(
                (
                    len(coh.jumps),
                    coh.repeated_bigram_count,
                    len(coh.fragments),
                    int(coh.opening),
                    len(coh.restarts),
                    len(coh.short_sentences),
                )
            )
    return out


def penalties(counts: Sequence[tuple[int, ...] | None], *weights: float) -> list[float | None]:
    """Negative penalty (ranks as the score does: ``0.5 ** (penalty / h)`` is monotone); the
    jump weight is 1, ``weights`` are those of the other counts in order."""
    return [
        None if c is None else -(c[0] + sum(w * x for w, x in zip(weights, c[1:], strict=False)))
        for c in counts
    ]


def cross_validate(
    rows: Sequence[dict],
    counts: Sequence[tuple[int, int, int] | None],
    *,
    folds: int = 5,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
) -> str:
    """Grouped k-fold CV of the two coherence weights (the jump weight is the unit)."""
    articles = sorted({r["article_id"] for r in rows})
    six = any(c is not None and len(c) == 6 for c in counts)
    grids = SIX_GRIDS if six else (WEIGHT_GRID, WEIGHT_GRID)
    grid = list(itertools.product(*grids))
    cache = {w: penalties(counts, *w) for w in grid}
    named = "repeat, fragment, opening, restart, short" if six else "repeat, fragment"
    lines = [
        f"Coherence weights by {folds}-fold CV grouped by article (grids {grids} for the "
        f"{named} weights; jump weight 1):",
        "",
        f"| seed | fold | test articles | chosen ({named}) | train rho | test rho |",
        "|---|---|---|---|---|---|",
    ]
    per_seed: list[float] = []
    all_tests: list[float] = []
    for seed in seeds:
        order = articles[:]
        random.Random(seed).shuffle(order)
        tests = []
        for k in range(folds):
            test = set(order[k::folds])
            train = set(articles) - test
            scored = [(summary_level(rows, cache[w], "coherence", train)[0], w) for w in grid]
            train_rho, best = max(scored, key=lambda t: t[0])  # first of equals: grid order
            test_rho = summary_level(rows, cache[best], "coherence", test)[0]
            tests.append(test_rho)
            if seed == seeds[0]:
                lines.append(
                    f"| {seed} | {k + 1} | {len(test)} | {best} | {train_rho:+.3f} | "
                    f"{test_rho:+.3f} |"
                )
        per_seed.append(statistics.mean(tests))
        all_tests.extend(tests)
    weights = (REPEAT_WEIGHT, FRAGMENT_WEIGHT, OPENING_WEIGHT, RESTART_WEIGHT, SHORT_WEIGHT)
    shipped = summary_level(rows, penalties(counts, *weights), "coherence")
    lines += [
        "",
        f"seed {seeds[0]}: test rho {statistics.mean(all_tests[:folds]):+.3f} "
        f"± {statistics.stdev(all_tests[:folds]):.3f} (mean ± sd over {folds} folds)",
        f"seeds {list(seeds)}: test rho {statistics.mean(all_tests):+.3f} "
        f"± {statistics.stdev(all_tests):.3f} over {len(all_tests)} folds; per-seed means "
        + ", ".join(f"{m:+.3f}" for m in per_seed),
        f"shipped weights ({named}: {weights[: len(grids)]}) on all of dev: "
        f"rho {shipped[0]:+.3f} ({shipped[2]} articles)",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "examples" / "summeval" / "dev.jsonl")
    parser.add_argument("--limit", type=int, help="only the first N rows (16 per article)")
    parser.add_argument("--cv", action="store_true", help="cross-validate the coherence weights")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint for the judged parts")
    parser.add_argument("--model", help="model name at --base-url")
    parser.add_argument(
        "--api-key", default=os.environ.get("OPENAI_API_KEY", "none"), help="$OPENAI_API_KEY"
    )
    parser.add_argument("--n", type=int, default=10, help="questions per source (judge runs)")
    parser.add_argument("--concurrency", type=int, default=8, help="judge calls in flight")
    parser.add_argument("--cache", type=Path, help="SQLite file for judge replies")
    parser.add_argument(
        "--paths",
        default="sentences,two-call",
        help="judge paths (reply shapes) to compare, comma-separated, from "
        f"{', '.join(JUDGE_PATHS)}; default both sentences and two-call",
    )
    for name, what in (("in", "input"), ("cached", "cached input"), ("out", "output")):
        parser.add_argument(
            f"--price-{name}", type=float, help=f"US$ per million {what} tokens (judge runs)"
        )
    args = parser.parse_args(argv)
    if bool(args.base_url) != bool(args.model):
        parser.error("--base-url and --model go together")
    paths = list(dict.fromkeys(path.strip() for path in args.paths.split(",") if path.strip()))
    if not paths or any(path not in JUDGE_PATHS for path in paths):
        parser.error(f"--paths takes {', '.join(JUDGE_PATHS)}, got {args.paths!r}")
    rows = load_rows(args.data, args.limit)
    pairs = [(r["article"], r["summary"]) for r in rows]
    prices = {"price_in": args.price_in, "price_cached": args.price_cached}
    prices["price_out"] = args.price_out
    by_path: dict[str, list[SummaryEvaluation]] = {}
    costs: dict[str, dict] = {}
    for path in paths if args.base_url else paths[:1]:
        judge = None
        if args.base_url:  # a judge per path: its usage is that path's cost
            judge = OpenAIJudge(args.model, base_url=args.base_url, api_key=args.api_key, **prices)
        started = time.perf_counter()
        by_path[path] = score_summaries(
            pairs,
            judge=judge,
            n=args.n,
            concurrency=args.concurrency,
            cache=args.cache or True,
            judge_path=path,
            **({} if judge else {"dimensions": DETERMINISTIC}),
        )
        if judge is not None:
            costs[path] = {
                "usage": dict(judge.usage),
                "dollars": judge.cost(),
                "wall": time.perf_counter() - started,
                "scored": sum(r.scored for r in by_path[path]),
                "rows": len(pairs),
            }
    judged = bool(costs)
    results = next(iter(by_path.values()))  # the deterministic dimensions: the same on any path
    values = deterministic_values(results)
    grounding = grounding_scores(pairs)
    values.update(grounding_values(grounding))
    if judged:
        for path, scored in by_path.items():
            values.update(judged_values(scored, path if len(by_path) > 1 else None))
            unscored = [r for r in scored if not r.scored]
            if unscored:
                print(
                    f"{path}: {len(unscored)} of {len(scored)} rows unscored, e.g.: "
                    f"{unscored[0].error}"
                )
    articles = len({r["article_id"] for r in rows})
    print(f"{len(rows)} summaries, {articles} articles; summary-level Spearman rho / Kendall tau")
    print("(mean over articles; in brackets: articles with a defined correlation)\n")
    print(table(rows, values))
    if judged and len(by_path) > 1:
        print("\nJudge paths side by side: Spearman rho with each rating, over the articles where")
        print("every path's correlation is defined\n")
        print(side_by_side(rows, by_path))
    if judged:
        print("\nJudge paths side by side: cost (this run's requests; replies from --cache count")
        print("nothing)\n")
        print(cost_side_by_side(costs))
    if args.cv:
        print()
        print(cross_validate(rows, coherence_counts(results)))
        print()
        print(cross_validate_grounding(rows, grounding_counts(grounding)))


if __name__ == "__main__":
    main()
