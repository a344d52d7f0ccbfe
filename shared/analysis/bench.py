"""Ours against DeepEval's and Ragas' summarization metrics on one judge: agreement with people,
calls, tokens, dollars and time, side by side (``summary-eval bench``; :func:`bench`, exported
as ``shared.bench``).

Each metric is run the way its own users run it, every one against the same OpenAI-compatible
server and model:

- ``ours`` and ``ours-two-call``: :func:`shared.score_summaries` with its defaults and an
  :class:`OpenAIJudge`, on the sentences path (the default) and on the two-call path;
- ``deepeval``: ``deepeval.evaluate`` with DeepEval's ``SummarizationMetric``, the judge wired
  as a ``DeepEvalBaseLLM`` (an :class:`OpenAIJudge` inside: structured output, as
  docs/deepeval.md tells users of a local server);
- ``ragas``: Ragas' ``SummaryScore`` (``ragas.metrics.collections``) on
  ``llm_factory(model, client=AsyncOpenAI(base_url=...))``, ``ascore`` per row.

Calls and tokens are counted at the HTTP level, the same way for every metric: each metric's
``AsyncOpenAI`` client gets an httpx client whose response hook reads every chat-completions
reply's ``usage`` (``prompt_tokens``, ``prompt_tokens_details.cached_tokens``,
``completion_tokens``); a failed request (HTTP >= 400) counts as a call with no tokens. No
framework's own accounting is used.

The data are rows with human ratings: by default whole articles of the shipped SummEval dev half
(every summary of each, so a correlation per article is defined), else the user's own file and
labels (:func:`labelled_items`). Per metric and rating: Spearman at the summary level (per
article, then the mean; pooled over rows without a group column) with a bootstrap interval over
articles, and at the system level; per pair of metrics, the difference of their summary-level
Spearman with its bootstrap interval (:class:`PairedDifference`).

Results are kept per metric and per article in ``workdir`` (one JSONL file per metric and
configuration, appended as each article finishes): a rerun of the same benchmark reads them
instead of calling the judge again. An article on which every row failed is not kept, so a rerun
retries it. Within an article, every metric's judge replies are recorded there too
(:mod:`.bench_recording`): a rerun replays what was answered, reported as what those rows cost
(marked replayed), and pays only for the rest.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from importlib import metadata  # noqa: F401 (as before: installed_version reads it)
from pathlib import Path
from typing import Any, Unpack

import numpy as np

from ..core.pricing import Prices, resolve_prices
from ..core.redact import redact_url
from . import stats
from .agreement import agreement
from .bench_data import (  # noqa: F401 (re-exported: the names this module had)
    DEFAULT_ARTICLES,
    DEFAULT_SEED,
    JUDGE_PATH_OF,
    METRIC_TITLES,
    METRICS,
    MIN_GROUP,
    RATING_HINT,
    REASON_CHARS,
    STORE_VERSION,
    SUMMEVAL_PATH,
    SUMMEVAL_RATINGS,
    BenchItem,
    BenchResult,
    Estimate,
    JudgeConfig,
    JudgeOptions,
    LabelledData,
    MetricReport,
    PairedDifference,
    RatingAgreement,
    ResultStore,
    Usage,
    UsageCounter,
    _batches,
    _digest,
    _int,
    checked_ratings,
    counted_http_client,
    labelled_items,
    summeval_items,
    unrated,
)
from .bench_recording import Recording
from .bench_runners import (  # noqa: F401 (re-exported: the names this module had)
    DEEPEVAL_CALLS_PER_ROW,
    PACKAGES,
    RUNNERS,
    Outcome,
    Runner,
    _describe,
    deepeval_limits,
    installed_version,
    run_deepeval,
    run_ours,
    run_ragas,
)
from .comparison import DEFAULT_RESAMPLES

# ---------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------


def bench(
    *,
    model: str,
    base_url: str | None = None,
    metrics: Sequence[str] = METRICS,
    items: Sequence[BenchItem] | None = None,
    ratings: Sequence[str] | None = None,
    articles: int = DEFAULT_ARTICLES,
    seed: int = DEFAULT_SEED,
    summaries: int | None = None,
    summeval: str | Path | None = None,
    workdir: str | Path = "summary-eval-bench",
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    price_in: float | None = None,
    price_cached: float | None = None,
    price_out: float | None = None,
    runners: Mapping[str, Runner] | None = None,
    notes: Sequence[str] = (),
    data_name: str | None = None,
    on_metric: Callable[[str, str], None] | None = None,
    **judge_options: Unpack[JudgeOptions],
) -> BenchResult:
    """Score ``items`` (default: :func:`summeval_items` with ``articles``, ``seed``,
    ``summaries``) with every metric of ``metrics`` on one judge, and report each metric's
    agreement with the people's ``ratings``, its calls, tokens, dollars and wall time.

    A metric that is not installed, crashes, or whose judge fails every call is reported with
    its reason; the other metrics still run. ``runners`` adds or replaces metrics (name ->
    :data:`Runner`). ``on_metric(name, message)`` hears progress. ``judge_options`` (``api_key``,
    ``timeout``, ``max_retries``, ``max_tokens``) go to the judge's :class:`JudgeConfig` as given.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    all_runners = {**RUNNERS, **(runners or {})}
    unknown = [m for m in metrics if m not in all_runners]
    if unknown:
        raise ValueError(
            f"unknown metric(s) {', '.join(unknown)}; choose from {', '.join(all_runners)}"
        )
    if not metrics:
        raise ValueError("no metric chosen")
    metrics = list(dict.fromkeys(metrics))
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    if items is None:
        items = summeval_items(summeval, articles=articles, seed=seed, summaries=summaries)
        ratings = list(ratings or SUMMEVAL_RATINGS)
        data_name = data_name or (
            f"SummEval dev half: {articles} article(s), seed {seed}"
            + (f", {summaries} summaries each" if summaries else ", all summaries")
        )
    items = list(items)
    ratings = checked_ratings(items, ratings)
    prices = resolve_prices(
        model, base_url, price_in=price_in, price_cached=price_cached, price_out=price_out
    )
    judge = JudgeConfig(model=model, base_url=base_url, **judge_options)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    reports = []
    for name in metrics:
        reports.append(
            _run_metric(name, all_runners[name], items, judge, workdir, prices, on_metric)
        )
    for report in reports:
        report.agreement = _agreement(report, items, ratings, resamples, seed, level)
    comparisons = _comparisons(reports, items, ratings, resamples, seed, level)
    return BenchResult(
        model=model,
        base_url=redact_url(base_url),
        data=data_name or "given rows",
        rows=len(items),
        groups=len({item.group for item in items if item.group is not None}),
        ratings=ratings,
        seed=seed,
        resamples=resamples,
        level=level,
        prices="unknown (give --price-in and --price-out)" if prices is None else prices.source,
        metrics=reports,
        comparisons=comparisons,
        notes=list(notes),
        labels={item.id: dict(item.labels) for item in items},
    )


def _run_metric(
    name: str,
    runner: Runner,
    items: Sequence[BenchItem],
    judge: JudgeConfig,
    workdir: Path,
    prices: Prices | None,
    on_metric: Callable[[str, str], None] | None,
) -> MetricReport:
    say = on_metric or (lambda _name, _message: None)
    version = installed_version(name) if runner is RUNNERS.get(name) else "custom"
    report = MetricReport(name=name, title=METRIC_TITLES.get(name, name), version=version)
    report.rows = len(items)
    if version is None:
        report.error = f'{PACKAGES[name]} is not installed (pip install "summary-eval[{name}]")'
        report.failed = len(items)
        report.reasons = {report.error: len(items)}
        report.scores = {item.id: None for item in items}
        say(name, report.error)
        return report
    parts = [STORE_VERSION, name, version, judge.model, judge.base_url or "", judge.max_tokens]
    # ours' results of one path are never resumed under another
    config = _digest(*parts, *([JUDGE_PATH_OF[name]] if name in JUDGE_PATH_OF else []))
    store = ResultStore(workdir / f"{name}-{config}.jsonl")
    recording = _recording(workdir / f"{name}-replies.sqlite3", lambda m: say(name, m))
    reasons: Counter[str] = Counter()
    with contextlib.closing(recording) if recording is not None else contextlib.nullcontext():
        _run_batches(name, runner, items, judge, workdir, store, recording, report, reasons, say)
    report.scored = sum(1 for s in report.scores.values() if s is not None)
    report.failed = report.rows - report.scored
    report.reasons = dict(reasons.most_common())
    if prices is not None:
        report.dollars = prices.cost(asdict(report.usage))
    say(name, f"{report.scored}/{report.rows} scored")
    return report


def _recording(path: Path, say: Callable[[str], None]) -> Recording | None:
    """The metric's recorded replies; None (nothing replayed or recorded, said why) when the
    file cannot be opened as one."""
    try:
        return Recording(path)
    except (sqlite3.Error, OSError) as exc:
        say(f"the recorded replies in {path} cannot be read ({exc}): nothing is replayed or kept")
        return None


def _run_batches(
    name: str,
    runner: Runner,
    items: Sequence[BenchItem],
    judge: JudgeConfig,
    workdir: Path,
    store: ResultStore,
    recording: Recording | None,
    report: MetricReport,
    reasons: Counter[str],
    say: Callable[[str, str], None],
) -> None:
    """Each article of ``items``: read back from ``store``, else scored (and kept)."""
    for batch in _batches(items):
        key = _digest([(i.id, i.source, i.summary) for i in batch])
        record = store.batches.get(key)
        if record is not None:
            report.resumed_batches += 1
        else:
            label = batch[0].group or batch[0].id
            counter = UsageCounter(recording, _progress(say, name, label, len(batch)))
            say(name, f"scoring {len(batch)} row(s) of {label}")
            started = time.perf_counter()
            try:
                outcomes = _checked(runner(batch, judge, counter, workdir), len(batch))
            except Exception as exc:  # a crash fails this batch only
                outcomes = [(None, f"crashed: {_describe(exc)}")] * len(batch)
            record = {
                "key": key,
                "ids": [i.id for i in batch],
                "outcomes": outcomes,
                "usage": asdict(counter.usage),
                "wall_s": time.perf_counter() - started,
            }
            if any(score is not None for score, _ in outcomes):
                store.add(record)
        report.usage.add(Usage(**record["usage"]))
        report.wall_s += float(record["wall_s"])
        for item_id, (score, why) in zip(record["ids"], record["outcomes"], strict=True):
            report.scores[item_id] = score
            if score is None:
                reasons[_first_line(why)] += 1


def _progress(
    say: Callable[[str, str], None], name: str, label: str, rows: int
) -> Callable[[Usage, int], None]:
    """The progress lines of one metric within one article: rows finished (where the metric
    says) and the judge replies so far, those replayed from the recording apart."""

    def tell(usage: Usage, rows_done: int) -> None:
        done = f"{rows_done}/{rows} row(s) done, " if rows_done else ""
        replayed = f", {usage.replayed_calls} replayed" if usage.replayed_calls else ""
        failed = f", {usage.failed_calls} failed" if usage.failed_calls else ""
        say(name, f"{label}: {done}{usage.calls} call(s){replayed}{failed}")

    return tell


def _checked(outcomes: Any, n: int) -> list[Outcome]:
    """Outcomes as (score, reason) pairs; a score that is not a finite number is a failure."""
    outcomes = list(outcomes)
    if len(outcomes) != n:
        raise RuntimeError(f"the metric returned {len(outcomes)} results for {n} rows")
    out: list[Outcome] = []
    for score, why in outcomes:
        if why is not None or score is None:
            out.append((None, str(why or "no score")))
        elif isinstance(score, bool) or not isinstance(score, int | float):
            out.append((None, f"not a number: {score!r}"))
        elif not math.isfinite(float(score)):
            out.append((None, "the metric gave NaN (it failed on this row)"))
        else:
            out.append((float(score), None))
    return out


def _first_line(text: str | None) -> str:
    line = (text or "unscored").strip().splitlines()[0] if (text or "").strip() else "unscored"
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def _agreement(
    report: MetricReport,
    items: Sequence[BenchItem],
    ratings: Sequence[str],
    resamples: int,
    seed: int,
    level: float,
) -> list[RatingAgreement]:
    if report.error is not None:
        return []
    has_groups = any(item.group is not None for item in items)
    has_systems = any(item.system is not None for item in items)
    rows = [{"id": item.id, "score": report.scores.get(item.id)} for item in items]
    labels = [
        {"id": item.id, "_group": item.group, "_system": item.system, **dict(item.labels)}
        for item in items
    ]
    found = agreement(
        rows,
        labels,
        [("score", rating) for rating in ratings],
        group_column="_group" if has_groups else None,
        system_column="_system" if has_systems else None,
        resamples=resamples,
        seed=seed,
        level=level,
    )
    out = []
    for pair in found.pairs:
        first = pair.levels[0]
        system = next((lvl for lvl in pair.levels if lvl.level == "system"), None)
        out.append(
            RatingAgreement(
                rating=pair.label,
                summary=first.spearman,
                system=None if system is None else system.spearman,
                level=first.level,
            )
        )
    return out


def _comparisons(
    reports: Sequence[MetricReport],
    items: Sequence[BenchItem],
    ratings: Sequence[str],
    resamples: int,
    seed: int,
    level: float,
) -> list[PairedDifference]:
    """Ours against each peer (or, without ours, the first metric against the others)."""
    ran = [r for r in reports if r.error is None]
    if len(ran) < 2:
        return []
    first = next((r for r in ran if r.name == "ours"), ran[0])
    out = []
    for other in ran:
        if other is first:
            continue
        for rating in ratings:
            out.append(paired_difference(first, other, items, rating, resamples, seed, level))
    return out


def paired_difference(
    a: MetricReport,
    b: MetricReport,
    items: Sequence[BenchItem],
    rating: str,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> PairedDifference:
    """``a``'s summary-level Spearman with ``rating`` minus ``b``'s, on the rows both scored
    (and rated): per group, then the mean over the groups where both are defined, with a
    bootstrap over those groups. Without groups: pooled Spearman, bootstrap over rows."""
    rows = [
        (item, a.scores.get(item.id), b.scores.get(item.id), item.labels.get(rating))
        for item in items
    ]
    rows = [r for r in rows if r[1] is not None and r[2] is not None and r[3] is not None]
    rng = np.random.default_rng(seed)
    result = PairedDifference(first=a.name, second=b.name, rating=rating, value=None)
    if not rows:
        return result
    if any(item.group is not None for item, *_ in rows):
        by_group: dict[str, list[tuple[float, float, float]]] = {}
        for item, x, y, h in rows:
            if item.group is not None:
                by_group.setdefault(item.group, []).append((x, y, h))  # type: ignore[arg-type]
        diffs = []
        for members in by_group.values():
            if len(members) < MIN_GROUP:
                continue
            m = np.array(members, dtype=float)
            da = float(stats.spearman(m[:, 0], m[:, 2]))
            db = float(stats.spearman(m[:, 1], m[:, 2]))
            if math.isfinite(da) and math.isfinite(db):
                diffs.append(da - db)
        result.units = len(diffs)
        if not diffs:
            return result
        d = np.array(diffs)
        boot = stats.bootstrap_means(d, resamples, rng)[:, 0]
        value = float(d.mean())
    else:
        m = np.array([(x, y, h) for _, x, y, h in rows], dtype=float)
        n = len(m)
        result.units = n
        if n < MIN_GROUP:
            return result
        value = float(stats.spearman(m[:, 0], m[:, 2])) - float(stats.spearman(m[:, 1], m[:, 2]))
        if not math.isfinite(value):
            return result
        idx = rng.integers(0, n, size=(resamples, n))
        boot = np.asarray(stats.spearman(m[idx, 0], m[idx, 2])) - np.asarray(
            stats.spearman(m[idx, 1], m[idx, 2])
        )
    result.value = stats.rounded(value)
    low, high = stats.percentile_interval(boot, level)
    if math.isfinite(low):
        result.low, result.high = stats.rounded(low), stats.rounded(high)
    return result
