"""The size trees of ``benchmarks/agent_trees.py`` for pi, Gemini CLI, OpenCode, Kimi Code and
Antigravity: laid out as each agent keeps its home, every copy's calls and sessions its own,
and what the real data relates (a pi fork's entries and its source's) still related inside a
copy.

Each agent's tree is built twice from the real logs: one copy, and exactly two copies. The
calls' dedupe keys (each agent's own, per ``shared/docs/<agent>-format.md``) must then number
as many in one copy as in the real logs (renaming merged nothing and split nothing), and
twice that in two copies (no copy shares a key with another).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import closing
from pathlib import Path

import pytest

from benchmarks import copy_ids, db_trees, jsonl_trees
from benchmarks.agent_trees import TREES
from tests.conftest import REAL_LOGS

Keys = Callable[[Path], set[object]]


def _lines(paths: Iterable[Path]) -> Iterable[tuple[Path, dict[str, object]]]:
    for path in paths:
        for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield path, record


def pi_keys(root: Path) -> set[object]:
    """pi's call keys: ``responseId``, else (entry id, message timestamp)."""
    return _pi_keys(sorted(root.rglob("*.jsonl")))


def _pi_keys(files: list[Path]) -> set[object]:
    keys: set[object] = set()
    for _, record in _lines(files):
        message = record.get("message")
        if record.get("type") != "message" or not isinstance(message, dict):
            continue
        if message.get("role") == "assistant" and "usage" in message:
            keys.add(message.get("responseId") or (record["id"], message.get("timestamp")))
    return keys


def gemini_keys(root: Path) -> set[object]:
    """Gemini CLI's call keys: (session id, message id) of a ``gemini`` record with tokens."""
    keys: set[object] = set()
    for path in sorted(root.rglob("*.jsonl")):
        session = None
        for _, record in _lines([path]):
            if "projectHash" in record and "sessionId" in record:
                session = record["sessionId"]
            if record.get("type") == "gemini" and "tokens" in record:
                keys.add((session, record["id"]))
    return keys


def kimi_keys(root: Path) -> set[object]:
    """Kimi Code's call keys: (agent, stamp, model alias, usage) of a ``usage.record``."""
    return {
        (r["agentId"], r["time"], r["model"], json.dumps(r["usage"], sort_keys=True))
        for _, r in _lines(sorted(root.rglob("wire.jsonl")))
        if r.get("type") == "usage.record"
    }


def _opencode_step_finishes(database: Path) -> set[object]:
    with closing(sqlite3.connect(database)) as db:
        rows = db.execute(
            "SELECT p.id, p.data, m.time_created FROM part p JOIN message m ON m.id = p.message_id"
        ).fetchall()
    steps = [r for r in rows if json.loads(r[1]).get("type") == "step-finish"]
    # a part counts once by its id, and a fork's copy is told by (JSON, message stamp)
    assert len({(data, created) for _, data, created in steps}) == len(steps)
    return {pid for pid, _, _ in steps}


def opencode_keys(root: Path) -> set[object]:
    """OpenCode's call keys: the ids of ``step-finish`` parts, in every database; no two with
    the same JSON and message stamp (that is how a fork's copy is told)."""
    return set().union(*(_opencode_step_finishes(db) for db in sorted(root.rglob("*.db"))))


def opencode_source_keys(source: Path) -> set[object]:
    """The real projections' calls (their ``step-finish`` lines), numbered."""
    lines = (r for _, r in _lines(sorted(source.rglob("*.jsonl"))))
    return {i for i, r in enumerate(lines) if r.get("type") == "step-finish"}


def antigravity_keys(root: Path) -> set[object]:
    """Antigravity's call keys: the calls' server response ids, in every database."""
    return set().union(*(db_trees.response_ids(db) for db in sorted(root.rglob("*.db"))))


KEYS: dict[str, tuple[Keys, Keys]] = {
    "pi": (pi_keys, pi_keys),
    "gemini-cli": (gemini_keys, gemini_keys),
    "kimi": (kimi_keys, kimi_keys),
    "opencode": (opencode_keys, opencode_source_keys),
    "antigravity": (antigravity_keys, antigravity_keys),
}


def _source(agent: str) -> Path:
    source = REAL_LOGS / TREES[agent].source
    if not source.is_dir():
        pytest.skip(f"real {agent} logs not present at {source} (the shared/ folder is absent)")
    return source


@pytest.fixture(scope="module", params=list(TREES))
def trees(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """(agent, source, home of one copy, home of exactly two copies)."""
    agent: str = request.param
    source, build = _source(agent), TREES[agent].build
    one = tmp_path_factory.mktemp(f"{agent}-1") / agent
    size = build(one, 1, source)  # the first copy reaches any limit
    two = tmp_path_factory.mktemp(f"{agent}-2") / agent
    build(two, size + 1, source)  # the first copy falls one byte short
    return agent, source, one, two


def test_a_copy_keeps_every_call_and_two_copies_share_none(trees) -> None:
    agent, source, one, two = trees
    keys, source_keys = KEYS[agent]
    once, twice = keys(one), keys(two)
    assert once, f"no {agent} call in the tree"
    assert len(once) == len(source_keys(source))
    assert len(twice) == 2 * len(once)


def _sessions(agent: str, home: Path) -> list[object]:
    if agent == "opencode":
        (db,) = home.rglob("opencode.db")
        with closing(sqlite3.connect(db)) as connection:
            return [row[0] for row in connection.execute("SELECT id FROM session")]
    if agent == "kimi":
        return [json.loads(p.read_text())["id"] for p in home.rglob("state.json")]
    return [p.stem for pattern in ("*.jsonl", "*.db") for p in sorted(home.rglob(pattern))]


def test_every_session_is_new_in_each_copy(trees) -> None:
    agent, _, one, two = trees
    once, twice = _sessions(agent, one), _sessions(agent, two)
    assert len(set(once)) == len(once) > 0
    assert len(set(twice)) == len(twice) == 2 * len(once)


def test_layouts_are_the_agents_homes(trees) -> None:
    agent, _, _, home = trees
    LAYOUTS[agent](home)


def _pi_layout(home: Path) -> None:
    files = list(home.rglob("*"))
    sessions = [f for f in files if f.is_file()]
    assert sessions
    for path in sessions:
        header = json.loads(path.read_text().split("\n", 1)[0])
        assert header["type"] == "session"
        assert path.parent.parent == home / ".pi" / "agent" / "sessions"
        assert path.parent.name == jsonl_trees.pi_project(header["cwd"])
        assert path.name == jsonl_trees.pi_file(header)
        assert re.fullmatch(r"[\d-]+T[\d-]+Z_" + copy_ids.UUID.pattern + r"\.jsonl", path.name)


def _gemini_layout(home: Path) -> None:
    files = [f for f in home.rglob("*") if f.is_file()]
    assert files
    for path in files:
        header = json.loads(path.read_text().split("\n", 1)[0])
        assert path.relative_to(home).parts[:2] == (".gemini", "tmp")
        assert path.parent.name == "chats"
        assert path.parent.parent.name == header["projectHash"]
        assert re.fullmatch(r"session-\d{4}-\d\d-\d\dT\d\d-\d\d-[0-9a-f]{8}\.jsonl", path.name)
        assert path.name == jsonl_trees.gemini_file(header)


def _kimi_layout(home: Path) -> None:
    root = home / ".kimi-code"
    index = [json.loads(line) for line in (root / "session_index.jsonl").read_text().splitlines()]
    states = sorted(root.glob("sessions/wd_*/session_*/state.json"))
    assert len(states) == len(index) > 0
    listed = {Path(entry["sessionDir"]) for entry in index}
    for state_path in states:
        state = json.loads(state_path.read_text())
        folder = state_path.parent
        assert folder.name == state["id"] and folder in listed
        assert re.fullmatch(r"session_" + copy_ids.UUID.pattern, folder.name)
        assert folder.parent.name == jsonl_trees.kimi_workdir_key(state)
        assert list(folder.glob("agents/*/wire.jsonl"))
    assert {p.name for p in root.rglob("*") if p.is_file()} == {
        "session_index.jsonl",
        "state.json",
        "wire.jsonl",
    }


def _opencode_layout(home: Path) -> None:
    folder = home / ".local" / "share" / "opencode"
    assert {p.name for p in home.rglob("*") if p.is_file()} <= {
        "opencode.db",
        "opencode.db-wal",
        "opencode.db-shm",
    }
    with closing(sqlite3.connect(folder / "opencode.db")) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"project", "session", "message", "part"} <= tables
        # every part's message and session exist; every assistant message names its user one
        orphans = db.execute(
            "SELECT count(*) FROM part p LEFT JOIN message m ON m.id = p.message_id"
            " LEFT JOIN session s ON s.id = p.session_id WHERE m.id IS NULL OR s.id IS NULL"
        ).fetchone()
        assert orphans == (0,)
        messages = dict(db.execute("SELECT id, data FROM message").fetchall())
    for data in messages.values():
        message = json.loads(data)
        if message["role"] == "assistant":
            assert json.loads(messages[message["parentID"]])["role"] == "user"


def _antigravity_layout(home: Path) -> None:
    databases = list(home.rglob("*.db"))
    assert databases
    for path in databases:
        assert path.parent == home / ".gemini" / "antigravity-cli" / "conversations"
        uri = f"file:{path}?mode=ro&immutable=1"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            (cascade,) = db.execute("SELECT cascade_id FROM trajectory_meta").fetchone()
        assert path.stem == cascade


LAYOUTS: dict[str, Callable[[Path], None]] = {
    "pi": _pi_layout,
    "gemini-cli": _gemini_layout,
    "kimi": _kimi_layout,
    "opencode": _opencode_layout,
    "antigravity": _antigravity_layout,
}


def test_a_pi_fork_repeats_its_source_entries_within_its_copy(tmp_path: Path) -> None:
    """A session recorded twice in the real files is written as pi's ``/fork`` writes one: a
    header naming its source file, then entries with the source's ids and ``responseId``s
    (one a prefix of the other: a session's file only grows)."""
    home = tmp_path / "pi"
    jsonl_trees.build_pi(home, 1, _source("pi"))
    forks = 0
    for path in sorted(home.rglob("*.jsonl")):
        header = json.loads(path.read_text().split("\n", 1)[0])
        if "parentSession" not in header:
            continue
        forks += 1
        parent = Path(header["parentSession"])
        assert parent.is_file() and parent.parent == path.parent
        mine, theirs = _pi_keys([path]), _pi_keys([parent])
        assert mine & theirs and (mine <= theirs or theirs <= mine)
    assert forks > 0


@pytest.mark.parametrize(
    ("value", "copy"),
    [("019e6b6d-22e2-7191-83bd-8cc6b1af4b00", 0), ("00000000-0000-0000-0000-000000000000", 7)],
)
def test_uuid_renaming_keeps_the_length_and_differs_per_copy(value: str, copy: int) -> None:
    renamed = copy_ids.uuid_of(value, copy)
    assert len(renamed) == len(value) and copy_ids.UUID.fullmatch(renamed)
    assert (renamed == value) == (copy == 0)
    assert copy_ids.uuid_of(renamed, copy) == value


def test_same_length_ids_differ_per_copy() -> None:
    ids = {copy_ids.same_length(b"WO9AarbzEOmKxN8PhrOu8AQ", copy) for copy in range(5000)}
    assert len(ids) == 5000 and {len(i) for i in ids} == {23}
