"""Pricing: exact costs on literal frames, invariants as properties, real Copilot bills."""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.core.pricing.call_costs import (
    UNPRICED_HINT,
    nano_aiu_to_usd,
    nano_aiu_usd,
    price_by_table,
    price_totals,
    unpriced_models,
)
from analytics.core.pricing.rates import PriceSet, RateTable, load_rate_table, parse_rate_table
from analytics.core.schema import COSTS, MONEY, TIMESTAMP

CALL_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String(),
    "input_tokens": pl.Int64(),
    "cache_read_tokens": pl.Int64(),
    "cache_write_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
    "start_time": TIMESTAMP,
    "user_initiated": pl.Boolean(),
}

TEST_TABLE = parse_rate_table(
    """
unit = "usd_per_million_tokens"
currency = "USD"
source = "test"
checked = "2026-11-29"

[models."flat"]
patterns = ["flat-*"]
[[models."flat".prices]]
input = "0.015"
cache_read = "0.5"
cache_write_5m = "6.25"
cache_write_1h = "10"
output = "25"

[models."tiered"]
[[models."tiered".prices]]
input = "2"
cache_read = "0.2"
cache_write_5m = "2"
output = "12"
[[models."tiered".prices.tiers]]
above_prompt_tokens = 200000
input = "4"
cache_read = "0.4"
cache_write_5m = "4"
output = "18"

[models."thinker"]
[[models."thinker".prices]]
input = "1"
output = "10"
reasoning = "20"
cache_read = "0.1"
cache_write_5m = "1"

[models."dated"]
[[models."dated".prices]]
effective_until = "2026-06-01"
input = "1"
output = "1"
cache_read = "1"
cache_write_5m = "1"
[[models."dated".prices]]
effective_from = "2026-06-01"
input = "2"
output = "2"
cache_read = "2"
cache_write_5m = "2"

[models."nightly"]
[[models."nightly".prices]]
input = "1"
output = "1"
cache_read = "1"
cache_write_5m = "1"
[[models."nightly".prices.windows]]
name = "night"
timezone = "Asia/Shanghai"
hours = ["22:00-06:00"]
days = ["mon", "tue", "wed", "thu", "fri"]
input = "0.5"
output = "0.5"
cache_read = "0.5"
cache_write_5m = "0.5"

[models."premium"]
[[models."premium".prices]]
input = "0"
output = "0"
cache_read = "0"
cache_write_5m = "0"
per_request = "0.04"
multiplier = "0.33"

[models."no-cache-price"]
[[models."no-cache-price".prices]]
input = "1"
output = "1"
""",
    name="test",
)


def call(model: str = "flat", **values: Any) -> dict[str, Any]:
    """One call row, zero tokens unless given."""
    row: dict[str, Any] = {
        "model": model,
        "input_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "output_tokens": 0,
        "reasoning_tokens": 0,
        "start_time": datetime(2026, 8, 3, 12, 0, tzinfo=UTC),
        "user_initiated": False,
    }
    return row | values


def priced(*rows: dict[str, Any], table: RateTable = TEST_TABLE, **options: Any) -> pl.DataFrame:
    """Price literal rows."""
    return price_by_table(pl.DataFrame(list(rows), schema=CALL_SCHEMA), table, **options)


def one(row: dict[str, Any], column: str = "cost_usd", **options: Any) -> Decimal | None:
    """One cost of one priced row."""
    value = priced(row, **options).get_column(column).item()
    assert value is None or isinstance(value, Decimal)
    return value


def test_worked_example_ten_calls_with_growing_context() -> None:
    rows = [call(input_tokens=2_000 + 1_500 * i, output_tokens=300) for i in range(10)]
    out = priced(*rows)
    assert out["input_tokens"].sum() == 87_500
    assert out["output_tokens"].sum() == 3_000
    assert out["input_cost_usd"].sum() == Decimal("0.0013125")
    assert out["output_cost_usd"].sum() == Decimal("0.075")


def test_output_has_costs_contract_appended() -> None:
    out = priced(call())
    assert list(out.columns) == [*CALL_SCHEMA, *COSTS, "unpriced_reason"]  # null: priced
    assert {name: out.schema[name] for name in COSTS} == COSTS
    assert out["rates"].item() == "test"


@pytest.mark.parametrize(
    ("row", "column", "expected"),
    [
        (call(input_tokens=1_000_000), "input_cost_usd", "0.015"),
        (call(input_tokens=10, cache_read_tokens=4, cache_write_tokens=6), "input_cost_usd", "0"),
        (call(input_tokens=10, cache_read_tokens=4), "cache_read_cost_usd", "0.000002"),
        (call(input_tokens=8, cache_write_tokens=8), "cache_write_cost_usd", "0.00005"),
        (call("flat-2026", output_tokens=1), "output_cost_usd", "0.000025"),
        # reasoning is part of output, billed once at the output price ...
        (call(output_tokens=100, reasoning_tokens=60), "output_cost_usd", "0.0025"),
        # ... unless the table prices it apart
        (call("thinker", output_tokens=100, reasoning_tokens=60), "output_cost_usd", "0.0016"),
        # long-context cliff: the whole request at the tier chosen by its prompt size
        (call("tiered", input_tokens=200_000, output_tokens=10), "cost_usd", "0.40012"),
        (call("tiered", input_tokens=200_001, output_tokens=10), "cost_usd", "0.800184"),
        # effective dates
        (
            call("dated", input_tokens=10**6, start_time=datetime(2026, 5, 31, 23, 59, tzinfo=UTC)),
            "cost_usd",
            "1",
        ),
        (
            call("dated", input_tokens=10**6, start_time=datetime(2026, 6, 1, tzinfo=UTC)),
            "cost_usd",
            "2",
        ),
        (call("dated", input_tokens=10**6, start_time=None), "cost_usd", "2"),
        # 23:00 in Shanghai on a Monday (15:00 UTC): night window
        (
            call("nightly", input_tokens=10**6, start_time=datetime(2026, 8, 3, 15, tzinfo=UTC)),
            "cost_usd",
            "0.5",
        ),
        # 05:00 Tuesday in Shanghai is still inside the window that wraps midnight
        (
            call("nightly", input_tokens=10**6, start_time=datetime(2026, 8, 3, 21, tzinfo=UTC)),
            "cost_usd",
            "0.5",
        ),
        # 23:00 on a Saturday in Shanghai: not a window day
        (
            call("nightly", input_tokens=10**6, start_time=datetime(2026, 8, 8, 15, tzinfo=UTC)),
            "cost_usd",
            "1",
        ),
        (
            call("nightly", input_tokens=10**6, start_time=datetime(2026, 8, 3, 4, tzinfo=UTC)),
            "cost_usd",
            "1",
        ),
        # per-request charges on user prompts only
        (call("premium", input_tokens=500, user_initiated=True), "request_cost_usd", "0.0132"),
        (call("premium", input_tokens=500, user_initiated=False), "request_cost_usd", "0"),
        (call("premium", user_initiated=None), "request_cost_usd", None),
        (call(user_initiated=None), "request_cost_usd", "0"),
        # unknown is null, never zero
        (call("who-knows", input_tokens=5), "cost_usd", None),
        (call(input_tokens=None), "input_cost_usd", None),
        (call(input_tokens=None), "cost_usd", None),
        (call(output_tokens=None), "output_cost_usd", None),
        (call(output_tokens=None, input_tokens=7), "input_cost_usd", "0.000000105"),
        (call("thinker", output_tokens=5, reasoning_tokens=None), "output_cost_usd", None),
        (call("no-cache-price", input_tokens=9, cache_read_tokens=4), "cost_usd", None),
        (call("no-cache-price", input_tokens=9, output_tokens=1), "cost_usd", "0.00001"),
    ],
)
def test_costs(row: dict[str, Any], column: str, expected: str | None) -> None:
    assert one(row, column) == (None if expected is None else Decimal(expected))


def test_unpriced_rows_have_null_priced_model_and_are_listed() -> None:
    out = priced(call("mystery"), call("mystery"), call("flat"))
    assert out["priced_model"].to_list() == [None, None, "flat"]
    listed = unpriced_models(out)
    assert listed.to_dicts() == [{"model": "mystery", "calls": 2, "hint": UNPRICED_HINT}]


def test_model_map_renames_before_lookup() -> None:
    row = call("auto", input_tokens=1_000_000)
    assert one(row, model_map={"auto": "flat"}) == Decimal("0.015")
    assert priced(row, model_map={"auto": "flat"})["model"].item() == "auto"


def test_cache_write_ttl_selects_the_one_hour_price() -> None:
    row = call(input_tokens=10**6, cache_write_tokens=10**6)
    assert one(row, "cache_write_cost_usd", cache_write_ttl="1h") == Decimal(10)


def test_input_frame_is_not_mutated_and_repricing_replaces_costs() -> None:
    frame = pl.DataFrame([call(input_tokens=3)], schema=CALL_SCHEMA)
    once = price_by_table(frame, TEST_TABLE)
    twice = price_by_table(once, TEST_TABLE)
    assert frame.columns == list(CALL_SCHEMA)
    assert twice.equals(once)


def test_price_totals_leaves_tiered_models_unpriced() -> None:
    totals = pl.DataFrame(
        [
            {k: v for k, v in call(m, input_tokens=10).items() if k != "start_time"}
            for m in ("flat", "tiered")
        ],
    ).drop("user_initiated")
    out = price_totals(totals, TEST_TABLE)
    assert out["cost_usd"].to_list() == [Decimal("0.00000015"), None]


@pytest.mark.parametrize(
    ("nano", "usd"),
    [("21255950000", "0.2125595"), (637965000, "0.00637965"), ("1", "0.00000000001")],
)
def test_nano_aiu_to_usd_is_exact(nano: str | int, usd: str) -> None:
    assert nano_aiu_to_usd(nano) == Decimal(usd)


def test_nano_aiu_to_usd_refuses_floats() -> None:
    with pytest.raises(TypeError):
        nano_aiu_to_usd(1.5)  # type: ignore[arg-type]


def test_nano_aiu_usd_expression_is_exact() -> None:
    frame = pl.DataFrame({"n": ["305426000.0", "18913170000", "999999999999999999", None]})
    out = frame.select(nano_aiu_usd(pl.col("n")))["n"].to_list()
    assert out == [
        Decimal("0.00305426"),
        Decimal("0.1891317"),
        Decimal("9999999.99999999999"),
        None,
    ]


def test_polars_decimal_arithmetic_is_exact_for_integer_times_price() -> None:
    price = pl.lit(Decimal("0.000000123456789012345678"[:20]), dtype=MONEY)
    out = pl.DataFrame({"t": [987_654_321_987]}).select(pl.col("t") * price)["t"].item()
    assert out == Decimal(987_654_321_987) * Decimal("0.000000123456789012")


# -------------------------------------------------------------------------------- properties

counts = st.integers(min_value=0, max_value=10**9)
token_rows = st.builds(
    lambda uncached, read, write, out, reasoning, user, model: call(
        model,
        input_tokens=uncached + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=out + reasoning,
        reasoning_tokens=reasoning,
        user_initiated=user,
    ),
    counts,
    counts,
    counts,
    counts,
    counts,
    st.booleans(),
    st.sampled_from(["flat", "tiered", "thinker", "premium"]),
)


def total(rows: list[dict[str, Any]], table: RateTable = TEST_TABLE) -> Decimal:
    """The exact sum of ``cost_usd`` over ``rows``."""
    if not rows:
        return Decimal(0)
    return sum(priced(*rows, table=table)["cost_usd"].to_list(), Decimal(0))


@given(st.lists(token_rows, max_size=8), st.data())
def test_cost_is_additive_over_any_partition(
    rows: list[dict[str, Any]], data: st.DataObject
) -> None:
    groups = data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows)))
    parts = [[r for r, g in zip(rows, groups, strict=True) if g == k] for k in range(3)]
    assert sum((total(p) for p in parts), Decimal(0)) == total(rows)


@pytest.mark.parametrize("model", ["flat", "tiered", "thinker", "dated", "nightly"])
def test_zero_tokens_cost_zero(model: str) -> None:
    assert one(call(model)) == 0


@given(token_rows, st.sampled_from(["uncached", "cache_read", "cache_write", "output"]), counts)
def test_cost_is_monotone_in_each_token_count(row: dict[str, Any], kind: str, extra: int) -> None:
    bigger = dict(row)
    if kind != "uncached":
        bigger[f"{kind}_tokens"] += extra
    if kind != "output":
        bigger["input_tokens"] += extra
    before, after = one(row), one(bigger)
    assert before is not None and after is not None
    assert after >= before  # crossing a long-context tier only raises it further


def scaled(table: RateTable, factor: Decimal) -> RateTable:
    """``table`` with every price multiplied by ``factor``."""
    return dataclasses.replace(
        table,
        models=tuple(
            dataclasses.replace(m, periods=tuple(p.scaled(factor) for p in m.periods))
            for m in table.models
        ),
    )


@given(st.lists(token_rows, min_size=1, max_size=5))
def test_doubling_all_prices_doubles_cost_exactly(rows: list[dict[str, Any]]) -> None:
    assert total(rows, scaled(TEST_TABLE, Decimal(2))) == 2 * total(rows)


@given(token_rows, st.sampled_from(["input", "cache_read", "cache_write_5m", "output"]))
def test_cost_is_monotone_in_each_price(row: dict[str, Any], key: str) -> None:
    base = load_rate_table("github-copilot")
    model = base.models[0]
    period = model.periods[0]
    raised_prices = dataclasses.replace(period.prices, **{key: getattr(period.prices, key) + 1})
    raised = dataclasses.replace(
        base,
        models=(
            dataclasses.replace(
                model, periods=(dataclasses.replace(period, prices=raised_prices),)
            ),
        ),
    )
    row = row | {"model": model.id}
    assert total([row], raised) >= total([row], base)


@given(counts, counts, counts, counts)
def test_tier_depends_only_on_prompt_size(read: int, write: int, out: int, uncached: int) -> None:
    row = call(
        "tiered",
        input_tokens=uncached + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=out,
    )
    tiered = TEST_TABLE.resolve("tiered")
    assert tiered is not None
    period = tiered.periods[0]
    chosen: PriceSet = period.tiers[0].prices if row["input_tokens"] > 200_000 else period.prices
    flat = dataclasses.replace(
        TEST_TABLE,
        models=(
            dataclasses.replace(
                tiered, periods=(dataclasses.replace(period, prices=chosen, tiers=()),)
            ),
        ),
    )
    assert one(row) == total([row], flat)


# ------------------------------------------------------------------------- real Copilot bills


def shutdown_metrics(path: Path) -> dict[str, Any]:
    """``data`` of the last ``session.shutdown`` line of an events.jsonl."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return next(e["data"] for e in reversed(lines) if e["type"] == "session.shutdown")


def metrics_frame(data: dict[str, Any]) -> pl.DataFrame:
    """The shutdown's per-model usage as a MODEL_METRICS-like frame."""
    return pl.DataFrame(
        [
            {
                "model": model,
                "input_tokens": m["usage"]["inputTokens"],
                "cache_read_tokens": m["usage"]["cacheReadTokens"],
                "cache_write_tokens": m["usage"]["cacheWriteTokens"],
                "output_tokens": m["usage"]["outputTokens"],
                "reasoning_tokens": m["usage"]["reasoningTokens"],
                "total_nano_aiu": str(m["totalNanoAiu"]),
            }
            for model, m in data["modelMetrics"].items()
        ]
    )


@pytest.mark.parametrize(
    ("session", "expected"),
    [
        (
            "qiaolei81-session-demo",
            {"claude-opus-4.7-1m-internal": "0.2125595", "claude-haiku-4.5": "0.00637965"},
        ),
        ("qiaolei81-session-medium", {"claude-sonnet-4.6": "0.10406985"}),
    ],
)
def test_github_copilot_reproduces_shutdown_bills(
    real_logs: Path, session: str, expected: dict[str, str]
) -> None:
    data = shutdown_metrics(real_logs / session / "events.jsonl")
    out = price_totals(metrics_frame(data), load_rate_table("github-copilot"))
    costs = dict(zip(out["model"], out["cost_usd"], strict=True))
    assert costs == {m: Decimal(v) for m, v in expected.items()}
    for model, cost in costs.items():
        assert cost == nano_aiu_to_usd(data["modelMetrics"][model]["totalNanoAiu"])
    assert sum(costs.values(), Decimal(0)) == nano_aiu_to_usd(data["totalNanoAiu"])


def test_unknown_copilot_model_is_unpriced_and_billed_figure_remains(real_logs: Path) -> None:
    data = shutdown_metrics(real_logs / "session-bench-copilot-2026-10-04-01-excerpt/events.jsonl")
    out = price_totals(metrics_frame(data), load_rate_table("github-copilot"))
    assert out["cost_usd"].to_list() == [None]
    assert unpriced_models(out)["model"].to_list() == ["gpt-6-luna"]
    billed = out.select(nano_aiu_usd(pl.col("total_nano_aiu")))["total_nano_aiu"].item()
    assert billed == Decimal("0.00305426")


def usage_rows(path: Path) -> pl.DataFrame:
    """The 45 ``assistant_usage_events`` rows of usage.sql, loaded through in-memory sqlite."""
    sql = path.read_text()
    columns = re.search(r"INSERT INTO assistant_usage_events \(([^)]*)\)", sql)
    assert columns is not None
    with sqlite3.connect(":memory:") as db:
        db.execute(f"CREATE TABLE assistant_usage_events ({columns.group(1)})")
        db.executescript(sql)
        cursor = db.execute(
            "SELECT model, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens,"
            " reasoning_tokens, CAST(total_nano_aiu AS TEXT), initiator = 'user', created_at"
            " FROM assistant_usage_events ORDER BY id"
        )
        records = cursor.fetchall()
    frame = pl.DataFrame(
        records,
        schema=[*list(CALL_SCHEMA)[:6], "total_nano_aiu", "user_initiated", "created"],
        orient="row",
    )
    return frame.with_columns(
        pl.col("user_initiated").cast(pl.Boolean()),
        pl.col("created").str.to_datetime(time_zone="UTC").cast(TIMESTAMP).alias("start_time"),
    )


def test_github_copilot_reproduces_every_store_row(real_logs: Path) -> None:
    rows = usage_rows(real_logs / "aiusage-core-session-store-1.0.80" / "usage.sql")
    assert rows.height == 45
    out = price_by_table(rows, load_rate_table("github-copilot"))
    billed = out.select(nano_aiu_usd(pl.col("total_nano_aiu")))["total_nano_aiu"]
    assert out["cost_usd"].to_list() == billed.to_list()
    assert out["cost_usd"].sum() == Decimal("0.1891317")


def every_shutdown_model(real_logs: Path) -> list[tuple[str, int, str, dict[str, Any]]]:
    """(file, line, model, modelMetrics entry) of every shutdown of every real log file."""
    found = []
    for path in sorted(real_logs.rglob("*.jsonl")):
        for number, text in enumerate(path.read_text().splitlines(), start=1):
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(line, dict) and line.get("type") == "session.shutdown":
                metrics = (line.get("data") or {}).get("modelMetrics") or {}
                name = str(path.relative_to(real_logs))
                found += [(name, number, model, m) for model, m in metrics.items()]
    return found


#: Models of real shutdowns no log quotes a price for: their bills stay unpriced, never guessed.
WITHOUT_SOURCED_PRICE = {"gpt-6-luna", "qwen3:0.6b"}


def test_github_copilot_reproduces_every_real_shutdown_bill(real_logs: Path) -> None:
    """Every per-model bill of every shutdown in the folder, to the nano-AIU (data-driven)."""
    found = every_shutdown_model(real_logs)
    priced = [row for row in found if row[2] not in WITHOUT_SOURCED_PRICE]
    assert len(priced) >= 30
    frame = metrics_frame({"modelMetrics": {f"{i}": m for i, (*_, m) in enumerate(priced)}})
    frame = frame.with_columns(pl.Series("model", [row[2] for row in priced]))
    out = price_totals(frame, load_rate_table("github-copilot"))
    billed = out.select(nano_aiu_usd(pl.col("total_nano_aiu")))["total_nano_aiu"]
    mismatches = [
        (row[0], row[1], row[2], cost, bill)
        for row, cost, bill in zip(priced, out["cost_usd"], billed, strict=True)
        if cost != bill
    ]
    assert mismatches == []
    unpriced = {row[2] for row in found} & WITHOUT_SOURCED_PRICE
    table = load_rate_table("github-copilot")
    assert all(table.resolve(model) is None for model in unpriced)


def test_a_frame_with_an_empty_chunk_prices_as_its_contiguous_copy() -> None:
    """A filter that removes every row of one part of a concatenation leaves an empty chunk
    (as ``price_calls`` splits a mix's bring-your-own-key calls off, or a window drops one
    agent's calls). polars 2.1 panicked pricing the real frame of that layout (the
    ``unpriced_reason`` chain; the three real files of ``tests/cli/test_mixed_agents.py``); such a
    frame prices as its contiguous copy."""

    def calls(models: list[str], input_tokens: list[int]) -> pl.DataFrame:
        n = len(models)
        return pl.DataFrame(
            {
                "model": models,
                "input_tokens": input_tokens,
                "cache_read_tokens": [None] * n,
                "cache_write_tokens": [None] * n,
                "output_tokens": [80] * n,
                "reasoning_tokens": [None] * n,
                "start_time": [datetime(2026, 5, 12, tzinfo=UTC)] * n,
                "speed": [None] * n,
            },
            schema_overrides={
                "cache_read_tokens": pl.Int64(),
                "cache_write_tokens": pl.Int64(),
                "reasoning_tokens": pl.Int64(),
                "start_time": TIMESTAMP,
                "speed": pl.String(),
            },
        )

    mixed = pl.concat(
        [
            calls(["claude-sonnet-4.5", "gpt-5-mini"], [1_000, 2_000]),
            calls(["gpt-5.2-codex", "gpt-5.2-codex", "gpt-5.5"], [1_200, 40, 9]),
        ],
        rechunk=False,
    )
    filtered = mixed.with_row_index("call").filter(pl.Series([False, False, True, True, True]))
    chunks = [len(chunk) for chunk in filtered.get_column("speed").get_chunks()]
    assert chunks == [0, 3]  # the layout that panicked
    table = load_rate_table("openai")
    priced = price_by_table(filtered, table)
    assert priced.equals(price_by_table(filtered.rechunk(), table))
    assert priced["unpriced_reason"].to_list() == ["cache_read_tokens unknown"] * 3
