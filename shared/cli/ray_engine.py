"""``summary-eval score INPUT --engine ray``: the same run as the local engine, scored on Ray.

Input: a JSONL, CSV or Parquet file, or a directory of them (read in name order; a row's
position counts across the files). Rows are checked by the local engine's reader, so bad rows
get the same reasons; the driver holds the rows, the actors do the scoring
(:mod:`shared.distributed`). Output: ``.jsonl``/``.csv`` (the local engine's writer) or
``.parquet``. Each finished row is written as soon as it arrives (JSONL/CSV appended and
flushed; Parquet as part files beside the output), so an interrupted run resumes like a local
one: rows already finished with the same inputs and signature are skipped. At the end the
output is rewritten once, in input order.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import bounded_json
from ..options import DEFAULTS, OPTION_NAMES, ScoreOptions
from ..runs.inputs import Columns, InputError, InputRow, detect_format, read_rows, row_from_record
from ..runs.results import (
    ResultsWriter,
    Row,
    columns,
    detect_result_format,
    read_results,
    score_keys,
)
from ..runs.runner import plan_run, stamp_settings
from .paths import PathProblem, check_run_paths
from .terminal import literal

PARQUET_SUFFIXES = (".parquet", ".pq")
INPUT_SUFFIXES = (".jsonl", ".ndjson", ".csv", *PARQUET_SUFFIXES)
PART_ROWS = 256


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
            part = _parquet_rows(file, cols)
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


def _parquet_rows(file: Path, cols: Columns) -> list[InputRow]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file)
    except Exception as exc:
        raise InputError(f"cannot read {file.name} as Parquet: {exc}") from None
    for needed, option in ((cols.source, "source"), (cols.summary, "summary")):
        if needed not in table.column_names:
            raise InputError(
                f"{file.name} has no {needed!r} column (columns: {', '.join(table.column_names)})"
                f"; map yours with --{option}-column NAME"
            )
    return [row_from_record(n, record, cols) for n, record in enumerate(table.to_pylist(), start=1)]


# ---------------------------------------------------------------------------------------------
# Parquet results: part files while running, one file at the end
# ---------------------------------------------------------------------------------------------


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in PARQUET_SUFFIXES


def parts_dir(output: Path) -> Path:
    return output.with_name(f".{output.name}.parts")


def _to_table(rows: Iterable[Row], keys: list[str], spread: bool = False) -> Any:
    import pyarrow as pa

    rows = list(rows)
    numbers = {*keys, *(f"{k}_sd" for k in keys)}
    data: dict[str, Any] = {}
    for name in columns(keys, spread):
        values = [row.get(name) for row in rows]
        if name == "evidence":
            data[name] = pa.array([json.dumps(v or {}, ensure_ascii=False) for v in values])
        elif name == "position":
            data[name] = pa.array(values, pa.int64())
        elif name in numbers:
            data[name] = pa.array(values, pa.float64())
        else:
            data[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.table(data)


def _write_atomic(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def read_parquet_results(output: Path) -> list[Row]:
    """Rows of the finished file and of any part files an interrupted run left."""
    import pyarrow.parquet as pq

    files = [output] if output.is_file() else []
    if parts_dir(output).is_dir():
        files += sorted(parts_dir(output).glob("part-*.parquet"))
    rows: list[Row] = []
    for file in files:
        try:
            records = pq.read_table(file).to_pylist()
        except Exception:
            continue  # not ours, or cut short
        for row in records:
            try:
                row["evidence"] = bounded_json.loads(row.get("evidence") or "{}")
            except json.JSONDecodeError:
                continue  # a hand-edited row: scored again
            rows.append(row)
    return rows


class ParquetResults:
    """Same face as :class:`ResultsWriter`: ``append`` (buffered into part files), ``rewrite``."""

    def __init__(self, path: Path, keys: list[str], *, spread: bool = False) -> None:
        self.path, self.keys, self.spread = path, keys, spread
        self.buffer: list[Row] = []
        self.parts = parts_dir(path)
        self.count = len(list(self.parts.glob("part-*.parquet"))) if self.parts.is_dir() else 0

    def append(self, row: Row) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= PART_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.count += 1
            _write_atomic(
                _to_table(self.buffer, self.keys, self.spread),
                self.parts / f"part-{self.count:06d}.parquet",
            )
            self.buffer = []

    def close(self) -> None:
        self.flush()

    def rewrite(self, rows: Iterable[Row]) -> None:
        self.buffer = []
        _write_atomic(_to_table(rows, self.keys, self.spread), self.path)
        shutil.rmtree(self.parts, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def run_ray(
    *,
    rows: list[InputRow],
    output: Path,
    options: dict[str, Any],
    judge_config: Any,
    judge_for_signature: Any,
    retries: int,
    concurrency: int,
    cache: Path | None,
    retry_unscored: bool,
    ray_address: str | None,
    actors: int,
    on_row: Any,
    on_plan: Any,
) -> list[Row]:
    """Score ``rows`` on Ray (a new local instance, or the cluster at ``ray_address``)."""
    import ray

    from ..runs.distributed import prepare

    keys = score_keys()
    previous = read_parquet_results(output) if is_parquet(output) else read_results(output)
    plan = plan_run(
        rows, previous, judge=judge_for_signature, options=options, retry_unscored=retry_unscored
    )
    on_plan(plan)
    spread = options.get("samples", DEFAULTS.samples) > 1
    writer: Any = (
        ParquetResults(output, keys, spread=spread)
        if is_parquet(output)
        else ResultsWriter(output, keys, spread=spread)
    )
    kept = [plan.kept[row.id] for row in rows if row.id in plan.kept]
    if isinstance(writer, ResultsWriter):
        writer.rewrite(kept)
        writer.open_for_append()
    done: dict[str, Row] = dict(plan.kept)
    if plan.todo:
        env = {k: v for k, v in os.environ.items() if k.startswith("OPENAI_")}
        started = not ray.is_initialized()
        if started:
            ray.init(
                address=ray_address,
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
            ds = ray.data.from_items(items)
            scored = prepare(
                ds,
                judge=judge_config,
                columns=Columns(),
                id_given=True,
                actors=actors,
                concurrency=concurrency,
                cache=str(cache) if cache is not None else False,
                retries=retries,
                groups=None,
                rows_per_group=512,
                actor_cpus=None,  # sized from the cluster: never every CPU (a hang)
                checked=True,
                options=options,
            )
            for record in scored.iter_rows():
                row = stamp_settings(json.loads(record["__row"]), plan.settings)
                writer.append(row)
                done[row["id"]] = row
                on_row(row)
        finally:
            writer.close()
            if started:
                ray.shutdown()
    all_rows = [done[row.id] for row in rows]
    writer.rewrite(all_rows)
    return all_rows


def core_options(
    core: dict[str, Any], dimensions: str | None, given: frozenset[str]
) -> dict[str, Any]:
    """The core's options as the local engine passes them: every core flag's value, the
    dimension list when given, and ``context_budget`` only when the user gave it, so each actor's
    core fits the budget to the judge server's context window as the local engine's does."""
    options = {k: v for k, v in core.items() if k != "context_budget" or k in given}
    if dimensions is not None:
        options["dimensions"] = [d.strip() for d in dimensions.split(",") if d.strip()]
    return options


def score_on_ray(
    *,
    engine: str,
    input_path: Path,
    output: Path | None,
    report: Path | None,
    no_report: bool,
    input_format: str | None,
    source_column: str,
    summary_column: str,
    id_column: str,
    questions_column: str,
    model: str | None,
    base_url: str | None,
    no_judge: bool,
    dimensions: str | None,
    concurrency: int,
    retries: int,
    timeout: float,
    flip_threshold: float,
    cache: Path | None,
    no_cache: bool,
    retry_unscored: bool,
    worst: int,
    ray_address: str | None,
    actors: int,
    force: bool = False,
    threshold: float | None = None,
    api_key: str | None = None,
    price_in: float | None = None,
    price_cached: float | None = None,
    price_out: float | None = None,
    dry_run: bool = False,
    given: frozenset[str] = frozenset(),
    **core: Any,
) -> None:
    """The ``score`` command on the Ray engine: same checks, outputs and exit status as local.

    ``given``: the flags the user gave (the others hold their defaults).
    ``core``: the flags of the core's options (n, beta, samples…, declared in
    :mod:`shared.options`), passed to the scorer as given, as the local engine does; any other
    flag is one this engine does not know yet, and is refused rather than ignored.
    """

    import typer

    from . import common as cli
    from .report import write_report

    if engine != "ray":
        raise cli._usage_error(f"unknown engine {engine!r}: use local or ray")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise cli._usage_error(
            'the ray engine needs the ray extra: pip install "summary-eval[ray]"'
        ) from None
    cols = Columns(source_column, summary_column, id_column, questions_column)
    if input_format not in (None, "jsonl", "csv", "parquet"):
        raise cli._usage_error(f"unknown input format {input_format!r}: use jsonl, csv or parquet")
    try:
        rows = read_any(input_path, cols, input_format)
    except InputError as exc:
        raise cli._usage_error(str(exc)) from None
    output = output or cli.default_output(input_path)
    if not is_parquet(output):
        try:
            detect_result_format(output)
        except ValueError:
            raise cli._usage_error(
                f"results file must end in .jsonl, .csv or .parquet, got {output.name!r}"
            ) from None
    report_path = None if no_report else (report or _report_path(output))
    unknown = sorted(set(core) - set(OPTION_NAMES))
    if unknown:
        flags = ", ".join("--" + name.replace("_", "-") for name in unknown)
        raise cli._usage_error(f"the ray engine does not support {flags} yet")
    options = core_options(core, dimensions, given)
    from ..runs.distributed import OpenAIJudgeConfig

    try:  # retries and concurrency shape each actor's judge wrapper; check them alike
        ScoreOptions.from_kwargs({**options, "retries": retries, "concurrency": concurrency})
    except (TypeError, ValueError) as exc:
        raise cli._usage_error(f"bad option: {exc}") from None
    if concurrency < actors:
        raise cli._usage_error(
            f"--concurrency ({concurrency}) must be at least --actors ({actors})"
        )
    cache_path = None if no_cache else (cache or cli.default_cache_path())
    try:  # as on the local engine: before the first judge call, never onto the input
        check_run_paths(
            input_path,
            {
                "results file": None if is_parquet(output) else output,
                "report": report_path,
                "judge cache": None if no_judge else cache_path,
            },
        )
    except PathProblem as exc:
        raise cli._usage_error(str(exc)) from None
    prices = cli.checked_prices(model, base_url, price_in, price_cached, price_out)
    local_judge, judge_text = cli.build_judge(
        model=model,
        base_url=base_url,
        no_judge=no_judge,
        retries=retries,
        concurrency=concurrency,
        cache=None,
        timeout=timeout,
        api_key=api_key,
        prices=prices,
        check=not dry_run,
    )
    config = None
    if local_judge is not None:
        from ..judge.wrappers import base_judge

        inner: Any = base_judge(local_judge)
        # a key given by flag travels to the actors; otherwise each reads OPENAI_API_KEY
        config = OpenAIJudgeConfig(
            inner.model,
            base_url=str(inner.client.base_url),
            api_key=api_key,
            settings={"timeout": timeout, **{k: v for k, v in prices.items() if v is not None}},
        )
        cli.err.print(
            f"Judge: {literal(judge_text)}; cache {literal(cache_path or 'off')}; "
            f"Ray, {actors} actors"
        )
    else:
        cli.err.print(f"[bold yellow]No judge[/] ({judge_text}). {cli.ENABLE_HINT}")
    if dry_run:  # as on the local engine: the estimate, then no judge call at all
        if local_judge is not None:
            from ..judge.wrappers import judge_prices
            from .bill import estimate_run, estimate_text

            pairs = [(r.source, r.summary) for r in rows if r.error is None]
            cli.err.print(
                estimate_text(
                    estimate_run(pairs, options, every_row=True), judge_prices(local_judge)
                )
            )
        cli.err.print("--dry-run: no judge was called.")
        raise typer.Exit(cli.EXIT_OK)

    keys = score_keys()
    failed = {"n": 0, "done": 0}

    def on_plan(plan: Any) -> None:
        if plan.stale and not force:
            raise cli._usage_error(
                f"{len(plan.stale)} finished row(s) of {output} were scored with other settings; "
                "they are not resumed. Pass --force to score them again and replace them, or "
                "write to a new file with -o."
            )
        if plan.kept:
            cli.err.print(
                f"Resuming: {len(plan.kept)} of {len(rows)} rows already done in "
                f"{literal(output)}; scoring {len(plan.todo)}."
            )
        failed["total"] = len(plan.todo)

    def on_row(row: Row) -> None:
        failed["done"] += 1
        failed["n"] += row.get("status") != "ok"
        if failed["done"] % 100 == 0 or failed["done"] == failed.get("total"):
            cli.err.print(f"scored {failed['done']}/{failed['total']} ({failed['n']} failed)")

    try:
        all_rows = run_ray(
            rows=rows,
            output=output,
            options=options,
            judge_config=config,
            judge_for_signature=local_judge,
            retries=retries,
            concurrency=concurrency,
            cache=cache_path,
            retry_unscored=retry_unscored,
            ray_address=ray_address,
            actors=actors,
            on_row=on_row,
            on_plan=on_plan,
        )
    except KeyboardInterrupt:
        cli.err.print(
            f"\n[bold yellow]Interrupted.[/] Finished rows are saved in {literal(output)}; "
            "run the same command again to resume."
        )
        raise typer.Exit(cli.EXIT_INTERRUPTED) from None
    skipped = cli._skipped(keys) if local_judge is None else []
    sampled = options.get("samples", DEFAULTS.samples) > 1 and local_judge is not None
    flips = flip_threshold if sampled else None
    if report_path is not None:
        info = cli.run_report_info(input_path, output, judge_text, skipped, threshold, flips)
        write_report(report_path, all_rows, keys, info, worst=worst)
    cli._print_table(all_rows, keys, threshold)
    if flips is not None:
        cli._print_stability(all_rows, keys, flips)
    raise typer.Exit(cli._finish(all_rows, output, report_path, skipped))


def _report_path(output: Path) -> Path:
    stem = output.name
    for suffix in (".jsonl", ".ndjson", ".csv", *PARQUET_SUFFIXES):
        stem = stem.removesuffix(suffix)
    return output.with_name(f"{stem.removesuffix('.results')}.report.html")
