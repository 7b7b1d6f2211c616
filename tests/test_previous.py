"""A changed tree takes its unchanged groups from the previous result of the same paths
(``stages.Previous``), and prices only the sessions that changed (``analytics.cache.repriced``).

Each test analyses a copy of ``sample_logs`` (five sessions, a session store) in groups of
about one byte (three groups here) with the result cache, changes it as a live session
would, analyses it again, and compares every table with a fresh analysis.
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

from analytics.cache import repriced as priced
from analytics.cache.results import SUFFIX, TABLES, ResultCache, flush
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rates
from analytics.engine import stages as pipeline
from analytics.engine.analyze import Analysis, analyze
from analytics.engine.stages import GROUP_ISSUES, Previous
from tests.conftest import SAMPLE_LOGS

#: A sample session alone in its group; another group holds the sample's two issues.
LIVE = "38b50b0c-0ec0-4319-8c2a-e9a293fc3517"


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(SAMPLE_LOGS, tmp_path / "logs")
    return tmp_path / "logs"


@pytest.fixture
def stored(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the groups loaded from their own stored result."""
    keys: list[str] = []
    real = pipeline._stored

    def spy(cache: ResultCache, key: str, observed: Any) -> Any:
        keys.append(key)
        return real(cache, key, observed)

    monkeypatch.setattr(pipeline, "_stored", spy)
    return keys


def cached(logs: Path) -> Analysis:
    result = analyze([logs], use_cache=True, keep_events=False, group_bytes=1)
    flush()
    return result


def assert_fresh(result: Analysis, logs: Path) -> None:
    fresh = analyze([logs], keep_events=False, group_bytes=1)
    for name in TABLES:
        assert getattr(result, name).equals(getattr(fresh, name)), name


def grow(logs: Path, session: str) -> None:
    with (logs / "session-state" / session / "events.jsonl").open("a") as handle:
        record = {"type": "user.message", "data": {"content": "one more prompt"}}
        handle.write(json.dumps({**record, "timestamp": "2026-12-01T10:00:00.000Z"}) + "\n")


def sessions_of(result: Analysis) -> list[str]:
    return sorted(result.sessions["session_id"].to_list())


def test_a_grown_log_takes_the_other_groups_from_the_previous_result(
    logs: Path, stored: list[str]
) -> None:
    first = cached(logs)
    assert len(first.groups) > 1 and first.previous is None
    live = LIVE
    assert first.issues.height and not first.issues["file"].str.contains(live).any()
    grow(logs, live)
    stored.clear()
    second = cached(logs)
    assert len(stored) == 1  # only the grown log's group: the others come with the result
    assert second.previous is not None
    before, same = second.previous
    assert first.stored_as is not None and before == first.stored_as[1]
    assert second.stored_as is not None
    note = ResultCache().note(second.stored_as[1])
    assert note is not None
    mates = next(ids for ids in note["members"] if live in ids)
    assert same == set(sessions_of(second)) - set(mates)
    assert_fresh(second, logs)
    grow(logs, live)  # and again, from a result that was itself made this way
    assert_fresh(cached(logs), logs)


def test_changed_store_rows_keep_their_group_from_being_taken(
    logs: Path, stored: list[str]
) -> None:
    cached(logs)
    with closing(sqlite3.connect(logs / "session-store.db")) as db, db:
        (session,) = db.execute("SELECT session_id FROM assistant_usage_events LIMIT 1").fetchone()
        db.execute("DELETE FROM assistant_usage_events WHERE session_id = ?", (session,))
    stored.clear()
    result = cached(logs)
    assert len(stored) == 1  # its group: same files, other records, so not the same tables
    assert result.previous is not None and session not in result.previous[1]
    assert_fresh(result, logs)


def test_a_previous_result_without_its_group_issues_is_not_taken(
    logs: Path, stored: list[str], tmp_path: Path
) -> None:
    first = cached(logs)
    assert first.stored_as is not None
    (ResultCache().root / first.stored_as[1] / f"{GROUP_ISSUES}{SUFFIX}").unlink()
    grow(logs, sessions_of(first)[0])
    stored.clear()
    result = cached(logs)
    assert len(stored) == len(result.groups)  # every group loaded (or analysed) on its own
    assert_fresh(result, logs)


def test_a_session_split_over_groups_is_merged_when_the_rest_is_taken(tmp_path: Path) -> None:
    """Two files of one session in two groups (the second names it only by its start), and
    another session: a change to the latter merges the former's groups again."""

    def line(kind: str, second: int, **data: object) -> str:
        stamp = f"2026-05-01T10:00:{second:02d}.000Z"
        return json.dumps({"type": kind, "data": data, "timestamp": stamp}) + "\n"

    turn = line("assistant.turn_start", 1, turnId="0") + line("assistant.turn_end", 2, turnId="0")
    for name, session in (("a", "a"), ("b", "a"), ("c", "c")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.jsonl").write_text(
            line("session.start", 0, sessionId=session) + turn
        )
    cache = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTCOST_CACHE_DIR", str(cache))
        cached(tmp_path)
        (tmp_path / "c" / "events.jsonl").write_text(
            line("session.start", 0, sessionId="c") + turn + turn
        )
        result = cached(tmp_path)
    assert result.sessions.sort("session_id")["main_calls"].to_list() == [2, 2]
    assert_fresh(result, tmp_path)


@pytest.mark.parametrize(
    "note",
    [
        None,
        {},
        {"fingerprints": ["k d"]},
        {"fingerprints": ["k d"], "members": []},
        {"fingerprints": ["k d"], "members": [[1]]},
        {"fingerprints": "k d", "members": [["s"]]},
    ],
)
def test_a_note_that_does_not_describe_its_groups_gives_no_previous(
    note: dict[str, Any] | None,
) -> None:
    assert Previous.of("key", note) is None


def test_a_note_that_describes_its_groups_gives_them() -> None:
    previous = Previous.of("key", {"fingerprints": ["k d", None], "members": [["s"], []]})
    assert previous == Previous("key", ("k d", None), (("s",), ()))
    assert Previous.of(None, {"fingerprints": [], "members": []}) is None


def full(result: Analysis) -> pl.DataFrame:
    table = load_rates("github-copilot")
    return price_analysis(result.calls, result.sessions, table, {}, result.log_prices)[1]


@pytest.fixture
def priced_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many calls each pricing priced."""
    heights: list[int] = []

    def spy(calls: pl.DataFrame, *args: Any) -> Any:
        heights.append(calls.height)
        return price_analysis(calls, *args)

    monkeypatch.setattr(priced, "price_analysis", spy)
    return heights


def test_a_changed_tree_prices_only_the_sessions_that_changed(
    logs: Path, priced_calls: list[int]
) -> None:
    table = load_rates("github-copilot")
    first = cached(logs)
    assert priced.priced(first, table, {}, ["sessions"])["sessions"].equals(full(first))
    grow(logs, LIVE)
    second = cached(logs)
    assert second.previous is not None
    got = priced.priced(second, table, {}, ["sessions"])["sessions"]
    assert got.equals(full(second))
    changed = second.calls.filter(~pl.col("session_id").is_in(list(second.previous[1])))
    assert priced_calls == [first.calls.height, changed.height]
    assert 0 < changed.height < second.calls.height


def test_other_quoted_prices_price_every_session_again(
    logs: Path, priced_calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prices learned from the logs can price any session: when they differ from the
    previous result's, nothing priced then is reused."""
    table = load_rates("github-copilot")
    first = cached(logs)
    priced.priced(first, table, {}, ["sessions"])
    grow(logs, sessions_of(first)[0])
    second = cached(logs)
    real = ResultCache.load_table

    def other_prices(cache: ResultCache, key: str, name: str) -> pl.DataFrame | None:
        loaded = real(cache, key, name)
        return loaded.head(1) if name == "log_prices" and loaded is not None else loaded

    monkeypatch.setattr(ResultCache, "load_table", other_prices)
    assert second.log_prices.height > 1
    assert priced.priced(second, table, {}, ["sessions"])["sessions"].equals(full(second))
    assert priced_calls == [first.calls.height, second.calls.height]
