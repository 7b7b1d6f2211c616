"""How the agent loop spent the money: compactions, autopilot nudges, unfinished work.

Two frames, both pure functions of priced calls and events:

* ``compaction_savings``: per compaction call, its cost and an **estimate** of the input
  tokens it saved: (pre - post compaction tokens) x the main-agent calls after it until the
  next compaction or the end. It assumes the removed context would have been re-sent as it
  was, ignoring that the calls after it may have grown or ended the session sooner.
* ``loop_behaviour``: per session, calls per user message, autopilot nudges and what the calls
  they triggered cost (every call after a nudge until the next message from a person),
  whether the session ended without the agent saying its task is done
  (``items.TASK_COMPLETE``), interrupted calls (the log shows the user or the CLI stopped
  them) and their cost, and apart from them the calls whose log never states a final usage
  record (output may be low; null where the agent's log has no such record at all, as
  Copilot's). Every count is of the loop's turns, as ``llm_calls``: a
  compaction call is in ``compaction_savings``, never in a per-state count, so none exceeds
  ``llm_calls``. Money is exact; null when no call in the sum is priced
  (``*_unpriced_calls`` counts the calls left out).
"""

from __future__ import annotations

import polars as pl

from analytics.core import items as kinds
from analytics.core.events import MAIN_AGENT
from analytics.core.periods import known_sum
from analytics.core.schema import MONEY


def compaction_savings(priced_calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """One row per compaction call: cost, pre/post tokens, later main calls, tokens saved."""
    compactions = priced_calls.filter(pl.col("kind") == "compaction").join(
        events.select(
            "source_file", "source_line", "pre_compaction_tokens", "post_compaction_tokens"
        ),
        on=["source_file", "source_line"],
        how="left",
    )
    marks = compactions.select("session_id", pl.col("event_seq").alias("_compaction_seq"))
    later = (
        priced_calls.filter(pl.col("kind") == "main")
        .sort("event_seq")
        .join_asof(
            marks.sort("_compaction_seq"),
            left_on="event_seq",
            right_on="_compaction_seq",
            by="session_id",
            strategy="backward",
            check_sortedness=False,
        )
        .group_by("session_id", "_compaction_seq")
        .agg(pl.len().cast(pl.Int64).alias("later_calls"))
    )
    return (
        compactions.join(
            later,
            left_on=["session_id", "event_seq"],
            right_on=["session_id", "_compaction_seq"],
            how="left",
        )
        .with_columns(pl.col("later_calls").fill_null(0))
        .select(
            "session_id",
            "call_index",
            "start_time",
            "model",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "pre_compaction_tokens",
            "post_compaction_tokens",
            "later_calls",
            (
                (pl.col("pre_compaction_tokens") - pl.col("post_compaction_tokens"))
                * pl.col("later_calls")
            ).alias("saved_input_tokens_estimate"),
        )
        .sort("session_id", "call_index")
    )


def loop_behaviour(priced_calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """One row per session: calls per prompt, nudges and their cost, unfinished work."""
    kind = pl.col("item")
    prompts = (
        events.filter((kind == kinds.PROMPT) & MAIN_AGENT)
        .select("session_id", pl.col("event_seq").alias("_prompt_seq"), "is_autopilot")
        .sort("_prompt_seq")
    )
    driven = priced_calls.sort("event_seq").join_asof(
        prompts,
        left_on="event_seq",
        right_on="_prompt_seq",
        by="session_id",
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
    )
    nudged = pl.col("is_autopilot").fill_null(False)
    turn = pl.col("kind") != "compaction"
    cut = pl.col("interrupted").fill_null(False) & turn
    unfinished = pl.col("final_usage").not_().fill_null(False) & turn
    per_session = driven.group_by("session_id").agg(
        turn.sum().cast(pl.Int64).alias("llm_calls"),
        nudged.sum().cast(pl.Int64).alias("nudge_calls"),
        known_sum("cost_usd", nudged).cast(MONEY).alias("nudge_cost_usd"),
        (nudged & pl.col("cost_usd").is_null()).sum().cast(pl.Int64).alias("nudge_unpriced_calls"),
        cut.sum().cast(pl.Int64).alias("interrupted_calls"),
        known_sum("cost_usd", cut).cast(MONEY).alias("interrupted_cost_usd"),
        (cut & pl.col("cost_usd").is_null())
        .sum()
        .cast(pl.Int64)
        .alias("interrupted_unpriced_calls"),
        pl.when(pl.col("final_usage").is_not_null().any())
        .then(unfinished.sum())
        .cast(pl.Int64)
        .alias("calls_without_final_usage"),
    )
    conversation = events.group_by("session_id").agg(
        ((kind == kinds.PROMPT) & MAIN_AGENT & ~pl.col("is_autopilot"))
        .sum()
        .cast(pl.Int64)
        .alias("user_messages"),
        ((kind == kinds.PROMPT) & MAIN_AGENT & pl.col("is_autopilot"))
        .sum()
        .cast(pl.Int64)
        .alias("autopilot_nudges"),
        (~(kind == kinds.TASK_COMPLETE).any()).alias("ended_without_task_complete"),
    )
    return (
        conversation.join(per_session, on="session_id", how="left")
        .with_columns(
            pl.col(
                "llm_calls",
                "nudge_calls",
                "nudge_unpriced_calls",
                "interrupted_calls",
                "interrupted_unpriced_calls",
            ).fill_null(0)
        )
        .with_columns(
            pl.when(pl.col("user_messages") > 0)
            .then(pl.col("llm_calls") / pl.col("user_messages"))
            .alias("calls_per_user_message")
        )
        .select(
            "session_id",
            "user_messages",
            "llm_calls",
            "calls_per_user_message",
            "autopilot_nudges",
            "nudge_calls",
            "nudge_cost_usd",
            "nudge_unpriced_calls",
            "ended_without_task_complete",
            "interrupted_calls",
            "interrupted_cost_usd",
            "interrupted_unpriced_calls",
            "calls_without_final_usage",
        )
        .sort("session_id")
    )
