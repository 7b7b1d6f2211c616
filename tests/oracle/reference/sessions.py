"""EVENTS + CALLS + MODEL_METRICS -> SESSIONS: one row per session, reconciled with the log.

The log's own ground truth is ``session.shutdown``: per-model request counts and tokens. A
file holds one shutdown per process, and CLI versions differ: since 1.0.66 (the release that
added ``session.usage_checkpoint``) every shutdown is cumulative over the whole session;
earlier builds reset the counters per process. ``shutdown_mode`` records which reading was
used: ``cumulative`` (take the last shutdown) or ``per_process`` (sum them), decided by the
CLI version or checkpoints when present, otherwise by which reading agrees with the calls
counted before each shutdown. Totals are therefore taken once, never once per process.

Compaction calls are excluded from the comparison: Copilot leaves them out of
``modelMetrics``; failed calls (``calls.failed_calls``) are not requests and are counted
apart. Where the counts still differ, ``calls_delta_reason`` names the cause the log shows:
a ``/rewind`` (the shutdown then counts only the calls after the rewind point), or lines
missing from the file (a shutdown states the file's size when it was written).

Without a shutdown (or with an empty one), ``session.usage_record`` lines give the session's
tokens and bill: one record per call (``events.drop_repeats`` keeps one per usage id).
"""

from __future__ import annotations

import polars as pl

from analytics.agents.copilot.tables import PASS_SESSIONS
from analytics.core.events import MAIN_AGENT
from analytics.core.schema import ISSUES, conform, with_nulls
from tests.oracle.reference.calls import failed_calls
from tests.oracle.reference.events import EVENT_KEYS
from tests.oracle.reference.tokens import models_by_calls

_CUMULATIVE_SINCE = (1, 0, 66)
#: The EVENTS columns sessions are summarised from: filters copy these, not the wide rest.
_USED = [
    *EVENT_KEYS,
    "timestamp",
    "agent_id",
    "parent_tool_call_id",
    "initiator",
    "tool_name",
    "is_autopilot",
    "text",
    "cwd",
    "repository",
    "copilot_version",
    "status_detail",
    "total_nano_aiu",
    "total_premium_requests",
    "total_api_duration_ms",
    "info_type",
    "is_byok",
    "nano_aiu",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "events_file_size_bytes",
    "byte_offset",
]
_TOKENS = [
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
]


def summarize_sessions(
    events: pl.DataFrame, calls: pl.DataFrame, model_metrics: pl.DataFrame
) -> pl.DataFrame:
    """One SESSIONS row per session found in ``events``."""
    failed = failed_calls(events).group_by("session_id").agg(pl.len().alias("failed_calls"))
    events = events.select(_USED)
    records = events.filter(pl.col("event_type") == "session.usage_record")
    shutdowns = _shutdowns(events, calls, model_metrics)
    mode = _shutdown_mode(events, shutdowns)
    truth = _ground_truth(shutdowns, mode)
    sessions = (
        _overview(events)
        .join(_call_counts(calls), on="session_id", how="left")
        .join(_tools(events), on="session_id", how="left")
        .join(mode, on="session_id", how="left")
        .join(truth, on="session_id", how="left")
        .join(_uncovered(calls, truth), on="session_id", how="left")
        .join(_billed(events, mode), on="session_id", how="left")
        .join(failed, on="session_id", how="left")
        .join(_record_totals(records), on="session_id", how="left")
        .join(
            _gaps(events).group_by("session_id").agg(pl.col("message").first().alias("_gap")),
            on="session_id",
            how="left",
        )
    )
    # A session without calls or tools has zero of them: a count, not an unknown.
    sessions = sessions.with_columns(
        pl.col(c).fill_null(0)
        for c in (
            "tool_calls_total",
            "llm_calls",
            "main_calls",
            "subagent_calls",
            "compaction_calls",
            "interrupted_calls",
            "failed_calls",
        )
    )
    uncovered = pl.col("_uncovered_calls").fill_null(0)
    covered = pl.col("llm_calls") - pl.col("compaction_calls") - uncovered
    sessions = (
        sessions.with_columns(
            pl.when(pl.col("shutdown_requests").is_not_null()).then(covered).alias("calls_checked"),
            (covered - pl.col("shutdown_requests")).alias("calls_delta"),
            *_token_totals(),
            *_status(),
        )
        .with_columns(
            (pl.col("calls_delta") == 0).alias("calls_agree"),
            _delta_reason().alias("calls_delta_reason"),
            (
                pl.col("_byok_records")
                | (
                    (pl.col("logged_input_tokens") > 0)
                    & (pl.col("billed_nano_aiu").cast(pl.Decimal(38, 9), strict=False) == 0)
                )
            )
            .fill_null(False)
            .alias("byok"),
        )
        .with_columns(
            pl.when(pl.col("calls_delta_reason").is_not_null())
            .then(
                pl.concat_str(
                    pl.col("calls_delta_reason"),
                    pl.col("status_detail"),
                    separator="; ",
                    ignore_nulls=True,
                )
            )
            .otherwise(pl.col("status_detail"))
            .alias("status_detail")
        )
    )
    # The fit figures and the token totals come with the per-call tokens
    # (``tokens.with_call_totals``).
    later = {
        name: dtype
        for name, dtype in PASS_SESSIONS.items()
        if name.startswith("fit_") or name in _TOKENS
    }
    return conform(with_nulls(sessions.sort("start_time", "session_id"), later), PASS_SESSIONS)


def _record_totals(records: pl.DataFrame) -> pl.DataFrame:
    """Per session: the records' token sums and bill, and whether any call was BYOK."""
    return records.group_by("session_id").agg(
        pl.len().alias("_records"),
        *(pl.col(c).sum().alias(f"_record_{c}") for c in _TOKENS),
        _decimal_sum(pl.col("nano_aiu")).alias("_record_nano"),
        pl.col("is_byok").fill_null(False).any().alias("_byok_records"),
    )


def _gaps(events: pl.DataFrame) -> pl.DataFrame:
    """Shutdown lines that show bytes missing before them: (session_id, file, line, message).

    Copilot writes on each shutdown the size its log had then (``eventsFileSizeBytes``,
    counted from the session's ``session.start``), so a line found nearer the start than that
    has lost lines before it (an excerpt, or a damaged copy). Extra bytes (repeated lines) are
    not a loss and are reported as repeats instead.
    """
    starts = (
        events.filter(pl.col("event_type") == "session.start")
        .group_by("session_id", "source_file")
        .agg(pl.col("byte_offset").min().alias("_start_offset"))
    )
    marks = events.filter(
        (pl.col("event_type") == "session.shutdown")
        & pl.col("events_file_size_bytes").is_not_null()
    ).join(starts, on=["session_id", "source_file"])
    found = pl.col("byte_offset") - pl.col("_start_offset")
    stated = pl.col("events_file_size_bytes")
    return marks.filter(found < stated).select(
        "session_id",
        pl.col("source_file").alias("file"),
        pl.col("source_line").alias("line"),
        pl.format(
            "{} bytes of the session's log are missing before this line (its session.shutdown "
            "states the size the log had when it was written): an excerpt, or lines lost",
            stated - found,
        ).alias("message"),
    )


def session_issues(events: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """Warnings about what a session's log shows of its own totals: bytes missing before a
    shutdown, and a ``/rewind`` after which the shutdown undercounts the calls made."""
    rewound = sessions.filter(pl.col("rewinds") > 0).select("session_id", "calls_delta")
    rewinds = events.filter(pl.col("info_type") == "rewind").join(rewound, on="session_id")
    rewind_issues = rewinds.select(
        pl.col("source_file").alias("file"),
        pl.col("source_line").alias("line"),
        pl.lit("warning").alias("severity"),
        pl.when(pl.col("calls_delta") > 0)
        .then(
            pl.format(
                "/rewind: the session.shutdown counts only the calls after the rewind point; "
                "{} calls made before it are counted here, not in the shutdown",
                pl.col("calls_delta"),
            )
        )
        .otherwise(pl.lit("/rewind: the session.shutdown may leave out calls made before it"))
        .alias("message"),
    )
    gaps = _gaps(events.select(_USED)).select(
        "file", "line", pl.lit("warning").alias("severity"), "message"
    )
    return conform(pl.concat([gaps, rewind_issues]), ISSUES)


def _delta_reason() -> pl.Expr:
    """Why the calls counted differ from the shutdown's requests, as far as the log says."""
    delta = pl.col("calls_delta")
    return (
        pl.when(delta.is_null() | (delta == 0))
        .then(None)
        .when((delta > 0) & (pl.col("rewinds") > 0))
        .then(
            pl.format(
                "/rewind: the shutdown counts only the calls after the rewind point ({} more "
                "were made)",
                delta,
            )
        )
        .when((delta < 0) & pl.col("_gap").is_not_null())
        .then(pl.lit("lines missing from the log: ") + pl.col("_gap"))
        .otherwise(pl.lit("not explained by the log"))
    )


def _overview(events: pl.DataFrame) -> pl.DataFrame:
    """Identity, place, time and conversation counts of each session."""
    kind = pl.col("event_type")
    user = (kind == "user.message") & MAIN_AGENT
    process_span = (
        events.group_by("session_id", "process_index")
        .agg((pl.col("timestamp").max() - pl.col("timestamp").min()).alias("_span"))
        .group_by("session_id")
        .agg(pl.col("_span").sum().dt.total_milliseconds().alias("wall_time_ms"))
    )
    last = pl.col("event_seq") == pl.col("event_seq").max()
    return (
        events.group_by("session_id")
        .agg(
            pl.col("source_file").unique(maintain_order=True).alias("source_files"),
            pl.col("timestamp").min().alias("start_time"),
            pl.col("timestamp").max().alias("end_time"),
            pl.col("cwd").drop_nulls().first().alias("cwd"),
            pl.col("repository").drop_nulls().first().alias("repository"),
            pl.col("copilot_version").drop_nulls().last().alias("copilot_version"),
            (pl.col("process_index").max() + 1).alias("processes"),
            (user & ~pl.col("is_autopilot")).sum().alias("user_messages"),
            (user & pl.col("is_autopilot")).sum().alias("autopilot_nudges"),
            (pl.col("info_type") == "rewind").sum().alias("rewinds"),
            (kind == "session.task_complete").any().alias("_completed"),
            pl.col("text").filter(kind == "session.task_complete").last().alias("_summary"),
            pl.col("text").filter(kind == "abort").last().alias("_abort"),
            pl.col("status_detail")
            .filter(kind == "session.shutdown")
            .last()
            .alias("_shutdown_type"),
            pl.col("text").filter(kind == "session.error").last().alias("_error"),
            kind.filter(last).first().alias("_last_type"),
            (kind == "session.shutdown")
            .filter(pl.col("process_index") == pl.col("process_index").max())
            .any()
            .alias("_final_shutdown"),
        )
        .join(process_span, on="session_id", how="left")
    )


def _call_counts(calls: pl.DataFrame) -> pl.DataFrame:
    """Calls by kind, models by number of calls, and whether the last main call was cut off."""
    kind = pl.col("kind")
    by_model = models_by_calls(calls)
    counts = calls.group_by("session_id").agg(
        pl.len().alias("llm_calls"),
        (kind == "main").sum().alias("main_calls"),
        (kind == "subagent").sum().alias("subagent_calls"),
        (kind == "compaction").sum().alias("compaction_calls"),
        pl.col("interrupted").sum().alias("interrupted_calls"),
        pl.col("interrupted").filter(kind == "main").last().alias("_last_interrupted"),
    )
    return counts.join(by_model, on="session_id", how="left")


def _tools(events: pl.DataFrame) -> pl.DataFrame:
    """Tool calls per tool name (main agent and sub-agents), most used first."""
    starts = events.filter(pl.col("event_type") == "tool.execution_start")
    return (
        starts.group_by("session_id", pl.col("tool_name").fill_null("?").alias("tool"))
        .agg(pl.len().alias("calls"))
        .sort("session_id", "calls", "tool", descending=[False, True, False])
        .group_by("session_id", maintain_order=True)
        .agg(
            pl.struct("tool", "calls").alias("tool_calls"),
            pl.col("calls").sum().alias("tool_calls_total"),
        )
    )


def _shutdowns(events: pl.DataFrame, calls: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """Every shutdown with its request and token sums and the calls counted before it."""
    marks = events.filter(pl.col("event_type") == "session.shutdown").select(
        "session_id", "source_file", "source_line", "event_seq", "process_index"
    )
    sums = metrics.group_by("source_file", "source_line").agg(
        pl.len().alias("_metrics"),
        # unknown when any model's count is: the others' sum is no total to check against
        _known_sum(pl.col("requests_count")).alias("requests"),
        *(pl.col(c).sum().alias(c) for c in _TOKENS),
        *(pl.col(c).is_not_null().any().alias(f"_has_{c}") for c in _TOKENS),
    )
    llm = calls.filter(pl.col("kind") != "compaction")
    joined = marks.join(sums, on=["source_file", "source_line"], how="left").join(
        llm.select("session_id", "event_seq", "process_index"),
        on="session_id",
        how="left",
        suffix="_call",
    )
    return joined.group_by("session_id", "event_seq", "process_index", maintain_order=True).agg(
        pl.col("_metrics").first().is_not_null().alias("_metrics"),
        pl.col("requests").first(),
        *(pl.when(pl.col(f"_has_{c}").first()).then(pl.col(c).first()).alias(c) for c in _TOKENS),
        (pl.col("event_seq_call") < pl.col("event_seq")).sum().alias("calls_before"),
        (
            (pl.col("event_seq_call") < pl.col("event_seq"))
            & (pl.col("process_index_call") == pl.col("process_index"))
        )
        .sum()
        .alias("calls_in_process"),
    )


def _known_sum(values: pl.Expr) -> pl.Expr:
    """The sum of ``values``, null when one of them is."""
    return pl.when(values.is_null().any()).then(None).otherwise(values.sum())


def _shutdown_mode(events: pl.DataFrame, shutdowns: pl.DataFrame) -> pl.DataFrame:
    """Decide per session whether shutdown counters are cumulative or per process."""
    parts = pl.col("copilot_version").str.extract_groups(r"^(\d+)\.(\d+)\.(\d+)")
    version = (
        parts.struct["1"].cast(pl.Int64) * 1_000_000
        + parts.struct["2"].cast(pl.Int64) * 1_000
        + parts.struct["3"].cast(pl.Int64)
    )
    evidence = events.group_by("session_id").agg(
        (pl.col("event_type") == "session.usage_checkpoint").any().alias("_checkpoints"),
        pl.col("copilot_version").drop_nulls().first().alias("copilot_version"),
    )
    fit = (
        shutdowns.filter(pl.col("_metrics"))
        .group_by("session_id")
        .agg(
            pl.len().alias("_with_metrics"),
            (pl.col("requests") - pl.col("calls_before")).abs().sum().alias("_cumulative_error"),
            (pl.col("requests") - pl.col("calls_in_process")).abs().sum().alias("_process_error"),
        )
    )
    counted = shutdowns.group_by("session_id").agg(pl.len().alias("shutdowns"))
    major, minor, patch = _CUMULATIVE_SINCE
    newer = version >= major * 1_000_000 + minor * 1_000 + patch
    return (
        evidence.join(counted, on="session_id", how="left")
        .join(fit, on="session_id", how="left")
        .select(
            "session_id",
            pl.col("shutdowns").fill_null(0),
            pl.when(pl.col("shutdowns").fill_null(0) == 0)
            .then(None)
            .when(pl.col("_checkpoints") | newer.fill_null(False))
            .then(pl.lit("cumulative"))
            .when(pl.col("_process_error") < pl.col("_cumulative_error"))
            .then(pl.lit("per_process"))
            .otherwise(pl.lit("cumulative"))
            .alias("shutdown_mode"),
        )
    )


def _ground_truth(shutdowns: pl.DataFrame, mode: pl.DataFrame) -> pl.DataFrame:
    """Session totals from the shutdowns: the last one if cumulative, else their sum."""
    ordered = shutdowns.join(mode.select("session_id", "shutdown_mode"), on="session_id").filter(
        pl.col("_metrics")
    )
    cumulative = pl.col("shutdown_mode").first() == "cumulative"
    return (
        ordered.sort("session_id", "event_seq")
        .group_by("session_id")
        .agg(
            pl.when(cumulative)
            .then(pl.col("requests").last())
            .otherwise(_known_sum(pl.col("requests")))
            .alias("shutdown_requests"),
            *(
                pl.when(cumulative)
                .then(pl.col(c).last())
                .otherwise(pl.when(pl.col(c).is_not_null().all()).then(pl.col(c).sum()))
                .alias(f"_shutdown_{c}")
                for c in _TOKENS
            ),
            pl.col("event_seq").last().alias("_covered_until"),
            pl.col("process_index").alias("_covered_processes"),
            cumulative.alias("_cumulative"),
        )
    )


def _uncovered(calls: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """Calls the shutdown totals do not include: those after the last shutdown (a crash)."""
    llm = calls.filter(pl.col("kind") != "compaction").join(
        truth.select("session_id", "_covered_until", "_covered_processes", "_cumulative"),
        on="session_id",
        how="left",
    )
    after = pl.col("_covered_until").is_null() | pl.when(pl.col("_cumulative")).then(
        pl.col("event_seq") > pl.col("_covered_until")
    ).otherwise(~pl.col("_covered_processes").list.contains(pl.col("process_index")))
    return llm.group_by("session_id").agg(
        after.sum().alias("_uncovered_calls"),
        pl.col("output_tokens").filter(after).sum().alias("_uncovered_output"),
        pl.col("output_tokens").filter(after).is_not_null().any().alias("_uncovered_has_output"),
        pl.col("output_tokens").is_not_null().any().alias("_any_output"),
    )


def _billed(events: pl.DataFrame, mode: pl.DataFrame) -> pl.DataFrame:
    """The log's own bill, in nano-AIU: the last cumulative total, or the per-process sum."""
    bills = events.filter(
        pl.col("event_type").is_in(["session.shutdown", "session.usage_checkpoint"])
        & pl.col("total_nano_aiu").is_not_null()
    ).join(mode.select("session_id", "shutdown_mode"), on="session_id", how="left")
    per_process = pl.col("shutdown_mode").first() == "per_process"
    shutdown = pl.col("event_type") == "session.shutdown"
    return (
        bills.sort("session_id", "event_seq")
        .group_by("session_id")
        .agg(
            pl.when(per_process)
            .then(_decimal_sum(pl.col("total_nano_aiu").filter(shutdown)))
            .otherwise(pl.col("total_nano_aiu").last())
            .alias("billed_nano_aiu"),
            pl.when(per_process)
            .then(pl.col("total_api_duration_ms").filter(shutdown).sum())
            .otherwise(pl.col("total_api_duration_ms").filter(shutdown).last())
            .alias("api_time_ms"),
            pl.when(per_process)
            .then(_decimal_sum(pl.col("total_premium_requests").filter(shutdown)))
            .otherwise(pl.col("total_premium_requests").drop_nulls().last())
            .alias("premium_requests"),
        )
    )


def _decimal_sum(texts: pl.Expr) -> pl.Expr:
    """Exact sum of decimal strings, written like the log writes them (``"80"``, ``"2.31"``).

    The sum is a decimal (never a float); trailing zeros of the fixed scale are removed so a
    per-process total reads the same as a cumulative one taken from a single line. No value at
    all is unknown (null), not 0.
    """
    text = texts.cast(pl.Decimal(38, 9)).sum().cast(pl.String)
    exact = text.str.replace(r"(\.\d*?)0+$", "${1}").str.strip_suffix(".")
    return pl.when(texts.is_not_null().any()).then(exact)


def _token_totals() -> list[pl.Expr]:
    """The token totals the log states (``logged_*``, a check on the calls: the session's
    own totals are its calls' sums, ``tokens.with_call_totals``): shutdown figures, plus
    output of calls after the last shutdown; without a shutdown, the sums of the usage
    records; the bill likewise."""
    # a shutdown with per-model totals (its request total may still be unknown)
    has_truth = pl.col("_covered_until").is_not_null()
    records = ~has_truth & (pl.col("_records") > 0).fill_null(False)
    extra = pl.when(pl.col("_uncovered_has_output")).then(pl.col("_uncovered_output")).otherwise(0)
    partial = has_truth & (pl.col("_uncovered_calls") > 0)
    exprs = [
        pl.when(has_truth)
        .then(pl.col("_shutdown_output_tokens") + extra)
        .when(records)
        .then(pl.col("_record_output_tokens"))
        .when(pl.col("_any_output"))
        .then(pl.col("_uncovered_output"))
        .alias("logged_output_tokens"),
        pl.when(records)
        .then(pl.lit("usage_records"))
        .when(~has_truth)
        .then(pl.when(pl.col("_any_output")).then(pl.lit("messages")))
        .when(partial)
        .then(pl.lit("shutdown+messages"))
        .otherwise(pl.lit("shutdown"))
        .alias("token_totals_source"),
        pl.coalesce("billed_nano_aiu", "_record_nano").alias("billed_nano_aiu"),
    ]
    for column in ["input_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"]:
        exprs.append(
            pl.when(has_truth)
            .then(pl.col(f"_shutdown_{column}"))
            .when(records)
            .then(pl.col(f"_record_{column}"))
            .alias(f"logged_{column}")
        )
    return exprs


def _status() -> list[pl.Expr]:
    """How the session ended: error, interrupted, complete or idle."""
    return [
        pl.when(pl.col("_shutdown_type") == "error")
        .then(pl.lit("error"))
        .when(
            pl.col("_last_interrupted").fill_null(False)
            | (pl.col("_last_type") == "abort")
            | ~pl.col("_final_shutdown")
        )
        .then(pl.lit("interrupted"))
        .when(pl.col("_completed"))
        .then(pl.lit("complete"))
        .otherwise(pl.lit("idle"))
        .alias("status"),
        pl.coalesce(
            pl.when(pl.col("_shutdown_type") == "error").then(pl.col("_error")),
            pl.when(pl.col("_last_type") == "abort").then(pl.col("_abort")),
            pl.col("_summary"),
            pl.when(~pl.col("_final_shutdown")).then(
                pl.lit("no session.shutdown in the last process (crashed, killed or still running)")
            ),
            pl.when(pl.col("_last_interrupted")).then(
                pl.lit("the last LLM call has no assistant.turn_end (cut off)")
            ),
        ).alias("status_detail"),
    ]
