"""One OpenCode (or Kilo) SQLite database, read-only, as polars frames of its rows.

OpenCode keeps its sessions as rows of ``opencode.db`` (tables ``session``, ``message``,
``part``; each ``data`` column is the record's JSON without its ids). SQLite itself picks the
fields out of the JSON (``->>``), one query per table, and the frames are built from each
query's whole result at once: no Python runs per row.

The database is opened read-only and never written: with ``immutable=1`` (no lock, no
``-shm``/``-wal`` file made) when no ``-wal`` or ``-journal`` file is beside it (no process
has it open for writing: OpenCode keeps it in WAL mode, whose ``-wal`` lives while it is
open), else in ``mode=ro``, honouring the writer's locks and reading the rows still in the
live ``-wal``.
A file that cannot be read (locked, truncated, not a database, not OpenCode's) gives a
:class:`UnreadableError` with SQLite's reason; the caller makes it an issue.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.request import pathname2url

import polars as pl

T = TypeVar("T")

#: How long a read waits for a writer's lock before the file is reported as locked.
BUSY_SECONDS = 2.0

#: The tables every OpenCode 1.x database has.
TABLES = ("session", "message", "part")

#: OpenCode 2.x's table of messages (with their usage), not read yet: its rows are reported.
UNREAD = ("session_message",)

#: Each session with the root of its sub-agent tree (itself when it has no parent, or its
#: parent is not in the database); ``depth`` bounds a parent cycle.
_ROOTS = """
WITH RECURSIVE tree(id, root_id, depth) AS (
    SELECT id, id, 0 FROM session
    WHERE parent_id IS NULL OR parent_id NOT IN (SELECT id FROM session)
    UNION ALL
    SELECT s.id, t.root_id, t.depth + 1 FROM session s JOIN tree t ON s.parent_id = t.id
    WHERE t.depth < 64
)
"""


def select(columns: dict[str, tuple[pl.DataType, str]]) -> str:
    """A SELECT list of ``columns`` (name -> (dtype, SQL expression)), each as text: the
    frame is built from the rows at once whatever types the JSON holds, and :func:`frame`
    casts each column to its dtype (a value of another type is null)."""
    return "SELECT " + ",\n       ".join(
        f"CAST({expression} AS TEXT)" for _, expression in columns.values()
    )


def schema(columns: dict[str, tuple[pl.DataType, str]]) -> dict[str, pl.DataType]:
    """The frame schema of ``columns``."""
    return {name: dtype for name, (dtype, _) in columns.items()}


_TEXT, _INT = pl.String(), pl.Int64()

#: A session: its sub-agent tree's root, parent, directory, OpenCode version, times.
SESSION_COLUMNS = {
    "line": (_INT, "s.rowid"),
    "session": (_TEXT, "s.id"),
    "root": (_TEXT, "coalesce(t.root_id, s.id)"),
    "parent": (_TEXT, "s.parent_id"),
    "cwd": (_TEXT, "s.directory"),
    "version": (_TEXT, "s.version"),
    "created": (_INT, "s.time_created"),
    "updated": (_INT, "s.time_updated"),
}
SESSIONS = f"{_ROOTS}{select(SESSION_COLUMNS)}\nFROM session s LEFT JOIN tree t ON t.id = s.id"

#: A message: its role, creation stamp, model and provider (an assistant message names them
#: at its top level, a user message under ``model``), mode, agent, error and parent (an
#: assistant message's user message).
MESSAGE_COLUMNS = {
    "line": (_INT, "m.rowid"),
    "message": (_TEXT, "m.id"),
    "role": (_TEXT, "m.data ->> '$.role'"),
    "message_created": (_INT, "m.data ->> '$.time.created'"),
    "model": (_TEXT, "coalesce(m.data ->> '$.modelID', m.data ->> '$.model.modelID')"),
    "provider": (_TEXT, "coalesce(m.data ->> '$.providerID', m.data ->> '$.model.providerID')"),
    "mode": (_TEXT, "m.data ->> '$.mode'"),
    "agent_name": (_TEXT, "m.data ->> '$.agent'"),
    "error": (_TEXT, "m.data ->> '$.error.name'"),
    "parent_message": (_TEXT, "m.data ->> '$.parentID'"),
}
MESSAGES = f"{select(MESSAGE_COLUMNS)}\nFROM message m WHERE json_valid(m.data)"

#: A part: where and when, its type, and the fields its type gives: a ``step-finish``
#: part's ``tokens`` (the JSON object's text, taken apart by the fold), ``cost`` (the JSON
#: value's text: a number as written) and ``snapshot``; the sizes of a text and of a tool's
#: input and output. Few fields are taken in SQL: SQLite 3.40 parses a row's JSON once per
#: field.
PART_COLUMNS = {
    "line": (_INT, "p.rowid"),
    "part": (_TEXT, "p.id"),
    "own_session": (_TEXT, "p.session_id"),
    "message": (_TEXT, "p.message_id"),
    "created": (_INT, "p.time_created"),
    "time": (_INT, "coalesce(p.time_updated, p.time_created)"),
    "type": (_TEXT, "p.data ->> '$.type'"),
    "tokens": (_TEXT, "p.data -> '$.tokens'"),
    "cost": (_TEXT, "p.data -> '$.cost'"),
    "snapshot": (_TEXT, "p.data ->> '$.snapshot'"),
    "text_bytes": (_INT, "length(CAST(p.data ->> '$.text' AS BLOB))"),
    "tool": (_TEXT, "p.data ->> '$.tool'"),
    "call_id": (_TEXT, "p.data ->> '$.callID'"),
    "tool_input_bytes": (_INT, "length(CAST(p.data -> '$.state.input' AS BLOB))"),
    "tool_output_bytes": (_INT, "length(CAST(p.data ->> '$.state.output' AS BLOB))"),
}
PARTS = f"{select(PART_COLUMNS)}\nFROM part p WHERE json_valid(p.data)"

#: Every row of the tables whose ``data`` is JSON: those missing from the frames read are
#: the rows whose ``data`` is not JSON (reported, not read; no second parse to find them).
ROW_IDS = """
SELECT 'part', CAST(rowid AS TEXT), id FROM part
UNION ALL SELECT 'message', CAST(rowid AS TEXT), id FROM message
"""
ROW_SCHEMA = {"table": _TEXT, "line": _INT, "id": _TEXT}


class UnreadableError(Exception):
    """The file could not be read as an OpenCode database (the message says why)."""


@dataclass(frozen=True)
class Rows:
    """What one database holds: its sessions, messages and parts, the rows whose JSON is
    invalid, and the rows of tables this reader does not count (OpenCode 2.x
    ``session_message``), by table."""

    sessions: pl.DataFrame
    messages: pl.DataFrame
    parts: pl.DataFrame
    invalid: pl.DataFrame
    unread: dict[str, int]


def uri(path: Path) -> str:
    """The read-only SQLite URI of ``path``: ``immutable`` (no lock taken, no file made beside
    it) unless a ``-wal`` or ``-journal`` file says a writer may be at work, when SQLite's
    locks are honoured and the rows still in a live ``-wal`` are read too."""
    live = any(path.with_name(path.name + end).exists() for end in ("-wal", "-journal"))
    return f"file:{pathname2url(str(path.absolute()))}?mode=ro{'' if live else '&immutable=1'}"


def frame(cursor: sqlite3.Cursor, columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """A query's whole result (text columns, see :func:`select`) as a frame of ``columns``,
    built at once, not row by row; a value that is not of its column's dtype is null."""
    text = pl.DataFrame(cursor.fetchall(), schema=dict.fromkeys(columns, _TEXT), orient="row")
    return text.cast(pl.Schema(columns), strict=False)


def read(path: Path) -> Rows:
    """The rows of the database at ``path``; :class:`UnreadableError` if it cannot be read."""
    return opened(path, rows_of)


def opened(path: Path, use: Callable[[sqlite3.Connection], T]) -> T:
    """What ``use`` reads from the database at ``path``, opened read-only (see :func:`uri`);
    :class:`UnreadableError` if it cannot be opened or read."""
    try:
        connection = sqlite3.connect(uri(path), uri=True, timeout=BUSY_SECONDS)
    except sqlite3.Error as error:
        raise UnreadableError(f"cannot open the database read-only: {error}") from error
    with closing(connection):
        try:
            connection.execute("PRAGMA query_only = ON")
            return use(connection)
        except sqlite3.Error as error:
            raise UnreadableError(f"cannot read the database: {error}") from error


def invalid(rows: pl.DataFrame, messages: pl.DataFrame, parts: pl.DataFrame) -> pl.DataFrame:
    """The ``rows`` (``ROW_IDS``) that ``messages`` and ``parts`` lack: those whose JSON is
    invalid, by table, row and id."""
    read = pl.concat(
        [
            parts.select(pl.lit("part").alias("table"), "line"),
            messages.select(pl.lit("message").alias("table"), "line"),
        ]
    )
    return rows.join(read, on=["table", "line"], how="anti").sort(
        "table", "line", descending=[True, False]
    )


def rows_of(connection: sqlite3.Connection) -> Rows:
    """The rows of an open database of OpenCode's tables (``sqlite3.Error`` if it cannot be
    read; :class:`UnreadableError` if it lacks them)."""
    listed = connection.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    tables = {name for (name,) in listed}
    missing = [table for table in TABLES if table not in tables]
    if missing:
        raise UnreadableError(f"not an OpenCode database: no {', '.join(missing)} table")
    unread = {
        table: count
        for table in UNREAD
        if table in tables
        and (count := connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    }
    messages = frame(connection.execute(MESSAGES), schema(MESSAGE_COLUMNS))
    parts = frame(connection.execute(PARTS), schema(PART_COLUMNS))
    return Rows(
        sessions=frame(connection.execute(SESSIONS), schema(SESSION_COLUMNS)),
        messages=messages,
        parts=parts,
        invalid=invalid(frame(connection.execute(ROW_IDS), ROW_SCHEMA), messages, parts),
        unread=unread,
    )
