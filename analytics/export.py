"""Write the normalised tables as Hive-partitioned Parquet, for DuckDB, Spark or polars.

Layout: ``DIR/<table>/day=YYYY-MM-DD/part-N.parquet`` (the UTC day of the table's time
column; rows without a time go to ``day=__HIVE_DEFAULT_PARTITION__``, which Hive readers read
as a null ``day``; a table given in parts, as events are a group of sessions at a time, writes
one file per part and day) and ``DIR/schema.json`` naming every table, its time column and its
columns with their polars dtypes. Decimals stay ``Decimal(38, 18)``, lists and structs stay nested.
Read back with ``pl.scan_parquet(DIR / "calls", hive_partitioning=True)`` or DuckDB's
``read_parquet('DIR/calls/*/*.parquet', hive_partitioning = true)``.

``export_tables`` is pure; ``write_export`` is the one function here that writes files. It
refuses to write into a Copilot session directory (or any directory holding one), and into
a non-empty directory unless it holds an earlier agentcost export, whose tables it replaces.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from analytics.errors import UsageError

#: Each exported table and the time column that decides its day partition (None: no time).
TIME_COLUMNS: dict[str, str | None] = {
    "events": "timestamp",
    "calls": "start_time",
    "sessions": "start_time",
    "priced_calls": "start_time",
    "issues": None,
}
_DESCRIPTIONS = {
    "events": "One row per usable log line (schema.EVENTS), with source_file/source_line.",
    "calls": "One row per LLM call with its tokens (schema.CALLS + schema.CALL_TOKENS).",
    "sessions": "One row per session, reconciled with the log, with costs under the rate table.",
    "priced_calls": "calls + schema.COSTS columns and billed_usd under the rate table.",
    "issues": "Every input problem: file, line, severity, message.",
}
_NULL_DAY = "__HIVE_DEFAULT_PARTITION__"
_GENERATOR = "agentcost"
_SESSION_MARKERS = ("events.jsonl", "workspace.yaml")


#: A table to export: one frame, or its rows in parts (written one after another).
Table = pl.DataFrame | Iterable[pl.DataFrame]


def export_tables(
    events: Table,
    calls: pl.DataFrame,
    priced_sessions: pl.DataFrame,
    priced_calls: pl.DataFrame,
    issues: pl.DataFrame,
) -> dict[str, Table]:
    """The tables to export, by name, in ``TIME_COLUMNS`` order."""
    frames: dict[str, Table] = {
        "events": events,
        "calls": calls,
        "sessions": priced_sessions,
        "priced_calls": priced_calls,
        "issues": issues,
    }
    return {name: frames[name] for name in TIME_COLUMNS}


def schema_document(
    tables: Mapping[str, tuple[int, Mapping[str, pl.DataType]]], rates: str
) -> dict[str, Any]:
    """``schema.json``: the layout, and each table's description, rows and typed columns
    (``tables``: name -> (rows, schema))."""
    return {
        "generator": _GENERATOR,
        "rates": rates,
        "partitioning": "hive: <table>/day=YYYY-MM-DD/part-N.parquet, the UTC day of the "
        f"time column; rows without one in day={_NULL_DAY}",
        "tables": {
            name: {
                "description": _DESCRIPTIONS[name],
                "path": name,
                "time_column": TIME_COLUMNS[name],
                "rows": rows,
                "columns": [
                    {"name": column, "dtype": str(dtype)} for column, dtype in schema.items()
                ],
            }
            for name, (rows, schema) in tables.items()
        },
    }


def partitioned(frame: pl.DataFrame, time_column: str | None) -> dict[str, pl.DataFrame]:
    """Rows by partition name (``2026-08-03`` or the null partition); never empty."""
    day = (
        pl.col(time_column).dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%d")
        if time_column
        else pl.lit(None, pl.String)
    )
    keyed = frame.with_columns(day.fill_null(_NULL_DAY).alias("__day"))
    parts = {
        str(key[0]): part.drop("__day")
        for key, part in keyed.partition_by("__day", as_dict=True).items()
    }
    return parts or {_NULL_DAY: frame}


def write_export(directory: Path, tables: Mapping[str, Table], rates: str) -> list[Path]:
    """Write every table and ``schema.json`` under ``directory``; return the files written."""
    _check_target(directory)
    written: list[Path] = []
    shapes: dict[str, tuple[int, Mapping[str, pl.DataType]]] = {}
    try:
        for name, table in tables.items():
            shutil.rmtree(directory / name, ignore_errors=True)
            parts = [table] if isinstance(table, pl.DataFrame) else table
            rows, schema = 0, pl.Schema()
            for number, frame in enumerate(parts):
                rows, schema = rows + frame.height, frame.schema
                for day, part in partitioned(frame, TIME_COLUMNS[name]).items():
                    path = directory / name / f"day={day}" / f"part-{number}.parquet"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    part.write_parquet(path)
                    written.append(path)
            shapes[name] = (rows, schema)
        schema_file = directory / "schema.json"
        schema_file.write_text(json.dumps(schema_document(shapes, rates), indent=2) + "\n")
    except OSError as err:
        raise UsageError(
            f"{directory}: cannot write ({err.strerror}); choose another DIR"
        ) from None
    return [*written, schema_file]


def _check_target(directory: Path) -> None:
    """Refuse Copilot session directories and non-empty directories that are not exports."""
    resolved = directory.resolve()
    for place in (resolved, *resolved.parents):
        if place.name == "session-state" or any(
            (place / marker).is_file() for marker in _SESSION_MARKERS
        ):
            raise UsageError(
                f"{directory} is inside a Copilot session directory ({place}); "
                "export to a directory of your own"
            )
    if resolved.is_dir() and any(resolved.iterdir()) and not _earlier_export(resolved):
        raise UsageError(
            f"{directory} is not empty and holds no agentcost export; "
            "choose an empty or new directory"
        )


def _earlier_export(directory: Path) -> bool:
    """Whether ``directory`` holds a ``schema.json`` written by agentcost."""
    try:
        document = json.loads((directory / "schema.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("generator") == _GENERATOR
