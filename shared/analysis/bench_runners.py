"""The metrics :func:`~shared.analysis.bench.bench` runs, each the way its own users run it, on
the one judge (:class:`~.bench_data.JudgeConfig`): ours on both judge paths, DeepEval's
``SummarizationMetric`` and Ragas' ``SummaryScore``; which package and version is behind each.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import os
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from .bench_data import JUDGE_PATH_OF, BenchItem, JudgeConfig, UsageCounter

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
    """Ours on ``judge_path``: each path pays its own calls. Its judge cache lives for the run
    (a reply asked twice in the run is paid once); what a rerun finds is the bench's recording,
    the same for every metric, so a rerun still reports what the rows cost."""
    from ..judge.openai import OpenAIJudge
    from ..pipeline import score_summaries

    inner = OpenAIJudge(judge.model, client=judge.client(counter), timeout=judge.timeout)
    results = score_summaries(
        [(item.source, item.summary) for item in items],
        judge=inner,
        cache=True,
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


DEEPEVAL_CALLS_PER_ROW = 6
"""Judge calls DeepEval's SummarizationMetric makes for one row (truths, claims, questions, two
sets of answers, verdicts; the reason is one more when asked): its per-task limit must cover
them all."""


@contextlib.contextmanager
def deepeval_limits(timeout: float, rows: int) -> Iterator[None]:
    """DeepEval's own limits fitted to the bench's per-call ``timeout`` while it runs: one
    attempt (``DEEPEVAL_PER_ATTEMPT_TIMEOUT_SECONDS_OVERRIDE``) gets ``timeout``, one task (a
    row: all its calls, which wait behind the other ``rows``' calls on a slow server) gets
    ``timeout`` for each call of every row (``DEEPEVAL_PER_TASK_TIMEOUT_SECONDS_OVERRIDE``);
    its default, 180 s, failed every row on a slow server. A value the user set is kept; the
    variables are restored afterwards (DeepEval reads them on each use)."""
    wanted = {
        "DEEPEVAL_PER_ATTEMPT_TIMEOUT_SECONDS_OVERRIDE": timeout,
        "DEEPEVAL_PER_TASK_TIMEOUT_SECONDS_OVERRIDE": timeout
        * (DEEPEVAL_CALLS_PER_ROW + 1)
        * max(rows, 1),
    }
    before = {name: os.environ.get(name) for name in wanted}
    for name, seconds in wanted.items():
        if not before[name]:
            os.environ[name] = f"{seconds:g}"
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def progress_metric(counter: UsageCounter) -> type:
    """DeepEval's ``SummarizationMetric``, telling the bench each row it finished (its
    progress). The subclass keeps the class's name: DeepEval finds a metric's prompt templates
    by its class name (4.x: ``resolve_template(..., self.__class__.__name__, ...)``), and under
    another name every row with claims failed with "No template found"."""
    from deepeval.metrics import SummarizationMetric as Shipped

    class SummarizationMetric(Shipped):  # type: ignore[misc,valid-type]
        __doc__ = Shipped.__doc__

        async def a_measure(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().a_measure(*args, **kwargs)
            finally:
                counter.row_done()

    return SummarizationMetric


def run_deepeval(
    items: Sequence[BenchItem], judge: JudgeConfig, counter: UsageCounter, workdir: Path
) -> list[Outcome]:
    _quiet_frameworks()
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
    from deepeval.test_case import LLMTestCase

    model = _deepeval_model(judge, counter)
    cases = [
        LLMTestCase(name=item.id, input=item.source, actual_output=item.summary) for item in items
    ]
    # its banner would split the bench's table; its files belong in the work folder
    with (
        contextlib.redirect_stdout(io.StringIO()),
        _working_in(workdir.resolve()),
        deepeval_limits(judge.timeout, len(items)),
    ):
        result = evaluate(
            cases,
            [progress_metric(counter)(model=model)],
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

    async def one_row(item: BenchItem) -> Any:
        try:
            return await metric.ascore(reference_contexts=[item.source], response=item.summary)
        finally:
            counter.row_done()

    async def all_rows() -> list[Any]:
        return await asyncio.gather(*(one_row(i) for i in items), return_exceptions=True)

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
