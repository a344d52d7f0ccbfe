"""Vectorised statistics behind ``compare`` and ``agreement`` (numpy only).

Rank correlations (Spearman, Kendall tau-b), Pearson, Cohen's kappa, and the two paired
resampling tests that sacreBLEU made the standard for "is system B better than A": the paired
bootstrap (percentile interval of the mean difference) and paired approximate randomization
(sign flips of the per-row differences). Everything works on whole arrays at once, in chunks that
bound memory, so 10,000 rows x 10,000 trials never allocate a 10,000 x 10,000 float matrix.

Written here rather than taken from scipy so that the core needs only numpy and so that the
conventions (tie handling, the p-value's +1) are the ones documented in docs/COMPARE.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DECIMALS = 12
"""Reported statistics and per-row differences are rounded to this many decimals: scores live in
[0, 1] and are stored as decimal text, so float noise below 1e-12 (0.4 - 0.3 != 0.1) would
otherwise turn ties into wins and a constant shift into a non-zero-width interval."""

CHUNK_CELLS = 4_000_000
"""Largest resampling block built at once (cells of a trials x rows matrix): 32 MB in float64."""


def rank(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; ties share the mean of their positions) along the last axis."""
    x = np.asarray(values, dtype=float)
    flat = x.reshape(-1, x.shape[-1]) if x.ndim > 1 else x[None, :]
    n = flat.shape[1]
    order = np.argsort(flat, axis=1, kind="stable")
    ordered = np.take_along_axis(flat, order, axis=1)
    starts = np.ones(flat.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones(flat.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    pos = np.arange(n)
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(flat.shape, dtype=float)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    return ranks.reshape(x.shape)


def pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Pearson's r along the last axis; NaN where either side is constant (undefined)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    num = (xc * yc).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    r = np.clip(r, -1.0, 1.0)
    return float(r) if r.ndim == 0 else r


def spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Spearman's rho (Pearson of average ranks) along the last axis."""
    return pearson(rank(x), rank(y))


def kendall(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b of two equal-length vectors; NaN if either is constant.

    tau_b = (C - D) / sqrt((P - Tx) (P - Ty)), with P all pairs, C / D the concordant and
    discordant pairs, Tx / Ty the pairs tied in x / in y.
    """
    w = np.ones(len(x), dtype=float)
    return float(kendall_weighted(np.asarray(x, float), np.asarray(y, float), w[None, :])[0])


def kendall_weighted(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each resample given as row multiplicities (``weights``: trials x n).

    A row drawn k times contributes k (k - 1) / 2 pairs tied on both sides; distinct rows i, j
    contribute w_i w_j pairs. The pair sums are quadratic forms w' M w, computed by blocks of
    columns of M so memory stays bounded (O(trials x n^2) time, BLAS-fast).
    """
    n = len(x)
    w = np.asarray(weights, dtype=float)
    s_sum = np.zeros(w.shape[0])
    tx_sum = np.zeros(w.shape[0])
    ty_sum = np.zeros(w.shape[0])
    total = w.sum(axis=1)
    sq = (w * w).sum(axis=1)
    # without ties the only "tied" ordered pairs are the diagonal, whose sum is sq: skip the
    # tie products (scores are usually all distinct; ratings are not)
    ties_x = len(np.unique(x)) < n
    ties_y = len(np.unique(y)) < n
    tx_sum = tx_sum if ties_x else sq.copy()
    ty_sum = ty_sum if ties_y else sq.copy()
    block = max(1, CHUNK_CELLS // max(n, 1))
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        dx = np.sign(x[:, None] - x[None, lo:hi])
        dy = np.sign(y[:, None] - y[None, lo:hi])
        wb = w[:, lo:hi]
        s_sum += ((w @ (dx * dy)) * wb).sum(axis=1)
        # the diagonal (i == j) is in the tie sums; removed below with the self pairs
        if ties_x:
            tx_sum += ((w @ (dx == 0).astype(float)) * wb).sum(axis=1)
        if ties_y:
            ty_sum += ((w @ (dy == 0).astype(float)) * wb).sum(axis=1)
    pairs = total * (total - 1) / 2.0
    # ordered-pair sums count each unordered pair twice; the diagonal adds sum(w^2), of which
    # sum(w (w - 1)) / 2 are real (self) tied pairs
    self_pairs = (sq - total) / 2.0
    tied_x = (tx_sum - sq) / 2.0 + self_pairs
    tied_y = (ty_sum - sq) / 2.0 + self_pairs
    den = np.sqrt(np.maximum(pairs - tied_x, 0.0) * np.maximum(pairs - tied_y, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(den > 0, (s_sum / 2.0) / np.where(den > 0, den, 1.0), np.nan)
    return np.clip(tau, -1.0, 1.0)


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float:
    """Cohen's kappa of two labelings: (p_o - p_e) / (1 - p_e); NaN when p_e = 1 (one label).

    p_o is the observed agreement, p_e the agreement expected from each side's label shares.
    """
    if len(a) != len(b):
        raise ValueError("cohen_kappa: both labelings must have the same length")
    if not len(a):
        return float("nan")
    labels = sorted({*a, *b}, key=repr)
    index = {label: i for i, label in enumerate(labels)}
    ia = np.array([index[v] for v in a])
    ib = np.array([index[v] for v in b])
    n = len(ia)
    p_o = float(np.mean(ia == ib))
    share_a = np.bincount(ia, minlength=len(labels)) / n
    share_b = np.bincount(ib, minlength=len(labels)) / n
    p_e = float(share_a @ share_b)
    if p_e >= 1.0:
        return float("nan")
    return (p_o - p_e) / (1.0 - p_e)


def chunks(total: int, n: int) -> list[tuple[int, int]]:
    """(start, stop) blocks of ``total`` trials, each at most :data:`CHUNK_CELLS` / n trials, so
    a block of trials x n cells stays within the memory bound."""
    step = max(1, CHUNK_CELLS // max(n, 1))
    return [(lo, min(total, lo + step)) for lo in range(0, total, step)]


def bootstrap_means(diffs: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of the rows of ``diffs`` (rows x columns):
    one draw of row indices per resample, shared by every column (all columns must be defined
    on every row). Returns resamples x columns."""
    d = np.asarray(diffs, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    n = d.shape[0]
    out = np.empty((resamples, d.shape[1]))
    for lo, hi in chunks(resamples, n * d.shape[1]):
        idx = rng.integers(0, n, size=(hi - lo, n))
        out[lo:hi] = d[idx].mean(axis=1)
    return out


def randomization_sums(diffs: np.ndarray, trials: int, rng: np.random.Generator) -> np.ndarray:
    """Sums of the per-row differences under ``trials`` random sign flips (swapping A and B on
    a row flips the sign of its difference). ``diffs``: rows x columns, 0 where a row is left out
    of a column (a flipped 0 is still 0). Returns trials x columns.

    Signs come from random bits (8 per byte): sum(s d) = sum(d) - 2 sum(bit d)."""
    d = np.asarray(diffs, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    n = d.shape[0]
    total = d.sum(axis=0)
    out = np.empty((trials, d.shape[1]))
    nbytes = (n + 7) // 8
    for lo, hi in chunks(trials, n):
        raw = rng.integers(0, 256, size=(hi - lo, nbytes), dtype=np.uint8)
        bits = np.unpackbits(raw, axis=1, count=n).astype(float)
        out[lo:hi] = total - 2.0 * (bits @ d)
    return out


def randomization_p(observed: float, permuted: np.ndarray) -> float:
    """(count of |permuted| >= |observed| + 1) / (trials + 1), with |observed| taken 1e-12 lower
    so that summation order alone never moves a permuted value below an equal observed one.
    The +1 counts the observed assignment itself: p is never 0, and identical inputs (every
    difference 0) give exactly 1."""
    threshold = abs(observed) - 10.0**-DECIMALS
    hits = int(np.count_nonzero(np.abs(permuted) >= threshold))
    return (hits + 1) / (len(permuted) + 1)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` percentile interval of the finite ``values`` (NaN if none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(v, [tail, 100.0 - tail])
    return float(lo), float(hi)


def rounded(value: float) -> float:
    """``value`` rounded to :data:`DECIMALS` (NaN stays NaN; -0.0 becomes 0.0)."""
    if value != value:
        return value
    return round(float(value), DECIMALS) + 0.0
