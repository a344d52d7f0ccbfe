"""Fit and check grounding version 2's sentence model (shared/dimensions/support.py).

Reads development data from paths given on the command line (nothing is fetched here):

- ``--summeval``: SummEval rows (``article_id``, ``article``, ``summary``, ``consistency``), the
  shipped ``examples/summeval/dev.jsonl`` by default; graded: summary-level Spearman with
  consistency (mean over articles, the SummEval convention);
- ``--qags DIR``: QAGS's ``mturk_cnndm.jsonl`` and ``mturk_xsum.jsonl`` (Wang et al. 2020,
  github.com/W4ngatang/qags, ``data/``): per summary sentence, three yes/no answers to "is it
  supported by the article?". Binary: ROC AUC of "every sentence supported by a majority";
  graded: Spearman with the share of supported sentences.

It computes each summary sentence's signals with the shipped code (``grounding_scores``), then
cross-validates over articles (5 folds, articles of all datasets pooled): on 4 folds a logistic
regression of sentence labels on the signals (QAGS's majority answers; SummEval's summaries give
each sentence the label "consistency is 5") and the min share from a grid; on the fifth, the
summaries' grounding. The out-of-fold values are reported per dataset with 95 % bootstrap
intervals beside the unigram and bigram precision baselines (share of the summary's word n-grams
found in the source). ``--fit`` also prints the constants fit on all the data, to ship.

    .venv/bin/python scripts/grounding_fit.py --qags /path/to/qags/data [--fit]

or extract each dataset in its own process, then fit from the three caches:

    ... --only summeval --cache se.pkl   (and cnndm, xsum with --qags)
    ... --cache se.pkl cnndm.pkl xsum.pkl --fit

``--explore`` (with the caches) also cross-validates the alternatives tried in the third round
(docs/VALIDITY.md): a second, summary-level model over the sentence signals' mean and minimum
and the summary's own n-gram precision; two more sentence signals (content words and trigrams
found anywhere in the source); and the signals' interaction with how abstractive the summary is.
Each is printed as the mean over three shuffles of each dataset's first metric out of fold.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import random
import re
import statistics
import sys
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import ConstantInputWarning, spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shared.dimensions import support as sup  # noqa: E402
from shared.dimensions.grounding import grounding_scores  # noqa: E402

MIN_SHARE_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
C_GRID = (0.1, 1.0, 10.0)
SUMMEVAL_WEIGHT = 0.3
"""Weight of a SummEval sentence (labelled by its summary) against a QAGS sentence (labelled
itself) in the regression."""
_WORD = re.compile(r"\w+")


def load_summeval(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [
        {
            "dataset": "SummEval dev",
            "article_id": f"se-{r['article_id']}",
            "article": r["article"],
            "summary": r["summary"],
            "graded": float(r["consistency"]),
            "binary": None,
            "sentence_labels": None,
        }
        for r in rows
    ]


def load_qags(path: Path, name: str) -> list[dict]:
    out = []
    for k, line in enumerate(path.read_text().splitlines()):
        if not line.strip():
            continue
        r = json.loads(line)
        labels = []
        for s in r["summary_sentences"]:
            yes = sum(a["response"] == "yes" for a in s["responses"])
            labels.append(1 if yes * 2 > len(s["responses"]) else 0)
        out.append(
            {
                "dataset": name,
                "article_id": f"{name}-{hash(r['article'][:200]) & 0xFFFFFFF}-{k}",
                "article": r["article"],
                "summary": " ".join(s["sentence"].strip() for s in r["summary_sentences"]),
                "sentences": [s["sentence"].strip() for s in r["summary_sentences"]],
                "graded": sum(labels) / len(labels),
                "binary": int(all(labels)),
                "sentence_labels": labels,
            }
        )
    return out


def ngram_precision(source: str, summary: str, n: int) -> float | None:
    src = [w.lower() for w in _WORD.findall(source)]
    summ = [w.lower() for w in _WORD.findall(summary)]
    grams = {tuple(src[i : i + n]) for i in range(len(src) - n + 1)}
    mine = [tuple(summ[i : i + n]) for i in range(len(summ) - n + 1)]
    return sum(g in grams for g in mine) / len(mine) if mine else None


def extract(rows: list[dict]) -> None:
    """Each row's sentence signals (from the shipped code) and the baselines, in place."""
    evidence = grounding_scores([(r["article"], r["summary"]) for r in rows])
    for r, ev in zip(rows, evidence, strict=True):
        r["signals"] = [[s.signals[k] for k in sup.SIGNALS] for s in ev.sentences]
        r["our_sentences"] = [s.sentence for s in ev.sentences]
        r["shipped"] = ev.score
        r["v1"] = ev.items_score
        r["unigram"] = ngram_precision(r["article"], r["summary"], 1)
        r["bigram"] = ngram_precision(r["article"], r["summary"], 2)


def shipped_values(rows: Sequence[dict]) -> list[float | None]:
    """Each summary's grounding under the constants shipped now, from its cached signals (a
    cache extracted before the constants changed keeps its old ``shipped`` value; the signals do
    not depend on the constants)."""
    out: list[float | None] = []
    for r in rows:
        if not r["signals"]:
            out.append(None)
            continue
        supports = [sup.support(dict(zip(sup.SIGNALS, x, strict=True))) for x in r["signals"]]
        out.append(sup.combine(supports))
    return out


def training_set(rows: Sequence[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs, ys, ws = [], [], []
    for r in rows:
        if not r["signals"]:
            continue
        if r["sentence_labels"] is not None:
            if len(r["sentence_labels"]) != len(r["signals"]):
                continue  # split differently from the annotation: no sentence labels
            for x, y in zip(r["signals"], r["sentence_labels"], strict=True):
                xs.append(x)
                ys.append(y)
                ws.append(1.0)
        else:
            y = 1 if r["graded"] >= 5.0 else 0
            for x in r["signals"]:
                xs.append(x)
                ys.append(y)
                ws.append(SUMMEVAL_WEIGHT)
    return np.array(xs), np.array(ys), np.array(ws)


def fit(rows: Sequence[dict], c: float) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    x, y, w = training_set(rows)
    model = LogisticRegression(C=c, max_iter=2000)
    model.fit(x, y, sample_weight=w)
    return model.coef_[0], float(model.intercept_[0])


def predict(row: dict, coef: np.ndarray, intercept: float, min_share: float) -> float | None:
    if not row["signals"]:
        return None
    z = intercept + np.asarray(row["signals"]) @ coef
    s = 1.0 / (1.0 + np.exp(-z))
    return float(min_share * s.min() + (1 - min_share) * s.mean())


def summary_level(rows: Sequence[dict], values: Sequence[float | None]) -> float:
    """Mean over articles of Spearman over each article's summaries (SummEval convention)."""
    by: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r, v in zip(rows, values, strict=True):
        if v is not None:
            by[r["article_id"]].append((v, r["graded"]))
    rhos = []
    for pairs in by.values():
        xs, ys = zip(*pairs, strict=True)
        if len(pairs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantInputWarning)
            rho = spearmanr(xs, ys).statistic
        if math.isfinite(rho):
            rhos.append(rho)
    return sum(rhos) / len(rhos) if rhos else math.nan


def auc(labels: Sequence[int], values: Sequence[float]) -> float:
    pos = [v for y, v in zip(labels, values, strict=True) if y == 1]
    neg = [v for y, v in zip(labels, values, strict=True) if y == 0]
    if not pos or not neg:
        return math.nan
    from scipy.stats import rankdata

    ranks = rankdata(list(pos) + list(neg))
    return float((sum(ranks[: len(pos)]) - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def metric(rows: Sequence[dict], values: Sequence[float | None], kind: str) -> float:
    keep = [(r, 0.0 if v is None else v) for r, v in zip(rows, values, strict=True)]
    if kind == "summary-level Spearman":
        return summary_level(rows, values)
    if kind == "ROC AUC":
        return auc([r["binary"] for r, _ in keep], [v for _, v in keep])
    return float(spearmanr([r["graded"] for r, _ in keep], [v for _, v in keep]).statistic)


def bootstrap(
    rows: Sequence[dict], values: Sequence[float | None], kind: str, reps: int = 1000
) -> tuple[float, float, float]:
    """The metric and its 95 % percentile interval, resampling articles (SummEval) or
    summaries (QAGS, one summary per article)."""
    point = metric(rows, values, kind)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[r["article_id"]].append(i)
    keys = list(groups)
    rng = random.Random(0)
    stats = []
    for b in range(reps):
        pick = [rng.choice(keys) for _ in keys]
        idx = [i for j, k in enumerate(pick) for i in groups[k]]
        sub = [
            dict(rows[i], article_id=f"{rows[i]['article_id']}#{j}")
            for j, k in enumerate(pick)
            for i in groups[k]
        ]
        value = metric(sub, [values[i] for i in idx], kind)
        if math.isfinite(value):
            stats.append(value)
        del b
    stats.sort()
    return point, stats[int(0.025 * len(stats))], stats[int(0.975 * len(stats)) - 1]


KINDS = {
    "SummEval dev": ["summary-level Spearman"],
    "QAGS CNN/DM": ["ROC AUC", "Spearman"],
    "QAGS XSum": ["ROC AUC", "Spearman"],
}


def train_score(rows: Sequence[dict], values: Sequence[float | None]) -> float:
    """Mean of each dataset's first metric (what a fold's training articles pick by)."""
    by: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by[r["dataset"]].append(i)
    out = []
    for name, idx in by.items():
        m = metric([rows[i] for i in idx], [values[i] for i in idx], KINDS[name][0])
        if math.isfinite(m):
            out.append(m)
    return statistics.mean(out)


def select(rows: Sequence[dict]) -> tuple[float, float, float, np.ndarray, float]:
    """(train score, C, min share, weights, intercept): the grid point that ranks ``rows``
    best by :func:`train_score`."""
    best = None
    for c in C_GRID:
        coef, b = fit(rows, c)
        for m in MIN_SHARE_GRID:
            score = train_score(rows, [predict(r, coef, b, m) for r in rows])
            if best is None or score > best[0]:
                best = (score, c, m, coef, b)
    assert best is not None
    return best


def cross_validate(rows: list[dict], folds: int = 5, seed: int = 0) -> tuple[list, list[str]]:
    articles = sorted({r["article_id"] for r in rows})
    random.Random(seed).shuffle(articles)
    oof: list[float | None] = [None] * len(rows)
    lines = []
    for k in range(folds):
        test = set(articles[k::folds])
        train_i = [i for i, r in enumerate(rows) if r["article_id"] not in test]
        test_i = [i for i, r in enumerate(rows) if r["article_id"] in test]
        train = [rows[i] for i in train_i]
        best = select(train)
        _, c, m, coef, b = best
        for i in test_i:
            oof[i] = predict(rows[i], coef, b, m)
        lines.append(
            f"fold {k + 1}: C {c:g}, min share {m:g}, weights "
            + ", ".join(f"{w:+.2f}" for w in coef)
            + f", intercept {b:+.2f} (train {best[0]:+.3f})"
        )
    return oof, lines


def report(rows: list[dict], oof: Sequence[float | None]) -> str:
    out = []
    for name, kinds in KINDS.items():
        idx = [i for i, r in enumerate(rows) if r["dataset"] == name]
        if not idx:
            continue
        sub = [rows[i] for i in idx]
        out += [
            f"\n{name}: {len(sub)} summaries, {len({r['article_id'] for r in sub})} articles",
            "",
            "| metric | " + " | ".join(kinds) + " |",
            "|---|" + "---|" * len(kinds),
        ]
        columns = {
            "unigram precision (baseline)": [r["unigram"] for r in sub],
            "bigram precision (baseline)": [r["bigram"] for r in sub],
            "trigram precision": [ngram_precision(r["article"], r["summary"], 3) for r in sub],
            "grounding v1 (names, numbers, dates)": [r.get("v1") for r in sub],
            "grounding v2, cross-validated": [oof[i] for i in idx],
            "grounding v2, shipped constants": shipped_values(sub),
        }
        for label, values in columns.items():
            if all(v is None for v in values):
                continue
            cells = []
            for kind in kinds:
                p, lo, hi = bootstrap(sub, values, kind)
                cells.append(f"{p:.3f} [{lo:.3f}, {hi:.3f}]")
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


SEEDS = (0, 1, 2)


def per_dataset(rows: Sequence[dict], values: Sequence[float | None]) -> dict[str, float]:
    """Each dataset's first metric (summary-level Spearman or ROC AUC)."""
    out = {}
    for name, kinds in KINDS.items():
        idx = [i for i, r in enumerate(rows) if r["dataset"] == name]
        if idx:
            out[name] = metric([rows[i] for i in idx], [values[i] for i in idx], kinds[0])
    return out


def summary_features(row: dict) -> dict[str, float]:
    """Summary-level inputs of the second-stage model: each sentence signal's mean and minimum
    (maximum for the two problem counts) and the summary's own n-gram precision."""
    x = np.asarray(row["signals"], dtype=float)
    out: dict[str, float] = {}
    for j, name in enumerate(sup.SIGNALS):
        worst = x[:, j].max() if name in ("items", "negation") else x[:, j].min()
        out[f"mean {name}"], out[f"worst {name}"] = float(x[:, j].mean()), float(worst)
    for n in (1, 2, 3):
        p = ngram_precision(row["article"], row["summary"], n)
        out[f"p{n}"] = 1.0 if p is None else p
    return out


def cv_summary_model(rows: Sequence[dict], names: Sequence[str], seed: int) -> list[float | None]:
    """Out-of-fold values of a logistic regression at the summary level (label: SummEval
    consistency 5, QAGS every sentence supported; inputs standardised on the training folds)."""
    from sklearn.linear_model import LogisticRegression

    feats = [None if not r["signals"] else summary_features(r) for r in rows]
    articles = sorted({r["article_id"] for r in rows})
    random.Random(seed).shuffle(articles)
    oof: list[float | None] = [None] * len(rows)
    for k in range(5):
        test = set(articles[k::5])
        train = [i for i, r in enumerate(rows) if r["article_id"] not in test and feats[i]]
        x = np.array([[feats[i][n] for n in names] for i in train])  # type: ignore[index]
        y = [
            int(rows[i]["graded"] >= 5.0) if rows[i]["binary"] is None else rows[i]["binary"]
            for i in train
        ]
        mu, sd = x.mean(0), x.std(0) + 1e-9
        model = LogisticRegression(C=1.0, max_iter=3000).fit((x - mu) / sd, y)
        for i, r in enumerate(rows):
            if r["article_id"] in test and feats[i]:
                z = (np.array([feats[i][n] for n in names]) - mu) / sd  # type: ignore[index]
                oof[i] = float(model.decision_function(z[None])[0])
    return oof


def extra_sentence_signals(rows: Sequence[dict]) -> list[list[list[float]]]:
    """Per summary sentence: (content stems found anywhere in the source, word trigrams found
    anywhere in the source), read off the same sentences the signals were computed on."""
    out = []
    idx, tri, last = None, set(), None
    for r in rows:
        if r["article"] != last:
            idx, last = sup.index_sentences(r["article"]), r["article"]
            toks = sup.words(r["article"])
            tri = set(zip(toks, toks[1:], toks[2:], strict=False))
        rows_out = []
        for sentence in r.get("our_sentences", []):
            toks = sup.words(sentence)
            stems = sup.content_stems(toks)
            grams = list(zip(toks, toks[1:], toks[2:], strict=False))
            anywhere = sum(s in idx.postings for s in stems) / len(stems) if stems else 1.0
            rows_out.append([anywhere, sum(g in tri for g in grams) / len(grams) if grams else 1.0])
        out.append(rows_out)
    return out


def explore(rows: list[dict]) -> str:
    """The third round's alternatives, cross-validated like the shipped model (docs/VALIDITY.md)."""
    names = list(KINDS)
    lines = [
        f"Mean over seeds {list(SEEDS)} of each dataset's first metric, out of fold "
        "(5 folds over articles, datasets pooled):",
        "",
        "| variant | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]

    def row(label: str, per_seed: list[dict[str, float]]) -> None:
        cells = [f"{statistics.mean(p[n] for p in per_seed):.3f}" for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    base = [[r[k] for r in rows] for k in ("unigram", "bigram")]
    row("unigram precision (baseline, no fit)", [per_dataset(rows, base[0])])
    row("bigram precision (baseline, no fit)", [per_dataset(rows, base[1])])

    def sentence_model(label: str, make: Any) -> None:
        variant = [dict(r, signals=make(r, k)) for k, r in enumerate(rows)]
        row(label, [per_dataset(variant, cross_validate(variant, seed=s)[0]) for s in SEEDS])

    extra = extra_sentence_signals(rows)
    sentence_model("v2: six sentence signals, mean (shipped form)", lambda r, k: r["signals"])
    sentence_model(
        "+ content words anywhere in the source",
        lambda r, k: [x + e[:1] for x, e in zip(r["signals"], extra[k], strict=False)],
    )
    sentence_model(
        "+ trigrams anywhere in the source",
        lambda r, k: [x + e[1:] for x, e in zip(r["signals"], extra[k], strict=False)],
    )

    def abstractive(r: dict, k: int) -> list[list[float]]:
        a = 1.0 - (r["unigram"] if r["unigram"] is not None else 1.0)
        return [x + [a * v for v in x] + [a] for x in r["signals"]]

    sentence_model("+ each signal × abstractiveness (1 − unigram precision)", abstractive)
    mean = [f"mean {n}" for n in sup.SIGNALS]
    worst = [f"worst {n}" for n in sup.SIGNALS]
    for label, feats in (
        ("summary-level model: signals' means", mean),
        ("summary-level model: means + p1, p2, p3", [*mean, "p1", "p2", "p3"]),
        ("summary-level model: means + worst", mean + worst),
        ("summary-level model: means + worst + p1, p2, p3", [*mean, *worst, "p1", "p2", "p3"]),
    ):
        row(label, [per_dataset(rows, cv_summary_model(rows, feats, s)) for s in SEEDS])
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--summeval", type=Path, default=ROOT / "examples" / "summeval" / "dev.jsonl"
    )
    parser.add_argument("--qags", type=Path, help="folder with mturk_cnndm.jsonl, mturk_xsum.jsonl")
    parser.add_argument(
        "--cache", type=Path, nargs="+", help="pickles of extracted signals (reused if present)"
    )
    parser.add_argument(
        "--only",
        choices=["summeval", "cnndm", "xsum"],
        help="extract one dataset into the (single) --cache file and stop",
    )
    parser.add_argument("--fit", action="store_true", help="print constants fit on all the data")
    parser.add_argument(
        "--explore", action="store_true", help="cross-validate the alternatives (docs/VALIDITY.md)"
    )
    args = parser.parse_args(argv)
    if args.cache and all(c.exists() for c in args.cache):
        rows = [r for c in args.cache for r in pickle.loads(c.read_bytes())]
    else:
        rows = []
        if args.only in (None, "summeval"):
            rows += load_summeval(args.summeval)
        if args.qags and args.only in (None, "cnndm"):
            rows += load_qags(args.qags / "mturk_cnndm.jsonl", "QAGS CNN/DM")
        if args.qags and args.only in (None, "xsum"):
            rows += load_qags(args.qags / "mturk_xsum.jsonl", "QAGS XSum")
        extract(rows)
        if args.cache:
            args.cache[0].write_bytes(pickle.dumps(rows))
        if args.only:
            return
    if args.explore:
        print(explore(rows))
        return
    oof, lines = cross_validate(rows)
    print("5-fold cross-validation over articles (all datasets pooled), seed 0:")
    print("\n".join(lines))
    print(report(rows, oof))
    if args.fit:
        score, c, m, coef, b = select(rows)
        print(f"\nfit on all ({score:+.3f} mean first metric): C {c:g}")
        print("WEIGHTS = (" + ", ".join(f"{w:.3f}" for w in coef) + ")")
        print(f"INTERCEPT = {b:.3f}\nMIN_SHARE = {m:g}")


if __name__ == "__main__":
    main()
