"""What the agents' logs carry to check their own usage against: the shared part.

Some agents' logs hold no second, independent record of a call's tokens the way a Copilot
session store or SDK capture does, but say the same thing twice (a Claude Code request's
streamed lines, a Codex running total beside each turn's usage). An agent whose log does
offers ``log_check(files, calls)`` in its reader (``reader.log_checks``): its log read again
here, in polars and apart from the native fold, and compared with the calls agentcost
counted, as one row of ``CHECK_COLUMNS``; ``agentcost validate`` prints them under the
reconstruction's errors. This module holds the row and the line reading they share.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

#: The columns of a check row: what was checked, how many sessions and calls, the calls
#: whose two records agree and disagree, the lines carrying usage and those of them that
#: repeat a counted one (streamed copies, a total written again), and the tokens on either
#: side (``tokens_compared`` says which).
CHECK_COLUMNS: dict[str, pl.DataType] = {
    "check": pl.String(),
    "sessions": pl.Int64(),
    "calls": pl.Int64(),
    "agree": pl.Int64(),
    "disagree": pl.Int64(),
    "usage_lines": pl.Int64(),
    "repeated_lines": pl.Int64(),
    "tokens": pl.Int64(),
    "checked_tokens": pl.Int64(),
    "tokens_compared": pl.String(),
}


def read_lines(files: Sequence[str], *markers: str) -> pl.DataFrame:
    """Every line of ``files`` holding one of ``markers`` (a cheap filter before JSON is read):
    ``file`` (its index in ``files``: the order the fold reads them in), ``line`` (1-based,
    as the fold numbers them), ``path`` and ``text``. Lines that are not JSON are kept; the
    checks find no fields in them."""
    frames = [
        pl.DataFrame({"text": Path(path).read_text("utf-8", errors="replace").split("\n")})
        .with_row_index("line", offset=1)
        .filter(pl.col("text").str.contains_any(list(markers)))
        .select(
            pl.lit(index, pl.Int64).alias("file"),
            pl.col("line").cast(pl.Int64),
            pl.lit(path).alias("path"),
            "text",
        )
        for index, path in enumerate(files)
    ]
    schema = {"file": pl.Int64(), "line": pl.Int64(), "path": pl.String(), "text": pl.String()}
    return pl.concat([pl.DataFrame(schema=schema), *frames])


def field(path: str) -> pl.Expr:
    """The value at JSON ``path`` of each line's ``text`` (null where absent or not JSON)."""
    return pl.col("text").str.json_path_match(path)


def count(path: str) -> pl.Expr:
    """The whole number at JSON ``path`` of each line's ``text`` (null where absent)."""
    return field(path).cast(pl.Int64, strict=False)


def total(frame: pl.DataFrame, *columns: str) -> int | None:
    """The sum of ``columns`` over ``frame``; null (unknown) where a value is missing."""
    if frame.is_empty():
        return 0
    summed = frame.select(
        pl.sum_horizontal(*columns).sum().alias("total"),
        pl.any_horizontal(pl.col(c).is_null().any() for c in columns).alias("missing"),
    )
    total, missing = summed.row(0)
    return None if missing else int(total)


def check_row(
    check: str,
    *,
    sessions: int,
    calls: int,
    usage_lines: int,
    repeated_lines: int,
    agreeing: int,
    disagreeing: int,
    tokens: int | None,
    checked: int | None,
    compared: str,
) -> pl.DataFrame:
    """One check row, in ``CHECK_COLUMNS``."""
    values = [check, sessions, calls, agreeing, disagreeing, usage_lines, repeated_lines]
    values += [tokens, checked, compared]
    return pl.DataFrame([dict(zip(CHECK_COLUMNS, values, strict=True))], schema=CHECK_COLUMNS)
