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
retries it. ``ours`` and ``ours-two-call`` also keep their judge replies there, each in a SQLite
judge cache of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict
from importlib import metadata
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
from .comparison import DEFAULT_RESAMPLES

# ---------------------------------------------------------------------------------------------
# The metrics, each run as its users run it
# ---------------------------------------------------------------------------------------------

Outcome = tuple[float | None, str | None]
"""(score, None) for a scored row, (None, why) otherwise."""
Runner = Callable[[Sequence[BenchItem], JudgeConfig, UsageCounter, Path], list[Outcome]]
"""Scores a batch of rows (one article) with one metric; may raise (the batch then counts as
crashed, with the exception as the reason)."""


def _quiet_frameworks() -> None:
    """The peers' telemetry off, unless the user set these variables otherwise. (DeepEval's
    ``.deepeval`` folder is kept out of the user's working folder by running it in the bench's
    work folder: its read-only switch is read when DeepEval is first imported, which may be
    before the bench runs.)"""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")


@contextlib.contextmanager
def _working_in(folder: Path) -> Iterator[None]:
    """Run with ``folder`` as the working folder (DeepEval writes ``./.deepeval``)."""
    folder.mkdir(parents=True, exist_ok=True)
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_ours(
    items: Sequence[BenchItem],
    judge: JudgeConfig,
    counter: UsageCounter,
    workdir: Path,
    *,
    judge_path: str = "sentences",
    name: str = "ours",
) -> list[Outcome]:
    """Ours on ``judge_path``, with a judge cache of its own: each path pays its own calls."""
    from ..judge.openai import OpenAIJudge
    from ..pipeline import score_summaries

    inner = OpenAIJudge(judge.model, client=judge.client(counter), timeout=judge.timeout)
    results = score_summaries(
        [(item.source, item.summary) for item in items],
        judge=inner,
        cache=workdir / f"{name}-judge-cache.sqlite3",
        judge_path=judge_path,
    )
    return [(r.score, None) if r.scored else (None, r.error or "unscored") for r in results]


def _deepeval_model(judge: JudgeConfig, counter: UsageCounter) -> Any:
    from deepeval.models import DeepEvalBaseLLM

    from ..core.bridge import run_sync
    from ..judge.openai import OpenAIJudge

    inner = OpenAIJudge(
        judge.model,
        client=judge.client(counter),
        timeout=judge.timeout,
        max_tokens=judge.max_tokens,
    )

    class BenchJudgeModel(DeepEvalBaseLLM):
        """The bench's judge as a DeepEval model: structured replies through OpenAIJudge."""

        def __init__(self) -> None:
            super().__init__(judge.model)

        def load_model(self) -> Any:
            return inner

        def get_model_name(self) -> str:
            return judge.model

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            if schema is None:
                raise ValueError("the bench's DeepEval model answers structured prompts only")
            return await inner.generate(prompt, schema)

        def generate(self, prompt: str, schema: Any = None) -> Any:
            return run_sync(lambda: self.a_generate(prompt, schema))

    return BenchJudgeModel()


def run_deepeval(
    items: Sequence[BenchItem], judge: JudgeConfig, counter: UsageCounter, workdir: Path
) -> list[Outcome]:
    _quiet_frameworks()
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
    from deepeval.metrics import SummarizationMetric
    from deepeval.test_case import LLMTestCase

    model = _deepeval_model(judge, counter)
    cases = [
        LLMTestCase(name=item.id, input=item.source, actual_output=item.summary) for item in items
    ]
    # its banner would split the bench's table; its files belong in the work folder
    with contextlib.redirect_stdout(io.StringIO()), _working_in(workdir.resolve()):
        result = evaluate(
            cases,
            [SummarizationMetric(model=model)],
            async_config=AsyncConfig(run_async=True),
            display_config=DisplayConfig(print_results=False, show_indicator=False),
            error_config=ErrorConfig(ignore_errors=True),
        )
    by_name: dict[str, Outcome] = {}
    for test_result in result.test_results:
        data = (test_result.metrics_data or [None])[0]
        if data is None:
            by_name[str(test_result.name)] = (None, "DeepEval returned no metric data")
        elif data.error:
            by_name[str(test_result.name)] = (None, str(data.error))
        else:
            by_name[str(test_result.name)] = (data.score, None)
    return [by_name.get(item.id, (None, "DeepEval returned no result")) for item in items]


def run_ragas(
    items: Sequence[BenchItem], judge: JudgeConfig, counter: UsageCounter, workdir: Path
) -> list[Outcome]:
    _quiet_frameworks()
    from ragas.llms import llm_factory
    from ragas.metrics.collections import SummaryScore

    from ..core.bridge import run_sync

    options = {"max_tokens": judge.max_tokens} if judge.max_tokens else {}
    llm = llm_factory(judge.model, client=judge.client(counter), **options)
    metric = SummaryScore(llm=llm)

    async def all_rows() -> list[Any]:
        return await asyncio.gather(
            *(metric.ascore(reference_contexts=[i.source], response=i.summary) for i in items),
            return_exceptions=True,
        )

    outcomes: list[Outcome] = []
    for found in run_sync(all_rows):
        if isinstance(found, BaseException):
            outcomes.append((None, _describe(found)))
        else:
            outcomes.append((getattr(found, "value", found), None))
    return outcomes


RUNNERS: dict[str, Runner] = {
    **{n: functools.partial(run_ours, judge_path=p, name=n) for n, p in JUDGE_PATH_OF.items()},
    "deepeval": run_deepeval,
    "ragas": run_ragas,
}
PACKAGES = {
    **dict.fromkeys(JUDGE_PATH_OF, "summary-eval"),
    "deepeval": "deepeval",
    "ragas": "ragas",
}


def installed_version(metric: str) -> str | None:
    """The installed version of the package behind ``metric`` (None: not installed)."""
    if metric in JUDGE_PATH_OF:
        from .._version import __version__

        return __version__
    package = PACKAGES.get(metric)
    if package is None:
        return None
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")


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
    reasons: Counter[str] = Counter()
    for batch in _batches(items):
        key = _digest([(i.id, i.source, i.summary) for i in batch])
        record = store.batches.get(key)
        if record is not None:
            report.resumed_batches += 1
        else:
            counter = UsageCounter()
            say(name, f"scoring {len(batch)} row(s) of {batch[0].group or batch[0].id}")
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
    report.scored = sum(1 for s in report.scores.values() if s is not None)
    report.failed = report.rows - report.scored
    report.reasons = dict(reasons.most_common())
    if prices is not None:
        report.dollars = prices.cost(asdict(report.usage))
    say(name, f"{report.scored}/{report.rows} scored")
    return report


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
