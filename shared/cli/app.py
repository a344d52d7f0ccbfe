"""The ``summary-eval`` command line (typer): ``score`` a file of summaries, rebuild a ``report``.

Exit status of ``score``: 0 every row scored, 1 some rows failed (bad input or unscored; the
summary line says how many), 2 usage error (bad option, unreadable input, judge misconfigured),
130 interrupted (finished rows are kept; rerun the same command to resume).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import ScoreOptions
from ..adapter_kit import DEFAULTS, option_help
from ..core.redact import command_line
from ..evaluation.options import RUN_DEFAULTS, RunSettings
from ..runs.inputs import Columns, InputError

# names app had from elsewhere, kept on it for the tests and callers that read them there
from ..runs.results import (  # noqa: F401
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
from ..runs.runner import plan_run, stale_reason
from .common import (  # noqa: F401 (the names app had, re-exported)
    ENABLE_HINT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_ROWS_FAILED,
    EXIT_USAGE,
    MAX_TIMEOUT,
    TABLE_ROWS,
    _cache_problems,
    _finish,
    _finite,
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
    fit_to_server,
    out,
    run_report_info,
)
from .engines import Engine, Job, LocalEngine, RateColumn  # noqa: F401 (RateColumn: was here)
from .judge_wait import InFlightJudge  # noqa: F401
from .paths import PathProblem, check_run_paths
from .report import (
    stability_section,  # noqa: F401
    write_report,
)
from .table import SHORT_NAMES, results_table  # noqa: F401
from .terminal import _FLAG_WORDS, _in_flags, literal, plain  # noqa: F401


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


def _core(name: str, *flags: str, **kwargs: Any) -> Any:
    """The flag of core option ``name``, with the help declared in
    :mod:`shared.evaluation.options`."""
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
        str, typer.Option(help="Column holding the row id (a row without one: its row number).")
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
    spacy_model: Annotated[
        str,
        typer.Option(
            help="spaCy pipeline for English, or one per language: de=de_core_news_sm,"
            "fr=fr_core_news_md."
        ),
    ] = DEFAULTS.spacy_model,
    language: Annotated[str | None, _core("language")] = DEFAULTS.language,
    density_target: Annotated[float, _core("density_target")] = DEFAULTS.density_target,
    density_tolerance: Annotated[float, _core("density_tolerance")] = DEFAULTS.density_tolerance,
    coherence_formula: Annotated[str, _core("coherence_formula")] = DEFAULTS.coherence_formula,
    context_budget: Annotated[int, _core("context_budget")] = DEFAULTS.context_budget,
    timeout: Annotated[
        float,
        typer.Option(
            min=1,
            max=MAX_TIMEOUT,
            callback=_finite,
            help="Seconds one judge call may take, its retries included, before it counts as "
            "failed (default 120; raised to fit a slow server's measured speed when not given).",
        ),
    ] = RUN_DEFAULTS.timeout,
    api_key: Annotated[
        str | None, typer.Option(help="The judge server's API key (env OPENAI_API_KEY).")
    ] = None,
    price_in: Annotated[
        float | None,
        typer.Option(min=0, help="US$ per million prompt tokens (default: the price table)."),
    ] = None,
    price_cached: Annotated[
        float | None,
        typer.Option(min=0, help="US$ per million cached prompt tokens (default: --price-in)."),
    ] = None,
    price_out: Annotated[
        float | None, typer.Option(min=0, help="US$ per million completion tokens.")
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the estimated judge calls, tokens and cost; call no judge."
        ),
    ] = False,
    samples: Annotated[int, _core("samples", min=1)] = DEFAULTS.samples,
    judge_path: Annotated[str, _core("judge_path")] = DEFAULTS.judge_path,
    flip_threshold: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            callback=_finite,
            help="With --samples k > 1: pass mark for the share of rows that flip.",
        ),
    ] = RUN_DEFAULTS.flip_threshold,
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
            callback=_finite,
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
    actors: Annotated[
        int, typer.Option(min=1, help="Scoring actors (--engine ray).")
    ] = RUN_DEFAULTS.actors,
) -> None:
    """Score every summary of INPUT; write the results file and the HTML report.

    Rerunning the same command resumes: finished rows are kept, and judge answers already paid
    for come from the cache.
    """
    given = frozenset(name for name in ctx.params if _given(ctx, name))
    engine_ = _engine(engine, ray_address)
    columns = Columns(source_column, summary_column, id_column, questions_column)
    try:
        rows = engine_.read(input_path, columns, input_format)
    except InputError as exc:
        raise _usage_error(str(exc)) from None
    output = output or default_output(input_path)
    try:
        engine_.check_output(output)
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    report_path = None if no_report else (report or default_report(output))

    # the core's options from their flags, as one object; context_budget only when given (not
    # given, the core fits it to the judge server's context window on either engine)
    core: dict[str, Any] = {
        "n": n,
        "beta": beta,
        "combine": combine,
        "spacy_model": spacy_model,
        "density_target": density_target,
        "density_tolerance": density_tolerance,
        "coherence_formula": coherence_formula,
        "samples": samples,
        "language": language,
        "judge_path": judge_path,
    }
    if "context_budget" in given:
        core["context_budget"] = context_budget
    if dimensions is not None:
        core["dimensions"] = [d.strip() for d in dimensions.split(",") if d.strip()]
    settings = RunSettings(
        timeout=timeout,
        threshold=threshold,
        flip_threshold=flip_threshold,
        actors=actors,
        concurrency=concurrency,
    )
    try:
        options = ScoreOptions.from_kwargs(core)
        # retries and concurrency shape the judge wrapper built below: checked alike
        options.merged(retries=retries, concurrency=concurrency)
        engine_.check_settings(settings)
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
    prices = checked_prices(model, base_url, price_in, price_cached, price_out)
    judge, judge_text, recipe = build_judge(
        model=model,
        base_url=base_url,
        no_judge=no_judge,
        retries=retries,
        concurrency=concurrency,
        cache=engine_.driver_cache(cache_path),
        timeout=timeout if "timeout" in given else None,
        api_key=api_key,
        prices=prices,
        check=not dry_run,
    )
    if judge is None and samples > 1:
        raise _usage_error(
            f"--samples {samples} needs a judge: only the judged sub-scores vary between "
            f"samples ({judge_text}). Configure a judge, or drop --samples."
        )
    if judge is None:
        err.print(
            f"[bold yellow]No judge[/] ({judge_text}): scoring only the dimensions that need no "
            "LLM; the judged ones (score, alignment, coverage and the judged text dimensions) "
            f"are skipped. {ENABLE_HINT}"
        )
    else:
        err.print(f"Judge: {literal(engine_.describe(judge_text, cache_path, settings))}")

    keys = score_keys()
    try:
        previous = engine_.previous(output)
    except ValueError as exc:  # not UTF-8: never rewritten
        raise _usage_error(str(exc)) from None
    try:
        plan = plan_run(rows, previous, judge=judge, options=options, retry_unscored=retry_unscored)
    except (TypeError, ValueError) as exc:
        raise _usage_error(f"bad option: {exc}") from None
    plan.run = {"input": str(input_path), "command": command_line(sys.argv[1:])}
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
    if judge is not None and plan.todo and (engine_.judge_calls_here or dry_run):
        # (on Ray only for --dry-run: the driver makes no call, and loads no model for one)
        from ..judge.wrappers import judge_prices
        from .bill import estimate_run, estimate_text

        pairs = [(r.source, r.summary) for r in plan.todo if r.error is None]
        try:
            estimate = estimate_run(pairs, options, every_row=dry_run)
        except Exception as exc:  # an estimate must never stop a run
            err.print(f"[yellow]No estimate:[/] {type(exc).__name__}: {exc}")
        else:
            job.expected_completion, job.expected_calls = estimate.completion_tokens, estimate.calls
            err.print(estimate_text(estimate, judge_prices(judge)))
    if dry_run:
        err.print("--dry-run: no judge was called.")
        raise typer.Exit(EXIT_OK)

    try:
        all_rows = engine_.run(job)
    except KeyboardInterrupt:
        try:
            saved = {str(row.get("id")) for row in engine_.previous(output)}
            done = f"{len(saved)} finished rows are"
        except Exception:  # the count is a courtesy: the rows are saved either way
            done = "Finished rows are"
        err.print(
            f"\n[bold yellow]Interrupted.[/] {done} saved in {literal(output)}; "
            "run the same command again to resume (answers already paid for are cached)."
        )
        if engine_.judge_calls_here:
            _print_bill(judge)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    bill = _print_bill(judge) if engine_.judge_calls_here else ""

    skipped = _skipped(keys) if judge is None else []
    flips = flip_threshold if samples > 1 and judge is not None else None
    if report_path is not None:
        info = run_report_info(input_path, output, judge_text, skipped, threshold, flips)
        info.bill = bill
        write_report(report_path, all_rows, keys, info, worst=worst)

    _print_table(all_rows, keys, threshold)
    if flips is not None:
        _print_stability(all_rows, keys, flips)
    raise typer.Exit(_finish(all_rows, output, report_path, skipped))


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


_register_extra_commands()
