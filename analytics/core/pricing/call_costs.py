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
* cache writes are priced by lifetime: ``cache_write_1h_tokens`` at the 1-hour price and the
  rest of ``cache_write_tokens`` at the 5-minute price; where the log gives no split
  (``cache_write_1h_tokens`` null or absent) every write is priced at the ``cache_write_ttl``
  price (5 minutes by default), and where the table prices the two lifetimes apart the call's
  ``cache_write_rate_assumed`` names the lifetime assumed. A null ``cache_write_tokens`` (older
  Codex logs) costs nothing extra where the table's write price equals its input price, since
  the split of input cannot change the cost, and leaves the cost unknown where it does not;
* a per-request charge (``per_request`` x ``multiplier``) applies to ``user_initiated`` calls,
  and each server-side web search (``web_search_requests``) costs the table's ``web_search``;
  both are in ``request_cost_usd``. Web fetches cost nothing beyond their tokens;
* ``speed`` "fast" multiplies every token price by the entry's ``fast_multiplier``;
  ``service_tier`` null, "standard", "default" or "auto" is priced at the table's prices;
* a priced call says so: ``cost_source`` ``rates``, ``price_from`` the table's name;
* a call served by a local provider (its ``provider`` one of :data:`LOCAL_PROVIDERS`: LM Studio,
  Ollama, llama.cpp, vLLM ...) costs exactly 0 under every table, whatever its model and tokens:
  nobody bills it per token. It says so: ``cost_source`` ``local``, ``price_from`` the provider,
  ``priced_model`` its own model (it is priced, not unpriced). The machine's running cost is not
  counted.

Unknown is null, never zero: an unpriced model, a needed token count that is null, a token kind
the table does not price (when the call has such tokens), a speed or service tier the table has
no price for, makes the cost null.

Every priced frame gets ``unpriced_reason`` after ``schema.COSTS``: why a call has no cost, in
words, naming the table where the table is the cause (null where it has one). Calls that carry
any of the agent usage columns (``AGENT_USAGE``: Claude Code and Codex calls) get the
``AGENT_COSTS`` columns, ``cache_write_rate_assumed`` before it. Calls without them (Copilot)
price exactly as a frame whose agent usage columns are all null.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, time
from decimal import Decimal
from typing import Literal

import polars as pl

from analytics.core.pricing.rates import (
    WEEKDAYS,
    ModelRate,
    PricePeriod,
    PriceSet,
    RateTable,
    request_usd,
    search_usd,
)
from analytics.core.schema import AGENT_CALLS, COSTS, MONEY, TIMESTAMP, money_lit, money_text

#: The hint shown next to unpriced models.
UNPRICED_HINT = "add it to a rate table with --rates FILE"

#: Usage columns of Claude Code and Codex calls that pricing reads where present (null or
#: absent: no 1-hour split, no web search, standard speed and tier).
AGENT_USAGE: dict[str, pl.DataType] = {
    name: AGENT_CALLS[name]
    for name in ("cache_write_1h_tokens", "web_search_requests", "speed", "service_tier")
}
#: What a priced frame adds after ``schema.COSTS`` when its calls carry ``AGENT_USAGE``:
#: the cache-write lifetime assumed for writes the log does not split (``"5m"``, ``"1h"``;
#: null where nothing was assumed) and why a call has no cost (null where it has one).
AGENT_COSTS: dict[str, pl.DataType] = {
    "cache_write_rate_assumed": pl.String(),
    "unpriced_reason": pl.String(),
}
#: Service tiers priced at a table's prices; any other tier leaves the call unpriced.
STANDARD_TIERS = ("standard", "default", "auto")
#: Provider ids (lower case) of servers that run a model on the user's own machine or network
#: and bill nothing per token, as the agents' logs name them: OpenCode's ``providerID`` and pi's
#: ``provider`` (both user-chosen for a custom endpoint; these are their built-in and documented
#: ids). A hosted service of the same software (``ollama-cloud``) is not local.
LOCAL_PROVIDERS = (
    "lmstudio",
    "lm-studio",
    "ollama",
    "llama.cpp",
    "llama-cpp",
    "llamacpp",
    "vllm",
    "localai",
    "local",
)

_ROW = "__row"
_LOCAL = "__local"
_VARIANT = "__variant"
_PROMPT = "__prompt_tokens"
_TOKEN_PRICES = ("input", "cache_read", "cache_write", "cache_write_1h", "output", "reasoning")
_PRICE_COLUMNS = tuple(f"p_{n}" for n in _TOKEN_PRICES)
_FAST_COLUMNS = tuple(f"f_{n}" for n in _TOKEN_PRICES)
#: Every money column of a variant (``_variants``): its token prices, standard and fast, and
#: its per-request and per-web-search charges.
_PRICES = (*_PRICE_COLUMNS, *_FAST_COLUMNS, "p_request", "p_web_search")
_ZERO = money_lit(0)
#: Token counts every priced call needs (cache writes are needed only where they cost more).
_COUNTS = ("input_tokens", "cache_read_tokens", "output_tokens")


def price_by_table(
    calls: pl.DataFrame,
    table: RateTable,
    *,
    model_map: Mapping[str, str] | None = None,
    cache_write_ttl: Literal["5m", "1h"] = "5m",
) -> pl.DataFrame:
    """Return ``calls`` with the ``schema.COSTS`` columns appended (replaced if present), each
    call at ``table``'s prices alone.

    This is the engine under ``price.price_calls``, the one entry point, which adds the log's
    own prices and bring-your-own-key pricing under the Copilot table: call that instead.

    ``calls`` needs ``model``, ``input_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
    ``output_tokens``, ``reasoning_tokens`` and ``start_time``; ``user_initiated`` (absent: not
    known, which matters only to per-request charges) and ``AGENT_USAGE`` are optional (with
    the latter, ``AGENT_COSTS`` follow ``COSTS``). ``model_map`` renames log models
    before lookup (e.g. ``{"auto": "gpt-5-mini"}``); ``cache_write_ttl`` is the lifetime assumed
    for cache writes the log does not split (5 minutes: Claude Code's default).

    >>> from analytics.core.pricing.rates import load_rate_table
    >>> calls = pl.DataFrame({"model": ["claude-haiku-4.5"], "input_tokens": [19335],
    ...     "cache_read_tokens": [8888], "cache_write_tokens": [10437], "output_tokens": [114],
    ...     "reasoning_tokens": [53], "start_time": [None], "user_initiated": [True]})
    >>> price_by_table(calls, load_rate_table("github-copilot"))["cost_usd"].item()
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


def is_local(calls: pl.DataFrame) -> pl.Expr:
    """Expression: whether each call was served by a local provider (:data:`LOCAL_PROVIDERS`,
    any case); false where ``calls`` has no ``provider`` column or the call names none."""
    if "provider" not in calls.columns:
        return pl.lit(False)
    return pl.col("provider").str.to_lowercase().is_in(LOCAL_PROVIDERS).fill_null(False)


def unpriced_models(priced: pl.DataFrame) -> pl.DataFrame:
    """The models of a priced frame that got no price: model, calls, hint. Sorted by model."""
    return (
        priced.filter(pl.col("priced_model").is_null())
        .group_by("model")
        .agg(pl.len().alias("calls"))
        .with_columns(pl.lit(UNPRICED_HINT).alias("hint"))
        .sort("model", nulls_last=True)
    )


def unpriced_reasons(priced: pl.DataFrame) -> pl.DataFrame:
    """Every call of a priced frame that has no cost, by model and ``unpriced_reason``: model,
    unpriced_reason, calls. Sorted by model, then reason; empty when every call has a cost."""
    return (
        priced.filter(pl.col("cost_usd").is_null())
        .group_by("model", "unpriced_reason")
        .agg(pl.len().cast(pl.Int64).alias("calls"))
        .sort("model", "unpriced_reason", nulls_last=True)
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
    """Price ``calls`` choosing tiers by ``prompt``; see :func:`price_by_table`."""
    agent = any(name in calls.columns for name in AGENT_USAGE)
    optional = {**AGENT_USAGE, "user_initiated": pl.Boolean(), "provider": pl.String()}
    usage = _without_empty_chunks(
        calls.with_columns(
            pl.lit(None, dtype=dtype).alias(name)
            for name, dtype in optional.items()
            if name not in calls.columns
        )
    )
    frame = usage.with_row_index(_ROW).with_columns(
        _resolved_models(calls, table, model_map or {}), prompt.alias(_PROMPT)
    )
    variants = _variants(table)
    chosen = _choose_variants(frame, variants, table)
    # each call keeps its row: the chosen variant's prices are taken by its index and set
    # beside the calls, not joined to a copy
    prices = variants.select(pl.col("__resolved").alias("__matched"), "has_tiers", *_PRICES).select(
        pl.all().gather(chosen)
    )
    known = ~pl.col("has_tiers") | pl.col(_PROMPT).is_not_null()
    joined = (
        frame.hstack(prices.get_columns())
        .with_columns(pl.when(pl.col("__matched").is_not_null()).then(known).alias("__tier_known"))
        .drop("has_tiers")
        .with_columns(_flags())
    )
    kept = [c for c in calls.columns if c not in COSTS and c not in AGENT_COSTS]
    local = pl.col(_LOCAL)
    return (
        joined.with_columns(is_local(calls).alias(_LOCAL))
        .with_columns(
            pl.lit(table.name, dtype=pl.String()).alias("rates"),
            pl.when(local)
            .then(pl.col("model"))
            .otherwise(pl.col("__matched"))
            .alias("priced_model"),
            *_cost_parts(cache_write_ttl),
        )
        .with_columns(_total())
        .with_columns(
            pl.when(local)
            .then(pl.lit("local"))
            .when(pl.col("cost_usd").is_not_null())
            .then(pl.lit("rates"))
            .alias("cost_source"),
            pl.when(local)
            .then(pl.col("provider"))
            .when(pl.col("cost_usd").is_not_null())
            .then(pl.lit(table.name, dtype=pl.String()))
            .alias("price_from"),
            _assumed_write_rate(cache_write_ttl),
            _unpriced_reason(table),
        )
        .select(*kept, *COSTS, *(AGENT_COSTS if agent else ("unpriced_reason",)))
    )


def _without_empty_chunks(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame``, made contiguous when one of its columns holds an empty chunk among others.

    A filter leaves such a chunk where it removes all the rows of one part of a concatenation
    (every Copilot call of a mix, or every call before a ``--until``). Priced beside the
    contiguous columns ``_price`` adds (the row index, the chosen prices), such a frame makes
    polars 2.1 panic (``binview/mod.rs: assertion failed: i < self.len()``) in the
    ``unpriced_reason`` chain of ``format`` over literal branches. Other frames are not copied:
    rechunking every multi-chunk frame costs ~9 ms on 80,000 calls of the cold path.
    """
    empty = any(
        series.n_chunks() > 1 and any(len(chunk) == 0 for chunk in series.get_chunks())
        for series in frame.get_columns()
    )
    return frame.rechunk() if empty else frame


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


def _variants(table: RateTable) -> pl.DataFrame:
    """One row per model x price entry x (base | tier | window hour range), in $ per token:
    the standard prices, the fast-mode prices (null without a ``fast_multiplier``), and the
    per-request and per-web-search charges; in the order a call's variants are tried."""
    rows = [
        row
        for model in table.models
        for period in model.periods
        for row in _period_rows(model, period, table)
    ]
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
        **dict.fromkeys(_PRICES, pl.String()),
    }
    # the prices come as text (``schema.money_text``), cast to MONEY here; a call's variants
    # are tried in this order (``_choose_variants``): the largest tier first, a window before
    # none, else the table's order
    return (
        pl.DataFrame(rows, schema=schema, orient="row")
        .with_columns(pl.col(_PRICES).cast(MONEY))
        .sort(["above", "win_tz"], descending=[True, False], nulls_last=True, maintain_order=True)
    )


def _period_rows(
    model: ModelRate, period: PricePeriod, table: RateTable
) -> list[tuple[object, ...]]:
    """The variant rows of one price entry: its base prices, then each tier and window range."""
    latest = period is max(model.periods, key=_start)
    head = (model.id, period.effective_from, period.effective_until, latest, bool(period.tiers))
    charges = (
        money_text(request_usd(period, table.usd_per_unit)),
        money_text(search_usd(period, table.usd_per_unit)),
    )
    no_window = (None, None, None, None)
    fast = period.fast_multiplier

    def priced(prices: PriceSet) -> tuple[object, ...]:
        """Standard prices, then fast-mode prices (null where the entry has none)."""
        fast_prices = [None] * 6 if fast is None else _per_token(prices.scaled(fast), table)
        return (*_per_token(prices, table), *fast_prices)

    rows = [(*head, 0, *no_window, *priced(period.prices), *charges)]
    rows += [
        (*head, t.above_prompt_tokens, *no_window, *priced(t.prices), *charges)
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
            *priced(w.prices),
            *charges,
        )
        for w in period.windows
        for a, b in w.hours
    ]
    return rows


def _start(period: PricePeriod) -> datetime:
    """When ``period`` begins, with an open start sorting first."""
    return period.effective_from or datetime.min.replace(tzinfo=UTC)


def _per_token(prices: PriceSet, table: RateTable) -> list[str | None]:
    """Dollars per token for input, cache read, 5-minute and 1-hour cache writes, output and
    reasoning, as text (``schema.money_text``)."""
    per_million = (
        prices.input,
        prices.cache_read,
        prices.cache_write_5m,
        prices.cache_write_1h,
        prices.output,
        prices.reasoning,
    )
    return [money_text(table.usd_per_token(p)) for p in per_million]


def _minute(moment: time) -> int:
    """Minutes since local midnight."""
    return moment.hour * 60 + moment.minute


def _day_numbers(days: tuple[str, ...]) -> list[int]:
    """Weekday names as polars weekday numbers (Monday = 1)."""
    return [WEEKDAYS.index(d) + 1 for d in days]


def _choose_variants(frame: pl.DataFrame, variants: pl.DataFrame, table: RateTable) -> pl.Series:
    """For each call row, the row of ``variants`` that applies (null: none): of those whose
    entry, tier and window apply, the first, as ``_variants`` orders them by preference.

    The calls meet the variants by what decides the choice alone, in the calls' order and
    each call's variants in theirs, so the first applicable one of a call is its choice: no
    sort, and no join to put the choices back in the calls' order (they are scattered into
    a column of every call)."""
    candidates = frame.select(_ROW, "__resolved", "start_time", _PROMPT).join(
        variants.select(pl.exclude(*_PRICES)).with_row_index(_VARIANT),
        on="__resolved",
        how="inner",
        maintain_order="left_right",
    )
    local = _local_clock(candidates, table)
    applies = _in_period() & _in_tier() & _in_window(local)
    chosen = candidates.filter(applies).filter(pl.col(_ROW).is_first_distinct())
    every = pl.repeat(None, frame.height, dtype=pl.UInt32(), eager=True)
    return every.scatter(chosen.get_column(_ROW), chosen.get_column(_VARIANT))


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


def _flags() -> list[pl.Expr]:
    """Per call: whether its speed and service tier have prices, and whether it is priced."""
    speed, tier = pl.col("speed"), pl.col("service_tier")
    fast = (speed == "fast").fill_null(False)
    speed_priced = (
        speed.is_null() | (speed == "standard") | (fast & pl.col("f_input").is_not_null())
    )
    tier_priced = tier.is_null() | tier.is_in(STANDARD_TIERS)
    return [
        fast.alias("__fast"),
        speed_priced.alias("__speed_priced"),
        tier_priced.alias("__tier_priced"),
        (
            pl.col("__matched").is_not_null()
            & pl.col("__tier_known").fill_null(False)
            & speed_priced
            & tier_priced
        ).alias("__priced"),
    ]


def _price_of(name: str) -> pl.Expr:
    """The call's price per token of a kind: the fast-mode one when it ran fast."""
    return pl.when(pl.col("__fast")).then(pl.col(f"f_{name}")).otherwise(pl.col(f"p_{name}"))


def _cost_parts(ttl: Literal["5m", "1h"]) -> list[pl.Expr]:
    """The itemised money columns: exactly 0 for a local call; else null unless the call was
    priced and its tier known."""
    parts = (
        _line(_uncached(), "input"),
        _line(pl.col("cache_read_tokens"), "cache_read"),
        _cache_write_cost(ttl),
        _output_cost(),
        _request_cost() + _search_cost(),
    )
    return [
        pl.when(pl.col(_LOCAL)).then(_ZERO).when(pl.col("__priced")).then(e).cast(MONEY).alias(n)
        for n, e in zip(_PARTS, parts, strict=True)
    ]


def _writes() -> pl.Expr:
    """Cache-write tokens; a null count is 0 where writes cost what input costs (the split of
    input then cannot change the cost), and stays null elsewhere."""
    same = (_price_of("cache_write") == _price_of("input")).fill_null(False)
    writes = pl.col("cache_write_tokens")
    return pl.when(writes.is_null() & same).then(0).otherwise(writes)


def _uncached() -> pl.Expr:
    """Uncached input: all input less cache reads and writes."""
    return pl.col("input_tokens") - pl.col("cache_read_tokens") - _writes()


def _cache_write_cost(ttl: Literal["5m", "1h"]) -> pl.Expr:
    """1-hour writes at the 1-hour price and the rest at the 5-minute one; without a split, all
    writes at the ``ttl`` lifetime's price."""
    writes, long = _writes(), pl.col("cache_write_1h_tokens")
    split = _line(writes - long, "cache_write") + _line(long, "cache_write_1h")
    assumed = _line(writes, "cache_write" if ttl == "5m" else "cache_write_1h")
    return pl.when(long.is_null()).then(assumed).otherwise(split)


def _total() -> pl.Expr:
    """``cost_usd``: the exact sum of the parts, null when any part is null."""
    any_null = pl.any_horizontal(pl.col(n).is_null() for n in _PARTS)
    total = pl.sum_horizontal(pl.col(n) for n in _PARTS)
    return pl.when(~any_null).then(total).cast(MONEY).alias("cost_usd")


def _line(tokens: pl.Expr, kind: str) -> pl.Expr:
    """tokens x the price of ``kind``; zero tokens cost zero even where the table has no such
    price."""
    return pl.when(tokens == 0).then(_ZERO).otherwise(tokens * _price_of(kind))


def _output_cost() -> pl.Expr:
    """Output at the output price, or reasoning apart when the table prices it."""
    output, reasoning = pl.col("output_tokens"), pl.col("reasoning_tokens")
    apart = _line(output - reasoning, "output") + _line(reasoning, "reasoning")
    return pl.when(pl.col("p_reasoning").is_null()).then(_line(output, "output")).otherwise(apart)


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


def _search_cost() -> pl.Expr:
    """Web searches x the table's price per search; none (or no count) costs nothing, and
    searches the table has no price for leave the cost unknown."""
    searches = pl.col("web_search_requests").fill_null(0)
    return pl.when(searches == 0).then(_ZERO).otherwise(searches * pl.col("p_web_search"))


def _assumed_write_rate(ttl: Literal["5m", "1h"]) -> pl.Expr:
    """``cache_write_rate_assumed``: ``ttl`` where a priced call's writes have no lifetime split
    and the table prices the two lifetimes apart; null where nothing was assumed."""
    five, hour = pl.col("p_cache_write"), pl.col("p_cache_write_1h")
    assumed = (
        pl.col("cost_usd").is_not_null()
        & ~pl.col(_LOCAL)
        & (pl.col("cache_write_tokens") > 0)
        & pl.col("cache_write_1h_tokens").is_null()
        & (hour != five).fill_null(False)
    )
    return pl.when(assumed).then(pl.lit(ttl)).alias("cache_write_rate_assumed")


def _unpriced_reason(table: RateTable) -> pl.Expr:
    """``unpriced_reason``: why a call has no cost, the first cause that applies, naming the
    table where the table is the cause; null when it has one."""
    return (
        pl.when(pl.col("cost_usd").is_not_null())
        .then(None)
        .when(pl.col("model").is_null())
        .then(pl.lit("no model"))
        .when(pl.col("__resolved").is_null())
        .then(pl.lit(f"model not in {tables_named(table)}"))
        .when(pl.col("__matched").is_null())
        .then(_no_price_then(table))
        .when(~pl.col("__speed_priced"))
        .then(pl.format('no price for speed "{}"', pl.col("speed")))
        .when(~pl.col("__tier_priced"))
        .then(pl.format('no price for service tier "{}"', pl.col("service_tier")))
        .when(~pl.col("__tier_known"))
        .then(pl.lit("prompt size unknown: the model has long-context tiers"))
        .when(pl.any_horizontal(pl.col(c).is_null() for c in _COUNTS) | _writes().is_null())
        .then(
            pl.format(
                "{} unknown",
                pl.coalesce(
                    *(pl.when(pl.col(c).is_null()).then(pl.lit(c)) for c in _COUNTS),
                    pl.lit("cache_write_tokens (writes cost more than input here)"),
                ),
            )
        )
        .otherwise(pl.lit("the table has no price for a kind of token or request the call has"))
        .alias("unpriced_reason")
    )


def tables_named(table: RateTable) -> str:
    """``table`` as a reason names it: ``the openrouter rate table``, and a merged table
    (``github-copilot+mine``) as ``the github-copilot or mine rate tables``."""
    names = table.name.split("+")
    if len(names) == 1:
        return f"the {names[0]} rate table"
    return f"the {', '.join(names[:-1])} or {names[-1]} rate tables"


def _no_price_then(table: RateTable) -> pl.Expr:
    """Why a call of a model the table has got no price: its prices ended before the call
    (``no price after 2025-09-05 in deepseek``), began after it, or have a gap there."""
    day = "%Y-%m-%d"
    starts = {
        m.id: min(p.effective_from for p in m.periods if p.effective_from).strftime(day)
        for m in table.models
        if all(p.effective_from for p in m.periods)
    }
    ends = {
        m.id: max(p.effective_until for p in m.periods if p.effective_until).strftime(day)
        for m in table.models
        if all(p.effective_until for p in m.periods)
    }
    gap = pl.lit(f"no price in {table.name} at the time of the call")
    if not starts and not ends:  # every model priced from and until any time
        return gap
    model, start = pl.col("__resolved"), pl.col("start_time").cast(TIMESTAMP).dt.strftime(day)
    first = model.replace_strict(starts, default=None, return_dtype=pl.String())
    last = model.replace_strict(ends, default=None, return_dtype=pl.String())
    return (
        pl.when(start >= last)
        .then(pl.format("no price after {} in {}", last, pl.lit(table.name)))
        .when(start < first)
        .then(pl.format("no price before {} in {}", first, pl.lit(table.name)))
        .otherwise(gap)
    )
