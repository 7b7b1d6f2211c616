"""The reconstruction measured on real Claude Code logs: content in, per-call truth beside.

A Claude Code log holds every call's true usage *and* the conversation that produced it
(prompts, replies, tool requests and results, with their sizes: the fold's items). So it is a
real test of the content-to-tokens model that the Copilot reconstruction uses (the engine's
``native/agents/copilot/tokens.rs`` and ``fit.rs``): the calls are handed to it with their usage
removed, in the Copilot vocabulary (CALLS, EVENTS), either

- ``with_totals=True``: as if only each session's per-model totals were known, the way a
  Copilot shutdown's ``modelMetrics`` states them (Σ input, cache read, cache write, output
  and requests per model over the main and sub-agent calls; compaction calls left out, as a
  shutdown leaves them), so the calls are calibrated to those totals; or
- ``with_totals=False``: from content and the priors alone, as a crashed Copilot session
  without a shutdown is (every call estimated, each with its 80% interval);

and the reconstructed input of every call is compared with its true input (cache reads and
writes included). ``agentcost validate`` reports these figures beside the SDK captures', and
``benchmarks/claude_corpus.py`` prints them for the README.
"""

from __future__ import annotations

import polars as pl

from analytics.agents.pipeline import pipeline
from analytics.core.schema import CALLS, EVENTS, MODEL_METRICS, padded

#: Sessions with fewer calls say little about how a conversation grows; issue 19 measures
#: sessions with at least this many.
MIN_CALLS = 3
#: The synthetic shutdown line that carries a session's per-model totals.
_TOTALS_LINE = 0
_TRUTH = ["input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"]


def corpus_errors(
    calls: pl.DataFrame, items: pl.DataFrame, *, with_totals: bool, min_calls: int = MIN_CALLS
) -> pl.DataFrame:
    """One row per call of every session with at least ``min_calls`` calls whose true input
    is known, as ``validate.reconstruction_errors`` gives them: its ``kind`` (``main``,
    ``subagent:<name>``, ``compaction``), the true (``observed``) and ``reconstructed``
    input, the interval (``low``, ``high``; null where calibration pins the call),
    ``method`` (the reconstruction's ``token_source``) and the absolute error in percent.

    ``calls`` and ``items`` are a Claude Code fold's (``AgentTables``, or an analysis's
    calls and events of those sessions)."""
    known = calls.filter(pl.col("input_tokens").is_not_null())
    counts = known.group_by("session_id").agg(pl.len().alias("_n"))
    kept = counts.filter(pl.col("_n") >= min_calls).select("session_id")
    calls = known.join(kept, on="session_id", how="semi").sort("session_id", "event_seq")
    if calls.is_empty():
        return _compared(calls, calls)
    items = items.join(kept, on="session_id", how="semi")
    blind, _, _ = (
        pipeline()
        .reconstruction()
        .call_tokens_and_fit(
            _as_calls(calls),
            _as_events(items, calls, with_totals=with_totals),
            _as_sessions(calls, with_totals=with_totals),
            _totals(calls) if with_totals else padded(pl.DataFrame(), MODEL_METRICS).clear(),
            use_observed=False,
        )
    )
    return _compared(calls, blind)


def _agent_kind() -> pl.Expr:
    """``main``, ``compaction``, or ``subagent:<name>`` (the sub-agent's kind as the log
    names it)."""
    return (
        pl.when(pl.col("kind") == "subagent")
        .then(pl.format("subagent:{}", pl.col("agent_name").fill_null("subagent")))
        .otherwise(pl.col("kind"))
    )


def _as_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """The calls in the Copilot CALLS vocabulary, usage removed; every model as the log
    names it (``log``)."""
    return padded(
        calls.select(
            "source_file",
            "source_line",
            "session_id",
            "event_seq",
            "call_index",
            "kind",
            "model",
            pl.when(pl.col("model").is_not_null()).then(pl.lit("log")).alias("model_source"),
            "agent_id",
            "agent_name",
            pl.lit(0, pl.Int32).alias("process_index"),
            "start_time",
            "end_time",
            pl.lit(False).alias("interrupted"),
            "output_tokens",
        ),
        CALLS,
    )


def _shutdown_file(session: pl.Expr) -> pl.Expr:
    """Where a session's synthetic shutdown is said to be (no real line holds it)."""
    return pl.format("{}#per-model-totals", session)


def _as_events(items: pl.DataFrame, calls: pl.DataFrame, *, with_totals: bool) -> pl.DataFrame:
    """The conversation items as Copilot EVENTS (of one process, each kind as the event type
    Copilot's reconstruction reads; ``padded`` keeps the columns EVENTS names), and with
    totals a ``session.shutdown`` after each session's last call (its per-model totals are
    ``_totals``)."""
    events = items.with_columns(
        pl.lit(0, pl.Int32).alias("process_index"), pipeline().event_of_item()
    )
    if with_totals:
        last = calls.group_by("session_id").agg(
            pl.max_horizontal(pl.col("event_seq").max(), pl.lit(0)).alias("_last")
        )
        ends = items.group_by("session_id").agg(pl.col("event_seq").max().alias("_items_last"))
        shutdowns = last.join(ends, on="session_id", how="left").select(
            _shutdown_file(pl.col("session_id")).alias("source_file"),
            pl.lit(_TOTALS_LINE, pl.Int64).alias("source_line"),
            "session_id",
            (pl.max_horizontal("_last", "_items_last") + 1).alias("event_seq"),
            pl.lit(0, pl.Int32).alias("process_index"),
            pl.lit("session.shutdown").alias("event_type"),
        )
        events = pl.concat([events, shutdowns], how="diagonal_relaxed")
    return padded(events, EVENTS).sort("session_id", "event_seq")


def _as_sessions(calls: pl.DataFrame, *, with_totals: bool) -> pl.DataFrame:
    """One row per session, with what the token stage reads of it (the reconstruction's
    ``SESSION_INPUT``): with totals, a cumulative shutdown counting its main and sub-agent
    calls; without, no shutdown."""
    requests = (pl.col("kind") != "compaction").sum()
    return padded(
        calls.group_by("session_id", maintain_order=True).agg(
            pl.lit("cumulative" if with_totals else None, pl.String).alias("shutdown_mode"),
            (requests if with_totals else pl.lit(None, pl.Int64)).alias("shutdown_requests"),
            pl.len().alias("llm_calls"),
        ),
        pipeline().reconstruction().SESSION_INPUT,
    )


def _totals(calls: pl.DataFrame) -> pl.DataFrame:
    """Per session and model, the sums of its main and sub-agent calls' true usage, as a
    shutdown's ``modelMetrics`` would state them."""
    return padded(
        calls.filter((pl.col("kind") != "compaction") & pl.col("model").is_not_null())
        .group_by("session_id", "model", maintain_order=True)
        .agg(
            pl.len().alias("requests_count"),
            *(pl.col(c).fill_null(0).sum() for c in _TRUTH),
        )
        .with_columns(
            _shutdown_file(pl.col("session_id")).alias("source_file"),
            pl.lit(_TOTALS_LINE, pl.Int64).alias("source_line"),
            pl.lit(0, pl.Int32).alias("process_index"),
        ),
        MODEL_METRICS,
    )


def _compared(truth: pl.DataFrame, blind: pl.DataFrame) -> pl.DataFrame:
    """Each call's true input beside its blind reconstruction and interval."""
    schema = {
        "session_id": pl.String(),
        "call_index": pl.Int64(),
        "kind": pl.String(),
        "model": pl.String(),
        "observed": pl.Int64(),
        "reconstructed": pl.Int64(),
        "low": pl.Int64(),
        "high": pl.Int64(),
        "method": pl.String(),
        "abs_error_pct": pl.Float64(),
    }
    if truth.is_empty():
        return pl.DataFrame(schema=schema)
    truth = truth.select(
        "session_id",
        "call_index",
        _agent_kind().alias("kind"),
        "model",
        pl.col("input_tokens").alias("observed"),
    )
    return beside_truth(truth, blind).select(
        pl.col(name).cast(dtype) for name, dtype in schema.items()
    )


def beside_truth(truth: pl.DataFrame, blind: pl.DataFrame) -> pl.DataFrame:
    """Each call's true input (``truth``: ``session_id``, ``call_index``, ``observed`` and
    what else it carries) beside its blind reconstruction (CALLS with tokens):
    ``reconstructed``, its interval (``low``, ``high``), ``method`` (its token source) and
    ``abs_error_pct`` (null where the truth is 0)."""
    joined = truth.join(
        blind.select(
            "session_id",
            "call_index",
            pl.col("input_tokens").alias("reconstructed"),
            pl.col("input_tokens_low").alias("low"),
            pl.col("input_tokens_high").alias("high"),
            pl.col("token_source").alias("method"),
        ),
        on=["session_id", "call_index"],
    )
    error = (pl.col("reconstructed") - pl.col("observed")).abs() / pl.col("observed") * 100
    return joined.with_columns(
        pl.when(pl.col("observed") > 0).then(error.round(2)).alias("abs_error_pct")
    )
