"""Price the same sessions under several rate tables, side by side, and name the cheapest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

import polars as pl

from analytics.costs import price_analysis
from analytics.rates import RateTable


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
