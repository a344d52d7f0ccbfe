"""The HTML report of ``summary-eval bench``: one self-contained file (inline SVG, no scripts).

Sections: the cost table (calls, tokens, dollars, time per metric), agreement per rating, the
paired comparison of the metrics' agreement (ours minus each peer, with the bootstrap interval
of the difference), why rows were not scored, and a scatter per metric and rating.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from ..analysis.bench import BenchResult, MetricReport
from ..core.files import write_text

SIZE, PAD = 220, 28


def _e(value: object) -> str:
    return html.escape(str(value))


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"


def scatter_svg(result: BenchResult, metric: MetricReport, rating: str) -> str:
    """Metric score (x) against the people's rating (y), one dot per scored row."""
    points = []
    for row_id, score in metric.scores.items():
        human = result.labels.get(row_id, {}).get(rating)
        if score is not None and human is not None and math.isfinite(human):
            points.append((score, human))
    inner = SIZE - 2 * PAD
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}" '
        f'role="img" aria-label="{_e(metric.name)} against {_e(rating)}">',
        f'<rect x="{PAD}" y="{PAD}" width="{inner}" height="{inner}" fill="none" stroke="#999"/>',
        f'<text x="{SIZE / 2}" y="{SIZE - 6}" font-size="11" text-anchor="middle">'
        f"{_e(metric.name)} score</text>",
        f'<text x="10" y="{SIZE / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 10 {SIZE / 2})">{_e(rating)}</text>',
    ]
    if points:
        ys = [p[1] for p in points]
        lo, hi = min(ys), max(ys)
        span = hi - lo or 1.0
        for score, human in points:
            x = PAD + min(max(score, 0.0), 1.0) * inner
            y = PAD + inner - (human - lo) / span * inner
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#36c" fill-opacity="0.6"/>'
            )
        parts.append(
            f'<text x="{PAD}" y="{PAD - 6}" font-size="10">{lo:g}–{hi:g}, n={len(points)}</text>'
        )
    else:
        parts.append(
            f'<text x="{SIZE / 2}" y="{SIZE / 2}" font-size="11" '
            'text-anchor="middle">no scored rows</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render(result: BenchResult) -> str:
    level = int(result.level * 100)
    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>summary-eval bench</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:75em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}"
        ".grid{display:flex;flex-wrap:wrap;gap:1em}.muted{color:#666}</style></head><body>",
        "<h1>summary-eval bench</h1>",
        f"<p>Judge <b>{_e(result.model)}</b>"
        + (f" at {_e(result.base_url)}" if result.base_url else "")
        + f"; data: {_e(result.data)} ({result.rows} rows, {result.groups} groups); "
        f"prices: {_e(result.prices)}.</p>",
    ]
    for note in result.notes:
        out.append(f"<p class='muted'>Note: {_e(note)}</p>")
    out.append(
        "<h2>Cost</h2><table><tr><th>metric</th><th>version</th><th>scored</th>"
        "<th>failed</th><th>calls</th><th>failed calls</th><th>replayed calls</th>"
        "<th>prompt tokens</th>"
        "<th>cached tokens</th><th>completion tokens</th><th>dollars</th>"
        "<th>wall s</th></tr>"
    )
    for m in result.metrics:
        dollars = "unknown" if m.dollars is None else f"${m.dollars:.4f}"
        out.append(
            f"<tr><td>{_e(m.title)} ({_e(m.name)})</td><td>{_e(m.version or 'not installed')}"
            f"</td><td>{m.scored}/{m.rows}</td><td>{m.failed}</td><td>{m.usage.calls}</td>"
            f"<td>{m.usage.failed_calls}</td><td>{m.usage.replayed_calls}</td>"
            f"<td>{m.usage.prompt_tokens:,}</td>"
            f"<td>{m.usage.cached_tokens:,}</td><td>{m.usage.completion_tokens:,}</td>"
            f"<td>{dollars}</td><td>{m.wall_s:.1f}</td></tr>"
        )
    out.append("</table>")
    out.append(
        f"<h2>Agreement with people (Spearman, {level} % bootstrap interval)</h2>"
        "<table><tr><th>metric</th><th>rating</th><th>level</th><th>units</th>"
        "<th>spearman</th><th>interval</th><th>system level</th></tr>"
    )
    for m in result.metrics:
        for a in m.agreement:
            system = "–" if a.system is None else _num(a.system.value)
            out.append(
                f"<tr><td>{_e(m.name)}</td><td>{_e(a.rating)}</td><td>{_e(a.level)}</td>"
                f"<td>{a.summary.units}</td><td>{_num(a.summary.value)}</td>"
                f"<td>{_interval(a.summary.low, a.summary.high)}</td><td>{system}</td></tr>"
            )
    out.append("</table>")
    if result.comparisons:
        out.append(
            "<h2>Paired comparison</h2><p>Difference of summary-level Spearman on the "
            "rows both metrics scored; an interval above 0 means the first metric "
            "tracks people better on these data.</p><table><tr><th>difference</th>"
            "<th>rating</th><th>units</th><th>spearman difference</th>"
            "<th>interval</th></tr>"
        )
        for d in result.comparisons:
            out.append(
                f"<tr><td>{_e(d.first)} − {_e(d.second)}</td><td>{_e(d.rating)}</td>"
                f"<td>{d.units}</td><td>{_num(d.difference)}</td>"
                f"<td>{_interval(d.low, d.high)}</td></tr>"
            )
        out.append("</table>")
    failures = [(m, r, c) for m in result.metrics for r, c in m.reasons.items()]
    if failures:
        out.append(
            "<h2>Rows not scored</h2><table><tr><th>metric</th><th>rows</th><th>reason</th></tr>"
        )
        for m, reason, count in failures:
            out.append(
                f"<tr><td>{_e(m.name)}</td><td>{count}</td>"
                f"<td style='text-align:left'>{_e(reason)}</td></tr>"
            )
        out.append("</table>")
    out.append("<h2>Scores against ratings</h2>")
    for m in result.metrics:
        if m.error is not None:
            continue
        out.append(f"<h3>{_e(m.title)}</h3><div class='grid'>")
        out += [scatter_svg(result, m, rating) for rating in result.ratings]
        out.append("</div>")
    out.append(
        f"<p class='muted'>Bootstrap: {result.resamples} resamples, seed "
        f"{result.seed}.</p></body></html>"
    )
    return "\n".join(out)


def write_bench_report(path: Path, result: BenchResult) -> None:
    write_text(path, render(result))  # no secret on the page
