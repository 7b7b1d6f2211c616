"""Pricing Claude Code and Codex calls: cache-write lifetimes, web searches, fast mode, service
tiers, long-context tiers, cloud model ids, OpenAI's cached input. Literal frames with exact
expectations, then properties over any such calls."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.core.pricing.call_costs import AGENT_COSTS, AGENT_USAGE, price_by_table
from analytics.core.pricing.price import price_analysis, price_calls
from analytics.core.pricing.rates import load_rate_table
from analytics.core.schema import CALL_TOKENS, CALLS, COSTS, SESSIONS, TIMESTAMP, combine, padded

ANTHROPIC = load_rate_table("anthropic")
OPENAI = load_rate_table("openai")
COPILOT = load_rate_table("github-copilot")

CALL_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String(),
    "input_tokens": pl.Int64(),
    "cache_read_tokens": pl.Int64(),
    "cache_write_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
    "start_time": TIMESTAMP,
    "user_initiated": pl.Boolean(),
    **AGENT_USAGE,
}
AFTER_1M_GA = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


def call(model: str = "claude-sonnet-4-5-20250929", **values: Any) -> dict[str, Any]:
    """One Claude Code or Codex call: zero tokens, standard speed and tier, unless given."""
    row: dict[str, Any] = {
        "model": model,
        "input_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "output_tokens": 0,
        "reasoning_tokens": None,
        "start_time": AFTER_1M_GA,
        "user_initiated": None,
        "cache_write_1h_tokens": None,
        "web_search_requests": None,
        "speed": None,
        "service_tier": None,
    }
    return row | values


def frame(*rows: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=CALL_SCHEMA)


def priced(*rows: dict[str, Any], table: Any = ANTHROPIC) -> pl.DataFrame:
    return price_by_table(frame(*rows), table)


def one(row: dict[str, Any], column: str = "cost_usd", table: Any = ANTHROPIC) -> Any:
    return priced(row, table=table).get_column(column).item()


# ---------------------------------------------------------------------------------- Anthropic


def test_five_minute_and_one_hour_writes_at_their_own_prices() -> None:
    # 1,000 5-minute writes at $3.75/M and 2,000 1-hour writes at $6/M (Sonnet 4.5).
    row = call(input_tokens=3_000, cache_write_tokens=3_000, cache_write_1h_tokens=2_000)
    out = priced(row).row(0, named=True)
    assert out["cache_write_cost_usd"] == Decimal("0.01575")
    assert out["cost_usd"] == Decimal("0.01575")
    assert out["cache_write_rate_assumed"] is None


def test_writes_without_a_split_are_five_minute_writes_and_say_so() -> None:
    row = call(input_tokens=3_000, cache_write_tokens=3_000)
    out = priced(row).row(0, named=True)
    assert out["cache_write_cost_usd"] == Decimal("0.01125")  # 3,000 x $3.75/M
    assert out["cache_write_rate_assumed"] == "5m"
    assert one(call(input_tokens=5, cache_write_tokens=0), "cache_write_rate_assumed") is None


def test_anthropic_write_prices_are_one_and_a_quarter_and_twice_input() -> None:
    # Claude 3 Haiku's list prices are rounded ($0.30, not 1.25 x $0.25); Claude 4 on are exact.
    for model in (m for m in ANTHROPIC.models if not m.id.startswith(("claude-2", "claude-3"))):
        for period in model.periods:
            for prices in (period.prices, *(t.prices for t in period.tiers)):
                if prices.cache_write_1h is not None:  # models with prompt caching
                    assert prices.cache_write_5m == prices.input * Decimal("1.25"), model.id
                    assert prices.cache_write_1h == prices.input * 2, model.id


def test_a_whole_claude_call_is_priced_exactly() -> None:
    # Sonnet 4.5: 1,200 uncached, 50,000 read, 4,000 written (1,000 for an hour), 800 out.
    row = call(
        input_tokens=55_200,
        cache_read_tokens=50_000,
        cache_write_tokens=4_000,
        cache_write_1h_tokens=1_000,
        output_tokens=800,
        web_search_requests=2,
    )
    out = priced(row).row(0, named=True)
    assert out["input_cost_usd"] == Decimal("0.0036")  # 1,200 x $3/M
    assert out["cache_read_cost_usd"] == Decimal("0.015")  # 50,000 x $0.30/M
    assert out["cache_write_cost_usd"] == Decimal("0.01725")  # 3,000 x 3.75 + 1,000 x 6
    assert out["output_cost_usd"] == Decimal("0.012")  # 800 x $15/M
    assert out["request_cost_usd"] == Decimal("0.02")  # 2 searches x $0.01
    assert out["cost_usd"] == Decimal("0.06785")
    assert out["priced_model"] == "claude-sonnet-4-5"


def test_web_search_is_ten_dollars_a_thousand_and_fetch_is_free() -> None:
    assert one(call(web_search_requests=1_000), "request_cost_usd") == Decimal(10)
    fetching = frame(call()).with_columns(pl.lit(7, dtype=pl.Int64).alias("web_fetch_requests"))
    assert price_by_table(fetching, ANTHROPIC)["cost_usd"].item() == Decimal(0)


def test_searches_a_table_has_no_price_for_leave_the_call_unpriced() -> None:
    out = priced(call("gpt-5.4", web_search_requests=1), table=COPILOT).row(0, named=True)
    assert out["cost_usd"] is None
    assert out["unpriced_reason"] == (
        "the table has no price for a kind of token or request the call has"
    )


@pytest.mark.parametrize(
    ("model", "factor"),
    [("claude-opus-4-6", 6), ("claude-opus-4-7", 6), ("claude-opus-4-8", 2)],
)
def test_fast_mode_multiplies_token_prices_not_searches(model: str, factor: int) -> None:
    usage: dict[str, Any] = {
        "input_tokens": 30_000,
        "cache_read_tokens": 20_000,
        "cache_write_tokens": 5_000,
        "cache_write_1h_tokens": 1_000,
        "output_tokens": 2_000,
        "web_search_requests": 3,
    }
    standard = priced(call(model, **usage)).row(0, named=True)
    fast = priced(call(model, speed="fast", **usage)).row(0, named=True)
    tokens = standard["cost_usd"] - standard["request_cost_usd"]
    assert fast["cost_usd"] == tokens * factor + Decimal("0.03")
    assert standard["cost_usd"] == priced(call(model, speed="standard", **usage))["cost_usd"].item()


def test_fast_mode_of_a_model_without_a_fast_price_is_unpriced() -> None:
    out = priced(call(speed="fast", input_tokens=10)).row(0, named=True)
    assert out["cost_usd"] is None and out["priced_model"] == "claude-sonnet-4-5"
    assert out["unpriced_reason"] == 'no price for speed "fast"'


def test_only_standard_service_tiers_are_priced() -> None:
    assert one(call(input_tokens=1_000, service_tier="standard")) == Decimal("0.003")
    out = priced(call(input_tokens=1_000, service_tier="priority")).row(0, named=True)
    assert out["cost_usd"] is None
    assert out["unpriced_reason"] == 'no price for service tier "priority"'
    assert out["service_tier"] == "priority"  # kept


def test_long_context_tier_is_chosen_by_the_whole_prompt() -> None:
    # Sonnet 4.5 bills a request over 200K input tokens (cached ones too) at $6/$22.50.
    below = call(input_tokens=200_000, cache_read_tokens=190_000, output_tokens=1_000)
    above = call(input_tokens=200_001, cache_read_tokens=190_000, output_tokens=1_000)
    assert one(below) == Decimal("0.03") + Decimal("0.057") + Decimal("0.015")
    assert one(above) == Decimal("0.060006") + Decimal("0.114") + Decimal("0.0225")


def test_opus_4_6_long_context_premium_ended_at_one_million_general_availability() -> None:
    before = call(
        "claude-opus-4-6", input_tokens=300_000, start_time=datetime(2026, 3, 1, tzinfo=UTC)
    )
    after = call(
        "claude-opus-4-6", input_tokens=300_000, start_time=datetime(2026, 3, 13, tzinfo=UTC)
    )
    assert one(before) == Decimal(3)  # 300,000 x $10/M
    assert one(after) == Decimal("1.5")  # 300,000 x $5/M


@pytest.mark.parametrize(
    "cloud_id",
    [
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-sonnet-4-5@20250929",
    ],
)
def test_bedrock_and_vertex_ids_price_as_the_vendor_id(cloud_id: str) -> None:
    usage: dict[str, Any] = {
        "input_tokens": 9_000,
        "cache_write_tokens": 4_000,
        "output_tokens": 700,
    }
    vendor = priced(call(**usage)).row(0, named=True)
    cloud = priced(call(cloud_id, **usage)).row(0, named=True)
    assert cloud["priced_model"] == vendor["priced_model"] == "claude-sonnet-4-5"
    assert cloud["cost_usd"] == vendor["cost_usd"] == Decimal("0.0405")


def test_log_named_claude_models_resolve() -> None:
    names = {
        "claude-opus-4-6": "claude-opus-4-6",
        "claude-opus-4-7": "claude-opus-4-7",
        "claude-opus-4-8": "claude-opus-4-8",
        "claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
        "claude-sonnet-4-6": "claude-sonnet-4-6",
        "claude-haiku-4-5-20251001": "claude-haiku-4-5",
        "us.anthropic.claude-opus-4-6-v1": "claude-opus-4-6",
    }
    for name, model in names.items():
        resolved = ANTHROPIC.resolve(name)
        assert resolved is not None and resolved.id == model, name


# ---------------------------------------------------------------------------------- OpenAI


def test_codex_cached_input_is_inside_input_and_reasoning_inside_output() -> None:
    # gpt-5.3-codex at $1.75 / $0.175 cached / $14: 10,000 input of which 8,000 cached; 500 out
    # of which 300 reasoning. Codex logs without cache_write_input_tokens have no write count.
    row = call(
        "gpt-5.3-codex",
        input_tokens=10_000,
        cache_read_tokens=8_000,
        cache_write_tokens=None,
        output_tokens=500,
        reasoning_tokens=300,
    )
    out = priced(row, table=OPENAI).row(0, named=True)
    assert out["input_cost_usd"] == Decimal("0.0035")
    assert out["cache_read_cost_usd"] == Decimal("0.0014")
    assert out["output_cost_usd"] == Decimal("0.007")
    assert out["cost_usd"] == Decimal("0.0119")


@pytest.mark.parametrize(
    ("model", "priced_as"),
    [
        ("gpt-5.2-codex", "gpt-5.2"),
        ("gpt-5.2", "gpt-5.2"),
        ("gpt-5.3-codex", "gpt-5.3-codex"),
        ("gpt-5.4", "gpt-5.4"),
        ("gpt-5.4-mini", "gpt-5.4-mini"),
        ("gpt-5.5", "gpt-5.5"),
        ("gpt-5.6-sol", "gpt-5.6-sol"),
    ],
)
def test_log_named_codex_models_are_priced(model: str, priced_as: str) -> None:
    out = priced(call(model, input_tokens=1_000, output_tokens=10), table=OPENAI)
    assert out["priced_model"].item() == priced_as
    assert out["cost_usd"].item() is not None


def test_an_unknown_write_count_matters_only_where_writes_cost_more_than_input() -> None:
    # gpt-5.6-sol bills cache writes at 1.25x input: without the count the cost is unknown.
    usage: dict[str, Any] = {
        "input_tokens": 10_000,
        "cache_read_tokens": 2_000,
        "output_tokens": 100,
    }
    unknown = priced(call("gpt-5.6-sol", cache_write_tokens=None, **usage), table=OPENAI)
    assert unknown["cost_usd"].item() is None
    assert unknown["unpriced_reason"].item() == (
        "cache_write_tokens (writes cost more than input here) unknown"
    )
    unread = priced(call("gpt-5.2-codex", **(usage | {"cache_read_tokens": None})), table=OPENAI)
    assert unread["unpriced_reason"].item() == "cache_read_tokens unknown"
    known = priced(call("gpt-5.6-sol", cache_write_tokens=3_000, **usage), table=OPENAI)
    # From 2026-08-21: 5,000 x $4 + 2,000 x $0.40 + 3,000 x $5 + 100 x $20, per million.
    assert known["cost_usd"].item() == Decimal("0.0378")


def test_an_unknown_model_stays_unpriced_with_a_reason_never_zero() -> None:
    out = priced(call("claude-unlisted-9", input_tokens=100, output_tokens=10)).row(0, named=True)
    assert out["cost_usd"] is None and out["priced_model"] is None
    assert out["unpriced_reason"] == "model not in the anthropic rate table"


def test_a_routed_bedrock_id_prices_as_the_vendor_id() -> None:
    # LiteLLM's route (converse/) before a Japan inference profile's id, as a log names it
    routed = call("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0", input_tokens=1_000)
    out = priced(routed).row(0, named=True)
    assert out["priced_model"] == "claude-haiku-4-5"
    assert out["cost_usd"] == Decimal("0.001")  # 1,000 x $1/M


#: One Claude Code call through Bedrock: 10,000 uncached, 20,000 read, 5,000 written, 1,000 out.
BEDROCK_USAGE: dict[str, Any] = {
    "input_tokens": 35_000,
    "cache_read_tokens": 20_000,
    "cache_write_tokens": 5_000,
    "output_tokens": 1_000,
    "agent": "claude-code",
}


@pytest.mark.parametrize(
    ("model", "priced_as", "price_from", "cost"),
    [
        # a regional endpoint of Haiku 4.5: AWS's 10% premium ($1.10 in, $0.11 read, $1.375
        # 5-minute write, $5.50 out per M)
        (
            "converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0",
            "regional.anthropic.claude-haiku-4-5-20251001-v1:0",
            "bedrock",
            "0.025575",
        ),
        (
            "us.anthropic.claude-haiku-4-5-20251001-v1:0",
            "regional.anthropic.claude-haiku-4-5-20251001-v1:0",
            "bedrock",
            "0.025575",
        ),
        # the global endpoint: Anthropic's list price ($1, $0.10, $1.25, $5)
        (
            "global.anthropic.claude-haiku-4-5-20251001-v1:0",
            "global.anthropic.claude-haiku-4-5-20251001-v1:0",
            "bedrock",
            "0.02325",
        ),
        # Anthropic's own API, same model: the list price, never Bedrock's
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5", "anthropic", "0.02325"),
        # a region the price database does not list: the vendor's list price
        ("ca.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5", "anthropic", "0.02325"),
    ],
)
def test_bedrock_calls_of_other_agents_cost_what_bedrock_charges(
    model: str, priced_as: str, price_from: str, cost: str
) -> None:
    schema = combine(CALL_SCHEMA, {"agent": pl.String()})
    calls = pl.DataFrame([call(model, **BEDROCK_USAGE)], schema=schema)
    out = price_calls(calls, COPILOT).row(0, named=True)
    assert (out["priced_model"], out["price_from"]) == (priced_as, price_from)
    assert out["cost_source"] == "vendor_api"
    assert out["cost_usd"] == Decimal(cost)


def test_a_call_outside_its_models_prices_says_when_they_end() -> None:
    deepseek = load_rate_table("deepseek")
    ended = next(m for m in deepseek.models if all(p.effective_until for p in m.periods))
    until = max(p.effective_until for p in ended.periods if p.effective_until)
    late = call(ended.id, input_tokens=10, start_time=until)
    out = priced(late, table=deepseek).row(0, named=True)
    assert out["cost_usd"] is None
    assert out["unpriced_reason"] == f"no price after {until:%Y-%m-%d} in deepseek"


def test_copilot_calls_say_why_they_are_unpriced_too() -> None:
    base = {name: dtype for name, dtype in CALL_SCHEMA.items() if name not in AGENT_USAGE}
    out = price_by_table(pl.DataFrame(COPILOT_ROWS, schema=base), COPILOT)
    reasons = dict(zip(out["model"], out["unpriced_reason"], strict=True))
    assert reasons["gpt-6-luna"] == "model not in the github-copilot rate table"
    assert reasons["claude-haiku-4.5"] is None  # priced


# ---------------------------------------------------------------------------------- Copilot


COPILOT_ROWS = [
    {
        "model": "claude-haiku-4.5",
        "input_tokens": 19_335,
        "cache_read_tokens": 8_888,
        "cache_write_tokens": 10_437,
        "output_tokens": 114,
        "reasoning_tokens": 53,
        "start_time": None,
        "user_initiated": True,
    },
    {
        "model": "gpt-5.4",
        "input_tokens": 300_000,
        "cache_read_tokens": 250_000,
        "cache_write_tokens": 0,
        "output_tokens": 2_000,
        "reasoning_tokens": 900,
        "start_time": None,
        "user_initiated": False,
    },
    {
        "model": "gpt-6-luna",
        "input_tokens": 10,
        "cache_read_tokens": None,
        "cache_write_tokens": 0,
        "output_tokens": 1,
        "reasoning_tokens": 0,
        "start_time": None,
        "user_initiated": True,
    },
]


@pytest.mark.parametrize("table", [COPILOT, ANTHROPIC, OPENAI], ids=lambda t: t.name)
def test_calls_without_agent_columns_price_as_with_them_null(table: Any) -> None:
    base = {name: dtype for name, dtype in CALL_SCHEMA.items() if name not in AGENT_USAGE}
    without = pl.DataFrame(COPILOT_ROWS, schema=base)
    with_null = without.with_columns(
        pl.lit(None, dtype=dtype).alias(name) for name, dtype in AGENT_USAGE.items()
    )
    plain, agent = price_by_table(without, table), price_by_table(with_null, table)
    assert plain.select(list(COSTS)).equals(agent.select(list(COSTS)))
    # a Copilot frame gets the reason of an unpriced call, not the cache-write assumption
    assert list(plain.columns) == [*base, *COSTS, "unpriced_reason"]
    assert list(agent.columns) == [*with_null.columns, *COSTS, *AGENT_COSTS]


def test_the_entry_point_keeps_the_agent_columns_before_the_bill() -> None:
    out = price_calls(frame(call(input_tokens=10, cache_write_tokens=10)), ANTHROPIC)
    assert out.columns[-3:] == [*AGENT_COSTS, "billed_usd"]
    assert out["billed_usd"].item() is None  # no bill in the log: unknown, not $0


# ---------------------------------------------------------------------------------- properties

counts = st.integers(min_value=0, max_value=400_000)


@st.composite
def agent_calls(draw: st.DrawFn) -> dict[str, Any]:
    """A Claude or Codex call with consistent counts: input holds the cache reads and writes,
    writes hold the 1-hour writes."""
    uncached, read, write_5m, write_1h, out = (draw(counts) for _ in range(5))
    split = draw(st.booleans())
    return call(
        draw(
            st.sampled_from(
                ["claude-sonnet-4-5", "claude-opus-4-6", "claude-opus-4-8", "claude-haiku-4-5"]
            )
        ),
        input_tokens=uncached + read + write_5m + write_1h,
        cache_read_tokens=read,
        cache_write_tokens=write_5m + write_1h,
        cache_write_1h_tokens=write_1h if split else None,
        output_tokens=out,
        web_search_requests=draw(st.none() | st.integers(min_value=0, max_value=50)),
        speed=draw(st.sampled_from([None, "standard", "fast"])),
        start_time=draw(st.sampled_from([AFTER_1M_GA, datetime(2026, 2, 1, tzinfo=UTC), None])),
    )


def total(rows: list[dict[str, Any]]) -> Decimal:
    costs = priced(*rows)["cost_usd"] if rows else pl.Series([], dtype=pl.Decimal(38, 18))
    return sum(((c or Decimal(0)) for c in costs), Decimal(0))


@settings(max_examples=40, deadline=None)
@given(st.lists(agent_calls(), max_size=8), st.data())
def test_cost_is_additive_over_any_partition_of_calls(
    rows: list[dict[str, Any]], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(rows)))
    assert total(rows) == total(rows[:cut]) + total(rows[cut:])


KINDS = ("uncached", "cache_read", "write_5m", "write_1h", "output", "search")


@settings(max_examples=60, deadline=None)
@given(agent_calls(), st.sampled_from(KINDS), st.integers(min_value=1, max_value=300_000))
def test_cost_never_falls_when_a_call_has_more_tokens(
    row: dict[str, Any], kind: str, extra: int
) -> None:
    more = dict(row)
    grows = {
        "uncached": ["input_tokens"],
        "cache_read": ["input_tokens", "cache_read_tokens"],
        "write_5m": ["input_tokens", "cache_write_tokens"],
        "write_1h": ["input_tokens", "cache_write_tokens", "cache_write_1h_tokens"],
        "output": ["output_tokens"],
        "search": ["web_search_requests"],
    }[kind]
    for column in grows:
        more[column] = (more[column] or 0) + extra
    before, after = one(row), one(more)
    if before is not None and after is not None:
        assert after >= before
    if kind != "write_1h" or row["cache_write_1h_tokens"] is not None:
        assert (before is None) == (after is None)


@given(
    st.sampled_from([m.id for m in ANTHROPIC.models] + [m.id for m in OPENAI.models]),
    st.sampled_from([None, "standard"]),
    st.booleans(),
)
def test_zero_tokens_cost_zero(model: str, speed: str | None, split: bool) -> None:
    row = call(
        model, speed=speed, cache_write_1h_tokens=0 if split else None, web_search_requests=0
    )
    table = ANTHROPIC if ANTHROPIC.resolve(model) is not None else OPENAI
    assert one(row, table=table) == Decimal(0)


# ---------------------------------------------------------------------------------- entry point


def mixed_calls() -> pl.DataFrame:
    """One session of each agent: a Copilot call, a Claude Code call, a Codex call, and a
    Claude Code call of a model no table knows."""
    rows = [
        call("claude-haiku-4.5", input_tokens=1_000, output_tokens=10, agent="copilot"),
        call(
            "claude-sonnet-4-5-20250929", input_tokens=1_000, output_tokens=10, agent="claude-code"
        ),
        call("gpt-5.4", input_tokens=1_000, output_tokens=10, agent="codex"),
        call("claude-unlisted-9", input_tokens=1_000, output_tokens=10, agent="claude-code"),
    ]
    schema = combine(CALLS, CALL_TOKENS, CALL_SCHEMA, {"agent": pl.String()})
    ids = ["copilot", "claude", "codex", "unknown"]
    filled = [
        r | {"session_id": sid, "user_initiated": True} for r, sid in zip(rows, ids, strict=True)
    ]
    return padded(pl.DataFrame(filled, schema={k: schema[k] for k in filled[0]}), schema)


def test_other_agents_are_priced_at_their_vendor_list_price_under_the_copilot_table() -> None:
    calls = mixed_calls()
    sessions = padded(pl.DataFrame({"session_id": calls["session_id"]}), SESSIONS)
    priced, per_session = price_analysis(calls, sessions, COPILOT)
    by_session = {row["session_id"]: row for row in priced.iter_rows(named=True)}
    assert by_session["copilot"]["cost_source"] == "rates"
    assert by_session["copilot"]["cost_usd"] == Decimal("0.00105")  # 100 in, 500 out credits per M
    assert by_session["claude"]["cost_source"] == "vendor_api"
    assert by_session["claude"]["price_from"] == "anthropic"
    assert by_session["claude"]["cost_usd"] == Decimal("0.00315")  # $3/M in, $15/M out
    assert by_session["codex"]["cost_source"] == "vendor_api"
    assert by_session["codex"]["price_from"] == "openai"
    assert by_session["codex"]["cost_usd"] == Decimal("0.00265")  # $2.50/M in, $15/M out
    assert by_session["unknown"]["cost_usd"] is None
    assert by_session["unknown"]["unpriced_reason"] == (
        "model not in the bedrock, anthropic, openai, google, moonshotai, openrouter or deepseek "
        "rate tables"
    )
    assert per_session["billed_usd"].null_count() == per_session.height  # no bill: not $0
    sources = dict(zip(per_session["session_id"], per_session["cost_source"], strict=True))
    assert sources == {
        "copilot": "rates",
        "claude": "vendor_api",
        "codex": "vendor_api",
        "unknown": "unpriced",
    }
    # Under any other table every call is priced by it alike.
    anthropic, _ = price_analysis(calls, sessions, ANTHROPIC)
    assert anthropic["cost_source"].to_list() == ["rates", "rates", None, None]
