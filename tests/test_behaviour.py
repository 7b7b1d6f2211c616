"""Compaction savings and agent-loop behaviour on literal frames."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import polars as pl

from analytics.core.behaviour import compaction_savings, loop_behaviour
from analytics.core.schema import CALL_TOKENS, CALLS, COSTS, EVENTS, MONEY, combine, padded


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
    kinds = {"assistant.turn_start": "main", "session.compaction_complete": "compaction"}
    calls = events.filter(pl.col("event_type").is_in(list(kinds))).with_columns(
        pl.col("event_type").replace_strict(kinds).alias("kind"),
        pl.int_range(1, pl.len() + 1).alias("call_index"),
        pl.col("event_seq").replace_strict(costs, default=None).cast(MONEY).alias("cost_usd"),
        pl.col("text").eq("cut").fill_null(False).alias("interrupted"),
    )
    return padded(calls, combine(CALLS, CALL_TOKENS, COSTS))


ROWS = [
    {"event_type": "user.message"},  # 1
    {"event_type": "assistant.turn_start"},  # 2
    {
        "event_type": "session.compaction_complete",
        "pre_compaction_tokens": 9000,
        "post_compaction_tokens": 1000,
    },  # 3
    {"event_type": "assistant.turn_start"},  # 4
    {"event_type": "user.message", "is_autopilot": True},  # 5: a nudge
    {"event_type": "assistant.turn_start"},  # 6
    {"event_type": "assistant.turn_start", "text": "cut"},  # 7: interrupted
]
COSTS_BY_SEQ = {2: "0.10", 3: "0.05", 4: "0.20", 6: "0.30", 7: None}


def test_compaction_savings_are_estimated_over_the_later_calls() -> None:
    events = _events(ROWS)
    saved = compaction_savings(_calls(events, COSTS_BY_SEQ), events)
    assert saved.select(
        "call_index", "cost_usd", "later_calls", "saved_input_tokens_estimate"
    ).rows() == [(2, Decimal("0.05"), 3, 8000 * 3)]


def test_loop_behaviour_per_session() -> None:
    events = _events([*ROWS, {"event_type": "session.task_complete"}])
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


def test_a_session_without_calls_or_task_complete() -> None:
    events = _events([{"event_type": "user.message", "is_autopilot": False}])
    row = loop_behaviour(_calls(events, {}), events).row(0, named=True)
    assert row["ended_without_task_complete"] is True
    assert (row["llm_calls"], row["nudge_calls"], row["interrupted_calls"]) == (0, 0, 0)
