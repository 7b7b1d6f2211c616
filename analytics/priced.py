"""An analysis priced under a rate table, kept beside the stored analysis it prices.

On a warm run, pricing every call of a large tree (exact decimals, tiers, time windows, the
log's own prices) is the largest step after start-up. On the 1 GB benchmark tree it takes
0.07-0.14 s of about 0.6 s. An unchanged analysis priced by an unchanged rate table and
model map gives the same tables. So they are kept in the result cache, under the analysis's
key, by a digest of the table and the map, and the next run loads only the table it shows.

Only a whole stored analysis (``Analysis.stored_as``) is kept this way. A window or a
restriction (``Analysis.only``) makes a new analysis that is priced afresh, since its
tables are not the stored ones.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from analytics.costs import price_analysis

if TYPE_CHECKING:
    from analytics.analysis import Analysis
    from analytics.rates import RateTable

#: The priced tables: calls with costs, and sessions with costs (``costs.price_analysis``).
PRICED = ("calls", "sessions")


def priced(
    result: Analysis,
    table: RateTable,
    model_map: Mapping[str, str],
    names: Sequence[str] = PRICED,
) -> dict[str, pl.DataFrame]:
    """The priced tables ``names`` of ``result`` under ``table`` and ``model_map``: loaded
    when kept, else computed (and, for a stored analysis, kept)."""
    digest = prices_digest(table, model_map)
    if result.stored_as is not None:
        cache, key = result.stored_as
        loaded = cache.load_priced(key, digest, names)
        if loaded is not None:
            return loaded
    calls, sessions = price_analysis(
        result.calls, result.sessions, table, model_map, result.log_prices
    )
    tables = {"calls": calls, "sessions": sessions}
    if result.stored_as is not None:
        cache.save_priced_later(key, digest, tables)
    return {name: tables[name] for name in names}


def prices_digest(table: RateTable, model_map: Mapping[str, str]) -> str:
    """A digest of everything besides the analysis that decides the priced tables: every
    price of ``table`` (its full ``repr``: periods, tiers, windows, sources) and the map."""
    text = repr(table) + json.dumps(sorted(model_map.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:32]
