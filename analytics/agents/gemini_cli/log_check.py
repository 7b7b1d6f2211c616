"""Gemini CLI's log checked against itself: each gemini reply's ``tokens`` give the API's
``totalTokenCount`` beside its parts (prompt, candidates, thoughts, tool-use prompt). The check
reads the reply lines again, takes each (session, message id) once (its last copy, as the
fold does), and compares each call's ``total`` with the sum of its parts.

Only JSON-lines chats are read line by line here: a call listed only in a ``$set.messages``
checkpoint or in a legacy ``.json`` document is counted by the fold but not checked.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analytics.agents.checks import check_row, count, field, read_lines, total

_PARTS = ("input", "output", "thoughts", "tool")


def check(lines: pl.DataFrame) -> pl.DataFrame:
    """The ``GEMINI totals`` row of ``lines`` (``read_lines`` of the chats: their headers and
    reply lines at least, in order). A header (``sessionId`` and ``projectHash``, no
    ``type``) starts a session; lines before any belong to the session the file name gives.
    A call is a distinct (session, id) of a ``gemini`` line with ``tokens``; it agrees when
    its ``total`` is the sum of its parts (a part not logged counts 0). ``tokens`` is the
    calls' logged totals, ``checked_tokens`` the sum of their parts."""
    read = lines.with_columns(
        field("$.type").alias("type"),
        field("$.sessionId").alias("header"),
        field("$.projectHash").alias("project"),
        field("$.id").alias("id"),
        field("$.tokens").alias("tokens"),
        *(count(f"$.tokens.{name}").alias(name) for name in (*_PARTS, "total")),
    ).sort("file", "line")
    is_header = pl.col("type").is_null() & pl.col("header").is_not_null()
    from_name = pl.col("path").str.extract(r"([^/\\]+)\.jsonl$")
    replies = (
        read.with_columns(
            pl.when(is_header & pl.col("project").is_not_null())
            .then(pl.col("header"))
            .forward_fill()
            .over("file")
            .fill_null(from_name)
            .alias("session")
        )
        .filter((pl.col("type") == "gemini") & pl.col("tokens").is_not_null())
        .with_columns(pl.col(name).fill_null(0) for name in ("thoughts", "tool"))
    )
    calls = replies.filter(pl.col("id").is_not_null()).unique(
        ["session", "id"], keep="last", maintain_order=True
    )
    calls = pl.concat([calls, replies.filter(pl.col("id").is_null())])
    parts = pl.sum_horizontal(*_PARTS)
    agrees = pl.col("total").eq_missing(parts)
    return check_row(
        "GEMINI totals",
        sessions=calls["session"].n_unique(),
        calls=calls.height,
        usage_lines=replies.height,
        repeated_lines=replies.height - calls.height,
        agreeing=calls.filter(agrees).height,
        disagreeing=calls.filter(~agrees).height,
        tokens=total(calls, "total"),
        checked=total(calls, *_PARTS),
        compared="each reply's tokens.total against input + output + thoughts + tool",
    )


def log_check(files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame:
    """The ``GEMINI totals`` row of the JSON-lines chats among ``files`` (``calls`` are not
    needed: each reply's total is checked against its own parts)."""
    chats = [path for path in files if path.endswith(".jsonl")]
    return check(read_lines(chats, '"projectHash"', '"tokens"'))
