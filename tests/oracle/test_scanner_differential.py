"""The native scanner equals the reference reader, event for event and issue for issue.

``tests/oracle/reference_reader.py`` reads the same bytes the slow, obvious way. Compared: every
column of every event (timestamps as UTC milliseconds), every issue (line, severity, message)
and the per-model totals of shutdown lines, decoded (``tests/oracle/reference/model_metrics.py`` is
the reference decoder), on ``sample_logs/``, every real log, and hypothesis-generated damaged
input: real lines truncated, with NUL runs, flipped bits and inserted JSON punctuation,
arbitrary bytes, and generated events with odd values (deep nesting, numbers of every form,
escapes, lone surrogates, duplicate keys, wrong shapes).
``AGENTCOST_DIFFERENTIAL_EXAMPLES`` sets the number of generated cases (10,000 by default).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics import _scanner
from analytics.agents.copilot.events import batch_frame
from tests.conftest import SAMPLE_LOGS
from tests.oracle.reference.model_metrics import decode as decode_model_metrics
from tests.oracle.reference_reader import Reader

READER = Reader()
EXAMPLES = int(os.environ.get("AGENTCOST_DIFFERENTIAL_EXAMPLES", "10000"))


def native(path: Path, hint: str) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], list[Any]]:
    tables, issues, totals, failures = _scanner.scan_copilot([str(path)], [hint], [None])
    assert failures == []
    frames = [batch_frame(table) for table in tables]
    events = pl.concat(frames) if frames else pl.DataFrame()
    if events.height:
        events = events.with_columns(pl.col("timestamp").dt.epoch("ms"))
    _, lines, severities, messages = issues
    metrics, (_, warning_lines, warnings) = totals
    rows = pl.DataFrame(metrics).drop("file", "session_id", "process_index").to_dicts()
    return (
        events.drop("source_file").to_dicts() if events.height else [],
        sorted(zip(lines, severities, messages, strict=True)),
        [rows, list(zip(warning_lines, warnings, strict=True))],
    )


def reference(
    data: bytes, hint: str
) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], list[Any]]:
    """The reader's events and issues, and its shutdowns' totals decoded by the reference
    decoder: (rows, (line, warning) pairs)."""
    rows, issues = READER.read(data, hint)
    metrics, warnings = [], []
    for row in rows:
        text = row.pop("_totals")
        if text is None:
            continue
        decoded, said = decode_model_metrics(text)
        metrics += [{"source_line": row["source_line"], **item} for item in decoded]
        warnings += [(row["source_line"], message) for message in said]
    return rows, sorted(issues), [metrics, warnings]


def assert_same(path: Path, hint: str = "hint") -> None:
    got_events, got_issues, got_totals = native(path, hint)
    want_events, want_issues, want_totals = reference(path.read_bytes(), hint)
    assert len(got_events) == len(want_events)
    for got, want in zip(got_events, want_events, strict=True):
        assert got == {name: want[name] for name in got}, got["source_line"]
    assert got_issues == want_issues
    assert got_totals == want_totals


def test_sample_logs_equal() -> None:
    for path in sorted(SAMPLE_LOGS.rglob("*.jsonl")):
        assert_same(path)


def _start(event_id: str, session: str | None) -> bytes:
    data = {"sessionId": session} if session else {}
    return json.dumps({"type": "session.start", "data": data, "id": event_id}).encode()


def _turn(event_id: str) -> bytes:
    return json.dumps({"type": "assistant.turn_start", "data": {}, "id": event_id}).encode()


@pytest.mark.parametrize(
    ("lines", "sessions"),
    [
        # two sessions, copied onto themselves: each copy goes back to its original's session
        ([_start("1", "A"), _turn("2"), _start("3", "B"), _turn("4")] * 2, "AABBAABB"),
        # unnamed sessions (the hint, then hint#2) copied, and a new one after the copies
        (
            [_start("1", None), _turn("2"), _start("3", None), _turn("4")] * 2
            + [_start("5", None)],
            "hh22hh223",
        ),
        # a start repeating the id of a line that was no start begins nothing
        ([_start("1", "A"), _turn("2"), _start("3", "B"), _start("2", "C"), _turn("6")], "AABBB"),
        # a copied start after a line before the first start
        ([_turn("0"), _start("1", "A"), _start("2", "B"), _start("1", "A"), _turn("3")], "AABAA"),
    ],
    ids=["two-named", "unnamed", "repeats-no-start", "line-before-start"],
)
def test_copied_session_starts_equal(tmp_path: Path, lines: list[bytes], sessions: str) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert_same(path)
    names = {"hint": "h", "hint#2": "2", "hint#3": "3"}
    rows = native(path, "hint")[0]
    assert "".join(names.get(row["session_id"], row["session_id"]) for row in rows) == sessions


def test_real_logs_equal(real_logs: Path) -> None:
    files = sorted(real_logs.rglob("*.jsonl"))
    assert files
    for path in files:
        assert_same(path)


def _real_lines() -> list[bytes]:
    lines: list[bytes] = []
    for path in sorted(SAMPLE_LOGS.rglob("*.jsonl"))[:3]:
        lines += path.read_bytes().split(b"\n")[:40]
    from tests.conftest import REAL_LOGS

    if REAL_LOGS.is_dir():
        for path in sorted(REAL_LOGS.rglob("*.jsonl")):
            lines += path.read_bytes().split(b"\n")[:30]
    return [line for line in lines if line]


REAL_LINES = _real_lines()
_PUNCTUATION = [b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"0", b"-", b"e", b".", b"\\u"]
_PUNCTUATION += [b"\\ud800", b"\xff", b"\xc3", b"\r", b"\x01", b"\x00" * 8, b" ", b"\xe2\x80\xa8"]
_PUNCTUATION += [b"\xef\xbb\xbf"]


def damage(line: bytes, seed: int) -> bytes:
    """A line as a crash or a bad disk leaves it: truncated, NULs, flipped bits, stray bytes."""
    rng = random.Random(seed)
    data = bytearray(line)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        what = rng.randrange(5)
        if what == 0:
            del data[at:]
        elif what == 1:
            data[at:at] = b"\x00" * rng.randint(1, 40)
        elif what == 2 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif what == 3:
            data[at:at] = rng.choice(_PUNCTUATION)
        else:
            del data[at : at + rng.randint(1, 8)]
    return bytes(data)


_NUMBERS = st.sampled_from(
    [
        "0",
        "-0",
        "12",
        "12.0",
        "1.50",
        "1e3",
        "1E-7",
        "-2.5e+300",
        "1e400",
        "9223372036854775807",
        "9223372036854775808",
        "123456789012345678901234",
        "0.1",
        "1e16",
        "1e21",
        "5e-324",
        "07",
    ]
)
_SCALARS = st.one_of(
    _NUMBERS,
    st.sampled_from(
        [
            '"x"',
            '"TRUE"',
            '"12"',
            '"a\\nb\\u00e9\\ud83d\\ude00"',
            '"\\ud800"',
            "true",
            "false",
            "null",
            '"2026-05-01T10:00:00.123Z"',
            '"2026-05-01T10:00:00+02:00"',
            '"\\u001b\\"\\\\"',
            "NaN",
            "Infinity",
        ]
    ),
    st.text(max_size=12).map(json.dumps),
)
_KEYS = st.sampled_from(
    [
        "type",
        "id",
        "timestamp",
        "agentId",
        "data",
        "model",
        "content",
        "result",
        "toolRequests",
        "outputTokens",
        "modelMetrics",
        "sessionId",
        "usage",
        "context",
        "cwd",
        "success",
        "summary",
        "tokenDetails",
        "copilotUsage",
        "totalNanoAiu",
        "x",
    ]
)


def _value(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _SCALARS
    inner = _value(depth - 1)
    members = st.lists(st.tuples(_KEYS, inner), max_size=4).map(
        lambda pairs: "{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}"
    )
    items = st.lists(inner, max_size=3).map(lambda vs: "[" + ", ".join(vs) + "]")
    return st.one_of(_SCALARS, members, items)


_TYPES = st.sampled_from(
    [
        "session.start",
        "session.resume",
        "session.shutdown",
        "user.message",
        "assistant.message",
        "tool.execution_complete",
        "session.usage_record",
        "session.compaction_complete",
        "x.y",
    ]
)
_EVENT = st.tuples(_TYPES, st.lists(st.tuples(_KEYS, _value(3)), max_size=5)).map(
    lambda t: (
        f'{{"type":"{t[0]}",'
        + "".join(f'"{k}":{v},' for k, v in t[1])
        + '"timestamp":"2026-05-01T10:00:00Z"}'
    )
)
_LINE = st.one_of(
    st.tuples(st.sampled_from(REAL_LINES), st.integers(0, 2**32)).map(lambda t: damage(*t)),
    st.sampled_from(REAL_LINES),
    st.sampled_from(REAL_LINES).map(lambda line: b"\xef\xbb\xbf" + line),
    _EVENT.map(str.encode),
    st.tuples(_EVENT, st.integers(0, 2**32)).map(lambda t: damage(t[0].encode(), t[1])),
    st.binary(max_size=40),
    st.sampled_from(
        [
            b"",
            b" ",
            b"\t\r",
            b"\x00\x00",
            b"null",
            b"[]",
            b"{}",
            b"1",
            b'"s"',
            b"\xef\xbb\xbf{}",
            b"[" * 300 + b"]" * 300,
            b'{"type":"x"}\r\r',
        ]
    ),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(lines=st.lists(_LINE, min_size=1, max_size=6), final_newline=st.booleans())
def test_damaged_and_generated_input_equal(
    tmp_path: Path, lines: list[bytes], final_newline: bool
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    assert_same(path)


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_huge_line_in_small_blocks(tmp_path: Path, size: int) -> None:
    path = tmp_path / "events.jsonl"
    body = json.dumps({"type": "user.message", "data": {"content": "é" * 300_000}})
    path.write_text(body + "\n" + body[: len(body) // 2])
    tables, issues, _, _ = _scanner.scan_copilot([str(path)], ["h"], [None], 1, size)
    assert sum(len(t) for t in tables) == 1
    assert issues[1:3] == ([1, 2], ["warning", "error"])  # no timestamp; torn
