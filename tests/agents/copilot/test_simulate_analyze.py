"""``agentcost simulate`` output through ``agentcost analyze`` gives the ground truth back.

Every session's call counts equal the generator's. Sessions that ended normally also give back
their exact tokens and bill. A crashed session's last process wrote no shutdown and no store
rows, so the log cannot hold its full truth: there the counts must still be exact and the
token totals must be marked as estimated.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest

from analytics.agents.copilot.simulate import SimulationParams, simulate
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rate_table
from analytics.engine.analyze import analyze

COUNTS = [
    "llm_calls",
    "main_calls",
    "subagent_calls",
    "compaction_calls",
    "interrupted_calls",
    "processes",
    "user_messages",
]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, dict[str, Any]]:
    root = tmp_path_factory.mktemp("simulated")
    params = SimulationParams(
        seed=11,
        sessions=30,
        resume_probability=0.3,
        crash_probability=0.2,
        subagent_probability=0.2,
        compaction_threshold=40_000,
    )
    simulate(root, params, store=True)
    result = analyze([root])
    _, sessions = price_analysis(
        result.calls, result.session_view, load_rate_table("github-copilot")
    )
    truth = json.loads((root / "ground_truth.json").read_text())
    sessions_truth = {s["session_id"]: s for s in truth["sessions"]}
    return sessions, sessions_truth


def test_every_session_is_found_with_its_exact_counts(
    simulated: tuple[pl.DataFrame, dict[str, Any]],
) -> None:
    sessions, truth = simulated
    assert sorted(sessions["session_id"]) == sorted(truth)
    for row in sessions.iter_rows(named=True):
        expected = truth[row["session_id"]]
        assert {c: row[c] for c in COUNTS} == {c: expected[c] for c in COUNTS}


def test_sessions_that_ended_normally_give_back_their_tokens_and_bill(
    simulated: tuple[pl.DataFrame, dict[str, Any]],
) -> None:
    sessions, truth = simulated
    normal = [
        row for row in sessions.iter_rows(named=True) if not truth[row["session_id"]]["crashed"]
    ]
    assert len(normal) > 10
    for row in normal:
        expected = truth[row["session_id"]]
        models = expected["models"].values()
        for column in ["input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"]:
            # the shutdown's totals (compaction calls left out) are the check ...
            assert row[f"logged_{column}"] == sum(m[column] for m in models), column
        # ... and the session's own total is every call's, compactions included
        calls_input = sum(c["input_tokens"] for c in expected["calls"])
        assert row["input_tokens"] == row["calls_input_tokens"] == calls_input
        assert int(row["billed_nano_aiu"]) == expected["total_nano_aiu"]
        assert row["calls_agree"] is True


def test_crashed_sessions_mark_their_token_totals_as_estimated(
    simulated: tuple[pl.DataFrame, dict[str, Any]],
) -> None:
    sessions, truth = simulated
    crashed = [row for row in sessions.iter_rows(named=True) if truth[row["session_id"]]["crashed"]]
    assert crashed
    for row in crashed:
        assert row["status"] == "interrupted"
        assert row["token_sources"]["estimated"] > 0
