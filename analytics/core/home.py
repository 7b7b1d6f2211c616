"""The first screen of bare ``agentcost``: what was spent today, this week, this month.

Pure: priced calls and sessions in, three small frames out (``report.home_text`` draws
them). Each figure carries the command that gives its detail, so the screen is a map of the
tool as well as an answer. Periods are in the user's timezone and come from
``periods.period_report`` (the same sums as ``agentcost daily``, exact decimals).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from zoneinfo import ZoneInfo

import polars as pl

from analytics.core.periods import period_report, period_start, sessions_without_calls
from analytics.core.pricing.call_costs import unpriced_reasons

#: How many of the costliest sessions the screen lists.
TOP_SESSIONS = 5


@dataclass(frozen=True)
class HomeScreen:
    """``periods``: label, since, command and the period totals (calls, cost_usd,
    unpriced_calls, billed_usd, billed_split_calls); ``sessions``: the costliest sessions;
    ``models``: calls and cost per model, most calls first; ``zone``: the days' timezone;
    ``agents``: calls, sessions and cost per agent; ``unpriced``: why calls have no cost;
    ``without_calls``: the sessions that made no LLM call, which ``agents`` does not count."""

    periods: pl.DataFrame
    sessions: pl.DataFrame
    models: pl.DataFrame
    zone: str
    #: calls, sessions and cost per agent, costliest first
    agents: pl.DataFrame
    #: the calls without a cost, by model and reason (``call_costs.unpriced_reasons``)
    unpriced: pl.DataFrame
    without_calls: int = 0


def home_screen(
    priced_calls: pl.DataFrame, priced_sessions: pl.DataFrame, zone: ZoneInfo, today: date
) -> HomeScreen:
    """The first screen's figures for ``today`` in ``zone`` (up to its end; all time: every call).

    ``priced_calls``/``priced_sessions`` are ``price.price_analysis`` output.
    """
    starts = [
        ("today", today, "agentcost daily"),
        ("this week", period_start("week", today), "agentcost weekly"),
        ("this month", period_start("month", today), "agentcost monthly"),
        ("all time", None, "agentcost analyze"),
    ]
    periods = pl.concat(
        period_report(
            priced_calls,
            priced_sessions,
            period="day",
            zone=zone,
            since=since,
            until=today if since else None,
        )
        .totals.drop("period")
        .select(
            pl.lit(label).alias("label"),
            pl.lit(since, dtype=pl.Date).alias("since"),
            pl.lit(command).alias("command"),
            pl.all(),
        )
        for label, since, command in starts
    )
    sessions = (
        priced_sessions.sort("cost_usd", descending=True, nulls_last=True)
        .head(TOP_SESSIONS)
        .select(
            "session_id",
            "start_time",
            "models",
            "llm_calls",
            "cost_usd",
            "unpriced_calls",
            "unpriced_models",
            "token_sources",
        )
    )
    models = (
        priced_calls.group_by("model")
        .agg(*_spend())
        .with_columns((pl.col("calls") / pl.col("calls").sum() * 100).alias("share_pct"))
        .sort(["calls", "model"], descending=[True, False], nulls_last=True)
    )
    agents = (
        priced_calls.group_by("agent")
        .agg(pl.col("session_id").n_unique().cast(pl.Int64).alias("sessions"), *_spend())
        .sort(["cost_usd", "agent"], descending=[True, False], nulls_last=True)
    )
    return HomeScreen(
        periods=periods,
        sessions=sessions,
        models=models,
        zone=str(zone),
        agents=agents,
        unpriced=unpriced_reasons(priced_calls),
        without_calls=sessions_without_calls(priced_sessions, zone),
    )


def _spend() -> list[pl.Expr]:
    """Calls, their exact cost (null when none is priced), the calls left unpriced and those
    whose tokens are estimated (the cost is then shown with ``~``)."""
    return [
        pl.len().cast(pl.Int64).alias("calls"),
        pl.when(pl.col("cost_usd").count() > 0).then(pl.col("cost_usd").sum()).alias("cost_usd"),
        pl.col("cost_usd").is_null().sum().cast(pl.Int64).alias("unpriced_calls"),
        (pl.col("token_source") == "estimated").sum().cast(pl.Int64).alias("estimated_calls"),
    ]
