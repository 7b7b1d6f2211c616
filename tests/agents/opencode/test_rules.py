"""OpenCode's counting rules on literal rows of its real schema: one call per ``step-finish``
part, once however often it is copied (a database named twice, a fork's copies), never
dropped because another call's JSON is equal; failed steps are no calls; the token columns;
the logged cost as its text; sub-agent and compaction calls; context items; and every bad
row or file an issue, the rest still read."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.agents import call_columns, issue_columns, item_columns, opencode, session_columns
from analytics.agents.opencode import database
from analytics.core import items as kinds
from tests.agents.opencode.projection import create
from tests.agents.opencode.rows import fork, message, part, session, step, usage
from tests.agents.opencode.writer import writing


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    with closing(create(tmp_path / "opencode.db")) as connection:
        yield connection


def read(db: sqlite3.Connection, *more: Path) -> opencode.AgentTables:
    db.commit()
    path = Path(db.execute("PRAGMA database_list").fetchone()[2])
    return opencode.read_files([path, *more])


def test_tables_have_the_contract_columns(db: sqlite3.Connection) -> None:
    step(db, session(db, 1000), 1000, usage(10, 2))
    tables = read(db)
    assert tables.calls.schema == pl.Schema(call_columns())
    assert tables.sessions.schema == pl.Schema(session_columns())
    assert tables.issues.schema == pl.Schema(issue_columns())
    assert tables.items.schema == pl.Schema(item_columns())


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        # input excludes the cache, output excludes reasoning: both added back
        (usage(100, 5, reasoning=7, read=30, write=4), (134, 30, 4, 12, 7)),
        # total shows the output already held the reasoning: not added twice
        ({"total": 112, "input": 100, "output": 12, "reasoning": 7,
          "cache": {"read": 0, "write": 0}}, (100, 0, 0, 12, 7)),
        # no cache figures: the cache is unknown, the input is what is stated
        ({"input": 10, "output": 2, "reasoning": 0}, (10, None, None, 2, 0)),
    ],
)  # fmt: skip
def test_token_columns(
    db: sqlite3.Connection, tokens: dict[str, object], expected: tuple[object, ...]
) -> None:
    step(db, session(db, 1000), 1000, tokens)
    columns = [
        "input_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "output_tokens",
        "reasoning_tokens",
    ]
    assert read(db).calls.select(columns).row(0) == expected


@pytest.mark.parametrize(
    ("written", "count"),
    [("12", 12), ('"12"', 12), ('"+7"', 7), ("0", 0), ("1", 1), ("true", None), ("false", None),
     ("-0", None), ("0.0", None), ("1.0", None), ("1e2", None), ('"abc"', None), ("null", None),
     ('{"n":1}', None), ("[1]", None), ("9223372036854775808", None)],
)  # fmt: skip
def test_a_count_is_a_whole_number_or_unknown(
    db: sqlite3.Connection, written: str, count: int | None
) -> None:
    """A count that is a JSON integer or a string of one is read; a float (even a whole one),
    a boolean (SQLite's 1 and 0), ``-0`` and any other value are unknown."""
    sid = session(db, 1000)
    mid = message(db, sid, {"role": "assistant", "time": {"created": 1000}}, 1000)
    text = f'{{"type":"step-finish","tokens":{{"input":{written},"output":{written}}},"cost":0}}'
    part(db, sid, mid, text, 1001)
    calls = read(db).calls
    assert calls.select("input_tokens", "output_tokens").row(0) == (count, count)


@pytest.mark.parametrize(
    ("cost", "text"),
    [("0.0123450", "0.0123450"), ("1e-7", "1e-7"), ("0", "0"), ('"1.5"', None), ("null", None)],
)
def test_logged_cost_is_the_json_number_text(
    db: sqlite3.Connection, cost: str, text: str | None
) -> None:
    sid = session(db, 1000)
    mid = message(
        db,
        sid,
        {"role": "assistant", "modelID": "m", "providerID": "ollama", "time": {"created": 1}},
        1,
    )
    part(
        db,
        sid,
        mid,
        f'{{"type":"step-finish","tokens":{{"input":1,"output":1,"reasoning":0,"cache":{{"read":0,"write":0}}}},"cost":{cost}}}',
        2,
    )
    calls = read(db).calls
    assert calls["logged_cost_usd"].to_list() == [text]
    assert calls["provider"].to_list() == ["ollama"]


def test_a_failed_step_is_no_call_and_an_aborted_one_is_interrupted(db: sqlite3.Connection) -> None:
    sid = session(db, 1000)
    step(db, sid, 1000, None, error={"name": "UnknownError", "data": {"message": "context"}})
    step(db, sid, 2000, usage(10, 1), error={"name": "MessageAbortedError", "data": {}})
    tables = read(db)
    assert tables.calls["interrupted"].to_list() == [True]
    assert tables.sessions.select("llm_calls", "interrupted_calls").row(0) == (1, 1)


def test_equal_step_finish_json_in_two_sessions_is_two_calls(db: sqlite3.Connection) -> None:
    # 1-5_session-reset: two sessions, step-finish parts equal byte for byte
    step(db, session(db, 1000), 1000, usage(21112, 2))
    step(db, session(db, 5000), 5000, usage(21112, 2))
    assert read(db).calls.height == 2


def test_a_fork_copy_counts_once_and_the_fork_own_calls_count(db: sqlite3.Connection) -> None:
    original = session(db, 1000)
    step(db, original, 1000, usage(100, 1))
    step(db, original, 2000, usage(200, 2))
    forked = fork(db, original, 3000)
    step(db, forked, 4000, usage(300, 3))
    again = fork(db, forked, 5000)
    calls = read(db).calls
    assert calls.height == 3
    assert calls.group_by("session_id").len().sort("session_id").rows() == [
        (original, 2),
        (forked, 1),
    ]
    assert again not in calls["session_id"].to_list()


def test_a_database_named_twice_or_copied_counts_once(
    db: sqlite3.Connection, tmp_path: Path
) -> None:
    step(db, session(db, 1000), 1000, usage(10, 1))
    db.commit()
    copy = tmp_path / "copy" / "opencode.db"
    copy.parent.mkdir()
    shutil.copy(tmp_path / "opencode.db", copy)
    assert read(db, copy, tmp_path / "opencode.db").calls.height == 1
    assert opencode.discover([tmp_path, tmp_path / "opencode.db"]) == [
        [copy, tmp_path / "opencode.db"]
    ]


def test_a_part_read_again_as_another_type_counts_as_first_read(
    db: sqlite3.Connection, tmp_path: Path
) -> None:
    """A part id in two databases is the first one's part, whatever type the other gives
    it: here a call in the first, a text in the second (and the reverse)."""
    sid = session(db, 1000)
    pid = step(db, sid, 1000, usage(10, 1))
    db.commit()
    other = tmp_path / "other" / "opencode.db"
    other.parent.mkdir()
    shutil.copy(tmp_path / "opencode.db", other)
    with closing(sqlite3.connect(other)) as writer:
        writer.execute(
            """UPDATE part SET data = '{"type":"text","text":"x"}' WHERE id = ?""", (pid,)
        )
        writer.commit()
    first = tmp_path / "opencode.db"
    assert read(db, other).calls["api_call_id"].to_list() == [pid]
    as_text = opencode.read_files([other, first])
    assert as_text.calls.height == 0
    assert as_text.items["event_id"].to_list().count(pid) == 1
    assert as_text.sessions["lines_read"].to_list() == [4]


def test_sub_agent_calls_join_the_root_session(db: sqlite3.Connection) -> None:
    parent = session(db, 1000)
    step(db, parent, 1000, usage(10, 1))
    child = session(db, 1500, parent=parent)
    step(db, child, 1500, usage(20, 2), agent="explore", mode="subagent")
    grandchild = session(db, 1700, parent=child)
    step(db, grandchild, 1700, usage(30, 3), agent="general")
    tables = read(db)
    rows = tables.calls.select("session_id", "kind", "agent_id", "agent_name", "call_index").rows()
    assert rows == [
        (parent, "main", None, None, 1),
        (parent, "subagent", child, "explore", 2),
        (parent, "subagent", grandchild, "general", 3),
    ]
    assert tables.sessions.select("session_id", "llm_calls", "subagent_calls").rows() == [
        (parent, 3, 2)
    ]


def test_a_compaction_step_is_a_compaction_call(db: sqlite3.Connection) -> None:
    step(
        db,
        session(db, 1000),
        1000,
        usage(459, 91),
        mode="compaction",
        agent="compaction",
        summary=True,
    )
    tables = read(db)
    assert tables.calls["kind"].to_list() == ["compaction"]
    assert kinds.COMPACTION in tables.items["item"].to_list()


def test_items_and_calls_are_numbered_in_log_order(db: sqlite3.Connection) -> None:
    sid = session(db, 1000)
    user = message(
        db,
        sid,
        {"role": "user", "time": {"created": 1000}, "model": {"providerID": "p", "modelID": "m"}},
        1000,
    )
    part(db, sid, user, {"type": "text", "text": "héllo"}, 1000)
    mid = message(
        db,
        sid,
        {
            "role": "assistant",
            "parentID": user,
            "modelID": "m",
            "providerID": "p",
            "time": {"created": 1001},
        },
        1001,
    )
    tool = {
        "type": "tool",
        "tool": "read",
        "callID": "c1",
        "state": {"status": "completed", "input": {"path": "a"}, "output": "abc"},
    }
    part(db, sid, mid, tool, 1002)
    part(db, sid, mid, {"type": "step-finish", "tokens": usage(5, 1), "cost": 0}, 1003)
    tables = read(db)
    items = tables.items.select(
        "event_seq", "item", "tool_name", "content_bytes", "tool_request_bytes"
    )
    assert items.rows() == [
        (1, kinds.PROMPT, None, 6, None),
        (2, kinds.REPLY, "read", len('{"path":"a"}'), len('{"path":"a"}')),
        (3, kinds.TOOL_CALL, "read", None, None),
        (4, kinds.TOOL_OUTPUT, "read", 3, None),
    ]
    assert tables.calls["event_seq"].to_list() == [5]
    without = read_without_items(db)
    assert without.items.height == 0
    assert without.calls["event_seq"].to_list() == [5]  # numbered among the items all the same


def test_calls_are_numbered_among_items_read_or_not(db: sqlite3.Connection) -> None:
    """A call's ``event_seq`` counts the items before it in its session (a text or reasoning
    one, a tool two, three with its result) whether the items are read or not; its
    ``call_index`` counts the calls."""
    sid = session(db, 1000)
    mid = message(db, sid, {"role": "assistant", "time": {"created": 1000}}, 1000)
    running = {"type": "tool", "tool": "bash", "callID": "c", "state": {"input": {}}}
    done = {**running, "state": {"input": {}, "output": "ok"}}
    finish = {"type": "step-finish", "tokens": usage(1, 1), "cost": 0}
    for at, data in enumerate([running, finish, {"type": "reasoning", "text": "hm"}, done,
                               {"type": "step-start"}, finish]):  # fmt: skip
        part(db, sid, mid, data, 1000 + at)
    for tables in (read(db), read_without_items(db)):
        assert tables.calls.select("event_seq", "call_index").rows() == [(3, 1), (8, 2)]
    assert read(db).items["event_seq"].to_list() == [1, 2, 4, 5, 6, 7]


def read_without_items(db: sqlite3.Connection) -> opencode.AgentTables:
    path = Path(db.execute("PRAGMA database_list").fetchone()[2])
    return opencode.read_files([path], items=False)


def test_bad_rows_are_issues_and_the_rest_is_read(db: sqlite3.Connection) -> None:
    sid = session(db, 1000)
    step(db, sid, 1000, usage(10, 1))
    mid = message(db, sid, {"role": "assistant"}, 1100)
    part(db, sid, mid, '{"type":"step-finish","tokens":{"input":', 1101)  # truncated JSON
    part(db, sid, mid, "\x00\x00\x00", 1102)  # NUL run
    part(db, sid, mid, {"type": "hologram"}, 1103)  # unknown part type
    part(db, sid, mid, {"type": "step-finish", "cost": 0}, 1104)  # no tokens
    tables = read(db)
    assert tables.calls.height == 2
    assert tables.calls["input_tokens"].to_list() == [10, None]
    assert tables.issues["severity"].to_list() == ["error", "error", "warning"]
    assert tables.sessions.select("lines_read", "unknown_lines").row(0) == (6, 1)


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00" * 4096, b"not a database\n", b"SQLite format 3\x00" + b"\x00" * 84],
    ids=["empty", "nul-run", "text", "header-only"],
)
def test_a_file_that_is_no_database_is_an_issue(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(content)
    tables = opencode.read_files([path])
    assert tables.calls.height == 0
    assert tables.issues.select("file", "severity").rows() == [(str(path), "error")]


def test_an_unreadable_file_is_reported_with_sqlite_s_reason(tmp_path: Path) -> None:
    """The issue says SQLite's reason alone (not the driver's wording or its query)."""
    path = tmp_path / "opencode.db"
    path.write_bytes(b"not a database\n" * 512)
    assert opencode.read_files([path]).issues["message"].to_list() == [
        "cannot read the database: file is not a database; file skipped"
    ]


def test_a_truncated_database_is_an_issue(db: sqlite3.Connection, tmp_path: Path) -> None:
    for at in range(0, 200_000, 1000):
        step(db, session(db, at), at, usage(at, 1))
    db.commit()
    whole = (tmp_path / "opencode.db").read_bytes()
    cut = tmp_path / "cut" / "opencode.db"
    cut.parent.mkdir()
    cut.write_bytes(whole[: len(whole) // 2])
    tables = opencode.read_files([cut])
    assert tables.issues["severity"].to_list() == ["error"]


def test_another_sqlite_database_is_not_opencode(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    with closing(sqlite3.connect(path)) as other:
        other.execute("CREATE TABLE t (x)")
        other.commit()
    assert "no session, message, part table" in opencode.read_files([path]).issues["message"][0]


def test_opencode_2_tables_are_reported_not_dropped_silently(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE session_message (id text, session_id text, type text, seq integer,"
        " time_created integer, data text)"
    )
    db.execute("INSERT INTO session_message VALUES ('m', 's', 'assistant', 1, 1, '{}')")
    assert read(db).issues["message"].to_list() == [
        "1 rows of table session_message (OpenCode 2.x) not read"
    ]


def test_a_live_wal_is_read_and_the_database_is_not_written(tmp_path: Path) -> None:
    """The rows still in a live ``-wal`` are read; the database and its ``-wal`` are not
    written (a WAL reader marks what it reads in the ``-shm``, SQLite's shared index of the
    ``-wal``, as any reader does)."""
    path = tmp_path / "opencode.db"
    with writing(path, "wal"):
        before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
        assert {"opencode.db-wal", "opencode.db-shm"} <= set(before)
        tables = opencode.read_files([path])
        assert tables.calls.height == 1  # the row is only in the -wal
        after = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
        del before["opencode.db-shm"], after["opencode.db-shm"]
        assert after == before


def test_a_closed_database_is_read_immutably_making_no_file(
    db: sqlite3.Connection, tmp_path: Path
) -> None:
    step(db, session(db, 1000), 1000, usage(10, 1))
    db.commit()
    db.close()
    (tmp_path / "opencode.db").chmod(0o444)
    assert opencode.read_files([tmp_path / "opencode.db"]).calls.height == 1
    assert [p.name for p in tmp_path.iterdir()] == ["opencode.db"]


def test_a_locked_database_is_an_issue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database, "BUSY_SECONDS", 0.05)
    with writing(tmp_path / "opencode.db", "locked"):
        tables = opencode.read_files([tmp_path / "opencode.db"])
    assert tables.calls.height == 0
    assert "locked" in tables.issues["message"][0]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(st.integers(1, 50_000), min_size=1, max_size=5),
    forks=st.lists(st.integers(0, 4), max_size=3),
    copies=st.integers(0, 2),
)
def test_calls_count_once_however_often_copied(
    tmp_path_factory: pytest.TempPathFactory, steps: list[int], forks: list[int], copies: int
) -> None:
    home = tmp_path_factory.mktemp("home")
    with closing(create(home / "opencode.db")) as writer:
        sessions = [session(writer, 1)]
        for at, tokens in enumerate(steps):
            step(writer, sessions[0], 10 * (at + 1), usage(tokens, 1))
        for at, which in enumerate(forks):
            sessions.append(fork(writer, sessions[which % len(sessions)], 1000 + at))
        writer.commit()
    for n in range(copies):
        (home / f"c{n}").mkdir()
        shutil.copy(home / "opencode.db", home / f"c{n}" / "opencode.db")
    calls = opencode.read(paths=[home]).calls
    assert calls.height == len(steps)
    assert int(calls["input_tokens"].sum()) == sum(steps)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.sampled_from(["step", "text", "cut", "nul", "odd"]), min_size=1, max_size=12)
)
def test_every_part_row_is_read_or_an_issue(rows: list[str]) -> None:
    """Each part row is read (a line of its session) or reported (its JSON is invalid); a
    ``step-finish`` row read is one call."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "opencode.db"
        with closing(create(path)) as db:
            sid = session(db, 1)
            mid = message(db, sid, {"role": "assistant", "time": {"created": 1}}, 1)
            data = {
                "step": {"type": "step-finish", "tokens": usage(3, 1), "cost": 0},
                "text": {"type": "text", "text": "x"},
                "cut": '{"type":"text","te',
                "nul": "\x00\x00",
                "odd": {"type": "hologram"},
            }
            for at, kind in enumerate(rows):
                part(db, sid, mid, data[kind], at)
            db.commit()
        tables = opencode.read_files([path])
    invalid = rows.count("cut") + rows.count("nul")
    assert int(tables.sessions["lines_read"].sum()) + tables.issues.height == len(rows)
    assert tables.issues.height == invalid
    assert tables.calls.height == rows.count("step")


def test_a_database_read_a_page_at_a_time_reads_as_whole(
    db: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are fetched a page of ``PAGE_ROWS`` at a time (by row after the last read): pages
    of two rows, bad rows among them, read as one page does."""
    for at in (1000, 2000, 3000):
        sid = session(db, at)
        step(db, sid, at, usage(at, 1))
        mid = message(db, sid, {"role": "assistant"}, at + 100)
        part(db, sid, mid, '{"type":"text"', at + 101)  # truncated JSON
        part(db, sid, mid, {"type": "text", "text": "hi"}, at + 102)
    whole = read(db)
    monkeypatch.setattr(database, "PAGE_ROWS", 2)
    paged = read(db)
    assert whole.calls.height == 3 and whole.issues.height == 3
    for name in ("calls", "sessions", "issues", "items"):
        assert getattr(paged, name).equals(getattr(whole, name)), name


def test_a_field_null_in_the_first_thousand_rows_is_still_read(db: sqlite3.Connection) -> None:
    """The ADBC driver types a column by its first rows: a call's fields, null on the
    thousands of parts before the first call, are read as text all the same."""
    sid = session(db, 1000)
    mid = message(db, sid, {"role": "user"}, 1000)
    for at in range(1, 1500):
        part(db, sid, mid, {"type": "text", "text": "x"}, 1000 + at)
    step(db, sid, 5000, usage(10, 1), cost=0.5)
    tables = read(db)
    assert tables.calls.select("input_tokens", "logged_cost_usd").rows() == [(10, "0.5")]
