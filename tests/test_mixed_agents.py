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


def run(*args: str) -> Any:
    """``agentcost --no-cache ARGS`` in process; any exception fails the test."""
    result = CliRunner().invoke(app, ["--no-cache", *args], catch_exceptions=False)
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
