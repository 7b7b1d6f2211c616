"""Real OpenCode rows, as a database of OpenCode's own schema, for the tests.

The shared real logs are projections of ``opencode.db`` rows (one ``part`` row's ``data``
per line, plus ``_role``, ``_cwd``, ``_ts``, ``_model``, ``_error``): ``load`` puts them
back into the tables OpenCode writes, by the recipe of ``shared/docs/opencode-format.md``
(one session per run of rising ``_ts``; a run of user parts is one user message; each
``step-start`` opens an assistant message that holds the parts up to the next one; a
message after a user ``compaction`` part is the compaction step). Ids are invented in
ascending order; the part JSON is the line's own bytes less the five added keys.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import REAL_LOGS

#: OpenCode's v1 tables (``session.sql.ts``), as its migrations create them.
SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
    time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
    slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
    share_url text, summary_additions integer, summary_deletions integer,
    summary_files integer, summary_diffs text, revert text, permission text,
    time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer,
    time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer
    NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_idx ON part (message_id);
CREATE INDEX part_session_idx ON part (session_id);
"""

#: Who served each model in the recordings (the recorder's notes and ``task`` metadata).
PROVIDERS = {
    "gemma-4-e2b-it-uncensored": "lmstudio",
    "qwen/qwen3-4b": "lmstudio",
    "Qwen/Qwen3-Coder-Next": "ionos",
}

_ADDED = ("_role", "_cwd", "_ts", "_model", "_error")


def compact(data: object) -> str:
    """JSON as OpenCode writes it (no spaces)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def create(path: Path, *, wal: bool = False) -> sqlite3.Connection:
    """A new database of OpenCode's schema at ``path`` (in WAL mode if ``wal``, as
    OpenCode keeps it), open for writing."""
    connection = sqlite3.connect(path)
    if wal:
        connection.execute("PRAGMA journal_mode = WAL")
    connection.executescript(SCHEMA)
    connection.execute("INSERT INTO project VALUES ('prj_test', '/', 'git', NULL, 0, 0)")
    return connection


class Loader:
    """Writes projection lines into an open database, one session at a time."""

    def __init__(self, connection: sqlite3.Connection, prefix: str = "") -> None:
        self.db = connection
        self.prefix = prefix
        self.counter = 0
        self.session: str | None = None
        self.last_ts = -1
        self.user: tuple[str, dict[str, object]] | None = None
        self.assistant: tuple[str, dict[str, object]] | None = None
        self.compacting = False

    def next_id(self, kind: str) -> str:
        self.counter += 1
        return f"{kind}_{self.prefix}{self.counter:06d}"

    def line(self, line: dict[str, object]) -> None:
        """Add one projection line (a decoded JSON object)."""
        ts = int(line["_ts"])  # type: ignore[call-overload]
        if self.session is None or ts < self.last_ts:
            self.open_session(str(line["_cwd"]), ts)
        self.last_ts = ts
        data = {k: v for k, v in line.items() if k not in _ADDED}
        if line["_role"] == "user":
            if self.user is None or self.assistant is not None:
                self.assistant = None
                model = str(line["_model"])
                self.user = (
                    self.next_id("msg"),
                    {"role": "user", "time": {"created": ts}, "agent": "build",
                     "model": {"providerID": PROVIDERS.get(model, "lmstudio"), "modelID": model}},
                )  # fmt: skip
                self.compacting = False
                self.put_message(*self.user, ts)
            self.compacting |= data.get("type") == "compaction"
            message = self.user[0]
        else:
            if data.get("type") == "step-start" or self.assistant is None:
                self.open_assistant(ts)
            assert self.assistant is not None
            self.grow_assistant(data, line, ts)
            message = self.assistant[0]
        self.put_part(message, data, ts)

    def open_session(self, cwd: str, ts: int) -> None:
        self.session = self.next_id("ses")
        self.user = self.assistant = None
        self.db.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
            " time_updated) VALUES (?, 'prj_test', 'slug', ?, 'title', '1.14.50', ?, ?)",
            (self.session, cwd, ts, ts),
        )

    def open_assistant(self, ts: int) -> None:
        user_id, user = self.user if self.user else ("", {"model": {}})
        model = user["model"]
        assert isinstance(model, dict)
        mode = "compaction" if self.compacting else "build"
        data: dict[str, object] = {
            "role": "assistant", "parentID": user_id, "modelID": model.get("modelID"),
            "providerID": model.get("providerID"), "mode": mode, "agent": mode,
            "path": {"cwd": "", "root": ""}, "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "time": {"created": ts},
        }  # fmt: skip
        if self.compacting:
            data["summary"] = True
        self.assistant = (self.next_id("msg"), data)
        self.put_message(*self.assistant, ts)

    def grow_assistant(self, part: dict[str, object], line: dict[str, object], ts: int) -> None:
        assert self.assistant is not None
        message_id, data = self.assistant
        data["time"] = {**data["time"], "completed": ts}  # type: ignore[dict-item]
        if part.get("type") == "step-finish":
            data["tokens"], data["cost"], data["finish"] = (
                part["tokens"],
                part["cost"],
                part["reason"],
            )
        if line.get("_error") is not None:
            data["error"] = line["_error"]
        self.db.execute(
            "UPDATE message SET data = ?, time_updated = ? WHERE id = ?",
            (compact(data), ts, message_id),
        )
        self.db.execute("UPDATE session SET time_updated = ? WHERE id = ?", (ts, self.session))

    def put_message(self, message_id: str, data: dict[str, object], ts: int) -> None:
        self.db.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (message_id, self.session, ts, ts, compact(data)),
        )

    def put_part(self, message_id: str, data: dict[str, object], ts: int) -> None:
        self.db.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
            (self.next_id("prt"), message_id, self.session, ts, ts, compact(data)),
        )


def load(projection: Path, connection: sqlite3.Connection, prefix: str = "") -> None:
    """The lines of the projection file ``projection``, written into ``connection``."""
    loader = Loader(connection, prefix)
    for text in projection.read_text(encoding="utf-8").splitlines():
        if text.strip():
            loader.line(json.loads(text))
    connection.commit()


def database_of(projections: list[Path], path: Path) -> Path:
    """A new ``opencode.db``-schema database at ``path`` holding ``projections``' rows."""
    with closing(create(path)) as connection:
        for index, projection in enumerate(projections):
            load(projection, connection, prefix=f"{index:03d}")
    return path


def real_database(path: Path) -> Path:
    """The shared real OpenCode rows (``real_logs/opencode``) as a new database at ``path``;
    the calling test is skipped, saying why, when the shared folder is absent."""
    real = REAL_LOGS / "opencode"
    files = sorted(real.rglob("transcript.jsonl"))
    if not files:
        pytest.skip(f"real OpenCode logs not present at {real} (the shared/ folder is absent)")
    return database_of(files, path)


def legacy_tree(database: Path, data: Path) -> list[Path]:
    """The rows of ``database`` written as OpenCode's JSON store wrote them before it had a
    database (``<data>/storage/{session,message,part}/<folder>/<id>.json``, each the record
    with its ids, indented): the files written."""
    written: list[Path] = []

    def put(kind: str, folder: str, record: dict[str, object]) -> None:
        path = data / "storage" / kind / folder / f"{record['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2), encoding="utf-8")
        written.append(path)

    with closing(sqlite3.connect(database)) as db:
        query = "SELECT id, parent_id, directory, version, time_created, time_updated FROM session"
        for sid, parent, directory, version, created, updated in db.execute(query):
            record = {"id": sid, "projectID": "prj_test", "directory": directory,
                      "title": "title", "version": version,
                      "time": {"created": created, "updated": updated}}  # fmt: skip
            put("session", "prj_test", record | ({"parentID": parent} if parent else {}))
        for mid, sid, text in db.execute("SELECT id, session_id, data FROM message"):
            put("message", sid, {"id": mid, "sessionID": sid, **json.loads(text)})
        for pid, mid, sid, text in db.execute("SELECT id, message_id, session_id, data FROM part"):
            put("part", mid, {"id": pid, "sessionID": sid, "messageID": mid, **json.loads(text)})
    return written
