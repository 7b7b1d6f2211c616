"""Analysing in groups of sessions (``analytics/pipeline.py``) never changes a result.

``run_stages`` with ``group_bytes=1`` puts every session in a group of its own; each table
must equal the one-group analysis (``keep_events=True``) row for row. Covered: the sample
logs (sub-agents, resumes, a crash, a session store), the real logs, and a session whose two
files name it differently, which lands in two groups and must be merged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analytics.pipeline import Tables, run_stages
from analytics.sources.discover import discover
from tests.conftest import SAMPLE_LOGS

TABLES = ("calls", "sessions", "model_metrics", "issues")


def grouped_and_whole(paths: list[Path]) -> tuple[Tables, Tables]:
    found = discover(paths)
    whole = run_stages(found, None, None, keep_events=True)
    grouped = run_stages(found, None, None, keep_events=False, group_bytes=1)
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
    tables = run_stages(found, None, None, keep_events=False, group_bytes=group_bytes)
    files = {file for files in tables.sessions["source_files"].to_list() for file in files}
    assert files == {str(log.path) for log in found.logs}
