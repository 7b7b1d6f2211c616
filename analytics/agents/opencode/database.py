"""One OpenCode (or Kilo) SQLite database, read-only, as polars frames of its rows.

OpenCode keeps its sessions as rows of ``opencode.db`` (tables ``session``, ``message``,
``part``; each ``data`` column is the record's JSON without its ids). SQLite itself picks the
fields out of the JSON (``->>``), one query per table, each row's JSON parsed once, and of a
part only the fields its type gives (a call's, an item's). The results come back as Arrow
columns through the ADBC SQLite driver (``adbc-driver-sqlite``), a page of rows at a time
(``WHERE rowid > last``: flat memory), never as a Python object per row: Python's
``sqlite3`` made one per row and value, most of the time and memory of a large database.
A part's call or item fields are kept in frames of their own, so the parts that are neither
hold no memory for them. The messages and sessions are read on a second connection while
the parts are.

The database is opened read-only and never written: with ``immutable=1`` (no lock, no
``-shm``/``-wal`` file made) when no ``-wal`` or ``-journal`` file is beside it (no process
has it open for writing: OpenCode keeps it in WAL mode, whose ``-wal`` lives while it is
open), else in ``mode=ro``, honouring the writer's locks and reading the rows still in the
live ``-wal``.
A file that cannot be read (locked, truncated, not a database, not OpenCode's) gives a
:class:`UnreadableError` with SQLite's reason; the caller makes it an issue.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.request import pathname2url

import adbc_driver_manager
import adbc_driver_sqlite
import polars as pl

from analytics.core.allocators import release

T = TypeVar("T")

#: A query's whole result as a frame of ``columns`` (name -> dtype): its values are
#: selected as text (:func:`select`) and cast to their column's dtype, a value of another
#: type null. The reader's queries run through one, on ADBC (:func:`opened`) or on an open
#: ``sqlite3`` connection (:func:`fetcher`: the legacy store's, made in memory).
Fetch = Callable[[str, dict[str, pl.DataType]], pl.DataFrame]

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


def sessions_of(fetch: Fetch) -> pl.DataFrame:
    """Every session of the database read through ``fetch`` (``SESSIONS``), each directory
    (``cwd``) held once (``shared``): a session's row lives until the end of the fold and
    its directory is its sessions row's, a long path that few sessions do not share (on the
    954 MB bench database, 21 paths of 124 bytes on average among 188,188 sessions)."""
    sessions = fetch(SESSIONS, schema(SESSION_COLUMNS))
    return sessions.with_columns(shared(sessions["cwd"]))


def shared(texts: pl.Series) -> pl.Series:
    """``texts`` with each distinct value stored once, every row a view of it: polars keeps
    a text of more than 12 bytes in a buffer per row, and a gather of a column shares its
    buffers. The distinct values are copied (``+ ""``), so the result does not keep the
    buffers of ``texts`` alive."""
    distinct = (texts.unique(maintain_order=True) + "").to_frame().with_row_index("at")
    found = texts.to_frame().join(distinct, on=texts.name, how="left", maintain_order="left")
    return distinct[texts.name].gather(found["at"])


#: The rows read by one query (a page, in row order): the frames of one page live at once.
PAGE_ROWS = 65_536


#: Which rows of a table a query reads: a page of them (``int | None``: those after that
#: row, ``PAGE_ROWS`` at most), or those of the sessions named (``Sessions``: all at once).
Sessions = tuple[str, ...]
Span = int | None | Sessions


def _among(column: str, sessions: Sessions) -> str:
    """A WHERE clause: ``column`` is one of ``sessions`` (given as a JSON array)."""
    named = json.dumps(list(sessions)).replace("'", "''")
    return f" WHERE {column} IN (SELECT value FROM json_each('{named}'))"


def _checked(table: str, columns: str, fields: dict[str, str], span: Span) -> str:
    """The rows of ``table`` in ``span`` (``Span``): their ``columns``, ``data``, ``line``
    (the row), ``valid`` (whether its ``data`` is JSON: SQLite's ``json_valid``, null for a
    null ``data``) and ``fields`` (name -> SQL of ``data``), null where ``data`` is not
    JSON: nothing is taken from such a row, which is reported, not read. SQLite keeps a
    row's parse for its next fields: its JSON is parsed once. The rows of sessions are
    found through the table's ``session_id`` index (not in row order with a limit, which
    SQLite would answer by scanning the whole table for each), then read in row order:
    no sort of the rows read."""
    taken = "".join(f", iif(valid, {sql}, NULL) AS {name}" for name, sql in fields.items())
    if isinstance(span, tuple):  # the rows found through the index, then read in order
        where = f" WHERE rowid IN (SELECT rowid FROM {table}{_among('session_id', span)})"
        where += " ORDER BY rowid"
    else:
        where = "" if span is None else f" WHERE rowid > {span}"
        where += f" ORDER BY rowid LIMIT {PAGE_ROWS}"
    return (
        f"(SELECT *{taken} FROM (SELECT {columns}, data, rowid AS line,"
        f" json_valid(data) AS valid FROM {table}{where}))"
    )


def _query(columns: dict[str, tuple[pl.DataType, str]], rows: str, alias: str) -> str:
    """The query of ``valid`` and ``columns`` from ``rows`` (``_checked``) as ``alias``, in
    row order."""
    query = select({"valid": (_INT, f"{alias}.valid"), **columns})
    return f"{query}\nFROM {rows} {alias}\nORDER BY {alias}.line"


#: A message's fields: its role, creation stamp, model and provider (an assistant message
#: names them at its top level, a user message under ``model``), mode, agent, error and
#: parent (an assistant message's user message).
_MESSAGE_FIELDS = {
    "role": "data ->> '$.role'",
    "message_created": "data ->> '$.time.created'",
    "model": "coalesce(data ->> '$.modelID', data ->> '$.model.modelID')",
    "provider": "coalesce(data ->> '$.providerID', data ->> '$.model.providerID')",
    "mode": "data ->> '$.mode'",
    "agent_name": "data ->> '$.agent'",
    "error": "data ->> '$.error.name'",
    "parent_message": "data ->> '$.parentID'",
}
MESSAGE_COLUMNS = {
    "line": (_INT, "m.line"),
    "message": (_TEXT, "m.id"),
    **{
        name: (_INT if name == "message_created" else _TEXT, f"m.{name}")
        for name in _MESSAGE_FIELDS
    },
}


def messages_query(span: Span) -> str:
    """The query of the messages in ``span`` (``MESSAGE_COLUMNS``)."""
    return _query(MESSAGE_COLUMNS, _checked("message", "id", _MESSAGE_FIELDS, span), "m")


#: The type of a part that is a call, and those of the parts that are context items.
STEP, ITEM_TYPES = "step-finish", ("text", "reasoning", "tool")


def _of(*types: str, value: str) -> str:
    """``value`` for the parts of ``types`` (null for the others, and for a part whose
    ``data`` is not JSON: it has no type)."""
    listed = ", ".join(f"'{kind}'" for kind in types)
    return f"iif(p.type IN ({listed}), {value}, NULL)"


#: The counts of a ``step-finish`` part's ``tokens``, by the column they are read into.
COUNTS = {
    "input": "input",
    "output": "output",
    "reasoning": "reasoning",
    "cache_read": "cache.read",
    "cache_write": "cache.write",
    "total": "total",
}


def _count(name: str) -> str:
    """A count of a part's ``tokens`` (``input``, ``cache.read``, ...) as the text of a whole
    number (:func:`frame` makes it one): a JSON integer or a string. A float, boolean,
    object or array is none, nor is ``-0``: SQLite gives ``true`` and ``false`` as 1 and 0,
    and ``-0``, ``0.0`` and ``1.0`` as numbers equal to them, so those are told by their
    JSON text."""
    value, text = f"p.data ->> '$.tokens.{name}'", f"p.data -> '$.tokens.{name}'"
    return f"iif({value} IN (0, 1), iif({text} IN ('0', '1'), {value}, NULL), {value})"


#: What every part has: where and when, and its type.
PART_KEYS = {
    "line": (_INT, "p.line"),
    "part": (_TEXT, "p.id"),
    "own_session": (_TEXT, "p.session_id"),
    "created": (_INT, "p.time_created"),
    "time": (_INT, "coalesce(p.time_updated, p.time_created)"),
    "type": (_TEXT, "p.type"),
}

#: A ``step-finish`` part's fields: its message, ``tokens`` (the JSON object's text, which
#: tells a fork's copy), their counts (``COUNTS``), ``cost`` (the JSON value's text: a
#: number as written) and ``snapshot``.
STEP_FIELDS = {
    "message": (_TEXT, "p.message_id"),
    "tokens": (_TEXT, "p.data -> '$.tokens'"),
    "cost": (_TEXT, "p.data -> '$.cost'"),
    "snapshot": (_TEXT, "p.data ->> '$.snapshot'"),
    **{column: (_INT, _count(name)) for column, name in COUNTS.items()},
}

#: A context item's fields: its message, the size of a text (or reasoning); a tool's name,
#: call id, and the sizes of its input and output.
ITEM_FIELDS = {
    "message": (_TEXT, "p.message_id"),
    "text_bytes": (
        _INT,
        _of("text", "reasoning", value="length(CAST(p.data ->> '$.text' AS BLOB))"),
    ),
    "tool": (_TEXT, _of("tool", value="p.data ->> '$.tool'")),
    "call_id": (_TEXT, _of("tool", value="p.data ->> '$.callID'")),
    "tool_input_bytes": (
        _INT,
        _of("tool", value="length(CAST(p.data -> '$.state.input' AS BLOB))"),
    ),
    "tool_output_bytes": (
        _INT,
        _of("tool", value="length(CAST(p.data ->> '$.state.output' AS BLOB))"),
    ),
}

#: ``ITEM_FIELDS`` when the context items are not asked for: only a tool's output, as 0
#: where it has one (whether it has a result gives the calls their place among the items,
#: ``event_seq``); the others are null.
_ITEM_FIELDS_UNASKED: dict[str, tuple[pl.DataType, str]] = {
    "tool_output_bytes": (
        _INT,
        _of("tool", value="iif(json_type(p.data, '$.state.output') <> 'null', 0, NULL)"),
    )
}

#: A part's fields as its frame holds them (``Rows``): its keys, its place among the parts
#: read (``at``), and a call's or an item's fields.
PART_COLUMNS = {**PART_KEYS, **STEP_FIELDS, **ITEM_FIELDS}


def _part_columns(items: bool) -> dict[str, tuple[pl.DataType, str]]:
    """What the query of the parts selects: a part's keys, its message, then a call's fields
    (null for the parts of other types) and an item's (those only items show unless
    ``items``)."""
    return {
        **PART_KEYS,
        "message": STEP_FIELDS["message"],
        **{
            name: (dtype, _of(STEP, value=sql))
            for name, (dtype, sql) in STEP_FIELDS.items()
            if name != "message"
        },
        **{name: field for name, field in _item_fields(items).items() if name != "message"},
    }


def _item_fields(items: bool) -> dict[str, tuple[pl.DataType, str]]:
    """The fields read of a part that is a context item: all unless ``items`` is false."""
    return ITEM_FIELDS if items else _ITEM_FIELDS_UNASKED


def parts_query(items: bool, span: Span) -> str:
    """The query of the parts in ``span`` (``_part_columns``)."""
    rows = _checked(
        "part",
        "id, session_id, message_id, time_created, time_updated",
        {"type": "data ->> '$.type'"},
        span,
    )
    return _query(_part_columns(items), rows, "p")


def _of_types(
    page: pl.DataFrame, types: tuple[str, ...], fields: dict[str, tuple[pl.DataType, str]]
) -> pl.DataFrame:
    """The parts of ``page`` of ``types``, with their place (``at``), their keys and
    ``fields`` (null where the page lacks them: not read)."""
    return page.filter(pl.col("type").is_in(types)).select(
        "at",
        *PART_KEYS,
        *(
            pl.col(name) if name in page.columns else pl.lit(None, dtype).alias(name)
            for name, (dtype, _) in fields.items()
        ),
    )


class UnreadableError(Exception):
    """The file could not be read as an OpenCode database (the message says why)."""


@dataclass(frozen=True)
class Rows:
    """What one database holds: its sessions, messages and parts (``PART_KEYS``), its
    ``step-finish`` parts and the parts that are context items, each with its place among
    ``parts`` (``at``) and its fields (``STEP_FIELDS``, ``ITEM_FIELDS``), the rows whose
    JSON is invalid, and the rows of tables this reader does not count (OpenCode 2.x
    ``session_message``), by table. A part's fields are kept apart from the parts of other
    types, so a part that is neither a call nor an item holds no memory for them."""

    sessions: pl.DataFrame
    messages: pl.DataFrame
    parts: pl.DataFrame
    steps: pl.DataFrame
    items: pl.DataFrame
    invalid: pl.DataFrame
    unread: dict[str, int]


def uri(path: Path) -> str:
    """The read-only SQLite URI of ``path``: ``immutable`` (no lock taken, no file made beside
    it) unless a ``-wal`` or ``-journal`` file says a writer may be at work, when SQLite's
    locks are honoured and the rows still in a live ``-wal`` are read too."""
    live = any(path.with_name(path.name + end).exists() for end in ("-wal", "-journal"))
    return f"file:{pathname2url(str(path.absolute()))}?mode=ro{'' if live else '&immutable=1'}"


def _typed(frame: pl.DataFrame, columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """``frame``'s text columns named ``columns``, in order, cast to their dtypes (a value
    of another type null)."""
    return frame.rename(dict(zip(frame.columns, columns, strict=True))).cast(
        pl.Schema(columns), strict=False
    )


def fetcher(connection: sqlite3.Connection) -> Fetch:
    """The :data:`Fetch` of an open ``sqlite3`` connection: a Python object a row and value,
    for a small database (the legacy store's, made in memory)."""

    def fetch(query: str, columns: dict[str, pl.DataType]) -> pl.DataFrame:
        rows = connection.execute(query).fetchall()
        return _typed(
            pl.DataFrame(rows, schema=dict.fromkeys(columns, _TEXT), orient="row"), columns
        )

    return fetch


def _arrow(connection: adbc_driver_manager.AdbcConnection) -> Fetch:
    """The :data:`Fetch` of an ADBC connection: the result comes as Arrow columns, with no
    Python object per row. The driver types a column by its first rows' values, and types
    one all null there as an integer (then fails on a text): a first row of empty texts
    makes every column text, and is dropped. Polars takes the driver's strings as they are,
    and a column kept holds the driver's whole batch (every column) alive: each text is
    copied into polars' own (``+ ""``), so the batch is freed at once (measured: 18, not
    33 MB held for each page of parts kept)."""

    def fetch(query: str, columns: dict[str, pl.DataType]) -> pl.DataFrame:
        texts = ", ".join(f"'' AS c{place}" for place in range(len(columns)))
        with closing(adbc_driver_manager.AdbcStatement(connection)) as statement:
            statement.set_sql_query(f"SELECT {texts} UNION ALL SELECT * FROM ({query})")
            stream, _ = statement.execute_query()
            try:
                result = pl.DataFrame(stream)
            except pl.exceptions.ComputeError as error:  # SQLite failed while stepping
                raise UnreadableError(f"cannot read the database: {_reason(error)}") from error
        return _typed(result.slice(1), columns).with_columns(pl.col(pl.String) + "")

    return fetch


def _reason(error: Exception) -> str:
    """SQLite's reason in an error of the driver (``… [SQLite] Failed to <do>: <reason>``,
    then the query on lines of its own): the reason alone, as ``sqlite3`` gave it."""
    said = str(error).partition("\n")[0]
    rest = said.partition("[SQLite] ")[2]
    return rest.partition(": ")[2] or rest or said


def _run(connection: adbc_driver_manager.AdbcConnection, sql: str) -> None:
    """Run the statement ``sql`` (a ``PRAGMA`` setting) on ``connection``."""
    with closing(adbc_driver_manager.AdbcStatement(connection)) as statement:
        statement.set_sql_query(sql)
        statement.execute_update()


def read(path: Path, *, items: bool = True, only: Sessions | None = None) -> Rows:
    """The rows of the database at ``path`` (with its context items' fields unless ``items``
    is false): all, or the messages and parts of the sessions ``only`` (and no sessions);
    :class:`UnreadableError` if it cannot be read. Its messages and sessions are read on a
    connection of their own, in a thread, while the parts are read: SQLite runs without
    Python's lock, so the two reads share the machine's cores."""
    with ThreadPoolExecutor(1) as pool:
        others = pool.submit(opened, path, lambda fetch: _others(fetch, only))
        return opened(path, lambda fetch: rows_of(fetch, items=items, others=others, only=only))


def opened(path: Path, use: Callable[[Fetch], T]) -> T:
    """What ``use`` reads from the database at ``path``, opened read-only (see :func:`uri`)
    with the ADBC SQLite driver; :class:`UnreadableError` if it cannot be opened or read.
    Once it is closed, the free pages of glibc's heap are handed back (``release``): the
    driver builds its Arrow batches, and SQLite its pages, of blocks too small to be
    mapped apart, and what they freed would stay resident under the frames kept (on the
    954 MB bench database a cold ``analyze`` peaked 630-639 MB before, 560-605 after)."""
    try:
        return _opened(path, use)
    finally:
        release()


def _opened(path: Path, use: Callable[[Fetch], T]) -> T:
    """``opened``, without the release."""
    try:
        database = adbc_driver_sqlite.connect(uri(path))
    except adbc_driver_manager.Error as error:
        raise UnreadableError(f"cannot open the database read-only: {_reason(error)}") from error
    with closing(database):
        try:
            connection = adbc_driver_manager.AdbcConnection(database)
        except adbc_driver_manager.Error as error:
            raise UnreadableError(
                f"cannot open the database read-only: {_reason(error)}"
            ) from error
        with closing(connection):
            try:
                _run(connection, f"PRAGMA busy_timeout = {round(BUSY_SECONDS * 1000)}")
                _run(connection, "PRAGMA query_only = ON")
                return use(_arrow(connection))
            except adbc_driver_manager.Error as error:
                raise UnreadableError(f"cannot read the database: {_reason(error)}") from error


def _valid(
    fetch: Fetch,
    query: Callable[[Span], str],
    columns: dict[str, tuple[pl.DataType, str]],
    invalid: list[pl.DataFrame],
    only: Sessions | None = None,
) -> Iterator[pl.DataFrame]:
    """The rows of ``query`` (``valid`` then ``columns``, ``line`` then the row's id first;
    ``query(span)``: the rows of ``span``) whose ``data`` is JSON, a page of ``PAGE_ROWS``
    at a time (those of the sessions ``only`` at once, when named); the others' rows and
    ids are put in ``invalid``."""
    after: Span = only
    while True:
        page = fetch(query(after), {"valid": _INT, **schema(columns)})
        valid = page["valid"].eq(1).fill_null(False)
        if valid.all():  # most pages: taken as they are, not copied
            yield page.drop("valid")
        else:
            bad = page.filter(~valid)
            invalid.append(bad.select("line", pl.col(bad.columns[2]).alias("id")))
            yield page.filter(valid).drop("valid")
        if only is not None or page.height < PAGE_ROWS:
            return
        after = page.item(-1, "line")


#: A row whose ``data`` is not JSON: its row and id.
_INVALID = {"line": _INT, "id": _TEXT}


def _frames(batches: list[pl.DataFrame], columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """``batches`` as one frame of ``columns``, in one piece (later steps copy less)."""
    return pl.concat([pl.DataFrame(schema=columns), *batches], rechunk=True)


def _part_schema(*names: str) -> dict[str, pl.DataType]:
    """The frame schema of the part columns ``names`` (``at``: a part's place among them)."""
    columns = {"at": _INT, **schema(PART_COLUMNS)}
    return {name: columns[name] for name in names}


def nothing() -> Rows:
    """The rows of a database that holds none."""
    return Rows(
        sessions=pl.DataFrame(schema=schema(SESSION_COLUMNS)),
        messages=pl.DataFrame(schema=schema(MESSAGE_COLUMNS)),
        parts=pl.DataFrame(schema=schema(PART_KEYS)),
        steps=pl.DataFrame(schema=_part_schema("at", *PART_KEYS, *STEP_FIELDS)),
        items=pl.DataFrame(schema=_part_schema("at", *PART_KEYS, *ITEM_FIELDS)),
        invalid=pl.DataFrame(schema={"table": _TEXT, **_INVALID}),
        unread={},
    )


def _others(
    fetch: Fetch, only: Sessions | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The messages, the messages whose ``data`` is not JSON (``_INVALID``) and the sessions
    of a database of OpenCode's tables: the messages of the sessions ``only`` when they are
    named, and then no sessions (the caller has them: ``slices.plan``)."""
    invalid: list[pl.DataFrame] = [pl.DataFrame(schema=_INVALID)]
    messages = list(_valid(fetch, messages_query, MESSAGE_COLUMNS, invalid, only))
    columns = schema(SESSION_COLUMNS)
    sessions = sessions_of(fetch) if only is None else pl.DataFrame(schema=columns)
    read = _frames(messages, schema(MESSAGE_COLUMNS))
    return read.with_columns(shared(read[name]) for name in SHARED), pl.concat(invalid), sessions


#: The message fields held once per distinct value (``shared``): a call takes its model and
#: provider from its message, and the calls table and the sessions' ``models`` are views of
#: them, which otherwise kept every message's texts alive to the end (few models, long
#: names: on the 1 GB bench database some 20 MiB of the fold's tables).
SHARED = ("model", "provider")


def rows_of(
    fetch: Fetch,
    *,
    items: bool = True,
    others: Future[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]] | None = None,
    only: Sessions | None = None,
) -> Rows:
    """The rows of a database of OpenCode's tables, read through ``fetch`` (with the fields
    of their context items unless ``items`` is false; :class:`UnreadableError` if it lacks
    them): all, or the messages and parts of the sessions ``only`` (and no sessions).
    ``others``: its messages and sessions (``_others``), read elsewhere, else read here
    after the parts."""
    listed = fetch(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')", {"name": _TEXT}
    )
    tables = set(listed["name"])
    missing = [table for table in TABLES if table not in tables]
    if missing:
        raise UnreadableError(f"not an OpenCode database: no {', '.join(missing)} table")
    unread = {
        table: count
        for table in UNREAD
        if table in tables and (count := fetch(f"SELECT count(*) FROM {table}", {"n": _INT}).item())
    }
    bad_parts: list[pl.DataFrame] = [pl.DataFrame(schema=_INVALID)]
    parts, steps, givers, at = [], [], [], 0
    pages = _valid(
        fetch, lambda span: parts_query(items, span), _part_columns(items), bad_parts, only
    )
    for page in pages:
        placed = page.with_row_index("at", at).with_columns(pl.col("at").cast(_INT))
        at += page.height
        parts.append(page.select(*PART_KEYS))
        steps.append(_of_types(placed, (STEP,), STEP_FIELDS))
        givers.append(_of_types(placed, ITEM_TYPES, ITEM_FIELDS))
    messages, bad_messages, sessions = others.result() if others else _others(fetch, only)
    invalid = pl.concat(
        [
            pl.concat(bad_parts).select(pl.lit("part").alias("table"), "line", "id"),
            bad_messages.select(pl.lit("message").alias("table"), "line", "id"),
        ]
    )
    return Rows(
        sessions=sessions,
        messages=messages,
        parts=_frames(parts, schema(PART_KEYS)),
        steps=_frames(steps, _part_schema("at", *PART_KEYS, *STEP_FIELDS)),
        items=_frames(givers, _part_schema("at", *PART_KEYS, *ITEM_FIELDS)),
        invalid=invalid.sort("table", "line", descending=[True, False]),
        unread=unread,
    )


def stamps_met(fetch: Fetch, sessions: Sessions, stamps: list[pl.Series]) -> bool:
    """Whether a message of a session other than ``sessions`` was created (its ``data``'s
    ``time.created``) at one of the milliseconds ``stamps``."""
    found = pl.concat([pl.Series([], dtype=_INT), *(s.cast(_INT) for s in stamps)]).drop_nulls()
    if found.is_empty():
        return False
    at = json.dumps(found.unique().sort().to_list())
    others = _among("session_id", sessions).replace(" WHERE ", " WHERE NOT ", 1)
    query = (
        f"SELECT count(*) FROM (SELECT data FROM message{others})"
        f" WHERE iif(json_valid(data), data ->> '$.time.created', NULL)"
        f" IN (SELECT value FROM json_each('{at}'))"
    )
    return bool(fetch(query, {"n": _INT}).item())
