"""The figures the live view of a session shows (``agentcost watch``): calls so far, the
context the last call re-sent, cost so far and of the last call, and the input tokens per
call, from what the session's follower has read, priced as everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

import polars as pl

from analytics.engine.following import AgentFollow

if TYPE_CHECKING:
    from analytics.core.pricing.rates import RateTable
    from analytics.engine.following import Following


@dataclass(frozen=True)
class Figures:
    """What the live view shows of one session (money as exact decimals; ``None`` unknown)."""

    session_id: str
    calls: int
    context_tokens: int | None  # input tokens of the last call: the context it re-sent
    cost_usd: Decimal | None  # the priced calls' sum
    unpriced_calls: int
    last_cost_usd: Decimal | None
    estimated: bool  # some tokens are estimates: the costs are too
    growth: list[int]  # input tokens per call, in order (unknown as 0)


def figures(priced_calls: pl.DataFrame) -> Figures | None:
    """The live view's figures from one log's priced calls (``price.price_calls``): of its
    session with the latest call (a file may hold several sessions); ``None`` before any."""
    if not priced_calls.height:
        return None
    latest = priced_calls.sort("start_time", nulls_last=False)["session_id"][-1]
    calls = priced_calls.filter(pl.col("session_id") == latest).sort("call_index")
    costs, known = calls["cost_usd"], calls["input_tokens"].drop_nulls()
    return Figures(
        session_id=str(latest),
        calls=calls.height,
        context_tokens=int(known[-1]) if known.len() else None,
        cost_usd=Decimal(costs.sum()) if costs.count() else None,
        unpriced_calls=costs.null_count(),
        last_cost_usd=costs[-1],
        estimated=bool((calls["token_source"] == "estimated").any()),
        growth=calls["input_tokens"].fill_null(0).to_list(),
    )


def priced_figures(
    follow: Following, table: RateTable, model_map: Mapping[str, str]
) -> Figures | None:
    """The figures of what ``follow`` has read so far, priced under ``table`` (the log's
    own prices included, as everywhere): the Copilot stages run on its events, another
    agent's fold gives its calls as they are."""
    from analytics.core.pricing.price import price_analysis
    from analytics.engine.group_analysis import analyse_parsed

    if isinstance(follow, AgentFollow):
        priced, _ = price_analysis(follow.calls, follow.sessions, table, model_map)
        return figures(priced)
    result = analyse_parsed(follow.parsed, follow.found)
    priced, _ = price_analysis(result.calls, result.sessions, table, model_map, result.log_prices)
    return figures(priced)
