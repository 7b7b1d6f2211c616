"""Every mix of agents' real logs, through the command line: no crash, whatever the files,
the window or the agents named.

The literal cases are mixes that crashed (a polars panic in pricing): three real files of
Copilot and Codex, and the whole real-log tree with a window that ends before the last month.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app

#: A Copilot session and two Codex sessions whose mix crashed ``analyze`` (any two ran).
CRASHED_MIX = (
    "qiaolei81-session-medium/events.jsonl",
    "codex/ingo-eichhorst__Irrlicht/replaydata/agents/codex/regressions/proposed-plan-pending/"
    "recordings/2026-05-12-19-31-54_irrlichd-unknown/transcript.jsonl",
    "codex/ingo-eichhorst__Irrlicht/replaydata/agents/codex/scenarios/2-20_interrupted-turn/"
    "recordings/2026-05-16-22-56-57_irrlichd-0.3.13+4662be4/transcript.jsonl",
)


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    """``agentcost --no-cache ARGS`` in process; any exception fails the test."""
    result = CliRunner().invoke(app, ["--no-cache", *args], catch_exceptions=False, env=env)
    assert result.exit_code in (0, 1), result.output
    return result


def total_cost(*args: str) -> Decimal:
    """The total ``cost_usd`` of ``analyze --format json ARGS``, summed over its sessions."""
    sessions = json.loads(run("analyze", *args, "--format", "json").stdout)["sessions"]
    return sum((Decimal(s["cost_usd"] or 0) for s in sessions), Decimal(0))


def test_the_three_files_that_crashed_analyze_run_and_price(real_logs: Path) -> None:
    files = [str(real_logs / name) for name in CRASHED_MIX]
    for name in files:
        if not Path(name).is_file():
            pytest.skip(f"{name} is not in this copy of the real logs")
    sessions = json.loads(run("analyze", *files, "--format", "json").stdout)["sessions"]
    assert len(sessions) == 3
    # the Copilot session and the Codex sessions price apart as they price together
    alone = sum((total_cost(name) for name in files), Decimal(0))
    assert total_cost(*files) == alone


@pytest.mark.parametrize(
    "command",
    [["analyze"], ["analyze", "--calls"], ["compare"], ["top"], ["daily"], ["monthly"]],
)
def test_the_whole_tree_with_a_window_runs(real_logs: Path, command: list[str]) -> None:
    """Before, every pricing command crashed on the whole tree ``--until 2026-05-31``."""
    run(*command, str(real_logs), "--until", "2026-05-31")


#: A real Claude Code session of claude-opus-4-7 (20 lines naming it).
OPUS_4_7 = (
    "claude-code/ingo-eichhorst__Irrlicht/replaydata/agents/claudecode/scenarios/2-3_task-list/"
    "recordings/2026-05-24-17-09-17_irrlichd-0.4.7+df8122a/transcript.jsonl"
)


def real_file(real_logs: Path, name: str) -> str:
    """``real_logs / name``, or a skip where this copy of the real logs lacks it."""
    path = real_logs / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this copy of the real logs")
    return str(path)


def test_claude_code_names_get_openrouter_prices(real_logs: Path) -> None:
    opus = real_file(real_logs, OPUS_4_7)
    calls = json.loads(
        run("analyze", opus, "--calls", "--rates", "openrouter", "-f", "json").stdout
    )
    assert {c["model"] for c in calls["calls"]} == {"claude-opus-4-7"}
    assert all(c["cost_usd"] is not None for c in calls["calls"]), calls["calls"][0]
    assert {c["priced_model"] for c in calls["calls"]} == {"anthropic/claude-opus-4.7"}
    compared = json.loads(run("compare", opus, "--format", "json").stdout)
    sellers = {row["rates"]: row for row in compared["priced_as"]}
    assert sellers["openrouter"]["priced_model"] == "anthropic/claude-opus-4.7"
    assert sellers["openrouter"]["priced_calls"] == sellers["openrouter"]["calls"]


def test_every_unpriced_call_says_why_under_the_table(real_logs: Path) -> None:
    files = [real_file(real_logs, name) for name in CRASHED_MIX]
    text = run("analyze", *files, env={"COLUMNS": "200"}).stdout
    # the two calls of a Codex model the table prices, whose log gives no cached-input figure
    assert "unpriced: gpt-5.2-codex: cache_read_tokens unknown (2 calls)" in text
    calls = run("analyze", *files, "--calls", env={"COLUMNS": "200"}).stdout
    assert "unpriced: gpt-5.2-codex: cache_read_tokens unknown (2 calls)" in calls
