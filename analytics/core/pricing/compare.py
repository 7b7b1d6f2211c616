"""Price the same sessions at several sellers, side by side, and name the cheapest.

A seller is a rate table; ``vendor`` is the one that prices each model at its vendor's own
API (Anthropic, OpenAI, Google, Moonshot AI, DeepSeek). Tables name models differently, so each
table prices the calls through the model-equivalence map (``equivalence.seller_names``):
Copilot's ``claude-sonnet-4.6`` is priced as OpenRouter's ``anthropic/claude-sonnet-4.6``.
What each table priced each model as is part of the result, so no column hides a rename.

A call served by a local provider (``call_costs.LOCAL_PROVIDERS``) costs exactly 0 in every
column, ``vendor`` included: no seller's API price is put on it, since nobody sells what ran
on the user's machine. ``priced_as`` marks its rows ``local`` (no seller, no check date).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

import polars as pl

from analytics.core.pricing.equivalence import VENDOR, VENDOR_TABLES, seller_names
from analytics.core.pricing.price import price_analysis, price_calls
from analytics.core.pricing.rates import RateTable, load_rate_table, load_rates
from analytics.core.schema import MONEY

#: The default sellers of ``agentcost compare``: Copilot credits, the vendor, OpenRouter.
SELLERS = ("github-copilot", VENDOR, "openrouter")


@dataclass(frozen=True)
class Comparison:
    """``sessions``: one row per session with a cost column per table (exact decimals) and
    ``<table>_unpriced_calls``; ``estimated_calls``: per session, the calls whose tokens are
    estimates (so every cost of the session is one too); ``priced_as``: per table and log
    model, the table's model that priced it (null: not sold there), the table its price
    comes from (``seller``: for ``vendor``, the vendor's own), the calls, and that table's
    source and check date;
    ``cheapest``: the cheapest table that priced every call, if any."""

    sessions: pl.DataFrame
    estimated_calls: pl.DataFrame
    priced_as: pl.DataFrame
    cheapest: str | None


def load_seller(spec: str) -> RateTable:
    """A ``--rates`` spec, or ``vendor``: the vendors' own tables merged into one."""
    if spec != VENDOR:
        return load_rates(spec)
    merged = load_rates("+".join(VENDOR_TABLES))
    return dataclasses.replace(merged, name=VENDOR, description="each vendor's own API")


def _price_at(
    calls: pl.DataFrame, table: RateTable, model_map: Mapping[str, str] | None
) -> dict[str, str]:
    """The model map that prices ``calls`` at ``table`` (equivalent names, after the user's)."""
    models = calls["model"].drop_nulls().unique().to_list()
    return seller_names(models, table.name, model_map)


def _priced_as(priced_calls: pl.DataFrame, table: RateTable) -> pl.DataFrame:
    """Per log model: the model ``table`` priced it as, and the table that price comes from.
    Bring-your-own-key calls under ``github-copilot`` are a row of their own (``byok``):
    Copilot bills them nothing, and their price, if any, is their provider's
    (``price_from``), so "not sold there" would misstate why. Another agent's calls under
    ``github-copilot`` are priced at their vendor's table (``vendor_api``), which is then their
    seller. Calls served by a local
    provider are a row of their own too (``local``): $0, sold by no table."""
    tables = (
        {name: load_rate_table(name) for name in VENDOR_TABLES}
        if table.name == VENDOR
        else {table.name: table}
    )
    byok = pl.lit(table.name == "github-copilot") & pl.col("is_byok").fill_null(False)
    local = (pl.col("cost_source") == "local").fill_null(False)
    pairs = (
        priced_calls.group_by("model", "priced_model", byok.alias("byok"), local.alias("local"))
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("cost_usd").count().cast(pl.Int64).alias("priced_calls"),
            # priced from another table than this one: a BYOK provider's, or the vendor's
            # for another agent's call (``price.price_calls``)
            pl.col("price_from")
            .filter(pl.col("cost_source").is_in(["byok_provider", "vendor_api"]))
            .drop_nulls()
            .first()
            .alias("_provider"),
        )
        .sort(["calls", "model", "byok"], descending=[True, False, False], nulls_last=True)
    )
    # A handful of rows (one per model): the table the price came from, else which of the
    # tables knows each priced model.
    seller = [
        None
        if is_local
        else provider
        or next((name for name, t in tables.items() if model and t.resolve(model)), None)
        for model, provider, is_local in zip(
            pairs["priced_model"].to_list(),
            pairs["_provider"].to_list(),
            pairs["local"].to_list(),
            strict=True,
        )
    ]
    for provider in set(seller) - set(tables) - {None}:  # BYOK providers' and vendors' tables
        tables[str(provider)] = load_rate_table(str(provider))
    meta = pl.DataFrame(
        {
            "seller": list(tables),
            "checked": [t.checked for t in tables.values()],
            "source": [t.source for t in tables.values()],
        }
    )
    return (
        pairs.with_columns(
            pl.lit(table.name).alias("rates"), pl.Series("seller", seller, dtype=pl.String)
        )
        .join(meta, on="seller", how="left", maintain_order="left")
        .select(
            "rates",
            "model",
            "priced_model",
            "seller",
            "byok",
            "local",
            "calls",
            "priced_calls",
            "checked",
            "source",
        )
    )


def table_totals(
    calls: pl.DataFrame,
    tables: Sequence[RateTable],
    model_map: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Total cost of the same calls under each table: rates, cost_usd, calls, priced_calls.

    ``calls`` are CALLS + CALL_TOKENS. ``cost_usd`` sums the calls the table could price and is
    null when it priced none (unknown, not $0).
    """
    totals = [
        price_calls(calls, table, model_map=_price_at(calls, table, model_map)).select(
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
    log_prices: pl.DataFrame | None = None,
) -> Comparison:
    """The sessions priced under each table, what each priced each model as, the cheapest.

    ``log_prices`` (the prices the logs quote) price what ``github-copilot`` lacks, as in
    ``price.price_analysis``. A table that leaves any call unpriced cannot be the cheapest:
    its total is a lower bound.
    """
    estimated = calls.group_by("session_id").agg(
        (pl.col("token_source") == "estimated").sum().cast(pl.Int64).alias("estimated_calls")
    )
    wide = sessions.select("session_id", "start_time", "llm_calls")
    totals: dict[str, Decimal] = {}
    priced_as = []
    for table in tables:
        priced_calls, priced = price_analysis(
            calls, sessions, table, _price_at(calls, table, model_map), log_prices
        )
        wide = wide.join(
            priced.select(
                "session_id",
                pl.col("cost_usd").alias(table.name),
                pl.col("unpriced_calls").alias(f"{table.name}_unpriced_calls"),
            ),
            on="session_id",
            how="left",
        )
        priced_as.append(_priced_as(priced_calls, table))
        if priced["unpriced_calls"].fill_null(0).sum() == 0:
            total = priced["cost_usd"].drop_nulls().sum()
            totals[table.name] = Decimal(str(total)) if total is not None else Decimal(0)
    cheapest = min(totals, key=lambda name: totals[name]) if totals else None
    every = pl.concat(priced_as) if priced_as else pl.DataFrame()
    return Comparison(sessions=wide, estimated_calls=estimated, priced_as=every, cheapest=cheapest)
