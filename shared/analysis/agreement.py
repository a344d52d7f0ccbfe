"""Can the judge be trusted? Agreement of summary-eval's scores with human labels.

:func:`agreement` joins a set of results (a results file, row dicts or SummaryEvaluations) with a
file of human labels by id, and for each mapped pair (``coverage=relevance``: our ``coverage``
against the people's ``relevance``) reports Spearman, Kendall (tau-b) and Pearson with bootstrap
intervals at the levels the data allows:

- ``summary``: per source (the labels' group column), correlate over that source's summaries,
  then average over sources (SummEval's convention); the bootstrap resamples sources;
- ``pooled``: without a group column, one correlation over every row; the bootstrap resamples rows;
- ``system``: with a system column, correlate the per-system means; the bootstrap resamples
  sources (or rows without a group column) and recomputes the means.

For binary or ordinal labels it adds accuracy and Cohen's kappa of the score read as a label
(binary: ``score >= threshold``; ordinal with k levels: equal-width bins of [0, 1]).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core import bounded_json
from ..core.files import open_regular
from . import stats
from .comparison import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MAX_RESAMPLES,
    IdJoin,
    Results,
    join_ids,
    load_rows,
)
from .lookup import find

STATISTICS = ("spearman", "kendall", "pearson")
MIN_GROUP = 3
"""A source with fewer summaries (after leaving out empty values) gives no summary-level value."""
MAX_CATEGORIES = 10
"""Integer labels with at most this many distinct values are treated as categories (kappa)."""
KENDALL_BOOTSTRAP_MAX_ROWS = 2_000
"""The pooled Kendall bootstrap costs resamples x rows^2; above this it reports no interval."""

_WORDS = {"true": 1.0, "yes": 1.0, "pass": 1.0, "false": 0.0, "no": 0.0, "fail": 0.0}


@dataclass
class Estimate:
    """A correlation (or a difference of two), its bootstrap interval, and the units it was
    computed over."""

    value: float | None
    low: float | None = None
    high: float | None = None
    units: int = 0
    """Sources (summary level), rows (pooled) or systems (system level) that gave a value."""


@dataclass
class LevelAgreement:
    level: str
    """``summary``, ``pooled`` or ``system``."""
    spearman: Estimate
    kendall: Estimate
    pearson: Estimate
    skipped: int = 0
    """Sources (summary level) or systems left out: too few rows, or constant metric or label."""


@dataclass
class PairAgreement:
    """One mapped pair: our ``metric`` against the people's ``label``."""

    metric: str
    label: str
    n: int
    """Rows joined by id with both values present."""
    metric_empty: int = 0
    """Joined rows whose metric is empty (unscored, or not computed)."""
    label_empty: int = 0
    """Joined rows whose label is empty or not a number."""
    levels: list[LevelAgreement] = field(default_factory=list)
    kind: str = "continuous"
    """``continuous``, ``binary`` or ``ordinal`` (read from the label values)."""
    accuracy: float | None = None
    kappa: float | None = None


@dataclass
class Agreement:
    """Everything :func:`agreement` found; :meth:`to_dict` is what ``--json`` writes."""

    pairs: list[PairAgreement]
    join: IdJoin
    """The results' ids joined with the labels' (:func:`~shared.analysis.comparison.join_ids`)."""
    resamples: int
    seed: int | None
    level: float
    group_column: str | None
    system_column: str | None
    threshold: float

    # the join under the names the JSON and the callers read
    joined = property(lambda self: len(self.join.both), doc="Rows joined by id.")
    results_only = property(lambda self: self.join.only_first)
    labels_only = property(lambda self: self.join.only_second)

    def to_dict(self) -> dict[str, Any]:
        """The fields in their order, the join written out as the count ``joined`` and the ids
        ``results_only`` and ``labels_only``."""
        fields = asdict(self)
        del fields["join"]
        pairs = fields.pop("pairs")
        one_side = {"results_only": self.results_only, "labels_only": self.labels_only}
        return {"pairs": pairs, "joined": self.joined, **one_side, **fields}

    def get(self, metric: str, label: str | None = None) -> PairAgreement:
        def matches(pair: PairAgreement) -> bool:
            return pair.metric == metric and (label is None or pair.label == label)

        return find(self.pairs, matches, f"no pair for {metric!r}")


# ---------------------------------------------------------------------------------------------
# Reading the labels
# ---------------------------------------------------------------------------------------------


def read_labels(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL or CSV labels file, each with ``_position`` (1-based: JSONL line, CSV data
    row), which stands in for the id when the id column is missing, as in ``score``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"labels file not found: {path}")
    try:
        return _read_labels(path)
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start : exc.start + 1].hex()
        raise ValueError(
            f"{path} is not UTF-8 text (byte 0x{byte} cannot be decoded); save it as UTF-8"
        ) from None


def _read_labels(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    rows: list[dict[str, Any]] = []
    if suffix in (".jsonl", ".ndjson"):
        with open_regular(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = bounded_json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"{path.name} line {number} is not valid JSON: {exc.msg}"
                    ) from None
                if not isinstance(record, dict):
                    raise ValueError(f"{path.name} line {number} is not a JSON object")
                rows.append({**record, "_position": number})
        return rows
    if suffix == ".csv":
        with open_regular(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            repeated = sorted({name for name in header if header.count(name) > 1})
            if repeated:
                raise ValueError(
                    f"{path.name} repeats the column(s) {', '.join(map(repr, repeated))} in its "
                    "header; give every column its own name"
                )
            for number, record in enumerate(reader, start=1):
                rows.append({**record, "_position": number})
        return rows
    raise ValueError(f"labels file must end in .jsonl or .csv, got {path.name!r}")


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def label_value(value: Any) -> float | None:
    """A label as a number: numbers, numeric text, booleans and yes/no, true/false, pass/fail."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _WORDS:
            return _WORDS[text]
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _label_id(row: Mapping[str, Any], id_column: str) -> str:
    value = row.get(id_column)
    if value is None or value == "":
        return str(row.get("_position", ""))
    return str(value).strip()


def parse_mapping(items: Sequence[str]) -> list[tuple[str, str]]:
    """``["coverage=relevance", "coherence=coherence,density=fluency"]`` -> pairs; a bare name
    maps a metric to the label column of the same name."""
    pairs = []
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            metric, sep, label = part.partition("=")
            metric, label = metric.strip(), (label.strip() if sep else metric.strip())
            if not metric or not label:
                raise ValueError(f"--map {part!r}: expected METRIC=LABEL")
            pairs.append((metric, label))
    if not pairs:
        raise ValueError("no --map METRIC=LABEL given")
    return pairs


# ---------------------------------------------------------------------------------------------
# Agreement
# ---------------------------------------------------------------------------------------------


def agreement(
    results: Results,
    labels: str | Path | Sequence[Mapping[str, Any]],
    mapping: Mapping[str, str] | Sequence[tuple[str, str]] | Sequence[str],
    *,
    id_column: str = "id",
    group_column: str | None = None,
    system_column: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = DEFAULT_SEED,
    level: float = 0.95,
    threshold: float = 0.5,
) -> Agreement:
    """Agreement of ``results`` with human ``labels`` for every ``mapping`` pair (metric, label).

    Rows are joined on the results' ``id`` and the labels' ``id_column`` (a labels row without
    one is identified by its 1-based position, as ``summary-eval score`` identifies input rows).
    Ids on one side only are listed, not an error: labels are often a sample. ``group_column``
    and ``system_column`` are read from the labels row, else from the results row.

    Raises ``ValueError``, as :func:`~shared.compare` does, when an id is held twice (by the
    results or by the labels), when the results or the labels hold no row, and when the two
    share no id: each would otherwise report correlations over nothing (or over whichever of a
    repeated id's rows came last).
    """
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be from 1 to {MAX_RESAMPLES:,}")
    pairs = _pairs(mapping)
    result_rows = _result_rows(results, pairs)
    label_rows = _label_rows(labels, pairs, id_column)
    for column in (group_column, system_column):
        if column and not any(column in r for r in (*label_rows.values(), *result_rows.values())):
            raise ValueError(f"neither the labels nor the results have a column {column!r}")
    join = join_ids(result_rows, label_rows)
    ids = join.both
    if not ids:
        raise ValueError(
            f"the results and the labels share no id: nothing to agree with (ids are joined on "
            f"the labels' {id_column!r} column, or its row number when the column is missing)"
        )

    def column(row_id: str, name: str | None) -> str | None:
        if name is None:
            return None
        value = label_rows[row_id].get(name)
        if value is None or value == "":
            value = result_rows[row_id].get(name)
        return None if value is None or value == "" else str(value)

    rng = np.random.default_rng(seed)
    out = []
    for metric, label in pairs:
        xs, ys, groups, systems = [], [], [], []
        pair = PairAgreement(metric=metric, label=label, n=0)
        for row_id in ids:
            x = _metric_value(result_rows[row_id].get(metric))
            y = label_value(label_rows[row_id].get(label))
            if x is None:
                pair.metric_empty += 1
                continue
            if y is None:
                pair.label_empty += 1
                continue
            xs.append(x)
            ys.append(y)
            groups.append(column(row_id, group_column))
            systems.append(column(row_id, system_column))
        pair.n = len(xs)
        x_arr, y_arr = np.array(xs, dtype=float), np.array(ys, dtype=float)
        if group_column:
            pair.levels.append(_summary_level(x_arr, y_arr, groups, resamples, rng, level))
        else:
            pair.levels.append(_pooled_level(x_arr, y_arr, resamples, rng, level))
        if system_column:
            pair.levels.append(
                _system_level(
                    x_arr, y_arr, systems, groups if group_column else None, resamples, rng, level
                )
            )
        _categorical(pair, x_arr, y_arr, threshold)
        out.append(pair)
    return Agreement(
        pairs=out,
        join=join,
        resamples=resamples,
        seed=seed,
        level=level,
        group_column=group_column,
        system_column=system_column,
        threshold=threshold,
    )


def _result_rows(
    results: Results, pairs: Sequence[tuple[str, str]]
) -> dict[str, Mapping[str, Any]]:
    """The results rows by id; an id held twice, no row, or a metric no row has is an error."""
    result_rows: dict[str, Mapping[str, Any]] = {}
    for row in load_rows(results):
        row_id = str(row["id"])
        if row_id in result_rows:
            raise ValueError(f"the results hold the id {row_id!r} twice; ids must be unique")
        result_rows[row_id] = row
    if not result_rows:
        raise ValueError("the results hold no row: nothing to agree with")
    for metric, label in pairs:  # a misspelt name is an error, not n=0 (as in compare)
        if not any(metric in r for r in result_rows.values()):
            have = sorted({k for r in result_rows.values() for k, v in r.items() if _numeric(v)})
            raise ValueError(
                f"the results have no sub-score {metric!r} (for --map {metric}={label}); "
                f"have: {', '.join(have) or 'none'}"
            )
    return result_rows


def _label_rows(
    labels: str | Path | Sequence[Mapping[str, Any]],
    pairs: Sequence[tuple[str, str]],
    id_column: str,
) -> dict[str, Mapping[str, Any]]:
    """The labels rows by id; an id held twice, no row, or a label no row has is an error."""
    label_rows_list = (
        read_labels(labels)
        if isinstance(labels, str | Path)
        else [{**dict(r), "_position": i} for i, r in enumerate(labels, start=1)]
    )
    if not label_rows_list:
        where = f" {Path(labels).name}" if isinstance(labels, str | Path) else ""
        raise ValueError(f"the labels{where} hold no row: nothing to agree with")
    label_rows: dict[str, Mapping[str, Any]] = {}
    for row in label_rows_list:
        row_id = _label_id(row, id_column)
        if row_id in label_rows:
            raise ValueError(f"the labels hold the id {row_id!r} twice; ids must be unique")
        label_rows[row_id] = row
    for metric, label in pairs:
        if not any(label in r for r in label_rows.values()):
            raise ValueError(f"the labels have no column {label!r} (for --map {metric}={label})")
    return label_rows


def _pairs(
    mapping: Mapping[str, str] | Sequence[tuple[str, str]] | Sequence[str],
) -> list[tuple[str, str]]:
    if isinstance(mapping, Mapping):
        return [(str(k), str(v)) for k, v in mapping.items()]
    items = list(mapping)
    if items and all(isinstance(i, str) for i in items):
        return parse_mapping(items)  # type: ignore[arg-type]
    return [(str(k), str(v)) for k, v in items]  # type: ignore[misc]


def _metric_value(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _estimate(value: float, boot: np.ndarray | None, units: int, level: float) -> Estimate:
    if not math.isfinite(value):
        return Estimate(value=None, units=units)
    low = high = None
    if boot is not None:
        lo, hi = stats.percentile_interval(boot, level)
        if math.isfinite(lo):
            low, high = stats.rounded(lo), stats.rounded(hi)
    return Estimate(value=stats.rounded(value), low=low, high=high, units=units)


def _summary_level(
    x: np.ndarray,
    y: np.ndarray,
    groups: list[str | None],
    resamples: int,
    rng: np.random.Generator,
    level: float,
) -> LevelAgreement:
    """Per source, then averaged; a source's value is left out where it is undefined."""
    by_group: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        if g is not None:
            by_group.setdefault(g, []).append(i)
    values: dict[str, list[float]] = {s: [] for s in STATISTICS}
    for members in by_group.values():
        if len(members) < MIN_GROUP:
            for s in STATISTICS:
                values[s].append(math.nan)
            continue
        gx, gy = x[members], y[members]
        values["spearman"].append(float(stats.spearman(gx, gy)))
        values["kendall"].append(stats.kendall(gx, gy))
        values["pearson"].append(float(stats.pearson(gx, gy)))
    estimates = {}
    skipped = 0
    for s in STATISTICS:
        v = np.array(values[s], dtype=float)
        v = v[np.isfinite(v)]
        skipped = max(skipped, len(by_group) - len(v))
        if not len(v):
            estimates[s] = Estimate(value=None, units=0)
            continue
        boot = stats.bootstrap_means(v, resamples, rng)[:, 0]
        estimates[s] = _estimate(float(v.mean()), boot, len(v), level)
    return LevelAgreement("summary", skipped=skipped, **estimates)


def _resample_weights(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Row multiplicities of ``resamples`` bootstrap resamples of n rows (resamples x n)."""
    idx = rng.integers(0, n, size=(resamples, n))
    offsets = (np.arange(resamples) * n)[:, None]
    return np.bincount((idx + offsets).ravel(), minlength=resamples * n).reshape(resamples, n)


def _pooled_level(
    x: np.ndarray, y: np.ndarray, resamples: int, rng: np.random.Generator, level: float
) -> LevelAgreement:
    n = len(x)
    if n < MIN_GROUP:
        none = Estimate(value=None, units=n)
        return LevelAgreement("pooled", spearman=none, kendall=none, pearson=none)
    idx = rng.integers(0, n, size=(resamples, n))
    offsets = (np.arange(resamples) * n)[:, None]
    weights = np.bincount((idx + offsets).ravel(), minlength=resamples * n).reshape(resamples, n)
    boot_p = np.concatenate(
        [stats.pearson(x[idx[lo:hi]], y[idx[lo:hi]]) for lo, hi in stats.chunks(resamples, n)]
    )
    boot_s = np.concatenate(
        [stats.spearman(x[idx[lo:hi]], y[idx[lo:hi]]) for lo, hi in stats.chunks(resamples, n)]
    )
    boot_k = stats.kendall_weighted(x, y, weights) if n <= KENDALL_BOOTSTRAP_MAX_ROWS else None
    return LevelAgreement(
        "pooled",
        spearman=_estimate(float(stats.spearman(x, y)), boot_s, n, level),
        kendall=_estimate(stats.kendall(x, y), boot_k, n, level),
        pearson=_estimate(float(stats.pearson(x, y)), boot_p, n, level),
    )


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair of two (trials x m) matrices (m small: m^2 per row)."""
    dx = np.sign(x[:, :, None] - x[:, None, :])
    dy = np.sign(y[:, :, None] - y[:, None, :])
    m = x.shape[1]
    pairs = m * (m - 1) / 2.0
    s = (dx * dy).sum(axis=(1, 2)) / 2.0
    tx = ((dx == 0).sum(axis=(1, 2)) - m) / 2.0
    ty = ((dy == 0).sum(axis=(1, 2)) - m) / 2.0
    den = np.sqrt((pairs - tx) * (pairs - ty))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, s / np.where(den > 0, den, 1.0), np.nan)


def _system_level(
    x: np.ndarray,
    y: np.ndarray,
    systems: list[str | None],
    groups: list[str | None] | None,
    resamples: int,
    rng: np.random.Generator,
    level: float,
) -> LevelAgreement:
    """Correlation of per-system means; resampling sources (else rows) moves the means."""
    keep = [i for i, s in enumerate(systems) if s is not None]
    names = sorted({systems[i] for i in keep})  # type: ignore[type-var]
    if len(names) < MIN_GROUP:
        none = Estimate(value=None, units=len(names))
        return LevelAgreement("system", spearman=none, kendall=none, pearson=none)
    x, y = x[keep], y[keep]
    onehot = np.zeros((len(keep), len(names)))
    onehot[np.arange(len(keep)), [names.index(systems[i]) for i in keep]] = 1.0
    if groups is not None:
        kept_groups = [groups[i] for i in keep]
        units = sorted({g for g in kept_groups if g is not None})
        member = np.array([units.index(g) if g is not None else -1 for g in kept_groups])
        unit_weights = _resample_weights(len(units), resamples, rng).astype(float)
        weights = np.where(member >= 0, unit_weights[:, np.maximum(member, 0)], 0.0)
    else:
        weights = _resample_weights(len(keep), resamples, rng).astype(float)
    counts = weights @ onehot
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (weights @ (onehot * x[:, None])) / counts
        my = (weights @ (onehot * y[:, None])) / counts
    complete = np.isfinite(mx).all(axis=1) & np.isfinite(my).all(axis=1)
    mx, my = mx[complete], my[complete]
    n_sys = onehot.sum(axis=0)
    sx = (onehot * x[:, None]).sum(axis=0) / n_sys
    sy = (onehot * y[:, None]).sum(axis=0) / n_sys
    units_n = len(names)
    return LevelAgreement(
        "system",
        spearman=_estimate(float(stats.spearman(sx, sy)), stats.spearman(mx, my), units_n, level),
        kendall=_estimate(stats.kendall(sx, sy), kendall_rows(mx, my), units_n, level),
        pearson=_estimate(float(stats.pearson(sx, sy)), stats.pearson(mx, my), units_n, level),
    )


def _categorical(pair: PairAgreement, x: np.ndarray, y: np.ndarray, threshold: float) -> None:
    """Accuracy and Cohen's kappa when the labels are binary or ordinal (few integer values)."""
    levels = sorted(set(y.tolist()))
    if not len(y) or len(levels) > MAX_CATEGORIES or any(v != int(v) for v in levels):
        return
    if len(levels) <= 2:
        pair.kind = "binary"
        high = levels[-1] if len(levels) == 2 else (1.0 if levels[0] in (0.0, 1.0) else levels[0])
        low = levels[0] if len(levels) == 2 else 0.0
        predicted = np.where(x >= threshold, high, low)
    else:
        pair.kind = "ordinal"
        if (x < 0).any() or (x > 1).any():
            return  # no defined reading of the score as a level outside [0, 1]
        bins = np.minimum((x * len(levels)).astype(int), len(levels) - 1)
        predicted = np.array(levels)[bins]
    pair.accuracy = stats.rounded(float(np.mean(predicted == y)))
    kappa = stats.cohen_kappa(predicted.tolist(), y.tolist())
    pair.kappa = None if math.isnan(kappa) else stats.rounded(kappa)
