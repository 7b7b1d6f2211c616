"""The result cache (``analytics/cache/results.py``): a stored analysis is reused only while
every input is unchanged, and then equals a fresh analysis table for table.

Each test analyses a copy of ``sample_logs`` (or a one-file log) with ``use_cache=True`` and
compares with ``use_cache=False``. Whether a run was served from the result cache is observed
through the parse stage: a hit never reads a log, so ``progress`` is never called.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from analytics.agents.discover import discover
from analytics.cache import fingerprints
from analytics.cache import results as result_cache
from analytics.cache.location import RESULTS_FORMAT as FORMAT
from analytics.cache.results import KEEP, SUFFIX, TABLES, ResultCache, flush
from analytics.engine import analyze as analysis
from analytics.engine.analyze import Analysis, analyze
from tests.conftest import SAMPLE_LOGS

SESSION_LINE = (
    b'{"type":"session.start","data":{"sessionId":"s1"},"timestamp":"2026-05-01T10:00:00.000Z"}\n'
)
TURN = (
    b'{"type":"assistant.turn_start","data":{"turnId":"0"},'
    b'"timestamp":"2026-05-01T10:00:01.000Z"}\n'
)


def run(paths: list[Path]) -> tuple[Analysis, bool]:
    """A cached analysis, and whether it read any log (False: served by the result cache)."""
    reads: list[int] = []
    result = analyze(paths, use_cache=True, progress=lambda done, total: reads.append(total))
    flush()  # the result is written in the background; these tests look at the files
    return result, bool(reads)


def assert_same(cached: Analysis, fresh: Analysis) -> None:
    for table in (*TABLES, "events"):
        assert getattr(cached, table).equals(getattr(fresh, table)), table


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    copy = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, copy)
    return copy


def test_an_unchanged_tree_is_loaded_and_equals_a_fresh_analysis(logs: Path) -> None:
    first, read_first = run([logs])
    second, read_second = run([logs])
    assert read_first and not read_second
    fresh = analyze([logs])
    assert_same(first, fresh)
    assert_same(second, fresh)  # events too: read again on first use


def test_an_appended_line_is_a_miss(logs: Path) -> None:
    run([logs])
    log = sorted(logs.glob("session-state/*/events.jsonl"))[0]
    with log.open("ab") as handle:
        handle.write(TURN)
    cached, read = run([logs])
    assert read
    assert_same(cached, analyze([logs]))


def test_same_size_and_mtime_with_other_content_is_a_miss(tmp_path: Path) -> None:
    log = tmp_path / "s1" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(SESSION_LINE + TURN)
    run([log])
    seen = log.stat()
    log.write_bytes(SESSION_LINE + TURN.replace(b'"0"', b'"1"'))
    os.utime(log, ns=(seen.st_atime_ns, seen.st_mtime_ns))
    assert (log.stat().st_size, log.stat().st_mtime_ns) == (seen.st_size, seen.st_mtime_ns)
    after, read = run([log])
    assert read
    assert_same(after, analyze([log]))


def test_a_new_problem_is_a_miss(logs: Path) -> None:
    """An empty session directory appearing adds an issue, so the stored result is stale."""
    run([logs])
    (logs / "session-state" / "empty-session").mkdir()
    cached, read = run([logs])
    assert read
    assert "session directory has no events.jsonl" in cached.issues["message"].to_list()


def test_a_damaged_result_is_recomputed(logs: Path, tmp_path: Path) -> None:
    run([logs])
    for stored in (Path(os.environ["AGENTCOST_CACHE_DIR"]) / f"results-v{FORMAT}").glob(
        f"*/*{SUFFIX}"
    ):
        stored.write_bytes(b"not a table")
    cached, read = run([logs])
    assert read
    assert_same(cached, analyze([logs]))


def test_a_window_applies_to_a_loaded_result(logs: Path) -> None:
    from datetime import date

    from analytics.engine.analyze import Window

    run([logs])
    window = Window(since=date(2030, 1, 1))
    empty = analyze([logs], window, use_cache=True)
    assert empty.sessions.height == 0 and empty.calls.height == 0 and empty.events.height == 0


def test_only_the_newest_results_are_kept(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    tables = {name: pl.DataFrame({"x": [1]}) for name in TABLES}
    for n in range(KEEP + 3):
        cache.save(f"key{n}", tables)
        os.utime(cache.root / f"key{n}", ns=(n * 10**9, n * 10**9))
    kept = sorted(p.name for p in cache.root.iterdir())
    assert len(kept) == KEEP and "key0" not in kept
    loaded = cache.load(f"key{KEEP + 2}")
    assert loaded is not None and loaded[0]["calls"].equals(tables["calls"])


def test_an_unwritable_cache_still_analyses(logs: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be")
    cache = ResultCache(blocked)
    key = fingerprints.tree_key(discover([logs]))
    assert key is not None
    cache.save(key, {name: pl.DataFrame() for name in TABLES})  # no exception
    assert cache.load(key) is None


def test_a_run_reads_the_result_it_is_still_writing(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole analysis is stored in the background; the next read of the cache waits
    for that write, so a second run in the same process is served by the first's result."""
    import threading

    from analytics.cache import results as result_cache

    original = result_cache.ResultCache.save
    release = threading.Event()

    def slow_save(self: ResultCache, *args: Any, **kwargs: Any) -> None:
        release.wait(5)
        original(self, *args, **kwargs)

    monkeypatch.setattr(result_cache.ResultCache, "save", slow_save)
    reads: list[int] = []
    analyze([logs], use_cache=True, progress=lambda done, total: reads.append(total))
    assert reads  # the first run read the logs
    threading.Timer(0.2, release.set).start()
    reads.clear()
    second = analyze([logs], use_cache=True, progress=lambda done, total: reads.append(total))
    assert not reads  # waited for the write, then loaded it
    assert_same(second, analyze([logs]))


def test_a_loaded_result_decodes_its_calls_only_when_they_are_read(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run([logs])
    decoded: list[int] = []
    real = result_cache._decode
    monkeypatch.setattr(result_cache, "_decode", lambda data: decoded.append(1) or real(data))
    loaded, read = run([logs])
    assert not read and decoded == []
    assert loaded.calls.equals(analyze([logs]).calls) and decoded == [1]


def test_a_damaged_stored_calls_table_is_analysed_again(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damage a header check cannot see (the data of a compressed buffer) shows only when
    the calls are decoded: they are then those of a fresh analysis."""
    first, _ = run([logs])
    assert first.stored_as is not None
    stored = ResultCache().root / first.stored_as[1] / f"calls{SUFFIX}"
    data = bytearray(stored.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    stored.write_bytes(bytes(data))
    with pytest.raises((OSError, pl.exceptions.PolarsError)):
        result_cache._decode(bytes(data))
    loaded, read = run([logs])
    assert not read
    again: list[int] = []
    real = analysis._run
    monkeypatch.setattr(analysis, "_run", lambda *a: again.append(1) or real(*a))
    calls = loaded.calls
    assert again == [1]
    monkeypatch.undo()
    assert calls.equals(analyze([logs]).calls)


def test_a_truncated_stored_calls_table_is_a_miss(logs: Path) -> None:
    first, _ = run([logs])
    assert first.stored_as is not None
    stored = ResultCache().root / first.stored_as[1] / f"calls{SUFFIX}"
    stored.write_bytes(stored.read_bytes()[:100])
    again, read = run([logs])
    assert read
    assert_same(again, analyze([logs]))


def test_no_records_digest_as_their_columns_apart_from_any_records() -> None:
    schema = {"session_id": pl.String, "tokens": pl.Int64}
    none = result_cache.records_digest(pl.DataFrame(schema=schema))
    one = result_cache.records_digest(pl.DataFrame({"session_id": ["a"], "tokens": [1]}))
    assert none == result_cache.records_digest(pl.DataFrame(schema=schema)) != one
    assert none != result_cache.records_digest(pl.DataFrame(schema={"session_id": pl.String}))


def test_the_result_cache_stores_and_loads_the_agent_table() -> None:
    """A second analysis of the same logs, loaded from the result cache, gives the same
    agent table and view."""
    fresh = analyze([SAMPLE_LOGS], use_cache=True)
    flush()
    loaded = analyze([SAMPLE_LOGS], use_cache=True)
    assert loaded.previous is None  # loaded, not analysed anew
    ((table, rows),) = fresh.agent_tables
    ((table_again, rows_again),) = loaded.agent_tables
    assert table == table_again and rows.height == fresh.sessions.height
    assert rows_again.equals(rows)
    assert loaded.session_view.equals(fresh.session_view)


@pytest.mark.parametrize(
    "note",
    [
        {},
        {"groups": []},
        {"groups": [["/a/x.jsonl", 'q"uoted/ü']] * 9000, "prints": ["f" * 64] * 4097},
        {"analysis": None, "n": list(range(4096)), "m": list(range(4097))},
    ],
)
def test_a_note_is_written_in_pieces_as_json_dumps_writes_it(note: dict[str, Any]) -> None:
    """``note_text``: a note's text is ``json.dumps``'s, a long list written a slice of its
    items at a time (a note listing every file of a large tree is never one string)."""
    import json

    pieces = list(result_cache.note_text(note))
    assert "".join(pieces) == json.dumps(note)
    longest = max(
        len(json.dumps(value[:4096] if isinstance(value, list) else value))
        for value in [0, *note.values()]
    )
    assert max(map(len, pieces)) <= longest + 16  # and a separator, or a key
