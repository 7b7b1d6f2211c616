"""Put the events of each session in one order, across all the files that hold it.

A session's log is normally one file, but it can be split: a legacy flat ``<id>.jsonl`` next
to a newer ``<id>/events.jsonl``, or a file copied in parts. Files of one session are ordered
by their first timestamp, lines by their number; ``event_seq`` numbers the result and
``process_index`` counts the ``session.resume`` events before each line, so every downstream
stage sees one sequence per session no matter how it was stored.
"""

from __future__ import annotations

import polars as pl

from analytics.schema import EVENTS, conform


def order_events(events: pl.DataFrame) -> pl.DataFrame:
    """EVENTS of any number of files -> EVENTS in session order (event_seq, process_index)."""
    file_start = events.group_by("session_id", "source_file").agg(
        pl.col("timestamp").min().alias("_file_start")
    )
    ordered = (
        events.join(file_start, on=["session_id", "source_file"], how="left")
        .sort("session_id", "_file_start", "source_file", "source_line", nulls_last=False)
        .with_columns(
            pl.int_range(1, pl.len() + 1).over("session_id").cast(pl.Int64).alias("event_seq"),
            (pl.col("event_type") == "session.resume")
            .cum_sum()
            .over("session_id")
            .cast(pl.Int32)
            .alias("process_index"),
        )
    )
    return conform(ordered, EVENTS)
