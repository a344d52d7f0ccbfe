"""A row's verdict over its judge samples (``samples=k > 1``): pass, fail or inconclusive.

Each sample of a row either reaches the pass mark (its value >= ``threshold``) or not. The
row's *pass probability* is the share of its samples that pass, with a 95 % Wilson score
interval. The verdict is

- ``pass`` when the whole interval lies above :data:`REQUIRED_PASS_PROBABILITY` (0.5: most runs
  of this judge would pass the row),
- ``fail`` when it lies wholly below,
- ``inconclusive`` when it contains 0.5 (a bound exactly at 0.5 counts as containing it): the
  samples cannot tell whether a single run would more often pass or fail the row.

Why Wilson: with k of 2 to 10 samples the textbook (Wald) interval collapses to a single point
at 0 of k or k of k (it would call 2 of 2 a certain pass) and spills outside [0, 1]; the exact
Clopper-Pearson interval is conservative (its coverage is above 95 %, so it needs 6 unanimous
samples before it says pass). Wilson's coverage stays close to the nominal 95 % at small k, it
never leaves [0, 1], and it has a closed form. Under this rule a unanimous row gets a clear
verdict from 4 samples on (the lower bound of k of k is ``k / (k + z²)``: 0.44 at k = 3, 0.51
at k = 4), and a split row needs many more (one dissenting sample keeps the row inconclusive up
to k = 7, two up to k = 10): :func:`samples_needed` gives the numbers, docs/COMPARE.md the table.

What an inconclusive row counts as is the caller's choice (:data:`INCONCLUSIVE_AS`): the
DeepEval metric's ``inconclusive`` option, the CLI's ``--inconclusive``. With a single sample
there is no verdict here: a row passes or fails on its one value, as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..core.checks import one_of

Z_95 = 1.959963984540054
"""The standard normal quantile of 0.975: the 95 % two-sided interval."""

REQUIRED_PASS_PROBABILITY = 0.5
"""A clear pass needs the interval wholly above this share of passing samples, a clear fail
wholly below it."""

VerdictName = Literal["pass", "fail", "inconclusive"]
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"

InconclusiveAs = Literal["pass", "fail"]
INCONCLUSIVE_AS: tuple[str, ...] = (PASS, FAIL)
"""What an inconclusive verdict may be counted as."""


def wilson_interval(passes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion ``passes / n`` (``z``: its normal
    quantile, 95 % two-sided by default)."""
    if not (isinstance(n, int) and n >= 1 and isinstance(passes, int) and 0 <= passes <= n):
        raise ValueError(f"need 0 <= passes <= n and n >= 1, got passes={passes!r}, n={n!r}")
    share = passes / n
    z2 = z * z
    centre = (share + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(share * (1 - share) / n + z2 / (4 * n * n))
    # the exact ends at 0 of n and n of n (rounding would put them a hair off)
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class Verdict:
    """One row's verdict over its samples at ``threshold``."""

    verdict: VerdictName
    passes: int
    """Samples whose value reached ``threshold``."""
    samples: int
    threshold: float
    low: float
    """The pass probability's 95 % Wilson interval, lower end."""
    high: float

    @property
    def pass_probability(self) -> float:
        return self.passes / self.samples

    def counts_as_pass(self, inconclusive: InconclusiveAs = PASS) -> bool:
        """Whether the row passes, an inconclusive verdict counting as ``inconclusive``."""
        return self.verdict == PASS or (self.verdict == INCONCLUSIVE and inconclusive == PASS)

    def as_dict(self) -> dict[str, Any]:
        """The verdict as a results file records it (``evidence.verdict``)."""
        return {
            "verdict": self.verdict,
            "threshold": self.threshold,
            "passes": self.passes,
            "samples": self.samples,
            "pass_probability": self.pass_probability,
            "interval": [round(self.low, 4), round(self.high, 4)],
        }

    def line(self) -> str:
        """The verdict in words, as the metric's reason begins."""
        where = {
            PASS: f"above {REQUIRED_PASS_PROBABILITY:g}",
            FAIL: f"below {REQUIRED_PASS_PROBABILITY:g}",
            INCONCLUSIVE: f"straddles {REQUIRED_PASS_PROBABILITY:g}",
        }[self.verdict]
        return (
            f"Verdict: {self.verdict} ({self.passes} of {self.samples} judge samples reach "
            f"{self.threshold:g}; pass probability {self.pass_probability:.2f}, 95% Wilson "
            f"interval {self.low:.2f}-{self.high:.2f}, {where})."
        )


def verdict(values: Sequence[float], threshold: float) -> Verdict:
    """The verdict of one row whose samples have ``values`` (at least two) at ``threshold``."""
    if len(values) < 2:
        raise ValueError(f"a verdict over samples needs at least 2 values, got {len(values)}")
    if not (isinstance(threshold, int | float) and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    passes = sum(value >= threshold for value in values)
    low, high = wilson_interval(passes, len(values))
    if low > REQUIRED_PASS_PROBABILITY:
        name: VerdictName = PASS
    elif high < REQUIRED_PASS_PROBABILITY:
        name = FAIL
    else:
        name = INCONCLUSIVE
    return Verdict(name, passes, len(values), float(threshold), low, high)


def samples_needed(dissenting: int, limit: int = 100) -> int | None:
    """The fewest samples k for which ``dissenting`` samples on the minority side still give a
    clear verdict (None if none up to ``limit``)."""
    for k in range(max(2, 2 * dissenting + 1), limit + 1):
        if wilson_interval(dissenting, k)[1] < REQUIRED_PASS_PROBABILITY:
            return k
    return None


def check_inconclusive(value: object) -> InconclusiveAs:
    """``value`` if it names what an inconclusive verdict counts as, else a clear error."""
    return one_of(*INCONCLUSIVE_AS)("inconclusive", value)  # type: ignore[return-value]


__all__ = [
    "FAIL",
    "INCONCLUSIVE",
    "INCONCLUSIVE_AS",
    "PASS",
    "REQUIRED_PASS_PROBABILITY",
    "Z_95",
    "InconclusiveAs",
    "Verdict",
    "VerdictName",
    "check_inconclusive",
    "samples_needed",
    "verdict",
    "wilson_interval",
]
