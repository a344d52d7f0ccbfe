"""How stable the judge is on a set of results scored with ``samples=k > 1``.

Each such result carries its k samples' sub-scores (``SummaryEvaluation.sample_scores``; in a
results file, ``evidence.sample_scores``) and their standard deviation per sub-score
(``spread``; ``<sub-score>_sd`` columns). This module summarises them over rows:

- :func:`stability` — per sub-score, the mean over rows of the per-row standard deviation (the
  typical run-to-run movement of one row), its largest value, and the rows counted;
- :func:`flip_rate` — the share of rows whose pass/fail against a threshold is not the same in
  every sample: the rows a single run could have put on either side;
- :func:`row_verdict` — one row's pass, fail or inconclusive at a threshold, from the share of its
  samples that pass and that share's 95 % Wilson interval (:mod:`shared.evaluation.verdict`);
  :func:`with_verdicts` records it in each row's ``evidence.verdict``.

Both take :class:`~shared.SummaryEvaluation` objects or results-file rows (dicts) alike, and
skip rows without at least two sample values for the sub-score (single-sample results, unscored
samples).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.subscores import SUB_SCORE_NAMES
from ..core.subscores import sub_score as _entry
from ..evaluation.result import SummaryEvaluation
from ..evaluation.verdict import Verdict, verdict
from ..runs.results import STATUS_OK

Result = SummaryEvaluation | Mapping[str, Any]
"""A result object, or a row of a results file written by the CLI."""


def sample_values(result: Result, name: str) -> list[float]:
    """The per-sample values of sub-score ``name`` of one result (empty for a single sample)."""
    if isinstance(result, SummaryEvaluation):
        samples: Any = result.sample_scores
    else:
        evidence = result.get("evidence")
        samples = result.get("sample_scores")
        if samples is None and isinstance(evidence, Mapping):
            samples = evidence.get("sample_scores")
    if not isinstance(samples, list):
        return []
    values = []
    for sample in samples:
        value = sample.get(name) if isinstance(sample, Mapping) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            values.append(float(value))
    return values


@dataclass(frozen=True)
class SubScoreStability:
    """The spread of one sub-score over the rows that have at least two sample values."""

    sub_score: str
    rows: int
    """Rows counted (with two or more sample values)."""
    mean_sd: float | None
    """Mean over rows of the standard deviation over samples (``ddof=1``); None if no row."""
    max_sd: float | None


@dataclass(frozen=True)
class FlipRate:
    """Rows whose pass (value >= threshold) differs between samples."""

    sub_score: str
    threshold: float
    rows: int
    """Rows counted (with two or more sample values)."""
    flipped: int

    @property
    def share(self) -> float | None:
        """``flipped / rows``; None when no row was counted."""
        return self.flipped / self.rows if self.rows else None

    def line(self) -> str:
        share = "n/a" if self.share is None else f"{self.share:.1%}"
        return (
            f"{self.sub_score} at threshold {self.threshold:g}: {self.flipped}/{self.rows} rows "
            f"flip between samples ({share})"
        )


def stability(
    results: Iterable[Result], sub_scores: Iterable[str] = SUB_SCORE_NAMES
) -> dict[str, SubScoreStability]:
    """Per sub-score: the mean and largest per-row standard deviation over samples."""
    rows = list(results)
    out = {}
    for name in sub_scores:
        _entry(name)  # KeyError naming the known ones
        sds = [
            statistics.stdev(values)
            for values in (sample_values(row, name) for row in rows)
            if len(values) > 1
        ]
        out[name] = SubScoreStability(
            sub_score=name,
            rows=len(sds),
            mean_sd=statistics.fmean(sds) if sds else None,
            max_sd=max(sds) if sds else None,
        )
    return out


def flip_rate(results: Iterable[Result], threshold: float, sub_score: str = "score") -> FlipRate:
    """The share of rows whose pass/fail against ``threshold`` flips across samples.

    A row passes in a sample when its value is at least ``threshold`` (the rule of DeepEval's
    ``success`` for a higher-is-better score).
    """
    _entry(sub_score)  # KeyError naming the known ones
    if not (isinstance(threshold, int | float) and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    counted = flipped = 0
    for row in results:
        values = sample_values(row, sub_score)
        if len(values) < 2:
            continue
        counted += 1
        passes = {value >= threshold for value in values}
        flipped += len(passes) > 1
    return FlipRate(sub_score=sub_score, threshold=threshold, rows=counted, flipped=flipped)


VERDICT_KEY = "verdict"
"""The key of a row's verdict over its samples in a results row's ``evidence``."""


def row_verdict(result: Result, threshold: float, sub_score: str = "score") -> Verdict | None:
    """The verdict of one scored result over its samples of ``sub_score`` at ``threshold``;
    None for a single-sample or unscored result (it passes or fails on its one value)."""
    if isinstance(result, SummaryEvaluation):
        scored = result.scored
    else:
        scored = result.get("status", STATUS_OK) == STATUS_OK
    values = sample_values(result, sub_score) if scored else []
    return verdict(values, threshold) if len(values) > 1 else None


def with_verdicts(rows: list[dict[str, Any]], threshold: float | None) -> list[dict[str, Any]]:
    """``rows`` (results-file rows, changed in place) with each multi-sample row's verdict at
    ``threshold`` in ``evidence.verdict``, and any verdict recorded at another pass mark (a row
    resumed from an earlier run) replaced or, without a threshold, removed. Rows of a single
    sample are left as they are."""
    for row in rows:
        found = None if threshold is None else row_verdict(row, threshold)
        evidence = row.get("evidence")
        if not isinstance(evidence, dict):
            continue
        if found is not None:
            evidence[VERDICT_KEY] = found.as_dict()
        else:
            evidence.pop(VERDICT_KEY, None)
    return rows


__all__ = [
    "VERDICT_KEY",
    "FlipRate",
    "SubScoreStability",
    "flip_rate",
    "row_verdict",
    "sample_values",
    "stability",
    "with_verdicts",
]
