"""Compaction savings and agent-loop behaviour on literal frames."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.core import items as kinds
from analytics.core.behaviour import compaction_savings, loop_behaviour
from analytics.core.schema import ANALYSIS_CALLS, COSTS, EVENTS, MONEY, combine, padded


def _events(rows: list[dict[str, Any]]) -> pl.DataFrame:
    frame = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.int_range(1, pl.len() + 1).alias("event_seq"),
        pl.int_range(1, pl.len() + 1).alias("source_line"),
        pl.lit("f").alias("source_file"),
        pl.lit("s").alias("session_id"),
        pl.col("is_autopilot").fill_null(False),
    )
    return padded(frame, EVENTS)


def _calls(events: pl.DataFrame, costs: dict[int, str | None]) -> pl.DataFrame:
    """One call per turn (an agent's own ``turn`` record, no item) and compaction of
    ``events``: interrupted where its text is ``cut``, without its final usage record where
    ``open`` (or ``cut``), a Copilot call (``final_usage`` null) where ``copilot``."""
    text = pl.col("text").fill_null("")
    compaction = pl.col("item") == kinds.COMPACTION
    calls = events.filter((pl.col("event_type") == "turn") | compaction).with_columns(
        pl.when(compaction).then(pl.lit("compaction")).otherwise(pl.lit("main")).alias("kind"),
        pl.int_range(1, pl.len() + 1).alias("call_index"),
        pl.col("event_seq").replace_strict(costs, default=None).cast(MONEY).alias("cost_usd"),
        (text == "cut").alias("interrupted"),
        pl.when(text != "copilot").then(~text.is_in(["cut", "open"])).alias("final_usage"),
    )
    return padded(calls, combine(ANALYSIS_CALLS, COSTS))


ROWS = [
    {"item": kinds.PROMPT},  # 1
    {"event_type": "turn"},  # 2
    {
        "item": kinds.COMPACTION,
        "pre_compaction_tokens": 9000,
        "post_compaction_tokens": 1000,
    },  # 3
    {"event_type": "turn"},  # 4
    {"item": kinds.PROMPT, "is_autopilot": True},  # 5: a nudge
    {"event_type": "turn"},  # 6
    {"event_type": "turn", "text": "cut"},  # 7: interrupted
]
COSTS_BY_SEQ = {2: "0.10", 3: "0.05", 4: "0.20", 6: "0.30", 7: None}


def test_compaction_savings_are_estimated_over_the_later_calls() -> None:
    events = _events(ROWS)
    saved = compaction_savings(_calls(events, COSTS_BY_SEQ), events)
    assert saved.select(
        "call_index", "cost_usd", "later_calls", "saved_input_tokens_estimate"
    ).rows() == [(2, Decimal("0.05"), 3, 8000 * 3)]


def test_loop_behaviour_per_session() -> None:
    events = _events([*ROWS, {"item": kinds.TASK_COMPLETE}])
    row = loop_behaviour(_calls(events, COSTS_BY_SEQ), events).row(0, named=True)
    assert row["user_messages"] == 1
    assert row["autopilot_nudges"] == 1
    assert row["llm_calls"] == 4  # the compaction is not counted as a turn
    assert row["calls_per_user_message"] == 4.0
    assert (row["nudge_calls"], row["nudge_cost_usd"], row["nudge_unpriced_calls"]) == (
        2,
        Decimal("0.30"),
        1,
    )
    assert row["ended_without_task_complete"] is False
    assert (row["interrupted_calls"], row["interrupted_cost_usd"]) == (1, None)
    assert row["interrupted_unpriced_calls"] == 1
    assert row["calls_without_final_usage"] == 1  # the interrupted call stated none either


def test_calls_without_a_final_usage_record_are_not_interrupted() -> None:
    """Claude Code 2.1.38/2.1.39 never write a final usage record: their calls are counted
    apart, and none of them, nor their cost, is interrupted."""
    rows = [
        {"item": kinds.PROMPT, "is_autopilot": False},
        {"event_type": "turn", "text": "open"},
        {"event_type": "turn", "text": "open"},
        {"item": kinds.COMPACTION, "text": "open"},
    ]
    events = _events(rows)
    row = loop_behaviour(_calls(events, {2: "0.10", 3: "0.20", 4: "0.05"}), events).row(
        0, named=True
    )
    assert (row["llm_calls"], row["calls_without_final_usage"]) == (2, 2)
    assert (row["interrupted_calls"], row["interrupted_cost_usd"]) == (0, Decimal(0))


def test_a_copilot_session_has_no_final_usage_count() -> None:
    """Copilot's log has no final usage record to miss: the count is unknown, not 0, and its
    own meaning of interrupted (a turn never closed) is counted as before."""
    rows = [
        {"item": kinds.PROMPT, "is_autopilot": False},
        {"event_type": "turn", "text": "copilot"},
        {"event_type": "turn", "text": "copilot"},
    ]
    events = _events(rows)
    calls = _calls(events, {}).with_columns(
        (pl.col("call_index") == 2).alias("interrupted")  # the turn never closed
    )
    row = loop_behaviour(calls, events).row(0, named=True)
    assert (row["interrupted_calls"], row["calls_without_final_usage"]) == (1, None)


STATES = st.sampled_from(["", "open", "cut", "copilot"])


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(
        st.tuples(st.sampled_from(["turn", kinds.COMPACTION]), STATES),
        max_size=12,
    )
)
def test_no_per_state_count_exceeds_the_calls(turns: list[tuple[str, str]]) -> None:
    """INTERRUPTED and NO FINAL USAGE count the same calls as CALLS (the loop's turns, never
    a compaction), so neither exceeds it, whatever the compactions' states."""
    rows = [{"item": kinds.PROMPT, "is_autopilot": False}] + [
        ({"event_type": e} if e == "turn" else {"item": e}) | {"text": t} for e, t in turns
    ]
    events = _events(rows)
    row = loop_behaviour(_calls(events, {}), events).row(0, named=True)
    assert row["interrupted_calls"] <= row["llm_calls"]
    assert (row["calls_without_final_usage"] or 0) <= row["llm_calls"]


def test_a_session_without_calls_or_task_complete() -> None:
    events = _events([{"item": kinds.PROMPT, "is_autopilot": False}])
    row = loop_behaviour(_calls(events, {}), events).row(0, named=True)
    assert row["ended_without_task_complete"] is True
    assert (row["llm_calls"], row["nudge_calls"], row["interrupted_calls"]) == (0, 0, 0)
