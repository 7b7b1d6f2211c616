"""A rate table's prices as rows, for ``agentcost rates show``: what a table charges, read
without its TOML.

One row per model and price entry, in the table's order: the model's id, when the entry
starts and ends, each token price per million tokens in the table's own ``unit`` (AI credits
or dollars), the per-request charge and its multiplier, and what else the entry prices (long-
context tiers, time windows, web search, fast mode) in words. Prices are exact decimal text;
a price the entry does not set is null (the table prints ``-``), never 0.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import polars as pl

from analytics.core.pricing.rates import TOKEN_PRICE_KEYS, PricePeriod, RateTable

#: The columns of ``price_list``, all text.
PRICE_LIST_COLUMNS = (
    "model",
    "aliases",
    "effective_from",
    "effective_until",
    *TOKEN_PRICE_KEYS,
    "per_request",
    "multiplier",
    "also",
)


def price_list(table: RateTable) -> pl.DataFrame:
    """Every price entry of ``table`` as a row of text (see the module docstring)."""
    rows = [
        (
            model.id,
            ", ".join(model.aliases) or None,
            _day(period.effective_from),
            _day(period.effective_until),
            *(_text(price) for price in period.prices.as_dict().values()),
            _text(period.per_request) if period.per_request else None,
            _text(period.multiplier) if period.per_request else None,
            _also(period),
        )
        for model in table.models
        for period in model.periods
    ]
    return pl.DataFrame(rows, schema=dict.fromkeys(PRICE_LIST_COLUMNS, pl.String()), orient="row")


def _text(amount: Decimal | None) -> str | None:
    """An exact amount as plain decimal text (``0.000125``, never ``1.25E-4``)."""
    return None if amount is None else format(amount.normalize(), "f")


def _day(moment: datetime | None) -> str | None:
    """An entry's start or end: the day, or the instant when it is not a UTC midnight."""
    if moment is None:
        return None
    midnight = (moment.hour, moment.minute, moment.second) == (0, 0, 0)
    return moment.strftime("%Y-%m-%d" if midnight else "%Y-%m-%dT%H:%M:%SZ")


def _also(period: PricePeriod) -> str | None:
    """What an entry prices besides its base token prices, in words."""
    parts = [f"above {tier.above_prompt_tokens:,} prompt tokens" for tier in period.tiers]
    parts += [f"{window.name} hours ({window.timezone})" for window in period.windows]
    if period.web_search is not None:
        parts.append(f"web search {_text(period.web_search)}")
    if period.fast_multiplier is not None:
        parts.append(f"fast x{_text(period.fast_multiplier)}")
    return "; ".join(parts) or None
