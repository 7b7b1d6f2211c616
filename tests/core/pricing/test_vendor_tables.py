"""The vendor tables against the price database they are made from
(``analytics.core.pricing.vendor_tables``): they are current, every model the real Claude
Code, Codex, pi, Gemini CLI and Kimi Code logs name resolves to the database's model, and any
such call costs exactly what the database computes for it."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.core.pricing.call_costs import AGENT_USAGE, price_by_table
from analytics.core.pricing.rates import load_rate_table
from analytics.core.pricing.vendor_tables import (
    VENDORS,
    ConversionError,
    _names,
    _regex_glob,
    stale_tables,
)
from analytics.core.schema import TIMESTAMP

genai_prices = pytest.importorskip(
    "genai_prices", reason="genai-prices (a dev dependency: pip install -e '.[dev]') is absent"
)
from genai_prices import Usage, calc_price, data_snapshot  # noqa: E402

#: Models named in ../shared/real_logs/claude-code, codex (their README facts tables), pi
#: (``gpt-5.5``, ``gpt-5.4-mini`` via ``openai-codex``), gemini-cli and kimi (``llm.request``'s
#: model), as the database spells them; Antigravity's label and Kimi's config alias are in
#: ``test_new_agents.py``.
LOG_MODELS = {
    "anthropic": [
        "claude-opus-4-6",
        "claude-opus-4-7",
        "claude-opus-4-8",
        "claude-sonnet-4-5",
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4-6",
        "claude-haiku-4-5-20251001",
    ],
    "openai": [
        "gpt-5.2-codex",
        "gpt-5.2",
        "gpt-5.3-codex",
        "gpt-5.4",
        "gpt-5.4-mini",
        "gpt-5.5",
        "gpt-5.6-sol",
    ],
    "google": ["gemini-2.5-pro", "gemini-3.5-flash", "gemini-3-flash-preview"],
    "moonshotai": ["kimi-k2.7-code"],
    # Claude on Bedrock, as a routed id, an inference profile, the global endpoint
    "bedrock": [
        "converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0",
        "us.anthropic.claude-opus-4-6-v1",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "global.anthropic.claude-sonnet-4-6",
    ],
}
CASES = [(table, model) for table, models in LOG_MODELS.items() for model in models]
SCHEMA: dict[str, pl.DataType] = {
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


def test_bundled_vendor_tables_are_the_database_converted() -> None:
    assert stale_tables(date(2026, 12, 2)) == []


@pytest.mark.parametrize(("table", "model"), CASES)
def test_log_named_models_resolve_to_the_database_model(table: str, model: str) -> None:
    _, info = data_snapshot.get_snapshot().find_provider_model(model, None, VENDORS[table], None)
    resolved = load_rate_table(table).resolve(model)
    assert resolved is not None and resolved.id == info.id


usages = st.fixed_dictionaries(
    {
        "uncached": st.integers(0, 300_000),
        "read": st.integers(0, 300_000),
        "write_5m": st.integers(0, 50_000),
        "write_1h": st.integers(0, 50_000),
        "output": st.integers(0, 40_000),
        "searches": st.integers(0, 5),
        "when": st.sampled_from(
            [datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 9, 1, tzinfo=UTC)]
        ),
    }
)


@pytest.mark.parametrize(("table", "model"), CASES)
@settings(max_examples=8, deadline=None)
@given(st.lists(usages, min_size=1, max_size=4))
def test_log_named_models_cost_what_the_database_computes(
    table: str, model: str, calls: list[dict[str, Any]]
) -> None:
    # Only Anthropic's log splits writes by lifetime; the others price every write alike.
    no_split = table not in ("anthropic", "bedrock")
    rows = [
        {
            "model": model,
            "input_tokens": c["uncached"] + c["read"] + c["write_5m"] + c["write_1h"],
            "cache_read_tokens": c["read"],
            "cache_write_tokens": c["write_5m"] + c["write_1h"],
            "output_tokens": c["output"],
            "reasoning_tokens": None,
            "start_time": c["when"],
            "user_initiated": None,
            "cache_write_1h_tokens": None if no_split else c["write_1h"],
            "web_search_requests": c["searches"],
            "speed": None,
            "service_tier": None,
        }
        for c in calls
    ]
    ours = price_by_table(pl.DataFrame(rows, schema=SCHEMA), load_rate_table(table))
    for row, cost in zip(rows, ours["cost_usd"], strict=True):
        usage = Usage(
            input_tokens=row["input_tokens"],
            cache_read_tokens=row["cache_read_tokens"],
            cache_write_tokens=row["cache_write_tokens"],
            cache_write_1h_tokens=row["cache_write_1h_tokens"],
            output_tokens=row["output_tokens"],
            web_searches=row["web_search_requests"],
        )
        theirs = calc_price(
            usage, model, provider_id=VENDORS[table], genai_request_timestamp=row["start_time"]
        )
        if row["web_search_requests"] and theirs.model_price.web_searches_kcount is None:
            # The database charges $0 for searches it has no price for; they stay unpriced here.
            assert cost is None, row
        else:
            assert cost == theirs.total_price, row


def test_fast_mode_costs_what_the_database_computes_where_it_has_it() -> None:
    when = datetime(2026, 9, 1, tzinfo=UTC)
    row = {
        "model": "claude-opus-4-8",
        "input_tokens": 60_000,
        "cache_read_tokens": 30_000,
        "cache_write_tokens": 8_000,
        "output_tokens": 3_000,
        "reasoning_tokens": None,
        "start_time": when,
        "user_initiated": None,
        "cache_write_1h_tokens": 2_000,
        "web_search_requests": 4,
        "speed": "fast",
        "service_tier": "standard",
    }
    ours = price_by_table(pl.DataFrame([row], schema=SCHEMA), load_rate_table("anthropic"))
    usage = Usage(
        input_tokens=60_000,
        cache_read_tokens=30_000,
        cache_write_tokens=8_000,
        cache_write_1h_tokens=2_000,
        output_tokens=3_000,
        web_searches=4,
    )
    theirs = calc_price(
        usage,
        "claude-opus-4-8",
        provider_id="anthropic",
        genai_request_timestamp=when,
        price_context={"speed": "fast"},
    )
    assert ours["cost_usd"].item() == theirs.total_price


@pytest.mark.parametrize(
    ("regex", "glob"),
    [
        (r"^claude-fable-5-\d{8}$", "claude-fable-5-" + "[0-9]" * 8),
        (
            r"^gpt-5\.6-sol-\d{4}-\d{2}-\d{2}$",
            "gpt-5.6-sol-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
        ),
        (r"^claude-opus-5[-@]\d{8}$", "claude-opus-5[-@]" + "[0-9]" * 8),
        # no ``$``: the start of a name
        (r"^gemini-3\.5-flash-\d", "gemini-3.5-flash-[0-9]*"),
        # a letter in either case is the letter: names are matched in lower case
        (r"^m-[tT][tT][sS]$", "m-tts"),
    ],
)
def test_match_regexes_become_exact_globs(regex: str, glob: str) -> None:
    assert _regex_glob(regex, "m") == glob


@pytest.mark.parametrize("regex", [r"claude-\d+", r"^claude-(a|b)$", r"^claude-.*$"])
def test_regexes_without_a_glob_equivalent_are_refused(regex: str) -> None:
    with pytest.raises(ConversionError):
        _regex_glob(regex, "m")


def test_a_pattern_and_not_a_tts_model_becomes_a_pattern_with_excludes() -> None:
    from genai_prices.types import ClauseAnd, ClauseOr, ClauseRegex, ClauseStartsWith

    not_tts = ClauseRegex(regex="^(?!.*-[tT][tT][sS](?:$|-))")
    info = model_info(
        ClauseOr(or_=[ClauseAnd(and_=[ClauseStartsWith(starts_with="gemini-2.5-pro"), not_tts])])
    )
    assert _names(info) == ([], ("gemini-2.5-pro*",), ("*-tts", "*-tts-*"))
    twice = model_info(
        ClauseOr(
            or_=[
                ClauseAnd(and_=[ClauseStartsWith(starts_with="a"), not_tts]),
                ClauseStartsWith(starts_with="b"),
            ]
        )
    )
    with pytest.raises(ConversionError):  # the excludes would apply to ``b*`` too
        _names(twice)


def model_info(match: Any) -> Any:
    """A database model with this match rule (only ``id`` and ``match`` are read)."""
    from types import SimpleNamespace

    return SimpleNamespace(id="m", match=match)
