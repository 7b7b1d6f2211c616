"""Context attribution: every input token and input dollar is assigned to a piece of context."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import polars as pl
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core import items as kinds
from analytics.core.attribution import attribute_context, by_tool, context_items, top_items
from analytics.core.schema import CALL_TOKENS, CALLS, COSTS, EVENTS, MONEY, combine, padded
from tests.conftest import SAMPLE_LOGS

PRICED = combine(CALLS, CALL_TOKENS, COSTS)


def _events(rows: list[dict[str, Any]]) -> pl.DataFrame:
    frame = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.int_range(1, pl.len() + 1).alias("event_seq"),
        pl.lit("s").alias("session_id"),
        pl.lit(False).alias("is_autopilot"),
    )
    return padded(frame, EVENTS)


def _priced(rows: list[dict[str, Any]]) -> pl.DataFrame:
    frame = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.lit("s").alias("session_id"),
        pl.int_range(1, pl.len() + 1).alias("call_index"),
        *(pl.col(c).cast(pl.String).cast(MONEY) for c in ("input_cost_usd",) if c in rows[0]),
    )
    return padded(frame, PRICED)


# Items in the core's kinds; a call's own record (``turn``) is no item.
# seq: 1 shutdown (fixed part 100 + 50), 2 user 400 B, 3 call, 4 tool start, 5 tool result
# 4000 B, 6 call, 7 call, 8 compaction summary (~25 tokens), 9 call, 10 sub-agent message, 11
# sub-agent call
EVENTS_ROWS = [
    {"system_tokens": 100, "tool_definitions_tokens": 50},
    {"item": kinds.PROMPT, "content_bytes": 400},
    {"event_type": "turn"},
    {"item": kinds.TOOL_CALL, "tool_call_id": "t1", "tool_name": "view"},
    {"item": kinds.TOOL_OUTPUT, "tool_call_id": "t1", "content_bytes": 4000},
    {"event_type": "turn"},
    {"event_type": "turn"},
    {"item": kinds.COMPACTION, "post_compaction_tokens": 25},
    {"event_type": "turn"},
    {"item": kinds.REPLY, "agent_id": "sub", "content_bytes": 80},
    {"item": kinds.REPLY, "agent_id": "sub", "content_bytes": 80},
]
CALL_ROWS = [
    {"event_seq": 3, "kind": "main", "input_tokens": 250, "input_cost_usd": "0.0250"},
    {"event_seq": 6, "kind": "main", "input_tokens": 1250, "input_cost_usd": "0.1250"},
    {"event_seq": 7, "kind": "main", "input_tokens": 1300, "input_cost_usd": "0.0001"},
    {"event_seq": 8, "kind": "compaction", "input_tokens": 1300, "input_cost_usd": None},
    {"event_seq": 9, "kind": "main", "input_tokens": 200, "input_cost_usd": "0.0003"},
    {"event_seq": 10, "kind": "subagent", "agent_id": "sub", "input_tokens": 90},
    {"event_seq": 11, "kind": "subagent", "agent_id": "sub", "input_tokens": 170},
]


def _zero_cache_costs(frame: pl.DataFrame) -> pl.DataFrame:
    zero = pl.lit(Decimal(0), MONEY)
    priced = pl.col("input_cost_usd").is_not_null()
    return frame.with_columns(
        pl.when(priced).then(zero).alias("cache_read_cost_usd"),
        pl.when(priced).then(zero).alias("cache_write_cost_usd"),
        pl.col("input_cost_usd").alias("cost_usd"),  # no output cost: the whole cost is input
    )


def _attribution() -> tuple[pl.DataFrame, pl.DataFrame]:
    calls = _zero_cache_costs(_priced(CALL_ROWS))
    return attribute_context(calls, _events(EVENTS_ROWS))


def test_items_are_labelled_with_the_tool_that_produced_them() -> None:
    items = context_items(_events(EVENTS_ROWS))
    assert items.select("item_seq", "agent", "label").rows() == [
        (2, "main", "user message (400 B)"),
        (5, "main", "tool result: view (4.0 kB)"),
        (8, "main", "compaction summary (~25 tokens)"),
        (10, "sub", "assistant message (80 B)"),
        (11, "sub", "assistant message (80 B)"),
    ]


def test_each_call_splits_into_fixed_carried_and_new_exactly() -> None:
    per_call, _ = _attribution()
    parts = per_call.select(
        "call_seq", "input_tokens", "fixed_tokens", "carried_tokens", "new_tokens"
    )
    assert parts.rows() == [
        (3, 250, 150, 0, 100),  # the user message is new
        (6, 1250, 150, 100, 1000),  # 400:4000 bytes -> 100:1000; the message is carried
        (7, 1300, 150, 1150, 0),  # nothing new: both carried again
        (8, 1300, 150, 1150, 0),  # the compaction call reads the whole context
        (9, 200, 150, 0, 50),  # after compaction: only the summary
        (10, 90, 90, 0, 0),  # a sub-agent's first call: nothing of its own yet
        (11, 170, 150, 0, 20),  # ... then its own first message
    ]


def test_item_totals_and_exact_costs() -> None:
    per_call, items = _attribution()
    tool = items.filter(pl.col("item_seq") == 5).row(0, named=True)
    assert tool["tokens_added"] == 1000
    assert tool["sends"] == 3
    assert tool["tokens_sent"] == 1000 + 1045 + 1045
    assert tool["unpriced_sends"] == 1  # the compaction call has no price
    # $0.125 over 150 + 100 + 1000 tokens: exactly $0.1; $0.0001 over 150 + 105 + 1045 tokens:
    # 80384615384615.38 units of 1e-18, the leftover unit going to the fixed part (.54)
    assert tool["cost_usd"] == Decimal("0.100080384615384615")
    priced = per_call.filter(pl.col("input_cost_usd").is_not_null())
    total = priced.select(
        pl.col("fixed_cost_usd") + pl.col("carried_cost_usd") + pl.col("new_cost_usd")
    ).to_series()
    assert total.to_list() == priced["input_cost_usd"].to_list()
    assert per_call.filter(pl.col("input_cost_usd").is_null())["fixed_cost_usd"].to_list() == [
        None,
        None,
        None,
    ]
    assert items["cost_usd"].sum() == priced["input_cost_usd"].sum()


def test_top_items_and_tools() -> None:
    _, items = _attribution()
    top = top_items(items, 2)
    assert top["label"].to_list() == [
        "tool result: view (4.0 kB)",  # $0.10 in 3 sends
        "system prompt + tool definitions",  # $0.03 in 5 sends
    ]  # at most 2 per session
    tools = by_tool(items, 10)
    assert tools.filter(pl.col("source") == "tool result: view")["sends"].item() == 3


@st.composite
def _session(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    choices = st.sampled_from([kinds.PROMPT, kinds.REPLY, kinds.TOOL_OUTPUT, "call", "compaction"])
    events: list[dict[str, Any]] = [{"system_tokens": draw(st.integers(0, 5000))}]
    events[0]["tool_definitions_tokens"] = 0
    calls: list[dict[str, Any]] = []
    for kind in draw(st.lists(choices, min_size=1, max_size=30)):
        seq = len(events) + 1
        if kind in ("call", "compaction"):
            cost = draw(st.decimals(0, 50, places=18, allow_nan=False, allow_infinity=False))
            calls.append(
                {
                    "event_seq": seq,
                    "kind": "main" if kind == "call" else "compaction",
                    "input_tokens": draw(st.integers(0, 2_000_000)),
                    "input_cost_usd": str(cost) if draw(st.booleans()) else None,
                }
            )
            events.append(
                {"event_type": "turn"}
                if kind == "call"
                else {
                    "item": kinds.COMPACTION,
                    "post_compaction_tokens": draw(st.integers(0, 9000)),
                }
            )
        else:
            events.append({"item": kind, "content_bytes": draw(st.integers(0, 200_000))})
    if not calls:
        calls.append({"event_seq": len(events), "kind": "main", "input_tokens": 1})
        calls[0]["input_cost_usd"] = "1"
    return _zero_cache_costs(_priced(calls)), _events(events)


@given(_session())
def test_attribution_is_exact(session: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    calls, events = session
    per_call, items = attribute_context(calls, events)
    assert per_call.height == calls.height
    parts = per_call["fixed_tokens"] + per_call["carried_tokens"] + per_call["new_tokens"]
    assert parts.to_list() == per_call["input_tokens"].to_list()
    assert items["tokens_sent"].sum() == calls["input_tokens"].sum()
    input_cost = calls["input_cost_usd"].drop_nulls()
    assert items["cost_usd"].drop_nulls().sum() == (input_cost.sum() if input_cost.len() else 0)


def test_cli_top_shows_items_compactions_and_behaviour() -> None:
    result = CliRunner().invoke(app, ["top", str(SAMPLE_LOGS), "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "TIMES SENT" in result.stdout
    assert "an estimate" in result.stdout
    assert "CALLS/PROMPT" in result.stdout
    by_tool_run = CliRunner().invoke(app, ["top", str(SAMPLE_LOGS), "--by", "tool", "-f", "json"])
    assert by_tool_run.exit_code == 0, by_tool_run.output
    assert '"tools"' in by_tool_run.stdout


def test_attribution_a_session_at_a_time_equals_all_at_once(real_logs: Any) -> None:
    """Chunking by sessions (for memory) changes nothing: sample logs and real logs."""
    from analytics.core.pricing.price import price_analysis
    from analytics.core.pricing.rates import load_rates
    from analytics.engine.analyze import analyze

    for paths in ([SAMPLE_LOGS], [real_logs]):
        result = analyze(paths)
        priced, _ = price_analysis(result.calls, result.session_view, load_rates("github-copilot"))
        assert priced["session_id"].n_unique() > 1
        whole = attribute_context(priced, result.events, pairs_at_once=10**12)
        chunked = attribute_context(priced, result.events, pairs_at_once=1)
        for left, right in zip(whole, chunked, strict=True):
            assert left.equals(right)
