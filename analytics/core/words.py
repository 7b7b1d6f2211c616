"""Counts in words, as every message and table says them: ``1 call``, ``2,048 sessions``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` of ``noun`` in words: ``1 call``, ``2 calls``, ``1,204 sessions``."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def counted_expr(count: pl.Expr, noun: str, plural: str | None = None) -> pl.Expr:
    """``counted`` over a column of counts (null stays null)."""
    import polars as pl

    word = pl.when(count == 1).then(pl.lit(noun)).otherwise(pl.lit(plural or noun + "s"))
    return pl.format("{} {}", count, word)
