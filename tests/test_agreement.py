"""``shared.agreement`` and ``summary-eval agree``: correlations and kappa with known answers.

Kendall's tau-b, Spearman, Pearson and Cohen's kappa against small cases worked by hand; the
summary-level average (per source, then averaged), the system level, the binary reading of a
score, and the counting of empty values and unmatched ids.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from shared import agreement
from shared.analysis import stats
from shared.analysis.agreement import kendall_rows, label_value, parse_mapping
from shared.cli.app import app

SUMMEVAL = Path(__file__).resolve().parent.parent / "examples" / "summeval" / "dev.jsonl"


def run_cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


# ---------------------------------------------------------------------------------------------
# The statistics, by hand
# ---------------------------------------------------------------------------------------------

X = [1, 2, 3, 4, 5]
Y = [3, 1, 2, 5, 4]


def test_kendall_by_hand() -> None:
    # pairs of X, Y: discordant (1,2) (1,3) (4,5); the other 7 concordant: (7 - 3) / 10
    assert stats.kendall(X, Y) == pytest.approx(0.4)
    # tau-b with ties: x = 1 1 2 3, y = 1 2 2 3. Of 6 pairs, (1,2) is tied in x only, (2,3) in
    # y only, the other 4 concordant: 4 / sqrt((6 - 1) (6 - 1)) = 0.8
    assert stats.kendall([1, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(0.8)
    assert stats.kendall(X, X[::-1]) == pytest.approx(-1.0)
    assert math.isnan(stats.kendall([1, 1, 1], [1, 2, 3]))


def test_weighted_kendall_equals_kendall_of_the_expanded_rows() -> None:
    weights = np.array([[2, 1, 1, 0, 1], [1, 1, 1, 1, 1], [0, 0, 3, 1, 1]], float)
    for xs, ys in ((X, Y), ([1, 1, 2, 3, 5], [1, 2, 2, 3, 3])):  # without ties, with ties
        x, y = np.array(xs, float), np.array(ys, float)
        got = stats.kendall_weighted(x, y, weights)
        for row, value in zip(weights, got, strict=True):
            expanded = np.repeat(np.arange(5), row.astype(int))
            assert value == pytest.approx(stats.kendall(x[expanded], y[expanded]))
    # a tau-b by hand on an expanded resample: rows 0, 0, 1, 2, 4 of X, Y = x 1 1 2 3 5,
    # y 3 3 1 2 4; of 10 pairs 1 is tied in both, 5 concordant, 4 discordant: 1 / sqrt(9 * 9)
    assert stats.kendall_weighted(np.array(X, float), np.array(Y, float), weights[:1])[
        0
    ] == pytest.approx(1 / 9)
    rows = kendall_rows(
        np.array([X, [1, 1, 2, 3, 4]], float), np.array([Y, [1, 2, 2, 3, 4]], float)
    )
    assert rows[0] == pytest.approx(0.4)
    assert rows[1] == pytest.approx(stats.kendall([1, 1, 2, 3, 4], [1, 2, 2, 3, 4]))


def test_spearman_pearson_and_ranks_by_hand() -> None:
    # rank differences -2 1 1 -1 1: 1 - 6 * 8 / (5 * 24) = 0.6; X, Y are their own ranks
    assert stats.spearman(X, Y) == pytest.approx(0.6)
    assert stats.pearson(X, Y) == pytest.approx(0.6)
    assert stats.rank([10, 20, 20, 30]).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert stats.rank([[3, 1, 3], [2, 2, 2]]).tolist() == [[2.5, 1.0, 2.5], [2.0, 2.0, 2.0]]
    assert stats.pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(0.9933992677987828)
    assert math.isnan(stats.pearson([1, 1, 1], [1, 2, 3]))


def test_cohen_kappa_by_hand() -> None:
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15. p_o = 35/50 = 0.7;
    # A says yes to 25/50, B to 30/50: p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = 0.2 / 0.5
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert stats.cohen_kappa(a, b) == pytest.approx(0.4)
    assert stats.cohen_kappa(a, a) == pytest.approx(1.0)
    assert math.isnan(stats.cohen_kappa([1, 1], [1, 1]))


def test_against_scipy_when_installed() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, 60).astype(float)
    y = x + rng.integers(-2, 3, 60)
    assert stats.kendall(x, y) == pytest.approx(scipy_stats.kendalltau(x, y).statistic)
    assert stats.spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y).statistic)
    assert stats.pearson(x, y) == pytest.approx(scipy_stats.pearsonr(x, y).statistic)


def test_label_values_and_mapping() -> None:
    assert [label_value(v) for v in (3, "4.5", True, "yes", "FAIL", "", "n/a", None)] == [
        3.0,
        4.5,
        1.0,
        1.0,
        0.0,
        None,
        None,
        None,
    ]
    assert parse_mapping(["coverage=relevance,coherence", "density = fluency"]) == [
        ("coverage", "relevance"),
        ("coherence", "coherence"),
        ("density", "fluency"),
    ]
    with pytest.raises(ValueError):
        parse_mapping(["=relevance"])


# ---------------------------------------------------------------------------------------------
# agreement()
# ---------------------------------------------------------------------------------------------


def test_summary_level_correlates_per_source_then_averages() -> None:
    """Source s1 ranks like the people (+1), s2 the opposite way (-1), s3 has 2 summaries (no
    value): the summary-level mean is 0 over 2 sources, with 1 skipped."""
    results, labels = [], []
    for source, scores, human in (
        ("s1", [0.1, 0.5, 0.9], [1, 2, 3]),
        ("s2", [0.1, 0.5, 0.9], [3, 2, 1]),
        ("s3", [0.2, 0.3], [1, 2]),
    ):
        for i, (score, rating) in enumerate(zip(scores, human, strict=True)):
            results.append({"id": f"{source}-{i}", "coverage": score})
            labels.append({"id": f"{source}-{i}", "source": source, "relevance": rating})
    found = agreement(results, labels, {"coverage": "relevance"}, group_column="source")
    (level,) = found.get("coverage").levels
    assert level.level == "summary" and level.skipped == 1
    for est in (level.spearman, level.kendall, level.pearson):
        assert est.value == pytest.approx(0.0) and est.units == 2
        assert est.low == pytest.approx(-1.0) and est.high == pytest.approx(1.0)


def test_perfect_agreement_and_system_level() -> None:
    """Scores equal to the ratings / 5: every correlation 1 with interval [1, 1]; per-system means
    follow the same order, so the system level is 1 too."""
    results, labels = [], []
    rng = np.random.default_rng(2)
    for doc in range(6):
        for system in ("sysA", "sysB", "sysC"):
            rating = float(rng.integers(1, 6)) + {"sysA": 0, "sysB": 5, "sysC": 10}[system]
            row_id = f"{doc}-{system}"
            results.append({"id": row_id, "coherence": rating / 15})
            labels.append({"id": row_id, "doc": doc, "model": system, "coherence": rating})
    found = agreement(
        results, labels, ["coherence"], group_column="doc", system_column="model", seed=1
    )
    summary, system = found.get("coherence").levels
    assert (summary.level, system.level) == ("summary", "system")
    for est in (
        summary.spearman,
        summary.kendall,
        summary.pearson,
        system.spearman,
        system.kendall,
    ):
        assert (est.value, est.low, est.high) == (1.0, 1.0, 1.0)
    assert system.spearman.units == 3 and summary.spearman.units == 6


def test_pooled_level_without_groups_and_seed_reproduces() -> None:
    rng = np.random.default_rng(4)
    human = rng.integers(1, 6, 80).astype(float)
    score = human / 5 + rng.normal(0, 0.2, 80)
    results = [{"id": str(i), "coverage": float(s)} for i, s in enumerate(score)]
    labels = [{"id": str(i), "relevance": float(h)} for i, h in enumerate(human)]
    one = agreement(results, labels, {"coverage": "relevance"}, seed=3)
    two = agreement(results, labels, {"coverage": "relevance"}, seed=3)
    (level,) = one.get("coverage").levels
    assert level.level == "pooled" and level.spearman.units == 80
    assert level.kendall.value == pytest.approx(stats.kendall(score, human), abs=1e-12)
    for est in (level.spearman, level.kendall, level.pearson):
        assert est.low is not None and est.high is not None
        assert est.low < est.value < est.high
    assert one.to_dict() == two.to_dict()


def test_binary_labels_give_accuracy_and_kappa() -> None:
    """Scores read as pass at >= 0.5 reproduce the hand-worked 2 x 2 table: kappa 0.4."""
    pairs = [(0.9, "yes")] * 20 + [(0.8, "no")] * 5 + [(0.1, "yes")] * 10 + [(0.2, "no")] * 15
    results = [{"id": str(i), "alignment": s} for i, (s, _) in enumerate(pairs)]
    labels = [{"id": str(i), "faithful": h} for i, (_, h) in enumerate(pairs)]
    pair = agreement(results, labels, {"alignment": "faithful"}).get("alignment")
    assert pair.kind == "binary"
    assert pair.accuracy == pytest.approx(0.7) and pair.kappa == pytest.approx(0.4)


def test_ordinal_labels_read_scores_as_equal_width_bins() -> None:
    scores = [0.1, 0.3, 0.5, 0.7, 0.95, 0.1]  # bins of width 0.2 over levels 1..5
    human = [1, 2, 3, 4, 5, 5]
    results = [{"id": str(i), "coverage": s} for i, s in enumerate(scores)]
    labels = [{"id": str(i), "relevance": h} for i, h in enumerate(human)]
    pair = agreement(results, labels, {"coverage": "relevance"}).get("coverage")
    assert pair.kind == "ordinal" and pair.accuracy == pytest.approx(5 / 6)
    predicted = [1, 2, 3, 4, 5, 1]
    assert pair.kappa == pytest.approx(stats.cohen_kappa(predicted, human))


def test_empty_values_and_unmatched_ids_are_counted() -> None:
    results = [
        {"id": "1", "coverage": 0.2},
        {"id": "2", "coverage": None},  # unscored
        {"id": "3", "coverage": 0.4},
        {"id": "4", "coverage": 0.6},
        {"id": "5", "coverage": 0.8},
        {"id": "only-ours", "coverage": 0.5},
    ]
    labels = [
        {"id": "1", "relevance": 1},
        {"id": "2", "relevance": 2},
        {"id": "3", "relevance": ""},  # not labelled
        {"id": "4", "relevance": 4},
        {"id": "5", "relevance": 5},
        {"id": "only-theirs", "relevance": 3},
    ]
    found = agreement(results, labels, {"coverage": "relevance"})
    pair = found.get("coverage")
    assert (pair.n, pair.metric_empty, pair.label_empty) == (3, 1, 1)
    assert (found.joined, found.results_only, found.labels_only) == (
        5,
        ["only-ours"],
        ["only-theirs"],
    )
    with pytest.raises(ValueError, match="no column 'fluency'"):
        agreement(results, labels, {"coverage": "fluency"})
    with pytest.raises(ValueError, match="'article'"):
        agreement(results, labels, {"coverage": "relevance"}, group_column="article")


def test_an_id_twice_no_labels_or_no_shared_id_is_an_error_not_an_empty_agreement() -> None:
    """As ``compare`` refuses them: a repeated results id (one of its rows would silently win),
    labels with no row, and results and labels sharing no id all raise, never report n=0."""
    results = [{"id": str(i), "coverage": i / 10} for i in range(1, 6)]
    labels = [{"id": str(i), "relevance": i} for i in range(1, 6)]
    assert agreement(results, labels, {"coverage": "relevance"}).joined == 5
    with pytest.raises(ValueError, match="the results hold the id '3' twice"):
        agreement([*results, {"id": "3", "coverage": 0.9}], labels, {"coverage": "relevance"})
    with pytest.raises(ValueError, match="the labels hold no row"):
        agreement(results, [], {"coverage": "relevance"})
    others = [{"id": f"x{i}", "relevance": i} for i in range(1, 6)]
    with pytest.raises(ValueError, match="share no id"):
        agreement(results, others, {"coverage": "relevance"})


# ---------------------------------------------------------------------------------------------
# CLI, on the shipped SummEval sample
# ---------------------------------------------------------------------------------------------


def test_cli_agree_on_summeval_sample(tmp_path: Path) -> None:
    """Results whose ``coverage`` is SummEval's own relevance / 5 (ids = line numbers, as
    ``score`` gives them to a file without an id column) agree perfectly at summary level; the
    labels file is the shipped sample itself, joined by line number."""
    rows = [json.loads(line) for line in SUMMEVAL.read_text().splitlines() if line.strip()]
    results = tmp_path / "dev.results.jsonl"
    with results.open("w") as handle:
        for number, row in enumerate(rows, start=1):
            record = {"id": str(number), "position": number, "status": "ok"}
            record |= {"coverage": row["relevance"] / 5, "coherence": None, "summary": "s"}
            handle.write(json.dumps(record) + "\n")
    out = tmp_path / "agree.json"
    code, text = run_cli(
        "agree",
        results,
        "--labels",
        SUMMEVAL,
        "--map",
        "coverage=relevance,coherence",
        "--group-column",
        "article_id",
        "--json",
        out,
    )
    assert code == 0, text
    assert "coverage=relevance summary 50 spearman +1.000 [+1.000, +1.000]" in text
    assert "800 rows joined by id" in text
    payload = json.loads(out.read_text())
    cov, coh = payload["pairs"]
    assert cov["n"] == 800 and cov["levels"][0]["kendall"]["value"] == 1.0
    assert coh["n"] == 0 and coh["metric_empty"] == 800


def test_cli_agree_reads_csv_labels_and_refuses_bad_usage(tmp_path: Path) -> None:
    results = tmp_path / "r.results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"id": f"x{i}", "position": i, "status": "ok", "coverage": i / 10}) + "\n"
            for i in range(1, 7)
        )
    )
    labels = tmp_path / "human.csv"
    with labels.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "good"])
        for i in range(1, 7):
            writer.writerow([f"x{i}", "yes" if i > 3 else "no"])
    code, text = run_cli(
        "agree", results, "--labels", labels, "--map", "coverage=good", "--id-column", "item"
    )
    assert code == 0, text
    assert "binary labels: accuracy 0.833, Cohen's kappa 0.667" in text  # x5 .. x6 pass, x4 not
    code, text = run_cli("agree", results, "--labels", labels, "--map", "coverage=bad")
    assert code == 2 and "no column 'bad'" in text
    code, text = run_cli(
        "agree", results, "--labels", labels, "--map", "coverage=good", "--json", labels
    )
    assert code == 2 and "is an input file" in text


def test_cli_agree_refuses_an_id_twice_empty_labels_and_no_shared_id(tmp_path: Path) -> None:
    """Each of these exited 0 (a table over the rows that happened to join, or over none)."""
    lines = [
        json.dumps({"id": f"x{i}", "position": i, "status": "ok", "coverage": i / 10}) + "\n"
        for i in range(1, 7)
    ]
    results = tmp_path / "r.results.jsonl"
    results.write_text("".join(lines))
    twice = tmp_path / "twice.results.jsonl"
    twice.write_text("".join(lines) + lines[1])
    labels = tmp_path / "human.csv"
    labels.write_text("id,rel\n" + "".join(f"x{i},{i}\n" for i in range(1, 7)))
    assert run_cli("agree", results, "--labels", labels, "--map", "coverage=rel")[0] == 0

    code, text = run_cli("agree", twice, "--labels", labels, "--map", "coverage=rel")
    assert code == 2 and "the results hold the id 'x2' twice; ids must be unique" in text
    for empty, content in (("empty.csv", ""), ("header.csv", "id,rel\n"), ("empty.jsonl", "")):
        path = tmp_path / empty
        path.write_text(content)
        code, text = run_cli("agree", results, "--labels", path, "--map", "coverage=rel")
        assert code == 2 and f"the labels {empty} hold no row" in text, text
    others = tmp_path / "others.csv"
    others.write_text("id,rel\n" + "".join(f"y{i},{i}\n" for i in range(1, 7)))
    code, text = run_cli("agree", results, "--labels", others, "--map", "coverage=rel")
    assert code == 2 and "the results and the labels share no id" in text
