"""OpenCode and Antigravity size trees: SQLite homes filled from the real rows, renamed per copy.

- OpenCode keeps every session in ONE database, ``.local/share/opencode/opencode.db`` (WAL mode).
  The real rows are projections (one ``part`` row's ``data`` per line plus ``_role``, ``_cwd``,
  ``_ts``, ``_model``, ``_error``: ``shared/real_logs/opencode/README.md``); ``opencode_rows`` puts
  them back into OpenCode's v1 tables by the recipe of ``shared/docs/opencode-format.md`` (a new
  session where ``_ts`` goes back; a run of user parts is one user message; each ``step-start``
  opens an assistant message holding the parts up to the next one, its tokens, cost and finish
  from its ``step-finish``). ``build_opencode`` then inserts those rows again and again into one
  database, every session, message and part id (and the ``parentID`` naming the user message)
  new in each copy, until the file holds ``limit`` bytes. Each copy's stamps (columns and the
  epoch milliseconds in the JSON) are also moved ``copy`` seconds later: a ``step-finish`` part
  whose JSON and message stamp equal an older session's is a fork's copy of it (what
  ``Session.fork`` writes), so copies with the same stamps would count once.
- Antigravity keeps one database per conversation,
  ``.gemini/antigravity-cli/conversations/<id>.db``. ``build_antigravity`` writes the real
  databases again and again, each copy's bytes with every uuid (conversation, trajectory,
  execution ids) and every server ``response_id`` of its calls renamed at the same length, so the
  protobuf records and SQLite pages stay valid: ids change, nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

from benchmarks import copy_ids

# OpenCode --------------------------------------------------------------------------------

#: OpenCode's v1 tables and indexes (``session.sql.ts``; the format note's schema).
OPENCODE_SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
    time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
    slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
    share_url text, summary_additions integer, summary_deletions integer, summary_files integer,
    summary_diffs text, revert text, permission text, time_created integer NOT NULL,
    time_updated integer NOT NULL, time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_idx ON part (message_id);
CREATE INDEX part_session_idx ON part (session_id);
"""
#: Who served each model of the recordings (their notes and ``task`` metadata).
OPENCODE_PROVIDERS = {"Qwen/Qwen3-Coder-Next": "ionos"}
#: Stands for the copy in the template rows' ids, replaced per copy.
COPY = "@copy@"
_ADDED = ("_role", "_cwd", "_ts", "_model", "_error")
Row = tuple[object, ...]


def _json(data: object) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class _Rows:
    """The template rows of OpenCode's tables built from projection lines, in order."""

    def __init__(self) -> None:
        self.sessions: list[tuple[str, str, int]] = []
        self.messages: dict[str, list[object]] = {}
        self.parts: list[Row] = []
        self.count = 0
        self.session = ""
        self.last_ts = -1
        self.user: tuple[str, dict[str, object]] | None = None
        self.assistant: tuple[str, dict[str, object]] | None = None
        self.compacting = False

    def new_id(self, kind: str) -> str:
        self.count += 1
        return f"{kind}_{COPY}{self.count:07d}"

    def add(self, line: dict[str, object], new_file: bool) -> None:
        ts = int(str(line["_ts"]))
        if new_file or ts < self.last_ts:
            self.session = self.new_id("ses")
            self.user = self.assistant = None
            self.sessions.append((self.session, str(line["_cwd"]), ts))
        self.last_ts = ts
        data = {k: v for k, v in line.items() if k not in _ADDED}
        if line["_role"] == "user":
            if self.user is None or self.assistant is not None:
                model = str(line["_model"])
                provider = OPENCODE_PROVIDERS.get(model, "lmstudio")
                message: dict[str, object] = {
                    "role": "user", "time": {"created": ts}, "agent": "build",
                    "model": {"providerID": provider, "modelID": model},
                }  # fmt: skip
                user = (self.put(message, ts), message)
                self.user, self.assistant, self.compacting = user, None, False
            self.compacting |= data.get("type") == "compaction"
            owner = self.user[0] if self.user else ""
        else:
            if data.get("type") == "step-start" or self.assistant is None:
                self.open_assistant(line, ts)
            assert self.assistant is not None
            self.grow_assistant(data, line, ts)
            owner = self.assistant[0]
        self.parts.append((self.new_id("prt"), owner, self.session, ts, ts, _json(data)))

    def put(self, data: dict[str, object], ts: int) -> str:
        message = self.new_id("msg")
        self.messages[message] = [message, self.session, ts, ts, data]
        return message

    def open_assistant(self, line: dict[str, object], ts: int) -> None:
        parent, user = self.user if self.user else ("", {"model": {}})
        model = user["model"]
        assert isinstance(model, dict)
        mode = "compaction" if self.compacting else "build"
        cwd = str(line["_cwd"])
        data: dict[str, object] = {
            "role": "assistant", "parentID": parent, "modelID": model.get("modelID"),
            "providerID": model.get("providerID"), "mode": mode, "agent": mode,
            "path": {"cwd": cwd, "root": cwd}, "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "time": {"created": ts},
        }  # fmt: skip
        if self.compacting:
            data["summary"] = True
        self.assistant = (self.put(data, ts), data)

    def grow_assistant(self, part: dict[str, object], line: dict[str, object], ts: int) -> None:
        assert self.assistant is not None
        message, data = self.assistant
        data["time"] = {**data["time"], "completed": ts}  # type: ignore[dict-item]
        if part.get("type") == "step-finish":
            for key, value in (("tokens", "tokens"), ("cost", "cost"), ("finish", "reason")):
                data[key] = part[value]
        if line.get("_error") is not None:
            data["error"] = line["_error"]
        self.messages[message][3] = ts


def opencode_rows(source: Path) -> tuple[list[Row], list[Row], list[Row], list[Row]]:
    """Template rows (project, session, message, part) of the real projections, ids holding
    ``COPY``."""
    rows = _Rows()
    for path in sorted(source.rglob("*.jsonl")):
        new_file = True
        for text in path.read_text(encoding="utf-8").splitlines():
            if text.strip():
                rows.add(json.loads(text), new_file)
                new_file = False
    projects = {
        cwd: f"prj_{hashlib.sha1(cwd.encode()).hexdigest()[:12]}" for _, cwd, _ in rows.sessions
    }
    sessions: list[Row] = [
        (sid, projects[cwd], None, "slug", cwd, "title", "1.14.50", ts, ts)
        for sid, cwd, ts in rows.sessions
    ]
    messages: list[Row] = [(*row[:4], _json(row[4])) for row in rows.messages.values()]
    projects_rows: list[Row] = [(pid, cwd, "git", None, 0, 0) for cwd, pid in projects.items()]
    return projects_rows, sessions, messages, rows.parts


#: Epoch milliseconds as a JSON number (2001 to 2286).
_STAMP = re.compile(r"(?<=[:,\[])1\d{12}(?=[,}\]])")


def _copied(rows: list[Row], copy: int) -> Iterator[Row]:
    """``rows`` as copy ``copy``: its ids, and its stamps ``copy`` seconds later."""
    tag, shift = f"{copy:06x}", copy * 1000

    def value(v: object) -> object:
        if isinstance(v, str):
            v = v.replace(COPY, tag)
            return _STAMP.sub(lambda m: str(int(m.group(0)) + shift), v) if shift else v
        if isinstance(v, int) and v >= 10**12:
            return v + shift
        return v

    return (tuple(value(v) for v in row) for row in rows)


def build_opencode(home: Path, limit: int, source: Path) -> int:
    """OpenCode's tree under ``home``: one ``opencode.db`` of about ``limit`` bytes."""
    projects, sessions, messages, parts = opencode_rows(source)
    path = home / ".local" / "share" / "opencode" / "opencode.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.executescript(OPENCODE_SCHEMA)
        db.executemany("INSERT INTO project VALUES (?, ?, ?, ?, ?, ?)", projects)
        copy, step = 0, 1
        while copy == 0 or path.stat().st_size < limit:
            for _ in range(step):
                db.executemany(
                    "INSERT INTO session (id, project_id, parent_id, slug, directory, title,"
                    " version, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _copied(sessions, copy),
                )
                db.executemany("INSERT INTO message VALUES (?,?,?,?,?)", _copied(messages, copy))
                db.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", _copied(parts, copy))
                copy += 1
            db.commit()
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            # aim the next batch at what is left, so the file stops near the limit
            per_copy = max(path.stat().st_size // copy, 1)
            step = max(1, min(1000, (limit - path.stat().st_size) // per_copy // 2))
    return path.stat().st_size


# Antigravity -----------------------------------------------------------------------------


def _fields(message: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of a protobuf message; stops at the first byte that
    does not parse (these are the real records, parsed only to find their ids)."""
    at = 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = message[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    try:
        while at < len(message):
            key = varint()
            field, wire = key >> 3, key & 7
            if wire == 0:
                yield field, wire, varint()
            elif wire == 2:
                size = varint()
                yield field, wire, message[at : at + size]
                at += size
            elif wire in (1, 5):
                at += 8 if wire == 1 else 4
            else:
                return
    except IndexError:
        return


def _at(message: bytes, path: tuple[int, ...]) -> Iterator[bytes]:
    """Every length-delimited value at the field ``path`` of ``message``."""
    for field, wire, value in _fields(message):
        if field == path[0] and wire == 2 and isinstance(value, bytes):
            yield from (value,) if len(path) == 1 else _at(value, path[1:])


def response_ids(database: Path) -> set[bytes]:
    """The server ``response_id`` (ModelUsageStats #11) of every call in an Antigravity
    database: ``steps.metadata`` #9 (every call) and #28→#2 (retries), ``gen_metadata.data``
    #1→#4 and #1→#17→#2 (``shared/docs/antigravity-format.md``)."""
    found: set[bytes] = set()
    with closing(sqlite3.connect(f"file:{database}?mode=ro&immutable=1", uri=True)) as db:
        for (blob,) in db.execute("SELECT metadata FROM steps WHERE metadata IS NOT NULL"):
            for usage in (*_at(blob, (9,)), *_at(blob, (28, 2))):
                found.update(_at(usage, (11,)))
        for (blob,) in db.execute("SELECT data FROM gen_metadata WHERE data IS NOT NULL"):
            for usage in (*_at(blob, (1, 4)), *_at(blob, (1, 17, 2))):
                found.update(_at(usage, (11,)))
    return {rid for rid in found if len(rid) > 4}


def antigravity_sources(source: Path) -> list[tuple[bytes, set[bytes], str]]:
    """Each real conversation database's bytes, its calls' response ids and its
    conversation id (``trajectory_meta.cascade_id``, the file's stem)."""
    found = []
    for path in sorted(source.rglob("*.db")):
        with closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as db:
            (cascade,) = db.execute("SELECT cascade_id FROM trajectory_meta").fetchone()
        found.append((path.read_bytes(), response_ids(path), str(cascade)))
    return found


def build_antigravity(home: Path, limit: int, source: Path) -> int:
    """Antigravity's tree under ``home`` (see the module's doc)."""
    databases = antigravity_sources(source)
    root = home / ".gemini" / "antigravity-cli" / "conversations"
    root.mkdir(parents=True, exist_ok=True)
    written, copy = 0, 0
    while written < limit:
        for data, ids, conversation in databases:
            renamed = copy_ids.uuid_bytes(data, copy)
            for rid in ids:
                renamed = renamed.replace(rid, copy_ids.same_length(rid, copy))
            (root / f"{copy_ids.uuids(conversation, copy)}.db").write_bytes(renamed)
            written += len(renamed)
        copy += 1
    return written
