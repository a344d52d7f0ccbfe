"""Golden tables for the scoring math, zero and empty cases included."""

import math

import pytest

from shared.core.scoring import alignment_ratio, combine_scores, f_beta, weighted_coverage

F_BETA_TABLE = [
    # precision, recall, beta, expected
    (1.0, 1.0, 1.0, 1.0),
    (0.0, 0.0, 1.0, 0.0),  # both zero: defined as 0, not a ZeroDivisionError
    (1.0, 0.0, 1.0, 0.0),
    (0.0, 1.0, 1.0, 0.0),
    (0.5, 0.5, 1.0, 0.5),
    (0.8, 0.6, 1.0, 2 * 0.8 * 0.6 / 1.4),  # 0.685714...
    (0.9, 0.3, 1.0, 0.45),
    (0.9, 0.3, 2.0, 5 * 0.9 * 0.3 / (4 * 0.9 + 0.3)),  # recall-heavy: 0.346153...
    (0.9, 0.3, 0.5, 1.25 * 0.9 * 0.3 / (0.25 * 0.9 + 0.3)),  # precision-heavy: 0.642857...
]


@pytest.mark.parametrize(("precision", "recall", "beta", "expected"), F_BETA_TABLE)
def test_f_beta_golden(precision: float, recall: float, beta: float, expected: float) -> None:
    assert f_beta(precision, recall, beta) == pytest.approx(expected, abs=1e-12)


def test_f_beta_pinned_decimals() -> None:
    assert round(f_beta(0.8, 0.6), 6) == 0.685714
    assert round(f_beta(0.9, 0.3, 2.0), 6) == 0.346154
    assert round(f_beta(0.9, 0.3, 0.5), 6) == 0.642857


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan, "0.5"])
def test_f_beta_rejects_out_of_range(bad: object) -> None:
    with pytest.raises(ValueError):
        f_beta(bad, 0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("beta", [0, -1, math.inf, math.nan])
def test_f_beta_rejects_bad_beta(beta: float) -> None:
    with pytest.raises(ValueError):
        f_beta(0.5, 0.5, beta)


COVERAGE_TABLE = [
    # importances, grades, expected
    ([1], [5], 1.0),
    ([1], [0], 0.0),
    ([5, 1], [5, 0], 25 / 30),  # the important question answered: 0.8333
    ([5, 1], [0, 5], 5 / 30),  # only the minor one: 0.1667 (unweighted would say 0.5)
    ([3, 3, 3], [5, 4, 3], 36 / 45),
    ([5, 4, 3, 2, 1], [5, 5, 5, 5, 5], 1.0),
    ([5, 4, 3, 2, 1], [0, 0, 0, 0, 0], 0.0),
    ([2, 4], [3, 1], (6 + 4) / 30),
]


@pytest.mark.parametrize(("importances", "grades", "expected"), COVERAGE_TABLE)
def test_weighted_coverage_golden(
    importances: list[int], grades: list[int], expected: float
) -> None:
    assert weighted_coverage(importances, grades) == pytest.approx(expected, abs=1e-12)


def test_weighted_coverage_undefined_cases() -> None:
    with pytest.raises(ValueError, match="without questions"):
        weighted_coverage([], [])  # never a silent 1.0 (a known peer bug)
    with pytest.raises(ValueError, match="grades"):
        weighted_coverage([1, 2], [3])
    with pytest.raises(ValueError, match="importance"):
        weighted_coverage([0], [3])
    with pytest.raises(ValueError, match="grade"):
        weighted_coverage([1], [6])


ALIGNMENT_TABLE = [(0, 0, 0.0), (3, 3, 1.0), (0, 4, 0.0), (2, 3, 2 / 3), (9, 10, 0.9)]


@pytest.mark.parametrize(("supported", "claims", "expected"), ALIGNMENT_TABLE)
def test_alignment_golden(supported: int, claims: int, expected: float) -> None:
    assert alignment_ratio(supported, claims) == pytest.approx(expected)


def test_alignment_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        alignment_ratio(4, 3)
    with pytest.raises(ValueError):
        alignment_ratio(-1, 3)


def test_combine_min_matches_deepeval_rule() -> None:
    assert combine_scores(0.9, 0.3, combine="min") == 0.3
    assert combine_scores(0.9, 0.3) == pytest.approx(0.45)
    with pytest.raises(ValueError, match="combine"):
        combine_scores(0.9, 0.3, combine="mean")  # type: ignore[arg-type]
