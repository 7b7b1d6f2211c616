"""A database folded a slice of session trees at a time (``slices``) gives the tables of its
fold at once: on the real exported rows with a sub-agent tree beside them, and where a
slice would change the answer (a fork's copy in another slice, a row that is an issue) the
database is folded at once."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import polars as pl
import pytest

from analytics.agents import AgentTables
from analytics.agents.opencode import database, fold, slices
from tests.agents.opencode.projection import create, real_database
from tests.agents.opencode.rows import fork, part, session, step, usage


def both(path: Path, monkeypatch: pytest.MonkeyPatch, items: bool = True) -> tuple[
    AgentTables, AgentTables, int
]:  # fmt: skip
    """The fold of ``path`` at once and a tree a slice (every tree a slice of its own), and
    how many slices that is."""
    monkeypatch.setattr(slices, "SLICE_PARTS", 1_000_000_000)
    whole = fold.tables([path], items=items)
    monkeypatch.setattr(slices, "SLICE_PARTS", 1)
    cut, _ = database.opened(path, slices.plan)
    return whole, fold.tables([path], items=items), len(cut)


def same(one: AgentTables, other: AgentTables) -> None:
    for name in ("calls", "sessions", "issues", "items"):
        assert getattr(one, name).equals(getattr(other, name)), name


@pytest.mark.parametrize("items", [True, False])
def test_the_real_rows_in_slices_are_their_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, items: bool
) -> None:
    path = real_database(tmp_path / "opencode.db")
    with closing(sqlite3.connect(path)) as db:  # a sub-agent tree: its calls are its root's
        root = session(db, 9_000_000_000_000)
        step(db, root, 9_000_000_000_000, usage(10, 1))
        child = session(db, 9_000_000_001_000, parent=root)
        step(db, child, 9_000_000_001_000, usage(20, 2))
        db.commit()
    whole, cut, count = both(path, monkeypatch, items)
    assert count > 2
    assert whole.calls.height == 45 and whole.issues.height == 0
    assert (whole.calls.filter(pl.col("session_id") == root)["kind"] == "subagent").any()
    assert fold._sliced([path], items) is not None  # folded in slices, not at once
    same(whole, cut)


def test_a_fork_copy_in_another_slice_counts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with closing(create(tmp_path / "opencode.db")) as db:
        original = session(db, 1000)
        step(db, original, 1000, usage(100, 1))
        forked = fork(db, original, 3000)
        step(db, forked, 4000, usage(300, 3))
        db.commit()
    whole, cut, count = both(tmp_path / "opencode.db", monkeypatch)
    assert count == 2
    assert whole.calls.height == 2
    assert fold._sliced([tmp_path / "opencode.db"], True) is None  # folded at once
    same(whole, cut)


def test_a_row_that_is_an_issue_is_reported_as_by_the_whole_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with closing(create(tmp_path / "opencode.db")) as db:
        first = session(db, 1000)
        step(db, first, 1000, usage(100, 1))
        second = session(db, 5000)
        step(db, second, 5000, usage(200, 2))
        part(db, second, "msg_none", '{"type": "text", "tex', 6000)
        db.commit()
    whole, cut, count = both(tmp_path / "opencode.db", monkeypatch)
    assert count == 2
    assert whole.issues.height == 1 and set(whole.sessions["issues"]) == {1}
    assert fold._sliced([tmp_path / "opencode.db"], True) is None  # folded at once
    same(whole, cut)


def test_slices_are_read_ahead_and_given_in_their_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next slice is read while one is waited for, at most ``READS_AT_ONCE`` at once,
    and each is given in the plan's order even when a later read ends first; a caller that
    stops early starts no further read."""
    started: list[str] = []
    second_done = threading.Event()
    lock = threading.Lock()

    def read(
        files: object, items: bool, only: database.Sessions, mine: pl.DataFrame
    ) -> tuple[str, ...]:
        with lock:
            started.append(only[0])
        if only == ("a",):  # the first read ends only once the second has
            assert second_done.wait(10)
        if only == ("b",):
            second_done.set()
        return only

    monkeypatch.setattr(fold, "_read", read)
    sessions = pl.DataFrame({"session": ["a", "b", "c", "d"]})
    plan = [("a",), ("b",), ("c",), ("d",)]
    given = list(fold._read_ahead([], True, plan, sessions))
    assert given == plan
    assert started == ["a", "b", "c", "d"]
    started.clear()
    second_done.clear()
    ahead = fold._read_ahead([], True, plan, sessions)
    assert next(ahead) == ("a",)
    ahead.close()
    assert started == ["a", "b"]  # the first waited for the second; none after


def test_shared_texts_are_the_texts() -> None:
    """``database.shared`` (a session's directory, a message's model, held once) changes no
    value: repeated, distinct, empty and missing texts come back as they were, in order."""
    texts = pl.Series("cwd", ["/a/long/project/path/one", None, "", "/a/long/project/path/one",
                              "/b", None, "/a/long/project/path/two"])  # fmt: skip
    assert database.shared(texts).equals(texts)
    assert database.shared(texts.clear()).equals(texts.clear())
