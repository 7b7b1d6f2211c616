"""An analysis priced under a rate table, kept beside the stored analysis it prices.

On a warm run, pricing every call of a large tree (exact decimals, tiers, time windows, the
log's own prices) is the largest step after start-up. On the 1 GB benchmark tree it takes
0.07-0.14 s of about 0.6 s. An unchanged analysis priced by an unchanged rate table and
model map gives the same tables. So they are kept in the result cache, under the analysis's
key, by a digest of the table and the map, and the next run loads only the table it shows.
Only the tables a command asked for are kept: ``analyze`` shows the priced sessions, and
writing the priced calls beside them on every run (76,000 rows of 36 columns on that tree:
0.14 CPU s) would cost more than pricing them again (0.12 s) on the rarer run that shows
the calls.

An analysis made anew because some logs changed (a live session) is mostly the sessions of
the previous one: ``Analysis.previous`` names that analysis and the sessions the two share
unchanged. When the previous one's priced tables are kept under the same digest and the logs
quote the same prices (the prices learned from them can apply to any session), those
sessions' rows are taken from it and only the other sessions are priced. Pricing is row by
row (a call by its own tokens, time and model; a session by its own calls), so the rows are
those a full pricing gives.

Only a whole stored analysis (``Analysis.stored_as``) is kept this way. A window or a
restriction (``Analysis.only``) makes a new analysis that is priced afresh, since its
tables are not the stored ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from analytics.cache import fingerprints
from analytics.core.pricing.price import price_calls, price_sessions, priced_sessions
from analytics.core.schema import in_row_order

if TYPE_CHECKING:
    from analytics.cache.results import ResultCache
    from analytics.core.pricing.rates import RateTable
    from analytics.engine.analyze import Analysis

#: The priced tables: calls with costs, and sessions with costs (``price.price_analysis``).
PRICED = ("calls", "sessions")


def priced_tables(
    result: Analysis,
    table: RateTable,
    model_map: Mapping[str, str],
    names: Sequence[str] = PRICED,
) -> dict[str, pl.DataFrame]:
    """The priced tables ``names`` of ``result`` under ``table`` and ``model_map``: loaded
    when kept, else computed (and, for a stored analysis, those of ``names`` kept)."""
    digest = fingerprints.prices_key(table, model_map)
    if result.stored_as is None:
        return _price(result, table, model_map, names)
    cache, key = result.stored_as
    loaded = cache.load_priced(key, digest, names)
    if loaded is not None:
        return loaded
    tables = _repriced(result, cache, digest, table, model_map, names)
    if tables is None:
        tables = _price(result, table, model_map, names)
    cache.save_priced_later(key, digest, tables)
    return tables


def _price(
    result: Analysis, table: RateTable, model_map: Mapping[str, str], names: Sequence[str]
) -> dict[str, pl.DataFrame]:
    return _priced(
        result.call_view, result.session_view, table, model_map, result.log_prices, names
    )


def _priced(
    calls: pl.DataFrame,
    sessions: pl.DataFrame,
    table: RateTable,
    model_map: Mapping[str, str],
    log_prices: pl.DataFrame,
    names: Sequence[str],
) -> dict[str, pl.DataFrame]:
    """The priced tables ``names`` of ``calls`` and ``sessions``, only those: the sessions
    alone are priced without holding the priced calls (``price.priced_sessions``), the
    calls alone are not summed per session."""
    if "calls" not in names:
        return {"sessions": priced_sessions(calls, sessions, table, model_map, log_prices)}
    priced = price_calls(calls, table, model_map=model_map, log_prices=log_prices)
    tables = {"calls": priced}
    if "sessions" in names:
        tables["sessions"] = price_sessions(priced, sessions, table)
    return {name: tables[name] for name in names}


#: Columns that tell the rows of each priced table apart, in the tables' own order.
_ROW = {"calls": ["session_id", "event_seq"], "sessions": ["session_id"]}


def _repriced(
    result: Analysis,
    cache: ResultCache,
    digest: str,
    table: RateTable,
    model_map: Mapping[str, str],
    names: Sequence[str],
) -> dict[str, pl.DataFrame] | None:
    """The priced tables ``names`` of ``result``: the previous analysis's rows for the
    sessions it shares unchanged, the others priced now (see the module docstring). None
    when that does not apply: no session shared, nothing kept, other quoted prices, or rows
    that do not match one for one."""
    if result.previous is None or not result.previous.same:
        return None
    before, same = result.previous.key, result.previous.same
    kept = cache.load_priced(before, digest, names)
    quoted = cache.load_table(before, "log_prices")
    if kept is None or quoted is None or not quoted.equals(result.log_prices):
        return None
    unchanged = pl.col("session_id").is_in(pl.Series(sorted(same), dtype=pl.String).implode())
    fresh = _priced(
        result.previous.calls().filter(~unchanged),
        result.session_view.filter(~unchanged),
        table,
        model_map,
        result.log_prices,
        names,
    )
    tables = {}
    for name in names:
        rows, mine, old, new = _ROW[name], getattr(result, name), kept[name], fresh[name]
        if old.schema != new.schema or mine.select(rows).is_duplicated().any():
            return None
        # each row's place in ``old`` then ``new`` (the kept rows of unchanged sessions, the
        # others priced now), found on the key columns alone: the rows are then taken in
        # ``mine``'s order without a copy where they stand as they stood (``in_row_order``)
        places = pl.concat(
            [
                old.select(*rows, unchanged.alias("_kept")).with_row_index(_AT).filter("_kept"),
                new.select(rows).with_row_index(_AT, offset=old.height),
            ],
            how="diagonal",
        ).drop("_kept")
        if places.height != mine.height or places.select(rows).is_duplicated().any():
            return None
        at = mine.select(rows).join(
            places, on=rows, how="inner", maintain_order="left", nulls_equal=True
        )[_AT]
        if at.len() != mine.height:
            return None
        tables[name] = in_row_order(pl.concat([old, new], rechunk=False), at)
    return tables


#: The column of a row's place among the kept and the fresh rows (``_repriced``).
_AT = "__place"
