"""Reading the CLI's input file (JSONL or CSV) into rows, each either scoreable or a bad row.

A bad row (malformed line, missing field, empty or non-string value, duplicate id) keeps its id
and the reason, so it becomes an error row in the results instead of stopping the run.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core import bounded_json
from ..core.files import open_regular

InputFormat = Literal["jsonl", "csv"]

_SUFFIXES: dict[str, InputFormat] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def allow_large_csv_fields() -> None:
    """Python's csv module refuses fields over 128 KiB by default; a long source is one field."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:  # a C long is 32 bits on some platforms
            limit //= 2


def repeated_names(header: list[str] | Any) -> list[str]:
    """The names a CSV header holds more than once (a reader of dicts keeps only the last)."""
    seen: set[str] = set()
    repeated: list[str] = []
    for name in header or []:
        if name in seen and name not in repeated:
            repeated.append(name)
        seen.add(name)
    return repeated


def _undecodable(value: Any) -> bool:
    """True for text read with errors="surrogateescape" that held bytes that are not UTF-8."""
    if isinstance(value, str):
        return any("\udc80" <= ch <= "\udcff" for ch in value)
    if isinstance(value, list):
        return any(_undecodable(part) for part in value)
    return False


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in a parsed JSON value (``"\\ud800"`` is valid JSON but not
    valid Unicode: it cannot be written back as UTF-8), or None."""
    if isinstance(value, str):
        return next((ch for ch in value if "\ud800" <= ch <= "\udfff"), None)
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list):
        return next((ch for part in value if (ch := _lone_surrogate(part))), None)
    return None


class InputError(Exception):
    """The input as a whole cannot be read (missing file, unknown format, no such column)."""


@dataclass(frozen=True)
class Columns:
    """Which input column holds what (``--source-column`` and friends)."""

    source: str = "source"
    summary: str = "summary"
    id: str = "id"
    questions: str = "questions"


@dataclass
class InputRow:
    """One input row. ``error`` says why it cannot be scored; then the texts may be missing."""

    position: int
    """1-based: the line number in a JSONL file, the data-row number in a CSV file."""
    id: str
    source: str | list[str] | None = None
    summary: str | None = None
    questions: list[Any] | None = None
    error: str | None = None

    @property
    def input_hash(self) -> str:
        """What the row's result depends on; a rerun redoes a row whose texts changed."""
        payload = json.dumps(
            [self.source, self.summary, self.questions], sort_keys=True, default=str
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def detect_format(path: Path, given: str | None = None) -> InputFormat:
    if given:
        if given not in ("jsonl", "csv"):
            raise InputError(f"unknown input format {given!r}: use jsonl or csv")
        return given  # type: ignore[return-value]
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"cannot tell the format of {path.name!r} from its extension; "
            "use a .jsonl or .csv file, or pass --input-format jsonl|csv"
        )
    return fmt


def read_rows(
    path: Path, columns: Columns, fmt: InputFormat, *, summaries: bool = True
) -> list[InputRow]:
    """All rows of the file, in order, with duplicate ids turned into bad rows. ``summaries``
    False: a file of sources alone is read (no summary column needed)."""
    if not path.is_file():
        raise InputError(f"input file not found: {path}")
    required = _needed(columns, summaries)
    records = list(_jsonl_records(path) if fmt == "jsonl" else _csv_records(path, required))
    objects = [record for _, record in records if isinstance(record, dict)]
    for needed, option in required:
        if objects and not any(needed in record for record in objects):  # as a CSV header
            found = sorted({key for record in objects for key in record})
            raise InputError(
                f"no row of {path.name} has a {needed!r} field (fields: "
                f"{', '.join(found) or 'none'}); map yours with --{option}-column NAME"
            )
    rows = [_make_row(position, record, columns, fmt) for position, record in records]
    if not rows:
        raise InputError(f"{path} has no rows to score")
    _rename_repeats(rows)
    return rows


def _rename_repeats(rows: list[InputRow]) -> None:
    """Mark each true repeat of an id as bad and give it a new id that no row uses, so its
    error row never collides with a real id (``a``, ``a``, ``a#row2`` keep the third row)."""
    taken = {row.id for row in rows}
    first_seen: dict[str, int] = {}
    for row in rows:
        if row.id not in first_seen:
            first_seen[row.id] = row.position
            continue
        row.error = f"duplicate id {row.id!r} (first used by row {first_seen[row.id]})"
        new_id = f"{row.id}#row{row.position}"
        while new_id in taken:
            new_id += "'"
        taken.add(new_id)
        row.id = new_id


def _jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, object) per non-blank line; a line that is not a JSON object yields a
    string saying why."""
    # utf-8-sig: a byte-order mark some editors write is not part of the first record;
    # surrogateescape: bytes that are not UTF-8 make that row bad input, not altered text
    with open_regular(path, encoding="utf-8-sig", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            if _undecodable(line):
                yield number, f"line {number} is not valid UTF-8"
                continue
            if not line.strip():
                continue
            try:
                record = bounded_json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"line {number} is not valid JSON: {exc.msg} (column {exc.colno})"
                continue
            if not isinstance(record, dict):
                yield number, f"line {number} is a JSON {type(record).__name__}, not an object"
                continue
            yield number, record


def _needed(columns: Columns, summaries: bool) -> list[tuple[str, str]]:
    """The (column, option) pairs a file must have."""
    needed = [(columns.source, "source")]
    return [*needed, (columns.summary, "summary")] if summaries else needed


def _csv_records(
    path: Path, needed: list[tuple[str, str]]
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    allow_large_csv_fields()
    with open_regular(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        repeated = repeated_names(header)
        if repeated:  # DictReader would keep the last column of each silently
            raise InputError(
                f"{path.name} repeats the column(s) {', '.join(map(repr, repeated))} in its "
                "header; give every column its own name"
            )
        for column, option in needed:
            if column not in header:
                raise InputError(
                    f"{path.name} has no {column!r} column (columns: {', '.join(header) or 'none'})"
                    f"; map yours with --{option}-column NAME"
                )
        for number, record in enumerate(reader, start=1):
            if None in record:  # more cells than header fields
                cells = len(header) + len(record[None])
                yield number, f"row {number} has {cells} cells, the header has {len(header)}"
                continue
            if any(_undecodable(value) for value in record.values()):
                yield number, f"row {number} is not valid UTF-8"
                continue
            yield number, record


def _make_row(
    position: int, record: dict[str, Any] | str, columns: Columns, fmt: InputFormat
) -> InputRow:
    if isinstance(record, str):
        return InputRow(position=position, id=str(position), error=record)
    surrogate = _lone_surrogate(record)
    if surrogate:  # keep none of its text: it could not even be written to the results
        row_id, _ = _read_id(record.get(columns.id), position)
        return InputRow(
            position=position,
            id=str(position) if _lone_surrogate(row_id) else row_id,
            error=f"row {position} holds a lone surrogate ({ascii(surrogate)[1:-1]}), which is "
            "not valid Unicode text",
        )
    row_id, id_error = _read_id(record.get(columns.id), position)
    row = InputRow(
        position=position,
        id=row_id,
        source=record.get(columns.source),
        summary=record.get(columns.summary),
        questions=None,
    )
    problems = [id_error] if id_error else []
    problems += _check_text(record, columns.source, "source", allow_list=True)
    problems += _check_text(record, columns.summary, "summary", allow_list=False, allow_empty=True)
    raw_questions = record.get(columns.questions)
    if raw_questions not in (None, ""):
        try:
            row.questions = _parse_questions(raw_questions)
        except ValueError as exc:
            problems.append(f"{columns.questions!r}: {exc}")
    if problems:
        row.error = "; ".join(problems)
    return row


def _read_id(value: Any, position: int) -> tuple[str, str | None]:
    if value is None or value == "":
        return str(position), None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return str(position), f"id must be a string or an integer, got {type(value).__name__}"
    return str(value).strip() or str(position), None


def _check_text(
    record: dict[str, Any], column: str, what: str, *, allow_list: bool, allow_empty: bool = False
) -> list[str]:
    """Why the field cannot be scored, if it cannot. An empty summary can: it scores 0.0 (the
    one rule for empty summaries, README "Empty summaries"); an empty source cannot."""
    if column not in record:
        hint = f" (map another column with --{what}-column)" if column == what else ""
        return [f"missing field {column!r}{hint}"]
    value = record[column]
    if allow_list and isinstance(value, list):
        if not value or not all(isinstance(part, str) for part in value):
            return [f"{what} must be a string or a non-empty list of strings"]
        if not any(part.strip() for part in value):
            return [f"{what} is empty"]
        return []
    if not isinstance(value, str):
        kind = "null" if value is None else type(value).__name__
        return [f"{what} must be a string, got {kind}"]
    if not value.strip() and not allow_empty:
        return [f"{what} is empty or whitespace only"]
    return []


def _parse_questions(value: Any) -> list[Any]:
    """A list (JSONL), or a string holding a JSON list or one question per line (CSV)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = bounded_json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a valid JSON list: {exc.msg}") from None
        else:
            value = [line.strip() for line in text.splitlines() if line.strip()]
    if not isinstance(value, list) or not value:
        raise ValueError("questions must be a non-empty list of questions")
    for i, item in enumerate(value):
        ok = (isinstance(item, str) and item.strip()) or (
            isinstance(item, dict) and isinstance(item.get("question"), str)
        )
        if not ok:
            raise ValueError(f"item {i} must be a question string or {{'question', 'importance'}}")
    return value


def row_from_record(position: int, record: dict[str, Any], columns: Columns) -> InputRow:
    """One input row from a record already parsed into a dict (a Parquet row, a Ray Data row),
    with the same checks and error reasons as the JSONL/CSV reader, so every engine and reader
    marks bad rows alike."""
    return _make_row(position, record, columns, "jsonl")
