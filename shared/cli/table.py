"""The scores table ``summary-eval score`` prints: one line per row, sized to the terminal.

Every score column is as wide as its short name (the legend under the table spells each one
out), so headers are never cut, even at 80 columns with every sub-score shown; the id column
gets the room that is left, so ids are whole whenever the terminal is wide enough. With
``--threshold`` a ``pass`` column says whether the row's ranking value (the headline score, or
offline the mean of the dimensions that track quality: :mod:`.ranking`) reaches it; a row scored
with several judge samples gets its verdict over them (pass, FAIL or inconclusive:
:func:`shared.analysis.stability.row_verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from .. import SUB_SCORES
from ..analysis.stability import row_verdict
from ..core import bounded_json
from ..prompts.pointing import ERROR_TYPES
from ..runs.results import STATUS_OK, Row
from .ranking import rank_basis, rank_value
from .terminal import plain

SHORT_NAMES = {s.name: s.short for s in SUB_SCORES if s.short != s.name}
"""The table header of each sub-score whose name is longer than a column should be."""

MIN_ID_WIDTH = 8
"""The id column never gets narrower than this (rich squeezes it further on a tiny terminal)."""

PASS, FAIL, INCONCLUSIVE = "pass", "FAIL", "inconclusive"


def header(key: str) -> str:
    return SHORT_NAMES.get(key, key)


def passes(row: Row, threshold: float) -> bool | None:
    """Whether a scored row reaches ``threshold`` (None: the row has no ranking value)."""
    if row.get("status") != STATUS_OK:
        return None
    value = rank_value(row)
    return None if value is None else value >= threshold


def pass_text(row: Row, threshold: float) -> str:
    """``pass``, ``FAIL``, ``inconclusive`` (several judge samples whose share of passes has
    a 95 % interval around 0.5) or ``-`` (no value)."""
    found = row_verdict(row, threshold)
    if found is not None:
        return {"pass": PASS, "fail": FAIL}.get(found.verdict, INCONCLUSIVE)
    verdict = passes(row, threshold)
    return "-" if verdict is None else (PASS if verdict else FAIL)


def threshold_basis(rows: Sequence[Row]) -> str:
    """What ``--threshold`` was compared with, in words (the report's ranking basis)."""
    has_score = any(isinstance(r.get("score"), int | float) for r in rows)
    return "score" if has_score else rank_basis(False).split(" (", 1)[0]


def legend(shown: Sequence[str], threshold: float | None, rows: Sequence[Row]) -> str:
    names = ", ".join(f"{SHORT_NAMES[k]}={k}" for k in shown if k in SHORT_NAMES)
    if threshold is None:
        return names
    rule = f"pass: {threshold_basis(rows)} ≥ {threshold:g}"
    if any(row_verdict(row, threshold) is not None for row in rows):
        rule += " in a clear majority of judge samples (95% Wilson interval above 0.5)"
    return f"{names}; {rule}" if names else rule


def _cell(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "-"


def results_table(
    rows: Sequence[Row], keys: Sequence[str], *, width: int, threshold: float | None = None
) -> Table:
    """The table of ``rows`` for a terminal ``width`` columns wide."""
    shown = [k for k in keys if any(r.get(k) is not None for r in rows)]
    statuses = [str(r.get("status", "")) for r in rows]
    ids = [plain(r.get("id", "")) for r in rows]
    fixed = [max([len("status"), *map(len, statuses)])]
    # each row's language, once any row is not English (an all-English run looks as before)
    languages = [plain(r.get("language") or "-") for r in rows]
    with_language = any(r.get("language") not in (None, "en") for r in rows)
    if with_language:
        fixed.append(max([len("lang"), *map(len, languages)]))
    verdicts = [] if threshold is None else [pass_text(row, threshold) for row in rows]
    if threshold is not None:
        fixed.append(max([len(PASS), *map(len, verdicts)]))
    fixed += [max(len(header(k)), 4) for k in shown]
    gaps = len(fixed)  # one space between columns, none at the edges
    longest = max([len("id"), *map(len, ids)])
    id_width = min(longest, max(MIN_ID_WIDTH, width - sum(fixed) - gaps))
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),
        caption=legend(shown, threshold, rows),
    )
    table.add_column("id", no_wrap=True, width=id_width, overflow="ellipsis")
    table.add_column("status", no_wrap=True)
    if with_language:
        table.add_column("lang", no_wrap=True)
    if threshold is not None:
        table.add_column("pass", no_wrap=True)
    for key in shown:
        table.add_column(header(key), justify="right", min_width=4, no_wrap=True)
    for i, (row, status, row_id, lang) in enumerate(
        zip(rows, statuses, ids, languages, strict=True)
    ):
        cells = [_cell(row.get(k)) for k in shown]
        style = "green" if status == STATUS_OK else "red"
        verdict = [] if threshold is None else [_verdict_cell(verdicts[i])]
        language = [lang] if with_language else []
        table.add_row(
            Text(row_id), Text(status, style=style), *map(Text, language), *verdict, *cells
        )
    return table


def _verdict_cell(text: str) -> str:
    styled = {
        PASS: f"[green]{PASS}[/]",
        FAIL: f"[bold red]{FAIL}[/]",
        INCONCLUSIVE: f"[yellow]{INCONCLUSIVE}[/]",
    }
    return styled.get(text, text)


# ---------------------------------------------------------------------------------------------
# Error types (the sentences path): the detail under the table, and the report's
# ---------------------------------------------------------------------------------------------


def row_error_types(row: Row) -> dict[str, int]:
    """The row's unsupported sentences per error category (``evidence.error_types``, the
    sentences path), the nonzero ones only, in :data:`~shared.prompts.ERROR_TYPES` order; empty
    on the claims paths, without a judge or when the evidence holds no such counts. The
    evidence may be a dict or its JSON text (a Parquet results file); anything else is
    ignored, so a hand-edited results file cannot break the table or the report."""
    evidence = row.get("evidence")
    if isinstance(evidence, str):
        try:
            evidence = bounded_json.loads(evidence)
        except ValueError:
            return {}
    counts = evidence.get("error_types") if isinstance(evidence, Mapping) else None
    if not isinstance(counts, Mapping):
        return {}
    known = [k for k in ERROR_TYPES if k in counts] + [k for k in counts if k not in ERROR_TYPES]
    return {
        str(k): n
        for k in known
        if isinstance(n := counts[k], int) and not isinstance(n, bool) and n > 0
    }


def error_types_text(counts: Mapping[str, int]) -> str:
    """``out-of-context 2, entity 1``: the counts in words (empty when there are none)."""
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def total_error_types(rows: Sequence[Row]) -> dict[str, int]:
    """The rows' :func:`row_error_types` added up (the nonzero categories, in order)."""
    total: dict[str, int] = {}
    for row in rows:
        for name, n in row_error_types(row).items():
            total[name] = total.get(name, 0) + n
    return total


def error_type_lines(rows: Sequence[Row], every_row: Sequence[Row] | None = None) -> list[str]:
    """The table's detail on the sentences path: one line per row of ``rows`` with an
    unsupported sentence, its id and counts per error category; then, when more than one row of
    ``every_row`` (default ``rows``) has one, their total. Empty when no row has one. Ids are
    shown with :func:`~.terminal.plain` (print the lines as plain text, not markup)."""
    flagged = [(plain(r.get("id", "")), c) for r in rows if (c := row_error_types(r))]
    if not flagged:
        return []
    lines = ["Unsupported sentences by error type (the results file has each one):"]
    lines += [f"  {row_id}: {error_types_text(counts)}" for row_id, counts in flagged]
    every = rows if every_row is None else every_row
    with_errors = sum(bool(row_error_types(r)) for r in every)
    if with_errors > 1:
        lines.append(
            f"  all {with_errors} rows with one: {error_types_text(total_error_types(every))}"
        )
    return lines
