"""Price the same sessions under several rate tables, side by side, and name the cheapest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

import polars as pl

from analytics.costs import price_analysis
from analytics.pricing import price_calls
from analytics.rates import RateTable
from analytics.schema import MONEY


def table_totals(calls: pl.DataFrame, tables: Sequence[RateTable]) -> pl.DataFrame:
    """Total cost of the same calls under each table: rates, cost_usd, calls, priced_calls.

    ``calls`` are CALLS + CALL_TOKENS. ``cost_usd`` sums the calls the table could price and is
    null when it priced none (unknown, not $0).
    """
    totals = [
        price_calls(calls, table).select(
            pl.lit(table.name).alias("rates"),
            pl.when(pl.col("cost_usd").count() > 0)
            .then(pl.col("cost_usd").sum())
            .cast(MONEY)
            .alias("cost_usd"),
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("cost_usd").count().cast(pl.Int64).alias("priced_calls"),
        )
        for table in tables
    ]
    return pl.concat(totals) if totals else pl.DataFrame()


def compare_tables(
    calls: pl.DataFrame,
    sessions: pl.DataFrame,
    tables: Sequence[RateTable],
    model_map: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, str | None]:
    """(one row per session with a cost column per table, the cheapest complete table or None).

    A table that leaves any call unpriced cannot be the cheapest: its total is a lower bound.
    Each table's column holds the exact cost as a decimal; ``<name>_unpriced_calls`` says how
    many calls it could not price.
    """
    wide = sessions.select("session_id", "start_time", "llm_calls")
    totals: dict[str, Decimal] = {}
    for table in tables:
        _, priced = price_analysis(calls, sessions, table, model_map)
        wide = wide.join(
            priced.select(
                "session_id",
                pl.col("cost_usd").alias(table.name),
                pl.col("unpriced_calls").alias(f"{table.name}_unpriced_calls"),
            ),
            on="session_id",
            how="left",
        )
        if priced["unpriced_calls"].fill_null(0).sum() == 0:
            total = priced["cost_usd"].drop_nulls().sum()
            totals[table.name] = Decimal(str(total)) if total is not None else Decimal(0)
    cheapest = min(totals, key=lambda name: totals[name]) if totals else None
    return wide, cheapest
