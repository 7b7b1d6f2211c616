"""A changed tree takes its unchanged groups from the previous result of the same paths
(``group_analysis.Previous``), and prices only the sessions that changed
(``analytics.cache.priced_tables``).

Each test analyses a copy of ``sample_logs`` (five sessions, a session store) in groups of
about one byte (three groups here) with the result cache, changes it as a live session
would, analyses it again, and compares every table with a fresh analysis.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.agents.discover import discover
from analytics.cache import priced_tables
from analytics.cache.results import BASE, SUFFIX, TABLES, Patched, ResultCache, flush, in_order
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rates
from analytics.engine import group_analysis as pipeline
from analytics.engine.analyze import Analysis, analyze
from analytics.engine.group_analysis import GROUP_ISSUES, Previous
from tests.conftest import SAMPLE_LOGS

#: A sample session alone in its group (with one byte a group: ``engine.groups``); another
#: group holds the sample's two issues.
LIVE = "38b50b0c-0ec0-4319-8c2a-e9a293fc3517"


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(SAMPLE_LOGS, tmp_path / "logs")
    return tmp_path / "logs"


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The groups analysed anew (each as its logs' session hints), in the order they ran."""
    groups: list[list[str]] = []
    real = pipeline._analyse

    def spy(logs: Any, *args: Any) -> Any:
        groups.append([log.session_hint for log in logs])
        return real(logs, *args)

    monkeypatch.setattr(pipeline, "_analyse", spy)
    return groups


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
    logs: Path, analysed: list[list[str]]
) -> None:
    first = cached(logs)
    assert len(first.groups) > 1 and first.previous is None
    live = LIVE
    assert first.issues.height and not first.issues["file"].str.contains(live).any()
    grow(logs, live)
    analysed.clear()
    second = cached(logs)
    assert analysed == [[live]]  # only the grown log's group: the others come with the result
    assert second.previous is not None
    before, same = second.previous.key, second.previous.same
    assert first.stored_as is not None and before == first.stored_as[1]
    # the calls priced anew are those of every session not taken, as in the whole table
    fresh = second.previous.calls().filter(~pl.col("session_id").is_in(list(same)))
    assert fresh.equals(second.call_view.filter(~pl.col("session_id").is_in(list(same))))
    assert second.stored_as is not None
    note = ResultCache().note(second.stored_as[1])
    assert note is not None
    mates = next(ids for ids in note["members"] if live in ids)
    assert same == set(sessions_of(second)) - set(mates)
    assert_fresh(second, logs)
    grow(logs, live)  # and again, from a result that was itself made this way
    assert_fresh(cached(logs), logs)


def test_changed_store_rows_keep_their_group_from_being_taken(
    logs: Path, analysed: list[list[str]]
) -> None:
    cached(logs)
    with closing(sqlite3.connect(logs / "session-store.db")) as db, db:
        (session,) = db.execute("SELECT session_id FROM assistant_usage_events LIMIT 1").fetchone()
        db.execute("DELETE FROM assistant_usage_events WHERE session_id = ?", (session,))
    analysed.clear()
    result = cached(logs)
    assert len(analysed) == 1 and session in analysed[0]  # same files, other records
    assert result.previous is not None and session not in result.previous.same
    assert_fresh(result, logs)


def test_a_previous_result_without_its_group_issues_is_not_taken(
    logs: Path, analysed: list[list[str]], tmp_path: Path
) -> None:
    first = cached(logs)
    assert first.stored_as is not None
    (ResultCache().root / first.stored_as[1] / f"{GROUP_ISSUES}{SUFFIX}").unlink()
    grow(logs, sessions_of(first)[0])
    analysed.clear()
    result = cached(logs)
    assert len(analysed) == len(result.groups)  # every group analysed again
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
    return price_analysis(result.calls, result.session_view, table, {}, result.log_prices)[1]


@pytest.fixture
def priced_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many calls each pricing priced (``priced_tables._priced`` prices every table
    the cache computes, whichever of them a caller asks for)."""
    heights: list[int] = []
    real = priced_tables._priced

    def spy(calls: pl.DataFrame, *args: Any) -> Any:
        heights.append(calls.height)
        return real(calls, *args)

    monkeypatch.setattr(priced_tables, "_priced", spy)
    return heights


def test_a_changed_tree_prices_only_the_sessions_that_changed(
    logs: Path, priced_calls: list[int]
) -> None:
    table = load_rates("github-copilot")
    first = cached(logs)
    assert priced_tables.priced_tables(first, table, {}, ["sessions"])["sessions"].equals(
        full(first)
    )
    grow(logs, LIVE)
    second = cached(logs)
    assert second.previous is not None
    got = priced_tables.priced_tables(second, table, {}, ["sessions"])["sessions"]
    assert got.equals(full(second))
    changed = second.calls.filter(~pl.col("session_id").is_in(list(second.previous.same)))
    assert priced_calls == [first.calls.height, changed.height]
    assert 0 < changed.height < second.calls.height


def test_other_quoted_prices_price_every_session_again(
    logs: Path, priced_calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prices learned from the logs can price any session: when they differ from the
    previous result's, nothing priced then is reused."""
    table = load_rates("github-copilot")
    first = cached(logs)
    priced_tables.priced_tables(first, table, {}, ["sessions"])
    grow(logs, sessions_of(first)[0])
    second = cached(logs)
    real = ResultCache.load_table

    def other_prices(cache: ResultCache, key: str, name: str) -> pl.DataFrame | None:
        loaded = real(cache, key, name)
        return loaded.head(1) if name == "log_prices" and loaded is not None else loaded

    monkeypatch.setattr(ResultCache, "load_table", other_prices)
    assert second.log_prices.height > 1
    assert priced_tables.priced_tables(second, table, {}, ["sessions"])["sessions"].equals(
        full(second)
    )
    assert priced_calls == [first.calls.height, second.calls.height]


def stage_calls(logs: Path) -> pl.DataFrame:
    """The calls a fresh analysis stores (Copilot's, before the agent columns)."""
    return pipeline.run_stages(discover([logs]), None, keep_events=False, group_bytes=1).calls


def folder_of(result: Analysis) -> Path:
    assert result.stored_as is not None
    return ResultCache().root / result.stored_as[1]


def test_a_result_made_from_the_previous_one_stores_its_calls_as_a_patch(logs: Path) -> None:
    first = cached(logs)
    whole = folder_of(first) / f"calls{SUFFIX}"
    assert whole.is_file()
    grow(logs, LIVE)
    second = cached(logs)
    base = folder_of(second) / f"calls{BASE}{SUFFIX}"
    assert not (folder_of(second) / f"calls{SUFFIX}").exists()
    assert base.stat().st_ino == whole.stat().st_ino  # the previous calls, linked, not written
    assert second.stored_as is not None
    loaded = ResultCache().load_table(second.stored_as[1], "calls")
    assert loaded is not None and loaded.equals(stage_calls(logs))
    grow(logs, LIVE)  # patched again: the same base, the same session dropped
    third = cached(logs)
    assert (folder_of(third) / f"calls{BASE}{SUFFIX}").stat().st_ino == whole.stat().st_ino
    assert_fresh(third, logs)
    assert_fresh(analyze([logs], use_cache=True, keep_events=False, group_bytes=1), logs)


def test_calls_patched_too_much_are_stored_whole_again(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached(logs)
    monkeypatch.setattr(pipeline, "PATCHED_AT_MOST", 10)  # one session of five is too many
    grow(logs, LIVE)
    second = cached(logs)
    assert (folder_of(second) / f"calls{SUFFIX}").is_file()
    assert not (folder_of(second) / f"calls{BASE}{SUFFIX}").exists()
    assert_fresh(second, logs)


def test_a_base_that_cannot_be_linked_is_written_again(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cached(logs)

    def no_link(*args: object) -> None:
        raise OSError("links are not supported here")

    monkeypatch.setattr(os, "link", no_link)
    grow(logs, LIVE)
    second = cached(logs)
    base = folder_of(second) / f"calls{BASE}{SUFFIX}"
    assert base.read_bytes() == (folder_of(first) / f"calls{SUFFIX}").read_bytes()
    assert base.stat().st_ino != (folder_of(first) / f"calls{SUFFIX}").stat().st_ino
    assert_fresh(second, logs)


_CALLS = st.lists(
    st.tuples(st.sampled_from("abcdef"), st.integers(0, 30), st.integers(-5, 5)),
    unique_by=lambda row: row[:2],
    max_size=40,
)


@given(_CALLS, _CALLS, st.sets(st.sampled_from("abcdef")), st.sets(st.sampled_from("abcdef")))
def test_a_patch_is_its_base_without_the_dropped_sessions_with_the_rows_added(
    base: list[tuple[str, int, int]],
    added: list[tuple[str, int, int]],
    dropped: set[str],
    later: set[str],
) -> None:
    """Patched twice, as a chain of runs patches: the rows of the sessions dropped go, from
    the base and from what an earlier patch added; the table is in the calls' order."""

    def frame(rows: list[tuple[str, int, int]]) -> pl.DataFrame:
        schema = {"session_id": pl.String, "event_seq": pl.Int64, "tokens": pl.Int64}
        return pl.DataFrame(rows, schema=schema, orient="row")

    sessions = pl.col("session_id")
    # the rows added are of sessions not kept from the base (as run_stages makes them)
    new = frame(added).filter(sessions.is_in(sorted(dropped)))
    buffer = io.BytesIO()
    in_order([frame(base)]).write_ipc(buffer, compression="lz4")
    patch = Patched.of(buffer.getvalue(), None).patched(dropped, [new])
    patch = patch.patched(later, [])
    expected = in_order(
        [
            frame(base).filter(~sessions.is_in(sorted(dropped | later))),
            new.filter(~sessions.is_in(sorted(later))),
        ]
    )
    assert patch().equals(expected)


def test_a_previous_result_with_calls_of_no_group_is_not_taken(
    logs: Path, analysed: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its calls are patched a session at a time: calls of a session none of its groups
    lists could not be dropped, so every group is analysed instead."""
    cached(logs)
    real = Patched.sessions
    monkeypatch.setattr(Patched, "sessions", lambda self: real(self) | {"a stray session"})
    grow(logs, LIVE)
    analysed.clear()
    result = cached(logs)
    assert len(analysed) == len(result.groups)  # each group analysed again
    assert_fresh(result, logs)
