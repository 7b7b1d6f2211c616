"""Bringing a stored group of sessions up to date (``incremental.py``): only the sessions
whose files changed are analysed again, and the result equals a fresh analysis.

Each test analyses a copy of ``sample_logs`` (five sessions, one group; its session store
left out unless said) with the result cache, changes it as a live session would, and
analyses it again. Which logs the stages read is observed by wrapping ``stages._analyse``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from analytics.cache.results import TABLES
from analytics.engine import stages as pipeline
from analytics.engine.analyze import Analysis, analyze
from tests.conftest import SAMPLE_LOGS

LIVE = "38b50b0c-0ec0-4319-8c2a-e9a293fc3517"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, copy)
    # Its rows give one session a store issue (``test_a_store_issue_...``); without it
    # every issue belongs to a log.
    (copy / "session-store.db").unlink()
    yield copy


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The names of the session directories each run of the stages read."""
    seen: list[list[str]] = []
    real = pipeline._analyse

    def spy(logs, *rest):  # type: ignore[no-untyped-def]
        seen.append(sorted(log.path.parent.name for log in logs))
        return real(logs, *rest)

    monkeypatch.setattr(pipeline, "_analyse", spy)
    return seen


def cached(tree: Path) -> Analysis:
    return analyze([tree], use_cache=True, keep_events=False)


def assert_fresh(result: Analysis, tree: Path) -> None:
    fresh = analyze([tree], keep_events=False)
    for table in TABLES:
        assert getattr(result, table).equals(getattr(fresh, table)), table


def test_a_growing_log_re_reads_only_its_session(tree: Path, analysed: list[list[str]]) -> None:
    log = tree / "session-state" / LIVE / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    cached(tree)
    assert len(analysed[-1]) == 5  # the first run reads the group whole
    log.write_bytes(b"".join(lines))  # the session went on
    result = cached(tree)
    assert analysed[-1] == [LIVE]
    assert_fresh(result, tree)


def test_a_new_session_is_analysed_alone(tree: Path, analysed: list[list[str]]) -> None:
    cached(tree)
    newcomer = tree / "session-state" / "0a0a0a0a-0000-4000-8000-000000000000"
    newcomer.mkdir()
    source = tree / "session-state" / LIVE / "events.jsonl"
    text = source.read_text().replace(LIVE, newcomer.name)
    (newcomer / "events.jsonl").write_text(text)
    result = cached(tree)
    assert analysed[-1] == [newcomer.name]
    assert_fresh(result, tree)


def test_a_file_that_went_away_means_the_whole_group(tree: Path, analysed: list[list[str]]) -> None:
    cached(tree)
    shutil.rmtree(tree / "session-state" / LIVE)
    result = cached(tree)
    assert len(analysed[-1]) == 4
    assert_fresh(result, tree)


def test_a_re_read_file_holding_a_kept_session_means_the_whole_group(
    tree: Path, analysed: list[list[str]]
) -> None:
    cached(tree)
    # A second file for an existing session (a resumed session's legacy flat log, say): the
    # stored rows of that session would be stale, so the group is analysed whole.
    other = "6c2b0476-58de-4348-be1c-d5ccae36508e"
    twin = tree / "session-state" / "1b1b1b1b-0000-4000-8000-000000000000"
    twin.mkdir()
    shutil.copy(tree / "session-state" / other / "events.jsonl", twin / "events.jsonl")
    result = cached(tree)
    assert len(analysed[-1]) == 6
    assert_fresh(result, tree)


def test_a_store_issue_means_the_whole_group(tree: Path, analysed: list[list[str]]) -> None:
    shutil.copy(SAMPLE_LOGS / "session-store.db", tree / "session-store.db")
    log = tree / "session-state" / LIVE / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    cached(tree)
    log.write_bytes(b"".join(lines))
    result = cached(tree)
    assert len(analysed[-1]) == 5  # the store's issue names no log: nothing to keep safely
    assert_fresh(result, tree)
