"""Split an integer total over rows in proportion to weights, exactly (largest remainder).

Used wherever agentcost must make estimated per-call figures add up to a total the log states
exactly: each row gets ``floor(total * w / sum(w))`` and the units left over go, one each, to
the rows with the largest remainders (ties: later rows first, so that weights that never
decrease along ``order`` give shares that never decrease either). The result sums to ``total``
exactly, and no row exceeds ``ceil(total * w / sum(w))``, so a share <= 1 never exceeds the
row's weight.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


def apportion(
    total: pl.Expr,
    weight: pl.Expr,
    by: Sequence[str],
    order: str,
    dtype: pl.DataType | type[pl.DataType] = pl.Int64,
) -> pl.Expr:
    """Integer shares of ``total`` (constant within each ``by`` group) in proportion to ``weight``.

    Integer arithmetic throughout (no float rounding), in ``dtype``: Int64 for tokens, Int128
    for money in 1e-18 dollar units. Weights must be non-null and >= 0; a group whose weights
    sum to zero shares the total equally; a null total gives null shares. ``order`` breaks
    ties.
    """
    weight = weight.cast(dtype)
    group_sum = weight.sum().over(by)
    count = weight.count().over(by).cast(dtype)
    w = pl.when(group_sum > 0).then(weight).otherwise(pl.lit(1, dtype))
    denominator = pl.when(group_sum > 0).then(group_sum).otherwise(count)
    scaled = total.cast(dtype) * w
    base = scaled // denominator
    remainder = scaled % denominator
    leftover = total.cast(dtype) - base.sum().over(by)
    rank = (
        pl.struct((denominator - remainder).alias("r"), pl.col(order).neg().alias("o"))
        .rank("ordinal")
        .over(by)
    )
    return base + (rank.cast(dtype) <= leftover).cast(dtype)
