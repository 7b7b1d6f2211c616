"""One agy conversation database, opened without writing anything beside it.

``sqlite3`` with a ``file:`` URI and ``mode=ro`` never takes a write lock, but SQLite still
creates a missing ``-wal`` and ``-shm`` beside a WAL database (SQLite 3.40, tried on the real
database), and an agent's home is never written to. So:

* a WAL database with no ``-wal`` file beside it (agy is not running on it: the WAL file
  lives while a connection is open), or one whose ``-wal`` is too short to hold a single
  frame (an empty one is what a reader that opened the database without ``immutable``
  leaves behind, ccusage's for one), is opened ``mode=ro&immutable=1``: nothing is created,
  and every row is in the main file;
* one whose ``-wal`` holds a frame (agy running, or it stopped uncleanly) is copied with
  its ``-wal`` into a temporary directory and the copy is opened ``mode=ro``, so the rows
  that live only in the WAL are read too;
* any other database is opened ``mode=ro`` (a rollback-journal database creates nothing).

All tables are read in one read transaction. Problems (not a database, locked, a missing
table, a blob that does not decode, an unknown schema version, unknown usage fields) are
:class:`Problem` values, and the rest of the file is still read.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import quote

from analytics.agents.antigravity import SQLITE_HEADER, records, schema

#: ``PRAGMA user_version`` of the databases this reader was written for.
SCHEMA_VERSION = 1
#: The sizes of a ``-wal`` file's header and of each frame's header (SQLite's WAL format).
_WAL_HEADER, _FRAME_HEADER = 32, 24
#: How long to wait for a writer's lock before reporting the file (milliseconds' worth).
BUSY_SECONDS = 2.0

# Only copies of ``step_payload`` that are not the row's ``metadata`` are fetched: on every
# real row the payload holds the metadata verbatim (its field 5), so SQL drops it (not where
# the metadata is empty or missing: then the payload's copy is all there is).
_STEPS = (
    "SELECT idx, step_type, status, metadata, CASE WHEN step_payload IS NULL"
    " OR (length(metadata) > 0 AND instr(step_payload, metadata) > 0) THEN NULL"
    " ELSE step_payload END FROM steps ORDER BY idx"
)
_GEN = "SELECT idx, data FROM gen_metadata ORDER BY idx"


@dataclass(frozen=True, slots=True)
class Problem:
    """A problem found in a database: the row (``steps``/``gen_metadata`` idx; 0 for the
    file), ``error`` (data lost) or ``warning`` (kept, looks wrong), and what it is."""

    row: int
    severity: str
    message: str


@dataclass
class Conversation:
    """What one database holds: its conversation id (``trajectory_meta.cascade_id``, else the
    file name's stem), workspace, usage records, rows read, steps of an unknown type, and
    the problems found."""

    path: Path
    session_id: str
    cwd: str | None = None
    usage: list[records.Record] = field(default_factory=list)
    rows: int = 0
    unknown_steps: int = 0
    problems: list[Problem] = field(default_factory=list)


#: Step types seen in agy's databases (user input, history, ephemeral message, planner
#: response, checkpoint, tool steps); any other still has its usage read.
KNOWN_STEP_TYPES = frozenset({14, 98, 90, 15, 23, 21, 8, 9, 5, 7, 38, 132})


def read(path: Path) -> Conversation:
    """The usage records and facts of the database at ``path`` (never raises on its
    content: each problem is in ``problems``). An empty file is a database agy created and
    has not written yet: nothing, and no problem."""
    found = Conversation(path=path, session_id=path.stem)
    try:
        if path.stat().st_size == 0:
            return found
        with _opened(path) as connection:
            connection.execute("BEGIN")
            try:
                _read_tables(connection, found)
            finally:
                connection.rollback()
    except (sqlite3.Error, OSError) as error:
        found.problems.append(Problem(0, "error", f"database not read: {error}"))
    return found


@contextmanager
def _opened(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``path`` (see the module's doc for the three ways)."""
    with path.open("rb") as file:
        header = file.read(100)
    if not header.startswith(SQLITE_HEADER):
        raise sqlite3.DatabaseError("file is not a database (no SQLite header)")
    wal_mode = header[18:20] == b"\x02\x02"
    wal = path.with_name(path.name + "-wal")
    if wal_mode and _holds_frames(wal, header):
        with tempfile.TemporaryDirectory(prefix="agentcost-antigravity-") as scratch:
            copy = Path(scratch) / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            connection = _connect(copy, "mode=ro")
            try:
                yield connection
            finally:
                connection.close()
        return
    connection = _connect(path, "mode=ro&immutable=1" if wal_mode else "mode=ro")
    try:
        yield connection
    finally:
        connection.close()


def _holds_frames(wal: Path, header: bytes) -> bool:
    """Whether the ``-wal`` file ``wal`` beside a database whose first bytes are ``header``
    holds at least one whole frame: its 32-byte header, then a 24-byte frame header and a
    page (the database's page size: header bytes 16-17, 1 meaning 65536). A shorter file
    (or none) holds no row the main file lacks."""
    try:
        size = wal.stat().st_size
    except OSError:
        return False
    page = int.from_bytes(header[16:18], "big")
    return size >= _WAL_HEADER + _FRAME_HEADER + (65536 if page == 1 else page)


def _connect(path: Path, query: str) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.absolute()))}?{query}"
    return sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None)


def _read_tables(connection: sqlite3.Connection, found: Conversation) -> None:
    tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    if version != SCHEMA_VERSION:
        message = f"unknown schema version {version} (read as version {SCHEMA_VERSION})"
        found.problems.append(Problem(0, "warning", message))
    optional = {"trajectory_meta": _meta, "trajectory_metadata_blob": _workspace}
    for table, read_rows in optional.items():
        if table in tables:
            _table(found, table, partial(read_rows, connection, found))
    for table, read_rows in {"steps": _steps, "gen_metadata": _gen}.items():
        if table in tables:
            _table(found, table, partial(read_rows, connection, found))
        else:
            found.problems.append(Problem(0, "error", f"no {table} table: its usage not read"))
    unknown = sorted({n for r in found.usage for n in r.usage.unknown})
    if unknown:
        numbers = ", ".join(map(str, unknown))
        message = f"usage records carry unknown fields {numbers} (not counted)"
        found.problems.append(Problem(0, "warning", message))


def _table(found: Conversation, table: str, read_rows: Callable[[], None]) -> None:
    """Run ``read_rows``; a table SQLite cannot read is an error, the others still read."""
    try:
        read_rows()
    except sqlite3.Error as error:
        found.problems.append(Problem(0, "error", f"{table} not read: {error}"))


def _meta(connection: sqlite3.Connection, found: Conversation) -> None:
    row = connection.execute("SELECT cascade_id FROM trajectory_meta LIMIT 1").fetchone()
    if row and isinstance(row[0], str) and row[0]:
        found.session_id = row[0]


def _workspace(connection: sqlite3.Connection, found: Conversation) -> None:
    """The workspace (``trajectory_metadata_blob`` 1 -> 1, a ``file://`` URI) as ``cwd``."""
    for (data,) in connection.execute("SELECT data FROM trajectory_metadata_blob"):
        try:
            for workspace in schema.TrajectoryMetadata.FromString(data or b"").workspace:
                uri = schema.text(workspace.uri)
                found.cwd = uri.removeprefix("file://") if uri else found.cwd
        except schema.DecodeError:
            continue


def _steps(connection: sqlite3.Connection, found: Conversation) -> None:
    for idx, step_type, status, metadata, payload in connection.execute(_STEPS):
        found.rows += 1
        found.unknown_steps += step_type not in KNOWN_STEP_TYPES
        try:
            found.usage += records.step_records(idx, step_type, status, metadata or b"", payload)
        except schema.DecodeError as error:
            found.problems.append(Problem(idx, "error", f"steps row {idx}: {error}"))


def _gen(connection: sqlite3.Connection, found: Conversation) -> None:
    for idx, data in connection.execute(_GEN):
        found.rows += 1
        try:
            found.usage += records.gen_records(idx, data or b"")
        except schema.DecodeError as error:
            found.problems.append(Problem(idx, "error", f"gen_metadata row {idx}: {error}"))
