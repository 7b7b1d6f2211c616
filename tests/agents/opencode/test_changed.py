"""An OpenCode database that changed since the last run (``cache.agent_results``'s session
prints): only the session trees whose rows changed are folded again, the others' rows come
from the result cache, and the tables are those a fold of the whole database gives. On a
database of the real exported rows: touched only, a session grown, a session deleted, a
fork of a session kept in the cache."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Collection, Sequence
from contextlib import closing
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from analytics.agents import AgentTables, opencode
from analytics.agents.discover import discover
from analytics.agents.reader import readers
from analytics.cache import results
from analytics.cache.agent_results import Folded, agent_tables
from analytics.cache.results import ResultCache
from tests.agents.opencode.projection import real_database
from tests.agents.opencode.rows import fork, step, usage


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    real_database(tmp_path / "home" / "opencode.db")
    return tmp_path / "home"


@pytest.fixture
def refolds(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The sessions each run folded again in part (``read_changed``' ``changed``)."""
    seen: list[list[str]] = []
    again = opencode.read_changed

    def spy(
        files: Sequence[Path], before: AgentTables, changed: Collection[str], *, items: bool = True
    ) -> AgentTables | None:
        seen.append(sorted(changed))
        return again(files, before, changed, items=items)

    monkeypatch.setattr(opencode, "read_changed", spy)
    return seen


def run(root: Path, cache: ResultCache | None, counter: list[int] | None = None) -> Folded:
    found = discover([root])
    agent, reader = next((a, r) for a, r in readers() if a.id == "opencode")
    logs = [log for name, log in found.agent_logs if name == agent.id]
    folded = agent_tables(
        agent, reader, logs, items=True, slot=str(root), cache=cache, fold_counter=counter
    )
    results.flush()
    return folded


def assert_whole(folded: Folded, root: Path) -> None:
    """``folded`` holds the tables of a fold of the whole database."""
    whole = run(root, None).tables
    for name in ("calls", "sessions", "issues", "items"):
        assert_frame_equal(getattr(folded.tables, name), getattr(whole, name))


def sessions(root: Path) -> list[str]:
    with closing(sqlite3.connect(root / "opencode.db")) as db:
        return [sid for (sid,) in db.execute("SELECT id FROM session ORDER BY id")]


def test_a_touched_database_folds_nothing_again(
    home: Path, tmp_path: Path, refolds: list[list[str]]
) -> None:
    cache = ResultCache(tmp_path / "cache")
    cold = run(home, cache)
    os.utime(home / "opencode.db", (1, 1))
    counter: list[int] = []
    touched = run(home, cache, counter)
    assert counter == [] and refolds == []  # no session folded again
    assert touched.same == frozenset(cold.tables.sessions["session_id"])
    assert_whole(touched, home)


def test_a_grown_session_alone_is_folded_again(
    home: Path, tmp_path: Path, refolds: list[list[str]]
) -> None:
    cache = ResultCache(tmp_path / "cache")
    cold = run(home, cache)
    grown = sessions(home)[3]
    with closing(sqlite3.connect(home / "opencode.db")) as db:
        step(db, grown, 9_000_000_000_000, usage(1234, 56))
        db.commit()
    counter: list[int] = []
    changed = run(home, cache, counter)
    assert counter == [] and refolds == [[grown]]
    assert changed.same == frozenset(cold.tables.sessions["session_id"]) - {grown}
    calls = changed.tables.calls.filter(pl.col("session_id") == grown)
    before = cold.tables.calls.filter(pl.col("session_id") == grown)
    assert calls.height == before.height + 1
    assert calls["input_tokens"].sum() == before["input_tokens"].sum() + 1234
    assert_whole(changed, home)


def test_a_deleted_session_is_gone(home: Path, tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    run(home, cache)
    gone = sessions(home)[0]
    with closing(sqlite3.connect(home / "opencode.db")) as db:
        for table in ("part", "message"):
            db.execute(f"DELETE FROM {table} WHERE session_id = ?", (gone,))
        db.execute("DELETE FROM session WHERE id = ?", (gone,))
        db.commit()
    after = run(home, cache)
    assert gone not in after.tables.sessions["session_id"].to_list()
    assert gone not in after.tables.calls["session_id"].to_list()
    assert_whole(after, home)


def test_a_fork_of_a_kept_session_is_folded_with_it(
    home: Path, tmp_path: Path, refolds: list[list[str]]
) -> None:
    cache = ResultCache(tmp_path / "cache")
    run(home, cache)
    source = sessions(home)[2]
    with closing(sqlite3.connect(home / "opencode.db")) as db:
        fork(db, source, 9_000_000_000_000)
        db.commit()
    forked = run(home, cache)
    assert len(refolds) == 1  # tried in part, then folded at once: the copy counts once
    assert_whole(forked, home)
