"""Issue 35: help texts written from the agents' registry (``analytics.core.registry``), so
none goes stale: every default home, every agent, the agents with 5-hour blocks, and the
spark extra's name as ``--help`` prints it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from analytics.agents import claude_code, codex
from analytics.agents.discover import copilot_home
from analytics.cli import app
from analytics.cli.options import Agent
from analytics.core import registry
from tests.conftest import REPO

ROOT = REPO


def words(text: str) -> str:
    """Rendered help as plain words: rich's box and wrapping taken out."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def help_of(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return words(result.output)


def commands_with_paths() -> list[str]:
    """Every command that takes the PATHS of logs (``PathsArg``)."""
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return [
        name
        for name, command in group.commands.items()
        if any(param.name == "paths" for param in command.params) and name != "spark"
    ]


@pytest.mark.parametrize("command", commands_with_paths())
def test_every_default_home_is_named(command: str) -> None:
    """Before, every ``--help`` said the default was ``$COPILOT_HOME or ~/.copilot``."""
    text = help_of(command)
    for agent in registry.AGENTS:
        assert agent.home_words() in text, (command, agent.id)


def test_the_first_screen_names_every_agent_and_home() -> None:
    text = help_of()
    for agent in registry.AGENTS:
        assert agent.name in text and agent.home_words() in text, agent.id


def test_spark_names_its_extra() -> None:
    """rich read ``[spark]`` as markup: the help said ``pip install 'agentcost'``."""
    assert "pip install 'agentcost[spark]'" in help_of("spark")
    assert "pip install 'agentcost[spark]'" in help_of()


def test_blocks_says_which_agents_have_blocks() -> None:
    text = help_of("blocks")
    metered = registry.with_blocks()
    assert metered
    for agent in metered:
        assert f"{agent.id} ({agent.plans})" in text


def test_the_agent_option_is_the_registry() -> None:
    assert [agent.value for agent in Agent] == registry.ids()
    for command in ("analyze", "daily", "export"):
        assert registry.listed(registry.ids(), "or") in " ".join(help_of(command).split())


def test_the_package_description_names_every_agent() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for agent in registry.AGENTS:
        assert agent.name in project["description"]


def test_the_agent_modules_find_their_homes_from_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("COPILOT_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".claude" / "projects").mkdir(parents=True)
    (tmp_path / ".codex" / "sessions").mkdir(parents=True)
    assert copilot_home() == tmp_path / ".copilot"
    assert claude_code.homes() == [tmp_path / ".claude" / "projects"]
    assert codex.homes() == [tmp_path / ".codex" / "sessions"]
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "elsewhere"))
    assert copilot_home() == tmp_path / "elsewhere"


def test_help_imports_no_polars() -> None:
    code = (
        "import sys\nfrom analytics.cli import app\n"
        "from typer.testing import CliRunner\n"
        "CliRunner().invoke(app, ['analyze', '--help'])\n"
        "print('polars' in sys.modules)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert run.stdout.strip() == "False", run.stderr
