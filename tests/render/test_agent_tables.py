"""Issue 35: the tables of a mix of agents, on literal logs (``sample_logs``' Copilot sessions
and Claude Code sessions written here): AGENT kept before any one agent's own column when a
width is fitted, each agent's own shutdown check or none, ``--calls`` in ``analyze``'s
order, session counts that say what they count, and one rule for ``~``."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analytics.cli import app
from tests.cli.test_agents import claude_session
from tests.conftest import SAMPLE_LOGS

#: The Claude Code session of two calls (``claude_session``), months before sample_logs'.
WORKED = "c1a2b3c4-0000-4000-8000-000000000001"
#: A Claude Code session that made no call: a prompt, then nothing.
IDLE = "c1a2b3c4-0000-4000-8000-000000000002"


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    """A Claude Code home: one session with two calls on 2026-02-01, one with none."""
    ago = (datetime.now(UTC) - datetime(2026, 2, 1, 10, tzinfo=UTC)) / timedelta(minutes=1)
    path = claude_session(tmp_path, [int(ago), int(ago) - 1])
    message = {"role": "user", "content": "hi"}
    line = {"type": "user", "sessionId": IDLE, "uuid": "u0", "timestamp": "2026-02-02T10:00:00Z",
            "version": "2.1.143", "cwd": "/work/demo", "message": message}  # fmt: skip
    (path.parent / f"{IDLE}.jsonl").write_text(json.dumps(line) + "\n")
    return tmp_path


def run(*args: str, columns: int = 200) -> str:
    result = CliRunner().invoke(app, ["--no-cache", *args], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


def header(text: str) -> list[str]:
    """The column headers of a table's first line."""
    return re.split(r"\s{2,}", text.splitlines()[0].strip())


@pytest.mark.parametrize("columns", [80, 120])
def test_agent_outranks_one_agents_columns(claude: Path, columns: int) -> None:
    """Before, AGENT was the first column left out at 80 and 120 columns, while BILLED USD
    (the Copilot bill, ``-`` on every Claude Code row) stayed."""
    for command in (["analyze"], ["analyze", "--calls"]):
        shown = header(run(*command, str(SAMPLE_LOGS), str(claude), columns=columns))
        assert "AGENT" in shown, (command, shown)
        assert "BILLED USD" not in shown and "SHUTDOWN CHECK" not in shown


def test_each_agent_shows_its_own_check_or_none(claude: Path) -> None:
    """Before, every Claude Code row read ``SHUTDOWN CHECK: no shutdown totals``."""
    mixed = run("analyze", str(SAMPLE_LOGS), str(claude), "--wide")
    assert "SHUTDOWN CHECK" in header(mixed)
    claude_rows = [line for line in mixed.splitlines() if "claude-code" in line]
    assert len(claude_rows) == 2
    copilot_rows = [line for line in mixed.splitlines() if "  copilot  " in line]
    assert all(re.search(r"  ok \d+=\d+  ", line) for line in copilot_rows[:3])
    assert "no shutdown totals" not in "".join(claude_rows)
    assert "SHUTDOWN CHECK" not in header(run("analyze", str(claude), "--wide"))


def test_calls_are_listed_in_the_order_of_their_sessions(claude: Path) -> None:
    """Before, ``--calls`` listed Copilot's calls by session id and the other agents' after
    them, while ``analyze`` lists sessions by start time."""
    paths = [str(SAMPLE_LOGS), str(claude)]
    sessions = json.loads(run("analyze", *paths, "-f", "json"))["sessions"]
    calls = json.loads(run("analyze", *paths, "--calls", "-f", "json"))["calls"]
    listed = list(dict.fromkeys(call["session_id"] for call in calls))
    assert listed == [s["session_id"] for s in sessions if s["llm_calls"]]
    assert listed[0] == WORKED
    table = run("analyze", *paths, "--calls", "--wide").splitlines()
    assert table[2].startswith(WORKED)


def test_session_counts_say_what_they_count(claude: Path) -> None:
    """``analyze`` lists the session that made no call, ``daily`` counts sessions with
    calls: before, 6 and 5 with no word of why."""
    paths = [str(SAMPLE_LOGS), str(claude)]
    analyzed = run("analyze", *paths)
    assert "7 sessions" in analyzed
    assert "1 of the 7 sessions made no LLM call" in " ".join(analyzed.split())
    daily = run("daily", *paths)
    total = next(line for line in daily.splitlines() if line.startswith("total"))
    assert total.split()[1] == "6"
    assert "SESSIONS counts sessions with an LLM call; 1 more session made none" in daily
    assert "made none" not in run("daily", str(SAMPLE_LOGS))


def totals(text: str) -> list[str]:
    """The cells of a table's totals row (the line after its last rule)."""
    lines = text.splitlines()
    last_rule = max(n for n, line in enumerate(lines) if line.startswith("─"))
    return re.split(r"\s{2,}", lines[last_rule + 1].strip())


def test_one_rule_for_the_estimate_mark() -> None:
    """A sum that includes estimated calls is marked ``~`` in every table: before, ``daily``
    and the per-call totals showed ``304,785`` where ``analyze`` showed ``~304,785``."""
    logs = str(SAMPLE_LOGS)
    marked = "~304,785"  # sample_logs' input tokens; one session's are estimated
    assert marked in totals(run("analyze", logs, "--wide"))
    assert marked in totals(run("daily", logs, "--wide"))
    assert marked in totals(run("analyze", logs, "--calls", "--wide"))
    day = next(line for line in run("daily", logs).splitlines() if line.startswith("2026-08-06"))
    assert "~74,067" in day and "~0.1176" in day
    periods = json.loads(run("daily", logs, "-f", "json"))
    assert periods["totals"][0]["estimated_calls"] == 4
    assert "~ estimated:" in run("daily", logs)


def test_the_first_screen_says_what_it_counts(claude: Path, tmp_path: Path) -> None:
    """The first screen's agents table counts sessions with calls and says so; its costs
    that include estimated calls are marked ``~`` (before: neither)."""
    import shutil

    home = tmp_path / "home"
    shutil.copytree(SAMPLE_LOGS / "session-state", home / ".copilot" / "session-state")
    shutil.copytree(claude / "projects", home / ".claude" / "projects")
    env = {"HOME": str(home), "COLUMNS": "120", "COPILOT_HOME": "", "CLAUDE_CONFIG_DIR": "",
           "CODEX_HOME": ""}  # fmt: skip
    result = CliRunner().invoke(app, ["--no-cache"], env=env)
    assert result.exit_code == 0, result.output
    screen = result.stdout
    assert "SESSIONS counts sessions with an LLM call; 1 more session made none" in screen
    copilot = next(line for line in screen.splitlines() if line.startswith("copilot "))
    assert copilot.split()[1:3] == ["5", "27"] and "~0.4560" in copilot
    all_time = next(line for line in screen.splitlines() if line.startswith("all time"))
    assert "~" in all_time.split("unpriced")[0]
