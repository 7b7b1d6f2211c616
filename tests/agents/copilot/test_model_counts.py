"""Models from the shutdown's per-model counts, and a cost whenever the log has totals.

Older CLIs write sub-agent messages without a model (schema doc §0b.8). The shutdown still
says how many requests each model served (``modelMetrics[*].requests.count``), so the calls
without a model get the assignment that makes the counts agree. Each case is a literal log;
the property removes the models from sub-agent messages and checks that no cost moves.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.core.pricing.call_costs import price_totals
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import RateTable, load_rate_table
from analytics.engine.analyze import Analysis, analyze
from tests.conftest import FIXTURES

FIXED_RATES = FIXTURES / "fixed-rates.toml"
T0 = datetime(2026, 3, 9, 11, 0, tzinfo=UTC)
SONNET = "claude-sonnet-4.6"
HAIKU = "claude-haiku-4.5"


class Fleet:
    """A /fleet-shaped session: main turns on the selected model, sub-agents that each send
    ``calls`` messages (with or without their model), and a shutdown with per-model counts."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def add(self, kind: str, data: dict[str, Any], **envelope: Any) -> Fleet:
        n = len(self.lines)
        stamp = (T0 + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
        self.lines.append(
            {"type": kind, "data": data, "id": f"ev-{n}", "timestamp": stamp, **envelope}
        )
        return self

    def start(self) -> Fleet:
        return self.add(
            "session.start",
            {"sessionId": "fleet-1", "copilotVersion": "1.0.10", "selectedModel": SONNET},
        )

    def turn(self) -> Fleet:
        self.add("assistant.turn_start", {"turnId": "0"})
        self.add("assistant.message", {"content": "working on it", "outputTokens": 30})
        return self.add("assistant.turn_end", {"turnId": "0"})

    def subagent(self, tool: str, name: str, calls: int, model: str | None = None) -> Fleet:
        self.add("subagent.started", {"toolCallId": tool, "agentName": name})
        for k in range(calls):
            data: dict[str, Any] = {
                "content": f"looked at file {k}",
                "outputTokens": 30,
                "parentToolCallId": tool,
            }
            if model:
                data["model"] = model
            self.add("assistant.message", data, agentId=tool)
        return self.add("subagent.completed", {"toolCallId": tool, "agentName": name})

    def shutdown(self, counts: dict[str, int]) -> Fleet:
        metrics = {
            model: {
                "requests": {"count": n, "cost": 1},
                "usage": {
                    "inputTokens": 9_000 * n,
                    "outputTokens": 30 * n,
                    "cacheReadTokens": 4_000 * n,
                    "cacheWriteTokens": 1_000 * n,
                },
            }
            for model, n in counts.items()
        }
        return self.add("session.shutdown", {"shutdownType": "routine", "modelMetrics": metrics})

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "events.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def fleet(explore: int = 2, general: int = 0, model: str | None = None) -> Fleet:
    """3 main turns, an ``explore`` sub-agent of ``explore`` calls, perhaps a
    ``general-purpose`` one; no shutdown yet."""
    log = Fleet().start().turn()
    log.subagent("tool-e", "explore", explore, model)
    if general:
        log.subagent("tool-g", "general-purpose", general, model and SONNET)
    return log.turn().turn()


def run(log: Fleet, folder: Path) -> tuple[Analysis, pl.DataFrame, pl.DataFrame]:
    result = analyze([log.write(folder)], use_cache=False)
    priced, sessions = price_analysis(result.calls, result.session_view, rates())
    return result, priced, sessions


def rates() -> RateTable:
    return load_rate_table(FIXED_RATES)


def shutdown_price(result: Analysis) -> Decimal:
    """What the shutdown's per-model totals cost, priced as blocks."""
    costs = price_totals(result.model_metrics, rates())["cost_usd"]
    assert costs.null_count() == 0
    return Decimal(costs.sum())


def test_sub_agent_calls_take_the_model_their_count_fills(tmp_path: Path) -> None:
    log = fleet(explore=2).shutdown({SONNET: 3, HAIKU: 2})
    result, priced, sessions = run(log, tmp_path / "s")
    sub = priced.filter(pl.col("kind") == "subagent")
    assert sub["model"].to_list() == [HAIKU, HAIKU]
    assert sub["model_source"].to_list() == ["counts", "counts"]
    main = priced.filter(pl.col("kind") == "main")
    assert main["model"].to_list() == [SONNET] * 3
    assert set(priced["token_source"]) == {"calibrated"}
    assert sessions["cost_usd"].item() == shutdown_price(result)
    assert sessions["unpriced_calls"].item() == 0


def models_by_kind(priced: pl.DataFrame) -> dict[str, str]:
    """The model each kind of sub-agent's calls got (one per kind)."""
    kinds = (
        priced.filter(pl.col("kind") == "subagent")
        .group_by("agent_name")
        .agg(pl.col("model").unique())
    )
    assert (kinds["model"].list.len() == 1).all()
    return {name: models[0] for name, models in kinds.iter_rows()}


def test_two_kinds_of_sub_agent_each_take_the_model_the_remaining_count_fits(
    tmp_path: Path,
) -> None:
    # explore (3 calls) can only be haiku: general-purpose (1) then fills sonnet's 4 with main
    log = fleet(explore=3, general=1).shutdown({SONNET: 4, HAIKU: 3})
    result, priced, sessions = run(log, tmp_path / "s")
    assert models_by_kind(priced) == {"explore": HAIKU, "general-purpose": SONNET}
    assert sessions["cost_usd"].item() == shutdown_price(result)


def test_a_tie_goes_to_each_kind_s_default_model(tmp_path: Path) -> None:
    # 2 explore + 2 general-purpose calls, 2 of each model beside 3 main: both ways fit the
    # counts; explore's default is the fast model, general-purpose's the main agent's.
    log = fleet(explore=2, general=2).shutdown({SONNET: 5, HAIKU: 2})
    _, priced, _ = run(log, tmp_path / "s")
    assert models_by_kind(priced) == {"explore": HAIKU, "general-purpose": SONNET}


def test_no_assignment_fits_names_the_conflict(tmp_path: Path) -> None:
    # 2 sub-agent calls, but the shutdown's haiku count is 3 and sonnet's 3 main calls + 0
    log = fleet(explore=2).shutdown({SONNET: 2, HAIKU: 3})
    result, priced, _ = run(log, tmp_path / "s")
    sub = priced.filter(pl.col("kind") == "subagent")
    assert sub["model"].to_list() == [None, None]
    messages = result.issues["message"].to_list()
    conflict = [m for m in messages if "no assignment of models" in m]
    assert len(conflict) == 1
    assert "explore (2 calls)" in conflict[0]
    assert f"{HAIKU} 3" in conflict[0] and f"{SONNET} 2" in conflict[0]


def test_without_a_shutdown_the_session_is_estimated_and_marked(tmp_path: Path) -> None:
    log = fleet(explore=2)
    _, priced, sessions = run(log, tmp_path / "s")
    sub = priced.filter(pl.col("kind") == "subagent")
    # nothing constrains them: the session's model, said so
    assert sub["model"].to_list() == [SONNET, SONNET]
    assert sub["model_source"].to_list() == ["session", "session"]
    assert set(priced["token_source"]) == {"estimated"}
    assert priced["estimate_reason"].drop_nulls().unique().to_list() == [
        "no shutdown totals in the log"
    ]
    assert sessions["cost_usd"].item() is not None
    assert sessions["unpriced_calls"].item() == 0


def test_counts_that_differ_still_give_the_exact_price_of_the_totals(tmp_path: Path) -> None:
    # the shutdown counted one haiku request more than the log shows (a lost line): the calls
    # are estimated, but their costs still add up to the totals' exact price
    log = fleet(explore=2, model=HAIKU).shutdown({SONNET: 3, HAIKU: 3})
    result, priced, sessions = run(log, tmp_path / "s")
    haiku = priced.filter(pl.col("model") == HAIKU)
    assert set(haiku["token_source"]) == {"estimated"}
    assert haiku["estimate_reason"].unique().to_list() == [
        f"calls counted for {HAIKU} (2) differ from the shutdown's requests (3):"
        " its totals are spread over the calls found"
    ]
    assert set(priced.filter(pl.col("model") == SONNET)["token_source"]) == {"calibrated"}
    assert sessions["cost_usd"].item() == shutdown_price(result)
    assert Decimal(priced["cost_usd"].sum()) == sessions["cost_usd"].item()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    explore=st.integers(min_value=1, max_value=4),
    general=st.integers(min_value=0, max_value=3),
    mains=st.integers(min_value=1, max_value=3),
)
def test_removing_sub_agent_models_never_changes_a_determined_cost(
    tmp_path_factory: pytest.TempPathFactory, explore: int, general: int, mains: int
) -> None:
    """Where the counts determine the models (explore on haiku, general-purpose on sonnet:
    a unique fit, or a tie the defaults settle), dropping the models from the sub-agent
    messages changes no session figure."""
    folder = tmp_path_factory.mktemp("fleet")

    def build(model: str | None) -> Fleet:
        log = Fleet().start()
        for _ in range(mains):
            log.turn()
        log.subagent("tool-e", "explore", explore, model and HAIKU)
        if general:
            log.subagent("tool-g", "general-purpose", general, model and SONNET)
        return log.shutdown({SONNET: mains + general, HAIKU: explore})

    _, named, named_sessions = run(build(HAIKU), folder / "named")
    _, blind, blind_sessions = run(build(None), folder / "blind")
    columns = ["model", "input_tokens", "cache_read_tokens", "output_tokens", "cost_usd"]
    assert blind.select(columns).equals(named.select(columns))
    assert blind_sessions["cost_usd"].item() == named_sessions["cost_usd"].item()
