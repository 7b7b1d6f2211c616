"""Pricing: add exact dollar costs to LLM calls, from a rate table.

Pure functions over polars frames; no I/O. The calls are joined to a small frame with one row
per (model, price entry, tier or window) holding dollars per token as ``schema.MONEY``
decimals; costs are integer token counts times those prices, which polars computes exactly
(an integer times a scale-18 decimal needs no rounding). Nothing here divides money.

How a call is priced:

* its ``model`` (after ``model_map``) selects a table model by id, alias, then glob pattern;
* its ``start_time`` selects the price entry in effect, and a time-of-day window if it starts
  in one (a call without ``start_time`` gets the latest entry and no window);
* its prompt size (``input_tokens``, cached tokens included) selects the long-context tier: the
  whole request is priced at the largest tier it exceeds;
* uncached input = input - cache_read - cache_write; reasoning is part of output and is billed
  at the output price unless the table prices reasoning apart;
* a per-request charge (``per_request`` x ``multiplier``) applies to ``user_initiated`` calls;
* a priced call says so: ``cost_source`` ``rates``, ``price_from`` the table's name.

Unknown is null, never zero: an unpriced model, a needed token count that is null, or a token
kind the table does not price (when the call has such tokens) makes the cost null.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, time
from decimal import Decimal
from typing import Literal

import polars as pl

from analytics.rates import WEEKDAYS, ModelRate, PricePeriod, PriceSet, RateTable, request_usd
from analytics.schema import COSTS, MONEY, TIMESTAMP

#: The hint shown next to unpriced models.
UNPRICED_HINT = "add it to a rate table with --rates FILE"

_ROW = "__row"
_PROMPT = "__prompt_tokens"
_PRICE_COLUMNS = ("p_input", "p_cache_read", "p_cache_write", "p_output", "p_reasoning")
_ZERO = pl.lit(Decimal(0), dtype=MONEY)


def price_calls(
    calls: pl.DataFrame,
    table: RateTable,
    *,
    model_map: Mapping[str, str] | None = None,
    cache_write_ttl: Literal["5m", "1h"] = "5m",
) -> pl.DataFrame:
    """Return ``calls`` with the ``schema.COSTS`` columns appended (replaced if present).

    ``calls`` needs ``model``, ``input_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
    ``output_tokens``, ``reasoning_tokens``, ``start_time`` and ``user_initiated``.
    ``model_map`` renames log models before lookup (e.g. ``{"auto": "gpt-5-mini"}``);
    ``cache_write_ttl`` picks the cache-write price (Copilot and Anthropic default to 5 min).

    >>> from analytics.rates import load_rate_table
    >>> calls = pl.DataFrame({"model": ["claude-haiku-4.5"], "input_tokens": [19335],
    ...     "cache_read_tokens": [8888], "cache_write_tokens": [10437], "output_tokens": [114],
    ...     "reasoning_tokens": [53], "start_time": [None], "user_initiated": [True]})
    >>> price_calls(calls, load_rate_table("github-copilot"))["cost_usd"].item()
    Decimal('0.014515050000000000')
    """
    return _price(calls, table, pl.col("input_tokens"), model_map, cache_write_ttl)


def price_totals(
    totals: pl.DataFrame,
    table: RateTable,
    *,
    at: datetime | None = None,
    model_map: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Price per-model token totals (``schema.MODEL_METRICS``, e.g. a shutdown's modelMetrics).

    Totals are priced as one block at the prices in effect at ``at`` (latest when ``None``).
    The prompt size of each request is unknown in a total, so a model with long-context tiers
    gets null costs, and per-request charges are null where the table has any.
    """
    frame = totals.with_columns(
        pl.lit(at, dtype=TIMESTAMP).alias("start_time"),
        pl.lit(None, dtype=pl.Boolean()).alias("user_initiated"),
    )
    return _price(frame, table, pl.lit(None, dtype=pl.Int64()), model_map, "5m")


def unpriced_models(priced: pl.DataFrame) -> pl.DataFrame:
    """The models of a priced frame that got no price: model, calls, hint. Sorted by model."""
    return (
        priced.filter(pl.col("priced_model").is_null())
        .group_by("model")
        .agg(pl.len().alias("calls"))
        .with_columns(pl.lit(UNPRICED_HINT).alias("hint"))
        .sort("model", nulls_last=True)
    )


def nano_aiu_to_usd(nano: str | int) -> Decimal:
    """Dollars for a Copilot nano-AIU amount, exactly: 1 AI credit = 1e9 nano-AIU = $0.01.

    >>> nano_aiu_to_usd("21255950000")
    Decimal('0.21255950000')
    """
    if not isinstance(nano, str | int) or isinstance(nano, bool):
        raise TypeError(f"nano-AIU must be a str or int, not {type(nano).__name__}")
    return Decimal(nano).scaleb(-11)


def nano_aiu_usd(nano: pl.Expr) -> pl.Expr:
    """Expression: a nano-AIU column (string or integer) as exact ``schema.MONEY`` dollars.

    For the log's own bill (``billed_nano_aiu``, ``total_nano_aiu``), shown where a model is
    unpriced. Exact: nano-AIU are whole numbers, and dollars have 11 decimal places.
    """
    return (nano.cast(pl.Decimal(38, 1)).cast(MONEY) / 10**11).cast(MONEY)


# ---------------------------------------------------------------------------------- internals


def _price(
    calls: pl.DataFrame,
    table: RateTable,
    prompt: pl.Expr,
    model_map: Mapping[str, str] | None,
    cache_write_ttl: Literal["5m", "1h"],
) -> pl.DataFrame:
    """Price ``calls`` choosing tiers by ``prompt``; see :func:`price_calls`."""
    frame = calls.with_row_index(_ROW).with_columns(
        _resolved_models(calls, table, model_map or {}), prompt.alias(_PROMPT)
    )
    chosen = _choose_variants(frame, _variants(table, cache_write_ttl), table)
    joined = frame.join(chosen, on=_ROW, how="left")
    kept = [c for c in calls.columns if c not in COSTS]
    return (
        joined.with_columns(
            pl.lit(table.name, dtype=pl.String()).alias("rates"),
            pl.col("__matched").alias("priced_model"),
            *_cost_parts(),
        )
        .with_columns(_total())
        .with_columns(
            pl.when(pl.col("cost_usd").is_not_null()).then(pl.lit(v, dtype=pl.String())).alias(n)
            for n, v in (("cost_source", "rates"), ("price_from", table.name))
        )
        .select(*kept, *COSTS)
    )


def _resolved_models(
    calls: pl.DataFrame, table: RateTable, model_map: Mapping[str, str]
) -> pl.Expr:
    """Expression: the table model id each call's model resolves to (null when none).

    Resolution runs once per distinct model name, not per row.
    """
    names = calls.get_column("model").drop_nulls().unique().to_list()
    resolved = {name: table.resolve(model_map.get(name, name)) for name in names}
    mapping = {name: rate.id for name, rate in resolved.items() if rate is not None}
    resolved_id = pl.col("model").replace_strict(mapping, default=None, return_dtype=pl.String())
    return resolved_id.alias("__resolved")


def _variants(table: RateTable, cache_write_ttl: Literal["5m", "1h"]) -> pl.DataFrame:
    """One row per model x price entry x (base | tier | window hour range), in $ per token."""
    rows = [
        row
        for model in table.models
        for period in model.periods
        for row in _period_rows(model, period, table, cache_write_ttl)
    ]
    money = dict.fromkeys(_PRICE_COLUMNS, MONEY)
    schema = {
        "__resolved": pl.String(),
        "eff_from": TIMESTAMP,
        "eff_until": TIMESTAMP,
        "is_latest": pl.Boolean(),
        "has_tiers": pl.Boolean(),
        "above": pl.Int64(),
        "win_tz": pl.String(),
        "win_start": pl.Int32(),
        "win_end": pl.Int32(),
        "win_days": pl.List(pl.Int8()),
        **money,
        "p_request": MONEY,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _period_rows(
    model: ModelRate, period: PricePeriod, table: RateTable, ttl: Literal["5m", "1h"]
) -> list[tuple[object, ...]]:
    """The variant rows of one price entry: its base prices, then each tier and window range."""
    latest = period is max(model.periods, key=_start)
    head = (model.id, period.effective_from, period.effective_until, latest, bool(period.tiers))
    request = request_usd(period, table.usd_per_unit)
    no_window = (None, None, None, None)
    rows = [(*head, 0, *no_window, *_per_token(period.prices, table, ttl), request)]
    rows += [
        (*head, t.above_prompt_tokens, *no_window, *_per_token(t.prices, table, ttl), request)
        for t in period.tiers
    ]
    rows += [
        (
            *head,
            0,
            w.timezone,
            _minute(a),
            _minute(b),
            _day_numbers(w.days),
            *_per_token(w.prices, table, ttl),
            request,
        )
        for w in period.windows
        for a, b in w.hours
    ]
    return rows


def _start(period: PricePeriod) -> datetime:
    """When ``period`` begins, with an open start sorting first."""
    return period.effective_from or datetime.min.replace(tzinfo=UTC)


def _per_token(prices: PriceSet, table: RateTable, ttl: Literal["5m", "1h"]) -> list[object]:
    """Dollars per token for input, cache read, cache write (by TTL), output, reasoning."""
    write = prices.cache_write_5m if ttl == "5m" else prices.cache_write_1h
    per_million = (prices.input, prices.cache_read, write, prices.output, prices.reasoning)
    return [table.usd_per_token(p) for p in per_million]


def _minute(moment: time) -> int:
    """Minutes since local midnight."""
    return moment.hour * 60 + moment.minute


def _day_numbers(days: tuple[str, ...]) -> list[int]:
    """Weekday names as polars weekday numbers (Monday = 1)."""
    return [WEEKDAYS.index(d) + 1 for d in days]


def _choose_variants(frame: pl.DataFrame, variants: pl.DataFrame, table: RateTable) -> pl.DataFrame:
    """For each call row, the one variant that applies: largest tier, a window before none."""
    candidates = frame.select(_ROW, "__resolved", "start_time", _PROMPT).join(
        variants, on="__resolved", how="inner"
    )
    local = _local_clock(candidates, table)
    applies = _in_period() & _in_tier() & _in_window(local)
    return (
        candidates.filter(applies)
        .sort([_ROW, "above", "win_tz"], descending=[False, True, False], nulls_last=True)
        .unique(subset=_ROW, keep="first", maintain_order=True)
        .with_columns(
            pl.col("__resolved").alias("__matched"),
            (~pl.col("has_tiers") | pl.col(_PROMPT).is_not_null()).alias("__tier_known"),
        )
        .select(_ROW, "__matched", "__tier_known", *_PRICE_COLUMNS, "p_request")
    )


def _in_period() -> pl.Expr:
    """The price entry is in effect at the call's start (the latest one when it is unknown)."""
    start = pl.col("start_time")
    inside = (pl.col("eff_from").is_null() | (pl.col("eff_from") <= start)) & (
        pl.col("eff_until").is_null() | (start < pl.col("eff_until"))
    )
    return pl.when(start.is_null()).then(pl.col("is_latest")).otherwise(inside)


def _in_tier() -> pl.Expr:
    """The tier applies: the base always, a tier when the prompt is larger than its threshold."""
    return (pl.col("above") == 0) | (pl.col(_PROMPT) > pl.col("above")).fill_null(False)


def _local_clock(candidates: pl.DataFrame, table: RateTable) -> tuple[pl.Expr, pl.Expr]:
    """Expressions: each call's local minute of day and weekday, in its window's timezone.

    One conversion per distinct timezone of the table's windows (a handful), chosen per row.
    """
    zones = sorted({w.timezone for m in table.models for p in m.periods for w in p.windows})
    minute: pl.Expr = pl.lit(None, dtype=pl.Int32())
    weekday: pl.Expr = pl.lit(None, dtype=pl.Int8())
    for zone in zones:
        local = pl.col("start_time").dt.convert_time_zone(zone)
        is_zone = pl.col("win_tz") == zone
        clock = (local.dt.hour().cast(pl.Int32()) * 60 + local.dt.minute()).cast(pl.Int32())
        minute = pl.when(is_zone).then(clock).otherwise(minute)
        weekday = pl.when(is_zone).then(local.dt.weekday().cast(pl.Int8())).otherwise(weekday)
    return minute, weekday


def _in_window(local: tuple[pl.Expr, pl.Expr]) -> pl.Expr:
    """The variant has no window, or the call starts inside it (ranges may wrap midnight)."""
    minute, weekday = local
    start, end = pl.col("win_start"), pl.col("win_end")
    in_hours = (
        pl.when(start < end)
        .then((minute >= start) & (minute < end))
        .otherwise((minute >= start) | (minute < end))
    )
    on_day = pl.col("win_days").list.contains(weekday)
    return pl.col("win_tz").is_null() | (in_hours & on_day).fill_null(False)


_PARTS = (
    "input_cost_usd",
    "cache_read_cost_usd",
    "cache_write_cost_usd",
    "output_cost_usd",
    "request_cost_usd",
)


def _cost_parts() -> list[pl.Expr]:
    """The itemised money columns, null unless the call was priced and its tier known."""
    priced = pl.col("__matched").is_not_null() & pl.col("__tier_known").fill_null(False)
    uncached = pl.col("input_tokens") - pl.col("cache_read_tokens") - pl.col("cache_write_tokens")
    parts = (
        _line(uncached, "p_input"),
        _line(pl.col("cache_read_tokens"), "p_cache_read"),
        _line(pl.col("cache_write_tokens"), "p_cache_write"),
        _output_cost(),
        _request_cost(),
    )
    return [
        pl.when(priced).then(e).cast(MONEY).alias(n) for n, e in zip(_PARTS, parts, strict=True)
    ]


def _total() -> pl.Expr:
    """``cost_usd``: the exact sum of the parts, null when any part is null."""
    any_null = pl.any_horizontal(pl.col(n).is_null() for n in _PARTS)
    total = pl.sum_horizontal(pl.col(n) for n in _PARTS)
    return pl.when(~any_null).then(total).cast(MONEY).alias("cost_usd")


def _line(tokens: pl.Expr, price: str) -> pl.Expr:
    """tokens x price; zero tokens cost zero even where the table has no such price."""
    return pl.when(tokens == 0).then(_ZERO).otherwise(tokens * pl.col(price))


def _output_cost() -> pl.Expr:
    """Output at the output price, or reasoning apart when the table prices it."""
    output, reasoning = pl.col("output_tokens"), pl.col("reasoning_tokens")
    apart = _line(output - reasoning, "p_output") + _line(reasoning, "p_reasoning")
    return pl.when(pl.col("p_reasoning").is_null()).then(_line(output, "p_output")).otherwise(apart)


def _request_cost() -> pl.Expr:
    """The per-request charge on user-initiated calls; null when that flag is unknown."""
    price, user = pl.col("p_request"), pl.col("user_initiated")
    return (
        pl.when(price == 0)
        .then(_ZERO)
        .when(user.is_null())
        .then(None)
        .when(user)
        .then(price)
        .otherwise(_ZERO)
    )
