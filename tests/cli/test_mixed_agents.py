"""Every mix of agents' real logs, through the command line: no crash, whatever the files,
the window or the agents named, and cost additive over agents and over disjoint windows.

The literal cases are mixes that crashed (a polars panic in pricing): three real files of
Copilot and Codex, and the whole real-log tree with a window that ends before the last month.
The properties draw any subset of the real files of every agent agentcost discovers there (a
new agent's files join the draw when discovery knows them), any window and any agent set.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core import registry
from tests.conftest import REAL_LOGS, SAMPLE_LOGS

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


def test_a_panic_is_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A panic inside polars (a ``BaseException``) while pricing: no traceback, one line
    naming the command and its inputs, exit 3."""
    from polars.exceptions import PanicException

    from analytics.cli.commands import INTERNAL_FAILURE, run
    from analytics.core.pricing import price

    def panics(*_: object, **__: object) -> None:
        raise PanicException("assertion failed: i < self.len()")

    monkeypatch.setattr(price, "_price_each", panics)
    code = run(["--no-cache", "analyze", str(SAMPLE_LOGS)])
    err = capsys.readouterr().err
    assert code == INTERNAL_FAILURE == 3
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"`agentcost --no-cache analyze {SAMPLE_LOGS}`" in err
    assert "PanicException: assertion failed: i < self.len()" in err


def test_run_keeps_the_exit_codes_of_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from analytics.cli.commands import run

    assert run(["--no-cache", "analyze", str(SAMPLE_LOGS), "--format", "json"]) == 0
    assert run(["analyze", "/nonexistent/agentcost"]) == 2
    assert "Traceback" not in capsys.readouterr().err


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


# ------------------------------------------------------------------------------ properties

#: Every command that prices calls, with what it needs after the paths (``{out}``: a fresh
#: directory for what it writes).
PRICING_COMMANDS: list[tuple[list[str], list[str]]] = [
    (["analyze"], ["--format", "json"]),
    (["analyze"], ["--calls", "--format", "json"]),
    (["compare"], []),
    (["top"], []),
    (["daily"], ["--format", "json"]),
    (["monthly"], []),
    (["blocks"], []),
    (["report"], ["--html", "{out}/report.html"]),
    (["export", "{out}/dataset"], []),
]
#: Days the real logs span (2025-10 to 2026-07), as window edges.
DAYS = st.dates(min_value=date(2025, 9, 1), max_value=date(2026, 8, 31))


@functools.cache
def real_files() -> dict[str, tuple[str, ...]]:
    """The real log files agentcost discovers under ``REAL_LOGS``, by agent, and OpenCode's
    real rows (kept as exports, not databases) each loaded into an ``opencode.db`` of the
    real schema (``tests/agents/opencode/projection.py``)."""
    from analytics.engine.inputs import COPILOT, discover

    if not REAL_LOGS.is_dir():
        return {}
    found = discover([REAL_LOGS])
    by_agent: dict[str, list[str]] = {COPILOT: [str(log.path) for log in found.logs]}
    for agent, log in found.agent_logs:
        by_agent.setdefault(agent, []).append(str(log.path))
    by_agent.setdefault("opencode", []).extend(opencode_databases())
    return {agent: tuple(sorted(paths)) for agent, paths in by_agent.items() if paths}


def opencode_databases() -> list[str]:
    """One ``opencode.db`` per real OpenCode export, in a directory removed at exit."""
    from tests.agents.opencode.projection import database_of
    from tests.readme_facts import facts_rows

    readme = REAL_LOGS / "opencode" / "README.md"
    if not readme.is_file():
        return []
    built = Path(tempfile.mkdtemp(prefix="agentcost-mix-opencode-"))
    atexit.register(shutil.rmtree, built, True)
    databases = []
    for index, (export, _) in enumerate(facts_rows(readme)):
        (built / f"{index:03d}").mkdir()
        databases.append(str(database_of([export], built / f"{index:03d}" / "opencode.db")))
    return databases


def needs_real_logs() -> None:
    if not real_files():
        pytest.skip(f"real logs not present at {REAL_LOGS} (the shared/ folder is absent)")


@st.composite
def mixes(draw: st.DrawFn) -> list[str]:
    """A few real files, drawn from one or more agents."""
    files = real_files()
    agents = draw(st.lists(st.sampled_from(sorted(files)), min_size=1, unique=True))
    return [
        path
        for agent in agents
        for path in draw(
            st.lists(st.sampled_from(files[agent]), min_size=1, max_size=3, unique=True)
        )
    ]


def window_args(since: date | None, until: date | None) -> list[str]:
    """``--since``/``--until`` options of a window (UTC days), as given."""
    args = ["--timezone", "UTC"]
    args += ["--since", since.isoformat()] if since else []
    args += ["--until", until.isoformat()] if until else []
    return args


def sessions(files: list[str], *options: str) -> list[dict[str, Any]]:
    """``analyze --format json``'s sessions of ``files`` under ``options``."""
    doc = json.loads(run("analyze", *files, *options, "--format", "json").stdout)
    return list(doc["sessions"])


def totals(rows: list[dict[str, Any]]) -> tuple[int, Decimal]:
    """(calls, cost) of sessions: cost summed exactly, an unpriced session adding nothing."""
    calls = sum(int(row["llm_calls"] or 0) for row in rows)
    return calls, sum((Decimal(row["cost_usd"] or 0) for row in rows), Decimal(0))


@settings(max_examples=40)
@given(
    files=st.deferred(mixes),
    command=st.sampled_from(PRICING_COMMANDS),
    since=st.none() | DAYS,
    until=st.none() | DAYS,
    agents=st.lists(st.sampled_from(registry.ids()), unique=True),
)
def test_every_pricing_command_runs_on_any_mix(
    files: list[str],
    command: tuple[list[str], list[str]],
    since: date | None,
    until: date | None,
    agents: list[str],
) -> None:
    """No crash (``run`` fails on any exception or exit code past 1) on any subset of the
    real files, window and agent set, for every command that prices. A window that ends
    before it starts is a usage error (exit 2), which is not a crash either."""
    needs_real_logs()
    if since and until and until < since:
        since, until = until, since
    before, after = command
    with tempfile.TemporaryDirectory() as out:
        run(
            *(word.format(out=out) for word in before),
            *files,
            *window_args(since, until),
            *(f"--agent={agent}" for agent in agents),
            *(word.format(out=out) for word in after),
        )


@settings(max_examples=25)
@given(files=st.deferred(mixes), split=DAYS)
def test_cost_is_additive_over_agents_and_disjoint_windows(files: list[str], split: date) -> None:
    """Over any mix: the calls and cost of all agents are the sums of each agent's, and those
    of the sessions up to a day and after it are the sums of the two windows'."""
    needs_real_logs()
    everything = totals(sessions(files))
    agents = sorted({row["agent"] for row in sessions(files)})
    per_agent = [totals(sessions(files, f"--agent={agent}")) for agent in agents]
    assert everything == (sum(c for c, _ in per_agent), sum((d for _, d in per_agent), Decimal(0)))
    early = totals(sessions(files, *window_args(None, split)))
    late = totals(sessions(files, *window_args(split + timedelta(days=1), None)))
    assert everything == (early[0] + late[0], early[1] + late[1])


#: A real Claude Code session of claude-opus-4-7 (20 lines naming it).
OPUS_4_7 = (
    "claude-code/ingo-eichhorst__Irrlicht/replaydata/agents/claudecode/scenarios/2-3_task-list/"
    "recordings/2026-05-24-17-09-17_irrlichd-0.4.7+df8122a/transcript.jsonl"
)
