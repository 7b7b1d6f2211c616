"""Bare ``agentcost``: the first screen, ``agentcost issues`` and ``--show-issues``."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core.home import home_screen
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rate_table
from analytics.engine.analyze import analyze
from tests.cli.test_analyze import write_session
from tests.conftest import SAMPLE_LOGS


def test_home_screen_figures() -> None:
    result = analyze([SAMPLE_LOGS])
    calls, sessions = price_analysis(
        result.calls, result.session_view, load_rate_table("github-copilot")
    )
    # 2026-08-06 is a Thursday: its week started on Monday 2026-08-03, its month on 08-01.
    screen = home_screen(calls, sessions, ZoneInfo("UTC"), date(2026, 8, 6))
    periods = {row["label"]: row for row in screen.periods.iter_rows(named=True)}
    assert periods["today"]["calls"] == 6
    assert periods["this week"]["since"] == date(2026, 8, 3)
    assert periods["this week"]["calls"] == 6 + 4 + 2 + 6
    assert periods["this month"]["calls"] == 18  # up to today: not the 9 calls of 2026-08-07
    assert periods["all time"]["calls"] == 27
    assert periods["all time"]["cost_usd"] == sessions["cost_usd"].sum()
    assert periods["today"]["unpriced_calls"] == 1
    assert isinstance(periods["today"]["billed_usd"], Decimal)
    assert screen.sessions.height == 5
    costs = screen.sessions["cost_usd"].to_list()
    assert costs == sorted(costs, reverse=True)
    assert screen.models["model"].to_list() == ["claude-sonnet-4.6", "claude-haiku-4.5"]
    assert screen.models["calls"].sum() == 27
    # the one call without a cost, and why
    assert screen.unpriced.rows() == [("claude-sonnet-4.6", "output_tokens unknown", 1)]


def test_bare_agentcost_prints_the_first_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(SAMPLE_LOGS))
    result = CliRunner().invoke(app, [], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    text = result.stdout
    for label in ("today", "this week", "this month", "all time"):
        assert label in text
    for command in ("agentcost daily", "agentcost weekly", "agentcost monthly"):
        assert command in text
    assert "BILLED USD: the Copilot bill the logs record" in text
    assert "costliest sessions (detail: agentcost analyze" in text
    assert "model mix (detail: agentcost daily --by model)" in text
    assert "38b50b0c" in text  # the costliest sample session
    assert "unpriced: claude-sonnet-4.6: output_tokens unknown (1 call)" in text
    assert "agentcost issues" in result.stderr


def test_help_is_fast_and_imports_nothing_heavy() -> None:
    code = (
        "import sys, analytics.cli; print(sorted({'polars', 'plotly', 'rich'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    agentcost = Path(sys.executable).with_name("agentcost")
    help_run = subprocess.run([agentcost, "--help"], capture_output=True, text=True, check=True)
    assert "Usage" in help_run.stdout  # and the disk is warm
    # CPU seconds, not wall-clock: the suite shares the machine, and waiting for a core is
    # not agentcost's time. On an idle machine the wall-clock time is about the same.
    cpu = _child_cpu([str(agentcost), "--help"])
    # A shared machine can run several times slower than usual, CPU seconds included: the
    # budget scales with a fixed loop's CPU time, measured now (0.33 s on a quiet machine).
    slower = max(1.0, _child_cpu([sys.executable, "-c", _LOOP]) / 0.33)
    assert cpu < 0.5 * slower, f"agentcost --help took {cpu:.2f} CPU seconds ({slower:.1f}x)"


#: A fixed amount of pure-Python work, for the machine's speed at the moment.
_LOOP = "s = 0\nfor i in range(3_000_000):\n    s += i"


def _child_cpu(command: list[str]) -> float:
    """CPU seconds (user and system) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_issues_command_lists_file_line_severity_message() -> None:
    result = CliRunner().invoke(app, ["issues", str(SAMPLE_LOGS)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["FILE", "LINE", "SEVERITY", "MESSAGE"]
    # The row of the sample's invalid line, whatever the checkout's path (it wraps the FILE
    # column on a deep one), named relative to the working directory.
    row = r"^sample_logs/\S+/events\.jsonl +23 +error +invalid JSON"
    assert re.search(row, result.stdout, re.M)
    assert "2 issues" in result.stdout
    document = json.loads(
        CliRunner().invoke(app, ["issues", str(SAMPLE_LOGS), "-f", "json"]).stdout
    )
    assert [i["severity"] for i in document["issues"]] == ["error", "warning"]
    strict = CliRunner().invoke(app, ["issues", str(SAMPLE_LOGS), "--strict"])
    assert strict.exit_code == 1


def test_other_commands_name_the_issues_command() -> None:
    result = CliRunner().invoke(app, ["analyze", str(SAMPLE_LOGS)])
    assert "2 issues (1 error, 1 warning) in the input; agentcost issues lists them" in (
        result.stderr
    )


@pytest.mark.parametrize(
    "command",
    [
        ["analyze"],
        ["analyze", "-f", "json"],
        ["analyze", "--calls", "-f", "csv"],
        ["compare", "-f", "json"],
        ["daily", "-f", "json"],
        ["top", "--no-behaviour", "-f", "json"],
        ["rates", "learn"],
    ],
    ids=" ".join,
)
def test_show_issues_prints_the_issues_table_on_stderr(command: list[str]) -> None:
    env = {"COLUMNS": "200"}
    shown = CliRunner().invoke(app, [*command, str(SAMPLE_LOGS), "--show-issues"], env=env)
    assert shown.exit_code == 0, shown.output
    plain = CliRunner().invoke(app, [*command, str(SAMPLE_LOGS)], env=env)
    assert shown.stdout == plain.stdout  # stdout is the report alone, as without the option
    listed = CliRunner().invoke(app, ["issues", str(SAMPLE_LOGS)], env=env)
    assert shown.stderr == listed.stdout  # the table of agentcost issues, and nothing else
    assert "agentcost issues lists them" in plain.stderr
    if "json" in command:
        assert len(json.loads(shown.stdout)["issues"]) == 2


def test_show_issues_with_strict_still_fails_and_without_issues_prints_nothing(
    tmp_path: Path,
) -> None:
    strict = CliRunner().invoke(app, ["analyze", str(SAMPLE_LOGS), "--show-issues", "--strict"])
    assert strict.exit_code == 1
    assert strict.stderr.startswith("FILE") and "2 issues" in strict.stderr
    assert strict.stderr.rstrip().endswith("agentcost: error: --strict: the input has issues")
    clean = write_session(tmp_path, "s1")
    quiet = CliRunner().invoke(app, ["analyze", str(clean), "--show-issues", "--strict"])
    assert (quiet.exit_code, quiet.stderr) == (0, "")
