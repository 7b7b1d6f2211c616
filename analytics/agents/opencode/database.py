"""One OpenCode (or Kilo) SQLite database, read-only, as polars frames of its rows.

OpenCode keeps its sessions as rows of ``opencode.db`` (tables ``session``, ``message``,
``part``; each ``data`` column is the record's JSON without its ids). SQLite itself picks the
fields out of the JSON (``->>``) and the frames are built from each query's whole result at
once: no Python runs per row.

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

#: Valid JSON of a table's rows (invalid rows are reported, not read: SQLite's JSON functions
#: would fail the whole query on one).
_VALID = "(SELECT id, {columns} data FROM {table} WHERE json_valid(data))"

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
    """A SELECT list of ``columns`` (name -> (dtype, SQL expression)), each value coerced in
    SQL to its dtype (a JSON field holding another type is null), so the frame is built
    from the rows at once whatever the JSON holds."""
    coerced = []
    for dtype, expression in columns.values():
        if dtype == pl.String():
            coerced.append(f"CAST({expression} AS TEXT)")
        else:
            coerced.append(
                f"CASE WHEN typeof({expression}) IN ('integer', 'real') "
                f"THEN CAST({expression} AS INTEGER) END"
            )
    return "SELECT " + ",\n       ".join(coerced)


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

#: A part with what its message says (role, model, provider, mode, agent, error) and the
#: fields its type gives: a ``step-finish`` part's usage, its cost as the JSON's number text
#: and its whole JSON (what a fork's copy repeats), the sizes of text and tool parts. A user
#: message names its model under ``model``; an assistant message at its top level (else its
#: user message's is taken).
PART_COLUMNS = {
    "line": (_INT, "p.rowid"),
    "part": (_TEXT, "p.id"),
    "own_session": (_TEXT, "p.session_id"),
    "session": (_TEXT, "coalesce(t.root_id, p.session_id)"),
    "message": (_TEXT, "p.message_id"),
    "time": (_INT, "coalesce(p.time_updated, p.time_created)"),
    "created": (_INT, "p.time_created"),
    "type": (_TEXT, "p.data ->> '$.type'"),
    "role": (_TEXT, "m.data ->> '$.role'"),
    "message_created": (_INT, "m.data ->> '$.time.created'"),
    "model": (
        _TEXT,
        "coalesce(m.data ->> '$.modelID', m.data ->> '$.model.modelID', "
        "u.data ->> '$.model.modelID')",
    ),
    "provider": (
        _TEXT,
        "coalesce(m.data ->> '$.providerID', m.data ->> '$.model.providerID', "
        "u.data ->> '$.model.providerID')",
    ),
    "mode": (_TEXT, "m.data ->> '$.mode'"),
    "agent_name": (_TEXT, "m.data ->> '$.agent'"),
    "error": (_TEXT, "m.data ->> '$.error.name'"),
    "input": (_INT, "p.data ->> '$.tokens.input'"),
    "output": (_INT, "p.data ->> '$.tokens.output'"),
    "reasoning": (_INT, "p.data ->> '$.tokens.reasoning'"),
    "cache_read": (_INT, "p.data ->> '$.tokens.cache.read'"),
    "cache_write": (_INT, "p.data ->> '$.tokens.cache.write'"),
    "total": (_INT, "p.data ->> '$.tokens.total'"),
    "cost": (
        _TEXT,
        "CASE WHEN json_type(p.data, '$.cost') IN ('integer', 'real') THEN p.data -> '$.cost' END",
    ),
    "step": (_TEXT, "CASE WHEN p.data ->> '$.type' = 'step-finish' THEN p.data END"),
    "text_bytes": (_INT, "length(CAST(p.data ->> '$.text' AS BLOB))"),
    "tool": (_TEXT, "p.data ->> '$.tool'"),
    "call_id": (_TEXT, "p.data ->> '$.callID'"),
    "tool_input_bytes": (_INT, "length(CAST(p.data -> '$.state.input' AS BLOB))"),
    "tool_output_bytes": (_INT, "length(CAST(p.data ->> '$.state.output' AS BLOB))"),
}
_PARTS = _VALID.format(
    columns="rowid, session_id, message_id, time_created, time_updated,", table="part"
)
_MESSAGES = _VALID.format(columns="", table="message")
PARTS = f"""{_ROOTS}{select(PART_COLUMNS)}
FROM {_PARTS} p
LEFT JOIN tree t ON t.id = p.session_id
LEFT JOIN {_MESSAGES} m ON m.id = p.message_id
LEFT JOIN {_MESSAGES} u ON u.id = m.data ->> '$.parentID'
"""

#: Rows whose ``data`` is not JSON: reported, not read.
INVALID = """
SELECT 'part', rowid, id FROM part WHERE NOT json_valid(data)
UNION ALL SELECT 'message', rowid, id FROM message WHERE NOT json_valid(data)
"""
INVALID_SCHEMA = {"table": _TEXT, "line": _INT, "id": _TEXT}


class UnreadableError(Exception):
    """The file could not be read as an OpenCode database (the message says why)."""


@dataclass(frozen=True)
class Rows:
    """What one database holds: its sessions, its parts (with their messages' facts), the
    rows whose JSON is invalid, and the rows of tables this reader does not count (OpenCode
    2.x ``session_message``), by table."""

    sessions: pl.DataFrame
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
    """A query's whole result as a frame of ``schema`` (built at once, not row by row)."""
    return pl.DataFrame(cursor.fetchall(), schema=columns, orient="row")


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
    return Rows(
        sessions=frame(connection.execute(SESSIONS), schema(SESSION_COLUMNS)),
        parts=frame(connection.execute(PARTS), schema(PART_COLUMNS)),
        invalid=frame(connection.execute(INVALID), INVALID_SCHEMA),
        unread=unread,
    )
