"""OpenCode's JSON store from before its database: ``storage/{session,message,part}/``.

Before ``opencode.db``, OpenCode wrote one JSON file per record under ``<data>/storage/``:
``session/<projectID>/<sessionID>.json``, ``message/<sessionID>/<messageID>.json`` and
``part/<messageID>/<partID>.json``, each the record with its ids. Its migration copies them
into the database under the same ids and leaves the tree in place, so the fold counts a
part found in both once (by its id).

The files are put as they are into an in-memory database of OpenCode's three tables (a
file's ids from its JSON, else from its name and folder) and read by the very queries that
read ``opencode.db``, so both stores follow one set of rules. A part file states no time of
its own for every type: its message's creation stamp orders it, then its id (OpenCode's ids
ascend), as in the database.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analytics.agents.opencode.database import Rows

#: A legacy record's path: ``storage/<kind>/<folder>/<id>.json``, named with OpenCode's id
#: prefixes.
RECORD = re.compile(
    r"(?:^|/)storage/(?:session/[^/]+/ses_|message/ses_[^/]+/msg_|part/msg_[^/]+/prt_)[^/]+\.json$"
)

#: The staging table (one row per file, ``rowid`` its place in the list) and the three
#: tables built from it.
_BUILD = """
CREATE TABLE raw (kind text, folder text, stem text, data text);
CREATE TABLE session (id text, parent_id text, directory text, version text,
    time_created integer, time_updated integer);
CREATE TABLE message (id text, session_id text, time_created integer, time_updated integer,
    data text);
CREATE TABLE part (id text, message_id text, session_id text, time_created integer,
    time_updated integer, data text);
"""
_FILL = """
INSERT INTO session (rowid, id, parent_id, directory, version, time_created, time_updated)
SELECT rowid, coalesce(data ->> '$.id', stem), data ->> '$.parentID', data ->> '$.directory',
       data ->> '$.version', data ->> '$.time.created', data ->> '$.time.updated'
FROM raw WHERE kind = 'session' AND json_valid(data);
INSERT INTO message (rowid, id, session_id, time_created, time_updated, data)
SELECT rowid, coalesce(data ->> '$.id', stem), coalesce(data ->> '$.sessionID', folder),
       data ->> '$.time.created', coalesce(data ->> '$.time.completed', data ->> '$.time.created'),
       data
FROM raw WHERE kind = 'message' AND json_valid(data);
INSERT INTO part (rowid, id, message_id, session_id, time_created, time_updated, data)
SELECT r.rowid, coalesce(r.data ->> '$.id', r.stem), m.id,
       coalesce(r.data ->> '$.sessionID', m.session_id), m.time_created,
       coalesce(r.data ->> '$.time.end', m.time_updated), r.data
FROM raw r LEFT JOIN message m ON m.id = coalesce(r.data ->> '$.messageID', r.folder)
WHERE r.kind = 'part' AND json_valid(r.data);
"""
#: Files whose text is not JSON (reported, not read), by their place in the list.
_INVALID = "SELECT rowid FROM raw WHERE NOT json_valid(data)"


def claims(path: Path) -> bool:
    """Whether ``path`` is named as a record of OpenCode's legacy JSON store."""
    return RECORD.search(path.as_posix()) is not None


def kind(path: Path) -> str:
    """``session``, ``message`` or ``part``: the store's folder the record is in."""
    return path.parent.parent.name


def load(files: Sequence[Path]) -> tuple[sqlite3.Connection, list[Path], list[tuple[Path, str]]]:
    """An in-memory database of OpenCode's tables holding the legacy record ``files`` (a
    row's ``rowid`` is its file's place in the returned list, from 1), that list, and the
    files not read with why (unreadable, or not JSON)."""
    staged: list[tuple[str, str, str, str]] = []
    listed: list[Path] = []
    problems: list[tuple[Path, str]] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            problems.append((path, f"cannot read the file: {error.strerror or error}"))
            continue
        staged.append((kind(path), path.parent.name, path.stem, text))
        listed.append(path)
    connection = sqlite3.connect(":memory:")
    connection.executescript(_BUILD)
    connection.executemany("INSERT INTO raw VALUES (?, ?, ?, ?)", staged)
    connection.executescript(_FILL)
    invalid = [row for (row,) in connection.execute(_INVALID)]
    problems += [(listed[row - 1], "not valid JSON; record skipped") for row in invalid]
    return connection, listed, problems


def read(
    files: Sequence[Path], *, items: bool = True
) -> tuple[Rows, list[Path], list[tuple[Path, str]]]:
    """The rows of the legacy record ``files`` (``Rows``' ``line`` is a file's place in the
    returned list, from 1; with their context items' fields unless ``items`` is false), that
    list, and the files not read with why."""
    from analytics.agents.opencode.database import fetcher, rows_of

    connection, listed, problems = load(files)
    with closing(connection):
        return rows_of(fetcher(connection), items=items), listed, problems
