"""The ``summary-eval`` command line (typer): ``score`` a file of summaries, rebuild a ``report``.

Exit status of ``score``: 0 every row scored, 1 some rows failed (bad input or unscored; the
summary line says how many), 2 usage error (bad option, unreadable input, judge misconfigured),
3 with ``--fail-under``: a row's verdict is FAIL, 4 with ``--fail-under``: none fails but a row's
verdict over its judge samples is inconclusive, 130 interrupted (finished rows are kept; rerun
the same command to resume).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import ScoreOptions
from ..core.redact import command_line
from ..evaluation.options import RUN_DEFAULTS, RunSettings
from ..runs.inputs import Columns, InputError
from ..runs.results import (
    score_keys,
)
from ..runs.runner import plan_run, stale_reason
from . import flags
from .common import (
    ENABLE_HINT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    _finish,
    _given,
    _print_bill,
    _print_stability,
    _print_table,
    _skipped,
    _usage_error,
    build_judge,
    checked_prices,
    default_cache_path,
    default_output,
    default_report,
    err,
    flip_mark,
    out,
    pass_mark,
    run_report_info,
    verdict_status,
)
from .coverage_map import sources_of
from .engines import Engine, Job, LocalEngine
from .flags import JudgeFlags, flag, options_from_flags, with_flag_groups, with_option_flags
from .paths import PathProblem, check_run_paths
from .questions_cli import announce_frozen
from .report import (
    write_report,
)
from .terminal import literal


def _no_flag_placeholder() -> None:
    """Typer's help shows a ``<bool>`` value placeholder after every flag (``--force <bool>``),
    though a flag takes no value: show none."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "_no_flag_placeholder", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        return shown(self, ctx)

    display_type_rich._no_flag_placeholder = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_no_flag_placeholder()

app = typer.Typer(
    name="summary-eval",
    help="Score LLM-written summaries against their sources; write results and an HTML report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        out.print(f"summary-eval {literal(__version__)}")
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


@dataclasses.dataclass(frozen=True)
class ScoreFlags:
    """The flags of ``score`` that are no scoring option and no judge's flag (those are
    :class:`~shared.cli.flags.JudgeFlags`), each declared once (its name, its type, its default
    and help): where the run reads and writes, how it runs. A new flag is a new field; ``score``
    receives them as one object."""

    output: Path | None = flag(
        None,
        "Results file, .jsonl or .csv (default: ./<INPUT stem>.results.jsonl).",
        "--output",
        "-o",
    )
    report: Path | None = flag(
        None, "HTML report (default: beside the results, <stem>.report.html)."
    )
    no_report: bool = flag(False, "Write no report.", "--no-report")
    input_format: str | None = flag(None, "jsonl or csv (default: from the extension).")
    source_column: str = flag("source", "Column holding the source.")
    summary_column: str = flag("summary", "Column holding the summary.")
    id_column: str = flag("id", "Column holding the row id (a row without one: its row number).")
    questions_column: str = flag(
        "questions", "Column with the row's own questions (JSON list, or one per line)."
    )
    no_judge: bool = flag(
        False, "Score only what needs no judge, even if one is set.", "--no-judge"
    )
    dry_run: bool = flag(
        False, "Print the estimated judge calls, tokens and cost; call no judge.", "--dry-run"
    )
    flip_threshold: float = flag(
        RUN_DEFAULTS.flip_threshold,
        "With --samples k > 1: the pass mark at which rows that flip between samples are "
        "counted (default: the run's pass mark, --threshold or --fail-under; without one, 0.5).",
        **flags.UNIT_SHARE,
    )
    cache: Path | None = flag(None, "SQLite judge cache (default: the user's cache directory).")
    no_cache: bool = flag(False, "Keep no judge cache.", "--no-cache")
    retry_unscored: bool = flag(
        False, "Score again rows an earlier run left unscored.", "--retry-unscored"
    )
    worst: int = flag(10, "Worst summaries shown in the report.", min=0)
    threshold: float | None = flag(
        None,
        "Pass mark: the table and the report mark each row pass or FAIL (on the score; "
        "without a judge, on the mean of the dimensions that track quality).",
        **flags.UNIT_SHARE,
    )
    fail_under: float | None = flag(
        None,
        "--threshold that sets the exit status: 3 if a row FAILs, 4 if none does but "
        "a row is inconclusive over its judge samples (--samples k > 1).",
        **flags.UNIT_SHARE,
    )
    inconclusive: str | None = flag(
        None, "With --fail-under: count an inconclusive row as pass or fail."
    )
    force: bool = flag(
        False, "Replace finished rows of OUTPUT that were scored with other settings.", "--force"
    )
    engine: str = flag("local", "local, or ray (needs the ray extra; Parquet in/out, directories).")
    ray_address: str | None = flag(None, "Ray cluster to join (default: start a local Ray).")
    actors: int = flag(RUN_DEFAULTS.actors, "Scoring actors (--engine ray).", min=1)


@app.command()
@with_option_flags
@with_flag_groups
def score(
    ctx: typer.Context,
    input_path: Annotated[
        Path, typer.Argument(metavar="INPUT", help="JSONL or CSV with source and summary columns.")
    ],
    args: ScoreFlags,
    judging: JudgeFlags,
    **option_flags: Any,
) -> None:
    """Score every summary of INPUT; write the results file and the HTML report.

    Rerunning the same command resumes: finished rows are kept, and judge answers already paid
    for come from the cache.
    """
    given = frozenset(name for name in ctx.params if _given(ctx, name))
    engine_ = _engine(args.engine, args.ray_address)
    columns = Columns(
        args.source_column, args.summary_column, args.id_column, args.questions_column
    )
    try:
        rows = engine_.read(input_path, columns, args.input_format)
    except InputError as exc:
        raise _usage_error(str(exc)) from None
    output = args.output or default_output(input_path)
    try:
        engine_.check_output(output)
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    report_path = None if args.no_report else (args.report or default_report(output))
    core = options_from_flags(option_flags, given)
    # retries and concurrency shape the judge wrapper built below, not the core's options
    retries, concurrency = core.pop("retries"), core.pop("concurrency")
    threshold = pass_mark(args.threshold, args.fail_under, args.inconclusive)
    settings = RunSettings(
        timeout=judging.timeout,
        threshold=threshold,
        fail_under=args.fail_under,
        inconclusive=args.inconclusive,
        flip_threshold=args.flip_threshold,
        actors=args.actors,
        concurrency=concurrency,
    )
    options = _checked_options(core, engine_, settings, retries=retries)
    cache_path = None if args.no_cache else (args.cache or default_cache_path())
    _check_paths(input_path, output, report_path, None if args.no_judge else cache_path, options)
    judge, judge_text, recipe = build_judge(
        model=judging.model,
        base_url=judging.base_url,
        no_judge=args.no_judge,
        retries=retries,
        concurrency=concurrency,
        cache=engine_.driver_cache(cache_path),
        timeout=judging.timeout if "timeout" in given else None,
        api_key=judging.api_key,
        prices=checked_prices(
            judging.model,
            judging.base_url,
            judging.price_in,
            judging.price_cached,
            judging.price_out,
        ),
        check=not args.dry_run,
    )
    _announce_judge(judge, judge_text, options, engine_, cache_path, settings)
    keys = score_keys()
    plan = _plan(engine_, rows, output, judge, options, args.retry_unscored, args.force)
    plan.run = {"input": str(input_path), "command": command_line(sys.argv[1:])}
    announce_frozen(options, rows, plan.run)  # --questions: frozen, generated and stale sources
    job = Job(
        plan=plan,
        output=output,
        options=options,
        settings=settings,
        keys=keys,
        judge=judge,
        recipe=recipe,
        retries=retries,
        cache=cache_path,
        given=given,
    )
    if judge is not None and plan.todo and (engine_.judge_calls_here or args.dry_run):
        # (on Ray only for --dry-run: the driver makes no call, and loads no model for one)
        _estimate(job, every_row=args.dry_run)
    if args.dry_run:
        err.print("--dry-run: no judge was called.")
        raise typer.Exit(EXIT_OK)
    all_rows = _run(engine_, job, output)
    bill = _print_bill(judge) if engine_.judge_calls_here else ""
    skipped = _skipped(keys) if judge is None else []
    flips = None
    if options.samples > 1 and judge is not None:
        flips = flip_mark(args.flip_threshold, "flip_threshold" in given, threshold)
    if report_path is not None:
        info = run_report_info(input_path, output, judge_text, skipped, threshold, flips)
        info.bill = bill
        sources = sources_of(plan.rows, all_rows)  # the results file holds no source
        write_report(report_path, all_rows, keys, info, worst=args.worst, sources=sources)
    _print_table(all_rows, keys, threshold)
    if flips is not None:
        _print_stability(all_rows, keys, flips, threshold)
    status = _finish(all_rows, output, report_path, skipped)
    raise typer.Exit(status or verdict_status(all_rows, settings.fail_under, settings.inconclusive))


def _checked_options(
    core: dict[str, Any], engine: Engine, settings: RunSettings, *, retries: int
) -> ScoreOptions:
    """The core's options from their flags, every value checked before any judge is built."""
    try:
        options = ScoreOptions.from_kwargs(core)
        # retries and concurrency shape the judge wrapper: checked alike
        options.merged(retries=retries, concurrency=settings.concurrency)
        engine.check_settings(settings)
    except (TypeError, ValueError) as exc:
        raise _usage_error(f"bad option: {exc}") from None
    return options


def _check_paths(
    input_path: Path,
    output: Path,
    report: Path | None,
    cache: Path | None,
    options: ScoreOptions,
) -> None:
    """No output of the run is the input, the frozen questions file, another output, or a
    folder."""
    frozen = options.questions_file
    inputs = {"INPUT": input_path}
    if frozen and frozen.path:
        inputs["--questions file"] = Path(frozen.path)
    try:
        check_run_paths(inputs, {"results file": output, "report": report, "judge cache": cache})
    except PathProblem as exc:
        raise _usage_error(str(exc)) from None


def _announce_judge(
    judge: Any,
    judge_text: str,
    options: ScoreOptions,
    engine: Engine,
    cache_path: Path | None,
    settings: RunSettings,
) -> None:
    """The judge line on stderr; --samples without a judge is a usage error."""
    if judge is None and options.samples > 1:
        raise _usage_error(
            f"--samples {options.samples} needs a judge: only the judged sub-scores vary "
            f"between samples ({judge_text}). Configure a judge, or drop --samples."
        )
    if judge is None:
        err.print(
            f"[bold yellow]No judge[/] ({literal(judge_text)}): scoring only the dimensions that "
            "need no LLM; the judged ones (score, alignment, coverage and the judged text "
            f"dimensions) are skipped. {literal(ENABLE_HINT)}"
        )
    else:
        err.print(f"Judge: {literal(engine.describe(judge_text, cache_path, settings))}")


def _plan(
    engine: Engine,
    rows: Any,
    output: Path,
    judge: Any,
    options: ScoreOptions,
    retry_unscored: bool,
    force: bool,
) -> Any:
    """Which rows to score and which an earlier run finished (a stale row only with --force)."""
    try:
        previous = engine.previous(output)
    except ValueError as exc:  # not UTF-8: never rewritten
        raise _usage_error(str(exc)) from None
    try:
        plan = plan_run(rows, previous, judge=judge, options=options, retry_unscored=retry_unscored)
    except (TypeError, ValueError) as exc:
        raise _usage_error(f"bad option: {exc}") from None
    if plan.stale and not force:
        raise _usage_error(
            f"{len(plan.stale)} finished row(s) of {output} were scored with other settings "
            f"({stale_reason(previous, plan)}); they are not resumed. Pass --force to score "
            "them again and replace them, or write to a new file with -o."
        )
    if plan.stale:
        err.print(f"--force: scoring {len(plan.stale)} row(s) again under the new settings.")
    if plan.kept:
        err.print(
            f"Resuming: {len(plan.kept)} of {len(rows)} rows already done in {literal(output)}; "
            f"scoring {len(plan.todo)}."
        )
    return plan


def _estimate(job: Job, *, every_row: bool) -> None:
    """The estimated calls, tokens and cost on stderr, kept on ``job`` for the progress line."""
    from ..judge.wrappers import judge_prices
    from .bill import estimate_run, estimate_text

    pairs = [(r.source, r.summary) for r in job.plan.todo if r.error is None]
    try:
        estimate = estimate_run(pairs, job.options, every_row=every_row)
    except Exception as exc:  # an estimate must never stop a run
        err.print(f"[yellow]No estimate:[/] {literal(type(exc).__name__)}: {literal(exc)}")
    else:
        job.expected_completion, job.expected_calls = estimate.completion_tokens, estimate.calls
        err.print(literal(estimate_text(estimate, judge_prices(job.judge))))


def _run(engine: Engine, job: Job, output: Path) -> list[dict[str, Any]]:
    """Every row of the results after the run; on Ctrl-C what was kept, and exit 130."""
    try:
        return engine.run(job)
    except KeyboardInterrupt:
        try:
            saved = {str(row.get("id")) for row in engine.previous(output)}
            done = f"{len(saved)} finished rows are"
        except Exception:  # the count is a courtesy: the rows are saved either way
            done = "Finished rows are"
        err.print(
            f"\n[bold yellow]Interrupted.[/] {literal(done)} saved in {literal(output)}; "
            "run the same command again to resume (answers already paid for are cached)."
        )
        if engine.judge_calls_here:
            _print_bill(job.judge)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _engine(name: str, ray_address: str | None) -> Engine:
    """The engine ``--engine`` names (the Ray one needs the ray extra)."""
    if name == "local":
        return LocalEngine()
    if name != "ray":
        raise _usage_error(f"unknown engine {name!r}: use local or ray")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise _usage_error(
            'the ray engine needs the ray extra: pip install "summary-eval[ray]"'
        ) from None
    from .ray_engine import RayEngine

    return RayEngine(ray_address)


def _register_extra_commands() -> None:
    """``stub-judge``, ``report``, ``compare``, ``agree``, ``check-judge`` and ``bench`` live in
    their own modules (they score nothing)."""
    from .check_judge import check_judge_command
    from .compare_cli import register
    from .report_cli import report_command, stub_judge_command

    app.command("stub-judge")(stub_judge_command)
    app.command("report")(report_command)

    register(app)
    app.command("check-judge")(check_judge_command)
    from .bench_cli import register as register_bench

    register_bench(app)
    from .questions_cli import register as register_questions

    register_questions(app)


_register_extra_commands()
