"""scripts/grounding_fit.py: reading QAGS-shaped files, the metrics, and a cross-validation that
recovers a rule behind synthetic labels (no fetched data, no model)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripts import load_script


@pytest.fixture(scope="module")
def fit() -> ModuleType:
    return load_script("grounding_fit")


def test_qags_rows_take_majority_labels(fit: ModuleType, tmp_path: Path) -> None:
    def answers(*said: str) -> list[dict]:
        return [{"worker_id": i, "response": r} for i, r in enumerate(said)]

    row = {
        "article": "The dog bit the postman.",
        "summary_sentences": [
            {"sentence": "The dog bit him. ", "responses": answers("yes", "no", "yes")},
            {"sentence": "It was Monday.", "responses": answers("no", "no", "yes")},
        ],
    }
    path = tmp_path / "mturk_x.jsonl"
    path.write_text(json.dumps(row) + "\n\n")
    (got,) = fit.load_qags(path, "QAGS XSum")
    assert got["sentence_labels"] == [1, 0] and got["binary"] == 0 and got["graded"] == 0.5
    assert got["summary"] == "The dog bit him. It was Monday."


def test_metrics_and_baselines(fit: ModuleType) -> None:
    assert fit.auc([1, 1, 0, 0], [0.9, 0.8, 0.1, 0.2]) == 1.0
    assert fit.auc([1, 0], [0.1, 0.9]) == 0.0
    assert fit.ngram_precision("a b c d", "a b x", 2) == 0.5
    assert fit.ngram_precision("a b", "a", 2) is None


def test_cross_validation_recovers_a_rule_behind_the_labels(fit: ModuleType) -> None:
    """Sentence labels made from the similarity signal alone: out of fold, the summaries rank
    perfectly, and every fold's weight on similarity is the largest."""
    rng = random.Random(0)
    rows = []
    for k in range(60):
        signals, labels = [], []
        for _ in range(rng.randint(1, 3)):
            sim = rng.random()
            signals.append([0.0, 0.5, 0.5, sim, 0.5, 0.0])
            labels.append(int(sim > 0.5))
        rows.append(
            {
                "dataset": "QAGS XSum",
                "article_id": f"a{k}",
                "signals": signals,
                "sentence_labels": labels,
                "binary": int(all(labels)),
                "graded": sum(labels) / len(labels),
            }
        )
    oof, lines = fit.cross_validate(rows)
    assert len(lines) == 5 and all(v is not None for v in oof)
    assert fit.metric(rows, oof, "ROC AUC") > 0.95
    for line in lines:
        weights = [float(w) for w in line.split("weights ")[1].split(", intercept")[0].split(", ")]
        assert max(range(6), key=lambda i: weights[i]) == 3, line


def test_shipped_values_follow_the_current_constants_not_the_cached_ones(fit: ModuleType) -> None:
    """A cache keeps the ``shipped`` value of the constants it was extracted under; the report
    recomputes it from the cached signals with the constants shipped now."""
    from shared.dimensions import support as sup

    signals = [[0.0, 1.0, 1.0, 0.9, 1.0, 0.0], [2.0, 0.4, 0.2, 0.3, 0.1, 1.0]]
    rows = [{"signals": signals, "shipped": 0.123}, {"signals": [], "shipped": None}]
    got = fit.shipped_values(rows)
    want = sup.combine([sup.support(dict(zip(sup.SIGNALS, x, strict=True))) for x in signals])
    assert got[0] == pytest.approx(want) and got[0] != 0.123 and got[1] is None


def test_summary_features_and_extra_sentence_signals(fit: ModuleType) -> None:
    row = {
        "article": "The dog bit the postman on Monday. The postman went home.",
        "summary": "The dog bit the postman. The cat sang.",
        "signals": [[0.0, 1.0, 1.0, 0.9, 1.0, 0.0], [1.0, 0.0, 0.0, 0.2, 0.0, 1.0]],
        "our_sentences": ["The dog bit the postman.", "The cat sang."],
    }
    feats = fit.summary_features(row)
    assert feats["mean similarity"] == pytest.approx(0.55)
    assert feats["worst similarity"] == pytest.approx(0.2)
    assert feats["worst items"] == 1.0 and feats["worst negation"] == 1.0
    assert feats["p1"] == pytest.approx(6 / 8)  # all but "cat" and "sang"
    (extra,) = fit.extra_sentence_signals([row])
    assert extra[0] == [1.0, 1.0]  # every content stem and trigram is in the source
    assert extra[1] == [0.0, 0.0]
