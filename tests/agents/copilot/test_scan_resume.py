"""Reading a growing log from where the last read stopped (``read_logs(..., resume=...)``).

The promise under test: reading a file whole equals reading its first part and then, from the
state that read ended at, the rest; for every column of every event (``source_line``,
``byte_offset``, ``session_id`` and ``process_index`` included), the per-model totals and the
issues. The log is literal: two processes of one session (a ``session.resume``), a copy of the
first start (which begins no session), a second session, a shutdown with per-model totals, a
blank line, a line of invalid JSON, bytes that are not UTF-8 and a NUL run. A hypothesis
property cuts it at every kind of byte offset, mid-line included: a last line without its
newline is left for the next read, never reported. One test pins the documented difference:
rows read before a session's start named it keep the hint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from analytics.agents.copilot.events import ScanState
from analytics.agents.discover import LogFile, Seen
from tests.oracle.reference.reader import ParsedLog, read_logs


def line(kind: str, event_id: str, second: int, **data: Any) -> bytes:
    event = {
        "type": kind,
        "data": data,
        "id": event_id,
        "timestamp": f"2026-05-01T10:00:{second:02d}.000Z",
    }
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


START_1 = line("session.start", "e1", 0, sessionId="s-one", copilotVersion="1.0.80")
LOG = b"".join(
    [
        START_1,
        line("user.message", "e2", 1, content="hello\nthere", transformedContent="hello"),
        line("assistant.turn_start", "e3", 2, turnId="0"),
        line("assistant.message", "e4", 3, content="a é", outputTokens=12, model="m1"),
        b"   \n",
        b'{"type":"assistant.message","data":{"content":"cut\n',
        line("session.resume", "e5", 4),
        START_1,  # the CLI copied the log onto itself: no new session
        line("assistant.message", "e6", 5, content="bé"),
        b'{"type":"user.message","data":{"content":"x\xff"},"id":"e7"}\n',
        b'{"type":"user.message","data":{"content":"n\x00\x00ul"},"id":"e8"}\n',
        line(
            "session.shutdown",
            "e9",
            6,
            shutdownType="routine",
            modelMetrics={"m1": {"requests": {"count": 1, "cost": 1}, "usage": {"inputTokens": 7}}},
        ),
        line("session.start", "e10", 7, sessionId="s-two"),
        line("user.message", "e11", 8, content="second"),
        line("session.resume", "e12", 9),
        line("assistant.message", "e13", 10, content="done", outputTokens=3),
        START_1,  # a copy of the first session's start: the lines after it are its again
        line("assistant.message", "e14", 11, content="back"),
    ]
)


def log_file(path: Path) -> LogFile:
    return LogFile(str(path), "hint", str(path), Seen.of(path.stat()))


def read_from(path: Path, state: ScanState | None) -> ParsedLog:
    return read_logs([log_file(path)], resume=[state])


def assert_same(whole: ParsedLog, parts: list[ParsedLog]) -> None:
    assert_frame_equal(pl.concat([p.events for p in parts]), whole.events)
    assert_frame_equal(pl.concat([p.model_metrics for p in parts]), whole.model_metrics)
    issues = pl.concat([p.issues for p in parts]).sort("line", maintain_order=True)
    assert_frame_equal(issues, whole.issues)


def test_whole_equals_first_part_then_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(LOG)
    whole = read_logs([log_file(path)])
    assert whole.ends == []
    assert whole.events["session_id"].unique(maintain_order=True).to_list() == ["s-one", "s-two"]
    assert whole.events["session_id"].to_list()[-2:] == ["s-one", "s-one"]
    assert whole.events["process_index"].to_list()[-1] == 2
    cut = LOG.index(b"session.shutdown")
    cut = LOG.rindex(b"\n", 0, cut) + 1
    path.write_bytes(LOG[:cut])
    first = read_from(path, None)
    assert first.ends[0].offset == cut
    with path.open("ab") as out:
        out.write(LOG[cut:])
    rest = read_from(path, first.ends[0])
    assert rest.ends[0].offset == len(LOG)
    assert rest.ends[0].lines == LOG.count(b"\n")
    assert_same(whole, [first, rest])
    again = read_from(path, rest.ends[0])  # nothing new: nothing read
    assert again.events.height == 0 and again.issues.height == 0


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(cuts=st.lists(st.integers(0, len(LOG)), max_size=4))
def test_any_split_points_give_the_whole_read(tmp_path: Path, cuts: list[int]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(LOG)
    whole = read_logs([log_file(path)])
    path.write_bytes(b"")
    parts: list[ParsedLog] = []
    state: ScanState | None = None
    for cut in [*sorted(cuts), len(LOG)]:
        path.write_bytes(LOG[:cut])
        part = read_from(path, state)
        state = part.ends[0]
        assert state.offset <= cut
        parts.append(part)
    assert state is not None and state.offset == len(LOG)
    assert_same(whole, parts)


def test_a_half_written_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    last = line("assistant.message", "e3", 2, content="written in two goes")
    path.write_bytes(START_1 + last[:20])
    first = read_from(path, None)
    assert first.issues.height == 0  # not "invalid JSON (truncated line?)"
    assert first.events["source_line"].to_list() == [1]
    assert first.ends[0].offset == len(START_1)
    with path.open("ab") as out:
        out.write(last[20:])
    rest = read_from(path, first.ends[0])
    assert rest.events.select("source_line", "byte_offset", "session_id").rows() == [
        (2, len(START_1), "s-one")
    ]


def test_rows_read_before_the_start_named_their_session_keep_the_hint(tmp_path: Path) -> None:
    """The documented difference: rows are never renamed once returned."""
    path = tmp_path / "events.jsonl"
    early = line("user.message", "e0", 0, content="before the start")
    path.write_bytes(early + START_1)
    assert read_logs([log_file(path)]).events["session_id"].to_list() == ["s-one", "s-one"]
    path.write_bytes(early)
    first = read_from(path, None)
    path.write_bytes(early + START_1)
    rest = read_from(path, first.ends[0])
    assert first.events["session_id"].to_list() == ["hint"]
    assert rest.events["session_id"].to_list() == ["s-one"]


def test_resume_needs_a_state_per_log(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(START_1)
    with pytest.raises(ValueError, match="one state"):
        read_logs([log_file(path)], resume=[])
