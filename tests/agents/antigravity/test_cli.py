"""The real database through ``agentcost analyze FILE --calls --format json``: discovery
claims it, the calls reach the core's contracts and pricing, the README's figures hold, the
Gemini 3.1 Pro calls are priced at Google's list prices and the checkpoint call is unpriced
with its reason (never $0); nothing is written beside the database."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from tests.agents.antigravity.test_facts import facts_params, figures


@pytest.mark.parametrize(("path", "row"), facts_params())
def test_the_real_database_through_analyze(path: Path, row: dict[str, str]) -> None:
    before = sorted(path.parent.iterdir())
    result = CliRunner().invoke(app, ["--no-cache", "analyze", str(path), "--calls", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert sorted(path.parent.iterdir()) == before
    calls = [c for c in json.loads(result.stdout)["calls"] if c["source_file"] == str(path)]
    expected = figures(row["usage over calls"])
    assert len(calls) == 4
    assert sum(c["input_tokens"] for c in calls) == expected["input"]
    assert sum(c["output_tokens"] for c in calls) == expected["out"]
    assert sum(c["reasoning_tokens"] for c in calls) == expected["thinking"]
    assert sum(c["cache_read_tokens"] for c in calls) == expected["cr"]
    priced = [c for c in calls if c["model"] == "Gemini 3.1 Pro (High)"]
    assert sum(Decimal(str(c["cost_usd"])) for c in priced) == Decimal("0.0470754")
    (checkpoint,) = [c for c in calls if c["model"] == "MODEL_PLACEHOLDER_M50"]
    assert checkpoint["cost_usd"] is None
    assert "not in the" in checkpoint["unpriced_reason"]
    assert {c["provider"] for c in calls} == {"google"}
