"""CALLS -> CALLS with per-call tokens, from the best source available for each call.

1. ``observed``: a per-call record. In the log itself: ``assistant.usage`` (SDK captures) and
   ``compactionTokensUsed``; beside it: ``session-store.db`` rows and OpenTelemetry spans
   (``OBSERVED_USAGE``), matched to calls in order within each session, main calls to main
   rows and sub-agent calls to sub-agent rows.
2. ``calibrated``: reconstructed from the log with the agent-loop growth model, then scaled so
   the calls of each model add up exactly to the shutdown's per-model totals.
3. ``estimated``: reconstructed, with no total to scale to (no shutdown: a crash, or calls
   after the last shutdown).

The growth model: call k of an agent re-sends a fixed part (system prompt + tool definitions)
and the whole conversation so far: every user, assistant and tool-result text of that agent
before the call, restarted at a compaction's post-compaction size. Text is converted at
``BYTES_PER_TOKEN``. Calibration keeps the fixed part and scales the conversation part, so the
shape of the growth is the log's, and the totals are the shutdown's. Cache reads and writes are
split like Anthropic-style prompt caching: a call within the cache TTL of the previous call of
the same model and agent reads that call's prompt from cache and writes the new part; the split
is then scaled to the shutdown's cache totals, exactly. All arithmetic is integer.
"""

from __future__ import annotations

import polars as pl

from analytics.apportion import apportion
from analytics.calls import USAGE_RECORDS
from analytics.events import EVENT_KEYS, MAIN_AGENT
from analytics.schema import CALL_TOKENS, CALLS, ISSUES, combine, conform, empty

#: Bytes of UTF-8 text per token for reconstruction (a common average for English and code).
BYTES_PER_TOKEN = 4
#: Tool definitions, in tokens, when no shutdown or compaction states them: the middle of the
#: values seen in real 1.0.49-1.0.91 logs (8,395-13,097).
DEFAULT_TOOL_DEFINITIONS_TOKENS = 11_000
#: Prompt cache lifetime used for the read/write split (Anthropic's default: 5 minutes).
CACHE_TTL_MS = 5 * 60 * 1000
#: Automatic prompt caching (OpenAI and others) reuses a prompt prefix in blocks of this size.
AUTO_CACHE_BLOCK = 128

_TOKENS = ["input_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"]
_CONVERSATION = ["user.message", "assistant.message", "tool.execution_complete", "skill.invoked"]
_LLM = pl.col("kind") != "compaction"
#: A session's fixed part as the log states it (see ``stated_fixed_part``).
_STATED_FIXED = (pl.col("system_tokens") + pl.col("tool_definitions_tokens")).drop_nulls().first()
#: The EVENTS columns the steps below read: filters and joins copy these, not the wide rest.
_USED = [
    *EVENT_KEYS,
    "interaction_type",
    "agent_id",
    "parent_tool_call_id",
    "tool_call_id",
    "initiator",
    "content_bytes",
    *_TOKENS,
    "nano_aiu",
    "total_tokens",
    "system_tokens",
    "tool_definitions_tokens",
    "post_compaction_tokens",
    "is_byok",
]


def add_call_tokens(
    calls: pl.DataFrame,
    events: pl.DataFrame,
    sessions: pl.DataFrame,
    model_metrics: pl.DataFrame,
    observed: pl.DataFrame | None = None,
    *,
    use_observed: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return (CALLS + CALL_TOKENS, ISSUES). ``observed`` is an OBSERVED_USAGE frame.

    ``use_observed=False`` ignores every per-call record and reconstructs all calls: what
    ``agentcost validate`` compares against the records to measure the reconstruction's error.
    """
    events = events.select(_USED)
    if use_observed:
        with_log = _observed_in_log(calls, events)
        matched, issues = _observed_beside_log(with_log, observed)
    else:
        matched = calls.with_columns(
            *(pl.lit(None, pl.Int64).alias(c) for c in _TOKENS),
            pl.lit(None, pl.String).alias("billed_nano_aiu"),
            pl.lit(None, pl.String).alias("token_source"),
        )
        issues = empty(ISSUES)
    estimated = _reconstruct(_reply_bytes(matched, events), events)
    calibrated = _calibrate(estimated, sessions, model_metrics, events)
    return conform(_byok(calibrated, events, sessions), combine(CALLS, CALL_TOKENS)), issues


def _byok(calls: pl.DataFrame, events: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """``is_byok`` per call: its own usage record's flag (a sub-agent call's line, or a main
    call's record in its turn), else its session's (``sessions.byok``)."""
    records = events.filter(
        (pl.col("event_type") == "session.usage_record") & pl.col("is_byok").is_not_null()
    )
    own = records.select("source_file", "source_line", pl.col("is_byok").alias("_own"))
    main = (
        _owning_main_call(
            records.filter(MAIN_AGENT).select(
                "session_id", pl.col("event_seq").alias("_event_seq"), "is_byok"
            ),
            calls,
        )
        .group_by("session_id", "event_seq")
        .agg(pl.col("is_byok").any().alias("_turn"))
    )
    return (
        calls.join(own, on=["source_file", "source_line"], how="left")
        .join(main, on=["session_id", "event_seq"], how="left")
        .join(
            sessions.select("session_id", pl.col("byok").alias("_session")),
            on="session_id",
            how="left",
        )
        .with_columns(pl.coalesce("_own", "_turn", "_session").alias("is_byok"))
    )


def _rows(events: pl.DataFrame, kinds: list[str], *columns: str | pl.Expr) -> pl.DataFrame:
    """The events of types ``kinds``, only ``columns``: selected before filtering, so the
    filter copies those columns only, not the whole wide table."""
    return (
        events.select(*columns, pl.col("event_type").alias("_kind"))
        .filter(pl.col("_kind").is_in(kinds))
        .drop("_kind")
    )


def _observed_in_log(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Tokens the log holds per call: compaction usage, and ``assistant.usage`` in captures."""
    usage_cols = ["input_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"]
    # Only events that carry a figure can give a call one (the others would join as nulls).
    own = events.filter(pl.any_horizontal(pl.col(*usage_cols, "nano_aiu").is_not_null())).select(
        "source_file", "source_line", *usage_cols, pl.col("nano_aiu").alias("billed_nano_aiu")
    )
    calls = calls.join(own, on=["source_file", "source_line"], how="left")
    records = events.filter(pl.col("event_type").is_in(USAGE_RECORDS))
    compacting = pl.col("interaction_type") == "conversation-compaction"
    calls = _compaction_records(calls, records.filter(compacting), usage_cols)
    main_usage = (
        records.filter(MAIN_AGENT & ~compacting.fill_null(False))
        .select(
            "session_id",
            pl.col("event_seq").alias("_usage_seq"),
            *(pl.col(c).alias(f"_u_{c}") for c in usage_cols),
            pl.col("nano_aiu").alias("_u_nano"),
        )
        .sort("session_id", "_usage_seq")
    )
    owner = _owning_main_call(main_usage.rename({"_usage_seq": "_event_seq"}), calls)
    owner = owner.group_by("session_id", "event_seq").agg(
        *(pl.col(f"_u_{c}").first() for c in usage_cols), pl.col("_u_nano").first()
    )
    calls = calls.join(owner, on=["session_id", "event_seq"], how="left")
    return calls.with_columns(
        *(pl.coalesce(c, f"_u_{c}").alias(c) for c in usage_cols),
        pl.coalesce("billed_nano_aiu", "_u_nano").alias("billed_nano_aiu"),
    ).with_columns(
        pl.when(pl.col("input_tokens").is_not_null()).then(pl.lit("observed")).alias("token_source")
    )


def _compaction_records(
    calls: pl.DataFrame, records: pl.DataFrame, usage_cols: list[str]
) -> pl.DataFrame:
    """Compaction calls take their usage record's figures (the n-th record of a session for
    its n-th compaction), before those of ``compactionTokensUsed``."""
    if not records.height:
        return calls
    ranked = records.select(
        "session_id",
        pl.int_range(pl.len()).over("session_id").alias("_nth"),
        pl.lit("compaction").alias("kind"),
        *(pl.col(c).alias(f"_r_{c}") for c in [*usage_cols, "output_tokens"]),
        pl.col("nano_aiu").alias("_r_nano"),
    )
    compaction = pl.col("kind") == "compaction"
    joined = calls.with_columns(
        pl.when(compaction).then(pl.int_range(pl.len()).over("session_id", "kind")).alias("_nth")
    ).join(ranked, on=["session_id", "_nth", "kind"], how="left")
    return joined.with_columns(
        *(pl.coalesce(f"_r_{c}", c).alias(c) for c in [*usage_cols, "output_tokens"]),
        pl.coalesce("_r_nano", "billed_nano_aiu").alias("billed_nano_aiu"),
    ).drop("_nth", *(f"_r_{c}" for c in [*usage_cols, "output_tokens"]), "_r_nano")


def _owning_main_call(items: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """Give main-agent events (column ``_event_seq``) the ``event_seq`` of their call.

    A main call owns every main event from its ``turn_start`` up to the next main call.
    """
    main = calls.filter(pl.col("kind") == "main").select("session_id", "event_seq")
    return (
        items.sort("session_id", "_event_seq")
        .join_asof(
            main.sort("session_id", "event_seq"),
            left_on="_event_seq",
            right_on="event_seq",
            by="session_id",
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("event_seq").is_not_null())
    )


def _reply_bytes(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Per call, the bytes of text the model wrote (its messages): the weight for splitting a
    shutdown's output total over calls whose output the log does not state (CLI >= 1.0.91)."""
    messages = _rows(
        events,
        ["assistant.message"],
        "source_file",
        "source_line",
        "session_id",
        "event_seq",
        "agent_id",
        "parent_tool_call_id",
        "initiator",
        "content_bytes",
    )
    main = (
        _owning_main_call(
            messages.filter(MAIN_AGENT).select(
                "session_id", pl.col("event_seq").alias("_event_seq"), "content_bytes"
            ),
            calls,
        )
        .group_by("session_id", "event_seq")
        .agg(pl.col("content_bytes").sum().alias("_reply_bytes"))
    )
    own = messages.select(
        "source_file", "source_line", pl.col("content_bytes").alias("_own_reply_bytes")
    )
    return (
        calls.join(main, on=["session_id", "event_seq"], how="left")
        .join(own, on=["source_file", "source_line"], how="left")
        .with_columns(
            pl.coalesce("_reply_bytes", "_own_reply_bytes").fill_null(0).alias("_reply_bytes")
        )
        .drop("_own_reply_bytes")
    )


def _observed_beside_log(
    calls: pl.DataFrame, observed: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Match per-call records (session store, OTel) to calls, in order within each session.

    Main calls pair with rows without an agent id and sub-agent calls with rows that have one,
    each in their own order. A session whose row count differs from its call count is
    reported, and only the leading calls are matched.
    """
    if observed is None or not observed.height:
        return calls, empty(ISSUES)
    rows = observed.with_columns(
        pl.col("agent_id").is_not_null().alias("_sub"),
    ).with_columns(
        pl.int_range(pl.len()).over("session_id", "_sub").alias("_nth"),
    )
    # One source per session: the first file that has rows for it.
    first_source = rows.group_by("session_id").agg(pl.col("source_file").first().alias("_src"))
    rows = rows.join(first_source, on="session_id").filter(pl.col("source_file") == pl.col("_src"))
    llm = calls.with_columns(
        (pl.col("kind") == "subagent").alias("_sub"),
    ).with_columns(
        pl.when(_LLM).then(pl.int_range(pl.len()).over("session_id", "_sub", "kind")).alias("_nth")
    )
    picked = rows.select(
        "session_id",
        "_sub",
        "_nth",
        *(pl.col(c).alias(f"_o_{c}") for c in [*_TOKENS, "output_tokens"]),
        pl.col("total_nano_aiu").alias("_o_nano"),
    )
    joined = llm.join(picked, on=["session_id", "_sub", "_nth"], how="left")
    use = pl.col("token_source").is_null() & pl.col("_o_input_tokens").is_not_null() & _LLM
    merged = joined.with_columns(
        *(pl.when(use).then(pl.col(f"_o_{c}")).otherwise(pl.col(c)).alias(c) for c in _TOKENS),
        pl.when(use)
        .then(pl.col("_o_output_tokens"))
        .otherwise(pl.col("output_tokens"))
        .alias("output_tokens"),
        pl.when(use)
        .then(pl.col("_o_nano"))
        .otherwise(pl.col("billed_nano_aiu"))
        .alias("billed_nano_aiu"),
        pl.when(use)
        .then(pl.lit("observed"))
        .otherwise(pl.col("token_source"))
        .alias("token_source"),
    )
    counts = (
        llm.filter(_LLM)
        .group_by("session_id")
        .agg(pl.len().alias("calls"), pl.col("source_file").first().alias("log"))
        .join(
            rows.group_by("session_id").agg(pl.len().alias("rows"), pl.col("_src").first()),
            on="session_id",
        )
        .filter(pl.col("calls") != pl.col("rows"))
    )
    issues = counts.select(
        pl.col("_src").alias("file"),
        pl.lit(None, pl.Int64).alias("line"),
        pl.lit("warning").alias("severity"),
        pl.format(
            "session {}: {} per-call usage rows for {} counted calls; matched in order",
            "session_id",
            "rows",
            "calls",
        ).alias("message"),
    )
    return merged, conform(pl.concat([issues, _disagreements(joined)]), ISSUES)


def _disagreements(joined: pl.DataFrame) -> pl.DataFrame:
    """Calls whose record in the log (a usage record) and whose row beside it (session store,
    OTel) both give tokens, and differ: the log's record is kept, the difference reported."""
    differs = (pl.col("token_source") == "observed") & pl.any_horizontal(
        (pl.col(c) != pl.col(f"_o_{c}")).fill_null(False) for c in _TOKENS
    )
    return joined.filter(differs).select(
        pl.col("source_file").alias("file"),
        pl.col("source_line").alias("line"),
        pl.lit("warning").alias("severity"),
        pl.format(
            "the log's usage record and the per-call row beside the log disagree on this call "
            "(input {} vs {}, cache read {} vs {}, cache write {} vs {}); the log's is used",
            *(
                pl.col(name).cast(pl.String).fill_null("none")
                for c in ["input_tokens", "cache_read_tokens", "cache_write_tokens"]
                for name in (c, f"_o_{c}")
            ),
        ).alias("message"),
    )


def _text_tokens(bytes_: pl.Expr) -> pl.Expr:
    """Tokens for a number of bytes of text (rounded up)."""
    return (bytes_ + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def _reconstruct(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Estimate each call's prompt: fixed part + conversation so far (``_estimate``)."""
    agent = pl.coalesce("agent_id", "parent_tool_call_id", pl.lit("main")).alias("_agent")
    items = (
        _rows(
            events,
            [*_CONVERSATION, "session.compaction_complete"],
            "session_id",
            "event_seq",
            "event_type",
            agent,
            "content_bytes",
            "post_compaction_tokens",
        )
        .sort("session_id", "event_seq")
        .with_columns(
            pl.col("content_bytes")
            .fill_null(0)
            .cum_sum()
            .over("session_id", "_agent")
            .alias("_bytes_so_far")
        )
    )
    fixed = fixed_part(events)
    # postCompactionTokens counts the whole new prompt; its conversation part is what is left
    # after the system prompt and tool definitions the compaction start reported.
    stated = (
        events.filter(
            pl.col("event_type").is_in(["session.compaction_start", "session.compaction_complete"])
        )
        .sort("session_id", "event_seq")
        .select(
            "session_id",
            "event_seq",
            (pl.col("system_tokens") + pl.col("tool_definitions_tokens"))
            .forward_fill()
            .over("session_id")
            .alias("_stated_fixed"),
        )
    )
    compactions = (
        items.filter(pl.col("event_type") == "session.compaction_complete")
        .join(stated, on=["session_id", "event_seq"], how="left")
        .join(fixed, on="session_id", how="left")
        .select(
            "session_id",
            "_agent",
            "event_seq",
            pl.col("_bytes_so_far").alias("_bytes_at_compaction"),
            (
                pl.col("post_compaction_tokens").fill_null(0)
                - pl.coalesce("_stated_fixed", "_fixed", pl.lit(0))
            )
            .clip(lower_bound=0)
            .alias("_post_tokens"),
        )
    )
    conversation = items.select("session_id", "_agent", "event_seq", "_bytes_so_far")
    keyed = calls.with_columns(
        pl.coalesce(
            pl.when(pl.col("kind") == "subagent").then(pl.col("agent_id")),
            pl.lit("main"),
        ).alias("_agent")
    ).sort("session_id", "event_seq")
    asof = {
        "on": "event_seq",
        "by": ["session_id", "_agent"],
        "strategy": "backward",
        "allow_exact_matches": False,
        "check_sortedness": False,
    }
    estimated = (
        keyed.join_asof(conversation.sort("session_id", "event_seq"), **asof)  # type: ignore[arg-type]
        .join_asof(compactions.sort("session_id", "event_seq"), **asof)  # type: ignore[arg-type]
        .join(fixed, on="session_id", how="left")
    )
    since_compaction = pl.col("_bytes_so_far").fill_null(0) - pl.col(
        "_bytes_at_compaction"
    ).fill_null(0)
    conversation_tokens = pl.col("_post_tokens").fill_null(0) + _text_tokens(since_compaction)
    estimated = estimated.with_columns(
        pl.col("_fixed").fill_null(DEFAULT_TOOL_DEFINITIONS_TOKENS).alias("_fixed"),
        conversation_tokens.alias("_conversation"),
    )
    return _subagent_fixed_parts(estimated, events).with_columns(
        (pl.col("_fixed") + pl.col("_conversation")).alias("_estimate")
    )


def _subagent_fixed_parts(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """A sub-agent's own fixed part, from the run total its completion reports.

    ``subagent.completed.totalTokens`` is the input plus output of all the sub-agent's calls
    (exactly so in real 1.0.80 logs), so where every call's output is known, the fixed part
    each call re-sent is (total - outputs - conversation parts) / calls. Sub-agents have their
    own, smaller system prompt and tools; without a total they keep the session's fixed part.
    """
    runs = events.filter(
        pl.col("event_type").is_in(["subagent.completed", "subagent.failed"])
        & pl.col("total_tokens").is_not_null()
    )
    totals = (
        pl.concat(
            [
                runs.select("session_id", pl.col(key).alias("_agent"), "total_tokens")
                for key in ("agent_id", "tool_call_id")
            ]
        )
        .drop_nulls("_agent")
        .unique(["session_id", "_agent"], keep="last")
    )
    agent = ["session_id", "_agent"]
    sub = pl.col("kind") == "subagent"
    per_agent = (
        calls.filter(sub)
        .group_by(agent)
        .agg(
            pl.len().alias("_n"),
            pl.col("_conversation").sum().alias("_conversation_sum"),
            pl.when(pl.col("output_tokens").is_not_null().all())
            .then(pl.col("output_tokens").sum())
            .alias("_output_sum"),
        )
        .join(totals, on=agent)
        .select(
            *agent,
            (
                (pl.col("total_tokens") - pl.col("_output_sum") - pl.col("_conversation_sum"))
                // pl.col("_n")
            ).alias("_own_fixed"),
        )
        .filter(pl.col("_own_fixed") >= 0)
    )
    return (
        calls.join(per_agent, on=agent, how="left")
        .with_columns(
            pl.when(sub & pl.col("_own_fixed").is_not_null())
            .then(pl.col("_own_fixed"))
            .otherwise(pl.col("_fixed"))
            .alias("_fixed")
        )
        .drop("_own_fixed")
    )


def stated_fixed_part(events: pl.DataFrame) -> pl.DataFrame:
    """Per session: system prompt + tool definitions in tokens (``fixed_tokens``), as the log
    states them (the first shutdown or compaction giving both); null where none does."""
    return events.group_by("session_id").agg(_STATED_FIXED.alias("fixed_tokens"))


def fixed_part(events: pl.DataFrame) -> pl.DataFrame:
    """Per session: system prompt + tool definitions, in tokens (``_fixed``).

    As the log states them (``stated_fixed_part``); else the first main system message
    converted to tokens plus a default for tool definitions.
    """
    system_text = (pl.col("event_type") == "system.message") & pl.col("agent_id").is_null()
    estimated = (
        _text_tokens(pl.col("content_bytes").filter(system_text).first())
        + DEFAULT_TOOL_DEFINITIONS_TOKENS
    )
    return events.group_by("session_id").agg(pl.coalesce(_STATED_FIXED, estimated).alias("_fixed"))


def _calibrate(
    calls: pl.DataFrame,
    sessions: pl.DataFrame,
    model_metrics: pl.DataFrame,
    events: pl.DataFrame,
) -> pl.DataFrame:
    """Fill unobserved calls: scaled to the shutdown's per-model totals where they exist."""
    segments = _segments(calls, sessions, events)
    totals = _segment_totals(model_metrics, sessions, events)
    keyed = segments.join(totals, on=["session_id", "_segment", "model"], how="left")
    open_call = pl.col("token_source").is_null()
    group = ["session_id", "_segment", "model"]
    # Scale only where the calls counted for this model are exactly the requests the shutdown
    # counted: otherwise (an excerpt, a lost line) the total belongs to calls we cannot see.
    counts_agree = pl.col("_covered").sum().over(group) == pl.col("_t_requests")
    calibrate = (
        open_call & pl.col("_t_input_tokens").is_not_null() & pl.col("_covered") & counts_agree
    )
    # What the shutdown total leaves for the calls without an observed figure.
    observed_here = ~open_call & pl.col("_covered")
    left = {
        c: (pl.col(f"_t_{c}") - pl.col(c).filter(observed_here).sum().over(group)).clip(
            lower_bound=0
        )
        for c in [*_TOKENS, "output_tokens"]
    }
    frame = keyed.with_columns(
        *(expr.alias(f"_left_{c}") for c, expr in left.items()),
        calibrate.alias("_calibrate"),
    )
    target = frame.filter(pl.col("_calibrate"))
    rest = frame.filter(~pl.col("_calibrate"))
    target = _scale_inputs(target, group)
    rest = _estimate_inputs(rest)
    out = pl.concat([target, rest], how="diagonal_relaxed").sort("session_id", "event_seq")
    return out


def _scale_inputs(frame: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """Scale conversation parts so the inputs sum to the shutdown's; split the caches exactly."""
    fixed_total = pl.col("_fixed").sum().over(group).cast(pl.Int64)
    room = pl.col("_left_input_tokens") - fixed_total
    keep_fixed = room >= 0
    # Conversation shares of what is left after every call's fixed part; if the fixed parts
    # alone exceed the total, the estimate as a whole is scaled instead.
    conversation = apportion(room.clip(lower_bound=0), pl.col("_conversation"), group, "event_seq")
    whole = apportion(pl.col("_left_input_tokens"), pl.col("_estimate"), group, "event_seq")
    frame = frame.with_columns(
        pl.when(keep_fixed.all().over(group))
        .then(pl.col("_fixed") + conversation)
        .otherwise(whole)
        .alias("input_tokens")
    )
    frame = _split_cache(frame, group, exact=True)
    reasoning = apportion(
        pl.col("_left_reasoning_tokens").fill_null(0),
        pl.col("output_tokens").fill_null(0),
        group,
        "event_seq",
    )
    return frame.with_columns(
        pl.when(pl.col("_left_reasoning_tokens").is_not_null())
        .then(reasoning)
        .alias("reasoning_tokens"),
        _fill_output(group).alias("output_tokens"),
        pl.lit("calibrated").alias("token_source"),
    )


def _fill_output(group: list[str]) -> pl.Expr:
    """Output of calls the log gives none for: the shutdown's remaining output, split by the
    size of each call's reply. Calls with a stated output keep it."""
    missing = pl.col("output_tokens").is_null()
    left = pl.col("_left_output_tokens") - pl.col("output_tokens").sum().over(group)
    weight = pl.when(missing).then(pl.col("_reply_bytes")).otherwise(0)
    share = apportion(left.clip(lower_bound=0), weight, group, "event_seq")
    return (
        pl.when(missing & pl.col("_t_output_tokens").is_not_null())
        .then(share)
        .otherwise(pl.col("output_tokens"))
    )


def _estimate_inputs(frame: pl.DataFrame) -> pl.DataFrame:
    """Calls with no per-call record and no total to scale to: the growth model as it is."""
    open_call = pl.col("token_source").is_null()
    frame = frame.with_columns(
        pl.when(open_call)
        .then(pl.col("_estimate"))
        .otherwise(pl.col("input_tokens"))
        .alias("input_tokens")
    )
    estimated = _split_cache(frame.filter(open_call), ["session_id"], exact=False).with_columns(
        pl.lit("estimated").alias("token_source")
    )
    return pl.concat([estimated, frame.filter(~open_call)], how="diagonal_relaxed")


def _split_cache(frame: pl.DataFrame, group: list[str], *, exact: bool) -> pl.DataFrame:
    """Cache read = previous prompt of the same model and agent within the TTL; write = rest.

    With ``exact``, the reads, writes and uncached parts are apportioned so each sums to the
    shutdown's figure while read + write + uncached = input on every call. Without it (no
    totals to follow), the provider's caching decides: Anthropic models (``claude-*``) write the
    new part to the cache explicitly; the others cache automatically, reading the previous
    prompt in blocks of ``AUTO_CACHE_BLOCK`` tokens and writing nothing billable.
    """
    chain = list(dict.fromkeys([*group, "model", "_agent"]))
    ordered = frame.sort("session_id", "event_seq")
    previous = pl.col("input_tokens").shift(1).over(chain)
    gap = (pl.col("start_time") - pl.col("start_time").shift(1).over(chain)).dt.total_milliseconds()
    warm = previous.is_not_null() & (gap <= CACHE_TTL_MS).fill_null(False)
    ordered = ordered.with_columns(
        pl.when(warm)
        .then(pl.min_horizontal(previous, pl.col("input_tokens")))
        .otherwise(0)
        .alias("_raw_read")
    )
    if not exact:
        explicit = pl.col("model").str.starts_with("claude").fill_null(True)
        block = AUTO_CACHE_BLOCK
        read = (
            pl.when(explicit)
            .then(pl.col("_raw_read"))
            .otherwise(pl.col("_raw_read") // block * block)
        )
        return ordered.with_columns(read.alias("cache_read_tokens")).with_columns(
            pl.when(explicit)
            .then(pl.col("input_tokens") - pl.col("cache_read_tokens"))
            .otherwise(0)
            .alias("cache_write_tokens")
        )
    total_in = pl.col("input_tokens").sum().over(group)
    uncached_total = (
        pl.col("_left_input_tokens")
        - pl.col("_left_cache_read_tokens")
        - pl.col("_left_cache_write_tokens")
    ).clip(lower_bound=0)
    uncached = apportion(
        pl.min_horizontal(uncached_total, total_in), pl.col("input_tokens"), group, "event_seq"
    )
    ordered = ordered.with_columns(uncached.alias("_uncached"))
    capacity = pl.col("input_tokens") - pl.col("_uncached")
    reads_total = pl.min_horizontal(pl.col("_left_cache_read_tokens"), capacity.sum().over(group))
    warm_capacity = pl.when(pl.col("_raw_read") > 0).then(capacity).otherwise(0)
    fits = reads_total <= warm_capacity.sum().over(group)
    overflow = (reads_total - warm_capacity.sum().over(group)).clip(lower_bound=0)
    cold_capacity = pl.when(pl.col("_raw_read") > 0).then(0).otherwise(capacity)
    read = (
        pl.when(fits)
        .then(apportion(reads_total, warm_capacity, group, "event_seq"))
        .otherwise(warm_capacity + apportion(overflow, cold_capacity, group, "event_seq"))
    )
    return ordered.with_columns(read.alias("cache_read_tokens")).with_columns(
        (capacity - pl.col("cache_read_tokens")).alias("cache_write_tokens")
    )


def _segments(calls: pl.DataFrame, sessions: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Which shutdown total covers each call: the session's last (cumulative) or its process's."""
    last_shutdown = (
        events.filter(pl.col("event_type") == "session.shutdown")
        .group_by("session_id", "process_index")
        .agg(pl.col("event_seq").max().alias("_shutdown_seq"))
    )
    mode = sessions.select("session_id", "shutdown_mode")
    final = last_shutdown.group_by("session_id").agg(
        pl.col("_shutdown_seq").max().alias("_final_seq")
    )
    keyed = (
        calls.join(mode, on="session_id", how="left")
        .join(last_shutdown, on=["session_id", "process_index"], how="left")
        .join(final, on="session_id", how="left")
    )
    cumulative = pl.col("shutdown_mode") == "cumulative"
    return keyed.with_columns(
        pl.when(cumulative).then(0).otherwise(pl.col("process_index")).alias("_segment"),
        (
            _LLM
            & pl.when(cumulative)
            .then(pl.col("event_seq") < pl.col("_final_seq"))
            .otherwise(pl.col("event_seq") < pl.col("_shutdown_seq"))
        )
        .fill_null(False)
        .alias("_covered"),
    )


def _segment_totals(
    model_metrics: pl.DataFrame, sessions: pl.DataFrame, events: pl.DataFrame
) -> pl.DataFrame:
    """Per (session, segment, model): the shutdown's token totals."""
    placed = model_metrics.join(
        events.select("source_file", "source_line", "event_seq"), on=["source_file", "source_line"]
    ).join(sessions.select("session_id", "shutdown_mode"), on="session_id", how="left")
    cumulative = pl.col("shutdown_mode") == "cumulative"
    latest = placed.with_columns(
        pl.when(cumulative).then(0).otherwise(pl.col("process_index")).alias("_segment")
    ).filter(pl.col("event_seq") == pl.col("event_seq").max().over("session_id", "_segment"))
    return latest.select(
        "session_id",
        "_segment",
        "model",
        *(pl.col(c).alias(f"_t_{c}") for c in _TOKENS),
        pl.col("output_tokens").alias("_t_output_tokens"),
        pl.col("requests_count").alias("_t_requests"),
    )
