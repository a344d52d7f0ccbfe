"""Parquet files of rows and of results (the Ray engine's formats): input rows read as the
local engine's reader checks them, and a results writer with the face of
:class:`~shared.runs.results.ResultsWriter` (part files while running, one file at the end)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core import bounded_json
from ..core.files import replaced_path
from ..core.redact import safe_record
from .inputs import Columns, InputError, InputRow, row_from_record
from .results import Row, columns

PARQUET_SUFFIXES = (".parquet", ".pq")
PART_ROWS = 256


def parquet_rows(file: Path, cols: Columns) -> list[InputRow]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file)
    except Exception as exc:
        raise InputError(f"cannot read {file.name} as Parquet: {exc}") from None
    for needed, option in ((cols.source, "source"), (cols.summary, "summary")):
        if needed not in table.column_names:
            raise InputError(
                f"{file.name} has no {needed!r} column (columns: {', '.join(table.column_names)})"
                f"; map yours with --{option}-column NAME"
            )
    return [row_from_record(n, record, cols) for n, record in enumerate(table.to_pylist(), start=1)]


# ---------------------------------------------------------------------------------------------
# Parquet results: part files while running, one file at the end
# ---------------------------------------------------------------------------------------------


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in PARQUET_SUFFIXES


def parts_dir(output: Path) -> Path:
    return output.with_name(f".{output.name}.parts")


def _to_table(rows: Iterable[Row], keys: list[str], spread: bool = False) -> Any:
    import pyarrow as pa

    rows = [safe_record(row) for row in rows]  # no secret reaches the file (shared.core.redact)
    numbers = {*keys, *(f"{k}_sd" for k in keys)}
    data: dict[str, Any] = {}
    for name in columns(keys, spread):
        values = [row.get(name) for row in rows]
        if name == "evidence":
            data[name] = pa.array([json.dumps(v or {}, ensure_ascii=False) for v in values])
        elif name == "position":
            data[name] = pa.array(values, pa.int64())
        elif name in numbers:
            data[name] = pa.array(values, pa.float64())
        else:
            data[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.table(data)


def _write_atomic(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    with replaced_path(path) as tmp:  # a full disk names the file and leaves it as it was
        pq.write_table(table, tmp)


def read_parquet_results(output: Path) -> list[Row]:
    """Rows of the finished file and of any part files an interrupted run left."""
    import pyarrow.parquet as pq

    files = [output] if output.is_file() else []
    if parts_dir(output).is_dir():
        files += sorted(parts_dir(output).glob("part-*.parquet"))
    rows: list[Row] = []
    for file in files:
        try:
            records = pq.read_table(file).to_pylist()
        except Exception:
            continue  # not ours, or cut short
        for row in records:
            try:
                row["evidence"] = bounded_json.loads(row.get("evidence") or "{}")
            except json.JSONDecodeError:
                continue  # a hand-edited row: scored again
            rows.append(row)
    return rows


class ParquetResults:
    """Same face as :class:`ResultsWriter`: ``append`` (buffered into part files), ``rewrite``."""

    def __init__(self, path: Path, keys: list[str], *, spread: bool = False) -> None:
        self.path, self.keys, self.spread = path, keys, spread
        self.buffer: list[Row] = []
        self.parts = parts_dir(path)
        self.count = len(list(self.parts.glob("part-*.parquet"))) if self.parts.is_dir() else 0

    def append(self, row: Row) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= PART_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.count += 1
            _write_atomic(
                _to_table(self.buffer, self.keys, self.spread),
                self.parts / f"part-{self.count:06d}.parquet",
            )
            self.buffer = []

    def close(self) -> None:
        self.flush()

    def rewrite(self, rows: Iterable[Row]) -> None:
        self.buffer = []
        _write_atomic(_to_table(rows, self.keys, self.spread), self.path)
        shutil.rmtree(self.parts, ignore_errors=True)
