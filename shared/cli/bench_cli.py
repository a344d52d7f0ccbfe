"""``summary-eval bench``: ours against DeepEval's and Ragas' summarization metrics on the user's
judge (see :mod:`shared.bench` and docs/BENCH.md).

Exit status: 0 every chosen metric ran and scored at least one row, 1 a metric did not run or
scored nothing (the table says why), 2 usage error, 130 interrupted (finished articles are kept;
rerun to resume).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from ..analysis.bench import (
    DEFAULT_ARTICLES,
    DEFAULT_SEED,
    JUDGE_PATH_OF,
    METRICS,
    BenchResult,
    MetricReport,
    bench,
    installed_version,
    labelled_items,
)
from ..analysis.comparison import DEFAULT_RESAMPLES
from ..core.files import write_json
from ..core.redact import safe_record
from ..judge.server import DEFAULT_MODEL
from . import flags
from .flags import flag
from .paths import PathProblem, check_run_paths
from .terminal import console as _console
from .terminal import literal

EXIT_OK, EXIT_METRIC_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

err = _console(stderr=True)
out = _console()


def _usage_error(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {literal(message)}")
    return typer.Exit(EXIT_USAGE)


@dataclasses.dataclass(frozen=True)
class BenchFlags:
    """The flags of ``bench`` but the judge's (:class:`~shared.cli.flags.JudgeFlags`), each
    declared once (its name, its type, its default and help)."""

    metrics: str = flag(
        ",".join(METRICS),
        f"Comma-separated, from {','.join(METRICS)} (ours: the sentences path, the default; "
        "ours-two-call: the two-call path; both run by default, side by side).",
    )
    articles: int = flag(
        DEFAULT_ARTICLES, "SummEval articles drawn (whole: all their summaries).", min=1
    )
    seed: int = flag(DEFAULT_SEED, "Seed of the article draw and the bootstrap.")
    summaries: int | None = flag(
        None,
        "Cap: this many summaries per article (the same systems for every article), for "
        "plumbing runs; the default takes all 16.",
        min=1,
    )
    summeval: Path | None = flag(
        None, "The SummEval dev JSONL (default: the sample shipped in the package)."
    )
    data: Path | None = flag(
        None, "Your own rows instead of SummEval (JSONL or CSV, as `score` reads)."
    )
    labels: Path | None = flag(None, "Human labels of --data, JSONL or CSV (as `agree`).")
    mapping: list[str] | None = flag(
        None,
        "Label column(s) to correlate with (score=relevance as in `agree`, or just relevance; "
        "repeatable or comma-separated). With --data.",
        "--map",
        metavar="LABEL",
    )
    id_column: str = flag("id", "Id column of --data and --labels.")
    group_column: str | None = flag(
        None, "Labels column naming the source: summary-level correlations."
    )
    system_column: str | None = flag(None, "Labels column naming the system: system-level too.")
    source_column: str = flag("source", "Source column of --data.")
    summary_column: str = flag("summary", "Summary column of --data.")
    workdir: Path = flag(
        Path("summary-eval-bench"),
        "Folder of the kept results (per metric and article): rerun the same command to "
        "resume without paying twice.",
    )
    json_path: Path | None = flag(None, "Write the full results as JSON.", "--json")
    report: Path | None = flag(None, "HTML report (default: bench-report.html in --workdir).")
    resamples: int = flag(DEFAULT_RESAMPLES, "Bootstrap resamples.", min=1)
    max_tokens: int | None = flag(
        None, "Bound on each peer reply (their schemas have none; ours sets its own).", min=1
    )


@flags.with_flag_groups
def bench_command(args: BenchFlags, judging: flags.JudgeFlags) -> None:
    """Ours against DeepEval's and Ragas' summarization metrics on your judge.

    Agreement with human ratings (SummEval by default), calls, tokens, dollars and time, side by
    side; see docs/BENCH.md."""
    model = judging.model or os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
    if not (
        judging.base_url
        or os.environ.get("OPENAI_BASE_URL")
        or judging.api_key
        or os.environ.get("OPENAI_API_KEY")
    ):
        raise _usage_error(
            "no judge configured: --base-url URL (a local server needs no key), or an API key "
            "(--api-key or OPENAI_API_KEY)"
        )
    base_url = judging.base_url or os.environ.get("OPENAI_BASE_URL")
    chosen = _chosen_metrics(args.metrics)
    report_path = args.report or args.workdir / "bench-report.html"
    inputs = [p for p in (args.data, args.labels, args.summeval) if p is not None]
    _check_bench_paths(inputs, args.json_path, report_path)
    items, ratings, data_name, notes = _own_data(args)
    for note in notes:
        err.print(f"[yellow]note:[/] {literal(note)}")
    versions = ", ".join(f"{m} {installed_version(m) or 'not installed'}" for m in chosen)
    err.print(f"Installed: {literal(versions)}")
    try:
        result = bench(
            model=model,
            base_url=base_url,
            api_key=judging.api_key,
            metrics=chosen,
            items=items,
            ratings=ratings,
            articles=args.articles,
            seed=args.seed,
            summaries=args.summaries,
            summeval=args.summeval,
            workdir=args.workdir,
            resamples=args.resamples,
            price_in=judging.price_in,
            price_cached=judging.price_cached,
            price_out=judging.price_out,
            timeout=judging.timeout,
            max_tokens=args.max_tokens,
            notes=notes,
            data_name=data_name,
            on_metric=lambda name, message: err.print(
                f"[dim]{literal(name)}: {literal(message)}[/]"
            ),
        )
    except (ValueError, FileNotFoundError) as exc:
        raise _usage_error(str(exc)) from None
    except KeyboardInterrupt:
        err.print(
            f"[yellow]Interrupted.[/] Finished articles are kept in {literal(args.workdir)}; rerun "
            "the "
            "same command to resume without paying for them again."
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    print_result(result)
    _write_outputs(result, report_path, args.json_path)
    failed = [m.name for m in result.metrics if m.error is not None or m.scored == 0]
    raise typer.Exit(EXIT_METRIC_FAILED if failed else EXIT_OK)


def _own_data(args: BenchFlags) -> tuple[Any, Any, str | None, list[str]]:
    """The user's own rows and labels (--data, --labels, --map: all three or none), their
    ratings, their name and the notes on reading them; Nones for SummEval."""
    if args.data is None and args.labels is None and not args.mapping:
        return None, None, None, []
    if args.data is None or args.labels is None or not args.mapping:
        raise _usage_error("your own data needs all three: --data FILE --labels FILE --map")
    try:
        found = labelled_items(
            args.data,
            args.labels,
            args.mapping,
            id_column=args.id_column,
            group_column=args.group_column,
            system_column=args.system_column,
            source_column=args.source_column,
            summary_column=args.summary_column,
        )
    except (ValueError, FileNotFoundError) as exc:
        raise _usage_error(str(exc)) from None
    return found.items, found.ratings, f"{args.data} with labels {args.labels}", found.notes


def _chosen_metrics(metrics: str) -> list[str]:
    """The --metrics text as names, each known (a usage error otherwise)."""
    chosen = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in METRICS]
    if unknown or not chosen:
        raise _usage_error(
            f"--metrics: unknown {', '.join(unknown) or '(none given)'}; choose from "
            f"{', '.join(METRICS)}"
        )
    return chosen


def _check_bench_paths(inputs: list[Path], json_path: Path | None, report_path: Path) -> None:
    """No output over an input, no output that is a folder, no path given for two outputs."""
    try:
        for given in inputs:
            check_run_paths({"INPUT": given}, {"JSON file": json_path, "report": report_path})
        if not inputs:
            for what, path in (("JSON file", json_path), ("report", report_path)):
                if path is not None and path.is_dir():
                    raise PathProblem(f"the {what} path {path} is a folder; give a file name")
    except PathProblem as exc:
        raise _usage_error(str(exc)) from None
    if json_path is not None and json_path.resolve() == report_path.resolve():
        raise _usage_error(f"{json_path} is given for two outputs")


def _write_outputs(result: BenchResult, report_path: Path, json_path: Path | None) -> None:
    """The HTML report, and the JSON file when asked (no secret in either)."""
    from .bench_report import write_bench_report

    write_bench_report(report_path, result)
    err.print(f"Report: {literal(report_path)}")
    if json_path is not None:
        write_json(json_path, safe_record(result.to_dict()))  # no secret in the file
        err.print(f"JSON: {literal(json_path)}")


def _num(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:+.2f}, {high:+.2f}]"


def calls_text(m: MetricReport) -> str:
    """A metric's calls, with how many failed and how many were replayed from the recording
    (their tokens are the recorded replies': what the rows cost, not paid again now)."""
    parts = [f"{m.usage.failed_calls} failed"] if m.usage.failed_calls else []
    if m.usage.replayed_calls:
        parts.append(f"{m.usage.replayed_calls} replayed")
    return str(m.usage.calls) + (f" ({', '.join(parts)})" if parts else "")


def dollars_text(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def print_result(result: BenchResult, console: Console | None = None) -> None:
    """The terminal tables: cost per metric, agreement per rating, paired differences, and why
    rows failed."""
    console = console or out
    console.print(
        f"[bold]bench[/] {literal(result.model)}"
        + (f" at {literal(result.base_url)}" if result.base_url else "")
        + f" — {literal(result.data)}: {literal(result.rows)} rows, {literal(result.groups)} "
        f"groups; prices: {literal(result.prices)}"
    )
    numbers = (
        "scored",
        "failed",
        "calls",
        "prompt tok",
        "cached tok",
        "compl tok",
        "dollars",
        "wall s",
    )
    cost = _table("metric", "version", *numbers, right=numbers)
    for m in result.metrics:
        cost.add_row(
            m.name,
            m.version or "not installed",
            f"{m.scored}/{m.rows}",
            str(m.failed),
            calls_text(m),
            f"{m.usage.prompt_tokens:,}",
            f"{m.usage.cached_tokens:,}",
            f"{m.usage.completion_tokens:,}",
            dollars_text(m.dollars),
            f"{m.wall_s:.1f}",
        )
    console.print(cost)
    for line in shape_lines(result):
        console.print(literal(line), soft_wrap=True)
    level = f"{int(result.level * 100)}%"
    ranks = ("units", "spearman")
    agree = _table("metric", "rating", "level", *ranks, level, "system", right=ranks)
    for m in result.metrics:
        for i, a in enumerate(m.agreement):
            agree.add_row(
                m.name if i == 0 else "",
                a.rating,
                a.level,
                str(a.summary.units),
                _num(a.summary.value),
                _interval(a.summary.low, a.summary.high),
                "-" if a.system is None else _num(a.system.value),
                end_section=i == len(m.agreement) - 1,
            )
    if any(m.agreement for m in result.metrics):
        console.print(agree)
    if result.comparisons:
        diffs = ("units", "spearman diff")
        diff = _table("difference", "rating", *diffs, level, right=diffs)
        for d in result.comparisons:
            diff.add_row(
                f"{d.first} − {d.second}",
                d.rating,
                str(d.units),
                _num(d.difference),
                _interval(d.low, d.high),
            )
        console.print(diff)
    for m in result.metrics:
        for reason, count in list(m.reasons.items())[:3]:
            console.print(
                f"{literal(m.name)}: {literal(count)} row(s) not scored: {literal(reason)}",
                soft_wrap=True,
            )
        if m.resumed_batches:
            console.print(
                f"{literal(m.name)}: {literal(m.resumed_batches)} batch(es) read from the kept "
                "results"
            )
        if m.usage.replayed_calls:
            console.print(
                f"{literal(m.name)}: {literal(m.usage.replayed_calls)} of "
                f"{literal(m.usage.calls)} call(s) answered from "
                "the recorded replies in --workdir (their tokens and dollars are what those rows "
                "cost when first asked; nothing was paid for them now)",
                soft_wrap=True,
            )
    console.print(
        f"Spearman: summary level = per group, then the mean (pooled without groups); "
        f"bootstrap over groups, {literal(result.resamples)} resamples, seed "
        f"{literal(result.seed)}."
    )


def _table(*columns: str, right: tuple[str, ...]) -> Table:
    """A terminal table with these columns, those named in ``right`` right-aligned."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left")
    return table


def shape_lines(result: BenchResult) -> list[str]:
    """Which reply shape each of ours' metrics ran and, when both ran, the sentences path's cost
    against the two-call path's (its agreement is in the tables: ours − ours-two-call)."""
    ran = {m.name: m for m in result.metrics if m.name in JUDGE_PATH_OF and m.error is None}
    if not ran:
        return []
    lines = [
        "ours' reply shapes: "
        + "; ".join(f"{name} = judge_path {JUDGE_PATH_OF[name]!r}" for name in ran)
    ]
    first, second = (ran.get(name) for name in JUDGE_PATH_OF)
    if first is not None and second is not None:
        a, b = first.usage, second.usage
        parts = [
            f"calls {a.calls}/{b.calls}",
            f"completion tokens {_times(a.completion_tokens, b.completion_tokens)}",
            f"prompt tokens {_times(a.prompt_tokens, b.prompt_tokens)}",
            f"dollars {_times(first.dollars, second.dollars)}",
            f"wall {_times(first.wall_s, second.wall_s)} (the one run first also loaded the "
            "dimensions' models)",
        ]
        lines.append(f"{first.name} against {second.name}: " + ", ".join(parts))
    return lines


def _times(value: float | None, base: float | None) -> str:
    return "-" if value is None or not base else f"{value / base:.2f}x"


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_command)
