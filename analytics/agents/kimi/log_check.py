"""Kimi Code's log checked against itself: each finished request's usage is written as a
``usage.record`` and again in the ``step.end`` loop event that closes the step. The check
reads both again (apart from the native fold) and pairs each ``usage.record`` with the next
``step.end`` carrying usage of the same file and agent: a call agrees when all four counters
(uncached input, output, cache read, cache write) are equal.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analytics.agents.checks import check_row, count, field, read_lines, total

#: Kimi Code's usage counters, as both records name them.
COUNTERS = ("inputOther", "output", "inputCacheRead", "inputCacheCreation")


def check(lines: pl.DataFrame, calls: int) -> pl.DataFrame:
    """The ``KIMI step.end`` row of ``lines`` (``read_lines`` of the wires: their
    ``usage.record`` and ``step.end`` lines at least, in order); ``calls``: the calls counted
    (copies of a record in several files count once there, each file's pair is checked here)."""
    read = lines.with_columns(
        field("$.type").alias("type"),
        field("$.event.type").alias("event"),
        field("$.agentId").alias("agent"),
        *(count(f"$.usage.{name}").alias(f"record.{name}") for name in COUNTERS),
        *(count(f"$.event.usage.{name}").alias(f"step.{name}") for name in COUNTERS),
    ).sort("file", "line")
    records = read.filter(
        (pl.col("type") == "usage.record") & pl.col("record.output").is_not_null()
    ).with_columns(pl.int_range(pl.len()).over("file", "agent").alias("nth"))
    steps = read.filter(
        (pl.col("event") == "step.end") & pl.col("step.output").is_not_null()
    ).with_columns(pl.int_range(pl.len()).over("file", "agent").alias("nth"))
    paired = records.join(
        steps.select("file", "agent", "nth", *(f"step.{name}" for name in COUNTERS)),
        on=["file", "agent", "nth"],
        how="left",
        suffix="_step",
    )
    agrees = pl.all_horizontal(
        pl.col(f"record.{name}").eq_missing(pl.col(f"step.{name}_step")) for name in COUNTERS
    )
    sums = paired.with_columns(
        pl.sum_horizontal(f"record.{name}" for name in COUNTERS).alias("tokens"),
        pl.when(pl.col("step.output_step").is_not_null())
        .then(pl.sum_horizontal(f"step.{name}_step" for name in COUNTERS))
        .alias("checked"),  # null: the record has no step.end to check it against
    )
    return check_row(
        "KIMI step.end",
        sessions=records["path"].n_unique(),
        calls=calls,
        usage_lines=records.height + steps.height,
        repeated_lines=steps.height,
        agreeing=paired.filter(agrees).height,
        disagreeing=paired.filter(~agrees).height,
        tokens=total(sums, "tokens"),
        checked=total(sums, "checked"),
        compared="each usage.record's four counters against its step's step.end usage",
    )


def log_check(files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame:
    """The ``KIMI step.end`` row of ``files`` (the wires read) and ``calls`` (their calls)."""
    return check(read_lines(files, "usage.record", "step.end"), calls.height)
