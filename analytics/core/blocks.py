"""PRICED calls -> 5-hour usage blocks (``agentcost blocks``), as Claude's plans meter them.

Claude's subscription limits reset in 5-hour windows that open with the first request after
the last window closed. Users of ccusage know the windows as blocks, laid out this way (its
documented rule, followed here so that the two tools' blocks line up):

- a block opens at the hour (UTC) of its first call and lasts ``BLOCK`` (5 hours);
- a call at or after the block's end opens the next block (a pause longer than ``BLOCK``
  always does); the time between two blocks with no call is a gap, not a block;
- the active block is the one whose end is still ahead and whose last call is less than
  ``BLOCK`` ago.

Per block: calls, tokens by kind (``total_tokens`` = input, cache reads and writes included,
plus output), exact cost, models. The active block also gets its burn rate (tokens per
minute and dollars per hour over the span from its first call to now) and a projection to
its end at that rate. Cost is exact (decimal); rates and projections are estimates and say
so in their names (``projected_*``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

import polars as pl

from analytics.core.errors import UsageError
from analytics.core.schema import MONEY, TIMESTAMP

#: A block's length.
BLOCK = timedelta(hours=5)
#: The columns of a blocks table, in order.
COLUMNS = [
    "block_start",
    "block_end",
    "last_call",
    "active",
    "calls",
    "sessions",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "total_tokens",
    "cost_usd",
    "unpriced_calls",
    "estimated_calls",
    "models",
]


@dataclass(frozen=True)
class Burn:
    """The active block's pace and where it leads by the block's end."""

    minutes_elapsed: float
    minutes_left: float
    tokens_per_minute: float
    usd_per_hour: Decimal
    projected_total_tokens: int
    projected_cost_usd: Decimal


def usage_blocks(priced_calls: pl.DataFrame, now: datetime) -> pl.DataFrame:
    """One row per 5-hour block of ``priced_calls`` (``price.price_calls`` output), oldest
    first; ``active`` marks the block ``now`` falls in (see the module docstring)."""
    calls = priced_calls.filter(pl.col("start_time").is_not_null()).sort("start_time")
    if not calls.height:
        return pl.DataFrame(schema=_schema())
    times = calls["start_time"]
    starts = _block_starts(times)
    blocks = (
        calls.with_columns(pl.Series("block_start", starts, dtype=TIMESTAMP))
        .group_by("block_start", maintain_order=True)
        .agg(
            pl.col("start_time").max().alias("last_call"),
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("session_id").n_unique().cast(pl.Int64).alias("sessions"),
            *(
                pl.col(c).sum().cast(pl.Int64).alias(c)
                for c in ("input_tokens", "cache_read_tokens", "cache_write_tokens")
            ),
            pl.col("output_tokens").sum().cast(pl.Int64).alias("output_tokens"),
            # an unknown amount is not 0: null when no call of the block is priced
            pl.when(pl.col("cost_usd").is_not_null().any())
            .then(pl.col("cost_usd").sum())
            .cast(MONEY)
            .alias("cost_usd"),
            pl.col("cost_usd").is_null().sum().cast(pl.Int64).alias("unpriced_calls"),
            # calls whose tokens are estimated: the block's sums are then shown with ~
            (pl.col("token_source") == "estimated").sum().cast(pl.Int64).alias("estimated_calls"),
            pl.col("model").drop_nulls().unique().sort().alias("models"),
        )
        .with_columns(
            (pl.col("block_start") + BLOCK).alias("block_end"),
            (pl.col("input_tokens") + pl.col("output_tokens")).alias("total_tokens"),
        )
    )
    moment = pl.lit(now).cast(TIMESTAMP)
    active = (pl.col("block_end") > moment) & (moment - pl.col("last_call") < BLOCK)
    return blocks.with_columns(active.alias("active")).select(COLUMNS)


def burn(block: dict[str, object], now: datetime) -> Burn:
    """The pace of a block (a row of ``usage_blocks``) from its start to ``now``, and the
    totals it reaches by its end if that pace holds."""
    start, end = block["block_start"], block["block_end"]
    assert isinstance(start, datetime) and isinstance(end, datetime)
    elapsed = max((now - start).total_seconds() / 60, 1.0)
    left = max((end - now).total_seconds() / 60, 0.0)
    tokens = int(str(block["total_tokens"] or 0))
    cost = Decimal(str(block["cost_usd"] or 0))
    per_minute = tokens / elapsed
    usd_per_minute = cost / Decimal(repr(elapsed))
    return Burn(
        minutes_elapsed=elapsed,
        minutes_left=left,
        tokens_per_minute=per_minute,
        usd_per_hour=usd_per_minute * 60,
        projected_total_tokens=tokens + round(per_minute * left),
        projected_cost_usd=cost + usd_per_minute * Decimal(repr(left)),
    )


def blocks_in_days(
    blocks: pl.DataFrame, since: date | None, until: date | None, zone: str
) -> pl.DataFrame:
    """The blocks of ``usage_blocks`` that start on ``since``..``until`` (inclusive; an
    open end when None), days in ``zone``. The blocks are made from every call first, so a
    window shows the same blocks as the whole history does, only fewer of them."""
    day = pl.col("block_start").dt.convert_time_zone(zone).dt.date()
    kept = pl.lit(value=True)
    if since is not None:
        kept &= day >= since
    if until is not None:
        kept &= day <= until
    return blocks.filter(kept)


@dataclass(frozen=True)
class BlocksView:
    """What ``agentcost blocks`` shows: ``every`` block of the calls, the blocks ``shown``
    (those starting on the days asked; only the active one when asked), the active block's
    ``pace`` (None with none active) and the token ``limit`` (None without one)."""

    every: pl.DataFrame
    shown: pl.DataFrame
    pace: Burn | None
    limit: int | None


def blocks_view(
    priced_calls: pl.DataFrame,
    now: datetime,
    zone: str,
    since: date | None = None,
    until: date | None = None,
    *,
    token_limit: str | None = None,
    active_only: bool = False,
    limit_name: str = "--token-limit",
) -> BlocksView:
    """The blocks of ``priced_calls`` at ``now`` (``usage_blocks``), those starting on
    ``since``..``until`` in ``zone`` (``blocks_in_days``), the active block's pace, and
    ``token_limit`` read by ``parse_token_limit`` (errors call it ``limit_name``)."""
    every = usage_blocks(priced_calls, now)
    limit = parse_token_limit(token_limit, every, limit_name)
    shown = blocks_in_days(every, since, until, zone)
    if active_only:
        shown = active_block(shown)
    live = active_block(shown)
    pace = burn(live.row(0, named=True), now) if live.height else None
    return BlocksView(every, shown, pace, limit)


def parse_token_limit(value: str | None, blocks: pl.DataFrame, name: str) -> int | None:
    """A token limit given as text (``--token-limit``, called ``name`` in errors): a number
    of tokens, or ``max``: the most a finished block of ``blocks`` used."""
    if value is None:
        return None
    if value == "max":
        return most_tokens(blocks)
    if not value.isdigit() or int(value) == 0:
        raise UsageError(f"{name} {value!r}: expected a number of tokens or max")
    return int(value)


def active_block(blocks: pl.DataFrame) -> pl.DataFrame:
    """The active block of ``usage_blocks`` (no row when none is active)."""
    return blocks.filter(pl.col("active"))


def most_tokens(blocks: pl.DataFrame) -> int | None:
    """The most tokens a finished block used (``--token-limit max``); None with none."""
    done = blocks.filter(~pl.col("active"))["total_tokens"]
    return int(done.max()) if done.len() else None  # type: ignore[arg-type]


def pace_row(pace: Burn | None, limit: int | None) -> pl.DataFrame:
    """The active block's pace and the token limit as one row (none without an active
    block), for JSON."""
    rows = [{**dataclasses.asdict(pace), "token_limit": limit}] if pace else []
    money = {"usd_per_hour": MONEY, "projected_cost_usd": MONEY}
    return pl.DataFrame(rows, schema_overrides={**money, "token_limit": pl.Int64})


def _block_starts(times: pl.Series) -> list[datetime]:
    """Each call's block start (``times`` sorted). A loop over blocks, not calls: each block
    takes at once every call before its end. (A pause longer than a block always reaches
    past the block's end, so it needs no rule of its own.)"""
    values = times.to_list()
    starts: list[datetime] = []
    index = 0
    while index < len(values):
        start = values[index].replace(minute=0, second=0, microsecond=0)
        stop = int(times.search_sorted(start + BLOCK, side="left"))
        starts.extend([start] * (stop - index))
        index = stop
    return starts


def _schema() -> dict[str, pl.DataType]:
    return {
        "block_start": TIMESTAMP,
        "block_end": TIMESTAMP,
        "last_call": TIMESTAMP,
        "active": pl.Boolean(),
        "calls": pl.Int64(),
        "sessions": pl.Int64(),
        "input_tokens": pl.Int64(),
        "cache_read_tokens": pl.Int64(),
        "cache_write_tokens": pl.Int64(),
        "output_tokens": pl.Int64(),
        "total_tokens": pl.Int64(),
        "cost_usd": MONEY,
        "unpriced_calls": pl.Int64(),
        "estimated_calls": pl.Int64(),
        "models": pl.List(pl.String()),
    }
