"""``summary-eval compare A B`` (is B better than A?) and ``summary-eval agree`` (do the scores
agree with people?), registered on the main app by :func:`register`.

Exit status of ``compare``: 0 done (and every ``--fail-if-worse`` gate passed), 1 a gate failed
(or could not be checked), 2 usage error (unreadable input, unpaired ids without
``--allow-unpaired``, an output path that is an input). ``agree``: 0 done, 2 usage error.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from .. import Agreement, Comparison, UnpairedError, agreement, compare
from ..analysis.agreement import parse_mapping
from ..analysis.comparison import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    DEFAULT_TRIALS,
    MAX_RESAMPLES,
    Gate,
    format_p,
)
from ..core.files import write_json, write_text
from ..core.redact import command_line
from .common import _usage_error, read_results_file
from .compare_facts import print_facts, render_facts_html
from .terminal import console, literal, plain

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2

err = console(stderr=True)
out = console()


def _check_outputs(inputs: dict[str, Path], outputs: dict[str, Path | None]) -> None:
    """Never write over an input file, nor write two outputs to one file (links included)."""
    from .paths import PathProblem, check_distinct

    try:
        check_distinct(inputs, outputs)
    except PathProblem as exc:
        raise _usage_error(str(exc)) from None


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


# ---------------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------------


def compare_command(
    results_a: Annotated[Path, typer.Argument(metavar="A", help="Baseline results file.")],
    results_b: Annotated[Path, typer.Argument(metavar="B", help="Candidate results file.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="HTML comparison report.")
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the statistics (and per-row deltas).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the randomization.")] = (
        DEFAULT_SEED
    ),
    resamples: Annotated[
        int, typer.Option(min=1, max=MAX_RESAMPLES, help="Paired bootstrap resamples.")
    ] = (DEFAULT_RESAMPLES),
    trials: Annotated[
        int, typer.Option(min=1, max=MAX_RESAMPLES, help="Approximate randomization trials.")
    ] = (DEFAULT_TRIALS),
    fail_if_worse: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-if-worse",
            metavar="NAME[:MARGIN]",
            help="Exit 1 if B is worse than A on NAME by more than MARGIN with the interval "
            "excluding 0 (repeatable).",
        ),
    ] = None,
    allow_unpaired: Annotated[
        bool,
        typer.Option("--allow-unpaired", help="Compare the ids both files hold; list the rest."),
    ] = False,
    worst: Annotated[int, typer.Option(min=0, help="Worst regressions shown in the HTML.")] = 10,
    facts: Annotated[
        int,
        typer.Option(
            min=0,
            help="Ids listed in the terminal's fact-level diff, worst first (0: the count only; "
            "--json and -o have them all).",
        ),
    ] = 10,
) -> None:
    """Is B better than A? Paired by id: per sub-score, mean A, mean B, delta with a 95 % paired
    bootstrap interval, an approximate-randomization p-value, wins/ties/losses and a verdict;
    then, per id, the questions B answers worse and the unsupported sentences only B has."""
    _check_outputs(
        {"A": results_a, "B": results_b},
        {"HTML report": output, "JSON file": json_path},
    )
    rows_a, rows_b = read_results_file(results_a), read_results_file(results_b)
    try:
        gates = [Gate.parse(text) for text in fail_if_worse or []]
        result = compare(
            rows_a,
            rows_b,
            seed=seed,
            resamples=resamples,
            trials=trials,
            allow_unpaired=allow_unpaired,
        )
    except UnpairedError as exc:
        raise _usage_error(str(exc).replace("allow_unpaired / ", "")) from None
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    unknown = [g.name for g in gates if g.name not in result.names]
    if unknown:
        raise _usage_error(
            f"--fail-if-worse: no sub-score {', '.join(map(repr, unknown))} "
            f"(have: {', '.join(result.names)})"
        )
    if not result.paired:
        raise _usage_error("the two files share no id: nothing to compare")

    _print_comparison(result)
    print_facts(out, result.facts, facts)
    if result.only_a or result.only_b:
        err.print(
            f"[yellow]Unpaired ids left out:[/] {len(result.only_a)} only in A, "
            f"{len(result.only_b)} only in B (listed in --json)."
        )
    if set(result.signatures_a) != set(result.signatures_b):
        err.print(
            "[yellow]A and B were scored with different settings[/] (judge, options, prompts or "
            "version; see the signatures in --json): the deltas mix the summaries' change with "
            "the scorer's."
        )
    command = command_line(sys.argv[1:])
    if json_path is not None:
        payload = {"a": str(results_a), "b": str(results_b), **result.to_dict(rows=True)}
        write_json(json_path, payload)
        err.print(f"JSON:   {literal(json_path)}")
    if output is not None:
        info = CompareInfo(str(results_a), str(results_b), command=command)
        write_compare_report(output, result, info, worst=worst)
        err.print(f"Report: {literal(output)}")

    failed = False
    for gate in gates:
        passed, why = gate.check(result)
        if passed:
            err.print(f"[green]gate passed[/] {literal(why)}")
        else:
            failed = True
            err.print(f"[bold red]gate failed[/] {literal(why)}")
    raise typer.Exit(EXIT_GATE_FAILED if failed else EXIT_OK)


def _print_comparison(result: Comparison) -> None:
    """The table (sub-scores compared on at least one row), then what was left out, then the
    verdicts; rich fits it to 80 columns when stdout is not a terminal."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("sub-score", no_wrap=True)
    for name in ("n", "A", "B", "B-A", "95% interval", "p", "W/T/L"):
        table.add_column(name, justify="right", no_wrap=True)
    for s in result.sub_scores:
        if not s.n:
            continue
        style = "green" if (s.low or 0) > 0 else ("red" if (s.high or 0) < 0 else "")
        delta = _num(s.delta, True)
        table.add_row(
            Text(plain(s.name)),
            str(s.n),
            _num(s.mean_a),
            _num(s.mean_b),
            f"[{style}]{delta}[/]" if style else delta,
            f"[{_num(s.low, True)}, {_num(s.high, True)}]",
            format_p(s.p or 1.0).removeprefix("p=").removeprefix("p"),
            f"{s.wins}/{s.ties}/{s.losses}",
        )
    out.print(table)
    out.print(
        f"{literal(result.paired)} paired rows; {literal(result.resamples)} bootstrap resamples, "
        f"{literal(result.trials)} randomization trials, seed {literal(result.seed)}. W/T/L: "
        "rows where B "
        "scores higher / the same / lower."
    )
    empty = [s.name for s in result.sub_scores if not s.n]
    if empty:
        out.print(f"Not compared (no row scored on both sides): {literal(', '.join(empty))}.")
    for s in result.sub_scores:
        if s.n and (s.unscored_a or s.unscored_b or s.unscored_both):
            out.print(
                f"{literal(s.name)}: left out {literal(s.unscored_a)} rows empty in A only, "
                f"{literal(s.unscored_b)} in B only, {literal(s.unscored_both)} in both."
            )
    for line in result.verdicts():
        out.print(Text(plain(line)))


@dataclass
class CompareInfo:
    results_a: str
    results_b: str
    command: str = ""


def render_compare_report(result: Comparison, info: CompareInfo, *, worst: int = 10) -> str:
    """One self-contained HTML page: facts, table, forest plot, worst regressions."""
    import jinja2
    import plotly.graph_objects as go
    import plotly.offline

    shown = [s for s in result.sub_scores if s.n]
    fig = go.Figure()
    if shown:
        deltas = [s.delta or 0.0 for s in shown]
        fig.add_trace(
            go.Scatter(
                x=deltas,
                y=[s.name for s in shown],
                mode="markers",
                marker={
                    "size": 10,
                    "color": [
                        "#1a7f37"
                        if s.significant and (s.delta or 0) > 0
                        else "#c62828"
                        if s.significant
                        else "#555"
                        for s in shown
                    ],
                },
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [(s.high or 0.0) - (s.delta or 0.0) for s in shown],
                    "arrayminus": [(s.delta or 0.0) - (s.low or 0.0) for s in shown],
                },
                text=[s.verdict for s in shown],
                hoverinfo="text",
            )
        )
    fig.add_vline(x=0, line_dash="dash", line_color="#999")
    fig.update_layout(
        title=f"Delta (B - A) with {result.level:.0%} paired bootstrap intervals",
        xaxis_title="B - A",
        yaxis={"autorange": "reversed"},
        height=120 + 40 * max(1, len(shown)),
        margin={"l": 120, "r": 20, "t": 50, "b": 40},
    )
    forest = fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id="forest-plot",
        default_height=fig.layout.height,
        config={"displayModeBar": False, "responsive": True},
    )
    worst_rows = result.worst_regressions(worst)
    names = [s.name for s in shown]
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = lambda v: "—" if v is None else f"{v:.3f}"
    env.filters["signed"] = lambda v: "—" if v is None else f"{v:+.3f}"
    env.filters["p"] = lambda v: "—" if v is None else format_p(v)
    return env.from_string(TEMPLATE).render(
        info=info,
        result=result,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        plotly_js=jinja2.utils.markupsafe.Markup(plotly.offline.get_plotlyjs()),
        forest=jinja2.utils.markupsafe.Markup(forest),
        worst=worst_rows,
        facts=jinja2.utils.markupsafe.Markup(render_facts_html(result.facts)),
        names=names,
        has_text=any(r.summary_a or r.summary_b for r in worst_rows),
        rank_by=(
            "the headline score's delta"
            if "score" in names
            else "the mean of the row's sub-score deltas (no headline score was compared)"
        ),
    )


def write_compare_report(
    path: Path, result: Comparison, info: CompareInfo, *, worst: int = 10
) -> Path:
    write_text(path, render_compare_report(result, info, worst=worst))  # no secret on the page
    return path


TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>summary-eval compare — {{ info.results_a }} vs {{ info.results_b }}</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222;
        padding: 0 1rem; line-height: 1.4; }
 h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
 table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
 th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
 th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
 .better { color: #1a7f37; } .worse { color: #c62828; } .muted { color: #666; }
 .pair { display: grid; grid-template-columns: 1fr 1fr; gap: .8rem; }
 .summary-text { background: #f8f8f8; padding: .5rem; white-space: pre-wrap; }
 .card { border: 1px solid #ddd; border-radius: 4px; padding: .6rem .9rem; margin: 1rem 0; }
 code { font-size: .85rem; word-break: break-all; }
</style>
<script>{{ plotly_js }}</script>
</head>
<body>
<h1>summary-eval compare</h1>
<p class="muted">Generated {{ generated_at }}</p>
<table id="facts">
 <tr><td>A (baseline)</td><td>{{ info.results_a }}</td></tr>
 <tr><td>B (candidate)</td><td>{{ info.results_b }}</td></tr>
 <tr><td>Rows</td><td>{{ result.paired }} paired; {{ result.only_a | length }} only in A,
   {{ result.only_b | length }} only in B (left out)</td></tr>
 <tr><td>Statistics</td><td>{{ result.resamples }} paired bootstrap resamples
   ({{ "%.0f" % (result.level * 100) }} % percentile interval), {{ result.trials }}
   approximate randomization trials, seed {{ result.seed }}</td></tr>
 {% if info.command %}<tr><td>Command</td><td><code>{{ info.command }}</code></td></tr>{% endif %}
</table>

<h2>Verdicts</h2>
<ul id="verdicts">{% for s in result.sub_scores %}
 <li class="{{ 'better' if s.significant and s.delta > 0
   else ('worse' if s.significant else '') }}">
 {{ s.verdict }}</li>{% endfor %}
</ul>

<h2>Deltas</h2>
{{ forest }}
<table id="compare-table">
 <thead><tr><th>sub-score</th><th>n</th><th>mean A</th><th>mean B</th><th>delta</th>
 <th>interval</th><th>p</th><th>wins</th><th>ties</th><th>losses</th>
 <th>empty in A only</th><th>in B only</th><th>in both</th></tr></thead>
 <tbody>{% for s in result.sub_scores %}
 <tr><td>{{ s.name }}</td><td class="num">{{ s.n }}</td><td class="num">{{ s.mean_a | num }}</td>
 <td class="num">{{ s.mean_b | num }}</td><td class="num">{{ s.delta | signed }}</td>
 <td class="num">{% if s.n %}[{{ s.low | signed }}, {{ s.high | signed }}]
   {%- else %}—{% endif %}</td>
 <td class="num">{{ s.p | p }}</td><td class="num">{{ s.wins }}</td>
 <td class="num">{{ s.ties }}</td><td class="num">{{ s.losses }}</td>
 <td class="num">{{ s.unscored_a }}</td><td class="num">{{ s.unscored_b }}</td>
 <td class="num">{{ s.unscored_both }}</td></tr>{% endfor %}
 </tbody>
</table>

{{ facts }}

<h2>Worst regressions</h2>
<p class="muted">Rows where B scores lower than A, worst first (at most <code>--worst</code>),
 ranked by {{ rank_by }}; per-sub-score deltas, then both summaries.</p>
{% if not worst %}<p class="muted" id="no-regressions">No row where B scores lower.</p>{% endif %}
{% if worst and not has_text %}<p class="muted">The results files carry no summary text.</p>
{% endif %}
<div id="worst-regressions">
{% for r in worst %}
<div class="card">
 <strong>{{ r.id }}</strong>
 <table><tr>{% for k in names %}<th>{{ k }}</th>{% endfor %}</tr>
 <tr>{% for k in names %}<td class="num">{{ r.deltas[k] | signed }}</td>{% endfor %}</tr></table>
 <div class="pair">
  <div><div class="muted">A</div><div class="summary-text">{{ r.summary_a or "—" }}</div></div>
  <div><div class="muted">B</div><div class="summary-text">{{ r.summary_b or "—" }}</div></div>
 </div>
</div>
{% endfor %}
</div>
</body>
</html>
"""


# ---------------------------------------------------------------------------------------------
# agree
# ---------------------------------------------------------------------------------------------


def agree_command(
    results: Annotated[Path, typer.Argument(help="A results file written by `score`.")],
    labels: Annotated[
        Path, typer.Option("--labels", help="Human labels, JSONL or CSV, one row per id.")
    ],
    mapping: Annotated[
        list[str],
        typer.Option(
            "--map",
            metavar="METRIC=LABEL",
            help="Our sub-score against a label column, e.g. coverage=relevance (repeatable, "
            "or comma-separated).",
        ),
    ],
    id_column: Annotated[
        str, typer.Option(help="Labels column holding the id (default: row number, as `score`).")
    ] = "id",
    group_column: Annotated[
        str | None,
        typer.Option(help="Source column: summary-level correlations per source, then averaged."),
    ] = None,
    system_column: Annotated[
        str | None, typer.Option(help="System column: also correlate per-system means.")
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="Score >= threshold reads as the positive binary label.")
    ] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = DEFAULT_SEED,
    resamples: Annotated[
        int, typer.Option(min=1, max=MAX_RESAMPLES, help="Bootstrap resamples.")
    ] = (DEFAULT_RESAMPLES),
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the results.")] = None,
) -> None:
    """Do our scores agree with people? Spearman, Kendall and Pearson with bootstrap intervals
    (summary-level with --group-column, else pooled; system-level with --system-column), and
    accuracy and Cohen's kappa for binary or ordinal labels."""
    _check_outputs({"RESULTS": results, "--labels": labels}, {"JSON file": json_path})
    result_rows = read_results_file(results)
    if not labels.is_file():
        raise _usage_error(f"labels file not found: {labels}")
    try:
        pairs = parse_mapping(mapping)
        found = agreement(
            result_rows,
            labels,
            pairs,
            id_column=id_column,
            group_column=group_column,
            system_column=system_column,
            threshold=threshold,
            seed=seed,
            resamples=resamples,
        )
    except ValueError as exc:  # an id twice, no labels, no shared id, a misspelt name
        raise _usage_error(str(exc)) from None
    _print_agreement(found)
    if json_path is not None:
        write_json(json_path, {"results": str(results), "labels": str(labels), **found.to_dict()})
        err.print(f"JSON: {literal(json_path)}")
    raise typer.Exit(EXIT_OK)


def _print_agreement(found: Agreement) -> None:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in ("metric=label", "level", "units", "statistic", "value", "95% interval"):
        table.add_column(
            name,
            justify="right" if name in ("units", "value") else "left",
            no_wrap=name == "metric=label",
        )
    for pair in found.pairs:
        for lvl in pair.levels:
            units = f"{lvl.spearman.units}" + (
                f" of {lvl.spearman.units + lvl.skipped}" if lvl.skipped else ""
            )
            for i, name in enumerate(("spearman", "kendall", "pearson")):
                est = getattr(lvl, name)
                table.add_row(
                    Text(plain(f"{pair.metric}={pair.label}")) if i == 0 else "",
                    lvl.level if i == 0 else "",
                    units if i == 0 else "",
                    name,
                    "-" if est.value is None else f"{est.value:+.3f}",
                    "" if est.low is None else f"[{est.low:+.3f}, {est.high:+.3f}]",
                    end_section=i == 2,
                )
    out.print(table)
    for pair in found.pairs:
        extra = []
        if pair.metric_empty or pair.label_empty:
            extra.append(
                f"left out: {pair.metric_empty} empty {pair.metric}, "
                f"{pair.label_empty} empty or non-numeric {pair.label}"
            )
        if pair.accuracy is not None:
            kappa = "-" if pair.kappa is None else f"{pair.kappa:.3f}"
            extra.append(
                f"{pair.kind} labels: accuracy {pair.accuracy:.3f}, Cohen's kappa {kappa}"
                + (f" (score >= {found.threshold:g} is positive)" if pair.kind == "binary" else "")
            )
        if extra:
            out.print(Text(plain(f"{pair.metric}={pair.label} (n={pair.n}): " + "; ".join(extra))))
    out.print(
        f"{literal(found.joined)} rows joined by id; {len(found.results_only)} only in the "
        f"results, {len(found.labels_only)} only in the labels. {int(found.level * 100)} % "
        f"bootstrap intervals, {literal(found.resamples)} resamples, seed {literal(found.seed)}."
    )


def register(app: typer.Typer) -> None:
    """Add ``compare`` and ``agree`` to the ``summary-eval`` command."""
    app.command("compare")(compare_command)
    app.command("agree")(agree_command)
