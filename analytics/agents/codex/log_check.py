"""Codex's log checked against itself: Codex writes ``token_count`` events with a running total
(``total_token_usage``) and the turn's own usage (``last_token_usage``). The check reads
them again and compares each increment of the running total with the turn's
``last_token_usage``, and each session's final total with the sum of its turns'.

The rules are those of ``docs/claude-code-codex-formats.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analytics.agents.checks import check_row, count, field, read_lines, total

_CODEX_USAGE = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


def check(lines: pl.DataFrame) -> pl.DataFrame:
    """The ``CODEX totals`` row: ``lines`` (``read_lines`` of the rollouts: their
    ``session_meta`` and ``token_count`` lines at least, in order).

    A ``session_meta`` starts a session (one right after another is a fork's copy of its
    parent's header and starts none; a header repeating the id goes on with it); lines
    before any header belong to the session the file name gives. In each session, a
    ``token_count`` whose ``total_token_usage`` was not seen before is a call (a total
    written again, or copied into another file, is not), in the files' order. A call agrees
    when the increase of the running total over the session's previous total equals its
    ``last_token_usage`` in all five counts; ``tokens`` is each session's last total,
    ``checked_tokens`` the sum of its turns' ``last_token_usage``."""
    read = lines.with_columns(
        field("$.type").alias("type"),
        field("$.payload.type").alias("event"),
        field("$.payload.id").alias("meta_id"),
        *(
            count(f"$.payload.info.{record}.{name}").alias(f"{record}.{name}")
            for record in ("total_token_usage", "last_token_usage")
            for name in _CODEX_USAGE
        ),
    ).sort("file", "line")
    header = (pl.col("type") == "session_meta") & pl.col("meta_id").is_not_null()
    copied_header = (
        header
        & header.shift(1).over("file").fill_null(False)
        & (pl.col("line") == pl.col("line").shift(1).over("file") + 1)
    )
    from_name = pl.col("path").str.extract(r"([0-9a-fA-F-]{36})\.jsonl$").fill_null(pl.col("path"))
    sessions = read.with_columns(
        pl.when(header & ~copied_header)
        .then(pl.col("meta_id"))
        .forward_fill()
        .over("file")
        .fill_null(from_name)
        .alias("session")
    )
    totals = [f"total_token_usage.{name}" for name in _CODEX_USAGE]
    turns = (
        sessions.filter(
            (pl.col("type") == "event_msg")
            & (pl.col("event") == "token_count")
            & pl.col("total_token_usage.total_tokens").is_not_null()
        )
        .unique(["session", *totals], keep="first", maintain_order=True)
        .with_columns(
            (pl.col(total) - pl.col(total).shift(1).over("session").fill_null(0)).alias(
                f"step.{name}"
            )
            for total, name in zip(totals, _CODEX_USAGE, strict=True)
        )
    )
    agrees = pl.all_horizontal(
        pl.col(f"step.{name}").eq_missing(pl.col(f"last_token_usage.{name}"))
        for name in _CODEX_USAGE
    )
    last_totals = turns.group_by("session").agg(pl.col("total_token_usage.total_tokens").last())
    counted_lines = sessions.filter(
        (pl.col("event") == "token_count") & pl.col("total_token_usage.total_tokens").is_not_null()
    ).height
    return check_row(
        "CODEX totals",
        sessions=last_totals.height,
        calls=turns.height,
        usage_lines=counted_lines,
        repeated_lines=counted_lines - turns.height,
        agreeing=turns.filter(agrees).height,
        disagreeing=turns.filter(~agrees).height,
        tokens=total(last_totals, "total_token_usage.total_tokens"),
        checked=total(turns, "last_token_usage.total_tokens"),
        compared="each session's last total_token_usage against its turns' last_token_usage",
    )


def log_check(files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame:
    """The ``CODEX totals`` row of ``files`` (the rollouts read; ``calls`` are not needed:
    the rollouts' running totals are checked against their turns')."""
    return check(read_lines(files, "session_meta", "token_count"))
