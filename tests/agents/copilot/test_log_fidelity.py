"""What real logs taught us (schema doc §0b), each rule on literal lines, then as properties.

Literal tests write a small ``events.jsonl`` and check one rule: ``session.usage_record`` as
the first observed source of a call's tokens and bill, failed calls, ``/rewind``, several
sessions in one file, repeated lines, bring-your-own-key sessions, and lines missing before a
shutdown. The hypothesis properties take real and sample logs and change them the way copies,
recorders and rate limits do: every line written twice, two sessions' logs concatenated, a
failed turn added. Only the expected figure may move.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.agents.copilot.call_tokens import call_tokens_and_fit
from analytics.core.schema import MODEL_METRICS, OBSERVED_USAGE, empty, padded
from analytics.engine.analyze import Analysis, analyze
from tests.conftest import REAL_LOGS, SAMPLE_LOGS
from tests.oracle.reference.calls import build_calls
from tests.oracle.reference.events import drop_repeats, order_events
from tests.oracle.reference.reader import read_events
from tests.oracle.reference.sessions import summarize_sessions

T0 = datetime(2026, 10, 9, 11, 0, tzinfo=UTC)
SESSION = "e8a4dab4-dec8-475f-8075-ad4f64589673"
OTHER = "4112bd2a-52ec-4e01-8f44-61cdf1a2b3c4"


class Log:
    """Builds a log line by line: each event gets a unique id and a time one second later."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def add(self, kind: str, data: dict[str, Any] | None = None, **envelope: Any) -> Log:
        n = len(self.lines)
        stamp = (T0 + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
        self.lines.append(
            {"type": kind, "data": data or {}, "id": f"ev-{n}", "timestamp": stamp, **envelope}
        )
        return self

    def start(self, session: str = SESSION, version: str = "1.0.94") -> Log:
        return self.add(
            "session.start",
            {"sessionId": session, "copilotVersion": version, "selectedModel": "gpt-5-mini"},
        )

    def turn(self, output: int = 10, *, record: dict[str, Any] | None = None) -> Log:
        self.add("assistant.turn_start", {"turnId": "0"})
        if record is not None:
            self.add("session.usage_record", {"usage": record})
        self.add("assistant.message", {"content": "ok", "outputTokens": output})
        return self.add("assistant.turn_end", {"turnId": "0"})

    def shutdown(self, requests: int, nano: int = 0, **data: Any) -> Log:
        usage = {"inputTokens": 1000 * requests, "outputTokens": 10 * requests}
        metrics = {"gpt-5-mini": {"requests": {"count": requests, "cost": 1}, "usage": usage}}
        return self.add(
            "session.shutdown",
            {"shutdownType": "routine", "totalNanoAiu": nano, "modelMetrics": metrics, **data},
        )

    def text(self) -> bytes:
        return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in self.lines)

    def write(self, folder: Path) -> Path:
        path = folder / "events.jsonl"
        path.write_bytes(self.text())
        return path


def record(usage_id: str, **fields: Any) -> dict[str, Any]:
    """A ``data.usage`` object as CLI 1.0.94 writes it (the fields agentcost reads)."""
    details = [
        {"tokenType": kind, "tokenCount": count, "costPerBatch": price, "batchSize": 1_000_000}
        for kind, count, price in (
            ("input", 4, 200_000_000_000),
            ("cache_write", 25_717, 250_000_000_000),
            ("output", 60, 1_000_000_000_000),
        )
    ]
    return {
        "model": "claude-sonnet-5.5",
        "inputTokens": 25_721,
        "outputTokens": 60,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 25_717,
        "reasoningTokens": 0,
        "initiator": "user",
        "interactionType": "conversation-agent",
        "isByok": False,
        "apiCallId": f"msg_{usage_id}",
        "duration": 1415,
        "provider": {"id": "copilot"},
        "accounting": {"sourceSessionId": SESSION, "sequence": 1, "usageId": usage_id},
        "copilotUsage": {"tokenDetails": details, "totalNanoAiu": 6_490_050_000},
        **fields,
    }


def one(result: Analysis) -> dict[str, Any]:
    assert result.sessions.height == 1
    return result.session_view.row(0, named=True)


def messages(result: Analysis) -> list[str]:
    return result.issues["message"].to_list()


# --- 1. session.usage_record -----------------------------------------------------------------


def test_a_usage_record_gives_its_call_observed_tokens_and_the_session_its_bill(
    tmp_path: Path,
) -> None:
    """The 1.0.94 shape: shutdown and checkpoint emptied, so the record is all there is."""
    log = Log().start().turn(record=record("u1"))
    log.add("session.usage_checkpoint").add("session.shutdown")
    result = analyze([log.write(tmp_path)])
    call = result.call_view.row(0, named=True)
    assert (call["token_source"], call["input_tokens"], call["output_tokens"]) == (
        "observed",
        25_721,
        10,  # the message's own outputTokens first; the record's 60 where the message has none
    )
    assert (call["cache_write_tokens"], call["billed_nano_aiu"]) == (25_717, "6490050000")
    row = one(result)
    assert row["billed_nano_aiu"] == "6490050000"
    assert (row["token_totals_source"], row["input_tokens"]) == ("usage_records", 25_721)
    assert not any("unknown event type" in m for m in messages(result))


def test_usage_records_are_taken_once_by_usage_id(tmp_path: Path) -> None:
    log = Log().start()
    log.add("assistant.turn_start", {"turnId": "0"})
    log.add("session.usage_record", {"usage": record("u1")})
    log.add("session.usage_record", {"usage": record("u1")})  # the same call, written again
    log.add("assistant.message", {"content": "ok"}).add("assistant.turn_end", {"turnId": "0"})
    result = analyze([log.write(tmp_path)])
    assert one(result)["billed_nano_aiu"] == "6490050000"
    assert result.calls["output_tokens"].to_list() == [60]
    (issue,) = result.issues.rows(named=True)
    assert (issue["line"], issue["message"][:32]) == (4, "1 line repeats an earlier event ")


def test_sub_agent_usage_records_are_the_sub_agent_calls(tmp_path: Path) -> None:
    sub = {"initiator": "sub-agent", "interactionType": "conversation-subagent"}
    log = Log().start()
    log.add("assistant.turn_start", {"turnId": "0"})
    log.add("session.usage_record", {"usage": record("main")})
    log.add("assistant.message", {"content": "ok", "toolRequests": [{"name": "task"}]})
    for n in range(3):
        log.add("session.usage_record", {"usage": record(f"s{n}", **sub)}, agentId="agent-1")
    log.add("assistant.message", {"content": "sub", "parentToolCallId": "t1"}, agentId="agent-1")
    log.add("assistant.turn_end", {"turnId": "0"})
    result = analyze([log.write(tmp_path)])
    kinds = result.calls["kind"].to_list()
    assert kinds == ["main", "subagent", "subagent", "subagent"]
    assert set(result.calls["token_source"]) == {"observed"}
    assert one(result)["billed_nano_aiu"] == str(4 * 6_490_050_000)


# --- 2. failed calls ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ending",
    [
        [("session.error", {"errorType": "rate_limit", "message": "rate limited after retries"})],
        [("abort", {"reason": "user"})],
        [],  # the shutdown right after the turn_start ends it (a real 1.0.77 shape)
    ],
    ids=["session-error", "abort", "shutdown"],
)
def test_a_turn_without_an_answer_that_ended_is_a_failed_call(
    tmp_path: Path, ending: list[tuple[str, dict[str, Any]]]
) -> None:
    log = Log().start().turn()
    log.add("assistant.turn_start", {"turnId": "1"})
    for kind, data in ending:
        log.add(kind, data)
    log.shutdown(1)
    row = one(analyze([log.write(tmp_path)]))
    assert (row["llm_calls"], row["failed_calls"]) == (1, 1)
    assert (row["shutdown_requests"], row["calls_agree"]) == (1, True)


def test_an_unanswered_turn_cut_off_by_a_crash_stays_an_interrupted_call(tmp_path: Path) -> None:
    """No shutdown, no error: whether it was billed is unknown, so it is not called failed."""
    log = Log().start().turn()
    log.add("assistant.turn_start", {"turnId": "1"})
    row = one(analyze([log.write(tmp_path)]))
    assert (row["llm_calls"], row["failed_calls"], row["interrupted_calls"]) == (2, 0, 1)


def test_an_empty_model_metrics_is_zero_requests_not_unknown(tmp_path: Path) -> None:
    log = Log().start()
    log.add("assistant.turn_start", {"turnId": "0"})
    log.add("session.shutdown", {"shutdownType": "routine", "totalNanoAiu": 0, "modelMetrics": {}})
    row = one(analyze([log.write(tmp_path)]))
    assert (row["shutdown_requests"], row["llm_calls"], row["failed_calls"]) == (0, 0, 1)
    assert (row["calls_agree"], row["input_tokens"], row["byok"]) == (True, 0, False)


# --- 4. rewinds --------------------------------------------------------------------------------


def test_a_rewind_names_the_calls_the_shutdown_leaves_out(tmp_path: Path) -> None:
    log = Log().start().turn().turn()
    log.add("session.info", {"infoType": "rewind", "message": "Rewound to before turn 2"})
    log.turn().shutdown(1)
    result = analyze([log.write(tmp_path)])
    row = one(result)
    assert (row["llm_calls"], row["shutdown_requests"], row["calls_delta"]) == (3, 1, 2)
    assert (row["rewinds"], row["calls_agree"]) == (1, False)
    assert row["calls_delta_reason"].startswith("/rewind")
    assert row["status_detail"].startswith("/rewind")
    (issue,) = [m for m in messages(result) if m.startswith("/rewind")]
    assert "2 calls made before it" in issue
    assert result.issues.filter(pl.col("message") == issue)["line"].to_list() == [8]


# --- 5. several sessions in one file; repeated lines -------------------------------------------


def test_each_session_start_in_a_file_begins_a_session_of_its_own(tmp_path: Path) -> None:
    log = Log().start(SESSION).turn().shutdown(1, nano=7)
    log.start(OTHER).turn().turn().shutdown(2, nano=11)
    result = analyze([log.write(tmp_path)])
    rows = {r["session_id"]: r for r in result.session_view.iter_rows(named=True)}
    assert set(rows) == {SESSION, OTHER}
    assert (rows[SESSION]["llm_calls"], rows[SESSION]["billed_nano_aiu"]) == (1, "7")
    assert (rows[OTHER]["llm_calls"], rows[OTHER]["billed_nano_aiu"]) == (2, "11")
    assert rows[OTHER]["calls_agree"] and rows[SESSION]["calls_agree"]
    assert rows[OTHER]["processes"] == rows[SESSION]["processes"] == 1


def test_a_log_copied_onto_itself_is_analysed_once_and_reported_once(tmp_path: Path) -> None:
    log = Log().start().turn().turn().shutdown(2, nano=5)
    once = _analyse_bytes(tmp_path, "once", log.text())
    twice = _analyse_bytes(tmp_path, "twice", log.text() * 2)
    assert twice.session_view.drop("source_files").equals(once.session_view.drop("source_files"))
    (issue,) = twice.issues.rows(named=True)
    assert (issue["line"], issue["severity"]) == (len(log.lines) + 1, "warning")
    assert issue["message"].startswith(f"{len(log.lines)} lines repeat earlier events")


def test_a_log_of_two_sessions_copied_onto_itself_keeps_each_copy_in_its_session(
    tmp_path: Path,
) -> None:
    """The copy of the first session's start sends the lines after it back to that session,
    where each is a repeat; they must not become more calls of the second."""
    log = Log().start(SESSION).turn().shutdown(1, nano=7)
    log.start(OTHER).turn().turn().shutdown(2, nano=11)
    once = _analyse_bytes(tmp_path, "once", log.text())
    twice = _analyse_bytes(tmp_path, "twice", log.text() * 2)
    assert twice.session_view.drop("source_files").equals(once.session_view.drop("source_files"))
    assert twice.calls.drop("source_file").equals(once.calls.drop("source_file"))
    (issue,) = twice.issues.rows(named=True)
    assert issue["message"].startswith(f"{len(log.lines)} lines repeat earlier events")


# --- 6. bring your own key ---------------------------------------------------------------------


def test_tokens_with_a_zero_bill_mark_a_byok_session(tmp_path: Path) -> None:
    result = analyze([Log().start().turn().turn().shutdown(2, nano=0).write(tmp_path)])
    row = one(result)
    assert (row["byok"], row["billed_nano_aiu"], row["input_tokens"]) == (True, "0", 2000)
    assert result.calls["is_byok"].to_list() == [True, True]


def test_a_byok_usage_record_marks_the_session(tmp_path: Path) -> None:
    log = Log().start().turn(record=record("u1", isByok=True, provider={"id": "ollama"}))
    result = analyze([log.write(tmp_path)])
    assert one(result)["byok"] is True
    assert result.calls["is_byok"].to_list() == [True]


# --- lines missing before a shutdown ----------------------------------------------------------


def test_a_shutdown_that_stood_further_into_the_file_shows_missing_lines(tmp_path: Path) -> None:
    log = Log().start().turn()
    log.shutdown(3, eventsFileSizeBytes=10**6)
    result = analyze([log.write(tmp_path)])
    row = one(result)
    assert (row["calls_delta"], row["calls_delta_reason"][:26]) == (
        -2,
        "lines missing from the log",
    )
    assert any("bytes of the session's log are missing" in m for m in messages(result))


def test_a_shutdown_at_its_stated_size_is_no_gap(tmp_path: Path) -> None:
    log = Log().start().turn()
    offset = len(log.text())
    log.shutdown(1, eventsFileSizeBytes=offset)
    result = analyze([log.write(tmp_path)])
    assert result.issues.height == 0
    assert one(result)["calls_delta_reason"] is None


# --- properties over real and sample logs ------------------------------------------------------


def _base_logs() -> list[Path]:
    """Clean single-session logs that begin with a ``session.start`` naming their session and
    have turns: the ones every property below can change meaningfully."""
    found = sorted(SAMPLE_LOGS.rglob("events.jsonl"))
    if REAL_LOGS.is_dir():
        found += sorted(REAL_LOGS.rglob("*.jsonl"))
    usable = []
    for path in found:
        try:
            events = [json.loads(line) for line in lines_of(path)]
        except ValueError:  # logs with damaged lines are the bad-input tests' business
            continue
        kinds = [event.get("type") for event in events]
        one_session = (
            kinds[:1] == ["session.start"]
            and kinds.count("session.start") == 1
            and bool(events[0].get("data", {}).get("sessionId"))
        )
        if one_session and "assistant.turn_end" in kinds:
            usable.append(path)
    return usable


def lines_of(path: Path) -> list[bytes]:
    """A log's lines, each with its newline (only ``\\n`` ends a JSONL line)."""
    return [line + b"\n" for line in path.read_bytes().split(b"\n") if line]


BASES = _base_logs()
_PROPERTY = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def figures(result: Analysis) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Sessions and calls without where they came from (files, lines, event order)."""
    provenance = ["source_file", "source_line", "event_seq"]
    return (
        result.session_view.drop("source_files").sort("session_id"),
        result.calls.drop(provenance).sort("session_id", "call_index"),
    )


def assert_same(left: Analysis, right: Analysis) -> None:
    for a, b in zip(figures(left), figures(right), strict=True):
        assert a.equals(b)


def _analyse_bytes(folder: Path, name: str, data: bytes) -> Analysis:
    target = folder / name
    target.mkdir(parents=True)
    (target / "events.jsonl").write_bytes(data)
    return analyze([target / "events.jsonl"])


@pytest.mark.skipif(not BASES, reason="no sample or real logs to build on")
@_PROPERTY
@given(
    base=st.sampled_from(BASES or [Path()]),
    pattern=st.sampled_from(["whole-copy", "each-line"]),
)
def test_writing_every_line_twice_changes_no_figure(
    tmp_path_factory: pytest.TempPathFactory, base: Path, pattern: str
) -> None:
    folder = tmp_path_factory.mktemp("twice")
    lines = lines_of(base)
    if pattern == "whole-copy":
        doubled = b"".join(lines) * 2
    else:
        doubled = b"".join(line + line for line in lines)
    once = _analyse_bytes(folder, "once", b"".join(lines))
    twice = _analyse_bytes(folder, "twice", doubled)
    assert_same(once, twice)
    added = twice.issues.join(
        once.issues.with_columns(pl.col("file").str.replace("/once/", "/twice/", literal=True)),
        on=["file", "message"],
        how="anti",
    )
    assert added.height == 1
    assert "lines repeat earlier events" in added["message"][0]


@pytest.mark.skipif(len(BASES) < 2, reason="needs two logs of different sessions")
@_PROPERTY
@given(pair=st.permutations(BASES).map(lambda p: p[:2]))
def test_two_sessions_in_one_file_give_their_separate_results(
    tmp_path_factory: pytest.TempPathFactory, pair: list[Path]
) -> None:
    folder = tmp_path_factory.mktemp("concat")
    first, second = (p.read_bytes() for p in pair)
    separate = [_analyse_bytes(folder, f"part{n}", text) for n, text in enumerate((first, second))]
    joined = _analyse_bytes(folder, "joined", first + second)
    sessions = pl.concat([figures(r)[0] for r in separate]).sort("session_id")
    calls = pl.concat([figures(r)[1] for r in separate]).sort("session_id", "call_index")
    assert figures(joined)[0].drop("processes").equals(sessions.drop("processes"))
    assert figures(joined)[1].equals(calls)


@pytest.mark.skipif(not BASES, reason="no sample or real logs to build on")
@_PROPERTY
@given(base=st.sampled_from(BASES or [Path()]), data=st.data())
def test_a_failed_turn_raises_failed_calls_by_one_and_nothing_else(
    tmp_path_factory: pytest.TempPathFactory, base: Path, data: st.DataObject
) -> None:
    folder = tmp_path_factory.mktemp("failed")
    lines = lines_of(base)
    ends = [
        n
        for n, line in enumerate(lines[:-1])
        if json.loads(line).get("type") == "assistant.turn_end"
        and not json.loads(line).get("agentId")
    ]
    at = data.draw(st.sampled_from(ends))
    stamp = json.loads(lines[at])["timestamp"]
    failed = [
        {"type": "assistant.turn_start", "data": {"turnId": "x"}, "id": "failed-1"},
        {
            "type": "session.error",
            "data": {"errorType": "rate_limit", "message": "429 after retries"},
            "id": "failed-2",
        },
    ]
    extra = b"".join(
        json.dumps({**e, "timestamp": stamp}, separators=(",", ":")).encode() + b"\n"
        for e in failed
    )
    before = _analyse_bytes(folder, "before", b"".join(lines))
    # As the CLI would have written it: later shutdowns state a file longer by the new lines.
    later = _grown(lines[at + 1 :], len(extra))
    after = _analyse_bytes(folder, "after", b"".join([*lines[: at + 1], extra, *later]))
    old, new = (figures(r)[0] for r in (before, after))
    assert (new["failed_calls"] - old["failed_calls"]).to_list() == [1]
    assert new.drop("failed_calls").equals(old.drop("failed_calls"))
    assert figures(after)[1].equals(figures(before)[1])


def test_a_usage_record_and_a_store_row_that_disagree_are_reported(tmp_path: Path) -> None:
    """The log's record is the first source; a session-store row for the same call that gives
    other figures is named, not silently preferred or dropped."""
    log = Log().start().turn(record=record("u1"))
    events, _ = drop_repeats(order_events(read_events(log.write(tmp_path), "hint").events))
    calls, _ = build_calls(events)
    sessions = summarize_sessions(events, calls, empty(MODEL_METRICS))
    row = {"source_file": "session-store.db", "session_id": SESSION, "input_tokens": 25_700}
    store = padded(pl.DataFrame([row]), OBSERVED_USAGE)
    priced, issues, _ = call_tokens_and_fit(calls, events, sessions, empty(MODEL_METRICS), store)
    assert priced["input_tokens"].to_list() == [25_721]
    (issue,) = issues.rows(named=True)
    assert issue["line"] == 2  # the call's turn_start
    assert "input 25721 vs 25700" in issue["message"]


def _grown(lines: list[bytes], extra: int) -> list[bytes]:
    """``lines`` after ``extra`` new bytes before them: each ``eventsFileSizeBytes`` grows by
    the bytes now in front of its line (the new ones, and digits earlier sizes gained)."""
    grown: list[bytes] = []
    for line in lines:
        match = _SIZE.search(line)
        if not match:
            grown.append(line)
            continue
        wider = str(int(match[1]) + extra).encode()
        extra += len(wider) - len(match[1])
        grown.append(line[: match.start(1)] + wider + line[match.end(1) :])
    return grown


_SIZE = re.compile(rb'"eventsFileSizeBytes"\s*:\s*(\d+)')
