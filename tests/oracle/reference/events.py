"""The reference of the engine's pass (``native/agents/copilot/pass.rs``): the polars
stages that put the events of each session in one order, drop repeated lines, place the
shutdowns' totals and find the lines that quote prices. The analysis no longer runs them;
the differential test holds the engine to them, table for table.

A session's log is normally one file, but it can be split: a legacy flat ``<id>.jsonl`` next
to a newer ``<id>/events.jsonl``, or a file copied in parts. Files of one session are ordered
by their first timestamp, lines by their number; ``event_seq`` numbers the result and
``process_index`` counts the ``session.resume`` events before each line, so every downstream
stage sees one sequence per session no matter how it was stored.
"""

from __future__ import annotations

import polars as pl

from analytics.core.schema import EVENTS, ISSUES, MODEL_METRICS, conform, empty

#: Every Copilot stage's first EVENTS columns: where a row came from and where it sits in its
#: session.
EVENT_KEYS = [
    "source_file",
    "source_line",
    "session_id",
    "event_seq",
    "process_index",
    "event_type",
]


def order_events(events: pl.DataFrame) -> pl.DataFrame:
    """EVENTS of any number of files -> EVENTS in session order (event_seq, process_index)."""
    pair = pl.struct("session_id", "source_file")
    rows = events.select(
        pair.rle_id().alias("_run"),
        "session_id",
        "source_file",
        "timestamp",
        "source_line",
        (pl.col("event_type") == "session.resume").alias("_resume"),
    )
    runs = (
        rows.group_by("_run")
        .agg(
            pl.col("session_id").first(),
            pl.col("source_file").first(),
            pl.col("timestamp").min().alias("_start"),
        )
        .with_columns(pl.col("_start").min().over("session_id", "source_file"))
        .sort("session_id", "_start", "source_file", nulls_last=False)
        .with_columns(pair.rle_id().alias("_file"), pl.col("session_id").rle_id().alias("_session"))
        .sort("_run")
    )
    keys = pl.DataFrame(
        {
            "_file": runs["_file"].gather(rows["_run"]),
            "_session": runs["_session"].gather(rows["_run"]),
            "source_line": rows["source_line"],
            "_resume": rows["_resume"],
        }
    ).with_row_index("_row")
    keys = keys.sort("_file", "source_line", nulls_last=False, maintain_order=True)
    # One contiguous copy: a frame in many chunks is copied whole again by every later filter
    # on it that follows a new column (polars aligns the chunks first).
    events = events.rechunk() if keys["_row"].is_sorted() else events[keys["_row"]]
    numbered = keys.select(
        pl.int_range(1, pl.len() + 1).over("_session").cast(pl.Int64).alias("event_seq"),
        pl.col("_resume").cum_sum().over("_session").cast(pl.Int32).alias("process_index"),
    )
    return conform(events.with_columns(numbered), EVENTS)


def drop_repeats(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Ordered EVENTS -> (EVENTS without repeated lines, one ISSUES row per file that had them).

    An event ``id`` is unique within a session: a line whose id an earlier line of the same
    session already had is a copy (a log concatenated onto itself, a file copied twice) and is
    analysed once. Lines without an id (SDK captures) are never taken for copies. Likewise a
    ``session.usage_record`` whose ``accounting.usageId`` (else ``apiCallId``) an earlier record
    had: the same call, recorded again. The issue stands at the first repeated line of each file
    and gives the count. ``byte_offset`` of the lines kept then leaves the repeats out.
    """
    record = pl.coalesce("usage_id", "api_call_id")
    repeat = (
        pl.col("event_id").is_not_null()
        & ~pl.col("event_id").is_first_distinct().over("session_id")
    ) | (
        (pl.col("event_type") == "session.usage_record")
        & record.is_not_null()
        & ~record.is_first_distinct().over("session_id", "event_type")
    )
    flagged = events.select(
        "source_file", "source_line", "session_id", "byte_offset", repeat.alias("_repeat")
    )
    if not flagged["_repeat"].any():
        return events, empty(ISSUES)
    issues = (
        flagged.filter(pl.col("_repeat"))
        .group_by("source_file")
        .agg(pl.col("source_line").min().alias("line"), pl.len().alias("_n"))
        .sort("source_file")
        .select(
            pl.col("source_file").alias("file"),
            "line",
            pl.lit("warning").alias("severity"),
            pl.format(
                "{} {} of their session (same event id, or a usage record's usage id): "
                "analysed once",
                pl.col("_n"),
                pl.when(pl.col("_n") == 1)
                .then(pl.lit("line repeats an earlier event"))
                .otherwise(pl.lit("lines repeat earlier events")),
            ).alias("message"),
        )
    )
    kept = events.filter(~flagged["_repeat"]).with_columns(
        pl.col("byte_offset") - _repeated_bytes_before(flagged).filter(~flagged["_repeat"])
    )
    renumbered = kept.with_columns(
        pl.int_range(1, pl.len() + 1).over("session_id").cast(pl.Int64).alias("event_seq"),
        (pl.col("event_type") == "session.resume")
        .cum_sum()
        .over("session_id")
        .cast(pl.Int32)
        .alias("process_index"),
    )
    return renumbered, conform(issues, ISSUES)


def _repeated_bytes_before(flagged: pl.DataFrame) -> pl.Series:
    """Per row of ``flagged``: the bytes of repeated lines before it in its file, so that a kept
    line's ``byte_offset`` reads as if the repeats were not there (what the CLI wrote)."""
    by_line = flagged.with_row_index("_row").sort("source_file", "source_line")
    size = (pl.col("byte_offset").shift(-1) - pl.col("byte_offset")).over("source_file")
    repeated = pl.when(pl.col("_repeat")).then(size.fill_null(0)).otherwise(0)
    before = (repeated.cum_sum() - repeated).over("source_file")
    return by_line.select("_row", before.alias("_before")).sort("_row")["_before"]


def place_model_metrics(metrics: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Shutdown totals of the shutdown lines kept in ``events``, with their session and process
    as ordered (a repeated shutdown line's totals go with the line)."""
    return (
        metrics.drop("session_id", "process_index")
        .join(
            events.filter(pl.col("event_type") == "session.shutdown").select(
                "source_file", "source_line", "session_id", "process_index"
            ),
            on=["source_file", "source_line"],
            how="inner",
            maintain_order="left",
        )
        .select(MODEL_METRICS.keys())
    )


def priced_lines(events: pl.DataFrame) -> pl.DataFrame:
    """The lines of ``events`` whose ``tokenDetails`` is a list, bring-your-own-key lines left
    out: what ``agents.copilot.log_prices.log_prices`` decodes
    (``agents.copilot.engine_pass.PRICED_LINES``)."""
    details = pl.col("token_details")
    return events.filter(
        ~pl.col("is_byok").fill_null(False)
        & details.str.strip_chars_start().str.starts_with("[").fill_null(False)
    ).select("source_file", "source_line", "session_id", "timestamp", "model", "token_details")
