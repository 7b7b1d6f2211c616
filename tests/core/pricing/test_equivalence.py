"""The model-equivalence map and ``agentcost compare`` by seller."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core.pricing.compare import SELLERS, load_seller
from analytics.core.pricing.equivalence import VENDOR, equivalences, lookup, seller_names
from analytics.core.pricing.rates import bundled_rate_tables, load_rate_table
from tests.conftest import SAMPLE_LOGS


@pytest.mark.parametrize("model", sorted(equivalences()))
def test_every_listed_name_is_a_model_of_its_table(model: str) -> None:
    entry = equivalences()[model]
    assert entry.vendor in entry.names, f"{model}: its vendor table {entry.vendor} is not named"
    assert load_rate_table("github-copilot").resolve(model) is not None, model
    for table, name in entry.names.items():
        assert table in bundled_rate_tables(), table
        assert load_rate_table(table).resolve(name) is not None, f"{table} has no {name}"


@pytest.mark.parametrize(
    ("model", "seller", "model_map", "expected"),
    [
        ("claude-sonnet-4.6", "openrouter", None, "anthropic/claude-sonnet-4.6"),
        ("claude-sonnet-4.6", "anthropic", None, "claude-sonnet-4-6"),
        ("claude-sonnet-4.6", VENDOR, None, "claude-sonnet-4-6"),
        ("claude-sonnet-4.6", "github-copilot", None, "claude-sonnet-4.6"),
        ("gemini-3.1-pro", VENDOR, None, "gemini-3.1-pro-preview"),
        ("gpt-5.4", VENDOR, None, "gpt-5.4"),
        # not sold there: the name stays, so the call is unpriced, never priced as another model
        ("claude-opus-4.5", "openrouter", None, "claude-opus-4.5"),
        ("gpt-5-mini", "openrouter", None, "gpt-5-mini"),
        # a Copilot variant is its base model
        ("claude-opus-4.7-1m-internal", "openrouter", None, "anthropic/claude-opus-4.7"),
        # --model-map first ("what if these calls had used X"), then X's name at the seller
        (
            "gpt-5-mini",
            "openrouter",
            {"gpt-5-mini": "claude-haiku-4.5"},
            "anthropic/claude-haiku-4.5",
        ),
    ],
)
def test_seller_names(
    model: str, seller: str, model_map: dict[str, str] | None, expected: str
) -> None:
    assert seller_names([model], seller, model_map) == {model: expected}


@pytest.mark.parametrize(
    ("model", "seller", "expected"),
    [
        # Claude Code's spelling of a listed model is that model, at every seller
        ("claude-opus-4-7", "openrouter", "anthropic/claude-opus-4.7"),
        ("claude-sonnet-4-6", "openrouter", "anthropic/claude-sonnet-4.6"),
        ("claude-haiku-4-5-20251001", "openrouter", "anthropic/claude-haiku-4.5"),
        # ... and not the version before it (claude-sonnet-4 is listed; 4-6 does not extend it)
        ("claude-sonnet-4-6", VENDOR, "claude-sonnet-4-6"),
        ("claude-sonnet-4-5-20250929", VENDOR, "claude-sonnet-4-5"),
        # a Bedrock id through a route
        (
            "converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0",
            "openrouter",
            "anthropic/claude-haiku-4.5",
        ),
        # a model the map does not list keeps its name
        ("claude-opus-4-8", "openrouter", "claude-opus-4-8"),
    ],
)
def test_other_agents_spellings_find_their_model(model: str, seller: str, expected: str) -> None:
    assert seller_names([model], seller) == {model: expected}


def test_lookup_prefers_the_longest_listed_name() -> None:
    entry = lookup("claude-sonnet-4.6-fast")
    assert entry is not None and entry.names["anthropic"] == "claude-sonnet-4-6"
    dated = lookup("claude-sonnet-4-20250514")  # a dated release of claude-sonnet-4
    assert dated is not None and dated.names["anthropic"] == "claude-sonnet-4-0"
    assert lookup("claude-sonnet") is None
    assert lookup("qwen3:0.6b") is None


def test_the_vendor_table_holds_every_vendor_model() -> None:
    vendor = load_seller(VENDOR)
    assert vendor.name == VENDOR
    for name in ("claude-sonnet-4-6", "gpt-5.4", "gemini-3.1-pro-preview", "deepseek-chat"):
        assert vendor.resolve(name) is not None, name


def test_default_compare_prices_every_column_and_names_the_models() -> None:
    result = CliRunner().invoke(app, ["compare", str(SAMPLE_LOGS), "-f", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    sessions = document["sessions"]
    for seller in SELLERS:
        assert any(s[seller] is not None for s in sessions), f"{seller} is all unpriced"
        assert sum(s[f"{seller}_unpriced_calls"] for s in sessions) <= 1  # the cut-off call
    priced_as = {(r["rates"], r["model"]): r["priced_model"] for r in document["priced_as"]}
    assert priced_as[("openrouter", "claude-sonnet-4.6")] == "anthropic/claude-sonnet-4.6"
    assert priced_as[("vendor", "claude-haiku-4.5")] == "claude-haiku-4-5"
    assert {r["seller"] for r in document["priced_as"]} == {
        "github-copilot",
        "anthropic",
        "openrouter",
    }
    assert all(r["checked"] and r["source"] for r in document["priced_as"])
    text = CliRunner().invoke(app, ["compare", str(SAMPLE_LOGS)], env={"COLUMNS": "200"}).stdout
    assert "openrouter: claude-sonnet-4.6 as anthropic/claude-sonnet-4.6 (21 calls)" in text
    assert "vendor: claude-sonnet-4.6 as anthropic claude-sonnet-4-6" in text
    assert "prices checked: github-copilot 2026-" in text


def test_model_map_asks_what_if_at_every_seller() -> None:
    result = CliRunner().invoke(
        app,
        [
            "compare",
            str(SAMPLE_LOGS),
            "-f",
            "json",
            "--model-map",
            "claude-sonnet-4.6=claude-haiku-4.5",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["priced_as"]
    sonnet = {r["rates"]: r["priced_model"] for r in rows if r["model"] == "claude-sonnet-4.6"}
    assert sonnet == {
        "github-copilot": "claude-haiku-4.5",
        "vendor": "claude-haiku-4-5",
        "openrouter": "anthropic/claude-haiku-4.5",
    }
