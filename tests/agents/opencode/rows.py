"""Literal OpenCode rows for the rule tests: a session, a message, a part, written into a
database of OpenCode's real schema (``projection.SCHEMA``), and a v1 ``Session.fork``."""

from __future__ import annotations

import json
import sqlite3
from itertools import count

from tests.agents.opencode.projection import compact

_ids = count(1)


def new_id(kind: str) -> str:
    """An ascending id of OpenCode's shape (``ses_…``, ``msg_…``, ``prt_…``)."""
    return f"{kind}_{next(_ids):08d}"


def session(db: sqlite3.Connection, at: int, parent: str | None = None) -> str:
    """A new session created at ``at`` (ms), under ``parent`` if given."""
    sid = new_id("ses")
    db.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
        " time_created, time_updated) VALUES (?, 'prj_test', ?, 's', '/w', 't', '1.14.50', ?, ?)",
        (sid, parent, at, at),
    )
    return sid


def message(db: sqlite3.Connection, sid: str, data: dict[str, object], at: int) -> str:
    mid = new_id("msg")
    db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, at, at, compact(data)))
    return mid


def part(db: sqlite3.Connection, sid: str, mid: str, data: object, at: int) -> str:
    """A part row; ``data`` a JSON value, or raw text written as it is."""
    pid = new_id("prt")
    text = data if isinstance(data, str) else compact(data)
    db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (pid, mid, sid, at, at, text))
    return pid


def usage(
    input_: int, output: int, reasoning: int = 0, read: int = 0, write: int = 0
) -> dict[str, object]:
    """OpenCode's ``tokens`` (``total`` their sum)."""
    total = input_ + output + reasoning + read + write
    return {"total": total, "input": input_, "output": output, "reasoning": reasoning,
            "cache": {"read": read, "write": write}}  # fmt: skip


def step(
    db: sqlite3.Connection,
    sid: str,
    at: int,
    tokens: dict[str, object] | None = None,
    cost: object = 0,
    *,
    model: str = "claude-sonnet-4-5",
    provider: str = "anthropic",
    **extra: object,
) -> str:
    """One LLM step as OpenCode 1.x writes it: a user prompt, an assistant message, its
    ``step-start``, a text and its ``step-finish`` (no ``step-finish`` when ``tokens`` is
    None); ``extra`` goes into the assistant message. The step-finish part's id."""
    user = message(db, sid, {"role": "user", "time": {"created": at},
                             "model": {"providerID": provider, "modelID": model}}, at)  # fmt: skip
    part(db, sid, user, {"type": "text", "text": "do it"}, at)
    data = {"role": "assistant", "parentID": user, "modelID": model, "providerID": provider,
            "mode": "build", "agent": "build", "cost": cost, "tokens": tokens or usage(0, 0),
            "time": {"created": at + 1, "completed": at + 9}, **extra}  # fmt: skip
    mid = message(db, sid, data, at + 1)
    part(db, sid, mid, {"type": "step-start", "snapshot": "abc"}, at + 2)
    part(db, sid, mid, {"type": "text", "text": "done"}, at + 3)
    if tokens is None:
        return ""
    finish = {
        "reason": "stop",
        "snapshot": "abc",
        "type": "step-finish",
        "tokens": tokens,
        "cost": cost,
    }
    return part(db, sid, mid, finish, at + 4)


def fork(db: sqlite3.Connection, source: str, at: int) -> str:
    """A v1 ``Session.fork`` of ``source``: a new session holding copies of all its
    messages and parts under new ids, the JSON unchanged but an assistant's ``parentID``
    (moved to the copy of its user message)."""
    target = session(db, at)
    ids: dict[str, str] = {}
    rows = db.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY id", (source,))
    for old, text in rows.fetchall():
        data = json.loads(text)
        if data.get("parentID") in ids:
            data["parentID"] = ids[data["parentID"]]
        ids[old] = message(db, target, data, at)
        parts = db.execute("SELECT data FROM part WHERE message_id = ? ORDER BY id", (old,))
        for (part_text,) in parts.fetchall():
            part(db, target, ids[old], part_text, at)
    return target
