"""Is summarizer B better than A? Paired comparison of two sets of results, sub-score by sub-score.

:func:`compare` pairs the rows of two runs by id and, for every sub-score, reports mean A, mean
B, the mean difference (B - A), a 95 % paired bootstrap interval, a paired approximate
randomization p-value, wins / ties / losses and a one-line verdict. Inputs are results files
written by ``summary-eval score`` (JSONL or CSV), lists of row dicts, or SummaryEvaluations.
Beside the statistics, ``Comparison.facts`` holds the fact-level diff
(:mod:`shared.analysis.factdiff`): per id, the questions B answers worse and the unsupported
sentences or claims only B has.
The statistics live in :mod:`shared.analysis.stats`; the conventions are in docs/COMPARE.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.subscores import SUB_SCORE_NAMES
from ..evaluation.result import NO_JUDGE, SummaryEvaluation
from ..runs.results import STATUS_OK, STATUS_UNSCORED
from . import stats
from .factdiff import FactDiff, fact_diff
from .lookup import find

DEFAULT_RESAMPLES = 1_000
DEFAULT_TRIALS = 10_000
MAX_RESAMPLES = 100_000
"""Most bootstrap resamples (and randomization trials) one call runs: beyond, the interval does
not move and the run only takes longer (``--resamples 1000000000`` ran on and on)."""
DEFAULT_SEED = 12345
SUB_SCORES = SUB_SCORE_NAMES  # the old name of SUB_SCORE_NAMES here, kept for one release
"""The sub-scores of the core, in its order; other numeric columns of a results file follow."""

_NOT_SCORES = {"position", *(f"{name}_sd" for name in SUB_SCORE_NAMES)}
"""Numeric columns that are not scores of the summary: the row's position, and the spread over
judge samples of a ``samples=k`` run (``<sub-score>_sd``: it describes the judge; the means are
compared). Pass ``keys=`` to compare them anyway."""

Results = (
    str
    | Path
    | Sequence[Mapping[str, Any]]
    | Sequence[SummaryEvaluation]
    | Mapping[str, SummaryEvaluation]
)


@dataclass
class IdJoin:
    """Two inputs joined by id: the ids both hold, in the first's order, and the ids each holds
    alone, in its own order (:func:`join_ids`)."""

    both: list[str]
    only_first: list[str]
    only_second: list[str]


def join_ids(first: Mapping[str, Any], second: Mapping[str, Any]) -> IdJoin:
    """The join of two inputs' rows keyed by id (what ``compare`` and ``agreement`` pair on)."""
    return IdJoin(
        both=[i for i in first if i in second],
        only_first=[i for i in first if i not in second],
        only_second=[i for i in second if i not in first],
    )


class UnpairedError(ValueError):
    """The two inputs do not hold the same ids (and unpaired rows were not allowed)."""

    def __init__(self, only_a: list[str], only_b: list[str]) -> None:
        self.only_a = only_a
        self.only_b = only_b
        super().__init__(
            f"the inputs do not hold the same ids: {_id_list(only_a)} only in A, "
            f"{_id_list(only_b)} only in B (allow_unpaired / --allow-unpaired compares the "
            "ids they share)"
        )


def _id_list(ids: list[str], shown: int = 10) -> str:
    head = ", ".join(repr(i) for i in ids[:shown])
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return f"{len(ids)} ({head}{more})" if ids else "0"


@dataclass
class SubScoreComparison:
    """One sub-score of :func:`compare`. ``delta`` = mean B - mean A over the rows scored on
    both sides (``n``); the interval is the paired bootstrap's; ``p`` the randomization test's.
    Rows left out: unscored (empty) in A only, in B only, in both."""

    name: str
    n: int
    mean_a: float | None = None
    mean_b: float | None = None
    delta: float | None = None
    low: float | None = None
    high: float | None = None
    p: float | None = None
    wins: int = 0
    ties: int = 0
    losses: int = 0
    unscored_a: int = 0
    unscored_b: int = 0
    unscored_both: int = 0
    verdict: str = ""

    @property
    def significant(self) -> bool:
        """The interval excludes zero."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


@dataclass
class RowDelta:
    """One paired row: the per-sub-score differences and both summaries (when known)."""

    id: str
    deltas: dict[str, float | None]
    summary_a: str | None = None
    summary_b: str | None = None


@dataclass
class Comparison:
    """Everything :func:`compare` found; :meth:`to_dict` is what ``--json`` writes."""

    join: IdJoin
    """The paired ids (A's order) and the ids only A or only B holds."""
    sub_scores: list[SubScoreComparison]
    resamples: int
    trials: int
    seed: int | None
    level: float
    rows: list[RowDelta] = field(default_factory=list)
    signatures_a: list[str] = field(default_factory=list)
    signatures_b: list[str] = field(default_factory=list)
    facts: FactDiff = field(default_factory=FactDiff)
    """The fact-level diff (:mod:`shared.analysis.factdiff`): per paired id, the questions B
    answers worse and the unsupported sentences or claims only B has."""

    def get(self, name: str) -> SubScoreComparison:
        missing = f"no sub-score {name!r} (have: {', '.join(self.names)})"
        return find(self.sub_scores, lambda sub: sub.name == name, missing)

    # the join under the names the JSON and the callers read
    paired = property(lambda self: len(self.join.both), doc="Rows paired by id.")
    only_a = property(lambda self: self.join.only_first)
    only_b = property(lambda self: self.join.only_second)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sub_scores]

    def verdicts(self) -> list[str]:
        return [s.verdict for s in self.sub_scores if s.n]

    def worst_regressions(self, count: int = 10, key: str | None = None) -> list[RowDelta]:
        """The ``count`` rows where B lost most: by ``key``'s delta, by default the headline
        ``score`` when it was compared, else the mean of the row's sub-score deltas."""
        if key is None:
            key = "score" if any(s.name == "score" and s.n for s in self.sub_scores) else None

        def value(row: RowDelta) -> float | None:
            if key is not None:
                return row.deltas.get(key)
            present = [v for v in row.deltas.values() if v is not None]
            return sum(present) / len(present) if present else None

        ranked = [(v, r) for r in self.rows if (v := value(r)) is not None and v < 0]
        ranked.sort(key=lambda item: item[0])
        return [r for _, r in ranked[:count]]

    def to_dict(self, rows: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "paired": self.paired,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "resamples": self.resamples,
            "trials": self.trials,
            "seed": self.seed,
            "level": self.level,
            "signatures_a": self.signatures_a,
            "signatures_b": self.signatures_b,
            "sub_scores": [asdict(s) for s in self.sub_scores],
            "facts": self.facts.to_dict(),
        }
        if rows:
            out["rows"] = [asdict(r) for r in self.rows]
        return out


# ---------------------------------------------------------------------------------------------
# Reading the inputs
# ---------------------------------------------------------------------------------------------


def load_rows(results: Results) -> list[dict[str, Any]]:
    """Rows as dicts with an ``id``: a results file (read as ``summary-eval report`` reads it),
    row dicts (id defaults to the 1-based position, as in ``score``), SummaryEvaluations in a
    list (id = 1-based position) or in a mapping (id = key)."""
    if isinstance(results, str | Path):
        from ..runs.results import detect_result_format, read_results

        path = Path(results)
        detect_result_format(path)
        if not path.is_file():
            raise FileNotFoundError(f"results file not found: {path}")
        return read_results(path)
    if isinstance(results, Mapping):
        return [_evaluation_row(str(k), ev) for k, ev in results.items()]
    rows = []
    for position, item in enumerate(results, start=1):
        if isinstance(item, SummaryEvaluation):
            rows.append(_evaluation_row(str(position), item))
        elif isinstance(item, Mapping):
            row = dict(item)
            row["id"] = str(row["id"]) if row.get("id") not in (None, "") else str(position)
            rows.append(row)
        else:
            raise TypeError(f"row {position}: expected a dict or SummaryEvaluation, got {item!r}")
    return rows


def _evaluation_row(row_id: str, ev: SummaryEvaluation) -> dict[str, Any]:
    """The row of a results file, as far as :func:`compare` reads it: sub-scores, signature,
    and the evidence the fact-level diff reads (an evaluation made without a judge has none)."""
    evidence = ev.model_dump(mode="json", include={"questions", "claims"})
    unscored = ev.error is not None and ev.error != NO_JUDGE
    return {
        "id": row_id,
        **ev.sub_scores(),
        "signature": ev.signature,
        "status": STATUS_UNSCORED if unscored else STATUS_OK,
        "evidence": evidence,
    }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def score_names(*row_sets: Iterable[Mapping[str, Any]]) -> list[str]:
    """The core's sub-scores, then any other numeric column found in the rows."""
    names = list(SUB_SCORE_NAMES)
    for rows in row_sets:
        for row in rows:
            for key, value in row.items():
                if key not in names and key not in _NOT_SCORES and _number(value) is not None:
                    names.append(key)
    return names


# ---------------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------------


def compare(
    results_a: Results,
    results_b: Results,
    *,
    keys: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    trials: int = DEFAULT_TRIALS,
    seed: int | None = DEFAULT_SEED,
    level: float = 0.95,
    allow_unpaired: bool = False,
) -> Comparison:
    """Compare run B against run A, paired by row id, on every sub-score (or ``keys``).

    A row empty (unscored, or not computed) on either side is left out of that sub-score only,
    and counted. Ids present on one side only raise :class:`UnpairedError` unless
    ``allow_unpaired``, which compares the shared ids and lists the others. The same ``seed``
    gives the same interval and p-value. ``facts`` of the result is the fact-level diff of the
    paired rows (from the evidence results files carry; a row without it is listed as not
    compared).
    """
    if not (1 <= resamples <= MAX_RESAMPLES and 1 <= trials <= MAX_RESAMPLES):
        raise ValueError(f"resamples and trials must be from 1 to {MAX_RESAMPLES:,}")
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    rows_a, rows_b = load_rows(results_a), load_rows(results_b)
    by_a = _by_id(rows_a, "A")
    by_b = _by_id(rows_b, "B")
    join = join_ids(by_a, by_b)
    if (join.only_first or join.only_second) and not allow_unpaired:
        raise UnpairedError(join.only_first, join.only_second)
    ids = join.both
    names = list(keys) if keys is not None else score_names(rows_a, rows_b)

    a = np.array([[_nan(by_a[i].get(k)) for k in names] for i in ids], dtype=float)
    b = np.array([[_nan(by_b[i].get(k)) for k in names] for i in ids], dtype=float)
    a = a.reshape(len(ids), len(names))
    b = b.reshape(len(ids), len(names))
    valid = np.isfinite(a) & np.isfinite(b)
    diffs = np.where(valid, np.round(b - a, stats.DECIMALS), 0.0)

    rng = np.random.default_rng(seed)
    low, high = _bootstrap(diffs, valid, resamples, rng, level)
    permuted = stats.randomization_sums(diffs, trials, rng) if ids and names else None

    subs = []
    for j, name in enumerate(names):
        ok = valid[:, j]
        n = int(ok.sum())
        sub = SubScoreComparison(
            name=name,
            n=n,
            unscored_a=int((~np.isfinite(a[:, j]) & np.isfinite(b[:, j])).sum()),
            unscored_b=int((np.isfinite(a[:, j]) & ~np.isfinite(b[:, j])).sum()),
            unscored_both=int((~np.isfinite(a[:, j]) & ~np.isfinite(b[:, j])).sum()),
        )
        if n:
            d = diffs[ok, j]
            observed = float(d.sum() / n)
            sub.mean_a = stats.rounded(float(a[ok, j].mean()))
            sub.mean_b = stats.rounded(float(b[ok, j].mean()))
            sub.delta = stats.rounded(observed)
            sub.low = stats.rounded(low[j])
            sub.high = stats.rounded(high[j])
            assert permuted is not None
            sub.p = stats.randomization_p(observed, permuted[:, j] / n)
            sub.wins = int((d > 0).sum())
            sub.ties = int((d == 0).sum())
            sub.losses = int((d < 0).sum())
        sub.verdict = verdict(sub)
        subs.append(sub)

    row_deltas = [
        RowDelta(
            id=i,
            deltas={k: (float(diffs[r, j]) if valid[r, j] else None) for j, k in enumerate(names)},
            summary_a=_text(by_a[i].get("summary")),
            summary_b=_text(by_b[i].get("summary")),
        )
        for r, i in enumerate(ids)
    ]
    return Comparison(
        join=join,
        sub_scores=subs,
        resamples=resamples,
        trials=trials,
        seed=seed,
        level=level,
        rows=row_deltas,
        signatures_a=_signatures(rows_a),
        signatures_b=_signatures(rows_b),
        facts=fact_diff(ids, by_a, by_b),
    )


def _by_id(rows: list[dict[str, Any]], side: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        row_id = str(row.get("id"))
        if row_id in out:
            raise ValueError(f"{side} holds the id {row_id!r} twice; ids must be unique")
        out[row_id] = row
    return out


def _nan(value: Any) -> float:
    number = _number(value)
    return math.nan if number is None else number


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _signatures(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({s for r in rows if isinstance(s := r.get("signature"), str) and s})


def _bootstrap(
    diffs: np.ndarray,
    valid: np.ndarray,
    resamples: int,
    rng: np.random.Generator,
    level: float,
) -> tuple[list[float], list[float]]:
    """Per column, the percentile interval of bootstrap means over that column's own valid rows.
    Columns with the same valid rows (the usual case) share one set of resamples."""
    cols = diffs.shape[1]
    low = [math.nan] * cols
    high = [math.nan] * cols
    groups: dict[bytes, list[int]] = {}
    for j in range(cols):
        if valid[:, j].any():
            groups.setdefault(np.packbits(valid[:, j]).tobytes(), []).append(j)
    for members in groups.values():
        rows = valid[:, members[0]]
        means = stats.bootstrap_means(diffs[np.ix_(rows, members)], resamples, rng)
        for k, j in enumerate(members):
            low[j], high[j] = stats.percentile_interval(means[:, k], level)
    return low, high


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def verdict(sub: SubScoreComparison) -> str:
    """ "B better on coverage: +0.041 [+0.018, +0.066], p=0.002" (the interval decides better /
    worse / no clear difference)."""
    if not sub.n:
        return f"{sub.name}: not compared (no row scored on both sides)"
    assert sub.delta is not None and sub.low is not None and sub.high is not None
    assert sub.p is not None
    numbers = f"{_signed(sub.delta)} [{_signed(sub.low)}, {_signed(sub.high)}], {format_p(sub.p)}"
    if sub.low > 0:
        head = f"B better on {sub.name}"
    elif sub.high < 0:
        head = f"B worse on {sub.name}"
    else:
        head = f"No clear difference on {sub.name}"
    return f"{head}: {numbers} (n={sub.n})"


# ---------------------------------------------------------------------------------------------
# The CI gate
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gate:
    """``--fail-if-worse name:margin``: fail when B is worse than A on ``name`` by more than
    ``margin`` (delta < -margin) and the interval excludes zero (high < 0)."""

    name: str
    margin: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Gate:
        name, _, margin = text.partition(":")
        name = name.strip()
        if not name:
            raise ValueError(f"--fail-if-worse {text!r}: expected NAME or NAME:MARGIN")
        try:
            value = float(margin) if margin.strip() else 0.0
        except ValueError:
            raise ValueError(
                f"--fail-if-worse {text!r}: margin {margin!r} is not a number"
            ) from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"--fail-if-worse {text!r}: margin must be a number >= 0")
        return cls(name, value)

    def check(self, result: Comparison) -> tuple[bool, str]:
        """(passed, why). A sub-score with no row scored on both sides cannot pass."""
        sub = result.get(self.name)
        if not sub.n or sub.delta is None or sub.high is None:
            return False, f"{self.name}: cannot check, no row scored on both sides"
        worse = sub.delta < -self.margin and sub.high < 0
        if worse:
            return False, (
                f"{self.name}: B worse by {-sub.delta:.3f} (> margin {self.margin:g}), "
                f"interval [{_signed(sub.low or 0.0)}, {_signed(sub.high)}] excludes 0"
            )
        return True, f"{self.name}: within margin {self.margin:g} ({_signed(sub.delta)})"
