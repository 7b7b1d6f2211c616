"""The calibration as polars ran it before the engine (``native/agents/copilot/calibrate.rs``)
took it over: the shutdown's exact totals apportioned over the calls (integer largest
remainder), the cache split, the output filled by reply size. Kept as the engine's oracle
(``tests/oracle/test_engine_differential.py``); nothing at run time imports it.
"""

from __future__ import annotations

import polars as pl

from analytics.core.apportion import apportion

#: Automatic prompt caching (OpenAI and others) reuses a prompt prefix in blocks of this size.
AUTO_CACHE_BLOCK = 128
#: Calls one shutdown total covers: a session's segment (its process, or the whole session
#: when shutdowns are cumulative) and a model.
_GROUP = ["session_id", "_segment", "model"]


def calibrate(frame: pl.DataFrame) -> pl.DataFrame:
    """Fill unobserved calls: apportioned to the shutdown's per-model totals where they
    exist (``calibrated`` where the calls counted match the shutdown's requests, else
    ``estimated``, still summing to the totals), else the fit as it is (``estimated``)."""
    calibrate = pl.col("token_source").is_null() & pl.col("_apportion")
    frame = frame.with_columns(calibrate.alias("_calibrate"))
    target = _scale_inputs(frame.filter(pl.col("_calibrate")), _GROUP)
    rest = _estimate_inputs(frame.filter(~pl.col("_calibrate")))
    return pl.concat([target, rest], how="diagonal_relaxed").sort("session_id", "event_seq")


def _scale_inputs(frame: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """Split the shutdown's input over the calls in proportion to their fitted prompts
    (integer largest remainder, so the sum is exact); then the caches, exactly."""
    frame = frame.with_columns(
        apportion(pl.col("_left_input_tokens"), pl.col("_estimate"), group, "event_seq").alias(
            "input_tokens"
        )
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
        pl.when(pl.col("_sum_ok"))
        .then(pl.lit("calibrated"))
        .otherwise(pl.lit("estimated"))
        .alias("token_source"),
    )


def _fill_output(group: list[str]) -> pl.Expr:
    """Output of calls the log gives none for: the shutdown's remaining output, split by the
    size of each call's reply. Calls with a stated output keep it, unless the calls counted
    differ from the shutdown's: then the whole output total is spread over the calls found,
    in proportion to what each states (else its reply's size), so they price to the total."""
    missing = pl.col("output_tokens").is_null()
    left = pl.col("_left_output_tokens") - pl.col("output_tokens").sum().over(group)
    weight = pl.when(missing).then(pl.col("_reply_bytes")).otherwise(0)
    share = apportion(left.clip(lower_bound=0), weight, group, "event_seq")
    spread = apportion(
        pl.col("_left_output_tokens"),
        pl.coalesce("output_tokens", "_reply_bytes").fill_null(0),
        group,
        "event_seq",
    )
    known = pl.col("_t_output_tokens").is_not_null()
    return (
        pl.when(known & ~pl.col("_sum_ok"))
        .then(spread)
        .when(missing & known)
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
    """Cache read = what the previous call of the same model and agent left cacheable, if
    within the TTL (``_prev_prefix``: its prompt without the newest user messages); the rest
    of the prompt is written to the cache or sent uncached.

    With ``exact``, the reads are apportioned over the calls in proportion to those warm
    prefixes (and any excess over the rest of the prompts), then the writes over what each
    call does not read, so each column sums to the shutdown's figure while read + write +
    uncached = input on every call. Without it (no totals to follow), the provider's caching
    decides: Anthropic models (``claude-*``) write the new part to the cache explicitly; the
    others cache automatically, reading the previous prompt in blocks of
    ``AUTO_CACHE_BLOCK`` tokens and writing nothing billable.
    """
    ordered = frame.sort("session_id", "event_seq").with_columns(
        pl.min_horizontal(pl.col("_prev_prefix").fill_null(0), pl.col("input_tokens")).alias(
            "_raw_read"
        )
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
    # A shutdown that states no cache figures reads and writes nothing (as the log says).
    reads_total = pl.min_horizontal(pl.col("_left_cache_read_tokens").fill_null(0), total_in)
    warm = pl.col("_raw_read").sum().over(group)
    # Within the warm prefixes: the reads split over them. Beyond: every prefix read whole,
    # and the excess split over the rest of the prompts. The case holds for a whole group,
    # so one apportionment serves both.
    within = pl.col("_reads_total") <= pl.col("_warm")
    ordered = ordered.with_columns(reads_total.alias("_reads_total"), warm.alias("_warm"))
    read = pl.when(within).then(0).otherwise(pl.col("_raw_read")) + apportion(
        pl.when(within)
        .then(pl.col("_reads_total"))
        .otherwise(pl.col("_reads_total") - pl.col("_warm")),
        pl.when(within)
        .then(pl.col("_raw_read"))
        .otherwise(pl.col("input_tokens") - pl.col("_raw_read")),
        group,
        "event_seq",
    )
    ordered = ordered.with_columns(read.alias("cache_read_tokens")).drop("_reads_total", "_warm")
    rest = pl.col("input_tokens") - pl.col("cache_read_tokens")
    writes_total = pl.min_horizontal(
        pl.col("_left_cache_write_tokens").fill_null(0), rest.sum().over(group)
    )
    return ordered.with_columns(
        apportion(writes_total, rest, group, "event_seq").alias("cache_write_tokens")
    )
