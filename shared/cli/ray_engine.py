"""``summary-eval score INPUT --engine ray``: the same run as the local engine, scored on Ray.

Input: a JSONL, CSV or Parquet file, or a directory of them (read in name order; a row's
position counts across the files). Rows are checked by the local engine's reader, so bad rows
get the same reasons; the driver holds the rows, the actors do the scoring
(:mod:`shared.runs.distributed`). Output: ``.jsonl``/``.csv`` (the local engine's writer) or
``.parquet``. Each finished row is written as soon as it arrives (JSONL/CSV appended and
flushed; Parquet as part files beside the output), so an interrupted run resumes like a local
one: rows already finished with the same inputs and signature are skipped. At the end the
output is rewritten once, in input order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..analysis.stability import with_verdicts
from ..core import bounded_json
from ..evaluation.options import RunSettings
from ..runs.inputs import Columns, InputError, InputRow, detect_format, read_rows
from ..runs.parquet import (
    PARQUET_SUFFIXES,
    ParquetResults,
    is_parquet,
    parquet_rows,
    read_parquet_results,
)
from ..runs.results import (
    STATUS_OK,
    ResultsWriter,
    Row,
    detect_result_format,
    read_results,
)
from ..runs.runner import stamp_run
from .common import err
from .engines import Job

INPUT_SUFFIXES = (".jsonl", ".ndjson", ".csv", *PARQUET_SUFFIXES)


def input_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in INPUT_SUFFIXES)
        if not files:
            raise InputError(f"{path} holds no .jsonl, .csv or .parquet file")
        return files
    if not path.is_file():
        raise InputError(f"input file not found: {path}")
    return [path]


def read_any(path: Path, cols: Columns, input_format: str | None) -> list[InputRow]:
    """Rows of every file, positions counted across files; duplicate ids become bad rows."""
    rows: list[InputRow] = []
    for file in input_files(path):
        if file.suffix.lower() in PARQUET_SUFFIXES or input_format == "parquet":
            part = parquet_rows(file, cols)
        else:
            part = read_rows(file, cols, detect_format(file, input_format))
        offset = len(rows)
        for row in part:
            if row.id == str(row.position) and offset:
                row.id = str(row.position + offset)  # a default id: the row number overall
            row.position += offset
            rows.append(row)
    first: dict[str, int] = {}
    for row in rows:
        if row.id in first and row.error is None:
            row.error = f"duplicate id {row.id!r} (first used by row {first[row.id]})"
            row.id = f"{row.id}#row{row.position}"
        first.setdefault(row.id, row.position)
    if not rows:
        raise InputError(f"{path} has no rows to score")
    return rows


# ---------------------------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------------------------


class RayEngine:
    """Rows scored on Ray actors (a new local instance, or the cluster at ``address``); the
    actors build their judges from the driver's recipe and keep their own caches. Input: JSONL,
    CSV, Parquet or a directory of them; output: JSONL, CSV or Parquet."""

    name = "ray"
    judge_calls_here = False  # each actor's judge: their bills are not summed here yet

    def __init__(self, address: str | None = None) -> None:
        self.address = address

    def read(self, path: Path, columns: Columns, input_format: str | None) -> list[InputRow]:
        if input_format not in (None, "jsonl", "csv", "parquet"):
            raise InputError(f"unknown input format {input_format!r}: use jsonl, csv or parquet")
        return read_any(path, columns, input_format)

    def check_output(self, output: Path) -> None:
        if is_parquet(output):
            return
        try:
            detect_result_format(output)
        except ValueError:
            raise ValueError(
                f"results file must end in .jsonl, .csv or .parquet, got {output.name!r}"
            ) from None

    def check_settings(self, settings: RunSettings) -> None:
        if settings.concurrency < settings.actors:
            raise ValueError(
                f"--concurrency ({settings.concurrency}) must be at least --actors "
                f"({settings.actors})"
            )

    def driver_cache(self, cache: Path | None) -> Path | None:
        return None  # the actors keep the cache; the driver's judge only names the run

    def describe(self, judge_text: str, cache: Path | None, settings: RunSettings) -> str:
        return f"{judge_text}; cache {cache or 'off'}; Ray, {settings.actors} actors"

    def previous(self, output: Path) -> list[Row]:
        return read_parquet_results(output) if is_parquet(output) else read_results(output)

    def run(self, job: Job) -> list[Row]:
        import ray

        from ..runs.distributed import prepare

        plan, output = job.plan, job.output
        spread = job.options.samples > 1
        writer: Any = (
            ParquetResults(output, job.keys, spread=spread)
            if is_parquet(output)
            else ResultsWriter(output, job.keys, spread=spread)
        )
        kept = [plan.kept[row.id] for row in plan.rows if row.id in plan.kept]
        if isinstance(writer, ResultsWriter):
            writer.rewrite(kept)
            writer.open_for_append()
        done: dict[str, Row] = dict(plan.kept)
        counts = {"done": 0, "failed": 0}
        if plan.todo:
            env = {k: v for k, v in os.environ.items() if k.startswith("OPENAI_")}
            started = not ray.is_initialized()
            if started:
                ray.init(
                    address=self.address,
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env={"env_vars": env} if env else None,
                )
                ray.data.DataContext.get_current().enable_progress_bars = False
            try:
                items = [
                    {
                        "id": row.id,
                        "position": row.position,
                        "source": row.source,
                        "summary": row.summary,
                        "questions": json.dumps(row.questions) if row.questions else None,
                        "error": row.error,
                    }
                    for row in plan.todo
                ]
                scored = prepare(
                    ray.data.from_items(items),
                    judge=job.recipe,
                    columns=Columns(),
                    id_given=True,
                    actors=job.settings.actors,
                    concurrency=job.settings.concurrency,
                    cache=str(job.cache) if job.cache is not None else False,
                    retries=job.retries,
                    groups=None,
                    rows_per_group=512,
                    actor_cpus=None,  # sized from the cluster: never every CPU (a hang)
                    checked=True,
                    options=job.options,
                )
                for record in scored.iter_rows():
                    row = stamp_run(bounded_json.loads(record["__row"]), plan)
                    writer.append(row)
                    done[row["id"]] = row
                    counts["done"] += 1
                    counts["failed"] += row.get("status") != STATUS_OK
                    if counts["done"] % 100 == 0 or counts["done"] == len(plan.todo):
                        err.print(
                            f"scored {counts['done']:d}/{len(plan.todo)} "
                            f"({counts['failed']:d} failed)"
                        )
            finally:
                writer.close()
                if started:
                    ray.shutdown()
        all_rows = [done[row.id] for row in plan.rows]
        writer.rewrite(with_verdicts(all_rows, job.settings.threshold))
        return all_rows
