"""The ``stub-judge`` and ``report`` commands: serve the fake judge; rebuild the HTML report from
a results file. Registered on the app by :mod:`shared.cli.app`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..runs.inputs import Columns, InputError
from ..runs.results import (
    STATUS_OK,
    Row,
    score_keys,
    spread_keys,
)
from .common import (
    ENABLE_HINT,
    _skipped,
    _usage_error,
    default_report,
    err,
    out,
    read_results_file,
)
from .paths import PathProblem, check_run_paths
from .report import (
    ReportInfo,
    bill_from_rows,
    write_report,
)
from .terminal import literal


def stub_judge_command(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: a free one).")] = 0,
) -> None:
    """Serve a fake OpenAI-compatible judge on 127.0.0.1 until Ctrl-C (offline trials, no key).

    Point --base-url (any --model name) of `score`, OpenAIJudge, a Ragas llm_factory client or a
    DeepEval model at the printed URL. Its answers come from word overlap: for trying the tools,
    not for measuring summaries.
    """
    import threading

    from .stub_judge import serve

    stop = threading.Event()

    def announce(url: str) -> None:
        out.print(literal(url), soft_wrap=True)
        err.print(
            f"Stub judge serving at {literal(url)} (fake answers, offline). Try: summary-eval "
            f"score examples/summaries.jsonl --base-url {literal(url)} --model stub --no-cache. "
            "Ctrl-C stops it."
        )

    try:
        serve(port, announce, stop)
    except OSError as exc:
        raise _usage_error(f"cannot serve on port {port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        stop.set()
        err.print("Stub judge stopped.")


def report_command(
    results: Annotated[Path, typer.Argument(help="A results file written by `score`.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="HTML file (default: beside RESULTS).")
    ] = None,
    worst: Annotated[int, typer.Option(min=0, help="Worst summaries shown.")] = 10,
    input_path: Annotated[
        Path | None,
        typer.Option(
            "--input",
            help="The scored input, for the sources' coverage maps (default: the input the run "
            "recorded, when that file is there). Only rows whose texts it reproduces are mapped.",
        ),
    ] = None,
    source_column: Annotated[str, typer.Option(help="Column holding the source.")] = "source",
    summary_column: Annotated[str, typer.Option(help="Column holding the summary.")] = "summary",
    id_column: Annotated[str, typer.Option(help="Column holding the row id.")] = "id",
) -> None:
    """Rebuild the HTML report from a results file (no scoring, no judge)."""
    rows = read_results_file(results)
    keys = score_keys()
    keys += [k for k in _numeric_columns(rows) if k not in keys]
    judges = sorted(
        {s.split("|", 1)[0].removeprefix("judge:") for r in rows if (s := r.get("signature"))}
    )
    path = output or default_report(results)
    # rows scored without a judge: the same banner of skipped dimensions as the run's report
    skipped = _skipped(keys) if judges == ["none"] else []
    run = next(
        (r["evidence"]["run"] for r in rows if isinstance(r["evidence"].get("run"), dict)), {}
    )  # the input and command recorded by the run that wrote the first such row
    info = ReportInfo(
        input_path=str(run.get("input") or ""),
        results_path=str(results),
        judge=", ".join(judges) or "unknown",
        skipped=skipped,
        enable_hint=ENABLE_HINT if skipped else "",
        command=str(run.get("command") or ""),
        bill=bill_from_rows(rows),
    )
    _check_report_path(path, results, input_path or Path(info.input_path))
    columns = Columns(source=source_column, summary=summary_column, id=id_column)
    sources = _sources(input_path or Path(info.input_path), input_path is not None, columns, rows)
    write_report(path, rows, keys, info, worst=worst, sources=sources)
    err.print(f"Report: {literal(path)}")


def _check_report_path(path: Path, results: Path, input_path: Path) -> None:
    """The report is written over neither the results nor the scored input (given, or the one
    the run recorded), and can be written."""
    read = {"RESULTS": results}
    if str(input_path) not in ("", "."):
        read["scored input"] = input_path
    try:
        check_run_paths(read, {"report": path})
    except PathProblem as exc:
        raise _usage_error(str(exc)) from None


def _sources(path: Path, given: bool, columns: Columns, rows: list[Row]) -> dict[str, str]:
    """Each row's source from the input file (none when the recorded input is gone; a given
    ``--input`` that cannot be read is a usage error), with a note when some rows are unmapped."""
    from .coverage_map import sources_of
    from .ray_engine import read_any  # directories and Parquet too; imports no Ray

    if not given and (not str(path) or str(path) == "." or not path.exists()):
        return {}
    try:
        inputs = read_any(path, columns, None)
    except (InputError, ImportError, OSError) as exc:  # Parquet without pyarrow, unreadable
        if given:
            raise _usage_error(f"--input: {exc}") from None
        return {}
    sources = sources_of(inputs, rows)
    unmapped = sum(str(r.get("id")) not in sources for r in rows if r.get("status") == STATUS_OK)
    if unmapped:
        err.print(
            f"Coverage maps: {literal(unmapped)} scored rows have no source in {literal(path)} "
            "(missing, or their texts differ from the scored ones)."
        )
    return sources


def plan_signature_of(previous: list[Row], row_id: str) -> str:
    """The signature an earlier run gave row ``row_id`` (for the refusal message)."""
    return next((str(r.get("signature")) for r in previous if str(r.get("id")) == row_id), "")


def _numeric_columns(rows: list[Row]) -> list[str]:
    skip = {"position", *spread_keys()}
    seen: dict[str, None] = {}
    for row in rows:
        for key, value in row.items():
            if key not in skip and isinstance(value, float):
                seen.setdefault(key)
    return list(seen)
