"""EVENTS -> CALLS: one row per LLM call, counted by the rules of the Copilot agent loop.

- A main-agent call is an ``assistant.turn_start`` without ``agentId``; the next main
  ``assistant.turn_end`` closes it. A start that is never closed is an interrupted call (counted
  and flagged); an end with no open start is reported as an issue.
- Sub-agent calls have no turn pair: each sub-agent ``assistant.message`` (envelope ``agentId``
  or ``data.parentToolCallId``) is one call, deduplicated by ``apiCallId`` where chunks share it.
  Where the log carries ``assistant.usage`` (SDK captures), sub-agent calls are taken from those
  instead, since a capture may hold usage without the messages.
- Each ``session.compaction_complete`` is one compaction call (its own LLM request, with tokens
  in ``compactionTokensUsed``).
- A main turn that got no answer (no ``assistant.message``, ``assistant.usage`` or
  ``session.usage_record``) and that a ``session.error`` (a rate limit after retries, say), an
  ``abort`` or a ``session.shutdown`` ended is a *failed* call: not a billed request, so not in
  CALLS; ``failed_calls`` lists them. An unanswered turn with no such end (a crash) stays an
  interrupted call: whether it was billed is unknown.
- ``session.usage_record`` (CLI 1.0.94+) is one line per model call: a sub-agent's records are
  its calls, as ``assistant.usage`` is in SDK captures.

Input must be ordered by ``events.order_events``. Pure function: frames in, frames out.
"""

from __future__ import annotations

import polars as pl

from analytics.core.events import MAIN_AGENT
from analytics.core.schema import CALLS, ISSUES, conform
from tests.oracle.reference.events import EVENT_KEYS
from tests.oracle.reference.tokens import USAGE_RECORDS

#: The EVENTS columns calls are made of: filters and joins copy these, not the wide rest.
_USED = [
    *EVENT_KEYS,
    "timestamp",
    "agent_id",
    "parent_tool_call_id",
    "turn_id",
    "interaction_id",
    "model",
    "api_call_id",
    "tool_call_id",
    "tool_name",
    "output_tokens",
    "is_autopilot",
    "initiator",
    "duration_ms",
    "interaction_type",
    "usage_id",
    "text",
]
#: Main events a call is made of; tool starts also name a model, where one is given.
_CALL_PARTS = [
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "assistant.usage",
    "session.usage_record",
    "session.error",
    "abort",
    "session.shutdown",
    "user.message",
]
#: Events that show a main call was answered (and so billed).
_ANSWERS = ["assistant.message", "assistant.usage", "session.usage_record"]
_SESSION_MODEL_EVENTS = [
    "session.start",
    "session.resume",
    "session.model_change",
    "session.auto_mode_resolved",
]


def build_calls(
    events: pl.DataFrame, model_metrics: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return (CALLS, ISSUES) for ordered EVENTS of any number of sessions.

    ``model_metrics`` (the shutdowns' per-model totals) names the model of sub-agent calls
    that nothing else in the log names, where a session's shutdown knows a single model.
    """
    events = events.select(_USED)
    main, orphans = _main_calls(events)
    calls = pl.concat(
        [main, _subagent_calls(events), _compaction_calls(events)], how="diagonal_relaxed"
    )
    calls = _subagent_models(_fill_models(calls, events), events, model_metrics)
    calls = calls.sort("session_id", "_seq").with_columns(
        pl.col("_seq").alias("event_seq"),
        pl.int_range(1, pl.len() + 1).over("session_id").cast(pl.Int64).alias("call_index"),
    )
    return conform(calls, CALLS), orphans


def failed_calls(events: pl.DataFrame) -> pl.DataFrame:
    """Main turns whose model call got no answer: (session_id, source_file, source_line,
    start_time, error), ``error`` being the last ``session.error`` message in the turn."""
    main = _main_events(events.select(_USED))
    return (
        main.filter(pl.col("event_type") == "assistant.turn_start")
        .join(_failed(main), on=["session_id", "_call"], how="inner")
        .select(
            "session_id",
            "source_file",
            "source_line",
            pl.col("timestamp").alias("start_time"),
            pl.col("_error").alias("error"),
        )
    )


def _main_events(events: pl.DataFrame) -> pl.DataFrame:
    """The main events a call is made of, each with ``_call``: the most recent main
    ``turn_start`` before it (0 = none yet). Tool results and the like are left out."""
    kind = pl.col("event_type")
    return events.with_columns(
        (MAIN_AGENT & (kind == "assistant.turn_start")).cum_sum().over("session_id").alias("_call")
    ).filter(
        MAIN_AGENT
        & (
            kind.is_in(_CALL_PARTS)
            | ((kind == "tool.execution_start") & pl.col("model").is_not_null())
        )
    )


def _failed(main: pl.DataFrame) -> pl.DataFrame:
    """The main calls that failed: (session_id, _call, _error), ``_error`` being the last
    ``session.error`` message of the turn (null when an abort or shutdown ended it)."""
    kind = pl.col("event_type")
    ended = kind.is_in(["session.error", "abort", "session.shutdown"])
    return (
        main.filter(pl.col("_call") > 0)
        .group_by("session_id", "_call")
        .agg(
            kind.is_in(_ANSWERS).any().alias("_answered"),
            ended.any().alias("_ended"),
            pl.col("text").filter(kind == "session.error").last().alias("_error"),
        )
        .filter(~pl.col("_answered") & pl.col("_ended"))
        .select("session_id", "_call", "_error")
    )


def _main_calls(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Pair main ``turn_start``/``turn_end`` lines; attach each call's messages and tools.

    Failed calls (``failed_calls``) are left out here."""
    kind = pl.col("event_type")
    main = _main_events(events)
    every_start = main.filter(kind == "assistant.turn_start")
    starts = every_start.join(_failed(main), on=["session_id", "_call"], how="anti")
    ends = main.filter(kind == "assistant.turn_end").with_columns(
        pl.int_range(pl.len()).over("session_id", "_call").alias("_nth")
    )
    # An end closes its call if it is the first end after the start, in the same process.
    closing = ends.join(
        every_start.select("session_id", "_call", pl.col("process_index").alias("_start_process")),
        on=["session_id", "_call"],
        how="left",
    ).with_columns(
        (
            (pl.col("_call") > 0)
            & (pl.col("_nth") == 0)
            & (pl.col("process_index") == pl.col("_start_process"))
        ).alias("_closes")
    )
    orphans = closing.filter(~pl.col("_closes")).select(
        pl.col("source_file").alias("file"),
        pl.col("source_line").alias("line"),
        pl.lit("warning").alias("severity"),
        pl.format(
            "assistant.turn_end (turnId {}) without a matching assistant.turn_start",
            pl.col("turn_id").fill_null("?"),
        ).alias("message"),
    )
    end_of_call = closing.filter(pl.col("_closes")).select(
        "session_id", "_call", pl.col("timestamp").alias("end_time")
    )
    is_message = pl.col("event_type") == "assistant.message"
    messages = (
        main.filter(kind.is_in(_ANSWERS))
        .group_by("session_id", "_call")
        .agg(
            pl.col("output_tokens").filter(is_message).sum().alias("_message_output"),
            pl.col("output_tokens").filter(is_message).is_not_null().any().alias("_in_messages"),
            pl.col("output_tokens").filter(~is_message).sum().alias("_usage_output"),
            pl.col("output_tokens").filter(~is_message).is_not_null().any().alias("_in_usage"),
            pl.col("model").drop_nulls().first().alias("_message_model"),
        )
    )
    tool_model = (
        main.filter(kind == "tool.execution_start")
        .group_by("session_id", "_call")
        .agg(pl.col("model").drop_nulls().first().alias("_tool_model"))
    )
    # A failed attempt answers no prompt: the call after it does.
    prompted = _user_initiated(
        main.join(
            every_start.join(starts, on=["session_id", "_call"], how="anti").select(
                "session_id", "source_line", "source_file"
            ),
            on=["session_id", "source_file", "source_line"],
            how="anti",
        )
    )
    calls = (
        starts.join(end_of_call, on=["session_id", "_call"], how="left")
        .join(messages, on=["session_id", "_call"], how="left")
        .join(tool_model, on=["session_id", "_call"], how="left")
        .join(prompted, on=["session_id", "_call"], how="left")
        .select(
            "source_file",
            "source_line",
            "session_id",
            pl.col("event_seq").alias("_seq"),
            pl.lit("main").alias("kind"),
            pl.coalesce("model", "_message_model", "_tool_model").alias("model"),
            "interaction_id",
            "process_index",
            pl.col("timestamp").alias("start_time"),
            "end_time",
            pl.col("end_time").is_null().alias("interrupted"),
            pl.col("_user_initiated").fill_null(False).alias("user_initiated"),
            pl.when(pl.col("_in_messages"))
            .then(pl.col("_message_output"))
            .when(pl.col("_in_usage"))
            .then(pl.col("_usage_output"))
            .alias("output_tokens"),
        )
    )
    return calls, conform(orphans, ISSUES)


def _user_initiated(main: pl.DataFrame) -> pl.DataFrame:
    """Calls that answer a person's prompt: the first turn after a non-autopilot user message.

    These are the premium requests of request-based billing ("each prompt uses one premium
    request"); autopilot nudges and the agent's own follow-up turns are not.
    """
    kind = pl.col("event_type")
    drivers = main.filter(kind.is_in(["user.message", "assistant.turn_start"])).with_columns(
        (
            (kind.shift(1).over("session_id") == "user.message")
            & ~pl.col("is_autopilot").shift(1).over("session_id").fill_null(False)
        ).alias("_user_initiated")
    )
    return drivers.filter(kind == "assistant.turn_start").select(
        "session_id", "_call", "_user_initiated"
    )


def _subagent_calls(events: pl.DataFrame) -> pl.DataFrame:
    """One call per sub-agent message (or per sub-agent ``assistant.usage`` where captured)."""
    kind = pl.col("event_type")
    tagged = events.with_columns(
        kind.is_in(USAGE_RECORDS).any().over("session_id").alias("_captured"),
        pl.coalesce("agent_id", "parent_tool_call_id").alias("_agent"),
    ).with_columns(
        # A sub-agent call starts when the agent's previous event (its start, or the tool
        # result it answers) ended, unless the record states its duration.
        pl.col("timestamp").shift(1).over("session_id", "_agent").alias("_previous_time")
    )
    from_usage = kind.is_in(USAGE_RECORDS) & (
        (pl.col("initiator") == "sub-agent")
        | pl.col("parent_tool_call_id").is_not_null()
        | pl.col("agent_id").is_not_null()
        | (pl.col("interaction_type") == "conversation-subagent")
    )
    from_message = (kind == "assistant.message") & ~MAIN_AGENT
    sub = tagged.filter(pl.when(pl.col("_captured")).then(from_usage).otherwise(from_message))
    call_key = pl.coalesce("usage_id", "api_call_id")
    sub = sub.filter(call_key.is_null() | call_key.is_first_distinct().over("session_id", "_agent"))
    started = _subagents(events)
    return sub.join(
        started, left_on=["session_id", "_agent"], right_on=["session_id", "_key"], how="left"
    ).select(
        "source_file",
        "source_line",
        "session_id",
        pl.col("event_seq").alias("_seq"),
        pl.lit("subagent").alias("kind"),
        "model",
        "_agent_model",
        pl.col("_agent").alias("agent_id"),
        "agent_name",
        pl.coalesce("parent_tool_call_id", "_spawned_by").alias("parent_tool_call_id"),
        "interaction_id",
        "process_index",
        pl.coalesce(
            pl.col("timestamp") - pl.duration(milliseconds=pl.col("duration_ms")),
            "_previous_time",
            "timestamp",
        ).alias("start_time"),
        pl.col("timestamp").alias("end_time"),
        pl.lit(False).alias("interrupted"),
        pl.lit(False).alias("user_initiated"),
        "output_tokens",
    )


def _subagents(events: pl.DataFrame) -> pl.DataFrame:
    """Sub-agents by the key their events carry (envelope agentId, else the task tool call id)."""
    life = events.filter(
        pl.col("event_type").is_in(["subagent.started", "subagent.completed", "subagent.failed"])
    )
    keyed = pl.concat(
        [
            life.select(
                "session_id", pl.col("agent_id").alias("_key"), "tool_call_id", "tool_name", "model"
            ),
            life.select(
                "session_id",
                pl.col("tool_call_id").alias("_key"),
                "tool_call_id",
                "tool_name",
                "model",
            ),
        ]
    ).filter(pl.col("_key").is_not_null())
    return keyed.group_by("session_id", "_key").agg(
        pl.col("tool_name").drop_nulls().first().alias("agent_name"),
        pl.col("model").drop_nulls().first().alias("_agent_model"),
        pl.col("tool_call_id").drop_nulls().first().alias("_spawned_by"),
    )


def _compaction_calls(events: pl.DataFrame) -> pl.DataFrame:
    """One call per ``session.compaction_complete``; it starts at the open compaction_start."""
    kind = pl.col("event_type")
    phases = events.filter(kind.is_in(["session.compaction_start", "session.compaction_complete"]))
    with_start = phases.with_columns(
        pl.when(kind == "session.compaction_start")
        .then(pl.col("timestamp"))
        .forward_fill()
        .over("session_id")
        .alias("_started"),
        pl.when(kind == "session.compaction_start")
        .then(pl.col("model"))
        .forward_fill()
        .over("session_id")
        .alias("_start_model"),
    )
    return with_start.filter(kind == "session.compaction_complete").select(
        "source_file",
        "source_line",
        "session_id",
        pl.col("event_seq").alias("_seq"),
        pl.lit("compaction").alias("kind"),
        pl.coalesce("model", "_start_model").alias("model"),
        "interaction_id",
        "process_index",
        pl.coalesce("_started", "timestamp").alias("start_time"),
        pl.col("timestamp").alias("end_time"),
        pl.lit(False).alias("interrupted"),
        pl.lit(False).alias("user_initiated"),
        "output_tokens",
    )


def _fill_models(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Name the model of calls whose own events do not (older and scrubbed logs).

    A main call without a model takes the session's selected model at that point (start,
    resume, model change, auto-mode resolution; ``auto`` is a router, not a model, and is
    skipped), else the previous call's of its kind, else the next one's. ``model_source``
    says which: ``log`` (the call's own lines) or ``session``.
    """
    selected = (
        events.filter(
            pl.col("event_type").is_in(_SESSION_MODEL_EVENTS)
            & MAIN_AGENT
            & pl.col("model").is_not_null()
            & (pl.col("model") != "auto")
        )
        .select("session_id", pl.col("event_seq").alias("_seq"), pl.col("model").alias("_selected"))
        .sort("session_id", "_seq")
    )
    calls = calls.sort("session_id", "_seq").with_columns(
        pl.when(pl.col("model").is_not_null()).then(pl.lit("log")).alias("model_source")
    )
    filled = calls.join_asof(
        selected, on="_seq", by="session_id", strategy="backward", check_sortedness=False
    )
    main_fill = pl.col("model").forward_fill().backward_fill().over("session_id", "kind")
    named_here = (pl.col("kind") != "subagent") & pl.col("model_source").is_null()
    return (
        filled.with_columns(
            pl.when(pl.col("kind") == "main")
            .then(pl.coalesce(pl.col("model"), pl.col("_selected"), main_fill))
            .when(pl.col("kind") == "compaction")
            .then(pl.coalesce(pl.col("model"), main_fill))
            .otherwise(pl.col("model"))
            .alias("model"),
            # The session's current model, for sub-agent calls nothing closer names (below).
            pl.coalesce(
                pl.col("_selected"),
                pl.when(pl.col("kind") == "main")
                .then(pl.col("model"))
                .forward_fill()
                .over("session_id"),
            ).alias("_current_model"),
        )
        .with_columns(
            pl.when(named_here & pl.col("model").is_not_null())
            .then(pl.lit("session"))
            .otherwise(pl.col("model_source"))
            .alias("model_source")
        )
        .drop("_selected")
    )


def _subagent_models(
    calls: pl.DataFrame, events: pl.DataFrame, model_metrics: pl.DataFrame | None
) -> pl.DataFrame:
    """Name the model of each sub-agent call, from the closest statement the log makes.

    Older CLIs (March 2026) write sub-agent ``assistant.message`` lines without ``model``
    (schema doc §0b.8). In order: the message itself; the sub-agent's own tool lines
    (``tool.execution_*`` with its ``agentId`` / ``parentToolCallId`` carry ``model``); its
    ``subagent.started``/``completed``; the session's current model at that point; the
    shutdown, when it names exactly one model for the session. A call no step names stays
    without a model (and so unpriced), never guessed from another sub-agent's calls.
    ``model_source`` is ``log`` for the first three, ``session`` and ``shutdown`` for the
    others: where the shutdown counts requests per model, ``model_counts`` may then correct
    a ``session`` guess.
    """
    agent = pl.coalesce("agent_id", "parent_tool_call_id")
    tools = (
        events.filter(
            pl.col("event_type").is_in(["tool.execution_complete", "tool.execution_start"])
            & agent.is_not_null()
            & pl.col("model").is_not_null()
        )
        .group_by("session_id", agent.alias("agent_id"))
        .agg(pl.col("model").first().alias("_tool_model"))
    )
    if model_metrics is None:
        model_metrics = pl.DataFrame(schema={"session_id": pl.String(), "model": pl.String()})
    single = (
        model_metrics.filter(pl.col("model").is_not_null())
        .group_by("session_id")
        .agg(pl.col("model").unique().alias("_models"))
        .filter(pl.col("_models").list.len() == 1)
        .select("session_id", pl.col("_models").list.first().alias("_shutdown_model"))
    )
    sub = pl.col("kind") == "subagent"
    own = pl.coalesce("model", "_tool_model", "_agent_model")
    return (
        calls.join(tools, on=["session_id", "agent_id"], how="left")
        .join(single, on="session_id", how="left")
        .with_columns(
            pl.when(sub)
            .then(pl.coalesce(own, "_current_model", "_shutdown_model"))
            .otherwise(pl.col("model"))
            .alias("model"),
            pl.when(~sub)
            .then(pl.col("model_source"))
            .when(own.is_not_null())
            .then(pl.lit("log"))
            .when(pl.col("_current_model").is_not_null())
            .then(pl.lit("session"))
            .when(pl.col("_shutdown_model").is_not_null())
            .then(pl.lit("shutdown"))
            .alias("model_source"),
        )
        .drop("_tool_model", "_shutdown_model", "_current_model", "_agent_model")
    )
