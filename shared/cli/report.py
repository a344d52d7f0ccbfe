"""The HTML report: one self-contained page (plotly.js inlined, no network needed to view it).

Sections: run facts and any skipped dimensions, summary statistics per dimension, a histogram per
dimension plus an overview box plot, the worst summaries with their evidence (unsupported claims,
or on the sentences path the unsupported sentences with their error types and wrong spans; missed
questions, vague sentences, repeated points, the names and numbers the source does not
state, highlighted in the summary text, each dimension's reason), and the rows that could not be
scored. Dimensions are whatever keys the results carry, so new ones appear unasked.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ..core import bounded_json
from ..core.files import write_text
from ..core.redact import redact, redact_command, safe_record
from ..core.subscores import HEADLINE
from ..runs.results import (
    STATUS_BAD_INPUT,
    STATUS_OK,
    STATUS_UNSCORED,
    Row,
    questions_problem,
)
from .ranking import rank_basis, rank_value
from .table import error_types_text, row_error_types, total_error_types

TEMPLATE_NAME = "report.html.j2"
"""The Jinja template of the page (package data, shipped in the wheel)."""


@dataclass
class ReportInfo:
    """Facts about the run shown at the top of the report."""

    input_path: str = ""
    results_path: str = ""
    judge: str = "none"
    skipped: list[str] = field(default_factory=list)
    enable_hint: str = ""
    command: str = ""
    threshold: float | None = None
    """``--threshold``: each worst summary is marked pass or FAIL, with the counts in the facts."""
    flip_threshold: float | None = None
    """``--flip-threshold`` of a run with ``--samples k > 1``: the stability section counts the
    rows whose pass/fail at it differs between samples (None: the run had one sample)."""
    bill: str = ""
    """The run's judge bill (calls, retries, prompt/cached/completion tokens, dollars); a
    report rebuilt from a results file sums the rows' own (:func:`bill_from_rows`)."""
    generated_at: str = field(
        default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    )


def bill_from_rows(rows: Iterable[Row]) -> str:
    """The judge bill of the rows' own ``evidence.usage`` and ``evidence.cost`` (the calls
    made for each row; the run's structured-mode probe is not in any row). Empty when no row
    has one (a run without a judge, or results of an earlier version)."""
    from ..core.usage import add_usage, format_usage, new_usage

    total = new_usage()
    dollars: float | None = 0.0
    seen = False
    for row in rows:
        evidence = row.get("evidence")
        if isinstance(evidence, str):
            try:
                evidence = bounded_json.loads(evidence)
            except ValueError:
                continue
        if not isinstance(evidence, dict) or not isinstance(evidence.get("usage"), dict):
            continue
        if not evidence["usage"]:
            continue
        seen = True
        add_usage(total, evidence["usage"])
        cost = evidence.get("cost")
        dollars = None if dollars is None or not isinstance(cost, int | float) else dollars + cost
    return format_usage(total, dollars) + " (the rows' own calls)" if seen else ""


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
    """A real, finite number (NaN or an infinity is no score: statistics cannot use it)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _walk(value: Any, path: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    yield path, value
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, (*path, str(key)))


def evidence_view(evidence: Mapping[str, Any]) -> dict[str, Any]:
    """The evidence worth showing for a bad summary, found by field name wherever it lives."""
    every = [c for c in evidence.get("claims") or [] if isinstance(c, dict)]
    # the sentences path: one entry per summary sentence, in order (its number is the one the
    # questions point at), each unsupported one with its error type and wrong span
    sentences = isinstance(evidence.get("error_types"), Mapping)
    claims = [
        {**c, "number": i} if sentences else c
        for i, c in enumerate(every, start=1)
        if c.get("verdict") not in ("supported", None)
    ]
    not_shown = questions_problem(evidence)
    missed = sorted(
        (
            q
            for q in ([] if not_shown else evidence.get("questions") or [])
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
        "sentences": sentences,
        "claims": claims,
        "missed": missed,
        "questions_not_shown": not_shown,
        "vague": vague,
        "repeated": repeated,
        "unsupported_items": unsupported_items(evidence),
        "least_supported": least_supported(evidence),
        "notes": notes,
    }


def unsupported_items(evidence: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Grounding's unsupported items (names, numbers, dates the source does not state)."""
    dims = evidence.get("dimension_evidence")
    grounding = dims.get("grounding") if isinstance(dims, Mapping) else None
    items = grounding.get("unsupported") if isinstance(grounding, Mapping) else None
    return [i for i in items or [] if isinstance(i, dict) and isinstance(i.get("text"), str)]


def least_supported(evidence: Mapping[str, Any]) -> dict[str, Any] | None:
    """Grounding's least supported sentence (version 2 evidence), or None."""
    dims = evidence.get("dimension_evidence")
    grounding = dims.get("grounding") if isinstance(dims, Mapping) else None
    if not isinstance(grounding, Mapping):
        return None
    number = grounding.get("least_supported")
    for entry in grounding.get("sentences") or []:
        if (
            isinstance(entry, Mapping)
            and entry.get("index") == number
            and isinstance(entry.get("sentence"), str)
        ):
            return dict(entry)
    return None


def _item_spans(summary: str, items: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """Where each item is in the summary: searched within its own sentence first (the same
    number may be right in one sentence and wrong in another), else anywhere; case-blind."""
    spans: list[tuple[int, int]] = []
    for item in items:
        text = item["text"].strip()
        if not text:
            continue
        pattern = re.compile(re.escape(text), re.IGNORECASE)
        sentence = item.get("sentence") if isinstance(item.get("sentence"), str) else ""
        start = summary.find(sentence) if sentence else -1
        hits = list(pattern.finditer(summary, start, start + len(sentence))) if start >= 0 else []
        spans += [m.span() for m in hits or pattern.finditer(summary)]
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def highlight_unsupported(
    summary: str, items: Sequence[Mapping[str, Any]], weakest: str | None = None
) -> Any:
    """The summary as HTML with each unsupported item in ``<mark class="unsupported">`` and the
    least supported sentence (``weakest``, when given and found) in ``<span
    class="least-supported">``; every piece of the user's text is escaped (the result is safe
    to insert as markup)."""
    from markupsafe import Markup, escape

    marks = _item_spans(summary, items)
    sentence = (weakest or "").strip()
    start = summary.find(sentence) if sentence else -1
    weak = (start, start + len(sentence)) if start >= 0 else None
    cuts = {0, len(summary)} | {p for span in marks for p in span}
    if weak:
        cuts |= set(weak)
    points = sorted(cuts)
    out: list[str] = []
    for a, b in itertools.pairwise(points):
        piece = str(escape(summary[a:b]))
        if any(x <= a and b <= y for x, y in marks):
            piece = f'<mark class="unsupported">{piece}</mark>'
        if weak and a == weak[0]:
            out.append('<span class="least-supported" title="least supported sentence">')
        out.append(piece)
        if weak and b == weak[1]:
            out.append("</span>")
    return Markup("".join(out))


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


def signature_label(signature: str) -> str:
    """The facts row's label for one signature: which rows carry it, when it is not the plain
    run's (rows with their own questions hash them into ``n``; a chunked long source adds
    ``long``), so two "Signature" rows are never left unexplained."""
    kinds = []
    if "|n:user" in f"|{signature}":
        kinds.append("rows with their own questions")
    if "|long:" in signature:
        kinds.append("rows whose long source was chunked")
    return f"Signature ({'; '.join(kinds)})" if kinds else "Signature"


def signature_rows(rows: Sequence[Row]) -> list[tuple[str, str, int]]:
    """(label, signature, row count) for each signature of the scored rows, plain one first."""
    counts: dict[str, int] = {}
    for row in rows:
        if row.get("signature"):
            counts[row["signature"]] = counts.get(row["signature"], 0) + 1
    labelled = [(signature_label(s), s, n) for s, n in sorted(counts.items())]
    return sorted(labelled, key=lambda item: item[0] != "Signature")


def _verdict(row: Row, threshold: float | None) -> str:
    from .table import pass_text  # the table's rule, shared

    return "" if threshold is None else pass_text(row, threshold)


def by_language(rows: Sequence[Row], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Rows grouped by the language their summary was analysed as, with each group's
    statistics; empty when the rows are in one language (nothing to group)."""
    from ..core.language import language_name

    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(str(row.get("language") or "unknown"), []).append(row)
    if len(groups) < 2:
        return []
    return [
        {
            "code": code,
            "name": language_name(code) if code != "unknown" else "not recorded",
            "ids": [str(r.get("id")) for r in members],
            "stats": statistics_table(members, keys),
        }
        for code, members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
    ]


def stability_section(
    rows: Sequence[Row], keys: Sequence[str], flip_threshold: float | None
) -> dict[str, Any] | None:
    """The spread over judge samples (``--samples k``): per judged sub-score the mean and largest
    per-row standard deviation, and the pass/fail flips at ``flip_threshold``; None when no row
    has two samples (a one-sample run has nothing to show)."""
    from ..analysis.stability import flip_rate, stability
    from ..core.subscores import USES_JUDGE

    spread = [
        s for s in stability(rows, [k for k in keys if k in USES_JUDGE]).values() if s.rows > 0
    ]
    if not spread:
        return None
    flips = None if flip_threshold is None else flip_rate(rows, flip_threshold)
    return {"spread": spread, "flips": None if flips is None else flips.line()}


def _worst_entry(row: Row, keys: Sequence[str], threshold: float | None = None) -> dict[str, Any]:
    view = evidence_view(row.get("evidence") or {})
    return {
        "error_types": error_types_text(row_error_types(row)),
        "verdict": _verdict(row, threshold),
        "detail": str((row.get("evidence") or {}).get("reason_detail") or ""),
        "row": row,
        "language": row.get("language"),
        "rank_value": rank_value(row, keys),
        "scores": [(k, row.get(k)) for k in keys if row.get(k) is not None],
        "evidence": view,
        "summary_html": highlight_unsupported(
            str(row.get("summary") or ""),
            view["unsupported_items"],
            (view["least_supported"] or {}).get("sentence"),
        ),
    }


class PageOptions(TypedDict, total=False):
    """What :func:`render_report` takes as keywords beside the rows (``write_report`` passes
    them on): how many of the worst rows are listed, and each row id's source text."""

    worst: int
    sources: Mapping[str, str] | None


def render_report(
    rows: Sequence[Row],
    keys: Sequence[str],
    info: ReportInfo,
    *,
    worst: int = 10,
    sources: Mapping[str, str] | None = None,
) -> str:
    """The report as one HTML string; ``sources`` (each row id's source text, as
    :func:`~shared.cli.coverage_map.sources_of` gives it) adds the sources' coverage maps."""
    import jinja2
    import plotly.offline

    from .coverage_map import coverage_maps, unmappable

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
    maps, anchors, unmapped = coverage_maps(ranked, sources or {})
    not_mapped = [(str(r.get("id")), why) for r in ok if (why := unmappable(r))]
    worst_rows = [
        {**_worst_entry(r, keys, info.threshold), "map": anchors.get(str(r.get("id")), "")}
        for r in ranked[:worst]
    ]
    verdicts = [_verdict(r, info.threshold) for r in rows]
    counts = {
        "total": len(rows),
        "ok": len(ok),
        "unscored": sum(r.get("status") == STATUS_UNSCORED for r in rows),
        "bad_input": sum(r.get("status") == STATUS_BAD_INPUT for r in rows),
    }
    signatures = signature_rows(ok)
    flagged = sum(bool(row_error_types(r)) for r in ok)
    error_types = (
        f"{error_types_text(total_error_types(ok))} (unsupported sentences, in {flagged} of "
        f"{len(ok)} scored rows)"
        if flagged
        else ""
    )
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = lambda v: "—" if v is None else f"{v:.3f}"
    return env.from_string(report_template()).render(
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
        error_types=error_types,
        passed=verdicts.count("pass"),
        failed_threshold=verdicts.count("FAIL"),
        inconclusive=verdicts.count("inconclusive"),
        languages=by_language(measured, keys),
        stability=stability_section(ok, keys, info.flip_threshold),
        rank_basis=rank_basis(any(_is_number(r.get(HEADLINE)) for r in ok)),
        empty_keys=[k for k in keys if k not in present],
        maps=maps,
        unmapped=unmapped,
        not_mapped=not_mapped,
        sources_known=bool(sources),
    )


def report_template() -> str:
    """The page's Jinja template, a package data file beside this module (``report.html.j2``)."""
    return resources.files(__package__).joinpath(TEMPLATE_NAME).read_text(encoding="utf-8")


def write_report(
    path: Path,
    rows: Sequence[Row],
    keys: Sequence[str],
    info: ReportInfo,
    **page: Unpack[PageOptions],
) -> Path:
    """:func:`render_report` of the rows and the run info, no secret in them, in ``path``."""
    info = dataclasses.replace(info, command=redact_command(info.command), judge=redact(info.judge))
    html = render_report([safe_record(r) for r in rows], keys, info, **page)
    write_text(path, html)  # no secret reaches the page
    return path
