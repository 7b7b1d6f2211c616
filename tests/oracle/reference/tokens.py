"""The token stage as polars ran it before the engine (``native/agents/copilot/tokens.rs``)
took it over: CALLS -> CALLS with per-call tokens, from the best source available for each call.
Kept as the engine's oracle (``tests/oracle/test_engine_differential.py``), on the reference
reconstruction (``tests/oracle/reference/fit.py``) and calibration
(``tests/oracle/reference/calibrate.py``); nothing at run time imports it.

1. ``observed``: a per-call record. In the log itself: ``assistant.usage`` (SDK captures) and
   ``compactionTokensUsed``; beside it: ``session-store.db`` rows and OpenTelemetry spans
   (``OBSERVED_USAGE``), matched to calls in order within each session, main calls to main
   rows and sub-agent calls to sub-agent rows.
2. ``calibrated``: reconstructed from the log with the agent-loop growth model, then scaled so
   the calls of each model add up exactly to the shutdown's per-model totals.
3. ``estimated``: reconstructed, with no total to scale to (no shutdown: a crash, or calls
   after the last shutdown).

The reconstruction (``reconstruct.py``) fits each session's unknowns (the fixed part of each
kind of agent and model, tokens per byte of tool output, prose and tool arguments, tokens per
item) to every constraint the log carries: the shutdown's Σ input and Σ cache read per model,
observed calls, sub-agent totals, compaction and context sizes. Calibration then apportions
the shutdown's exact totals over the calls in proportion to the fitted prompts. Cache reads
and writes follow prompt caching: a call within the cache TTL of the previous call of the
same model and agent reads what that call left cacheable and writes the new part; the split
is apportioned to the shutdown's cache totals, exactly. Token arithmetic is integer.
"""

from __future__ import annotations

import polars as pl

from analytics.agents.copilot.tables import PASS_CALLS, PASS_SESSIONS
from analytics.core.events import MAIN_AGENT
from analytics.core.schema import ISSUES, conform, empty
from tests.oracle.reference import calibrate as reference_calibrate
from tests.oracle.reference import fit as reference_fit
from tests.oracle.reference.calibrate import _GROUP
from tests.oracle.reference.events import EVENT_KEYS
from tests.oracle.reference.intervals import bounds
from tests.oracle.reference.model_counts import assign_models
from tests.oracle.reference.reconstruct import FIT, priors_for

#: Per-call usage records: ``assistant.usage`` (SDK captures), ``session.usage_record`` (disk).
USAGE_RECORDS = ["assistant.usage", "session.usage_record"]
_TOKENS = ["input_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"]
_LLM = pl.col("kind") != "compaction"
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
    "pre_compaction_tokens",
    "post_compaction_tokens",
    "tool_request_bytes",
    "is_byok",
]


def call_tokens_and_fit(
    calls: pl.DataFrame,
    events: pl.DataFrame,
    sessions: pl.DataFrame,
    model_metrics: pl.DataFrame,
    observed: pl.DataFrame | None = None,
    *,
    use_observed: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(Copilot's calls: CALLS + CALL_TOKENS with the bill of each, ISSUES, the per-session
    fit: ``reconstruct.FIT`` columns, which go to SESSIONS with ``with_call_totals``).
    ``observed`` is an OBSERVED_USAGE frame; ``use_observed=False`` ignores every per-call
    record and reconstructs all calls."""
    events = events.select([c for c in _USED if c in events.columns])
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
    keyed, model_issues = _with_totals(
        _reply_bytes(matched, events), sessions, model_metrics, events
    )
    estimated, fitted = _reconstruct(keyed, events)
    calibrated = _calibrate(estimated).with_columns(
        pl.min_horizontal("_fixed", "input_tokens").alias("fixed_part_tokens"),
        pl.when(pl.col("token_source") == "estimated")
        .then(_estimate_reason())
        .alias("estimate_reason"),
        *bounds("_estimate", "_estimate_sd", "input_tokens", pl.col("token_source") == "estimated"),
    )
    tokens = conform(_byok(calibrated, events, sessions), PASS_CALLS)
    return tokens, pl.concat([issues, model_issues]), fitted


def with_call_totals(
    sessions: pl.DataFrame, calls: pl.DataFrame, fitted: pl.DataFrame
) -> pl.DataFrame:
    """SESSIONS with the sums of their calls' tokens, their models as the calls now name
    them, and the fit figures of ``call_tokens_and_fit`` (``reconstruct.FIT``): the oracle of
    ``analytics.agents.copilot.call_tokens.with_call_totals``, whose docstring says what the
    sums hold (a session without calls sent nothing, 0; one whose calls give no figure is
    null)."""
    sums = calls.group_by("session_id").agg(
        pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(c)
        for c in ["input_tokens", "output_tokens", *_TOKENS[1:]]
    )
    replaced = ["models", "input_tokens", "output_tokens", *_TOKENS[1:], *FIT]
    joined = (
        sessions.drop(replaced, strict=False)
        .join(sums, on="session_id", how="left")
        .join(models_by_calls(calls), on="session_id", how="left")
        .join(fitted, on="session_id", how="left")
        .with_columns(
            pl.when(pl.col("llm_calls") == 0).then(0).otherwise(pl.col(c)).alias(c)
            for c in ["input_tokens", "output_tokens", *_TOKENS[1:]]
        )
    )
    return conform(joined, PASS_SESSIONS)


def models_by_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """Per session: its calls' models, most calls first (ties by name)."""
    return (
        calls.filter(pl.col("model").is_not_null())
        .group_by("session_id", "model")
        .agg(pl.len().alias("n"))
        .sort("session_id", "n", "model", descending=[False, True, False])
        .group_by("session_id", maintain_order=True)
        .agg(pl.col("model").alias("models"))
    )


def _byok(calls: pl.DataFrame, events: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """``is_byok`` per call: its own usage record's flag (a sub-agent call's line, or a main
    call's record in its turn), else its session's (``sessions.byok``)."""
    records = events.filter(
        (pl.col("event_type") == "session.usage_record") & pl.col("is_byok").is_not_null()
    )
    own = records.select("source_file", "source_line", pl.col("is_byok").alias("_own"))
    main = _per_main_call(records, calls, "is_byok", pl.col("is_byok").any().alias("_turn"))
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


def _per_main_call(
    events: pl.DataFrame, calls: pl.DataFrame, column: str, agg: pl.Expr
) -> pl.DataFrame:
    """``agg`` of ``column`` over the main-agent rows of ``events`` each main call owns:
    (session_id, event_seq of the call, the aggregate)."""
    rows = events.filter(MAIN_AGENT).select(
        "session_id", pl.col("event_seq").alias("_event_seq"), column
    )
    return _owning_main_call(rows, calls).group_by("session_id", "event_seq").agg(agg)


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
    main = _per_main_call(
        messages, calls, "content_bytes", pl.col("content_bytes").sum().alias("_reply_bytes")
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


def _reconstruct(calls: pl.DataFrame, events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each call's fitted prompt (``_estimate``), its cacheable prefix and fixed part, and the
    previous call whose cache it can read; and the per-session fit."""
    x = reference_fit.regressors(calls, events)
    members, targets = reference_fit.constraints(x, events)
    estimates, fitted = reference_fit.fit(x, members, targets, priors_for(x, events))
    previous = estimates.select(
        "session_id",
        pl.col("event_seq").alias("_prev_seq"),
        "_prefix_estimate",
        pl.col("_fixed").alias("_prev_fixed"),
    )
    out = (
        x.join(estimates, on=["session_id", "event_seq"], how="left")
        .join(
            previous.rename({"_prefix_estimate": "_prev_prefix_estimate"}),
            on=["session_id", "_prev_seq"],
            how="left",
        )
        .with_columns(
            pl.col("_estimate").fill_null(0).clip(lower_bound=1),
            pl.when(pl.col("_prev_part") == "fixed")
            .then(pl.col("_prev_fixed"))
            .otherwise(pl.col("_prev_prefix_estimate"))
            .alias("_prev_prefix"),
        )
    )
    return out, fitted


def _with_totals(
    calls: pl.DataFrame, sessions: pl.DataFrame, model_metrics: pl.DataFrame, events: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(Calls with the shutdown totals that cover them, ISSUES of the model assignment).

    Calls whose model is a guess first get the models the shutdown's per-model counts imply
    (``model_counts``). Each call then carries its totals (``_t_*``), what those leave for
    the calls without an observed figure (``_left_*``), ``_apportion`` (a total covers it,
    so it is spread over its calls: the session's cost is then the exact price of the
    totals) and ``_sum_ok``: the calls counted for this model are exactly the requests the
    shutdown counted, so its totals are theirs (``calibrated``); otherwise, in an excerpt or
    after a lost line, part of them belongs to calls we cannot see (``estimated``)."""
    segments = _segments(calls, sessions, events)
    totals = _segment_totals(model_metrics, sessions, events)
    segments, issues = assign_models(segments, totals)
    keyed = segments.join(totals.drop("_t_file", "_t_line"), on=_GROUP, how="left")
    open_call = pl.col("token_source").is_null()
    counts_agree = pl.col("_covered").sum().over(_GROUP) == pl.col("_t_requests")
    observed_here = ~open_call & pl.col("_covered")
    left = {
        c: (pl.col(f"_t_{c}") - pl.col(c).filter(observed_here).sum().over(_GROUP)).clip(
            lower_bound=0
        )
        for c in [*_TOKENS, "output_tokens"]
    }
    apportion_to = pl.col("_t_input_tokens").is_not_null() & pl.col("_covered")
    keyed = keyed.with_columns(
        *(expr.alias(f"_left_{c}") for c, expr in left.items()),
        apportion_to.fill_null(False).alias("_apportion"),
        (apportion_to & counts_agree).fill_null(False).alias("_sum_ok"),
        pl.col("_covered").sum().over(_GROUP).alias("_counted"),
    )
    return keyed, issues


def _calibrate(frame: pl.DataFrame) -> pl.DataFrame:
    """Fill unobserved calls from the shutdown's totals or the fit (the reference
    calibration), in session and event order."""
    return reference_calibrate.calibrate(frame.sort("session_id", "event_seq"))


def _estimate_reason() -> pl.Expr:
    """Why a call's tokens are estimated rather than observed or calibrated."""
    model = pl.col("model")
    return (
        pl.when(pl.col("kind") == "compaction")
        .then(pl.lit("compaction calls are not in the shutdown's totals"))
        .when(~pl.col("_has_totals"))
        .then(pl.lit("no shutdown totals in the log"))
        .when(~pl.col("_covered"))
        .then(pl.lit("after the last shutdown: no total covers it"))
        .when(model.is_null())
        .then(pl.lit("no model, so no total to follow"))
        .when(pl.col("_t_input_tokens").is_null())
        .then(pl.format("the shutdown states no token totals for {}", model))
        .otherwise(
            pl.format(
                "calls counted for {} ({}) differ from the shutdown's requests ({}):"
                " its totals are spread over the calls found",
                model,
                pl.col("_counted"),
                pl.col("_t_requests"),
            )
        )
    )


def _segments(calls: pl.DataFrame, sessions: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Which shutdown total covers each call: the session's last (cumulative) or its process's."""
    last_shutdown = (
        events.filter(pl.col("event_type") == "session.shutdown")
        .group_by("session_id", "process_index")
        .agg(pl.col("event_seq").max().alias("_shutdown_seq"))
    )
    mode = sessions.select(
        "session_id",
        "shutdown_mode",
        # the shutdown's token totals were taken (its request total may still be unknown)
        pl.col("token_totals_source")
        .is_in(["shutdown", "shutdown+messages"])
        .fill_null(False)
        .alias("_has_totals"),
    )
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
        pl.col("source_file").alias("_t_file"),
        pl.col("source_line").alias("_t_line"),
        *(pl.col(c).alias(f"_t_{c}") for c in _TOKENS),
        pl.col("output_tokens").alias("_t_output_tokens"),
        pl.col("requests_count").alias("_t_requests"),
    )
