"""The HTML report: one self-contained page (plotly.js inlined, no network needed to view it).

Sections: run facts and any skipped dimensions, summary statistics per dimension, a histogram per
dimension plus an overview box plot, the worst summaries with their evidence (unsupported claims,
missed questions, vague sentences, repeated points, each dimension's reason), and the rows that
could not be scored. Dimensions are whatever keys the results carry, so new ones appear unasked.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .ranking import rank_basis, rank_value
from .results import STATUS_BAD_INPUT, STATUS_OK, STATUS_UNSCORED, Row


@dataclass
class ReportInfo:
    """Facts about the run shown at the top of the report."""

    input_path: str = ""
    results_path: str = ""
    judge: str = "none"
    skipped: list[str] = field(default_factory=list)
    enable_hint: str = ""
    command: str = ""
    generated_at: str = field(
        default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    )


def _numbers(rows: Iterable[Row], key: str) -> list[float]:
    return [float(row[key]) for row in rows if _is_number(row.get(key))]


def statistics_table(rows: Sequence[Row], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Count, mean, standard deviation, min, quartiles and max of each dimension."""
    table = []
    for key in keys:
        values = _numbers(rows, key)
        entry: dict[str, Any] = {"name": key, "n": len(values)}
        if values:
            quartiles = (
                statistics.quantiles(values, n=4, method="inclusive")
                if len(values) > 1
                else [values[0]] * 3
            )
            entry.update(
                mean=statistics.fmean(values),
                std=statistics.stdev(values) if len(values) > 1 else 0.0,
                min=min(values),
                p25=quartiles[0],
                median=quartiles[1],
                p75=quartiles[2],
                max=max(values),
            )
        table.append(entry)
    return table


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _walk(value: Any, path: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    yield path, value
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, (*path, str(key)))


def evidence_view(evidence: Mapping[str, Any]) -> dict[str, Any]:
    """The evidence worth showing for a bad summary, found by field name wherever it lives."""
    claims = [
        c
        for c in evidence.get("claims") or []
        if isinstance(c, dict) and c.get("verdict") not in ("supported", None)
    ]
    missed = sorted(
        (
            q
            for q in evidence.get("questions") or []
            if isinstance(q, dict) and q.get("counted", True) and (q.get("grade") or 0) <= 2
        ),
        key=lambda q: (-(q.get("importance") or 0), q.get("grade") or 0),
    )
    vague: list[dict[str, Any]] = []
    repeated: list[dict[str, Any]] = []
    notes: list[tuple[str, str]] = []
    for path, value in _walk(evidence):
        if not path:
            continue
        if path[-1] == "flagged" and isinstance(value, list):
            vague += [v for v in value if isinstance(v, dict)]
        elif path[-1] == "repeated_points" and isinstance(value, list):
            repeated += [v for v in value if isinstance(v, dict)]
        elif _is_dimension_result(value):
            notes.append((path[-1], value["reason"]))
    return {
        "claims": claims,
        "missed": missed,
        "vague": vague,
        "repeated": repeated,
        "notes": notes,
    }


def _is_dimension_result(value: Any) -> bool:
    """A dimension's own result: a mapping with a score and a non-empty reason."""
    return (
        isinstance(value, Mapping)
        and "score" in value
        and isinstance(value.get("reason"), str)
        and bool(value["reason"])
    )


def _histogram(values: list[float], name: str) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Histogram(
            x=values,
            xbins={"start": 0.0, "end": 1.05, "size": 0.05},  # the last bin holds the 1.0s
            marker={"color": "#4c78a8"},
            name=name,
        )
    )
    fig.update_layout(
        title={"text": f"{name} (n={len(values)})", "font": {"size": 14}},
        xaxis={"range": [0, 1.05], "title": name},
        yaxis={"title": "summaries"},
        margin={"l": 50, "r": 10, "t": 40, "b": 40},
        height=260,
        bargap=0.05,
    )
    return fig


def _overview(columns: dict[str, list[float]]) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, values in columns.items():
        fig.add_trace(go.Box(y=values, name=name, boxpoints="all", jitter=0.4, pointpos=0))
    fig.update_layout(
        title={"text": "All dimensions", "font": {"size": 14}},
        yaxis={"range": [-0.02, 1.02], "title": "score"},
        showlegend=False,
        margin={"l": 50, "r": 10, "t": 40, "b": 40},
        height=340,
    )
    return fig


def _fig_html(fig: Any, div_id: str) -> str:
    return fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        default_height=fig.layout.height,
        config={"displayModeBar": False, "responsive": True},
    )


def render_report(
    rows: Sequence[Row], keys: Sequence[str], info: ReportInfo, *, worst: int = 10
) -> str:
    """The report as one HTML string."""
    import jinja2
    import plotly.offline

    ok = [r for r in rows if r.get("status") == STATUS_OK]
    failed = [r for r in rows if r.get("status") != STATUS_OK]
    # an unscored row (the judge failed) still has the dimensions that need no judge: count them
    measured = [r for r in rows if r.get("status") != STATUS_BAD_INPUT]
    stats = statistics_table(measured, keys)
    present = {name: _numbers(measured, name) for name in keys if _numbers(measured, name)}
    plots = [
        {"name": name, "html": _fig_html(_histogram(values, name), f"plot-{name}")}
        for name, values in present.items()
    ]
    overview = _fig_html(_overview(present), "plot-overview") if present else ""
    ranked = sorted(
        (r for r in ok if rank_value(r, keys) is not None), key=lambda r: rank_value(r, keys)
    )
    worst_rows = [
        {
            "row": r,
            "rank_value": rank_value(r, keys),
            "scores": [(k, r.get(k)) for k in keys if r.get(k) is not None],
            "evidence": evidence_view(r.get("evidence") or {}),
        }
        for r in ranked[:worst]
    ]
    counts = {
        "total": len(rows),
        "ok": len(ok),
        "unscored": sum(r.get("status") == STATUS_UNSCORED for r in rows),
        "bad_input": sum(r.get("status") == STATUS_BAD_INPUT for r in rows),
    }
    signatures = sorted({r.get("signature") for r in ok if r.get("signature")})
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = lambda v: "—" if v is None else f"{v:.3f}"
    return env.from_string(TEMPLATE).render(
        info=info,
        plotly_js=jinja2.utils.markupsafe.Markup(plotly.offline.get_plotlyjs()),
        stats=stats,
        plots=[{**p, "html": jinja2.utils.markupsafe.Markup(p["html"])} for p in plots],
        overview=jinja2.utils.markupsafe.Markup(overview),
        worst=worst_rows,
        failed=failed,
        counts=counts,
        keys=list(keys),
        signatures=signatures,
        rank_basis=rank_basis(any(_is_number(r.get("score")) for r in ok)),
        empty_keys=[k for k in keys if k not in present],
    )


def write_report(
    path: Path, rows: Sequence[Row], keys: Sequence[str], info: ReportInfo, *, worst: int = 10
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(rows, keys, info, worst=worst), encoding="utf-8")
    return path


TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>summary-eval report{% if info.input_path %} — {{ info.input_path }}{% endif %}</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222;
        padding: 0 1rem; line-height: 1.4; }
 h1 { margin-bottom: .2rem; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
 table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
 th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
 th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
 .facts td:first-child { font-weight: 600; }
 .banner { background: #fff4d6; border: 1px solid #e0b84c; padding: .6rem .9rem; margin: 1rem 0;
           border-radius: 4px; }
 .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 1rem; }
 .card { border: 1px solid #ddd; border-radius: 4px; padding: .6rem .9rem; margin: 1rem 0; }
 .summary-text { background: #f8f8f8; padding: .5rem; white-space: pre-wrap; }
 .muted { color: #666; } code { font-size: .85rem; word-break: break-all; }
 .bad { color: #a40000; }
</style>
<script>{{ plotly_js }}</script>
</head>
<body>
<h1>summary-eval report</h1>
<p class="muted">Generated {{ info.generated_at }}</p>

<table class="facts" id="run-facts">
 <tr><td>Input</td><td>{{ info.input_path }}</td></tr>
 <tr><td>Results file</td><td>{{ info.results_path }}</td></tr>
 <tr><td>Judge</td><td>{{ info.judge }}</td></tr>
 <tr><td>Rows</td><td>{{ counts.total }} in total: {{ counts.ok }} scored,
   {{ counts.unscored }} unscored, {{ counts.bad_input }} bad input</td></tr>
 {% for s in signatures %}<tr><td>Signature</td><td><code>{{ s }}</code></td></tr>{% endfor %}
 {% if info.command %}<tr><td>Command</td><td><code>{{ info.command }}</code></td></tr>{% endif %}
</table>

{% if info.skipped %}
<div class="banner" id="skipped-dimensions">
 <strong>Skipped dimensions:</strong> {{ info.skipped | join(", ") }}.
 {{ info.enable_hint }}
</div>
{% endif %}

<h2>Summary statistics</h2>
<table id="stats-table">
 <thead><tr><th>dimension</th><th>n</th><th>mean</th><th>std</th><th>min</th><th>25%</th>
   <th>median</th><th>75%</th><th>max</th></tr></thead>
 <tbody>
 {% for s in stats %}
  <tr><td>{{ s.name }}</td><td class="num">{{ s.n }}</td>
  {% if s.n %}
   {% for k in ["mean", "std", "min", "p25", "median", "p75", "max"] %}
    <td class="num">{{ s[k] | num }}</td>{% endfor %}
  {% else %}<td colspan="7" class="muted">no values{% if s.name in info.skipped %}
    (skipped){% endif %}</td>{% endif %}
  </tr>
 {% endfor %}
 </tbody>
</table>

<h2>Distributions</h2>
{% if overview %}<div class="plot" id="overview">{{ overview }}</div>{% endif %}
<div class="grid" id="histograms">
{% for p in plots %}<div class="plot" data-dimension="{{ p.name }}">{{ p.html }}</div>{% endfor %}
</div>
{% if not plots %}<p class="muted">No row has a value: nothing to plot.</p>{% endif %}

<h2>Worst summaries</h2>
<p class="muted" id="rank-basis">Sorted by {{ rank_basis }}, lowest first.</p>
<div id="worst">
{% for w in worst %}
 <div class="card worst-summary" data-id="{{ w.row.id }}">
  <h3>#{{ loop.index }} — id {{ w.row.id }} ({{ w.rank_value | num }})</h3>
  <table class="scores"><tr>{% for k, v in w.scores %}<th>{{ k }}</th>{% endfor %}</tr>
   <tr>{% for k, v in w.scores %}<td class="num">{{ v | num }}</td>{% endfor %}</tr></table>
  <div class="summary-text">{{ w.row.summary or "" }}</div>
  {% if w.row.reason %}<p>{{ w.row.reason }}</p>{% endif %}
  {% if w.evidence.claims %}
   <h4>Unsupported claims</h4>
   <table class="evidence unsupported-claims"><tr><th>claim</th><th>verdict</th><th>reason</th>
     <th>source quote</th></tr>
   {% for c in w.evidence.claims %}<tr><td>{{ c.claim }}</td><td class="bad">{{ c.verdict }}</td>
     <td>{{ c.reason }}</td><td>{{ c.quote }}</td></tr>{% endfor %}</table>
  {% endif %}
  {% if w.evidence.missed %}
   <h4>Missed questions</h4>
   <table class="evidence missed-questions"><tr><th>question</th><th>importance</th>
     <th>grade</th><th>reference answer</th><th>summary's answer</th></tr>
   {% for q in w.evidence.missed %}<tr><td>{{ q.question }}</td>
     <td class="num">{{ q.importance }}</td><td class="num">{{ q.grade }}</td>
     <td>{{ q.reference_answer }}</td>
     <td>{{ q.summary_answer or "" }}</td></tr>{% endfor %}</table>
  {% endif %}
  {% if w.evidence.vague %}
   <h4>Vague sentences</h4>
   <table class="evidence vague-sentences"><tr><th>#</th><th>sentence</th><th>reason</th></tr>
   {% for v in w.evidence.vague %}<tr><td class="num">{{ v.index }}</td><td>{{ v.sentence }}</td>
     <td>{{ v.reason }}</td></tr>{% endfor %}</table>
  {% endif %}
  {% if w.evidence.repeated %}
   <h4>Repeated points</h4>
   <table class="evidence repeated-points"><tr><th>point</th><th>sentences</th></tr>
   {% for r in w.evidence.repeated %}<tr><td>{{ r.point }}</td>
     <td>{{ (r.sentences or []) | join(", ") }}</td></tr>{% endfor %}</table>
  {% endif %}
  {% if w.evidence.notes %}
   <h4>Dimensions</h4>
   <table class="evidence dimension-notes">
   {% for name, note in w.evidence.notes %}<tr><td>{{ name }}</td><td>{{ note }}</td></tr>
   {% endfor %}</table>
  {% endif %}
 </div>
{% else %}
 <p class="muted">No scored rows.</p>
{% endfor %}
</div>

<h2>Rows not scored</h2>
{% if failed %}
<table id="failed-rows"><thead><tr><th>id</th><th>status</th><th>error</th></tr></thead><tbody>
{% for r in failed %}<tr><td>{{ r.id }}</td><td>{{ r.status }}</td><td>{{ r.error }}</td></tr>
{% endfor %}</tbody></table>
{% else %}<p class="muted" id="failed-rows-none">Every row was scored{% if info.skipped %}
 on what needs no judge (skipped: {{ info.skipped | join(", ") }}){% endif %}.</p>{% endif %}
</body>
</html>
"""
