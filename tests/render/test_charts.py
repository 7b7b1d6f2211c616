"""Issue 21, item 2: charts that tell agents apart, and shares that never exceed the whole.

The context-growth chart draws each kind of agent as its own series over its own fixed part;
``top`` never gives an item more than its session cost.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
from typer.testing import CliRunner

from analytics.cache.priced_tables import priced_tables
from analytics.cli.commands import app
from analytics.core.pricing.rates import load_rates
from analytics.engine.analyze import analyze
from analytics.render import plots
from tests.conftest import SAMPLE_LOGS

#: A /fleet session in miniature: main calls over a 19.6k fixed part, sub-agent calls of
#: 8.3k tokens over their own 5k.
FLEET = pl.DataFrame(
    {
        "call_index": [1, 2, 3, 4, 5],
        "kind": ["main", "subagent", "subagent", "main", "compaction"],
        "agent_name": [None, "explore", "explore", None, None],
        "model": ["claude-sonnet-4.6"] * 5,
        "input_tokens": [21_000, 8_300, 8_900, 24_000, 24_500],
        "token_source": ["calibrated"] * 5,
        "fixed_part_tokens": [19_600, 5_000, 5_000, 19_600, None],
    }
)


def series(spec: dict[str, Any]) -> dict[str, tuple[list[int], list[int]]]:
    """Each trace's (x, y) by name."""
    return {trace["name"]: (list(trace["x"]), list(trace["y"])) for trace in spec["data"]}


def points(traces: list[dict[str, Any]], prefix: str) -> dict[int, int]:
    """The known (x, y) points of the traces whose name starts with ``prefix``."""
    return {
        x: y
        for trace in traces
        if trace["name"].startswith(prefix)
        for x, y in zip(trace["x"], trace["y"], strict=True)
        if y is not None
    }


def test_each_kind_of_agent_is_its_own_series_over_its_own_fixed_part() -> None:
    drawn = series(plots.context_growth_spec(FLEET))
    assert drawn["input tokens of the call, main agent (calibrated)"] == ([1, 4], [21_000, 24_000])
    assert drawn["input tokens of the call, sub-agent explore (calibrated)"] == (
        [2, 3],
        [8_300, 8_900],
    )
    assert drawn["input tokens of the call, compaction (calibrated)"] == ([5], [24_500])
    assert drawn["fixed part, main agent: 19,600 tokens"] == ([1, 4], [19_600, 19_600])
    assert drawn["fixed part, sub-agent explore: 5,000 tokens"] == ([2, 3], [5_000, 5_000])
    assert not plots.context_growth_spec(FLEET)["layout"].get("shapes")  # no shared band


def test_the_stated_fixed_part_is_the_main_agents_alone() -> None:
    drawn = series(plots.context_growth_spec(FLEET, fixed_tokens=18_000))
    assert drawn["fixed part, main agent: 18,000 tokens"] == ([1, 4], [18_000, 18_000])
    assert drawn["fixed part, sub-agent explore: 5,000 tokens"] == ([2, 3], [5_000, 5_000])


def test_a_real_fleet_session_draws_no_call_below_its_own_fixed_part(real_logs: Path) -> None:
    """The real /fleet excerpt: every call stands on or above its own agent's fixed part."""
    result = analyze([real_logs / "darthmolen-sdk-wire-usage-excerpts"], use_cache=False)
    calls = priced_tables(result, load_rates("github-copilot"), {}, ["calls"])["calls"]
    fleet = calls.filter(pl.col("session_id").str.starts_with("spike-07"))
    assert fleet.filter(pl.col("kind") == "subagent").height > 0
    drawn = plots.context_growth_spec(fleet)["data"]
    names = [t["name"] for t in drawn if t["name"].startswith("input tokens of the call")]
    assert any(", main agent (" in name for name in names)
    assert any(", sub-agent" in name for name in names)
    fixed, inputs = points(drawn, "fixed part"), points(drawn, "input tokens of the call")
    assert fixed
    assert all(inputs[x] >= size for x, size in fixed.items())


def test_no_item_of_top_costs_more_than_its_session() -> None:
    """sample_logs holds a session whose last call has input costs but no whole cost (its
    output is unknown): it is unpriced in the session, so it gives its items nothing."""
    runner = CliRunner()
    top = runner.invoke(app, ["top", str(SAMPLE_LOGS), "--format", "json", "--limit", "100"])
    sessions = runner.invoke(app, ["analyze", str(SAMPLE_LOGS), "--format", "json"])
    cost = {
        row["session_id"]: Decimal(row["cost_usd"] or 0)
        for row in json.loads(sessions.stdout)["sessions"]
    }
    items = json.loads(top.stdout)["items"]
    assert items
    for item in items:
        share = Decimal(item["cost_usd"] or 0)
        assert share <= cost[item["session_id"]], (item["label"], share)
    spent: dict[str, Decimal] = {}
    for item in items:
        spent[item["session_id"]] = spent.get(item["session_id"], Decimal(0)) + Decimal(
            item["cost_usd"] or 0
        )
    assert all(total <= cost[session] for session, total in spent.items())
