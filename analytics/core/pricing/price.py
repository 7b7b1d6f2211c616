"""CALLS with tokens -> PRICED calls and sessions, beside the bill the log itself records.

Pricing has one entry point: :func:`price_calls` prices each call, and :func:`price_analysis`
prices the calls the same way and sums them per session, exactly, beside the log's own charge
(``totalNanoAiu``: USD = nano-AIU / 1e11). The CLI, the HTML report and the notebooks all go
through them, so a call costs the same in every view. ``call_costs.price_by_table`` is the engine
underneath: one table's prices, nothing else. Under the
``github-copilot`` table (alone or extended, ``github-copilot+FILE``) two more sources of
prices apply, each named in the call's ``cost_source``:

* ``log_rates``: a Copilot-billed model the table lacks is priced from the prices the logs
  themselves quote (``learned.py``), from whichever session quoted them (``price_from``
  names the line);
* ``byok_provider``: a bring-your-own-key call (``is_byok``) is not billed by Copilot (its
  ``billed_usd`` is 0); what the user pays is its provider's list price, from the first bundled
  vendor table that knows the model (``BYOK_TABLES``), else it is unpriced, never $0;
* ``vendor_api``: a call of an agent not billed in AI credits (``registry.with_credits``) is
  not billed by Copilot either; it is priced the same way, at its vendor's API list price:
  what the calls would cost on the API (a subscription user pays no per-token bill: an
  API-equivalent cost).

Under every table, a call served by a local provider (``call_costs.LOCAL_PROVIDERS``: LM
Studio, Ollama ...) costs exactly 0 with ``cost_source`` ``local``: nobody bills it per token,
and no API price is put on it.

A session with an unpriced call says so (``unpriced_calls``, ``unpriced_models``) and its
``cost_usd`` covers only the priced calls; ``cost_source`` tells which figure a reader should
use: ``rates`` (every call priced by the table), ``log_rates`` / ``byok_provider`` /
``vendor_api`` / ``local`` (every call priced, some that way), ``billed`` (some Copilot-billed calls
unpriced, but the log's bill covers the session), ``partial`` (a lower bound) or ``unpriced``
(no call priced, no bill to use).
``cost_minus_billed_usd`` compares what Copilot charges (BYOK calls: 0) with the bill. Sessions
also get the sums of their calls' tokens (``calls_input_tokens``, ``calls_output_tokens``) and how
many calls' tokens were observed, calibrated or estimated (``token_sources``), so an estimate is
never shown as a fact.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping

import polars as pl

from analytics.core import registry
from analytics.core.pricing.call_costs import AGENT_COSTS, nano_aiu_usd, price_by_table
from analytics.core.pricing.learned import learned_rate_table
from analytics.core.pricing.rates import (
    RateTable,
    add_missing_models,
    load_rate_table,
    merge_rate_tables,
)
from analytics.core.schema import COSTS, MONEY, beside

#: The table whose prices are Copilot's own: the log's prices and BYOK apply under it.
COPILOT_TABLE = "github-copilot"
#: The agents whose calls are billed under their own plan's table (AI credits: Copilot's);
#: other agents' calls are priced at vendor list prices.
CREDITS_AGENTS = registry.ids(registry.with_credits())
#: Vendor tables a BYOK call's model is looked up in, first match wins.
BYOK_TABLES = ("bedrock", "anthropic", "openai", "google", "moonshotai", "openrouter", "deepseek")

_PARTS = [
    "input_cost_usd",
    "cache_read_cost_usd",
    "cache_write_cost_usd",
    "output_cost_usd",
    "request_cost_usd",
]
_SOURCES = ("observed", "calibrated", "estimated")
_CALL = "__call"


def price_analysis(
    calls: pl.DataFrame,
    sessions: pl.DataFrame,
    table: RateTable,
    model_map: Mapping[str, str] | None = None,
    log_prices: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(priced calls, sessions with costs) under ``table``.

    ``calls`` are CALLS + CALL_TOKENS (``is_byok`` included); ``log_prices`` the prices the
    logs quote (``schema.LOG_PRICES``), used for Copilot-billed models ``table`` lacks when
    ``table`` is ``github-copilot``.
    """
    priced = price_calls(calls, table, model_map=model_map, log_prices=log_prices)
    return priced, price_sessions(priced, sessions, table)


def price_sessions(
    priced_calls: pl.DataFrame, sessions: pl.DataFrame, table: RateTable
) -> pl.DataFrame:
    """``sessions`` with their costs, the sums of their calls priced under ``table``
    (``price_calls``): for a caller that priced the calls already, what ``price_analysis``
    gives without pricing them again."""
    return _sessions(priced_calls, sessions, is_copilot_table(table))


def price_calls(
    calls: pl.DataFrame,
    table: RateTable,
    *,
    model_map: Mapping[str, str] | None = None,
    log_prices: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``calls`` with the ``schema.COSTS`` columns and ``billed_usd``, each call priced by the
    prices that apply to it (see the module docstring): the one way to price calls.

    ``calls`` are CALLS + CALL_TOKENS, or any frame with the columns
    ``call_costs.price_by_table`` needs (``is_byok`` and ``billed_nano_aiu`` may be absent: the
    calls are then Copilot-billed, with no bill); Claude Code and Codex calls' usage columns
    add ``call_costs.AGENT_COSTS``, other calls its ``unpriced_reason`` alone. ``log_prices``
    (``schema.LOG_PRICES``) are the prices the logs quote, used under ``github-copilot`` for
    models it lacks.

    >>> from analytics.core.pricing.rates import load_rate_table
    >>> calls = pl.DataFrame({"model": ["claude-sonnet-4-5"], "input_tokens": [4000],
    ...     "cache_read_tokens": [0], "cache_write_tokens": [3000], "output_tokens": [100],
    ...     "reasoning_tokens": [0], "start_time": [None], "user_initiated": [True],
    ...     "cache_write_1h_tokens": [2000]})
    >>> price_calls(calls, load_rate_table("anthropic"))["cache_write_cost_usd"].item()
    Decimal('0.015750000000000000')
    """
    if calls.height <= PRICED_AT_ONCE:
        return _price_each(calls, table, model_map or {}, log_prices)
    priced = _priced_in_slices(calls, table, model_map or {}, log_prices, None)
    # Not left in chunks, which a sort copies whole (``analyze --calls``): the calls' own
    # columns, which each slice passes on as they are, are the calls' again; the priced
    # ones are made contiguous.
    made = [c for c in priced.columns if c not in calls.columns or c in _PRICED]
    return priced.with_columns(
        *(calls.get_column(c) for c in priced.columns if c not in made),
        *(priced.get_column(c).rechunk() for c in made),
    )


#: Calls priced at a time (``price_calls``).
PRICED_AT_ONCE = 1 << 16


def priced_sessions(
    calls: pl.DataFrame,
    sessions: pl.DataFrame,
    table: RateTable,
    model_map: Mapping[str, str] | None = None,
    log_prices: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The sessions of ``price_analysis``, for a caller that does not show the priced calls
    (``analyze``'s sessions): each slice of calls is priced and kept only in the columns
    the per-session sums read (``_SUMMED``). The priced calls are never held whole: on
    the 1 GB pi tree they and their contiguous copy were some 130 MB of the run's peak."""
    if calls.height <= PRICED_AT_ONCE:
        narrow = _summed(_price_each(calls, table, model_map or {}, log_prices))
    else:
        narrow = _priced_in_slices(calls, table, model_map or {}, log_prices, _summed)
    return _sessions(narrow, sessions, is_copilot_table(table))


def _priced_in_slices(
    calls: pl.DataFrame,
    table: RateTable,
    model_map: Mapping[str, str],
    log_prices: pl.DataFrame | None,
    kept: Callable[[pl.DataFrame], pl.DataFrame] | None,
) -> pl.DataFrame:
    """``calls`` priced a slice at a time (each call is priced by its own row: the same
    rows), each slice narrowed by ``kept`` if given, then put together in chunks. A large
    tree's intermediate columns (each variant's prices set beside every call) are held
    for one slice, not for all its calls."""
    parts = []
    for part in calls.iter_slices(PRICED_AT_ONCE):
        priced = _price_each(part, table, model_map, log_prices)
        parts.append(priced if kept is None else kept(priced))
        del priced
    return pl.concat(parts, how="vertical", rechunk=False)


#: The columns of the priced calls that ``_sessions`` reads (``is_byok`` and ``agent``
#: where the calls have them).
_SUMMED = (
    "session_id",
    "model",
    "input_tokens",
    "output_tokens",
    "token_source",
    "is_byok",
    "agent",
    "rates",
    "priced_model",
    *_PARTS,
    "cost_usd",
    "cost_source",
)


def _summed(priced: pl.DataFrame) -> pl.DataFrame:
    """``priced`` calls in the columns ``_sessions`` reads (``_SUMMED``)."""
    return priced.select(c for c in _SUMMED if c in priced.columns)


#: The columns pricing adds to the calls (or replaces).
_PRICED = frozenset({*COSTS, *AGENT_COSTS, "billed_usd"})


def is_copilot_table(table: RateTable) -> bool:
    """Whether ``table`` is the bundled ``github-copilot`` table, alone or extended."""
    return table.name.split("+")[0] == COPILOT_TABLE


@functools.cache
def _byok_tables() -> tuple[RateTable, dict[str, str]]:
    """(the ``BYOK_TABLES`` as one table in dollars, an earlier table winning a shared name;
    the vendor table of each of its model ids)."""
    tables = [load_rate_table(name) for name in BYOK_TABLES]
    merged = tables[-1]
    vendor = {m.id: tables[-1].name for m in merged.models}
    for earlier in reversed(tables[:-1]):
        merged = merge_rate_tables(merged, earlier)
        vendor |= {m.id: earlier.name for m in earlier.models}
    # named in the order they are looked up in, as an unpriced call's reason names them
    return dataclasses.replace(merged, name="+".join(BYOK_TABLES)), vendor


def _price_each(
    calls: pl.DataFrame,
    table: RateTable,
    model_map: Mapping[str, str],
    log_prices: pl.DataFrame | None,
) -> pl.DataFrame:
    """Every call priced by the prices that apply to it (see the module docstring)."""
    if not is_copilot_table(table):
        return _billed(price_by_table(calls, table, model_map=model_map))
    # no price quoted (most trees): nothing to learn, and learning it costs ~10 ms a run
    quoted = log_prices if log_prices is not None and log_prices.height else None
    learned = learned_rate_table(quoted) if quoted is not None else None
    copilot = table if learned is None else add_missing_models(table, learned)
    own = {m.id for m in table.models}
    from_log = {m.id: m.source for m in copilot.models if m.id not in own}
    byok = calls.with_columns(_not_billed_by_copilot(calls).alias(_CALL)).get_column(_CALL)
    # Each kind of call is priced on its own rows; a kind that is every call is not copied,
    # and only calls of both kinds need putting back in their order.
    if byok.all():  # other agents' calls, or bring-your-own-key ones, alone
        billed, own_key = calls.clear(), calls
    elif not byok.any():  # most Copilot logs
        billed, own_key = calls, calls.clear()
    else:
        indexed = calls.with_row_index(_CALL)
        billed, own_key = indexed.filter(~byok), indexed.filter(byok)
    together = _relabel(price_by_table(billed, copilot, model_map=model_map), from_log, "log_rates")
    if own_key.height:  # most Copilot logs have no BYOK call: no second pricing
        provider, vendor = _byok_tables()
        by_provider = price_by_table(own_key, provider, model_map=model_map)
        source = pl.when(_other_agent(by_provider)).then(pl.lit("vendor_api"))
        by_provider = _relabel(by_provider, vendor, source.otherwise(pl.lit("byok_provider")))
        together = (
            pl.concat([together, by_provider]).sort(_CALL).drop(_CALL)
            if billed.height
            else by_provider
        )
    return _billed(
        together.with_columns(
            pl.lit(table.name).alias("rates"),
            pl.when(pl.col("cost_source") == "rates")
            .then(pl.lit(table.name))
            .otherwise(pl.col("price_from"))
            .alias("price_from"),
        )
    )


def _relabel(
    priced: pl.DataFrame, origins: Mapping[str, str | None], source: str | pl.Expr
) -> pl.DataFrame:
    """Calls priced by a model of ``origins`` (model id -> where its price is from) get
    ``cost_source`` ``source`` and that ``price_from``; the others keep theirs, local calls
    (``local``: priced at 0 whatever their model) included."""
    matched = (
        pl.col("priced_model").is_in(list(origins))
        & pl.col("cost_usd").is_not_null()
        & (pl.col("cost_source") != "local")
    )
    return priced.with_columns(
        pl.when(matched)
        .then(pl.lit(source) if isinstance(source, str) else source)
        .otherwise(pl.col("cost_source"))
        .alias("cost_source"),
        pl.when(matched)
        .then(
            pl.col("priced_model").replace_strict(origins, default=None, return_dtype=pl.String())
        )
        .otherwise(pl.col("price_from"))
        .alias("price_from"),
    )


def _billed(priced: pl.DataFrame) -> pl.DataFrame:
    """``billed_usd``: the log's bill of each call (null without one); 0 for a BYOK call, which
    Copilot never bills."""
    nano = "billed_nano_aiu"
    bill = nano_aiu_usd(pl.col(nano)) if nano in priced.columns else pl.lit(None, dtype=MONEY)
    bill = pl.when(_is_byok(priced)).then(bill.fill_null(0)).otherwise(bill)
    added = [*COSTS, *(c for c in AGENT_COSTS if c in priced.columns)]
    return priced.with_columns(bill.cast(MONEY).alias("billed_usd")).select(
        *(c for c in priced.columns if c not in added), *added, "billed_usd"
    )


def _other_agent(calls: pl.DataFrame) -> pl.Expr:
    """Whether each call is of an agent not billed in AI credits (``agent``), so priced at
    its vendor's list prices; calls of a frame without that column are Copilot's."""
    if "agent" not in calls.columns:
        return pl.lit(False)
    return (~pl.col("agent").is_in(CREDITS_AGENTS)).fill_null(False)


def _not_billed_by_copilot(calls: pl.DataFrame) -> pl.Expr:
    """Calls Copilot does not bill: bring-your-own-key calls and other agents' calls."""
    return _is_byok(calls) | _other_agent(calls)


def _is_byok(calls: pl.DataFrame) -> pl.Expr:
    """Whether each call is bring-your-own-key (``is_byok``); calls of a frame without that
    column are Copilot-billed."""
    return pl.col("is_byok").fill_null(False) if "is_byok" in calls.columns else pl.lit(False)


def _sessions(priced: pl.DataFrame, sessions: pl.DataFrame, copilot: bool) -> pl.DataFrame:
    """Each session's calls summed exactly and set beside its bill."""
    # A session without calls (say, one whose only call failed) cost nothing: an exact 0.
    no_calls = pl.col("unpriced_calls").is_null()
    # the log's own bill, where the sessions carry it (an agent's own table, joined)
    nano = "billed_nano_aiu"
    bill = nano_aiu_usd(pl.col(nano)) if nano in sessions.columns else pl.lit(None, dtype=MONEY)
    joined = beside(sessions, _per_session(priced, copilot), "session_id").with_columns(
        bill.alias("billed_usd"),
        *(
            pl.when(no_calls).then(pl.lit(0, dtype=MONEY)).otherwise(pl.col(c)).alias(c)
            for c in (*_PARTS, "cost_usd", "_charged")
        ),
    )
    complete = pl.col("unpriced_calls").fill_null(0) == 0
    billed = pl.col("billed_usd").is_not_null()
    source = (
        pl.when(complete & pl.col("_byok_provider").fill_null(False))
        .then(pl.lit("byok_provider"))
        .when(complete & pl.col("_vendor_api").fill_null(False))
        .then(pl.lit("vendor_api"))
        .when(complete & pl.col("_log_rates").fill_null(False))
        .then(pl.lit("log_rates"))
        .when(complete & pl.col("_local").fill_null(False))
        .then(pl.lit("local"))
        .when(complete)
        .then(pl.lit("rates"))
        .when(billed & pl.lit(copilot) & (pl.col("_unpriced_byok") == 0))
        .then(pl.lit("billed"))
        .when(pl.col("cost_usd").is_not_null())
        .then(pl.lit("partial"))
        .otherwise(pl.lit("unpriced"))
    )
    return joined.with_columns(
        source.alias("cost_source"),
        pl.when(billed & pl.col("_charged").is_not_null())
        .then((pl.col("_charged") - pl.col("billed_usd")).cast(MONEY))
        .alias("cost_minus_billed_usd"),
    ).drop("_unpriced_byok", "_charged", "_log_rates", "_byok_provider", "_vendor_api", "_local")


#: The cost sources each session says whether any of its calls has (``_per_session``).
_FLAGGED = ("log_rates", "byok_provider", "vendor_api", "local")


def _per_session(priced: pl.DataFrame, copilot: bool) -> pl.DataFrame:
    """One row per session of ``priced`` calls: its costs summed exactly, its unpriced calls
    and models, what Copilot charges for it (``_charged``: null when a call it bills is
    unpriced), its calls' cost sources (``_FLAGGED``), token sums and token sources.

    Each call's flags are set before grouping, so that every sum is a plain per-group
    aggregation and the conditions are applied to the sums after: polars evaluates a
    conditional or filtered expression inside a group_by by gathering each group's rows
    of every column it reads, some 100 MB on the 1 GB pi tree's calls."""
    byok = _not_billed_by_copilot(priced) if copilot else pl.lit(False)
    unpriced = pl.col("cost_usd").is_null()
    tokens = ("input_tokens", "output_tokens")
    flagged = priced.lazy().with_columns(
        unpriced.alias("_unpriced"),
        (unpriced & byok).alias("_unpriced_byok"),
        # What Copilot charges: its calls at the table's (or the log's) prices, BYOK calls
        # and other agents' calls nothing.
        pl.when(~byok).then(pl.col("cost_usd")).alias("_charged"),
        (unpriced & ~byok).alias("_uncharged"),
        *((pl.col("cost_source") == source).alias(f"_{source}") for source in _FLAGGED),
        *((pl.col("token_source") == source).alias(f"_{source}") for source in _SOURCES),
        # Only models the table has no price for: a priced model whose tokens are unknown
        # leaves its call without a cost too, but it is not unpriced.
        pl.when(pl.col("priced_model").is_null()).then(pl.col("model")).alias("_unpriced_model"),
    )
    sums = flagged.group_by("session_id").agg(
        pl.col("rates").first(),
        *(pl.col(part).sum() for part in (*_PARTS, "cost_usd")),
        pl.col("cost_usd").count().alias("_priced"),
        pl.col("_unpriced").sum().alias("unpriced_calls"),
        pl.col("_unpriced_byok").sum(),
        pl.col("_charged").sum(),
        pl.col("_uncharged").sum(),
        *(pl.col(f"_{source}").any() for source in _FLAGGED),
        pl.col("_unpriced_model").drop_nulls().unique().sort().alias("unpriced_models"),
        *(pl.col(c).sum().alias(f"calls_{c}") for c in tokens),
        *(pl.col(c).null_count().alias(f"_unknown_{c}") for c in tokens),
        *(pl.col(f"_{source}").sum().alias(source) for source in _SOURCES),
    )
    any_priced = pl.col("_priced") > 0
    return sums.select(
        "session_id",
        "rates",
        *(pl.when(any_priced).then(pl.col(part)).alias(part) for part in (*_PARTS, "cost_usd")),
        "unpriced_calls",
        "_unpriced_byok",
        pl.when(pl.col("_uncharged") == 0).then(pl.col("_charged")).alias("_charged"),
        *(f"_{source}" for source in _FLAGGED),
        "unpriced_models",
        *(
            pl.when(pl.col(f"_unknown_{c}") == 0).then(pl.col(f"calls_{c}")).alias(f"calls_{c}")
            for c in tokens
        ),
        pl.struct(*_SOURCES).alias("token_sources"),
    ).collect()
