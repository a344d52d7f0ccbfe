"""The two ways ``summary-eval score`` runs its rows, behind one protocol.

``score`` (:mod:`.app`) does every step both engines share, once: read the flags into one
:class:`~shared.ScoreOptions` and the run settings, build the judge from one recipe, check the
paths, plan the run against the results file, print the estimate, and after the rows the report,
the table and the exit status. An :class:`Engine` does what differs: how input is read and
results written (JSONL/CSV here; Parquet and directories too on Ray), which judge cache the
driver keeps, and how the planned rows are scored (:class:`LocalEngine` in this process, with
the progress bar; :class:`~.ray_engine.RayEngine` on Ray actors).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..analysis.stability import with_verdicts
from ..evaluation.options import RunSettings, ScoreOptions
from ..runs.inputs import Columns, InputRow, detect_format, read_rows
from ..runs.results import (
    STATUS_OK,
    ResultsWriter,
    Row,
    detect_result_format,
    read_results,
)
from ..runs.runner import Plan, score_rows
from .common import err, fit_to_server
from .judge_wait import JudgeActivityColumn, JudgeWaitColumn, in_flight_of
from .models import load_models


@dataclass
class Job:
    """One planned run, as ``score`` hands it to an engine."""

    plan: Plan
    output: Path
    options: ScoreOptions
    """The core's options from the flags; ``context_budget`` is in :attr:`ScoreOptions.given`
    only when the flag was given (each engine's core then fits it to the server's window)."""
    settings: RunSettings
    """Timeout, concurrency and actors as the run uses them."""
    keys: list[str]
    judge: Any = None
    """The driver's wrapped judge (None: no judge)."""
    recipe: Any = None
    """What :attr:`judge` was built from (:class:`~shared.judge.config.OpenAIJudgeConfig`):
    an engine that scores elsewhere builds its judges from the same recipe."""
    retries: int = 2
    cache: Path | None = None
    """The persistent judge cache (None: none)."""
    given: frozenset[str] = frozenset()
    """The flags the user gave (the others hold their defaults)."""
    expected_calls: int | None = None
    expected_completion: int | None = None
    """The estimate's calls and completion tokens, for the progress line's ETA."""


class Engine(Protocol):
    """What differs between the engines of ``score``."""

    name: str
    judge_calls_here: bool
    """Whether the driver's judge makes the run's judge calls (so its bill is the run's)."""

    def read(self, path: Path, columns: Columns, input_format: str | None) -> list[InputRow]:
        """The input rows (raises :class:`~shared.runs.inputs.InputError`)."""
        ...

    def check_output(self, output: Path) -> None:
        """Raises ValueError (its message for the user) for a results path it cannot write."""
        ...

    def check_settings(self, settings: RunSettings) -> None:
        """Raises ValueError for run settings this engine cannot use."""
        ...

    def driver_cache(self, cache: Path | None) -> Path | None:
        """The judge cache the driver's own judge keeps."""
        ...

    def describe(self, judge_text: str, cache: Path | None, settings: RunSettings) -> str:
        """The "Judge: ..." line."""
        ...

    def previous(self, output: Path) -> list[Row]:
        """The rows an earlier run finished in ``output`` (raises ValueError: not readable)."""
        ...

    def run(self, job: Job) -> list[Row]:
        """Score ``job.plan.todo``, writing each row as it finishes; every row (kept and new)
        in input order. KeyboardInterrupt leaves every finished row saved."""
        ...


class RateColumn(ProgressColumn):
    """Rows per second, with a placeholder until the first row is done."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        if not elapsed or not task.completed:
            return Text("-- rows/s", style="progress.data.speed")
        return Text(f"{task.completed / elapsed:.2f} rows/s", style="progress.data.speed")


class LocalEngine:
    """Rows scored in this process: JSONL or CSV in and out, a progress bar, the bill."""

    name = "local"
    judge_calls_here = True

    def read(self, path: Path, columns: Columns, input_format: str | None) -> list[InputRow]:
        return read_rows(path, columns, detect_format(path, input_format))

    def check_output(self, output: Path) -> None:
        detect_result_format(output)

    def check_settings(self, settings: RunSettings) -> None:
        return None

    def driver_cache(self, cache: Path | None) -> Path | None:
        return cache

    def describe(self, judge_text: str, cache: Path | None, settings: RunSettings) -> str:
        return judge_text

    def previous(self, output: Path) -> list[Row]:
        return read_results(output)

    def run(self, job: Job) -> list[Row]:
        plan, judge = job.plan, job.judge
        concurrency = job.settings.concurrency
        judged = [r.summary for r in plan.todo if r.error is None and r.summary.strip()]
        if judge is not None and judged:  # bad and empty rows are settled without the judge
            _, concurrency = fit_to_server(
                judge,
                timeout=job.settings.timeout,
                timeout_given="timeout" in job.given,
                concurrency=concurrency,
                concurrency_given="concurrency" in job.given,
                n=job.options.n,
                judge_path=job.options.judge_path,
                summaries=judged,
            )
        if plan.todo:  # said before the bar, which would otherwise sit at 0/N while they load
            load_models(job.options.dimension_settings, err.print)
        writer = ResultsWriter(job.output, job.keys, spread=job.options.samples > 1)
        writer.rewrite(plan.kept[row.id] for row in plan.rows if row.id in plan.kept)
        writer.open_for_append()
        failed = {"n": 0}
        progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[failed]} failed"),
            JudgeActivityColumn(in_flight_of(judge), job.expected_completion, job.expected_calls),
            JudgeWaitColumn(in_flight_of(judge)),
            console=err,
        )
        try:
            with progress:
                task = progress.add_task("scoring", total=len(plan.todo), failed=0)

                def on_row(row: Row) -> None:
                    if row.get("status") != STATUS_OK:
                        failed["n"] += 1
                    progress.update(task, advance=1, failed=failed["n"])

                all_rows = asyncio.run(
                    score_rows(
                        plan,
                        writer,
                        judge=judge,
                        options=job.options,
                        keys=job.keys,
                        concurrency=concurrency,
                        on_row=on_row,
                    )
                )
        finally:
            writer.close()
        writer.rewrite(with_verdicts(all_rows, job.settings.threshold))
        return all_rows


__all__ = ["Engine", "Job", "LocalEngine", "RateColumn"]
