"""The Copilot events reader (``agents/copilot/events.read_events``) on bad and odd input.

Each test writes literal lines to a file in ``tmp_path`` and reads it back. The rule under test
is the reader's promise: every non-blank line becomes exactly one event or one error-severity
issue (with file and line), never an exception, and a problem on one line never costs the rest
of the file. Blank lines (only whitespace and NUL bytes) are the one exception: they yield a
warning and nothing else.

The last property checks that splitting a session's log at a process boundary (a
``session.resume``) into two files of the same session changes no count.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.engine.analyze import analyze
from tests.oracle.reference.reader import ParsedLog, read_events

SESSION = "0f3c2a8e-1b2d-4c5e-9f60-718293a4b5c6"
START = {
    "type": "session.start",
    "data": {"sessionId": SESSION, "copilotVersion": "1.0.80"},
    "id": "e1",
    "timestamp": "2026-05-01T10:00:00.000Z",
}
TURN = {
    "type": "assistant.turn_start",
    "data": {"turnId": "0"},
    "id": "e2",
    "timestamp": "2026-05-01T10:00:01.000Z",
}
END = {
    "type": "assistant.turn_end",
    "data": {"turnId": "0"},
    "id": "e3",
    "timestamp": "2026-05-01T10:00:02.000Z",
}
#: Characters Python counts as whitespace but Unicode (and so polars) does not: a line of them
#: is not blank, it is invalid JSON.
_NOT_JSON_SPACE = "\x1c\x1d\x1e\x1f"
#: UTF-8's byte order mark, which Windows tools write at the start of a file.
BOM = b"\xef\xbb\xbf"


def compact(event: dict[str, Any]) -> bytes:
    """One event the way the Copilot CLI writes it."""
    return json.dumps(event, separators=(",", ":")).encode()


def read(tmp_path: Path, content: bytes, hint: str = "hint") -> ParsedLog:
    path = tmp_path / "events.jsonl"
    path.write_bytes(content)
    return read_events(path, hint)


def issues_at(parsed: ParsedLog, severity: str) -> dict[int, list[str]]:
    """Issue messages of one severity, by line."""
    found: dict[int, list[str]] = {}
    for line, message in (
        parsed.issues.filter(pl.col("severity") == severity).select("line", "message").iter_rows()
    ):
        found.setdefault(line, []).append(message)
    return found


def event_lines(parsed: ParsedLog) -> list[int]:
    return parsed.events["source_line"].to_list()


def is_blank(line: bytes) -> bool:
    """A line the reader skips with a warning: only NUL bytes and whitespace (after a byte
    order mark opening it)."""
    text = line.removeprefix(BOM).replace(b"\x00", b"").decode("utf-8", errors="replace")
    return all(c.isspace() and c not in _NOT_JSON_SPACE for c in text)


def assert_partition(parsed: ParsedLog, content: bytes) -> None:
    """Lines 1..n: a blank line has a blank warning only; any other line exactly one of an
    event or an error issue; no event or issue names a line outside 1..n."""
    lines = content.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    events = event_lines(parsed)
    assert len(events) == len(set(events)), "a line became two events"
    errors = issues_at(parsed, "error")
    warnings = issues_at(parsed, "warning")
    for number, line in enumerate(lines, start=1):
        if is_blank(line):
            assert number not in events and number not in errors, number
            assert any("blank" in m for m in warnings.get(number, [])), number
        else:
            assert (number in events) != (number in errors), (number, line)
    assert set(events) | set(errors) | set(warnings) <= set(range(1, len(lines) + 1))


# --- literal cases -------------------------------------------------------------------------


def test_torn_last_line_is_an_error_and_the_rest_is_read(tmp_path: Path) -> None:
    content = b"\n".join([compact(START), compact(TURN), compact(END)[:37]])
    parsed = read(tmp_path, content)
    assert event_lines(parsed) == [1, 2]
    torn = parsed.issues.filter(pl.col("severity") == "error").row(0, named=True)
    assert torn["file"] == str(tmp_path / "events.jsonl")
    assert torn["line"] == 3
    assert "truncated" in torn["message"]
    assert parsed.events["session_id"].unique().to_list() == [SESSION]


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(b"\n" + b"\x00" * 300, id="nul-line"),
        pytest.param(b"\x00" * 300, id="nul-after-last-event"),
        pytest.param(b"\n" + b"\x00" * 300 + b"\n", id="nul-line-with-newline"),
    ],
)
def test_trailing_nul_bytes_after_a_crash_lose_nothing(tmp_path: Path, tail: bytes) -> None:
    content = b"\n".join([compact(START), compact(TURN), compact(END)]) + tail
    parsed = read(tmp_path, content)
    assert event_lines(parsed) == [1, 2, 3]
    assert issues_at(parsed, "error") == {}
    assert any("NUL" in m for ms in issues_at(parsed, "warning").values() for m in ms)


def test_non_utf8_bytes_keep_the_event_with_a_warning(tmp_path: Path) -> None:
    broken = compact({**TURN, "data": {"turnId": "0", "content": "cafe"}}).replace(
        b"cafe", b"caf\xe9\xff"
    )
    content = b"\n".join([compact(START), broken, compact(END)])
    parsed = read(tmp_path, content)
    assert event_lines(parsed) == [1, 2, 3]
    assert parsed.events["event_type"][1] == "assistant.turn_start"
    assert "UTF-8" in issues_at(parsed, "warning")[2][0]


def test_a_byte_order_mark_is_read_past_with_a_warning(tmp_path: Path) -> None:
    """A log saved by a Windows tool starts with a BOM; copies joined with ``cat`` carry it to
    the start of a later line. The line is still read, so the session keeps its id."""
    content = b"\n".join([BOM + compact(START), compact(TURN), BOM + compact(END), BOM])
    parsed = read(tmp_path, content)
    assert event_lines(parsed) == [1, 2, 3]
    assert parsed.events["session_id"].unique().to_list() == [SESSION]
    assert issues_at(parsed, "error") == {}
    warnings = issues_at(parsed, "warning")
    assert sorted(warnings) == [1, 3, 4]
    assert all("byte order mark" in w[0] for w in warnings.values())
    assert "blank line ignored" in warnings[4]


def test_blank_lines_are_warnings_not_events(tmp_path: Path) -> None:
    content = b"\n".join([compact(START), b"", b"   \t", compact(TURN), b"\r", compact(END)])
    parsed = read(tmp_path, content)
    assert event_lines(parsed) == [1, 4, 6]
    assert sorted(issues_at(parsed, "warning")) == [2, 3, 5]
    assert issues_at(parsed, "error") == {}


def test_a_blank_line_before_a_bad_line(tmp_path: Path) -> None:
    """Line numbers of bad lines must survive the removal of blank lines before them."""
    parsed = read(tmp_path, b"\n0\n" + compact(TURN) + b"\n\n{torn")
    assert event_lines(parsed) == [3]
    assert sorted(issues_at(parsed, "error")) == [2, 5]
    assert sorted(issues_at(parsed, "warning")) == [1, 4]


def test_unknown_event_types_are_kept_with_one_warning_per_type(tmp_path: Path) -> None:
    future = {**TURN, "type": "assistant.hologram"}
    content = b"\n".join([compact(START), compact(future), compact(TURN), compact(future)])
    parsed = read(tmp_path, content)
    assert parsed.events["event_type"].to_list() == [
        "session.start",
        "assistant.hologram",
        "assistant.turn_start",
        "assistant.hologram",
    ]
    warnings = issues_at(parsed, "warning")
    assert list(warnings) == [2]
    assert "assistant.hologram" in warnings[2][0]
    assert "2 lines" in warnings[2][0]


@pytest.mark.parametrize(
    ("event", "kept", "severity", "words"),
    [
        pytest.param(
            {"data": {}, "id": "x", "timestamp": START["timestamp"]},
            False,
            "error",
            "type",
            id="no-type",
        ),
        pytest.param(
            {"type": "user.message", "data": {}}, True, "warning", "timestamp", id="no-timestamp"
        ),
        pytest.param(
            {**TURN, "timestamp": "yesterday"}, True, "warning", "timestamp", id="bad-timestamp"
        ),
        pytest.param(
            {**TURN, "data": {"model": {"id": "gpt"}}},
            True,
            "warning",
            "data.model",
            id="object-for-string",
        ),
        pytest.param({**TURN, "data": ["a", "b"]}, True, "warning", "data", id="list-for-data"),
        pytest.param({**TURN, "type": {"nested": 1}}, False, "error", "type", id="object-for-type"),
        pytest.param([1, 2, 3], False, "error", "not a JSON object", id="array"),
        pytest.param("just text", False, "error", "not a JSON object", id="string"),
    ],
)
def test_missing_and_odd_fields(
    tmp_path: Path, event: Any, kept: bool, severity: str, words: str
) -> None:
    content = b"\n".join([compact(START), json.dumps(event).encode(), compact(END)])
    parsed = read(tmp_path, content)
    assert event_lines(parsed) == ([1, 2, 3] if kept else [1, 3])
    messages = issues_at(parsed, severity).get(2, [])
    assert any(words in m for m in messages), messages
    if kept:
        assert issues_at(parsed, "error") == {}


def test_timestamp_missing_is_null_not_invented(tmp_path: Path) -> None:
    parsed = read(tmp_path, compact({"type": "user.message", "data": {"content": "hi"}}))
    assert parsed.events["timestamp"].to_list() == [None]


def test_empty_file_yields_nothing_and_no_error(tmp_path: Path) -> None:
    parsed = read(tmp_path, b"")
    assert parsed.events.height == 0
    assert issues_at(parsed, "error") == {}


def test_spaced_json_reads_like_compact_json(tmp_path: Path) -> None:
    """R2 was re-serialised with ``", "`` and ``": "``; the reader must not care."""
    events = [START, TURN, END]
    compact_log = read(tmp_path, b"\n".join(compact(e) for e in events))
    spaced_log = read(tmp_path, "\n".join(json.dumps(e) for e in events).encode())
    assert b'", "' in json.dumps(START).encode()
    # Only where the lines start differs (the spaced lines are longer).
    assert compact_log.events.drop("byte_offset").equals(spaced_log.events.drop("byte_offset"))


@pytest.mark.parametrize(
    ("first", "session"),
    [(START, SESSION), (TURN, "from-the-file-name")],
    ids=["session.start", "no-session.start"],
)
def test_session_id_from_session_start_else_the_hint(
    tmp_path: Path, first: dict[str, Any], session: str
) -> None:
    parsed = read(tmp_path, compact(first) + b"\n" + compact(END), hint="from-the-file-name")
    assert parsed.events["session_id"].unique().to_list() == [session]


def test_crlf_line_endings(tmp_path: Path) -> None:
    parsed = read(tmp_path, b"\r\n".join([compact(START), compact(TURN), compact(END)]) + b"\r\n")
    assert event_lines(parsed) == [1, 2, 3]
    assert parsed.issues.height == 0


# --- properties ----------------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n"),
    max_size=40,
)
_EVENT = st.fixed_dictionaries(
    {"type": st.sampled_from(["session.start", "user.message", "assistant.turn_start", "x.y"])},
    optional={
        "data": st.dictionaries(
            st.sampled_from(["turnId", "model", "content"]), _TEXT | st.integers()
        ),
        "timestamp": st.sampled_from(["2026-05-01T10:00:00.000Z", "2026-05-01", "", "garbage"]),
        "agentId": _TEXT,
    },
)
_LINE = st.one_of(
    _EVENT.map(json.dumps),
    _EVENT.map(lambda e: json.dumps(e)[: len(json.dumps(e)) // 2]),
    _TEXT,
    st.sampled_from(["", " ", "\t", "\r", "\x00\x00", "[]", "null", "{}", '{"type":null}']),
)
_FILE_SETTINGS = settings(
    max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_FILE_SETTINGS
@given(lines=st.lists(_LINE, max_size=12), final_newline=st.booleans())
def test_every_line_is_one_event_or_one_error(
    tmp_path: Path, lines: list[str], final_newline: bool
) -> None:
    content = "\n".join(lines).encode() + (b"\n" if final_newline and lines else b"")
    assert_partition(read(tmp_path, content), content)


@_FILE_SETTINGS
@given(content=st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(tmp_path: Path, content: bytes) -> None:
    assert_partition(read(tmp_path, content), content)


def mutate(data: bytes, seed: int) -> bytes:
    """A crash- or disk-damaged copy: truncated, NULs inserted, or bytes flipped."""
    rng = random.Random(seed)
    mutated = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        what = rng.choice(["truncate", "nul", "flip"])
        at = rng.randrange(len(mutated) + 1)
        if what == "truncate":
            del mutated[at:]
        elif what == "nul":
            mutated[at:at] = b"\x00" * rng.randint(1, 64)
        elif mutated:
            mutated[min(at, len(mutated) - 1)] ^= 1 << rng.randrange(8)
    return bytes(mutated)


@_FILE_SETTINGS
@given(seed=st.integers(0, 2**32), start=st.integers(0, 30))
def test_damaged_real_lines_never_raise(
    tmp_path: Path, real_logs: Path, seed: int, start: int
) -> None:
    lines = (real_logs / "qiaolei81-session-demo" / "events.jsonl").read_bytes().split(b"\n")
    content = mutate(b"\n".join(lines[start : start + 4]), seed)
    assert_partition(read(tmp_path, content), content)


# --- a session split at a process boundary counts the same ---------------------------------


def _event(kind: str, second: int, data: dict[str, Any] | None = None, **envelope: Any) -> str:
    stamp = f"2026-05-01T10:{second // 60:02d}:{second % 60:02d}.000Z"
    return json.dumps(
        {"type": kind, "data": data or {}, "id": f"e{second}", "timestamp": stamp, **envelope},
        separators=(",", ":"),
    )


def _shutdown(second: int, opus: tuple[int, int], haiku: tuple[int, int]) -> str:
    def metrics(requests: int, output: int) -> dict[str, Any]:
        usage = {"inputTokens": 1000 * requests, "outputTokens": output}
        return {"requests": {"count": requests, "cost": 1}, "usage": usage}

    return _event(
        "session.shutdown",
        second,
        {
            "shutdownType": "routine",
            "totalNanoAiu": 1_000_000 * second,
            "modelMetrics": {"claude-opus": metrics(*opus), "claude-haiku": metrics(*haiku)},
        },
    )


def multi_process_log(version: str, cumulative: bool) -> list[str]:
    """Three processes: main calls, a sub-agent call, an interrupted call, three shutdowns."""
    first, second = ((1, 10), (0, 0)), ((2, 30), (1, 5))
    later = ((3, 30), (1, 5)) if cumulative else ((1, 0), (0, 0))
    if not cumulative:
        second = ((1, 20), (1, 5))
    sub = {"agentId": "agent-1"}
    return [
        _event("session.start", 0, {"sessionId": SESSION, "copilotVersion": version}),
        _event("user.message", 1, {"content": "go"}),
        _event("assistant.turn_start", 2, {"turnId": "0", "model": "claude-opus"}),
        _event("assistant.message", 3, {"content": "ok", "outputTokens": 10}),
        _event("assistant.turn_end", 4, {"turnId": "0"}),
        _shutdown(5, *first),
        _event("session.resume", 60, {}),
        _event("user.message", 61, {"content": "more"}),
        _event("assistant.turn_start", 62, {"turnId": "0", "model": "claude-opus"}),
        _event(
            "subagent.started",
            63,
            {"toolCallId": "t1", "agentName": "explore", "model": "claude-haiku"},
        ),
        _event(
            "assistant.message",
            64,
            {"content": "x", "outputTokens": 5, "parentToolCallId": "t1"},
            **sub,
        ),
        _event("assistant.message", 65, {"content": "done", "outputTokens": 20}),
        _event("assistant.turn_end", 66, {"turnId": "0"}),
        _shutdown(67, *second),
        _event("session.resume", 120, {}),
        _event("assistant.turn_start", 121, {"turnId": "0", "model": "claude-opus"}),
        *([] if cumulative else [_event("assistant.turn_end", 122, {"turnId": "0"})]),
        _shutdown(123, *later),
        _event("session.resume", 180, {}),
        _event("assistant.turn_start", 181, {"turnId": "0", "model": "claude-opus"}),
    ]


_COUNTS = [
    "llm_calls",
    "main_calls",
    "subagent_calls",
    "interrupted_calls",
    "processes",
    "shutdowns",
    "shutdown_mode",
    "shutdown_requests",
    "calls_agree",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "billed_nano_aiu",
]


def _counts(root: Path) -> dict[str, Any]:
    result = analyze([root])
    assert result.sessions.height == 1
    return result.session_view.select(_COUNTS).row(0, named=True)


def _split_cases() -> list[Any]:
    cases = []
    for name, version, cumulative in [
        ("cumulative", "1.0.80", True),
        ("per-process", "1.0.40", False),
    ]:
        log = multi_process_log(version, cumulative)
        for at in (i for i, line in enumerate(log) if '"session.resume"' in line):
            for flat_first in (False, True):
                order = "flat-first" if flat_first else "dir-first"
                cases.append(pytest.param(log, at, flat_first, id=f"{name}-line{at + 1}-{order}"))
    return cases


def _write_split(root: Path, name: str, lines: list[str], at: int, flat_first: bool) -> None:
    state = root / "session-state"
    (state / name).mkdir(parents=True)
    dir_part, flat_part = (lines[at:], lines[:at]) if flat_first else (lines[:at], lines[at:])
    (state / name / "events.jsonl").write_text("\n".join(dir_part) + "\n")
    (state / f"{name}.jsonl").write_text("\n".join(flat_part) + "\n")


@pytest.mark.parametrize(("log", "at", "flat_first"), _split_cases())
def test_split_at_a_resume_counts_the_same(
    tmp_path: Path, log: list[str], at: int, flat_first: bool
) -> None:
    whole = tmp_path / "whole" / SESSION
    whole.mkdir(parents=True)
    (whole / "events.jsonl").write_text("\n".join(log) + "\n")
    _write_split(tmp_path / "split", SESSION, log, at, flat_first)
    expected = _counts(whole)
    assert expected["llm_calls"] >= 4 and expected["processes"] == 4
    assert _counts(tmp_path / "split") == expected


def test_real_multi_process_log_split_at_each_resume(tmp_path: Path, real_logs: Path) -> None:
    source = real_logs / "aiusage-core-session-store-1.0.80"
    lines = (source / "events.jsonl").read_text().splitlines()
    expected = _counts(source)
    resumes = [i for i, line in enumerate(lines) if '"session.resume"' in line]
    assert len(resumes) == 2
    for at in resumes:
        _write_split(tmp_path / f"at{at}", source.name, lines, at, flat_first=False)
        assert _counts(tmp_path / f"at{at}") == expected, at
