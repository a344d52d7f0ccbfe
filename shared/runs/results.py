"""The results file: one flat row per input row, written as soon as the row finishes.

Rows are appended and flushed one by one, so a run that is interrupted (Ctrl-C, or the process
killed) keeps every finished row; a rerun reads them back and skips them. When a run ends the
file is rewritten once, in input order, with one row per id.

Columns (JSONL keys, CSV header): ``id``, ``position``, ``status``, every sub-score of
:meth:`SummaryEvaluation.sub_scores` (whatever dimensions the core reports), ``reason``,
``error``, ``signature``, ``language`` (the language the summary was analysed as; its source's
and summary's detected languages are in ``evidence.language``), ``input_hash``, ``summary``,
``evidence`` (the evaluation's evidence fields; a JSON string in CSV). A run with
``--samples k > 1`` adds ``<sub-score>_sd`` after the sub-scores (their standard deviation
over the k judge samples); the samples' own values are in ``evidence.sample_scores``.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any, Literal

from ..core import bounded_json
from ..core.files import naming, open_for_writing, open_regular, replacing
from ..core.redact import safe_record
from ..core.subscores import JUDGE_ONLY, SUB_SCORE_NAMES
from ..evaluation.result import NO_JUDGE, SummaryEvaluation
from .inputs import allow_large_csv_fields

ResultFormat = Literal["jsonl", "csv"]
Row = dict[str, Any]

STATUS_OK = "ok"
"""Scored: ``error`` is empty (dimensions skipped for lack of a judge are empty, not errors)."""
STATUS_UNSCORED = "unscored"
"""The core could not score it (the judge failed or gave unusable answers); ``error`` says why."""
STATUS_BAD_INPUT = "bad_input"
"""Rejected before scoring (malformed line, missing or empty field, duplicate id)."""
STATUSES = (STATUS_OK, STATUS_UNSCORED, STATUS_BAD_INPUT)

_PROVENANCE = ("reason", "error", "signature")


def score_keys() -> list[str]:
    """Every sub-score name, from the core's one list (:data:`shared.SUB_SCORE_NAMES`), so a
    new dimension becomes a column without any change here."""
    return list(SUB_SCORE_NAMES)


def spread_keys() -> list[str]:
    """The spread columns of a run with samples: ``<sub-score>_sd`` for every sub-score."""
    return [f"{name}_sd" for name in SUB_SCORE_NAMES]


def columns(keys: Iterable[str], spread: bool = False) -> list[str]:
    keys = list(keys)
    return [
        "id",
        "position",
        "status",
        *keys,
        *([f"{k}_sd" for k in keys] if spread else []),
        *_PROVENANCE,
        "language",
        "input_hash",
        "summary",
        "evidence",
    ]


def evaluation_row(
    *,
    row_id: str,
    position: int,
    input_hash: str,
    summary: str,
    ev: SummaryEvaluation,
    without_judge: bool = False,
) -> Row:
    """The flat row for one evaluation: sub-scores, provenance and every evidence field.

    ``without_judge``: the run has no judge on purpose, so the core's "no judge" error only says
    which dimensions were skipped (the report and the terminal say it once); the row is ``ok``.
    """
    subs = ev.sub_scores()
    # the spread has its own columns; a single-sample run has no samples to list
    exclude = set(subs) | set(_PROVENANCE) | {"spread"}
    if not ev.sample_scores:
        exclude.add("sample_scores")
    evidence = ev.model_dump(mode="json", exclude=exclude)
    error, reason = ev.error, ev.reason
    if without_judge and error == NO_JUDGE:
        error, reason = None, offline_reason(ev.reason)
        evidence["reason_detail"] = offline_reason(ev.reason_detail)
    return {
        "id": row_id,
        "position": position,
        "status": STATUS_OK if error is None else STATUS_UNSCORED,
        **{k: _number(v) for k, v in subs.items()},
        **{k: _number(v) for k, v in ev.spread_columns().items()},
        "reason": reason,
        "error": error,
        "signature": ev.signature,
        "language": ev.language.dimensions if ev.language is not None else None,
        "input_hash": input_hash,
        "summary": summary,
        "evidence": evidence,
    }


NEEDS_JUDGE: tuple[str, ...] = JUDGE_ONLY  # the name the CLI reads; one set, JUDGE_ONLY
"""The columns only a judge fills (non_redundancy falls back to its deterministic part); from
:data:`shared.core.subscores.SUB_SCORES`."""


def offline_reason(core_reason: str) -> str:
    """The reason of a row scored on purpose without a judge: what was scored and what was
    skipped (the core's "Unscored: no judge" would contradict the row's ``ok``)."""
    dimensions = core_reason.removeprefix(f"Unscored: {NO_JUDGE}").strip()
    return f"Scored without a judge (skipped, they need one: {', '.join(NEEDS_JUDGE)})." + (
        f"\n{dimensions}" if dimensions else ""
    )


def error_row(
    *,
    row_id: str,
    position: int,
    input_hash: str,
    summary: Any,
    error: str,
    signature: str,
    keys: Iterable[str],
    status: str = STATUS_BAD_INPUT,
) -> Row:
    """A row that was not scored, with every score empty and the reason in ``error``."""
    return {
        "id": row_id,
        "position": position,
        "status": status,
        **dict.fromkeys(keys),
        "reason": f"Unscored: {error}",
        "error": error,
        "signature": signature,
        "language": None,
        "input_hash": input_hash,
        "summary": summary if isinstance(summary, str) else None,
        "evidence": {},
    }


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: one starting with ``= + - @`` (or tab, CR) would
    run as a formula (``=HYPERLINK(...)`` in a summary), so it gets a leading apostrophe, which
    spreadsheets hide. A cell that starts with an apostrophe gets one too, so that
    :func:`spreadsheet_text` undoes it exactly."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def spreadsheet_text(value: Any) -> Any:
    """The original text of a cell written by :func:`spreadsheet_cell`."""
    if isinstance(value, str) and value.startswith("'"):
        return value[1:]
    return value


def detect_result_format(path: Path) -> ResultFormat:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise ValueError(f"results file must end in .jsonl or .csv, got {path.name!r}")


# ---------------------------------------------------------------------------------------------
# Reading back (resume, report)
# ---------------------------------------------------------------------------------------------


def read_results(path: Path) -> list[Row]:
    """Every complete row of an earlier (maybe interrupted) run; a torn last line is dropped."""
    if not path.is_file():
        return []
    fmt = detect_result_format(path)
    rows: list[Row] = []
    if fmt == "jsonl":
        with open_regular(path, errors="replace") as handle:
            for line in handle:
                try:
                    row = bounded_json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a kill
                if isinstance(row, dict) and row.get("status") in STATUSES and "id" in row:
                    rows.append(_sane(row))
        return rows
    allow_large_csv_fields()
    try:
        with open_regular(path, newline="") as handle:
            for record in csv.DictReader(handle):
                torn = None in record or any(value is None for value in record.values())
                if torn or record.get("status") not in STATUSES:
                    continue  # a row cut short by a kill, or not one of ours
                row = _from_csv(record)
                if row is not None:
                    rows.append(_sane(row))
    except UnicodeDecodeError as exc:
        raise ResultsUnreadable(not_utf8(path, exc)) from None
    return rows


class ResultsUnreadable(ValueError):
    """A results file that cannot be read as text (it is not UTF-8): nothing is written to it."""


def not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """Why a file could not be read, and what to do."""
    byte = exc.object[exc.start : exc.start + 1].hex()
    return f"{path} is not UTF-8 text (byte 0x{byte} cannot be decoded); save it as UTF-8"


_SCORE_COLUMNS = frozenset([*SUB_SCORE_NAMES, *(f"{name}_sd" for name in SUB_SCORE_NAMES)])


def _sane(row: Row) -> Row:
    """A row as the readers expect it, whatever a hand edit left: a number that is not finite
    (``NaN``, ``Infinity``, which JSON readers accept) is no score (None), a sub-score is read
    by one rule in both formats (:func:`score_cell`), ``evidence`` is a mapping, the id is
    text."""
    for key, value in row.items():
        if key in _SCORE_COLUMNS:
            row[key] = score_cell(value)
        elif isinstance(value, float) and not math.isfinite(value):
            row[key] = None
    if not isinstance(row.get("evidence"), dict):
        row["evidence"] = {}
    row["id"] = str(row["id"])
    return row


QUESTION_RANGES = {"importance": (1, 5), "grade": (0, 5)}
"""The integers a question's ``importance`` (always present) and ``grade`` (None when not
graded) may be, in a results file's ``evidence.questions``."""


def questions_problem(evidence: Any) -> str | None:
    """Why a row's questions (``evidence.questions``) cannot be shown or compared, or None: a
    results file is a file people edit, and a hand-edited field (a ``questions`` that is a
    number, an importance of ``NaN``, ``-5`` or ``"high"``, a grade ``"5"``) is named, so the
    readers say "not shown: <why>" for that row instead of guessing (or failing)."""
    questions = evidence.get("questions") if isinstance(evidence, Mapping) else None
    if questions is None:
        return None
    if not isinstance(questions, list):
        return f"its questions are {_kind(questions)}, not a list"
    for number, question in enumerate(questions, start=1):
        if not isinstance(question, Mapping):
            return f"question {number} is {_kind(question)}, not an object"
        for name, (low, high) in QUESTION_RANGES.items():
            value = question.get(name)
            if value is None and name == "grade":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
                return f"question {number}'s {name} {shown} is not an integer {low}-{high}"
        for name in ("question", "reference_answer"):
            if not isinstance(question.get(name, ""), str):
                return f"question {number}'s {name} is {_kind(question.get(name))}, not text"
    return None


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "true/false" if value is not None else "null"
    kinds = {int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}
    return kinds.get(type(value), f"a {type(value).__name__}")


def score_cell(value: Any) -> float | None:
    """A sub-score cell as a number, whichever format held it: a finite number, or the text of
    one (every CSV cell is text, and so is every value of a JSONL file made from a CSV with a csv
    module). Both readers read sub-scores by this one rule, so the same rows give the same
    numbers from either format; anything else (a boolean, other text, ``NaN``) is no score."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return number if math.isfinite(number) else None


def _from_csv(record: dict[str, Any]) -> Row | None:
    """The row, or None if it was cut short: ``evidence``, the last column, is then not JSON
    (the csv module accepts an unterminated quoted field at the end of the file)."""
    row: Row = {}
    fixed = {"id", "status", "reason", "error", "signature", "language", "input_hash", "summary"}
    for key, raw in record.items():
        value = spreadsheet_text(raw)
        if key in fixed:
            row[key] = value if value != "" or key in ("id", "reason") else None
        elif key == "position":
            row[key] = _csv_position(value)
        elif key == "evidence":
            try:
                row[key] = bounded_json.loads(value) if value else {}
            except json.JSONDecodeError:
                return None
        else:
            row[key] = _csv_number(value)
    return row


def _csv_position(value: str) -> int:
    """The ``position`` cell; 0 when it is not a number of sane length (a hand-edited file)."""
    text = value.strip()
    if not text or len(text) > 18 or not text.lstrip("-").isdigit():
        return 0
    return int(text)


def _csv_number(value: str | None) -> float | str | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        return value


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


class ResultsWriter:
    """Append-and-flush writer; :meth:`rewrite` replaces the whole file atomically."""

    def __init__(self, path: Path, keys: list[str], *, spread: bool = False) -> None:
        self.path = path
        self.format = detect_result_format(path)
        self.columns = columns(keys, spread)
        self._handle: IO[str] | None = None
        self._csv: Any = None

    def rewrite(self, rows: Iterable[Row]) -> None:
        """Write ``rows`` to a temporary file and move it over the results file (a full disk
        leaves the file as it was, and the error names it)."""
        with naming(self.path):
            self._rewrite(rows)

    def _rewrite(self, rows: Iterable[Row]) -> None:
        self.close()
        with replacing(self.path, newline="") as handle:
            writer = self._csv_writer(handle) if self.format == "csv" else None
            if writer is not None:
                writer.writeheader()
            for row in rows:
                self._write_one(handle, writer, row)

    def open_for_append(self) -> None:
        if not self.path.exists():
            self.rewrite([])
        self._handle = open_for_writing(self.path, "a", newline="")
        self._csv = self._csv_writer(self._handle) if self.format == "csv" else None

    def append(self, row: Row) -> None:
        """Write one row and flush it to the OS, so a killed process still leaves it behind."""
        if self._handle is None:
            self.open_for_append()
        assert self._handle is not None
        with naming(self.path):
            self._write_one(self._handle, self._csv, row)
            self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            handle, self._handle, self._csv = self._handle, None, None
            with naming(self.path):
                handle.close()

    def _csv_writer(self, handle: IO[str]) -> csv.DictWriter:
        return csv.DictWriter(handle, fieldnames=self.columns, extrasaction="ignore")

    def _write_one(self, handle: IO[str], writer: csv.DictWriter | None, row: Row) -> None:
        row = safe_record(row)  # no secret reaches the file (shared.core.redact)
        if writer is None:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            return
        flat = {
            key: spreadsheet_cell(
                json.dumps(value, ensure_ascii=False)
                if isinstance(value, dict | list)
                else ("" if value is None else value)
            )
            for key, value in row.items()
        }
        writer.writerow(flat)
