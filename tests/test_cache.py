"""The parse cache (``analytics/cache.py``): a cached run equals a cold run, whatever happened.

Every test reads a log with the cache (in ``tmp_path``) and without, and compares all three
tables. The property appends random events, in random cuts (a cut can tear a line), between
runs; the literal tests cover a file rewritten with the same size and mtime, a torn last line
later completed, and a cache whose segments vanished. ``progress`` reports how many bytes a
run had to parse, which shows what the cache saved.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.analysis import analyze
from analytics.cache import LogCache
from analytics.cache_dir import cache_dir
from analytics.sources.copilot_events import ParsedLog, read_logs
from analytics.sources.discover import LogFile

SESSION = "6b1f0c1e-4f1a-4a57-9a43-2f5e8d1c0b7a"


def line(kind: str, second: int, **data: Any) -> bytes:
    """One compact event line, newline included."""
    stamp = f"2026-05-01T10:{second // 60 % 60:02d}:{second % 60:02d}.000Z"
    event = {"type": kind, "data": data, "id": f"e{second}", "timestamp": stamp}
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


def shutdown(second: int, requests: int) -> bytes:
    usage = {"inputTokens": 100 * requests, "outputTokens": 7 * requests}
    metrics = {"m": {"requests": {"count": requests, "cost": 1}, "usage": usage}}
    return line("session.shutdown", second, shutdownType="routine", modelMetrics=metrics)


def read(path: Path, cache: Path | None, parsed: list[int] | None = None) -> ParsedLog:
    """Read one file, with a cache at ``cache`` or none; record the bytes it had to parse."""

    def progress(done: int, total: int) -> None:
        if parsed is not None:
            parsed.append(total)

    store = LogCache(cache) if cache else None
    return read_logs([LogFile(path, "hint")], store, progress)


def assert_same(cached: ParsedLog, cold: ParsedLog) -> None:
    for table in ("events", "model_metrics", "issues"):
        assert getattr(cached, table).equals(getattr(cold, table)), table


def check(path: Path, cache: Path) -> list[int]:
    """A cached read equals a cold read; returns the bytes the cached read parsed."""
    parsed: list[int] = []
    assert_same(read(path, cache, parsed), read(path, None))
    return parsed


_LINES = st.one_of(
    st.builds(line, st.sampled_from(["user.message", "assistant.turn_start"]), st.integers(0, 999)),
    st.builds(lambda s: line("session.start", s, sessionId=SESSION), st.integers(0, 999)),
    st.builds(lambda s: line("session.resume", s), st.integers(0, 999)),
    st.builds(lambda s: line("x.unknown", s), st.integers(0, 999)),
    st.builds(shutdown, st.integers(0, 999), st.integers(0, 9)),
    st.sampled_from([b"\n", b"not json\n", b"\x00\x00\n", b'{"type":"a.b"}\n']),
)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(_LINES, min_size=1, max_size=30),
    cuts=st.lists(st.floats(0, 1), min_size=1, max_size=5),
)
def test_appending_between_runs_equals_a_cold_run(
    tmp_path: Path, lines: list[bytes], cuts: list[float]
) -> None:
    case = tmp_path / uuid.uuid4().hex
    case.mkdir()
    path, cache = case / "events.jsonl", case / "cache"
    content = b"".join(lines)
    ends = sorted({round(cut * len(content)) for cut in cuts} | {len(content)})
    written = 0
    with path.open("wb") as handle:
        for end in ends:
            handle.write(content[written:end])
            handle.flush()
            cached_up_to = content[:written].rfind(b"\n") + 1
            parsed = check(path, cache)
            assert sum(parsed[-1:]) <= end - cached_up_to  # only new bytes (and a torn tail)
            written = end
    assert check(path, cache) in ([], [len(content) - content.rfind(b"\n") - 1])


def test_unchanged_file_parses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(line("session.start", 0, sessionId=SESSION) + shutdown(1, 3))
    assert check(path, tmp_path / "cache") == [path.stat().st_size]
    assert check(path, tmp_path / "cache") == []


def test_same_size_and_mtime_with_other_content_is_parsed_again(tmp_path: Path) -> None:
    path, cache = tmp_path / "events.jsonl", tmp_path / "cache"
    path.write_bytes(line("session.start", 0, sessionId=SESSION) + shutdown(1, 3))
    check(path, cache)
    stat = path.stat()
    path.write_bytes(line("session.start", 0, sessionId=SESSION) + shutdown(1, 4))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    assert check(path, cache) == [stat.st_size]
    assert read(path, cache).model_metrics["requests_count"].to_list() == [4]


def test_torn_last_line_is_read_again_once_completed(tmp_path: Path) -> None:
    path, cache = tmp_path / "events.jsonl", tmp_path / "cache"
    first, last = line("session.start", 0, sessionId=SESSION), shutdown(5, 2)
    path.write_bytes(first + last[:20])
    torn = read(path, cache)
    assert torn.issues.filter(pl.col("severity") == "error")["line"].to_list() == [2]
    with path.open("ab") as handle:
        handle.write(last[20:])
    assert check(path, cache) == [len(last)]
    assert read(path, cache).issues.height == 0


def test_grown_file_without_session_start_in_the_prefix(tmp_path: Path) -> None:
    """The session id comes from the first ``session.start`` even if appended later."""
    path, cache = tmp_path / "events.jsonl", tmp_path / "cache"
    path.write_bytes(line("user.message", 0))
    assert read(path, cache).events["session_id"].to_list() == ["hint"]
    with path.open("ab") as handle:
        handle.write(line("session.start", 1, sessionId=SESSION) + line("session.resume", 2))
    check(path, cache)
    events = read(path, cache).events
    assert events["session_id"].unique().to_list() == [SESSION]
    assert events["process_index"].to_list() == [0, 0, 1]


def test_vanished_segments_mean_a_fresh_parse(tmp_path: Path) -> None:
    path, cache = tmp_path / "events.jsonl", tmp_path / "cache"
    path.write_bytes(line("session.start", 0, sessionId=SESSION) + shutdown(1, 3))
    check(path, cache)
    for segment in cache.glob("*/segments/*.parquet"):
        segment.unlink()
    assert check(path, cache) == [path.stat().st_size]


def test_analyze_uses_the_cache_dir_and_never_writes_beside_the_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs" / SESSION
    logs.mkdir(parents=True)
    (logs / "events.jsonl").write_bytes(line("session.start", 0, sessionId=SESSION))
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache"
    cold = analyze([logs])
    warm = [analyze([logs], use_cache=True) for _ in range(2)][-1]
    assert cold.sessions.equals(warm.sessions) and cold.events.equals(warm.events)
    assert list((tmp_path / "cache").glob("*/manifest.json"))
    assert sorted(p.name for p in logs.iterdir()) == ["events.jsonl"]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AGENTCOST_CACHE_DIR": "/c/a", "XDG_CACHE_HOME": "/x"}, "/c/a"),
        ({"XDG_CACHE_HOME": "/x"}, "/x/agentcost"),
        ({"HOME": "/h"}, "/h/.cache/agentcost"),
    ],
)
def test_cache_dir(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str) -> None:
    for name in ("AGENTCOST_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cache_dir() == Path(expected)


@pytest.mark.parametrize(
    "manifest",
    [b"not json", b'{"format": 1, "files": {"x": {"size": 1}}}', b"[]"],
    ids=["garbage", "bad-entry", "not-an-object"],
)
def test_a_damaged_manifest_is_a_cold_cache(tmp_path: Path, manifest: bytes) -> None:
    path, cache = tmp_path / "events.jsonl", tmp_path / "cache"
    path.write_bytes(line("session.start", 0, sessionId=SESSION))
    check(path, cache)
    for found in cache.glob("*/manifest.json"):
        found.write_bytes(manifest.replace(b'"x"', json.dumps(str(path.resolve())).encode()))
    assert check(path, cache) == [path.stat().st_size]
