"""PRICED calls -> totals per day, week or month in the user's timezone (``agentcost daily``).

Built on per-call rows, never on session rows, so a session that spans midnight is split
where its calls fall, and the totals of all periods equal the totals of all sessions exactly
(decimal sums, no rounding). A call counts on the local day it started, even if it ended the
next day. Weeks are ISO weeks (Monday first, named ``2026-W32``), months ``2026-08``.

Money follows the data rules: ``cost_usd`` sums the priced calls and is null when none is
priced, ``unpriced_calls`` says how many were left out. ``billed_usd`` is the log's own bill
(``totalNanoAiu``): per call where a per-call record states it; otherwise the part of the
session's bill no call states is split over those calls in proportion to their tokens
(integer nano-AIU, largest remainder, so the session's bill is kept exactly) and
``billed_split_calls`` counts them, since that split is an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

import polars as pl

from analytics.core.apportion import apportion
from analytics.core.errors import UsageError
from analytics.core.pricing.call_costs import nano_aiu_usd
from analytics.core.schema import MONEY

Period = Literal["day", "week", "month"]
Breakdown = Literal["agent", "model", "project", "session"]

#: Token columns summed per period, in display order.
TOKEN_COLUMNS = ["input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"]

_LABEL = {"day": "%Y-%m-%d", "week": "%G-W%V", "month": "%Y-%m"}
_TRUNCATE = {"day": "1d", "week": "1w", "month": "1mo"}
_KEY = {"agent": "agent", "model": "model", "project": "project", "session": "session_id"}


@dataclass(frozen=True)
class PeriodReport:
    """One row per period (and breakdown key), and the one-row total over all of them."""

    rows: pl.DataFrame
    totals: pl.DataFrame
    zone: str


def day_window(
    since: str | None, until: str | None, names: tuple[str, str] = ("--since", "--until")
) -> tuple[date | None, date | None]:
    """``since`` and ``until`` (``YYYY-MM-DD`` or None) as days; errors call them by
    ``names`` (the CLI's options, or an MCP tool's arguments). A window that ends before it
    starts is a usage error, not an empty report."""
    start, end = _day(since, names[0]), _day(until, names[1])
    if start and end and end < start:
        raise UsageError(
            f"{names[1]} {end} is before {names[0]} {start}; the window would hold no day "
            "(swap them?)"
        )
    return start, end


def _day(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{name} {value!r} is not a date; use YYYY-MM-DD") from None


def period_start(period: Period, today: date) -> date:
    """The first day of the ``period`` holding ``today``: itself, its ISO week's Monday, or
    the first of its month."""
    if period == "week":
        return today - timedelta(days=today.weekday())
    return today.replace(day=1) if period == "month" else today


def known_sum(column: str, where: pl.Expr | None = None) -> pl.Expr:
    """Sum of the known values (optionally of the rows ``where`` holds): null when there are
    rows but none is known, because an unknown amount is not zero; zero over no rows."""
    values = pl.col(column) if where is None else pl.col(column).filter(where)
    return pl.when(values.is_not_null().any() | (values.len() == 0)).then(values.sum())


def period_report(
    priced_calls: pl.DataFrame,
    sessions: pl.DataFrame,
    *,
    period: Period,
    zone: ZoneInfo,
    by: Breakdown | None = None,
    since: date | None = None,
    until: date | None = None,
) -> PeriodReport:
    """Totals per ``period`` of ``zone`` (and per ``by``), over calls starting ``since``..``until``.

    ``priced_calls`` are ``price.price_analysis`` calls; ``sessions`` needs ``session_id``,
    ``repository``, ``cwd``, and ``billed_nano_aiu`` for the log's own bill (the sessions as
    ``Analysis.session_view`` gives them). A call without a start time has no
    period (null) and is kept unless a window is given.
    """
    name = str(zone)
    local = pl.col("start_time").dt.convert_time_zone(name).dt.date()
    calls = with_call_bills(priced_calls, sessions).with_columns(
        local.dt.truncate(_TRUNCATE[period]).alias("period_start"),
        local.dt.strftime(_LABEL[period]).alias("period"),
        local.alias("_day"),
    )
    if since is not None:
        calls = calls.filter(pl.col("_day") >= since)
    if until is not None:
        calls = calls.filter(pl.col("_day") <= until)
    keys = ["period", "period_start"] + ([_KEY[by]] if by else [])
    rows = (
        calls.group_by(keys)
        .agg(_aggregates())
        .sort(keys, nulls_last=True)
        .select(pl.lit(name).alias("timezone"), *keys, *_OUTPUT)
    )
    totals = calls.select(
        pl.lit(name).alias("timezone"), pl.lit("total").alias("period"), *_aggregates()
    )
    return PeriodReport(rows=rows, totals=totals, zone=name)


def sessions_without_calls(
    sessions: pl.DataFrame, zone: ZoneInfo, since: date | None = None, until: date | None = None
) -> int:
    """How many ``sessions`` made no LLM call, of those starting ``since``..``until`` (local
    days of ``zone``): a period report, built on calls, counts none of them, while
    ``agentcost analyze`` lists every session."""
    day = pl.col("start_time").dt.convert_time_zone(str(zone)).dt.date()
    idle = pl.col("llm_calls").fill_null(0) == 0
    if since is not None:
        idle &= day >= since
    if until is not None:
        idle &= day <= until
    return int(sessions.select(idle.fill_null(False).sum()).item())


_OUTPUT = [
    "sessions",
    "calls",
    *TOKEN_COLUMNS,
    "unknown_token_calls",
    "estimated_calls",
    "cost_usd",
    "unpriced_calls",
    "billed_usd",
    "billed_split_calls",
]


def _aggregates() -> list[pl.Expr]:
    """Per group: sessions, calls, token sums, exact money sums, what they leave out, and
    how many calls' tokens are estimated (their sums and cost are shown with ``~``)."""
    return [
        pl.col("session_id").n_unique().cast(pl.Int64).alias("sessions"),
        pl.len().cast(pl.Int64).alias("calls"),
        *(known_sum(c).alias(c) for c in TOKEN_COLUMNS),
        pl.col("input_tokens").is_null().sum().cast(pl.Int64).alias("unknown_token_calls"),
        (pl.col("token_source") == "estimated").sum().cast(pl.Int64).alias("estimated_calls"),
        known_sum("cost_usd").cast(MONEY).alias("cost_usd"),
        pl.col("cost_usd").is_null().sum().cast(pl.Int64).alias("unpriced_calls"),
        known_sum("_billed_usd").cast(MONEY).alias("billed_usd"),
        pl.col("_billed_split").sum().cast(pl.Int64).alias("billed_split_calls"),
    ]


def with_call_bills(priced_calls: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """Add ``_billed_usd`` (each call's share of the log's bill) and ``_billed_split``.

    A call's own ``billed_nano_aiu`` is used as it is. What the session's bill leaves after
    those is split over the calls without one, by tokens (input + output), exactly. Both
    bills are an agent's own columns (``Analysis.call_view``, ``Analysis.session_view``):
    where a frame lacks one, it states none.
    """
    nano = pl.col("billed_nano_aiu").cast(pl.Decimal(38, 0)).cast(pl.Int64)

    def stated_in(frame: pl.DataFrame) -> pl.Expr:
        return nano if "billed_nano_aiu" in frame.columns else pl.lit(None, pl.Int64)

    session_nano = stated_in(sessions)
    session_bill = sessions.select(
        "session_id",
        session_nano.alias("_session_nano"),
        pl.coalesce("repository", "cwd").alias("project"),
    )
    stated = pl.col("_nano").is_not_null()
    left = (pl.col("_session_nano") - pl.col("_nano").sum().over("session_id")).clip(lower_bound=0)
    weight = pl.col("input_tokens").fill_null(0) + pl.col("output_tokens").fill_null(0)
    share = apportion(left.fill_null(0), weight, ["session_id", "_stated"], "event_seq")
    split = ~stated & pl.col("_session_nano").is_not_null()
    return (
        priced_calls.drop("project", strict=False)
        .join(session_bill, on="session_id", how="left")
        .with_columns(stated_in(priced_calls).alias("_nano"))
        .with_columns(stated.alias("_stated"))
        .with_columns(
            pl.when(stated)
            .then(pl.col("_nano"))
            .when(split)
            .then(share)
            .cast(pl.String)
            .alias("_call_nano"),
            split.alias("_billed_split"),
        )
        .with_columns(nano_aiu_usd(pl.col("_call_nano")).alias("_billed_usd"))
        .drop("_nano", "_stated", "_session_nano", "_call_nano")
    )
