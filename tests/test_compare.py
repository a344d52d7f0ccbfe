"""``shared.compare`` and ``summary-eval compare``: known answers for the paired statistics.

Identical runs give delta 0, an interval holding 0 and p = 1 exactly; a run shifted by +0.1 on
every row gives delta +0.1 with a zero-width interval; a seed reproduces the interval; unpaired
ids and empty sub-scores are counted as documented; the CI gate exits 1 / 0 on constructed files.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from shared import Comparison, SummaryEvaluation, UnpairedError, compare
from shared.analysis import stats
from shared.analysis.comparison import Gate
from shared.cli.app import app
from shared.runs.results import ResultsWriter, columns, read_results, score_keys
from shared.testing import stub_server

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "summaries.jsonl"

KEYS = score_keys()


def make_rows(count: int = 40, seed: int = 3, shift: float = 0.0) -> list[dict[str, Any]]:
    """Result rows as ``score`` writes them (every sub-score set, status ok, summary text)."""
    rng = np.random.default_rng(seed)
    values = np.round(rng.random((count, len(KEYS))) * 0.8, 4)
    rows = []
    for i in range(count):
        row: dict[str, Any] = dict.fromkeys(columns(KEYS))
        row.update(id=f"r{i}", position=i + 1, status="ok", summary=f"summary {i}", evidence={})
        row.update({k: float(v) + shift for k, v in zip(KEYS, values[i], strict=True)})
        rows.append(row)
    return rows


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    ResultsWriter(path, KEYS).rewrite(rows)
    return path


def run_cli(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())


# ---------------------------------------------------------------------------------------------
# Known answers
# ---------------------------------------------------------------------------------------------


def test_identical_files_give_delta_zero_interval_holding_zero_and_p_one(tmp_path: Path) -> None:
    rows = make_rows()
    a = write(tmp_path / "a.results.jsonl", rows)
    b = write(tmp_path / "b.results.jsonl", rows)
    result = compare(a, b)
    assert result.paired == 40 and result.names[: len(KEYS)] == KEYS
    for sub in result.sub_scores:
        assert sub.n == 40
        assert sub.delta == 0.0
        assert sub.low is not None and sub.high is not None and sub.low <= 0.0 <= sub.high
        assert sub.p == 1.0  # (10,000 + 1) / (10,000 + 1): every permuted delta is 0
        assert (sub.wins, sub.ties, sub.losses) == (0, 40, 0)
        assert sub.verdict.startswith(f"No clear difference on {sub.name}: +0.000")


def test_shift_of_one_tenth_gives_exact_delta_and_zero_width_interval(tmp_path: Path) -> None:
    a = write(tmp_path / "a.results.csv", make_rows())
    b = write(tmp_path / "b.results.csv", make_rows(shift=0.1))
    result = compare(a, b)
    for sub in result.sub_scores:
        assert sub.delta == 0.1
        assert sub.low == 0.1 and sub.high == 0.1
        assert (sub.wins, sub.ties, sub.losses) == (40, 0, 0)
        # only the all-same-sign flips reach |0.1|: 2 of 2^40 assignments, so p = 1 / 10,001
        assert sub.p == pytest.approx(1 / 10_001)
        assert sub.verdict == f"B better on {sub.name}: +0.100 [+0.100, +0.100], p<0.001 (n=40)"
    worse = compare(b, a).get("coverage")
    assert worse.delta == -0.1 and worse.verdict.startswith("B worse on coverage: -0.100")


def noisy_pair() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    a = make_rows(60)
    rng = np.random.default_rng(11)
    b = [{**r, **{k: r[k] + float(rng.normal(0.02, 0.1)) for k in KEYS}} for r in a]
    return a, b


def test_seed_reproduces_interval_and_p_value() -> None:
    a, b = noisy_pair()
    first = compare(a, b, seed=7).get("coverage")
    again = compare(a, b, seed=7).get("coverage")
    other = compare(a, b, seed=8).get("coverage")
    assert (first.low, first.high, first.p) == (again.low, again.high, again.p)
    assert (first.low, first.high, first.p) != (other.low, other.high, other.p)
    assert first.delta == other.delta  # the point estimate does not depend on the seed
    assert first.low is not None and first.high is not None
    assert first.low < first.delta < first.high


def test_randomization_p_matches_the_exact_share_on_three_rows() -> None:
    """Three rows, each B - A = +0.1: of the 8 sign assignments only the 2 where all signs agree
    reach |mean| = 0.1, so p tends to 2/8 (sampling error of 10,000 trials: sd 0.0043)."""
    a = [{"id": str(i), "coverage": 0.5} for i in range(3)]
    b = [{"id": str(i), "coverage": 0.6} for i in range(3)]
    sub = compare(a, b, keys=["coverage"]).get("coverage")
    assert abs(sub.p - 0.25) < 0.02
    # and the interval: every resample's mean is 0.1
    assert (sub.low, sub.high) == (0.1, 0.1)


def test_bootstrap_and_randomization_match_a_plain_loop() -> None:
    """The vectorised kernels equal the textbook loop on the same random draws."""
    d = np.array([[0.1, -0.2], [0.3, 0.0], [-0.1, 0.5], [0.2, 0.2], [0.0, -0.4]])
    means = stats.bootstrap_means(d, 50, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 5, size=(50, 5))
    expected = np.array([[d[row, j].mean() for j in range(2)] for row in idx])
    np.testing.assert_allclose(means, expected)

    sums = stats.randomization_sums(d, 20, np.random.default_rng(1))
    raw = np.random.default_rng(1).integers(0, 256, size=(20, 1), dtype=np.uint8)
    for t in range(20):
        bits = [(int(raw[t, 0]) >> (7 - i)) & 1 for i in range(5)]  # numpy's big-endian order
        signs = [(-1.0 if bit else 1.0) for bit in bits]
        np.testing.assert_allclose(
            sums[t], [sum(s * d[i, j] for i, s in enumerate(signs)) for j in range(2)]
        )


def test_p_value_convention() -> None:
    assert stats.randomization_p(0.1, np.array([0.0, 0.05, -0.1, 0.2])) == 3 / 5
    assert stats.randomization_p(0.0, np.zeros(9)) == 1.0
    assert stats.randomization_p(0.5, np.zeros(9)) == 1 / 10


# ---------------------------------------------------------------------------------------------
# Pairing and empty values
# ---------------------------------------------------------------------------------------------


def test_unpaired_ids_are_an_error_listing_them_unless_allowed() -> None:
    a = make_rows(10)
    b = [r for r in make_rows(10) if r["id"] not in ("r3", "r4")] + [
        {**make_rows(1)[0], "id": "new"}
    ]
    with pytest.raises(UnpairedError) as info:
        compare(a, b)
    assert info.value.only_a == ["r3", "r4"] and info.value.only_b == ["new"]
    assert "'r3', 'r4'" in str(info.value) and "'new'" in str(info.value)
    result = compare(a, b, allow_unpaired=True)
    assert result.paired == 8
    assert (result.only_a, result.only_b) == (["r3", "r4"], ["new"])
    assert result.get("score").n == 8


def test_empty_sub_scores_are_left_out_pairwise_and_counted() -> None:
    a = make_rows(10)
    b = make_rows(10, shift=0.1)
    a[0]["coverage"] = None  # A unscored on coverage
    b[1]["coverage"] = None  # B unscored on coverage
    a[2]["coverage"] = b[2]["coverage"] = None  # both
    a[3].update(status="unscored", score=None, alignment=None)  # judge failed: dims remain
    b[4].update(status="bad_input", **dict.fromkeys(KEYS))
    result = compare(a, b)
    cov = result.get("coverage")
    assert (cov.n, cov.unscored_a, cov.unscored_b, cov.unscored_both) == (6, 1, 2, 1)
    score = result.get("score")
    assert (score.n, score.unscored_a, score.unscored_b, score.unscored_both) == (8, 1, 1, 0)
    density = result.get("density")
    assert (density.n, density.unscored_b) == (9, 1)
    for sub in (cov, score, density):
        assert sub.delta == 0.1 and sub.wins == sub.n


def test_no_judge_columns_are_reported_not_compared() -> None:
    a = [{"id": str(i), "score": None, "density": 0.1 * i} for i in range(5)]
    result = compare(a, a)
    score = result.get("score")
    assert score.n == 0 and score.delta is None and score.unscored_both == 5
    assert score.verdict == "score: not compared (no row scored on both sides)"
    assert score.verdict not in result.verdicts()


def test_summary_evaluations_and_dict_rows_pair_by_position_or_key() -> None:
    def ev(cov: float) -> SummaryEvaluation:
        return SummaryEvaluation(score=cov, alignment=1.0, coverage=cov)

    in_list = compare([ev(0.2), ev(0.4)], [ev(0.3), ev(0.5)])
    assert in_list.get("coverage").delta == 0.1 and in_list.paired == 2
    by_key = compare({"x": ev(0.2), "y": ev(0.4)}, {"y": ev(0.4), "x": ev(0.2)})
    assert by_key.get("coverage").delta == 0.0
    with pytest.raises(ValueError, match="twice"):
        compare([{"id": "1", "score": 0.1}, {"id": "1", "score": 0.2}], [{"id": "1"}])


def test_worst_regressions_rank_by_score_delta_with_both_summaries() -> None:
    a = make_rows(6)
    b = [dict(r) for r in a]
    b[2]["score"] = a[2]["score"] - 0.3
    b[2]["summary"] = "worse summary"
    b[5]["score"] = a[5]["score"] - 0.1
    worst = compare(a, b).worst_regressions(5)
    assert [r.id for r in worst] == ["r2", "r5"]
    assert worst[0].deltas["score"] == pytest.approx(-0.3)
    assert (worst[0].summary_a, worst[0].summary_b) == ("summary 2", "worse summary")


def test_gate_parsing_and_decision() -> None:
    assert Gate.parse("coverage:0.02") == Gate("coverage", 0.02)
    assert Gate.parse("coverage") == Gate("coverage", 0.0)
    for bad in (":0.1", "coverage:x", "coverage:-1"):
        with pytest.raises(ValueError):
            Gate.parse(bad)
    a = make_rows(30)
    worse = compare(a, make_rows(30, shift=-0.05))
    assert not Gate("coverage", 0.02).check(worse)[0]
    assert Gate("coverage", 0.06).check(worse)[0]  # worse, but within the margin
    assert Gate("coverage", 0.0).check(compare(a, a))[0]


def test_comparison_to_dict_is_json() -> None:
    result = compare(make_rows(5), make_rows(5, shift=0.1))
    payload = json.loads(json.dumps(result.to_dict(rows=True)))
    assert payload["paired"] == 5 and len(payload["rows"]) == 5
    assert isinstance(result, Comparison)
    assert payload["sub_scores"][0]["delta"] == 0.1


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def test_cli_fail_if_worse_exits_one_on_a_regression_and_zero_within_margin(
    tmp_path: Path,
) -> None:
    a = write(tmp_path / "a.results.jsonl", make_rows(30))
    worse = write(tmp_path / "worse.results.jsonl", make_rows(30, shift=-0.05))
    slightly = write(tmp_path / "slightly.results.jsonl", make_rows(30, shift=-0.01))

    code, text = run_cli("compare", a, worse, "--fail-if-worse", "coverage:0.02")
    assert code == 1, text
    assert "gate failed coverage: B worse by 0.050" in text
    assert "B worse on coverage: -0.050 [-0.050, -0.050]" in text

    code, text = run_cli("compare", a, slightly, "--fail-if-worse", "coverage:0.02")
    assert code == 0, text
    assert "gate passed coverage" in text

    code, text = run_cli("compare", a, a, "--fail-if-worse", "coverage", "--fail-if-worse", "score")
    assert code == 0, text

    code, text = run_cli("compare", a, worse, "--fail-if-worse", "nonsense:0.1")
    assert code == 2 and "no sub-score 'nonsense'" in text


def test_cli_unpaired_ids_exit_two_unless_allowed(tmp_path: Path) -> None:
    a = write(tmp_path / "a.results.jsonl", make_rows(5))
    b = write(tmp_path / "b.results.jsonl", make_rows(4))
    code, text = run_cli("compare", a, b)
    assert code == 2 and "1 ('r4') only in A" in text and "--allow-unpaired" in text
    code, text = run_cli("compare", a, b, "--allow-unpaired")
    assert code == 0 and "4 paired rows" in text and "1 only in A" in text


def test_cli_writes_html_and_json_and_never_overwrites_an_input(tmp_path: Path) -> None:
    rows_a = make_rows(12)
    rows_b = make_rows(12, shift=0.05)
    rows_b[3]["score"] = rows_a[3]["score"] - 0.4
    rows_b[3]["summary"] = "<b>a much worse summary</b>"
    rows_b[7]["coverage"] = None
    a = write(tmp_path / "a.results.jsonl", rows_a)
    b = write(tmp_path / "b.results.csv", rows_b)
    before = a.read_bytes()

    code, text = run_cli("compare", a, b, "-o", a)
    assert code == 2 and "is an input file" in text
    code, text = run_cli("compare", a, b, "--json", b)
    assert code == 2 and a.read_bytes() == before and read_results(b)

    html, out = tmp_path / "compare.html", tmp_path / "compare.json"
    code, text = run_cli("compare", a, b, "-o", html, "--json", out, "--seed", "5")
    assert code == 0, text
    page = html.read_text()
    assert 'id="forest-plot"' in page and "Plotly.newPlot" in page
    assert 'id="worst-regressions"' in page
    assert "r3" in page and "summary 3" in page
    assert "&lt;b&gt;a much worse summary&lt;/b&gt;" in page  # escaped, side by side with A's
    payload = json.loads(out.read_text())
    assert payload["seed"] == 5 and payload["paired"] == 12
    cov = next(s for s in payload["sub_scores"] if s["name"] == "coverage")
    assert cov["n"] == 11 and cov["unscored_b"] == 1
    assert "coverage: left out 0 rows empty in A only, 1 in B only, 0 in both" in text


def test_cli_refuses_a_file_that_is_not_a_results_file(tmp_path: Path) -> None:
    a = write(tmp_path / "a.results.jsonl", make_rows(3))
    scored_input = tmp_path / "input.jsonl"
    scored_input.write_text(json.dumps({"id": "r0", "source": "s", "summary": "t"}) + "\n")
    code, text = run_cli("compare", a, scored_input)
    assert code == 2 and "no result rows in" in text
    code, text = run_cli("compare", a, tmp_path / "missing.results.jsonl")
    assert code == 2 and "not found" in text
    code, text = run_cli("compare", a, tmp_path / "b.txt")
    assert code == 2


def test_the_same_run_as_jsonl_and_as_csv_gives_zero_deltas_on_every_sub_score(
    tmp_path: Path,
) -> None:
    """One run's results read from its CSV and from JSONL (as ``score`` writes it, and as a csv
    module turns the CSV into JSONL: every value text) are the same numbers: every sub-score is
    compared on every row with delta 0. The JSONL reader kept text cells as text, which compare
    skips, so the converted file gave null deltas on every sub-score against the CSV."""
    as_csv, as_jsonl = tmp_path / "run.csv", tmp_path / "run.jsonl"
    with stub_server() as url:
        for out in (as_csv, as_jsonl):
            code, text = run_cli(
                "score", EXAMPLES, "--base-url", url, "--model", "stub", "--no-cache",
                "-o", out, "--no-report",
            )  # fmt: skip
            assert code == 0, text
    converted = tmp_path / "converted.jsonl"
    with as_csv.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    converted.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert records and isinstance(records[0]["coverage"], str)

    rows = len(records)
    for jsonl in (as_jsonl, converted):
        for first, second in ((jsonl, as_csv), (as_csv, jsonl)):
            result = compare(first, second)
            assert result.paired == rows
            for name in KEYS:
                sub = result.get(name)
                assert (sub.n, sub.delta, sub.mean_a) == (rows, 0.0, sub.mean_b), (jsonl, name)
        out = tmp_path / f"{jsonl.stem}.compare.json"
        code, text = run_cli("compare", jsonl, as_csv, "--json", out)
        assert code == 0, text
        payload = json.loads(out.read_text())
        assert [(s["name"], s["delta"]) for s in payload["sub_scores"]] == [(k, 0.0) for k in KEYS]
        assert all(set(r["deltas"].values()) == {0.0} for r in payload["rows"])
