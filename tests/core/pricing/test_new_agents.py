"""Pricing the calls of pi, Gemini CLI, OpenCode, Kimi Code and Antigravity: the model names
their real logs write, Gemini's thoughts at output prices, and the local-provider rule (a call
served by LM Studio, Ollama ... costs exactly 0 and says ``local``). Literal frames with exact
expectations, then properties over any such calls."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.core.pricing.call_costs import LOCAL_PROVIDERS, price_by_table
from analytics.core.pricing.compare import compare_tables, load_seller
from analytics.core.pricing.price import price_analysis, price_calls
from analytics.core.pricing.rates import load_rate_table, parse_rate_table
from analytics.core.schema import AGENT_CALLS, CALL_TOKENS, CALLS, SESSIONS, combine, padded

COPILOT = load_rate_table("github-copilot")
OPENAI = load_rate_table("openai")
GOOGLE = load_rate_table("google")
SCHEMA = combine(CALLS, CALL_TOKENS, AGENT_CALLS)
WHEN = datetime(2026, 10, 2, 3, 5, tzinfo=UTC)
#: Every vendor table a call of another agent is looked up in, as an unpriced call names them.
NOT_IN_ANY = (
    "model not in the bedrock, anthropic, openai, google, moonshotai, openrouter or deepseek "
    "rate tables"
)


def call(model: str | None, agent: str = "opencode", **values: Any) -> dict[str, Any]:
    """One call of another agent than Copilot: 1,000 input tokens (400 of them cache reads)
    and 100 output tokens (60 of them reasoning), unless given."""
    row: dict[str, Any] = {
        "session_id": "s1",
        "model": model,
        "agent": agent,
        "input_tokens": 1_000,
        "cache_read_tokens": 400,
        "cache_write_tokens": 0,
        "output_tokens": 100,
        "reasoning_tokens": 60,
        "start_time": WHEN,
        "user_initiated": True,
    }
    return row | values


def frame(*rows: dict[str, Any]) -> pl.DataFrame:
    """The rows as CALLS + CALL_TOKENS + AGENT_CALLS, every other column null."""
    columns = {k for row in rows for k in row}
    literal = pl.DataFrame(
        [{k: row.get(k) for k in columns} for row in rows],
        schema={k: SCHEMA[k] for k in SCHEMA if k in columns},
    )
    return padded(literal, SCHEMA)


def sessions(priced: pl.DataFrame) -> pl.DataFrame:
    ids = priced["session_id"].unique(maintain_order=True)
    return padded(
        pl.DataFrame(
            {"session_id": ids, "start_time": [WHEN] * len(ids), "llm_calls": [1] * len(ids)}
        ),
        SESSIONS,
    )


# ------------------------------------------------------------------------------ local rule


@pytest.mark.parametrize(
    ("provider", "model", "tokens"),
    [
        # OpenCode's LM Studio call in the real logs
        ("lmstudio", "gemma-4-e2b-it-uncensored", {}),
        ("Ollama", "qwen3:0.6b", {}),  # any case
        ("ollama", "gpt-5.4", {}),  # a model the tables price: still served for nothing
        ("llama.cpp", "local-model", {"input_tokens": None, "cache_read_tokens": None}),
        ("vllm", None, {}),  # no model named
    ],
)
@pytest.mark.parametrize("table", [COPILOT, OPENAI, GOOGLE], ids=lambda t: t.name)
def test_a_call_served_locally_costs_exactly_zero_and_says_local(
    provider: str, model: str | None, tokens: dict[str, Any], table: Any
) -> None:
    out = price_calls(frame(call(model, provider=provider, **tokens)), table).row(0, named=True)
    assert out["cost_usd"] == Decimal(0)
    parts = ("input", "cache_read", "cache_write", "output", "request")
    assert all(out[f"{p}_cost_usd"] == Decimal(0) for p in parts)
    assert (out["cost_source"], out["price_from"]) == ("local", provider)
    assert out["priced_model"] == model
    assert out["unpriced_reason"] is None
    assert out["cache_write_rate_assumed"] is None


@pytest.mark.parametrize(
    ("provider", "model", "source", "price_from", "cost"),
    [
        # a hosted service of local software bills: not local
        ("ollama-cloud", "gpt-oss:120b", None, None, None),
        # pi's ChatGPT-account provider: the model at OpenAI's list price
        ("openai-codex", "gpt-5.5", "vendor_api", "openai", "0.0062"),
        (None, "gpt-5.5", "vendor_api", "openai", "0.0062"),
    ],
)
def test_other_providers_are_priced_as_before(
    provider: str | None, model: str, source: str | None, price_from: str | None, cost: str | None
) -> None:
    # gpt-5.5: $5/M input, $0.50/M cached, $30/M output: 600 x 5 + 400 x 0.5 + 100 x 30
    out = price_calls(frame(call(model, provider=provider)), COPILOT).row(0, named=True)
    assert (out["cost_source"], out["price_from"]) == (source, price_from)
    assert out["cost_usd"] == (None if cost is None else Decimal(cost))
    if cost is None:
        assert out["unpriced_reason"] == NOT_IN_ANY


def test_a_session_of_local_calls_costs_zero_and_says_local() -> None:
    rows = frame(
        call("gemma-4-e2b-it-uncensored", provider="lmstudio", session_id="local"),
        call("qwen/qwen3-4b", provider="lmstudio", session_id="mixed"),
        call("gemini-2.5-pro", agent="gemini-cli", session_id="mixed"),
    )
    priced, per_session = price_analysis(rows, sessions(rows), COPILOT)
    by_id = {row["session_id"]: row for row in per_session.iter_rows(named=True)}
    assert by_id["local"]["cost_usd"] == Decimal(0)
    assert by_id["local"]["cost_source"] == "local"
    assert by_id["local"]["unpriced_calls"] == 0
    assert list(by_id["local"]["unpriced_models"]) == []
    # a session of local and API calls: the API calls' cost alone; an API price is named
    assert by_id["mixed"]["cost_usd"] == priced["cost_usd"][2]
    assert by_id["mixed"]["cost_source"] == "vendor_api"


def test_compare_puts_no_api_price_on_a_local_call() -> None:
    rows = frame(
        call("gemma-4-e2b-it-uncensored", provider="lmstudio", session_id="local"),
        call("gpt-5.4", provider="ollama", session_id="local"),
        call("gemini-2.5-pro", agent="gemini-cli", session_id="api"),
    )
    tables = [load_seller(name) for name in ("github-copilot", "vendor", "openrouter")]
    found = compare_tables(rows, sessions(rows), tables)
    local = found.sessions.filter(pl.col("session_id") == "local").row(0, named=True)
    for table in tables:
        assert local[table.name] == Decimal(0)
        assert local[f"{table.name}_unpriced_calls"] == 0
    rows_local = found.priced_as.filter(pl.col("local"))
    assert rows_local.height == 2 * len(tables)
    assert rows_local["seller"].null_count() == rows_local.height  # sold by no table
    assert (rows_local["priced_calls"] == rows_local["calls"]).all()
    # another agent's call is sold, under github-copilot too, by its vendor's table
    api = found.priced_as.filter(~pl.col("local") & (pl.col("rates") != "openrouter"))
    assert api["seller"].to_list() == ["google", "google"]


@given(
    st.sampled_from(LOCAL_PROVIDERS),
    st.sampled_from(["gemma-4-e2b-it-uncensored", "gpt-5.4", "gemini-2.5-pro", "kimi-k2.7-code"]),
    st.lists(st.one_of(st.none(), st.integers(0, 2_000_000)), min_size=5, max_size=5),
)
@settings(max_examples=40, deadline=None)
def test_local_calls_cost_zero_and_leave_the_other_calls_alone(
    provider: str, model: str, counts: list[int | None]
) -> None:
    names = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    tokens = dict(zip((*names, "reasoning_tokens"), counts, strict=True))
    others = [call("gpt-5.4", session_id="a"), call("kimi-k2.7-code", agent="kimi")]
    mixed = frame(others[0], call(model, provider=provider, **tokens), others[1])
    priced = price_calls(mixed, COPILOT)
    assert priced["cost_usd"][1] == Decimal(0)
    assert priced["cost_source"][1] == "local"
    alone = price_calls(frame(*others), COPILOT)
    assert priced["cost_usd"].gather([0, 2]).to_list() == alone["cost_usd"].to_list()


# ------------------------------------------------------------------------------ model names


#: Every model name the real logs of the five agents write (``../shared/real_logs/<folder>``),
#: what it prices as and from which table (None: unpriced), and the cost of :func:`call` (600
#: uncached, 400 cached, 100 output tokens of which 60 reasoning) at that price.
REAL_LOG_MODELS = [
    # pi via openai-codex: gpt-5.5 $5/M input, $0.50/M cached, $30/M output
    ("pi", "gpt-5.5", "gpt-5.5", "openai", "0.0062"),
    # gpt-5.4-mini $0.75/M, $0.075/M cached, $4.50/M
    ("pi", "gpt-5.4-mini", "gpt-5.4-mini", "openai", "0.00093"),
    ("pi", "irrlicht-turn-abort-unsupported-model", None, None, None),
    # Gemini CLI: thoughts at the output price; gemini-2.5-pro $1.25/M, $0.125/M, $10/M
    ("gemini-cli", "gemini-2.5-pro", "gemini-2.5-pro", "google", "0.00180"),
    # gemini-3.5-flash: $1.50/M, $0.15/M cached, $9/M
    ("gemini-cli", "gemini-3.5-flash", "gemini-3.5-flash", "google", "0.00186"),
    # OpenCode's LM Studio model, were it served elsewhere: no table sells it
    ("opencode", "gemma-4-e2b-it-uncensored", None, None, None),
    # Kimi Code: the provider's id and the config alias; $0.95/M, $0.19/M cached, $4/M
    ("kimi", "kimi-k2.7-code", "kimi-k2.7-code", "moonshotai", "0.001046"),
    ("kimi", "moonshot-ai/kimi-k2.7-code", "kimi-k2.7-code", "moonshotai", "0.001046"),
    # Antigravity's display label and response model of slot M16; $2/M, $0.20/M cached, $12/M
    ("antigravity", "Gemini 3.1 Pro (High)", "gemini-3.1-pro-preview", "google", "0.00248"),
    ("antigravity", "gemini-pro-default", None, None, None),
]


@pytest.mark.parametrize(("folder", "model", "priced_as", "price_from", "cost"), REAL_LOG_MODELS)
def test_the_new_agents_models_are_priced_at_their_vendors_list_price(
    folder: str, model: str, priced_as: str | None, price_from: str | None, cost: str | None
) -> None:
    out = price_calls(frame(call(model, agent=folder)), COPILOT).row(0, named=True)
    assert (out["priced_model"], out["price_from"]) == (priced_as, price_from)
    assert out["cost_source"] == (None if cost is None else "vendor_api")
    assert out["cost_usd"] == (None if cost is None else Decimal(cost))
    assert out["unpriced_reason"] == (NOT_IN_ANY if cost is None else None)


@pytest.mark.parametrize(("folder", "model"), [row[:2] for row in REAL_LOG_MODELS])
def test_the_listed_model_names_are_the_real_logs_own(
    real_logs: Path, folder: str, model: str
) -> None:
    home = real_logs / folder
    if not home.is_dir():
        pytest.skip(f"no {folder} logs in this copy of the real logs")
    kept = {"README.md", "GIT_BLOBS", "SHA256SUMS"}
    files = [p for p in home.rglob("*") if p.is_file() and p.name not in kept]
    assert any(model.encode() in p.read_bytes() for p in files), model


@pytest.mark.parametrize(
    ("model", "priced_as", "cost"),
    [
        # names the agents write elsewhere: $0.50/M, $0.05/M cached, $3/M
        ("gemini-3-flash-preview", "gemini-3-flash-preview", "0.00062"),
        ("gemini-3.1-pro-preview", "gemini-3.1-pro-preview", "0.00248"),
        ("gemini-3.1-pro-high", "gemini-3.1-pro-preview", "0.00248"),
    ],
)
def test_other_gemini_names_are_priced(model: str, priced_as: str, cost: str) -> None:
    out = price_by_table(frame(call(model)), GOOGLE).row(0, named=True)
    assert (out["priced_model"], out["cost_usd"]) == (priced_as, Decimal(cost))


def test_kimi_cost_worked_out() -> None:
    # 600 uncached x $0.95/M + 400 cached x $0.19/M + 100 output x $4/M
    expected = (600 * Decimal("0.95") + 400 * Decimal("0.19") + 100 * Decimal(4)) / 10**6
    out = price_calls(frame(call("kimi-k2.7-code", agent="kimi")), COPILOT)
    assert out["cost_usd"].item() == expected


def test_gemini_thoughts_are_output_tokens_at_the_output_price() -> None:
    # the same call with its 100 output tokens all thoughts, none, or unknown: one cost
    costs = {
        price_by_table(frame(call("gemini-2.5-pro", reasoning_tokens=r)), GOOGLE)["cost_usd"].item()
        for r in (0, 60, 100, None)
    }
    assert costs == {Decimal("0.00180")}


def test_a_gemini_prompt_above_200k_is_priced_whole_at_the_long_context_tier() -> None:
    # gemini-2.5-pro above 200K: $2.50/M input, $0.25/M cached, $15/M output
    row = call("gemini-2.5-pro", input_tokens=200_001, cache_read_tokens=1, output_tokens=10)
    expected = (200_000 * Decimal("2.5") + Decimal("0.25") + 10 * 15) / 10**6
    assert price_by_table(frame(row), GOOGLE)["cost_usd"].item() == expected


@pytest.mark.parametrize(
    "model",
    [
        "kimi-for-coding",  # Kimi's subscription model: no per-token price
        "kimi-code/kimi-for-coding",
        "MODEL_PLACEHOLDER_M50",  # Antigravity's checkpoint model, named nowhere
        "gemini-2.5-pro-preview-tts-x",  # a TTS model is not Gemini 2.5 Pro
    ],
)
def test_models_without_a_price_are_unpriced_with_the_reason(model: str) -> None:
    out = price_calls(frame(call(model)), COPILOT).row(0, named=True)
    assert out["cost_usd"] is None
    assert out["cost_source"] is None
    assert out["unpriced_reason"] == NOT_IN_ANY


# ------------------------------------------------------------------------------ excludes


def test_a_pattern_does_not_match_what_its_excludes_match() -> None:
    table = parse_rate_table(
        """unit = "usd_per_million_tokens"
currency = "USD"
source = "test"
checked = "2026-12-01"
[models."m"]
patterns = ["m-*"]
excludes = ["*-TTS", "*-tts-*"]
[[models."m".prices]]
input = "1"
output = "2"
""",
        name="t",
    )
    found = {name: table.resolve(name) for name in ("m-1", "m-1-tts", "m-tts-2", "m-ttsx")}
    assert {name: m is not None for name, m in found.items()} == {
        "m-1": True,
        "m-1-tts": False,
        "m-tts-2": False,
        "m-ttsx": True,
    }
