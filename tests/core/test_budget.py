"""Budgets: the budget month, spent/left/projection, the config file, and the commands."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core import registry
from analytics.core.budget import (
    Budget,
    BudgetStatus,
    Unit,
    budget_month,
    budget_status,
    load_budget,
    parse_budget,
)
from analytics.core.errors import ConfigError
from analytics.core.schema import MONEY
from analytics.render.budget_text import budget_lines, statusline
from tests.cli.test_analyze import write_session
from tests.conftest import SAMPLE_LOGS


@pytest.mark.parametrize(
    ("today", "start_day", "expected"),
    [
        (date(2026, 3, 10), 1, (date(2026, 3, 1), date(2026, 4, 1))),
        (date(2026, 3, 31), 1, (date(2026, 3, 1), date(2026, 4, 1))),
        (date(2026, 3, 10), 15, (date(2026, 2, 15), date(2026, 3, 15))),
        (date(2026, 3, 15), 15, (date(2026, 3, 15), date(2026, 4, 15))),
        (date(2026, 3, 14), 15, (date(2026, 2, 15), date(2026, 3, 15))),
        (date(2026, 1, 5), 28, (date(2025, 12, 28), date(2026, 1, 28))),  # across a year
        (date(2026, 12, 31), 28, (date(2026, 12, 28), date(2027, 1, 28))),
        (date(2028, 2, 29), 1, (date(2028, 2, 1), date(2028, 3, 1))),  # a leap day
    ],
)
def test_budget_month(today: date, start_day: int, expected: tuple[date, date]) -> None:
    assert budget_month(today, start_day) == expected


def calls(*days_and_costs: tuple[str, str | None], agent: str = "copilot") -> pl.DataFrame:
    """Priced calls of one session of ``agent``: (UTC start, cost or None for unpriced)."""
    return pl.DataFrame(
        {
            "session_id": ["s"] * len(days_and_costs),
            "agent": [agent] * len(days_and_costs),
            "event_seq": list(range(len(days_and_costs))),
            "start_time": [
                datetime.fromisoformat(d).replace(tzinfo=UTC) for d, _ in days_and_costs
            ],
            "model": ["m"] * len(days_and_costs),
            "input_tokens": [10] * len(days_and_costs),
            "cache_read_tokens": [0] * len(days_and_costs),
            "cache_write_tokens": [0] * len(days_and_costs),
            "output_tokens": [1] * len(days_and_costs),
            "token_source": ["observed"] * len(days_and_costs),
            "cost_usd": pl.Series([c and Decimal(c) for _, c in days_and_costs], dtype=MONEY),
            "billed_nano_aiu": pl.Series([None] * len(days_and_costs), dtype=pl.Int64),
        }
    )


SESSIONS = pl.DataFrame(
    {"session_id": ["s"], "billed_nano_aiu": [None], "repository": [None], "cwd": ["/w"]},
    schema={
        "session_id": pl.String,
        "billed_nano_aiu": pl.Int64,
        "repository": pl.String,
        "cwd": pl.String,
    },
)
UTC_ZONE = ZoneInfo("UTC")


def status(budget: Budget | None, today: date, *rows: tuple[str, str | None]) -> BudgetStatus:
    return budget_status(calls(*rows), SESSIONS, budget, UTC_ZONE, today)


def test_under_budget_with_projection() -> None:
    # 1 credit = $0.01: 300 credits = $3.00. Spent $1.00 in the first 10 days of a 30-day month.
    found = status(
        Budget(Decimal(300), "credits", start_day=15),
        date(2026, 4, 24),
        ("2026-04-14T23:59:00", "5.00"),  # the previous budget month: not counted
        ("2026-04-15T00:00:00", "0.40"),
        ("2026-04-24T12:00:00", "0.60"),
        ("2026-04-25T00:00:00", "9.00"),  # after today: not counted
    )
    assert (found.start, found.end) == (date(2026, 4, 15), date(2026, 5, 15))
    assert found.spent_usd == Decimal("1.00") and found.today_usd == Decimal("0.60")
    assert found.left_usd == Decimal("2.00")
    assert found.projected_usd == Decimal(3)  # $1.00 / 10 days x 30 days
    assert not found.over
    text = budget_lines(found)
    assert "spent         100.00 credits, 33%" in text
    assert "left          200.00 credits" in text
    assert "projection    ~300.00 credits by month end" in text and "within the budget" in text
    assert "OVER" not in text
    assert statusline(found, "session 38b50b0c") == (
        "Copilot credits: today 60.00 · month 100.00/300.00 (33%) · session 38b50b0c"
    )


def test_over_budget_and_unpriced_calls_make_a_lower_bound() -> None:
    found = status(
        Budget(Decimal("1.50"), "usd"),
        date(2026, 4, 2),
        ("2026-03-31T23:00:00", "100"),  # last month
        ("2026-04-01T08:00:00", "1.00"),
        ("2026-04-02T08:00:00", "1.00"),
        ("2026-04-02T09:00:00", None),
    )
    assert found.spent_usd == Decimal(2) and found.unpriced_calls == 1
    assert found.over and found.left_usd == Decimal("-0.50")
    assert found.projected_usd == Decimal(30)  # $2 / 2 days x 30 days of April
    text = budget_lines(found)
    assert "(+1 call without a cost: a lower bound)" in text
    assert "over by $28.50" in text and text.endswith("OVER BUDGET by $0.50")
    assert "(133%) OVER" in statusline(found, None)


def test_without_a_budget_the_month_is_the_calendar_month() -> None:
    found = status(None, date(2026, 4, 2), ("2026-04-01T08:00:00", "1.25"))
    assert (found.start, found.left_usd, found.over) == (date(2026, 4, 1), None, False)
    assert statusline(found, None) == "all agents: today $0.00 · month $1.25"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('credits = "300"\nstart_day = 15\n', Budget(Decimal(300), "credits", 15)),
        ("usd = 39.5\n", Budget(Decimal("39.5"), "usd", 1)),
        ("credits = 1000\n", Budget(Decimal(1000), "credits", 1)),
    ],
)
def test_parse_budget(text: str, expected: Budget) -> None:
    assert parse_budget(text, "b.toml") == expected
    assert parse_budget(expected.to_toml(), "b.toml") == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("credits = ", "not valid TOML"),
        ("", "needs exactly one of credits, usd"),
        ('credits = 1\nusd = "2"\n', "needs exactly one of credits, usd"),
        ("credits = 1\nmonthly = 2\n", "unknown keys ['monthly']"),
        ('credits = "lots"\n', "is not a number"),
        ("credits = -5\n", "positive amount"),
        ("credits = 5\nstart_day = 31\n", "start day 31 is not 1-28"),
        ('credits = 5\nstart_day = "1"\n', "start_day must be a whole number"),
        ('credits = "300"\nagents = ["claude-code"]\n', "AI credits pay for Copilot's"),
        ('usd = "3"\nagents = ["cursor"]\n', "unknown agents ['cursor']"),
        ('usd = "3"\nagents = []\n', "agents must be a list of agent names"),
        ('usd = "3"\nagents = "codex"\n', "agents must be a list of agent names"),
    ],
)
def test_invalid_budget_files(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=r"b\.toml") as raised:
        parse_budget(text, "b.toml")
    assert problem in str(raised.value) and "agentcost budget set" in str(raised.value)


def test_missing_budget_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no budget set"):
        load_budget(tmp_path / "budget.toml")


@pytest.fixture
def today_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Copilot home with one session today, and a private config directory."""
    home = tmp_path / "home"
    write_session(home, "s-today", day=datetime.now(UTC).strftime("%Y-%m-%dT00:00"))
    monkeypatch.setenv("COPILOT_HOME", str(home))
    monkeypatch.setenv("AGENTCOST_CONFIG_DIR", str(tmp_path / "config"))
    return home


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("amount", "code"), [(["--usd", "100"], 0), (["--credits", "0.1"], 1)], ids=["under", "over"]
)
def test_budget_command_exit_code(today_home: Path, amount: list[str], code: int) -> None:
    assert run("budget", "set", *amount)[0] == 0
    exit_code, out, _ = run("budget", "--timezone", "UTC")
    assert exit_code == code, out
    assert "spent" in out and "left" in out and "projection" in out
    assert ("OVER BUDGET" in out) == (code == 1)
    line = run("statusline", "--timezone", "UTC")[1].strip()
    assert line.startswith(("Copilot credits: today ", "all agents: today "))
    assert "month " in line and "session s-today" in line
    assert "\n" not in line and len(line) < 80


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no budget set"),
        ("credits = [1]\n", "is not a number"),
        ("credits = \n", "not valid TOML"),
        ('usd = "5"\nstart = 3\n', "unknown keys ['start']"),
        ("credits = 5\nstart_day = 0\n", "start day 0 is not 1-28"),
        ("", "cannot read"),  # budget.toml is a directory
    ],
    ids=["missing", "invalid", "not-toml", "unknown-key", "bad-start-day", "unreadable"],
)
@pytest.mark.parametrize("paths", [[], [str(SAMPLE_LOGS)]], ids=["home", "path"])
def test_budget_without_a_valid_config_is_a_clear_error(
    today_home: Path, tmp_path: Path, content: str | None, message: str, paths: list[str]
) -> None:
    config = tmp_path / "config" / "budget.toml"
    if content is not None:
        config.parent.mkdir()
        config.mkdir() if message == "cannot read" else config.write_text(content)
    exit_code, out, err = run("budget", *paths)
    assert exit_code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("agentcost: error: ") and message in err
    assert "agentcost budget set" in err or "set the budget again" in err
    assert str(config) in err  # names the file
    exit_code, out, err = run("statusline", *paths)
    assert exit_code == (2 if content is not None else 0)
    if content is not None:
        assert out == "" and err.count("\n") == 1 and message in err


@pytest.mark.parametrize(
    "args",
    [[], ["--credits", "1", "--usd", "1"], ["--usd", "x"], ["--usd", "5", "--start-day", "29"]],
)
def test_budget_set_rejects_bad_values(today_home: Path, args: list[str]) -> None:
    exit_code, _, err = run("budget", "set", *args)
    assert exit_code == 2 and err.startswith("agentcost: error:")


def test_statusline_is_replayed_while_nothing_changes_but_the_moment(
    today_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line is stored as the reports are: run again with nothing changed, it is printed
    without analysing; once the live session's log is older than ``LIVE_SECONDS`` (time
    passed, the log did not change), the line no longer names it; a new budget is seen."""
    import time

    from analytics.cli import budget as command
    from analytics.cli import loading

    first = run("statusline", "--timezone", "UTC")[1]
    assert "session s-today" in first

    def not_again(*args: object, **kwargs: object) -> object:
        raise AssertionError("analysed again")

    with monkeypatch.context() as patched:
        patched.setattr(loading, "priced", not_again)
        assert run("statusline", "--timezone", "UTC")[1] == first
    later = time.time() + command.LIVE_SECONDS + 60
    with monkeypatch.context() as patched:
        patched.setattr(time, "time", lambda: later)
        quiet = run("statusline", "--timezone", "UTC")[1]
    assert "session" not in quiet and quiet == " · ".join(first.split(" · ")[:2]) + "\n"
    assert run("budget", "set", "--usd", "100")[0] == 0
    assert "/$100.00" in run("statusline", "--timezone", "UTC")[1]


def test_statusline_without_any_session_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "home" / "session-state").mkdir(parents=True)
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENTCOST_CONFIG_DIR", str(tmp_path / "config"))
    exit_code, out, _ = run("statusline", "--timezone", "UTC")
    assert (exit_code, out) == (0, "all agents: today $0.00 · month $0.00\n")


def test_the_month_boundary_is_in_the_users_timezone() -> None:
    # 23:30 UTC on March 31 is 01:30 on April 1 in Paris (CEST): April's, not March's.
    rows = calls(("2026-03-31T23:30:00", "1.00"), ("2026-04-01T10:00:00", "2.00"))
    paris = budget_status(rows, SESSIONS, None, ZoneInfo("Europe/Paris"), date(2026, 4, 1))
    utc = budget_status(rows, SESSIONS, None, UTC_ZONE, date(2026, 4, 1))
    assert (paris.spent_usd, paris.today_usd) == (Decimal(3), Decimal(3))
    assert (utc.spent_usd, utc.today_usd) == (Decimal(2), Decimal(2))


def test_spending_exactly_the_allowance_is_not_over() -> None:
    found = status(Budget(Decimal(2), "usd"), date(2026, 4, 30), ("2026-04-01T08:00:00", "2"))
    assert not found.over and found.left_usd == Decimal(0)
    assert found.projected_usd == Decimal(2)  # the last day: the projection is what was spent
    assert "within the budget" in budget_lines(found) and "OVER" not in budget_lines(found)


def test_first_day_of_a_budget_month_projects_that_day_over_the_month() -> None:
    found = status(
        Budget(Decimal(100), "credits", start_day=10),
        date(2026, 6, 10),
        ("2026-06-09T23:59:59", "50"),  # the last second of the previous budget month
        ("2026-06-10T00:00:00", "0.10"),
    )
    assert (found.start, found.end) == (date(2026, 6, 10), date(2026, 7, 10))
    assert found.spent_usd == Decimal("0.10") and found.projected_usd == Decimal(3)
    assert budget_lines(found).startswith("budget month  2026-06-10 to 2026-07-09 (day 1 of 30)")


@pytest.fixture
def on_sample_day(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Today is 2026-08-06 (a day of the sample logs), the home is empty, the config private.

    Sample spend under github-copilot (UTC): 08-03 $0.1231, 08-04 $0.0721, 08-05 $0.0161,
    08-06 $0.1176 + 1 unpriced call, 08-07 $0.1271 (after today)."""
    monkeypatch.setattr("analytics.cli.budget._today", lambda zone: date(2026, 8, 6))
    (tmp_path / "empty-home" / "session-state").mkdir(parents=True)
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("AGENTCOST_CONFIG_DIR", str(tmp_path / "config"))


@pytest.mark.parametrize(
    ("start_day", "credits", "code", "lines"),
    [
        (
            5,  # 08-05 and 08-06: $0.0161 + $0.1176
            "20",
            0,
            [
                "budget month  2026-08-05 to 2026-09-04 (day 2 of 31)",
                "allowance     20.00 credits ($0.20) a month, from day 5",
                "spent         13.37 credits, 67% (+1 call without a cost: a lower bound)",
                "left          6.63 credits",
                "projection    ~207.23 credits by month end at this month's rate: over by "
                "187.23 credits",
            ],
        ),
        (
            1,  # 08-03 to 08-06 (the calendar month so far)
            "20",
            1,
            [
                "budget month  2026-08-01 to 2026-08-31 (day 6 of 31)",
                "spent         32.89 credits, 164% (+1 call without a cost: a lower bound)",
                "OVER BUDGET by 12.89 credits",
            ],
        ),
        (
            7,  # the budget month 07-07 to 08-06: today is its last day
            "40",
            0,
            [
                "budget month  2026-07-07 to 2026-08-06 (day 31 of 31)",
                "spent         32.89 credits, 82% (+1 call without a cost: a lower bound)",
                "projection    ~32.89 credits by month end at this month's rate: within the budget",
            ],
        ),
    ],
    ids=["under-from-day-5", "over-calendar-month", "last-day-of-a-month-from-day-7"],
)
@pytest.mark.usefixtures("on_sample_day")
def test_budget_of_a_path(start_day: int, credits: str, code: int, lines: list[str]) -> None:
    assert run("budget", "set", "--credits", credits, "--start-day", str(start_day))[0] == 0
    exit_code, out, err = run("budget", str(SAMPLE_LOGS), "--timezone", "UTC")
    assert exit_code == code, out + err
    for line in lines:
        assert line in out.splitlines(), (line, out)
    assert ("OVER BUDGET" in out) == (code == 1)
    # The default home (empty here) has spent nothing: PATHS, not the home, were read.
    assert "spent         0.00 credits, 0%" in run("budget", "--timezone", "UTC")[1]


@pytest.mark.usefixtures("on_sample_day")
def test_statusline_of_a_path(tmp_path: Path) -> None:
    exit_code, out, err = run("statusline", str(SAMPLE_LOGS), "--timezone", "UTC")
    assert (exit_code, err) == (0, "")
    # a lower bound: 1 call is unpriced
    assert out.startswith("all agents: today $0.12 · month $0.33")
    assert run("budget", "set", "--credits", "300")[0] == 0
    line = run("statusline", str(SAMPLE_LOGS), "--timezone", "UTC")[1]
    assert line.startswith("Copilot credits: today 11.76 · month 32.89/300.00 (11%)")
    # The session being written now is the one under PATHS.
    write_session(tmp_path / "other", "s-now", day="2026-08-06T09:00")
    line = run("statusline", str(tmp_path / "other"), "--timezone", "UTC")[1]
    assert line == "Copilot credits: today 0.29 · month 0.29/300.00 (0%) · session s-now\n"


def test_budget_takes_paths_and_still_has_its_set_command() -> None:
    def usage(*command: str) -> str:
        text = run(*command, "--help")[1].replace("[paths]", "[PATHS]")
        return next(line.strip() for line in text.splitlines() if "Usage:" in line)

    assert usage("budget") == "Usage: agentcost budget [OPTIONS] [PATHS]... COMMAND [ARGS]..."
    assert usage("budget", "set") == "Usage: agentcost budget set [OPTIONS]"
    assert usage("statusline") == "Usage: agentcost statusline [OPTIONS] [PATHS]..."


# --- issue 35: a budget counts its agents' calls, and every figure says what it is ---


def write_claude_code(root: Path, day: str = "2026-08-06T09:00") -> Path:
    """A Claude Code session of one request of 140,000 uncached input tokens to Sonnet 4.6:
    $0.42 at Anthropic's list price (its API-equivalent cost), streamed as two lines."""

    def line(output: int, stop: str | None, second: int) -> str:
        return json.dumps({
            "type": "assistant", "sessionId": "cc0a1b2c-0000-4000-8000-000000000001",
            "uuid": f"u{second}", "requestId": "req_1", "timestamp": f"{day}:{second:02d}Z",
            "message": {"id": "msg_1", "model": "claude-sonnet-4-6", "stop_reason": stop,
                        "content": [{"type": "text", "text": "done"}],
                        "usage": {"input_tokens": 140_000, "cache_read_input_tokens": 0,
                                  "cache_creation_input_tokens": 0, "output_tokens": output}},
        })  # fmt: skip

    path = root / "projects" / "-repo" / "cc0a1b2c-0000-4000-8000-000000000001.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(line(0, None, 1) + "\n" + line(0, "end_turn", 2) + "\n")
    return path


@pytest.mark.usefixtures("on_sample_day")
def test_a_credits_budget_counts_copilot_alone(tmp_path: Path) -> None:
    # The issue: a $0.42 Claude Code session was 42 credits against a 20-credit allowance,
    # "OVER BUDGET", exit 1. AI credits pay for Copilot's premium requests alone.
    write_claude_code(tmp_path / "logs")
    assert run("budget", "set", "--credits", "20")[0] == 0
    assert 'agents = ["copilot"]' in (tmp_path / "config" / "budget.toml").read_text()
    exit_code, out, err = run("budget", str(tmp_path / "logs"), "--timezone", "UTC")
    assert exit_code == 0, out + err
    lines = out.splitlines()
    assert "counts        Copilot, in AI credits (Copilot's premium requests)" in lines
    assert "spent         0.00 credits, 0%" in lines
    assert "not counted   Claude Code $0.42 API-equivalent" in lines
    assert "OVER" not in out
    report = json.loads(run("budget", str(tmp_path / "logs"), "--timezone", "UTC", "--json")[1])
    assert report["counts"] == {"agents": ["copilot"], "unit": "credits"}
    assert (report["spent_usd"], report["over"]) == ("0", False)
    [claude] = [row for row in report["by_agent"] if row["agent"] == "claude-code"]
    assert claude == {
        "agent": "claude-code", "counted": False, "measure": "API-equivalent",
        "month_usd": "0.42", "today_usd": "0.42", "unpriced_calls": 0, "billed_usd": None,
    }  # fmt: skip
    line = run("statusline", str(tmp_path / "logs"), "--timezone", "UTC")[1]
    assert line.startswith("Copilot credits: today 0.00 · month 0.00/20.00 (0%)")


@pytest.mark.usefixtures("on_sample_day")
def test_a_dollar_budget_counts_the_agents_it_names(tmp_path: Path) -> None:
    write_claude_code(tmp_path / "logs")
    shutil.copytree(SAMPLE_LOGS, tmp_path / "logs" / "copilot")
    logs = str(tmp_path / "logs")
    assert run("budget", "set", "--usd", "0.40", "--agent", "claude-code")[0] == 0
    exit_code, out, _ = run("budget", logs, "--timezone", "UTC")
    assert exit_code == 1  # $0.42 of Claude Code against $0.40
    lines = out.splitlines()
    assert "counts        Claude Code, in dollars" in lines
    assert "spent         $0.42, 105%" in lines
    assert "  Claude Code $0.42 API-equivalent" in lines
    assert "not counted   Copilot $0.33 at Copilot's price" in lines  # never added in
    assert lines[-1] == "OVER BUDGET by $0.02"
    assert (
        run("budget", "set", "--usd", "0.40", "--agent", "codex", "--agent", "claude-code")[0] == 0
    )
    assert "counts        Claude Code and Codex, in dollars" in run("budget", logs)[1]
    assert run("budget", "set", "--usd", "1")[0] == 0  # no --agent: every agent
    out = run("budget", logs, "--timezone", "UTC")[1]
    assert "counts        all agents, in dollars" in out.splitlines()
    assert "  Copilot     $0.33 at Copilot's price" in out and "not counted" not in out
    line = run("statusline", logs, "--timezone", "UTC")[1]
    assert line.startswith("all agents: today $0.54 · month $0.75/$1.00 (75%)")


@pytest.mark.parametrize(
    ("text", "agents"),
    [
        ('credits = "300"\nstart_day = 1\n', ("copilot",)),  # written before budgets named
        ('usd = "39"\n', tuple(registry.ids())),  # their agents: as they meant (every agent)
        ('usd = "39"\nagents = ["codex", "copilot"]\n', ("copilot", "codex")),
    ],
)
def test_budget_files_without_agents_keep_their_meaning(text: str, agents: tuple[str, ...]) -> None:
    assert parse_budget(text, "b.toml").agents == agents


def test_a_credits_budget_of_another_agent_is_refused(today_home: Path) -> None:
    exit_code, _, err = run("budget", "set", "--credits", "20", "--agent", "claude-code")
    assert exit_code == 2 and "AI credits pay for Copilot's premium requests only" in err
    assert run("budget", "set", "--credits", "20")[0] == 0
    for command in ("budget", "statusline"):  # --agent reads none of the counted calls
        exit_code, _, err = run(command, "--agent", "codex")
        assert exit_code == 2 and "the budget counts copilot's calls; --agent codex" in err


def test_statusline_of_an_agent_names_that_agents_session(tmp_path: Path) -> None:
    # The Claude Code log is the newest; --agent copilot must show the Copilot session.
    today = datetime.now(UTC).strftime("%Y-%m-%dT00:00")
    write_session(tmp_path / "copilot", "s-copilot", day=today)
    claude = write_claude_code(tmp_path / "claude", today)
    later = claude.stat().st_mtime + 5
    os.utime(claude, (later, later))
    logs = [str(tmp_path / "copilot"), str(tmp_path / "claude"), "--timezone", "UTC"]
    mine = run("statusline", *logs, "--agent", "copilot")[1]
    assert mine.startswith("Copilot: today ") and mine.endswith(" · session s-copilo\n")
    theirs = run("statusline", *logs, "--agent", "claude-code")[1]
    assert theirs == "Claude Code: today $0.42 · month $0.42 · session cc0a1b2c\n"
    anyone = run("statusline", *logs)[1]
    assert anyone.endswith(" · Claude Code session cc0a1b2c\n")


_costs = st.lists(
    st.tuples(
        st.sampled_from(registry.ids()),
        st.integers(1, 6),  # the day of April
        st.decimals("0.0001", "9.9999", places=4),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(costs=_costs, unit=st.sampled_from(["credits", "usd"]))
def test_a_budget_counts_exactly_its_agents_calls(
    costs: list[tuple[str, int, Decimal]], unit: Unit
) -> None:
    """Spent is the sum of the budget's agents' calls, no more: every other agent's spend
    is kept apart, and the parts add up to every call's cost."""
    frames = [
        calls((f"2026-04-0{day}T10:00:00", str(cost)), agent=agent) for agent, day, cost in costs
    ]
    last_month = calls(("2026-03-31T10:00:00", "7"), agent="claude-code")  # never counted
    rows = pl.concat([last_month, *frames]).with_columns(pl.int_range(pl.len()).alias("event_seq"))
    agents = ("copilot",) if unit == "credits" else ("claude-code", "codex")
    found = budget_status(
        rows, SESSIONS, Budget(Decimal(5), unit, 1, agents), UTC_ZONE, date(2026, 4, 6)
    )
    assert found.spent_usd == sum((c for a, _, c in costs if a in agents), Decimal(0))
    assert sum((s.month_usd for s in found.by_agent), Decimal(0)) == sum(
        (c for _, _, c in costs), Decimal(0)
    )
    assert all(s.counted == (s.agent in agents) for s in found.by_agent)
