"""The ``summary-eval`` command line (typer): ``score`` a file of summaries, rebuild a ``report``.

Exit status of ``score``: 0 every row scored, 1 some rows failed (bad input or unscored; the
summary line says how many), 2 usage error (bad option, unreadable input, judge misconfigured),
130 interrupted (finished rows are kept; rerun the same command to resume).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
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

from .. import ScoreOptions
from ..adapter_kit import DEFAULTS, option_help
from .inputs import Columns, InputError, detect_format, read_rows
from .judge_wait import InFlightJudge, JudgeWaitColumn, in_flight_of
from .models import load_models
from .paths import PathProblem, check_run_paths
from .report import ReportInfo, stability_section, write_report
from .results import (
    NEEDS_JUDGE,
    STATUS_BAD_INPUT,
    STATUS_OK,
    STATUS_UNSCORED,
    ResultsWriter,
    Row,
    detect_result_format,
    read_results,
    score_keys,
    spread_keys,
)
from .runner import plan_run, score_rows
from .table import SHORT_NAMES, results_table

EXIT_OK = 0
EXIT_ROWS_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

ENABLE_HINT = (
    "To score them, configure an OpenAI-compatible judge: --base-url URL --model NAME "
    "(vLLM, Ollama, llama.cpp, LM Studio…), or set OPENAI_API_KEY (and optionally "
    "OPENAI_MODEL / OPENAI_BASE_URL)."
)

app = typer.Typer(
    name="summary-eval",
    help="Score LLM-written summaries against their sources; write results and an HTML report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        out.print(f"summary-eval {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Score LLM-written summaries against their sources; write results and an HTML report."""


class RateColumn(ProgressColumn):
    """Rows per second since the run started (rich's own speed column counts bytes)."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        if not elapsed or not task.completed:
            return Text("-- rows/s", style="progress.data.speed")
        return Text(f"{task.completed / elapsed:.2f} rows/s", style="progress.data.speed")


def default_cache_path() -> Path:
    """The persistent judge cache under the user's cache directory (platformdirs)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("summary-eval")) / "judge-cache.sqlite3"


def default_output(input_path: Path) -> Path:
    return Path.cwd() / f"{input_path.stem}.results.jsonl"


def default_report(output: Path) -> Path:
    stem = output.name
    for suffix in (".jsonl", ".ndjson", ".csv"):
        stem = stem.removesuffix(suffix)
    return output.with_name(f"{stem.removesuffix('.results')}.report.html")


def _usage_error(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(EXIT_USAGE)


def build_judge(
    *,
    model: str | None,
    base_url: str | None,
    no_judge: bool,
    retries: int,
    concurrency: int,
    cache: Path | None,
    timeout: float = 120.0,
) -> tuple[Any, str]:
    """The wrapped OpenAI-compatible judge and its description, or (None, why there is none)."""
    env_configured = bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))
    if no_judge:
        return None, "none (--no-judge)"
    if not (model or base_url or env_configured):
        return None, "none configured"
    from ..judge import robust_judge
    from ..openai_judge import OpenAIJudge

    try:
        inner = OpenAIJudge(model, base_url=base_url, timeout=timeout)
    except ValueError as exc:
        raise _usage_error(f"cannot configure the judge: {exc}") from None
    where = str(inner.client.base_url).rstrip("/")
    from .check_judge import ensure_reachable

    problem = ensure_reachable(where, inner.client.api_key, timeout)
    if problem:
        raise _usage_error(f"the judge is not reachable: {problem}")
    judge = robust_judge(  # calls in flight are tracked for the progress line (a hung server)
        InFlightJudge(inner),
        retries=retries,
        cache=cache if cache is not None else False,
        concurrency=concurrency,
    )
    cache_text = f"cache {cache}" if cache is not None else "no cache"
    return judge, f"{inner.model_id} at {where} ({cache_text})"


def _core(name: str, *flags: str, **kwargs: Any) -> Any:
    """The flag of core option ``name``, with the help declared in :mod:`shared.options`."""
    return typer.Option(*flags, help=option_help(name), **kwargs)


@app.command()
def score(
    ctx: typer.Context,
    input_path: Annotated[
        Path, typer.Argument(metavar="INPUT", help="JSONL or CSV with source and summary columns.")
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Results file, .jsonl or .csv (default: ./<INPUT stem>.results.jsonl).",
        ),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(help="HTML report (default: beside the results, <stem>.report.html)."),
    ] = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="Write no report.")] = False,
    input_format: Annotated[
        str | None, typer.Option(help="jsonl or csv (default: from the extension).")
    ] = None,
    source_column: Annotated[str, typer.Option(help="Column holding the source.")] = "source",
    summary_column: Annotated[str, typer.Option(help="Column holding the summary.")] = "summary",
    id_column: Annotated[
        str, typer.Option(help="Column holding the row id (default: row number).")
    ] = "id",
    questions_column: Annotated[
        str,
        typer.Option(help="Column with the row's own questions (JSON list, or one per line)."),
    ] = "questions",
    model: Annotated[
        str | None, typer.Option(help="Judge model (env OPENAI_MODEL, else gpt-4o-mini).")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible server, e.g. http://localhost:11434/v1 (env OPENAI_BASE_URL)."
        ),
    ] = None,
    no_judge: Annotated[
        bool, typer.Option("--no-judge", help="Score only what needs no judge, even if one is set.")
    ] = False,
    n: Annotated[int, _core("n", "--n")] = DEFAULTS.n,
    beta: Annotated[float, _core("beta")] = DEFAULTS.beta,
    combine: Annotated[str, _core("combine")] = DEFAULTS.combine,
    dimensions: Annotated[
        str | None,
        typer.Option(help="Comma-separated text dimensions to compute (default: all)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(min=1, help="Rows scored at once, and judge calls in flight at most.")
    ] = DEFAULTS.concurrency,
    retries: Annotated[int, _core("retries", min=0)] = DEFAULTS.retries,
    spacy_model: Annotated[str, _core("spacy_model")] = DEFAULTS.spacy_model,
    language: Annotated[str | None, _core("language")] = DEFAULTS.language,
    density_target: Annotated[float, _core("density_target")] = DEFAULTS.density_target,
    density_tolerance: Annotated[float, _core("density_tolerance")] = DEFAULTS.density_tolerance,
    coherence_formula: Annotated[str, _core("coherence_formula")] = DEFAULTS.coherence_formula,
    context_budget: Annotated[int, _core("context_budget")] = DEFAULTS.context_budget,
    timeout: Annotated[
        float,
        typer.Option(min=1, help="Seconds one judge call may take before it counts as failed."),
    ] = 120.0,
    samples: Annotated[int, _core("samples", min=1)] = DEFAULTS.samples,
    judge_path: Annotated[str, _core("judge_path")] = DEFAULTS.judge_path,
    flip_threshold: Annotated[
        float,
        typer.Option(help="With --samples k > 1: pass mark for the share of rows that flip."),
    ] = 0.5,
    cache: Annotated[
        Path | None,
        typer.Option(help="SQLite judge cache (default: the user's cache directory)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Keep no judge cache.")] = False,
    retry_unscored: Annotated[
        bool,
        typer.Option("--retry-unscored", help="Score again rows an earlier run left unscored."),
    ] = False,
    worst: Annotated[int, typer.Option(min=0, help="Worst summaries shown in the report.")] = 10,
    threshold: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Pass mark: the table and the report mark each row pass or FAIL (on the score; "
            "without a judge, on the mean of the dimensions that track quality).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace finished rows of OUTPUT that were scored with other settings."
        ),
    ] = False,
    engine: Annotated[
        str, typer.Option(help="local, or ray (needs the ray extra; Parquet in/out, directories).")
    ] = "local",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster to join (default: start a local Ray).")
    ] = None,
    actors: Annotated[int, typer.Option(min=1, help="Scoring actors (--engine ray).")] = 2,
) -> None:
    """Score every summary of INPUT; write the results file and the HTML report.

    Rerunning the same command resumes: finished rows are kept, and judge answers already paid
    for come from the cache.
    """
    columns = Columns(source_column, summary_column, id_column, questions_column)
    if engine != "local":  # every option, as given; it always ends with typer.Exit
        from .ray_engine import score_on_ray

        score_on_ray(
            **{k: v for k, v in locals().items() if k not in ("ctx", "columns", "score_on_ray")}
        )
    try:
        fmt = detect_format(input_path, input_format)
        rows = read_rows(input_path, columns, fmt)
    except InputError as exc:
        raise _usage_error(str(exc)) from None
    output = output or default_output(input_path)
    try:
        detect_result_format(output)
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    report_path = None if no_report else (report or default_report(output))

    options: dict[str, Any] = {
        "n": n,
        "beta": beta,
        "combine": combine,
        "spacy_model": spacy_model,
        "density_target": density_target,
        "density_tolerance": density_tolerance,
        "coherence_formula": coherence_formula,
        "context_budget": context_budget,
        "samples": samples,
        "language": language,
        "judge_path": judge_path,
    }
    if dimensions is not None:
        options["dimensions"] = [d.strip() for d in dimensions.split(",") if d.strip()]
    source = ctx.get_parameter_source("context_budget")
    if getattr(source, "name", None) == "DEFAULT":  # typer's click may not be click's own enum
        # not given: the core fits the budget to the judge server's context window, if told
        del options["context_budget"]

    try:  # retries and concurrency shape the judge wrapper built below; check them alike
        ScoreOptions.from_kwargs({**options, "retries": retries, "concurrency": concurrency})
    except (TypeError, ValueError) as exc:
        raise _usage_error(f"bad option: {exc}") from None

    cache_path = None if no_cache else (cache or default_cache_path())
    try:
        check_run_paths(
            input_path,
            {
                "results file": output,
                "report": report_path,
                "judge cache": None if no_judge else cache_path,
            },
        )
    except PathProblem as exc:
        raise _usage_error(str(exc)) from None
    judge, judge_text = build_judge(
        model=model,
        base_url=base_url,
        no_judge=no_judge,
        retries=retries,
        concurrency=concurrency,
        cache=cache_path,
        timeout=timeout,
    )
    if judge is None:
        err.print(
            f"[bold yellow]No judge[/] ({judge_text}): scoring only the dimensions that need no "
            "LLM; the judged ones (score, alignment, coverage and the judged text dimensions) "
            f"are skipped. {ENABLE_HINT}"
        )
    else:
        err.print(f"Judge: {judge_text}")

    keys = score_keys()
    previous = read_results(output)
    try:
        plan = plan_run(rows, previous, judge=judge, options=options, retry_unscored=retry_unscored)
    except (TypeError, ValueError) as exc:
        raise _usage_error(f"bad option: {exc}") from None
    if plan.stale and not force:
        raise _usage_error(
            f"{len(plan.stale)} finished row(s) of {output} were scored with other settings "
            f"(signature {plan_signature_of(previous, plan.stale[0])!r}, this run "
            f"{plan.signatures[plan.stale[0]]!r}); they are not resumed. Pass --force to score "
            "them again and replace them, or write to a new file with -o."
        )
    if plan.stale:
        err.print(f"--force: scoring {len(plan.stale)} row(s) again under the new settings.")
    if plan.kept:
        err.print(
            f"Resuming: {len(plan.kept)} of {len(rows)} rows already done in {output}; "
            f"scoring {len(plan.todo)}."
        )
    if plan.todo:  # said before the bar, which would otherwise sit at 0/N while they load
        load_models(ScoreOptions.from_kwargs(options).dimension_settings, err.print)
    writer = ResultsWriter(output, keys, spread=samples > 1)
    writer.rewrite(plan.kept[row.id] for row in rows if row.id in plan.kept)
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
                    options=options,
                    keys=keys,
                    concurrency=concurrency,
                    on_row=on_row,
                )
            )
    except KeyboardInterrupt:
        writer.close()
        done = len(read_results(output))
        err.print(
            f"\n[bold yellow]Interrupted.[/] {done} finished rows are saved in {output}; "
            "run the same command again to resume (answers already paid for are cached)."
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    writer.rewrite(all_rows)

    skipped = _skipped(keys) if judge is None else []
    flips = flip_threshold if samples > 1 and judge is not None else None
    if report_path is not None:
        info = run_report_info(input_path, output, judge_text, skipped, threshold, flips)
        write_report(report_path, all_rows, keys, info, worst=worst)

    _print_table(all_rows, keys, threshold)
    if flips is not None:
        _print_stability(all_rows, keys, flips)
    raise typer.Exit(_finish(all_rows, output, report_path, skipped))


TABLE_ROWS = 25


def run_report_info(
    input_path: Path,
    output: Path,
    judge_text: str,
    skipped: list[str],
    threshold: float | None = None,
    flip_threshold: float | None = None,
) -> ReportInfo:
    """The report's facts about a scoring run (either engine): files, judge, what was skipped;
    ``flip_threshold`` only for a run with several judge samples (its stability section)."""
    return ReportInfo(
        input_path=str(input_path),
        results_path=str(output),
        judge=judge_text,
        skipped=skipped,
        enable_hint=ENABLE_HINT if skipped else "",
        command=shlex.join(["summary-eval", *sys.argv[1:]]),
        threshold=threshold,
        flip_threshold=flip_threshold,
    )


def _print_table(rows: list[Row], keys: list[str], threshold: float | None = None) -> None:
    """The scores at a glance on stdout: one line per row (the first few), every column that has
    a value somewhere, the status, and pass/FAIL with ``--threshold``; the results file and the
    report hold the rest (:mod:`.table` sizes it to the terminal)."""
    out.print(results_table(rows[:TABLE_ROWS], keys, width=out.width, threshold=threshold))
    if len(rows) > TABLE_ROWS:
        out.print(f"… and {len(rows) - TABLE_ROWS} more rows in the results file.")


def _print_stability(rows: list[Row], keys: list[str], threshold: float) -> None:
    """With --samples k > 1: how much one row moves between judge samples, per sub-score, and
    how many rows a single run could have put on the other side of ``threshold`` (the report's
    stability section, :func:`.report.stability_section`, in words)."""
    section = stability_section(rows, keys, threshold)
    if section is None:
        return
    parts = [
        f"{SHORT_NAMES.get(s.sub_score, s.sub_score)} {s.mean_sd:.3f} (max {s.max_sd:.3f})"
        for s in section["spread"]
    ]
    out.print(f"Spread over judge samples (mean sd per row): {'; '.join(parts)}.")
    out.print(f"Pass/fail flips: {section['flips']}.")


def _skipped(keys: list[str]) -> list[str]:
    """The columns a run without a judge leaves empty, whatever the rows happen to contain (a
    one-sentence summary has no coherence, but coherence was not skipped)."""
    return [k for k in keys if k in NEEDS_JUDGE]


def _finish(rows: list[Row], output: Path, report_path: Path | None, skipped: list[str]) -> int:
    ok = sum(r.get("status") == STATUS_OK for r in rows)
    unscored = sum(r.get("status") == STATUS_UNSCORED for r in rows)
    bad = sum(r.get("status") == STATUS_BAD_INPUT for r in rows)
    if skipped:  # how to enable them was said once, at the start
        err.print(f"[yellow]Skipped (no judge):[/] {', '.join(skipped)}.")
    err.print(f"Results: {output}")
    if report_path is not None:
        err.print(f"Report:  {report_path}")
    line = f"{ok} of {len(rows)} rows scored, {unscored} unscored, {bad} bad input."
    if unscored or bad:
        err.print(f"[bold red]{line}[/] The error column of the results says why.")
        if unscored:
            err.print("Rerun with --retry-unscored to try the unscored rows again.")
        return EXIT_ROWS_FAILED
    err.print(f"[bold green]{line}[/]")
    return EXIT_OK


@app.command("stub-judge")
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
        out.print(url, soft_wrap=True)
        err.print(
            f"Stub judge serving at {url} (fake answers, offline). Try: summary-eval score "
            f"examples/summaries.jsonl --base-url {url} --model stub --no-cache. Ctrl-C stops it."
        )

    try:
        serve(port, announce, stop)
    except OSError as exc:
        raise _usage_error(f"cannot serve on port {port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        stop.set()
        err.print("Stub judge stopped.")


@app.command("report")
def report_command(
    results: Annotated[Path, typer.Argument(help="A results file written by `score`.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="HTML file (default: beside RESULTS).")
    ] = None,
    worst: Annotated[int, typer.Option(min=0, help="Worst summaries shown.")] = 10,
) -> None:
    """Rebuild the HTML report from a results file (no scoring, no judge)."""
    try:
        detect_result_format(results)
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    rows = read_results(results)
    if not rows:
        raise _usage_error(f"no result rows in {results}")
    keys = score_keys()
    keys += [k for k in _numeric_columns(rows) if k not in keys]
    judges = sorted(
        {s.split("|", 1)[0].removeprefix("judge:") for r in rows if (s := r.get("signature"))}
    )
    path = output or default_report(results)
    info = ReportInfo(results_path=str(results), judge=", ".join(judges) or "unknown")
    write_report(path, rows, keys, info, worst=worst)
    err.print(f"Report: {path}")


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


def _register_extra_commands() -> None:
    """``compare``, ``agree`` and ``check-judge`` live in their own modules (they score nothing)."""
    from .check_judge import check_judge_command
    from .compare_cli import register

    register(app)
    app.command("check-judge")(check_judge_command)


_register_extra_commands()
