"""CALLS with tokens -> PRICED calls and sessions, beside the bill the log itself records.

``pricing.price_calls`` prices each call; here the calls are summed per session, exactly, and
set beside the log's own charge (``totalNanoAiu``: USD = nano-AIU / 1e11). A session with an
unpriced model says so (``unpriced_calls``, ``unpriced_models``) and its ``cost_usd`` covers
only the priced calls; ``cost_source`` tells which figure a reader should use:
``rates`` (every call priced), ``billed`` (some calls unpriced, but the log's bill covers the
session) or ``partial`` (a lower bound). Sessions also get the sums of their calls' tokens
(``calls_input_tokens``, ``calls_output_tokens``) and how many calls' tokens were observed,
calibrated or estimated (``token_sources``), so an estimate is never shown as a fact.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from analytics.pricing import nano_aiu_usd, price_calls
from analytics.rates import RateTable
from analytics.schema import MONEY

_PARTS = [
    "input_cost_usd",
    "cache_read_cost_usd",
    "cache_write_cost_usd",
    "output_cost_usd",
    "request_cost_usd",
]
_SOURCES = ("observed", "calibrated", "estimated")


def price_analysis(
    calls: pl.DataFrame,
    sessions: pl.DataFrame,
    table: RateTable,
    model_map: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(priced calls, sessions with costs) under ``table``."""
    priced = price_calls(calls, table, model_map=model_map).with_columns(
        nano_aiu_usd(pl.col("billed_nano_aiu")).alias("billed_usd")
    )
    unpriced = pl.col("cost_usd").is_null()
    any_priced = pl.col("cost_usd").is_not_null().any()
    per_session = priced.group_by("session_id").agg(
        pl.col("rates").first(),
        *(pl.when(any_priced).then(pl.col(part).sum()).alias(part) for part in _PARTS),
        pl.when(any_priced).then(pl.col("cost_usd").sum()).alias("cost_usd"),
        unpriced.sum().alias("unpriced_calls"),
        # Only models the table has no price for: a priced model whose tokens are unknown
        # leaves its call without a cost too, but it is not unpriced.
        pl.col("model")
        .filter(pl.col("priced_model").is_null())
        .drop_nulls()
        .unique()
        .sort()
        .alias("unpriced_models"),
        *(
            pl.when(pl.col(c).is_not_null().all()).then(pl.col(c).sum()).alias(f"calls_{c}")
            for c in ("input_tokens", "output_tokens")
        ),
        pl.struct(*((pl.col("token_source") == s).sum().alias(s) for s in _SOURCES)).alias(
            "token_sources"
        ),
    )
    joined = sessions.join(per_session, on="session_id", how="left").with_columns(
        nano_aiu_usd(pl.col("billed_nano_aiu")).alias("billed_usd"),
    )
    complete = pl.col("unpriced_calls").fill_null(0) == 0
    return priced, joined.with_columns(
        pl.when(complete)
        .then(pl.lit("rates"))
        .when(pl.col("billed_usd").is_not_null() & (pl.col("rates") == "github-copilot"))
        .then(pl.lit("billed"))
        .otherwise(pl.lit("partial"))
        .alias("cost_source"),
        pl.when(complete & pl.col("billed_usd").is_not_null())
        .then((pl.col("cost_usd") - pl.col("billed_usd")).cast(MONEY))
        .alias("cost_minus_billed_usd"),
    )
