"""Rate tables: every bundled table loads, bad tables fail naming file and key, round trips."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.core.errors import RateTableError
from analytics.core.pricing.rates import (
    ModelRate,
    PricePeriod,
    PriceSet,
    RateTable,
    Tier,
    TimeWindow,
    bundled_rate_tables,
    dump_rate_table,
    load_rate_table,
    merge_rate_tables,
    model_key,
    parse_rate_table,
    vendor_model_id,
)

HEADER = """
unit = "usd_per_million_tokens"
currency = "USD"
source = "test"
checked = "2026-11-29"
"""

GOOD_MODEL = """
[models."m"]
aliases = ["m-alias"]
[[models."m".prices]]
input = "3.00"
output = "15.00"
"""


def test_every_bundled_table_loads() -> None:
    names = bundled_rate_tables()
    assert set(names) >= {
        "github-copilot",
        "copilot-premium-requests",
        "anthropic",
        "openai",
        "bedrock",
        "google",
        "openrouter",
        "deepseek",
    }
    for name in names:
        table = load_rate_table(name)
        assert table.name == name
        assert table.models
        assert table.source
        assert table.checked <= datetime.now(UTC).date()  # a check date is never in the future


@pytest.mark.parametrize("name", ["github-copilot", "anthropic", "deepseek"])
def test_bundled_tables_round_trip(name: str) -> None:
    table = load_rate_table(name)
    assert parse_rate_table(dump_rate_table(table), name=name) == table


def test_gpt_6_luna_is_unpriced_in_github_copilot() -> None:
    assert load_rate_table("github-copilot").resolve("gpt-6-luna") is None


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-opus-4.7-1m-internal", "claude-opus-4.7"),
        ("claude-opus-4.5", "claude-opus-4.7"),
        ("CLAUDE-HAIKU-4.5", "claude-haiku-4.5"),
        ("gpt-5-mini", "gpt-5-mini"),
        ("gemini-3.1-pro-preview", "gemini-3.1-pro"),
        ("claude-opus-4.1", None),
        ("auto", None),
    ],
)
def test_copilot_model_resolution(model: str, expected: str | None) -> None:
    rate = load_rate_table("github-copilot").resolve(model)
    assert (rate.id if rate else None) == expected


def test_load_from_path_uses_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(HEADER + GOOD_MODEL)
    table = load_rate_table(path)
    assert table.name == "mine"
    assert table.resolve("M-ALIAS") is not None


def test_missing_file_names_it_and_lists_bundled(tmp_path: Path) -> None:
    with pytest.raises(RateTableError, match=r"nope\.toml.*github-copilot"):
        load_rate_table(tmp_path / "nope.toml")


BAD_TABLES = [
    pytest.param(
        HEADER + GOOD_MODEL.replace('"3.00"', '"-1"'),
        r'models\."m"\.prices\[0\]\.input: negative price',
        id="negative-price",
    ),
    pytest.param(
        HEADER + GOOD_MODEL.replace('"3.00"', "3.0"),
        r'models\."m"\.prices\[0\]\.input: float 3\.0 is not allowed',
        id="float-price",
    ),
    pytest.param(
        HEADER.replace("usd_per_million_tokens", "eur_per_token") + GOOD_MODEL,
        r"unit: unknown unit 'eur_per_token'",
        id="unknown-unit",
    ),
    pytest.param(
        HEADER + GOOD_MODEL + GOOD_MODEL.replace('"m"', '"n"'),
        r'models\."n"\.aliases: duplicate alias \'m-alias\'',
        id="duplicate-alias",
    ),
    pytest.param(
        HEADER
        + GOOD_MODEL.replace('input = "3.00"', 'effective_until = "2026-06-01"\ninput = "3.00"')
        + """[[models."m".prices]]\neffective_from = "2026-05-01"\ninput = "1"\noutput = "2"\n""",
        r'models\."m"\.prices: overlapping effective dates',
        id="overlapping-dates",
    ),
    pytest.param(
        HEADER + GOOD_MODEL.replace('output = "15.00"', 'ouptut = "15.00"'),
        r'models\."m"\.prices\[0\]\.ouptut: unknown key',
        id="typo-key",
    ),
    pytest.param(
        HEADER + GOOD_MODEL.replace('output = "15.00"\n', ""),
        r'models\."m"\.prices\[0\]\.output: missing',
        id="missing-output",
    ),
    pytest.param(
        HEADER + GOOD_MODEL.replace('"3.00"', '"0.0000000000001"'),
        r"too many decimal places",
        id="too-precise",
    ),
    pytest.param(
        HEADER.replace('"usd_per_million_tokens"', '"ai_credits_per_million_tokens"') + GOOD_MODEL,
        r"usd_per_unit: missing",
        id="credits-without-conversion",
    ),
    pytest.param(
        HEADER
        + GOOD_MODEL
        + '[[models."m".prices.windows]]\nname = "w"\ntimezone = "Mars/Base"\n'
        + 'hours = ["01:00-02:00"]\ninput = "1"\noutput = "1"\n',
        r"windows\[0\]\.timezone: unknown timezone",
        id="bad-timezone",
    ),
    pytest.param(
        HEADER + GOOD_MODEL + '[[models."m".prices.tiers]]\nabove_prompt_tokens = 0\n',
        r"above_prompt_tokens: must be a positive integer",
        id="bad-tier",
    ),
    pytest.param("unit = ", r"not valid TOML", id="bad-toml"),
]


@pytest.mark.parametrize(("text", "message"), BAD_TABLES)
def test_bad_tables_fail_naming_file_and_key(text: str, message: str) -> None:
    with pytest.raises(RateTableError, match=message) as caught:
        parse_rate_table(text, name="bad", origin="bad.toml")
    assert str(caught.value).startswith("bad.toml: ")
    assert "Hint:" in str(caught.value)


def test_defaults_fill_every_price_entry() -> None:
    table = load_rate_table("copilot-premium-requests")
    haiku = table.resolve("claude-haiku-4.5")
    assert haiku is not None
    assert all(p.per_request == Decimal("0.04") for p in haiku.periods)
    assert all(p.prices.input == 0 for p in haiku.periods)


def test_merge_overrides_single_models_and_converts_units() -> None:
    base = load_rate_table("github-copilot")
    override = parse_rate_table(
        HEADER
        + """[models."gpt-6-luna"]\n[[models."gpt-6-luna".prices]]\n"""
        + """input = "0.10"\noutput = "0.50"\n"""
        + """[models."claude-haiku-4.5"]\n[[models."claude-haiku-4.5".prices]]\n"""
        + """input = "2"\noutput = "6"\n""",
        name="mine",
    )
    merged = merge_rate_tables(base, override)
    assert merged.name == "github-copilot+mine"
    luna = merged.resolve("gpt-6-luna")
    assert luna is not None
    assert luna.periods[0].prices.input == Decimal("10")  # $0.10 = 10 credits
    haiku = merged.resolve("claude-haiku-4.5")
    assert haiku is not None
    assert haiku.periods[0].prices.output == Decimal("600")
    assert merged.resolve("claude-sonnet-4.6") is not None
    assert len(merged.models) == len(base.models) + 1


def test_merge_refuses_inexact_conversion() -> None:
    thirds = parse_rate_table(
        HEADER.replace('"usd_per_million_tokens"', '"ai_credits_per_million_tokens"')
        + 'usd_per_unit = "0.03"\n'
        + GOOD_MODEL,
        name="thirds",
    )
    plain = parse_rate_table(HEADER + GOOD_MODEL, name="plain")
    with pytest.raises(RateTableError, match="exactly"):
        merge_rate_tables(thirds, plain)


# ---------------------------------------------------------------------- round-trip property

prices = st.decimals(min_value=0, max_value=1000, places=6, allow_nan=False, allow_infinity=False)
optional_prices = st.none() | prices
price_sets = st.builds(
    PriceSet,
    input=prices,
    output=prices,
    cache_read=optional_prices,
    cache_write_5m=optional_prices,
    cache_write_1h=optional_prices,
    reasoning=optional_prices,
)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-/", min_size=1, max_size=12)
instants = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))
clock = st.builds(time, st.integers(0, 23), st.integers(0, 59))
windows = st.builds(
    TimeWindow,
    name=names,
    timezone=st.sampled_from(["UTC", "Asia/Shanghai", "Europe/Berlin"]),
    hours=st.lists(st.tuples(clock, clock), min_size=1, max_size=2).map(tuple),
    prices=price_sets,
    days=st.sampled_from([("mon", "tue", "wed", "thu", "fri"), ("sat", "sun")]),
)
tiers = st.lists(
    st.builds(Tier, above_prompt_tokens=st.integers(1, 10**6), prices=price_sets),
    max_size=2,
    unique_by=lambda t: t.above_prompt_tokens,
).map(lambda ts: tuple(sorted(ts, key=lambda t: t.above_prompt_tokens)))


@st.composite
def periods(draw: st.DrawFn) -> tuple[PricePeriod, ...]:
    """One or two non-overlapping price entries, with tiers or windows."""
    split = draw(instants)
    extras = draw(st.sampled_from(["tiers", "windows"]))
    entries = []
    for start, end in ((None, split), (split, None))[: draw(st.integers(1, 2))]:
        entries.append(
            PricePeriod(
                prices=draw(price_sets),
                effective_from=start,
                effective_until=end,
                per_request=draw(prices),
                multiplier=draw(st.decimals(0, 50, places=2)),
                tiers=draw(tiers) if extras == "tiers" else (),
                windows=tuple(draw(st.lists(windows, max_size=2))) if extras == "windows" else (),
            )
        )
    return tuple(entries)


models = st.builds(
    ModelRate,
    id=names,
    periods=periods(),
    patterns=st.lists(names.map(lambda n: n + "-*"), max_size=2).map(tuple),
    source=st.none() | st.text(max_size=20),
    note=st.none() | st.text(max_size=20),
)
tables = st.builds(
    RateTable,
    name=st.just("t"),
    unit=st.just("usd_per_million_tokens"),
    usd_per_unit=st.just(Decimal(1)),
    currency=st.just("USD"),
    source=st.text(min_size=1, max_size=30),
    checked=st.dates(min_value=date(2020, 1, 1), max_value=date(2030, 1, 1)),
    models=st.lists(models, min_size=1, max_size=3, unique_by=lambda m: m.id.lower()).map(tuple),
    description=st.none() | st.text(max_size=20),
)


@given(tables)
def test_rate_table_round_trips_through_dump_and_load(table: RateTable) -> None:
    assert parse_rate_table(dump_rate_table(table), name="t") == table


@pytest.mark.parametrize(
    ("cloud", "vendor"),
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
        ("us.anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
        ("us-gov.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5-20251001"),
        ("global.anthropic.claude-opus-4-8", "claude-opus-4-8"),
        (
            "arn:aws:bedrock:us-east-1:1:inference-profile/eu.anthropic.claude-opus-4-7-v1:0",
            "claude-opus-4-7",
        ),
        ("Claude-Sonnet-4-5@20250929", "claude-sonnet-4-5-20250929"),
        ("claude-opus-4-6@default", "claude-opus-4-6"),
        ("claude-sonnet-4.6", "claude-sonnet-4.6"),
        ("anthropic/claude-sonnet-4.6", "anthropic/claude-sonnet-4.6"),
        # a route before the Bedrock id (LiteLLM's converse/, bedrock/converse/)
        ("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5-20251001"),
        ("bedrock/converse/apac.anthropic.claude-sonnet-4-6", "claude-sonnet-4-6"),
    ],
)
def test_cloud_model_ids_name_the_vendor_model(cloud: str, vendor: str) -> None:
    assert vendor_model_id(cloud) == vendor


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("claude-opus-4-7", "claude-opus-4-7"),
        ("claude-opus-4.7", "claude-opus-4-7"),
        ("anthropic/claude-opus-4.7", "claude-opus-4-7"),
        ("Claude-Sonnet-4.6", "claude-sonnet-4-6"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        # a Bedrock id keeps its region: Bedrock prices regions apart
        ("us.anthropic.claude-opus-4-6-v1", "us.anthropic.claude-opus-4-6-v1"),
        ("gpt-5.2-codex", "gpt-5-2-codex"),
        ("qwen3:0.6b", "qwen3:0-6b"),
    ],
)
def test_model_key_is_the_name_in_any_sellers_spelling(name: str, key: str) -> None:
    assert model_key(name) == key


@pytest.mark.parametrize(
    ("model", "priced_as"),
    [
        # Claude Code's names, at OpenRouter (whose ids are anthropic/claude-...-4.x)
        ("claude-opus-4-7", "anthropic/claude-opus-4.7"),
        ("claude-sonnet-4-6", "anthropic/claude-sonnet-4.6"),
        ("claude-haiku-4-5-20251001", "anthropic/claude-haiku-4.5"),
        ("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic/claude-haiku-4.5"),
        # Copilot's names there
        ("claude-sonnet-4.6", "anthropic/claude-sonnet-4.6"),
        # not sold there: no price, never another model's
        ("claude-opus-4-6", None),
        ("claude-sonnet-4-5-20250929", None),
        ("gpt-5-mini", None),
    ],
)
def test_openrouter_prices_other_sellers_spellings_of_its_models(
    model: str, priced_as: str | None
) -> None:
    found = load_rate_table("openrouter").resolve(model)
    assert (found.id if found else None) == priced_as


def test_two_models_of_one_spelling_are_not_guessed_between() -> None:
    table = parse_rate_table(
        HEADER
        + """
[models."a/m-1.0"]
[[models."a/m-1.0".prices]]
input = "1"
output = "1"

[models."b/m-1.0"]
[[models."b/m-1.0".prices]]
input = "2"
output = "2"
""",
        name="t",
    )
    assert table.resolve("a/m-1.0") is not None
    assert table.resolve("m-1-0") is None


def test_web_search_and_fast_mode_prices_parse_and_round_trip() -> None:
    table = parse_rate_table(
        HEADER
        + """
[models."m"]
[[models."m".prices]]
input = "5"
output = "25"
web_search = "0.01"
fast_multiplier = "6"
""",
        name="t",
    )
    period = table.models[0].periods[0]
    assert (period.web_search, period.fast_multiplier) == (Decimal("0.01"), Decimal(6))
    assert parse_rate_table(dump_rate_table(table), name="t") == table


@pytest.mark.parametrize(
    ("line", "problem"),
    [('fast_multiplier = "0"', "must be positive"), ("web_search = 0.01", "float")],
)
def test_bad_web_search_and_fast_prices_are_refused(line: str, problem: str) -> None:
    text = HEADER + f'[models."m"]\n[[models."m".prices]]\ninput = "1"\noutput = "1"\n{line}\n'
    with pytest.raises(RateTableError, match=problem):
        parse_rate_table(text, name="t")


#: Every name of every model of the tables whose ids other sellers spell differently.
SPELLED = [
    (table, model.id, name)
    for table in ("anthropic", "openai", "openrouter", "github-copilot")
    for model in load_rate_table(table).models
    for name in model.names
]


@given(
    st.sampled_from(SPELLED),
    st.sampled_from(["upper", "dots", "dashes", "seller"]),
)
def test_a_model_is_found_under_any_spelling_of_its_names(
    named: tuple[str, str, str], spelling: str
) -> None:
    """Claude Code writes ``claude-sonnet-4-6`` where Copilot writes ``claude-sonnet-4.6`` and
    OpenRouter ``anthropic/claude-sonnet-4.6``: each spelling of a name is that model."""
    table, model, name = named
    spelled = {
        "upper": name.upper(),
        "dots": re.sub(r"(?<=\d)-(?=\d)", ".", name),
        "dashes": re.sub(r"(?<=\d)\.(?=\d)", "-", name),
        "seller": f"some-seller/{name}",
    }[spelling]
    found = load_rate_table(table).resolve(spelled)
    assert found is not None and found.id == model, (spelled, found and found.id)


@pytest.mark.parametrize(
    ("model", "priced_as"),
    [
        ("claude-sonnet-4-6", "claude-sonnet-4.6"),
        ("claude-sonnet-4-5", "claude-sonnet-4.5"),
        ("claude-sonnet-5-5", "claude-sonnet-5.5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),  # a dated release: the glob's case
    ],
)
def test_another_spelling_of_a_name_wins_over_a_glob(model: str, priced_as: str) -> None:
    """Copilot's ``claude-sonnet-4-*`` glob (dated releases of Sonnet 4) once took Claude
    Code's ``claude-sonnet-4-6``, the next version."""
    found = load_rate_table("github-copilot").resolve(model)
    assert found is not None and found.id == priced_as
