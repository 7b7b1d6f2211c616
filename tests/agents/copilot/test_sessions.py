"""Session summaries (``sessions.summarize_sessions``), end to end from literal log lines.

Each test writes a small events.jsonl in ``tmp_path`` and checks one rule of ``sessions.py``:
how shutdown totals are read (cumulative: take the last; per process: sum), that they are never
counted twice, how calls are checked against them, and what a session without a shutdown
(a crash) reports: tokens from the messages only, input unknown (null), never 0.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from analytics.engine.analyze import analyze

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
SESSION = "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
Line = tuple[int, str, dict[str, Any], dict[str, Any]]


def line(at: int, kind: str, data: dict[str, Any] | None = None, **envelope: Any) -> Line:
    """An event ``at`` seconds after 10:00 UTC."""
    return (at, kind, data or {}, envelope)


def start(version: str | None = "1.0.80", at: int = 0) -> Line:
    data: dict[str, Any] = {"sessionId": SESSION, "selectedModel": "claude-sonnet-4.6"}
    if version:
        data["copilotVersion"] = version
    return line(at, "session.start", data)


def turn(at: int, output: int | None = None, **data: Any) -> list[Line]:
    """One main call: turn_start, a message (with outputTokens when given), turn_end."""
    message = {"content": "ok", **data}
    if output is not None:
        message["outputTokens"] = output
    return [
        line(at, "assistant.turn_start", {"turnId": "0"}),
        line(at, "assistant.message", message),
        line(at, "assistant.turn_end", {"turnId": "0"}),
    ]


def shutdown(at: int, requests: int, nano: int | None = None, **usage: int) -> Line:
    tokens = {"inputTokens": 1000 * requests, "outputTokens": 10 * requests, **usage}
    data: dict[str, Any] = {
        "shutdownType": "routine",
        "totalApiDurationMs": 100 * requests,
        "modelMetrics": {
            "claude-sonnet-4.6": {"requests": {"count": requests, "cost": 1}, "usage": tokens}
        },
    }
    if nano is not None:
        data["totalNanoAiu"] = nano
    return line(at, "session.shutdown", data)


def session(tmp_path: Path, *lines: Line | list[Line]) -> dict[str, Any]:
    """Write the lines as one session directory, analyse it, return its row (SESSIONS with
    Copilot's own columns joined)."""
    directory = tmp_path / SESSION
    directory.mkdir()
    flat = [item for entry in lines for item in (entry if isinstance(entry, list) else [entry])]
    text = "\n".join(
        json.dumps(
            {
                "type": kind,
                "data": data,
                "id": f"e{n}",
                "timestamp": (T0 + timedelta(seconds=at)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                **envelope,
            }
        )
        for n, (at, kind, data, envelope) in enumerate(flat)
    )
    (directory / "events.jsonl").write_text(text + "\n")
    result = analyze([directory])
    assert result.sessions.height == 1
    row: dict[str, Any] = result.session_view.row(0, named=True)
    return row


RESUME = "session.resume"


def three_processes(
    version: str | None, counts: tuple[int, int, int], checkpoint: bool = False
) -> list[Line]:
    """1, 2 and 1 calls in three processes, each ending with a shutdown of ``counts``."""
    return [
        start(version),
        *turn(1, 5),
        *([line(2, "session.usage_checkpoint", {"totalNanoAiu": 5})] if checkpoint else []),
        shutdown(3, counts[0], nano=10),
        line(60, RESUME),
        *turn(61, 5),
        *turn(62, 5),
        shutdown(63, counts[1], nano=30),
        line(120, RESUME),
        *turn(121, 5),
        shutdown(122, counts[2], nano=40),
    ]


@pytest.mark.parametrize(
    ("version", "counts", "checkpoint", "mode", "requests", "nano"),
    [
        # CLI >= 1.0.66: shutdowns are cumulative, the last one is the session total
        ("1.0.80", (1, 3, 4), False, "cumulative", 4, "40"),
        ("1.0.66", (1, 3, 4), False, "cumulative", 4, "40"),
        # a usage checkpoint proves a cumulative build even without a version
        (None, (1, 3, 4), True, "cumulative", 4, "40"),
        # older builds reset per process: the session total is the sum
        ("1.0.49-1", (1, 2, 1), False, "per_process", 4, "80"),
        ("1.0.65", (1, 2, 1), False, "per_process", 4, "80"),
        # no version and no checkpoint: the reading that fits the counted calls wins
        (None, (1, 2, 1), False, "per_process", 4, "80"),
        (None, (1, 3, 4), False, "cumulative", 4, "40"),
    ],
    ids=["1.0.80", "1.0.66", "checkpoint", "1.0.49", "1.0.65", "fit-per-process", "fit-cumulative"],
)
def test_shutdown_totals_are_counted_once(
    tmp_path: Path,
    version: str | None,
    counts: tuple[int, int, int],
    checkpoint: bool,
    mode: str,
    requests: int,
    nano: str,
) -> None:
    row = session(tmp_path, *three_processes(version, counts, checkpoint))
    assert row["shutdown_mode"] == mode
    assert row["shutdowns"] == 3
    assert row["processes"] == 3
    assert row["shutdown_requests"] == requests
    assert row["llm_calls"] == 4
    assert (row["calls_checked"], row["calls_delta"], row["calls_agree"]) == (4, 0, True)
    # the log's totals, taken once: the check beside the session's own totals (its calls')
    assert row["logged_input_tokens"] == 4000
    assert row["logged_output_tokens"] == 40
    assert row["input_tokens"] == 4000
    assert row["output_tokens"] == 20  # what the 4 calls' messages state
    assert row["api_time_ms"] == 400
    assert row["billed_nano_aiu"] == nano
    assert row["token_totals_source"] == "shutdown"


def test_calls_delta_reports_a_disagreement(tmp_path: Path) -> None:
    row = session(tmp_path, start(), *turn(1), *turn(2), shutdown(3, 5))
    assert (row["calls_checked"], row["shutdown_requests"]) == (2, 5)
    assert row["calls_delta"] == -3
    assert row["calls_agree"] is False


def test_compaction_calls_are_outside_the_check(tmp_path: Path) -> None:
    row = session(
        tmp_path,
        start(),
        *turn(1),
        line(2, "session.compaction_start"),
        line(3, "session.compaction_complete", {"compactionTokensUsed": {"outputTokens": 80}}),
        shutdown(4, 1),
    )
    assert (row["llm_calls"], row["compaction_calls"], row["calls_checked"]) == (2, 1, 1)
    assert row["calls_agree"] is True


def test_crashed_session_has_output_from_messages_and_unknown_input(tmp_path: Path) -> None:
    row = session(
        tmp_path, start(), line(1, "user.message", {"content": "go"}), *turn(2, 30), *turn(3, 12)
    )
    assert row["status"] == "interrupted"
    assert "no session.shutdown" in row["status_detail"]
    assert row["shutdown_mode"] is None and row["shutdowns"] == 0
    assert row["shutdown_requests"] is None
    assert (row["calls_checked"], row["calls_delta"], row["calls_agree"]) == (None, None, None)
    assert row["output_tokens"] == row["logged_output_tokens"] == 42
    assert row["token_totals_source"] == "messages"
    for unknown in ["input_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"]:
        assert row[f"logged_{unknown}"] is None, unknown
    # the session's input is its calls' estimates: reconstructed, no total to check them
    assert row["input_tokens"] > 0
    assert row["billed_nano_aiu"] is None


def test_crash_without_output_tokens_leaves_output_unknown(tmp_path: Path) -> None:
    row = session(tmp_path, start(), *turn(1), *turn(2))
    assert row["output_tokens"] is None
    assert row["token_totals_source"] is None


def test_crash_after_a_shutdown_adds_the_later_output(tmp_path: Path) -> None:
    """Process 2 was killed: its calls are counted, outside the shutdown check."""
    row = session(tmp_path, start(), *turn(1, 10), shutdown(2, 1), line(60, RESUME), *turn(61, 7))
    assert row["status"] == "interrupted"
    assert row["llm_calls"] == 2
    assert (row["shutdown_requests"], row["calls_checked"], row["calls_agree"]) == (1, 1, True)
    assert row["output_tokens"] == row["logged_output_tokens"] == 17
    assert row["logged_input_tokens"] == 1000
    # the crashed process's call adds its estimate to the shutdown's 1,000
    assert row["input_tokens"] > 1000
    assert row["token_totals_source"] == "shutdown+messages"


@pytest.mark.parametrize(
    ("ending", "status", "detail"),
    [
        (
            [line(5, "session.task_complete", {"summary": "Fixed the bug"}), shutdown(6, 1)],
            "complete",
            "Fixed the bug",
        ),
        ([shutdown(6, 1)], "idle", None),
        (
            [
                line(5, "session.error", {"message": "rate limited"}),
                line(6, "session.shutdown", {"shutdownType": "error"}),
            ],
            "error",
            "rate limited",
        ),
        (
            [line(5, "assistant.turn_start"), line(6, "abort", {"reason": "user_initiated"})],
            "interrupted",
            "user_initiated",
        ),
    ],
    ids=["complete", "idle", "error", "abort"],
)
def test_status(tmp_path: Path, ending: list[Line], status: str, detail: str | None) -> None:
    row = session(tmp_path, start(), *turn(1), *ending)
    assert (row["status"], row["status_detail"]) == (status, detail)


def test_autopilot_nudges_are_not_user_messages(tmp_path: Path) -> None:
    nudge = {"content": "continue", "isAutopilotContinuation": True}
    row = session(
        tmp_path,
        start(),
        line(1, "user.message", {"content": "build it"}),
        *turn(2),
        line(3, "user.message", nudge),
        *turn(4),
        line(5, "user.message", nudge),
        line(6, "user.message", {"content": "sub-agent prompt"}, agentId="a1"),
        shutdown(7, 2),
    )
    assert (row["user_messages"], row["autopilot_nudges"]) == (1, 2)


def test_tool_calls_by_tool(tmp_path: Path) -> None:
    def tool(at: int, name: str, **envelope: Any) -> Line:
        return line(
            at, "tool.execution_start", {"toolCallId": f"t{at}", "toolName": name}, **envelope
        )

    row = session(
        tmp_path,
        start(),
        tool(1, "view"),
        tool(2, "bash"),
        tool(3, "view"),
        tool(4, "view", agentId="a"),
    )
    assert row["tool_calls"] == [{"tool": "view", "calls": 3}, {"tool": "bash", "calls": 1}]
    assert row["tool_calls_total"] == 4


def test_no_tools_is_zero_not_unknown(tmp_path: Path) -> None:
    assert session(tmp_path, start(), *turn(1))["tool_calls_total"] == 0


def test_wall_time_is_summed_per_process(tmp_path: Path) -> None:
    """The hour between the processes was nobody's work: it is not counted."""
    row = session(tmp_path, start(at=0), *turn(10), line(3600, RESUME), *turn(3630))
    assert row["wall_time_ms"] == 40_000
    assert row["processes"] == 2


def test_billed_nano_aiu_is_the_last_cumulative_total(tmp_path: Path) -> None:
    row = session(
        tmp_path,
        start("1.0.80"),
        *turn(1),
        line(2, "session.usage_checkpoint", {"totalNanoAiu": 100}),
        shutdown(3, 1, nano=150),
        line(60, RESUME),
        *turn(61),
        line(62, "session.usage_checkpoint", {"totalNanoAiu": 250}),
        line(63, "session.usage_checkpoint", {"totalNanoAiu": 300}),
    )
    assert row["billed_nano_aiu"] == "300"
    assert row["premium_requests"] is None


def test_models_by_number_of_calls(tmp_path: Path) -> None:
    row = session(
        tmp_path,
        start(),
        *turn(1, model="opus"),
        line(2, "assistant.message", {"model": "haiku", "parentToolCallId": "t"}, agentId="t"),
        line(3, "assistant.message", {"model": "haiku", "parentToolCallId": "t"}, agentId="t"),
    )
    assert row["models"] == ["haiku", "opus"]
    assert (row["main_calls"], row["subagent_calls"]) == (1, 2)


def test_shutdown_without_model_metrics_is_no_ground_truth(tmp_path: Path) -> None:
    """R6 shape: scrubbed shutdowns carry only the bill; calls cannot be checked."""
    row = session(
        tmp_path,
        start(None),
        *turn(1),
        line(2, "session.shutdown", {"shutdownType": "routine", "totalNanoAiu": 99}),
    )
    assert row["shutdowns"] == 1
    assert row["shutdown_requests"] is None
    assert row["calls_agree"] is None
    assert row["logged_input_tokens"] is None
    assert row["billed_nano_aiu"] == "99"


def test_per_process_premium_requests_unknown_when_no_shutdown_says(tmp_path: Path) -> None:
    row = session(tmp_path, *three_processes("1.0.40", (1, 2, 1)))
    assert row["billed_nano_aiu"] == "80"
    assert row["premium_requests"] is None


def test_a_cut_off_last_call_makes_the_session_interrupted(tmp_path: Path) -> None:
    """R6 shape: the last turn asked for a tool, whose permission prompt was pending when the
    process shut down: answered (so billed), never ended."""
    row = session(
        tmp_path,
        start(),
        *turn(1),
        line(2, "assistant.turn_start"),
        line(3, "assistant.message", {"content": "", "toolRequests": [{"name": "bash"}]}),
        shutdown(4, 2),
    )
    assert row["status"] == "interrupted"
    assert "turn_end" in row["status_detail"]
    assert row["interrupted_calls"] == 1
    assert row["calls_agree"] is True


def test_a_session_without_calls_counts_zero_calls_not_unknown(tmp_path: Path) -> None:
    row = session(tmp_path, start())
    counts = ["llm_calls", "main_calls", "subagent_calls", "compaction_calls", "interrupted_calls"]
    assert {c: row[c] for c in counts} == dict.fromkeys(counts, 0)
    # no call sent anything: a count of 0, while the log states no totals
    assert row["input_tokens"] == 0 and row["output_tokens"] == 0
    assert row["logged_input_tokens"] is None and row["logged_output_tokens"] is None
