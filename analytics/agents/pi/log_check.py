"""pi's log checked against itself: each assistant message states its usage twice, as its
parts (``input``, ``output``, ``cacheRead``, ``cacheWrite``) and as ``totalTokens``. The check
reads the session files again, in polars and apart from the native fold, counts each call
once across the files (by ``responseId``, else entry ``id`` and ``message.timestamp``, as
the fold does), and compares each call's parts with its total.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analytics.agents.checks import check_row, count, field, read_lines, total

_PARTS = ("input", "output", "cacheRead", "cacheWrite")


def check(lines: pl.DataFrame) -> pl.DataFrame:
    """The ``PI totals`` row: ``lines`` (``read_lines`` of the session files: their assistant
    messages at least). A call agrees when its parts add up to its ``totalTokens``;
    ``tokens`` is the sum of the calls' parts, ``checked_tokens`` of their totals."""
    read = lines.with_columns(
        field("$.type").alias("type"),
        field("$.message.role").alias("role"),
        field("$.message.responseId").alias("response"),
        field("$.id").alias("entry"),
        field("$.message.timestamp").alias("started"),
        *(count(f"$.message.usage.{part}").alias(part) for part in _PARTS),
        count("$.message.usage.totalTokens").alias("totalTokens"),
    )
    assistant = read.filter((pl.col("type") == "message") & (pl.col("role") == "assistant"))
    key = pl.coalesce(
        pl.col("response"),
        pl.concat_str(pl.col("entry"), pl.lit("@"), pl.col("started").fill_null("")),
        pl.col("text"),
    )
    calls = assistant.with_columns(key.alias("key")).unique(
        "key", keep="first", maintain_order=True
    )
    logged = calls.filter(pl.col("totalTokens").is_not_null())
    agrees = pl.sum_horizontal(*_PARTS).eq(pl.col("totalTokens")) & pl.all_horizontal(
        pl.col(part).is_not_null() for part in _PARTS
    )
    sessions = read.filter(pl.col("type") == "session").select(field("$.id")).n_unique()
    return check_row(
        "PI totals",
        sessions=sessions,
        calls=calls.height,
        usage_lines=assistant.height,
        repeated_lines=assistant.height - calls.height,
        agreeing=logged.filter(agrees).height,
        disagreeing=logged.filter(~agrees).height,
        tokens=total(logged, *_PARTS),
        checked=total(logged, "totalTokens"),
        compared="each call's usage parts against its totalTokens",
    )


def log_check(files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame:
    """The ``PI totals`` row of ``files`` (the session files read; ``calls`` are not needed:
    each call's parts are checked against its own total)."""
    return check(read_lines(files, '"assistant"', '"session"'))
