"""SDK captures as the on-disk logs the CLI would have written, and real per-call truth.

``agents/copilot/sdk_capture.py`` drops the ephemeral events, adds ``session.start`` and the
shutdown (per-model sums of the calls' ``assistant.usage``) and keeps the usage as truth. The
real captures in ``../shared/real_logs/darthmolen-sdk-captures/`` are the golden accuracy
tests of the reconstruction: every call's input tokens, rebuilt from the log alone, against its
``assistant.usage`` (issue 10's acceptance figures), and every session's cost, which must equal
the cost of its observed calls with no call unpriced (issue 9, point 7).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.agents.copilot.sdk_capture import convert, read_capture
from analytics.agents.copilot.simulate import write_capture_tree
from analytics.cli.commands import app
from analytics.core.pricing.call_costs import price_totals
from analytics.core.pricing.price import price_calls
from analytics.core.pricing.rates import load_rate_table
from analytics.engine.analyze import analyze
from analytics.engine.validate import error_summary, reconstruction_errors

CAPTURES = "darthmolen-sdk-captures"
TABLE = load_rate_table("github-copilot")
T = "2026-03-12T13:21:{:02d}.000Z"


def _usage(model: str, n: int, initiator: str = "agent", parent: str | None = None) -> Any:
    data = {
        "model": model, "inputTokens": 1000 + 100 * n, "outputTokens": 50 + n,
        "cacheReadTokens": 900 if n else 0, "cacheWriteTokens": 0, "cost": 1,
        "duration": 500, "initiator": initiator, "apiCallId": f"call-{n}",
    }  # fmt: skip
    if parent:
        data["parentToolCallId"] = parent
    return {"type": "assistant.usage", "data": data}


LITERAL: list[dict[str, Any]] = [
    {"type": "pending_messages.modified", "data": {}},
    {"type": "user.message", "data": {"content": "hi", "transformedContent": "hi<reminder/>"}},
    {"type": "assistant.turn_start", "data": {"turnId": "0"}},
    {"type": "session.usage_info", "data": {"currentTokens": 900}},
    _usage("claude-sonnet-4.6", 0),
    {"type": "assistant.message", "data": {"content": "", "toolRequests": []}},
    {"type": "assistant.turn_end", "data": {"turnId": "0"}},
    _usage("claude-haiku-4.5", 1, "sub-agent", "tool-1"),
    {"type": "assistant.message", "data": {"parentToolCallId": "tool-1", "content": "ok"}},
    {"type": "session.idle", "data": {}},
]
for n, event in enumerate(LITERAL):
    event["timestamp"] = T.format(n)


def test_a_capture_becomes_the_persisted_log_with_the_cli_shutdown() -> None:
    capture = convert(LITERAL, "ab" * 32)
    lines = [json.loads(line) for line in capture.lines]
    assert [line["type"] for line in lines] == [
        "session.start", "user.message", "assistant.turn_start", "assistant.message",
        "assistant.turn_end", "assistant.message", "session.shutdown",
    ]  # fmt: skip
    assert all(list(line)[:5] == ["type", "data", "id", "timestamp", "parentId"] for line in lines)
    assert [line["parentId"] for line in lines[1:]] == [line["id"] for line in lines[:-1]]
    assert lines[0]["data"]["sessionId"] == capture.session_id
    assert lines[0]["data"]["selectedModel"] == "claude-sonnet-4.6"
    shutdown = lines[-1]["data"]
    assert shutdown["modelMetrics"]["claude-haiku-4.5"] == {
        "requests": {"count": 1, "cost": 1},
        "usage": {"inputTokens": 1100, "outputTokens": 51, "cacheReadTokens": 900,
                  "cacheWriteTokens": 0, "reasoningTokens": 0},
    }  # fmt: skip
    assert shutdown["totalPremiumRequests"] == 2
    assert [(u["agent_id"], u["model"], u["input_tokens"]) for u in capture.usage] == [
        (None, "claude-sonnet-4.6", 1000),
        ("tool-1", "claude-haiku-4.5", 1100),
    ]
    assert convert(LITERAL, "ab" * 32) == capture  # deterministic


def test_a_file_that_is_not_a_capture_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"sessions": []}')
    with pytest.raises(Exception, match="no 'events' or 'allEvents' array"):
        read_capture(tmp_path / "x.json")


@st.composite
def captures(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A capture of a main agent and sub-agents whose messages carry no model (March 2026);
    each sub-agent's model is on its tool lines, or the session has a single model."""
    one_model = draw(st.booleans())
    sub_model = "claude-sonnet-4.6" if one_model else "claude-haiku-4.5"
    events: list[dict[str, Any]] = [{"type": "user.message", "data": {"content": "go " * 40}}]
    n = 0
    for turn in range(draw(st.integers(1, 4))):
        events.append({"type": "assistant.turn_start", "data": {"turnId": str(turn)}})
        events.append(_usage("claude-sonnet-4.6", n))
        n += 1
        events.append({"type": "assistant.message", "data": {"content": "x" * 200}})
        for agent in range(draw(st.integers(0, 2))):
            parent = f"task-{turn}-{agent}"
            for _ in range(draw(st.integers(1, 3))):
                events.append(_usage(sub_model, n, "sub-agent", parent))
                n += 1
                events.append({"type": "assistant.message", "data": {"parentToolCallId": parent}})
                model = None if one_model else sub_model
                result = {"content": "y" * draw(st.integers(0, 3000))}
                events.append(
                    {
                        "type": "tool.execution_complete",
                        "data": {"parentToolCallId": parent, "model": model, "result": result},
                    }
                )
        events.append({"type": "assistant.turn_end", "data": {"turnId": str(turn)}})
    for k, event in enumerate(events):
        event["timestamp"] = f"2026-03-12T13:{k // 60:02d}:{k % 60:02d}.000Z"
    return events


@settings(max_examples=25, deadline=None)
@given(captures())
def test_a_session_costs_the_exact_price_of_its_shutdown_totals(
    tmp_path_factory: pytest.TempPathFactory, events: list[dict[str, Any]]
) -> None:
    home = tmp_path_factory.mktemp("home")
    capture = convert(events, "cd" * 32)
    session = home / "session-state" / capture.session_id
    session.mkdir(parents=True)
    (session / "events.jsonl").write_text(capture.text())  # the log alone: no store
    result = analyze([session])
    priced = price_calls(result.calls, TABLE)
    assert priced["cost_usd"].null_count() == 0
    totals = price_totals(result.model_metrics, TABLE)
    assert priced["cost_usd"].sum() == totals["cost_usd"].sum()
    per_model = result.calls.group_by("model").agg(
        pl.col("input_tokens", "cache_read_tokens", "output_tokens").sum()
    )
    for row in result.model_metrics.iter_rows(named=True):
        got = per_model.filter(pl.col("model") == row["model"]).row(0, named=True)
        assert {k: got[k] for k in ("input_tokens", "cache_read_tokens", "output_tokens")} == {
            k: row[k] for k in ("input_tokens", "cache_read_tokens", "output_tokens")
        }


def _real_captures(real_logs: Path) -> list[Path]:
    found = sorted((real_logs / CAPTURES).glob("*.json"))
    if not found:
        pytest.skip(f"no SDK captures in {real_logs / CAPTURES}")
    return found


def test_real_captures_reconstruct_each_call_within_the_targets(
    real_logs: Path, tmp_path: Path
) -> None:
    """Issue 10's acceptance: over every call of every capture, per-call input tokens rebuilt
    from the log alone (calibrated to the shutdown) against ``assistant.usage``."""
    homes = []
    for n, path in enumerate(_real_captures(real_logs)):
        write_capture_tree(tmp_path / str(n), read_capture(path))
        homes.append(tmp_path / str(n))
    errors = reconstruction_errors(analyze(homes))
    overall = error_summary(errors).filter(pl.col("session_id") == "ALL").row(0, named=True)
    assert overall["calls"] == sum(len(read_capture(p).usage) for p in _real_captures(real_logs))
    assert overall["median_abs_error_pct"] <= 5
    assert overall["p90_abs_error_pct"] <= 15
    assert overall["max_abs_error_pct"] <= 40
    assert set(errors["method"]) == {"calibrated"}


def test_real_captures_cost_what_their_observed_calls_cost(real_logs: Path, tmp_path: Path) -> None:
    """The log alone (no store): every call priced, and the session's cost is exactly the
    cost of its calls' true usage."""
    for n, path in enumerate(_real_captures(real_logs)):
        capture = read_capture(path)
        session = tmp_path / str(n) / capture.session_id
        session.mkdir(parents=True)
        (session / "events.jsonl").write_text(capture.text())
        result = analyze([session])
        priced = price_calls(result.calls, TABLE)
        assert priced["cost_usd"].null_count() == 0, path.name
        truth = pl.DataFrame(list(capture.usage)).with_columns(
            pl.col("reasoning_tokens").fill_null(0).cast(pl.Int64),
            pl.lit(None, pl.Datetime("ms", "UTC")).alias("start_time"),
            pl.lit(False).alias("user_initiated"),
        )
        observed = price_calls(truth, TABLE)["cost_usd"].sum()
        assert priced["cost_usd"].sum() == observed, path.name
        assert observed > Decimal(0)


def test_validate_reads_a_capture_and_its_converted_tree_alike(
    real_logs: Path, tmp_path: Path
) -> None:
    path = _real_captures(real_logs)[0]
    direct = CliRunner().invoke(app, ["--no-cache", "validate", str(path), "-f", "json"])
    assert direct.exit_code == 0, direct.output
    written = CliRunner().invoke(app, ["capture-to-log", str(path), str(tmp_path / "home")])
    assert written.exit_code == 0, written.output
    assert (tmp_path / "home" / "session-store.db").is_file()
    tree = CliRunner().invoke(app, ["--no-cache", "validate", str(tmp_path / "home"), "-f", "json"])
    assert tree.exit_code == 0, tree.output

    def rows(output: str) -> list[dict[str, Any]]:
        return json.loads(output)["sessions"]

    assert rows(direct.stdout) == rows(tree.stdout)
    assert any(row["session_id"] == "ALL" for row in rows(tree.stdout))
