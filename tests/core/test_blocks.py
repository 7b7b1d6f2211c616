"""5-hour usage blocks on literal calls: where blocks open and close, the active one, its
burn rate and projection, and the invariants (every call in exactly one block; sums kept)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.core.blocks import BLOCK, burn, usage_blocks
from analytics.core.schema import MONEY, TIMESTAMP

T0 = datetime(2026, 8, 3, 9, 40, tzinfo=UTC)


def calls(*minutes: int, tokens: int = 1_000, cost: str = "0.01") -> pl.DataFrame:
    """One call per offset (minutes after 09:40), each with the same tokens and cost."""
    return pl.DataFrame(
        {
            "session_id": ["s1"] * len(minutes),
            "model": ["claude-sonnet-4-5"] * len(minutes),
            "start_time": [T0 + timedelta(minutes=m) for m in minutes],
            "input_tokens": [tokens] * len(minutes),
            "cache_read_tokens": [tokens // 2] * len(minutes),
            "cache_write_tokens": [0] * len(minutes),
            "output_tokens": [100] * len(minutes),
            "cost_usd": [Decimal(cost)] * len(minutes),
            "token_source": ["observed"] * len(minutes),
        },
        schema_overrides={"start_time": TIMESTAMP, "cost_usd": MONEY},
    )


def starts(frame: pl.DataFrame) -> list[str]:
    return [t.strftime("%H:%M") for t in frame["block_start"]]


def test_a_block_opens_at_the_hour_of_its_first_call_and_lasts_five_hours() -> None:
    # 09:40 opens 09:00-14:00; 13:59 is inside; 14:05 opens the next at 14:00
    blocks = usage_blocks(calls(0, 259, 265), now=T0 + timedelta(days=2))
    assert starts(blocks) == ["09:00", "14:00"]
    assert blocks["calls"].to_list() == [2, 1]
    assert blocks["block_end"][0] == datetime(2026, 8, 3, 14, 0, tzinfo=UTC)


def test_the_hours_between_two_blocks_are_no_block() -> None:
    # 09:40, 09:50, then 16:00: past the first block's end, so a new block at 16:00 (the
    # hours between are a gap, not a block)
    blocks = usage_blocks(calls(0, 10, 380), now=T0 + timedelta(days=2))
    assert starts(blocks) == ["09:00", "16:00"]


def test_the_active_block_and_its_burn_rate() -> None:
    now = T0 + timedelta(minutes=80)  # 11:00: one hour after the first call, 2 h into the block
    blocks = usage_blocks(calls(0, 20, 60), now=now)
    assert blocks["active"].to_list() == [True]
    row = blocks.row(0, named=True)
    assert row["total_tokens"] == 3 * 1_100
    assert row["cost_usd"] == Decimal("0.03")
    pace = burn(row, now)
    assert pace.minutes_elapsed == 120 and pace.minutes_left == 180
    assert pace.tokens_per_minute == 3_300 / 120
    assert pace.usd_per_hour == Decimal("0.03") / Decimal("120.0") * 60
    assert pace.projected_total_tokens == 3_300 + round(3_300 / 120 * 180)
    assert pace.projected_cost_usd == Decimal("0.03") + Decimal("0.03") / Decimal("120.0") * 180


def test_a_block_whose_last_call_is_five_hours_old_is_not_active() -> None:
    blocks = usage_blocks(calls(0), now=T0 + BLOCK + timedelta(minutes=1))
    assert blocks["active"].to_list() == [False]


def test_no_calls_no_blocks() -> None:
    assert usage_blocks(calls(), now=T0).height == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=60 * 24 * 20), min_size=1, max_size=60))
def test_every_call_falls_in_exactly_one_block_of_at_most_five_hours(minutes: list[int]) -> None:
    frame = calls(*sorted(minutes))
    blocks = usage_blocks(frame, now=T0 + timedelta(days=60))
    assert blocks["calls"].sum() == frame.height
    assert blocks["total_tokens"].sum() == frame.height * 1_100
    assert blocks["cost_usd"].sum() == Decimal("0.01") * frame.height
    assert ((blocks["last_call"] - blocks["block_start"]) < BLOCK).all()
    # blocks never overlap, and each opens on an hour
    assert (blocks["block_start"].shift(-1) >= blocks["block_end"]).drop_nulls().all()
    assert all(t.minute == 0 and t.second == 0 for t in blocks["block_start"])
