"""Analysing in groups of sessions (``analytics/engine/group_analysis.py``) never changes a
result, and with a result cache a lone group is stored and loaded while unchanged (a larger
tree's groups are taken from its previous whole result: ``tests/engine/test_previous.py``).

``run_stages`` with ``group_bytes=1`` puts every session in a group of its own; each table
must equal the one-group analysis (``keep_events=True``) row for row. Covered: the sample
logs (sub-agents, resumes, a crash, a session store), the real logs, and a session whose two
files name it differently, which lands in two groups and must be merged.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from analytics.agents.discover import Found, LogFile, discover
from analytics.cache.results import ResultCache, flush
from analytics.engine import group_analysis as pipeline
from analytics.engine.group_analysis import Tables, run_stages
from tests.conftest import SAMPLE_LOGS

TABLES = ("calls", "sessions", "model_metrics", "issues", "log_prices")


def grouped_and_whole(paths: list[Path]) -> tuple[Tables, Tables]:
    found = discover(paths)
    whole = run_stages(found, None, keep_events=True)
    grouped = run_stages(found, None, keep_events=False, group_bytes=1)
    return grouped, whole


def assert_same(grouped: Tables, whole: Tables) -> None:
    for name in TABLES:
        left, right = getattr(grouped, name), getattr(whole, name)
        if name == "issues":  # the caller sorts issues; compare them as sets of rows
            left, right = (t.sort(t.columns, nulls_last=False) for t in (left, right))
        assert left.equals(right), name
    assert grouped.events is None and whole.events is not None


def test_sample_logs_in_groups_equal_one_group() -> None:
    grouped, whole = grouped_and_whole([SAMPLE_LOGS])
    assert whole.sessions.height > 1
    assert_same(grouped, whole)


def test_real_logs_in_groups_equal_one_group(real_logs: Path) -> None:
    assert_same(*grouped_and_whole([real_logs]))


def line(kind: str, second: int, **data: object) -> str:
    stamp = f"2026-05-01T10:00:{second:02d}.000Z"
    return json.dumps({"type": kind, "data": data, "timestamp": stamp}) + "\n"


def test_a_session_split_across_differently_named_files_is_merged(tmp_path: Path) -> None:
    """The second file has no session.start, so its hint differs; its session id is the
    first file's only because the whole session is read together."""
    first = tmp_path / "a" / "events.jsonl"
    second = tmp_path / "b" / "events.jsonl"
    for path in (first, second):
        path.parent.mkdir()
    first.write_text(
        line("session.start", 0, sessionId="a")
        + line("assistant.turn_start", 1, turnId="0")
        + line("assistant.turn_end", 2, turnId="0")
    )
    second.write_text(
        line("session.start", 3, sessionId="a")
        + line("assistant.turn_start", 4, turnId="0")
        + line("assistant.turn_end", 5, turnId="0")
    )
    grouped, whole = grouped_and_whole([tmp_path])
    assert whole.sessions["session_id"].to_list() == ["a"]
    assert whole.sessions["main_calls"].to_list() == [2]
    assert_same(grouped, whole)


@pytest.mark.parametrize("group_bytes", [1, 10**3, 10**9])
def test_every_log_is_analysed_once(group_bytes: int) -> None:
    found = discover([SAMPLE_LOGS])
    tables = run_stages(found, None, keep_events=False, group_bytes=group_bytes)
    files = {file for files in tables.sessions["source_files"].to_list() for file in files}
    assert files == {str(log.path) for log in found.logs}


def analysed_groups(
    monkeypatch: pytest.MonkeyPatch, logs: Path, cache: ResultCache, group_bytes: int
) -> tuple[Tables, list[set[str]]]:
    """Run the stages with a result cache; which groups were analysed (not loaded)."""
    analysed: list[set[str]] = []
    original = pipeline._analyse

    def spy(group: list[LogFile], *args: object) -> Tables:
        analysed.append({log.session_hint for log in group})
        return original(group, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "_analyse", spy)
    found = discover([logs])
    tables = run_stages(found, None, keep_events=False, group_bytes=group_bytes, cache=cache)
    monkeypatch.setattr(pipeline, "_analyse", original)
    flush()
    return tables, analysed


def fresh(logs: Path) -> Tables:
    return run_stages(discover([logs]), None, keep_events=True)


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    shutil.copytree(SAMPLE_LOGS, tmp_path / "logs")
    return tmp_path / "logs"


def test_the_groups_of_a_larger_tree_are_not_stored_one_by_one(
    monkeypatch: pytest.MonkeyPatch, copied: Path, tmp_path: Path
) -> None:
    """Its whole result keeps them (``group_analysis.Previous``,
    ``tests/engine/test_previous.py``)."""
    cache = ResultCache(tmp_path / "cache")
    _, first = analysed_groups(monkeypatch, copied, cache, group_bytes=1)
    _, second = analysed_groups(monkeypatch, copied, cache, group_bytes=1)
    assert len(first) > 1 and second == first
    assert not list(cache.root.glob("*/note.json"))


def test_a_lone_group_is_stored_and_only_a_grown_one_analysed_again(
    monkeypatch: pytest.MonkeyPatch, copied: Path, tmp_path: Path
) -> None:
    cache = ResultCache(tmp_path / "cache")
    _, first = analysed_groups(monkeypatch, copied, cache, group_bytes=10**9)
    _, second = analysed_groups(monkeypatch, copied, cache, group_bytes=10**9)
    assert len(first) == 1 and second == []
    log = sorted(copied.glob("session-state/*/events.jsonl"))[-1]
    with log.open("a") as handle:
        handle.write(line("user.message", 59, content="one more prompt"))
    tables, third = analysed_groups(monkeypatch, copied, cache, group_bytes=10**9)
    assert third == first
    assert_same(tables, fresh(copied))


def test_a_store_rows_problems_are_reported_for_its_analysed_session_only(copied: Path) -> None:
    """One group reads only its sessions' store rows, several groups read the store whole; a
    bad stored value is reported when its session is analysed, either way, and only then."""
    with closing(sqlite3.connect(copied / "session-store.db")) as db, db:
        (session,) = db.execute("SELECT session_id FROM assistant_usage_events LIMIT 1").fetchone()
        db.execute(
            "UPDATE assistant_usage_events SET input_tokens = 'lots' WHERE id = "
            "(SELECT min(id) FROM assistant_usage_events WHERE session_id = ?)",
            (session,),
        )
    bad = "input_tokens 'lots' is not a valid value; left unknown"

    def reported(found: Found, **options: Any) -> int:
        tables = run_stages(found, None, **options)
        return tables.issues["message"].to_list().count(bad)

    tree = discover([copied])
    assert reported(tree, keep_events=True) == 1
    assert reported(tree, keep_events=False, group_bytes=1) == 1
    other = next(p for p in copied.glob("session-state/*") if p.name != session)
    assert reported(discover([other]), keep_events=True) == 0
    assert reported(discover([copied / "session-state" / session]), keep_events=True) == 1


@pytest.mark.parametrize("group_bytes", [1, 10**9])
def test_event_groups_hold_each_session_whole(group_bytes: int, real_logs: Path) -> None:
    """Reading events a group of sessions at a time gives the same rows as reading them all,
    each session in exactly one group; with no session there is one empty group."""
    from analytics.engine.analyze import analyze

    for paths in ([SAMPLE_LOGS], [real_logs]):
        lazy = analyze(paths, keep_events=False, group_bytes=group_bytes)
        groups = list(lazy.event_groups())
        ids = [set(group["session_id"].unique()) for group in groups]
        assert sum(len(group) for group in ids) == len(set().union(*ids))
        together = pl.concat(groups).sort("session_id", "event_seq")
        assert together.equals(analyze(paths).events.sort("session_id", "event_seq"))


def test_event_groups_of_no_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An analysis of the default homes, none of which holds a session yet (a named path
    without a log is an error; a home not yet used is not), has one empty group."""
    from analytics.engine.analyze import analyze

    (tmp_path / "session-state" / "abc").mkdir(parents=True)
    for variable in ("HOME", "COPILOT_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.setenv(variable, str(tmp_path))
    groups = list(analyze([], keep_events=False).event_groups())
    assert [group.height for group in groups] == [0]


def test_validation_in_groups_equals_validation_at_once(real_logs: Path) -> None:
    from analytics.engine.analyze import analyze
    from analytics.engine.validate import reconstruction_errors

    for paths in ([SAMPLE_LOGS], [real_logs]):
        at_once = reconstruction_errors(analyze(paths))
        assert at_once.height
        grouped = reconstruction_errors(analyze(paths, keep_events=False, group_bytes=1))
        assert grouped.equals(at_once)


def test_groups_in_flight_give_the_result_of_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two workers collect results in group order: every table, issues included, is the
    one a single worker gives, in the same row order."""
    found = discover([SAMPLE_LOGS])
    two = run_stages(found, None, keep_events=False, group_bytes=1)
    monkeypatch.setattr(pipeline, "WORKERS", 1)
    one = run_stages(found, None, keep_events=False, group_bytes=1)
    for name in TABLES:
        assert getattr(two, name).equals(getattr(one, name)), name
    assert two.groups == one.groups


def test_progress_across_groups_in_flight_only_grows_to_the_total() -> None:
    found = discover([SAMPLE_LOGS])
    seen: list[tuple[int, int]] = []
    record = lambda now, total: seen.append((now, total))  # noqa: E731
    run_stages(found, record, keep_events=False, group_bytes=1)
    total = sum(log.stat.st_size for log in found.logs if log.stat)
    assert seen and all(t == total for _, t in seen)
    assert [now for now, _ in seen] == sorted(now for now, _ in seen)
    assert seen[-1][0] == total
