"""The agents' folded tables in the core's contracts (``analytics.core.schema``).

A fold (``analytics.agents.fold``) gives each agent's calls, sessions and issues in the
agent's own terms; the core prices and reports any agent's calls alike, so here they become
``CALLS + CALL_TOKENS + AGENT_CALLS`` and ``SESSIONS + AGENT_SESSIONS`` rows. What only one
agent's logs carry is that agent's own table (``core.schema.AgentTable``: Copilot's shutdown
checks, the reconstruction's fit, the nano-AIU bill), never a column of these; of the calls,
the figures only Copilot's give are null, never 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from analytics.agents import AgentTables

#: Token columns a session sums from its calls.
_SUMMED = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]


def core_tables(
    tables: AgentTables,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(calls, sessions, issues, items) of a fold: the first three in the core's contracts,
    the items as the fold gives them (``as_events`` makes them EVENTS rows where needed).

    Every call is ``observed`` (the log states its usage). Calls keep the fold's order and
    numbers: ``call_index`` 1.. per session by time (its sub-agents' calls among its own),
    ``event_seq`` their place among the session's context items in log order, so the items
    a call carried are those numbered before it. A call's two states stay apart, as the fold
    gives them: ``interrupted`` where the log shows the user or the CLI stopped it,
    ``final_usage`` false where the log never states its final usage (its output is a lower
    bound; Claude Code 2.1.38/2.1.39 never write one). A session's tokens are its calls'
    sums; a session without calls sent nothing (0).
    """
    import polars as pl

    from analytics.core.schema import (
        ANALYSIS_CALLS,
        ANALYSIS_SESSIONS,
        ISSUES,
        beside,
        conform,
        padded,
    )

    calls = tables.calls.with_columns(
        pl.col("logged_cost_usd").str.to_decimal(scale=18).cast(ANALYSIS_CALLS["logged_cost_usd"]),
        pl.when(pl.col("model").is_not_null()).then(pl.lit("log")).alias("model_source"),
        pl.lit(0, pl.Int32).alias("process_index"),
        pl.lit(False).alias("is_byok"),
    )
    calls = padded(calls, ANALYSIS_CALLS)
    sums = _session_sums(calls, tables.sessions)
    nothing_sent = pl.col("llm_calls") == 0
    sessions = beside(tables.sessions, sums, "session_id").with_columns(
        pl.lit(1, pl.Int64).alias("processes"),
        pl.lit(0, pl.Int64).alias("shutdowns"),
        pl.lit(0, pl.Int64).alias("failed_calls"),
        pl.lit(0, pl.Int64).alias("rewinds"),
        pl.lit(False).alias("byok"),
        (pl.col("end_time") - pl.col("start_time")).dt.total_milliseconds().alias("wall_time_ms"),
        *(pl.when(nothing_sent).then(0).otherwise(pl.col(c)).alias(c) for c in _SUMMED),
    )
    sessions = padded(sessions, ANALYSIS_SESSIONS)
    return calls, sessions, conform(tables.issues, ISSUES), tables.items


def _session_sums(calls: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """Each session's sums of its calls' tokens and logged cost (null where no call states
    one), a row per session with calls. A fold gives each session's calls together, one run
    of rows: then they are summed run by run, without hashing every call's session id (the
    1 GB pi tree's 300,000 calls: +3-12 MB, against +35 MB grouped by id, at the run's peak).
    The runs are one per session exactly when there are as many as sessions with calls
    (``llm_calls``); otherwise the calls are grouped by session id."""
    import polars as pl

    summed = [
        pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(c)
        for c in [*_SUMMED, "reasoning_tokens", "logged_cost_usd"]
    ]
    runs = calls["session_id"].rle_id().alias(_RUN)
    with_calls = int((sessions["llm_calls"] > 0).sum())
    if calls.height and runs[-1] + 1 == with_calls:  # run ids count up from 0
        by_runs = calls.lazy().with_columns(runs).group_by(_RUN)
        return by_runs.agg(pl.col("session_id").first(), *summed).drop(_RUN).collect()
    # lazily: only the summed columns are grouped, not every column of the calls
    return calls.lazy().group_by("session_id").agg(summed).collect()


#: ``_session_sums``' column of run numbers.
_RUN = "__run"


def as_events(items: pl.DataFrame) -> pl.DataFrame:
    """A fold's items (``analytics.agents.item_columns``) as EVENTS rows: process 0, a prompt
    never an autopilot nudge, the columns only Copilot logs fill null (``event_type`` too:
    the core reads the neutral ``item``). Made only
    where events are read: EVENTS is wide, and its null columns would take memory for every
    item of a large tree."""
    import polars as pl

    from analytics.core import items as kinds
    from analytics.core.schema import EVENTS, padded

    events = items.drop("agent").with_columns(
        pl.lit(0, pl.Int32).alias("process_index"),
        # these agents send no autopilot nudges: every prompt is a person's
        pl.when(pl.col("item") == kinds.PROMPT).then(False).alias("is_autopilot"),
    )
    return padded(events, EVENTS)
