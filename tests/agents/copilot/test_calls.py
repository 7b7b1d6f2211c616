"""Counting LLM calls (``calls.build_calls``) on literal EVENTS frames.

Each case is a short event sequence, written as (event_type, fields) rows in log order, and the
calls it must yield. The rules come from ``calls.py``: main calls are main-agent turn starts;
sub-agent calls are sub-agent messages (or ``assistant.usage`` in SDK captures) deduplicated by
``apiCallId``; compactions are their own calls; orphan turn ends are issues, never calls.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import pytest

from analytics.core.schema import CALLS, EVENTS, ISSUES, padded
from tests.oracle.reference.calls import build_calls
from tests.oracle.reference.events import order_events

Row = tuple[str, dict[str, Any]]
T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)

START: Row = ("session.start", {"model": "claude-sonnet-4.6", "copilot_version": "1.0.80"})
USER: Row = ("user.message", {})
NUDGE: Row = ("user.message", {"is_autopilot": True})
TURN: Row = ("assistant.turn_start", {})
END: Row = ("assistant.turn_end", {})
RESUME: Row = ("session.resume", {})


def msg(**fields: Any) -> Row:
    return ("assistant.message", fields)


def sub(agent: str = "tool-1", **fields: Any) -> Row:
    """A sub-agent message as the CLI writes it: envelope agentId and data.parentToolCallId."""
    return ("assistant.message", {"agent_id": agent, "parent_tool_call_id": agent, **fields})


def started(tool_call: str = "tool-1", name: str = "explore", **fields: Any) -> Row:
    return ("subagent.started", {"tool_call_id": tool_call, "tool_name": name, **fields})


def usage(initiator: str | None, **fields: Any) -> Row:
    return ("assistant.usage", {"initiator": initiator, **fields})


def events(*rows: Row, session: str = "s1", file: str = "/logs/s1/events.jsonl") -> pl.DataFrame:
    """Ordered EVENTS for rows in log order, one second apart, lines numbered from 1."""
    frame = pl.DataFrame(
        [
            {
                "source_file": file,
                "source_line": line,
                "session_id": session,
                "timestamp": T0 + timedelta(seconds=line),
                "event_type": kind,
                "is_autopilot": False,
                **fields,
            }
            for line, (kind, fields) in enumerate(rows, start=1)
        ],
        infer_schema_length=None,
    )
    return order_events(padded(frame, EVENTS))


def calls_of(*rows: Row) -> pl.DataFrame:
    calls, _ = build_calls(events(*rows))
    return calls


def column(frame: pl.DataFrame, name: str) -> list[Any]:
    return frame[name].to_list()


@pytest.mark.parametrize(
    ("rows", "kinds", "lines"),
    [
        ([START, USER, TURN, msg(), END], ["main"], [3]),
        ([START, USER, TURN, END, TURN, END, TURN, END], ["main"] * 3, [3, 5, 7]),
        ([START, USER, TURN, msg(), msg(), msg(), END], ["main"], [3]),
        # a turn start carrying a sub-agent id is not a main call; its message is the call
        ([START, ("assistant.turn_start", {"agent_id": "a"}), sub("a")], ["subagent"], [3]),
        (
            [START, USER, TURN, started(), sub(), sub(), msg(), END],
            ["main", "subagent", "subagent"],
            [3, 5, 6],
        ),
        # parentToolCallId alone (no envelope agentId) marks a sub-agent message too
        (
            [START, TURN, ("assistant.message", {"parent_tool_call_id": "t9"}), END],
            ["main", "subagent"],
            [2, 3],
        ),
        (
            [
                START,
                USER,
                TURN,
                END,
                ("session.compaction_start", {}),
                ("session.compaction_complete", {}),
            ],
            ["main", "compaction"],
            [3, 6],
        ),
        ([START, USER], [], []),
    ],
    ids=[
        "one-turn",
        "three-turns",
        "messages-are-not-calls",
        "subagent-turn-start",
        "subagent-messages",
        "parent-tool-call-only",
        "compaction",
        "no-calls",
    ],
)
def test_what_counts_as_a_call(rows: list[Row], kinds: list[str], lines: list[int]) -> None:
    calls = calls_of(*rows)
    assert column(calls, "kind") == kinds
    assert column(calls, "source_line") == lines
    assert column(calls, "call_index") == list(range(1, len(kinds) + 1))
    assert calls.schema == pl.Schema(CALLS)


@pytest.mark.parametrize(
    ("rows", "interrupted", "orphan_lines"),
    [
        ([START, TURN, END], [False], []),
        ([START, TURN], [True], []),
        ([START, TURN, TURN, END], [True, False], []),
        ([START, END, TURN, END], [False], [2]),
        ([START, TURN, END, END], [False], [4]),
        # a turn cut off by a crash is not closed by the next process's end
        ([START, TURN, RESUME, END, TURN, END], [True, False], [4]),
    ],
    ids=[
        "closed",
        "never-ended",
        "first-of-two-starts",
        "end-before-any-start",
        "second-end",
        "end-in-next-process",
    ],
)
def test_interrupted_calls_and_orphan_ends(
    rows: list[Row], interrupted: list[bool], orphan_lines: list[int]
) -> None:
    calls, issues = build_calls(events(*rows))
    assert column(calls, "interrupted") == interrupted
    assert [end is None for end in column(calls, "end_time")] == interrupted
    assert issues.schema == pl.Schema(ISSUES)
    assert column(issues, "line") == orphan_lines
    assert set(column(issues, "severity")) <= {"warning"}
    assert set(column(issues, "file")) <= {"/logs/s1/events.jsonl"}
    assert all("turn_end" in m for m in column(issues, "message"))


def test_a_closed_call_spans_start_to_end() -> None:
    calls = calls_of(START, TURN, msg(output_tokens=7), END)
    assert column(calls, "start_time") == [T0 + timedelta(seconds=2)]
    assert column(calls, "end_time") == [T0 + timedelta(seconds=4)]


@pytest.mark.parametrize(
    ("rows", "lines"),
    [
        (
            [START, TURN, sub(api_call_id="r1"), sub(api_call_id="r1"), sub(api_call_id="r2"), END],
            [2, 3, 5],
        ),
        ([START, TURN, sub(api_call_id=None), sub(api_call_id=None), END], [2, 3, 4]),
        # the same id under two different sub-agents is two calls
        ([START, TURN, sub("a", api_call_id="r1"), sub("b", api_call_id="r1"), END], [2, 3, 4]),
    ],
    ids=["chunks-share-an-id", "no-ids", "same-id-two-agents"],
)
def test_subagent_messages_deduplicated_by_api_call_id(rows: list[Row], lines: list[int]) -> None:
    assert column(calls_of(*rows), "source_line") == lines


def test_subagent_calls_attributed_to_the_agent_that_started_them() -> None:
    calls = calls_of(
        START,
        TURN,
        started("tool-1", "explore", model="claude-haiku-4.5"),
        started("tool-2", "task", agent_id="agent-2", model="gpt-5-mini"),
        sub("tool-1"),
        ("assistant.message", {"agent_id": "agent-2"}),
        sub("tool-1", model="claude-opus"),
        END,
    ).filter(pl.col("kind") == "subagent")
    assert column(calls, "agent_name") == ["explore", "task", "explore"]
    assert column(calls, "model") == ["claude-haiku-4.5", "gpt-5-mini", "claude-opus"]
    assert column(calls, "agent_id") == ["tool-1", "agent-2", "tool-1"]
    assert column(calls, "parent_tool_call_id") == ["tool-1", "tool-2", "tool-1"]


def test_sdk_capture_counts_subagent_calls_from_usage() -> None:
    """spike-07 shape: turn pairs for the main agent, ``assistant.usage`` for every call."""
    calls = calls_of(
        TURN,
        usage("agent", model="m", output_tokens=10, api_call_id="a1"),
        usage("sub-agent", model="m", output_tokens=3, api_call_id="b1"),
        usage("sub-agent", model="m", output_tokens=4, api_call_id="b2"),
        sub("t1"),  # ignored: usage is the record in a capture
        END,
        TURN,
        usage("agent", model="m", output_tokens=5, api_call_id="a2"),
        END,
    )
    assert column(calls, "kind") == ["main", "subagent", "subagent", "main"]
    assert column(calls, "output_tokens") == [10, 3, 4, 5]


def test_compaction_call_starts_at_its_compaction_start() -> None:
    calls = calls_of(
        START,
        TURN,
        END,
        ("session.compaction_start", {}),
        ("session.compaction_complete", {"model": "gpt-5-mini", "output_tokens": 900}),
    ).filter(pl.col("kind") == "compaction")
    assert column(calls, "start_time") == [T0 + timedelta(seconds=4)]
    assert column(calls, "end_time") == [T0 + timedelta(seconds=5)]
    assert column(calls, "model") == ["gpt-5-mini"]
    assert column(calls, "output_tokens") == [900]
    assert column(calls, "user_initiated") == [False]


@pytest.mark.parametrize(
    ("rows", "initiated"),
    [
        ([START, USER, TURN, END, TURN, END], [True, False]),
        ([START, USER, TURN, END, USER, TURN, END], [True, True]),
        ([START, USER, TURN, END, NUDGE, TURN, END], [True, False]),
        ([START, TURN, END], [False]),
        # a sub-agent's own prompt does not make the next main call user-initiated
        ([START, ("user.message", {"agent_id": "a"}), TURN, END], [False]),
    ],
    ids=["follow-up-turn", "second-prompt", "autopilot-nudge", "no-prompt", "subagent-prompt"],
)
def test_user_initiated_is_the_first_call_after_a_prompt(
    rows: list[Row], initiated: list[bool]
) -> None:
    assert column(calls_of(*rows).filter(pl.col("kind") == "main"), "user_initiated") == initiated


def test_call_index_follows_log_order_per_session() -> None:
    first = events(START, TURN, sub(), END, TURN, END, session="a", file="/a.jsonl")
    second = events(START, TURN, END, session="b", file="/b.jsonl")
    calls, _ = build_calls(pl.concat([second, first]))
    assert calls.select("session_id", "call_index", "kind").rows() == [
        ("a", 1, "main"),
        ("a", 2, "subagent"),
        ("a", 3, "main"),
        ("b", 1, "main"),
    ]
    assert column(calls, "event_seq") == [2, 3, 5, 2]


@pytest.mark.parametrize(
    ("rows", "models"),
    [
        # the turn's own message names the model
        ([START, TURN, msg(model="gpt-5"), END], ["gpt-5"]),
        # else a tool the turn ran
        ([START, TURN, ("tool.execution_start", {"model": "gpt-5"}), END], ["gpt-5"]),
        # else the session's model at that point: start, model change, auto-mode resolution
        ([START, TURN, END], ["claude-sonnet-4.6"]),
        ([START, ("session.model_change", {"model": "gpt-5"}), TURN, END], ["gpt-5"]),
        (
            [
                ("session.start", {"model": "auto"}),
                ("session.auto_mode_resolved", {"model": "gpt-6-luna"}),
                TURN,
                END,
            ],
            ["gpt-6-luna"],
        ),
        # 'auto' is a router, not a model: never a call's model
        (
            [("session.start", {"model": "auto"}), TURN, END, TURN, msg(model="gpt-5"), END],
            ["gpt-5", "gpt-5"],
        ),
        # else the previous call's model
        ([TURN, msg(model="gpt-5"), END, TURN, END], ["gpt-5", "gpt-5"]),
        # a sub-agent's model never leaks into the main calls
        ([TURN, sub(model="haiku"), END], [None, "haiku"]),
        # no evidence at all: unknown, not guessed
        ([TURN, END], [None]),
    ],
    ids=[
        "message",
        "tool",
        "session-start",
        "model-change",
        "auto-resolved",
        "auto-skipped",
        "previous-call",
        "subagent-separate",
        "unknown",
    ],
)
def test_model_fill_rules(rows: list[Row], models: list[str | None]) -> None:
    assert column(calls_of(*rows), "model") == models


def test_output_tokens_of_a_main_call_sum_its_messages_or_stay_unknown() -> None:
    calls = calls_of(START, TURN, msg(output_tokens=5), msg(output_tokens=7), END, TURN, msg(), END)
    assert column(calls, "output_tokens") == [12, None]


def test_calls_of_each_process_keep_their_process_index() -> None:
    calls = calls_of(START, TURN, END, RESUME, TURN, END, RESUME, TURN)
    assert column(calls, "process_index") == [0, 1, 2]


def test_input_frame_is_not_mutated() -> None:
    frame = events(START, TURN, sub(), END)
    before = frame.clone()
    build_calls(frame)
    assert frame.equals(before)


def tool_done(agent: str, model: str | None) -> Row:
    """A sub-agent's tool result line (older CLIs: ``parentToolCallId`` and ``model``)."""
    return ("tool.execution_complete", {"parent_tool_call_id": agent, "model": model})


def old_sub(agent: str = "tool-1", **fields: Any) -> Row:
    """A sub-agent message of a March 2026 CLI: ``parentToolCallId`` but no model."""
    return ("assistant.message", {"parent_tool_call_id": agent, **fields})


ONE_MODEL = pl.DataFrame(
    {"session_id": ["s1"], "model": ["claude-haiku-4.5"]},
    schema={"session_id": pl.String(), "model": pl.String()},
)
TWO_MODELS = pl.DataFrame(
    {"session_id": ["s1", "s1"], "model": ["claude-haiku-4.5", "claude-sonnet-4.6"]}
)


@pytest.mark.parametrize(
    ("rows", "metrics", "model"),
    [
        # the message itself wins
        ([START, USER, TURN, old_sub(model="gpt-5-mini"), tool_done("tool-1", "x")], None,
         "gpt-5-mini"),
        # then the sub-agent's own tool lines (before or after its message)
        ([START, USER, TURN, old_sub(), tool_done("tool-1", "claude-haiku-4.5")], TWO_MODELS,
         "claude-haiku-4.5"),
        ([START, USER, TURN, tool_done("tool-1", "claude-haiku-4.5"), old_sub()], None,
         "claude-haiku-4.5"),
        # another sub-agent's tool lines do not count
        ([START, USER, TURN, old_sub(), tool_done("tool-2", "claude-haiku-4.5")], None,
         "claude-sonnet-4.6"),
        # then subagent.started
        ([START, USER, TURN, started(model="claude-opus-4.5"), old_sub()], ONE_MODEL,
         "claude-opus-4.5"),
        # then the session's current model
        ([START, USER, TURN, old_sub()], TWO_MODELS, "claude-sonnet-4.6"),
        # then a shutdown that names one model
        ([("session.start", {}), USER, TURN, old_sub()], ONE_MODEL, "claude-haiku-4.5"),
        # nothing names it: no model, never another sub-agent's
        ([("session.start", {}), USER, TURN, old_sub()], TWO_MODELS, None),
    ],
)  # fmt: skip
def test_a_sub_agent_call_takes_the_closest_model_the_log_names(
    rows: list[Row], metrics: pl.DataFrame | None, model: str | None
) -> None:
    calls, _ = build_calls(events(*rows), metrics)
    assert column(calls.filter(pl.col("kind") == "subagent"), "model") == [model]
