"""One core for three agents, through the CLI: ``--agent`` on the commands that read logs,
``daily --by agent``, the date and model-map options every such command takes, and
``agentcost blocks`` on a Claude Code session written a moment ago (literal lines)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from tests.conftest import SAMPLE_LOGS


def claude_session(folder: Path, minutes_ago: list[int]) -> Path:
    """A Claude Code session file with one finished API request per entry of
    ``minutes_ago``: 1,000 tokens written to the cache for an hour, 2,000 read, 100 out."""
    now = datetime.now(UTC)
    lines = []
    for n, ago in enumerate(minutes_ago):
        stamp = (now - timedelta(minutes=ago)).isoformat().replace("+00:00", "Z")
        usage = {
            "input_tokens": 10,
            "cache_creation_input_tokens": 1_000,
            "cache_read_input_tokens": 2_000,
            "output_tokens": 100,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1_000},
        }
        message = {
            "id": f"msg_{n}",
            "model": "claude-sonnet-4-5-20250929",
            "role": "assistant",
            "stop_reason": "end_turn",
            "usage": usage,
            "content": [{"type": "text", "text": "done"}],
        }
        lines.append(
            {
                "type": "assistant",
                "sessionId": "c1a2b3c4-0000-4000-8000-000000000001",
                "uuid": f"u{n}",
                "requestId": f"req_{n}",
                "timestamp": stamp,
                "version": "2.1.143",
                "cwd": "/work/demo",
                "message": message,
            }
        )
    path = folder / "projects" / "-work-demo" / "c1a2b3c4-0000-4000-8000-000000000001.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, ["--no-cache", *args])
    assert result.exit_code == 0, result.output
    return result


def test_agent_filters_sessions_and_by_agent_breaks_days_down(tmp_path: Path) -> None:
    claude_session(tmp_path / "claude", [30, 20])
    tree = [str(SAMPLE_LOGS), str(tmp_path / "claude")]
    both = json.loads(run("analyze", *tree, "-f", "json").stdout)["sessions"]
    assert {s["agent"] for s in both} == {"copilot", "claude-code"}
    only = json.loads(run("analyze", *tree, "--agent", "claude-code", "-f", "json").stdout)
    assert [s["agent"] for s in only["sessions"]] == ["claude-code"]
    assert only["sessions"][0]["llm_calls"] == 2
    daily = json.loads(run("daily", *tree, "--by", "agent", "-f", "json").stdout)["periods"]
    assert {row["agent"] for row in daily} == {"copilot", "claude-code"}
    table = run("daily", *tree, "--by", "agent").stdout
    assert "AGENT" in table and "claude-code" in table


@pytest.mark.parametrize("command", ["report", "top", "export"])
def test_every_log_command_takes_dates_agents_and_model_maps(command: str) -> None:
    text = run(command, "--help").stdout
    for option in ("--since", "--until", "--agent", "--model-map"):
        assert option in text, (command, option)


def test_report_since_leaves_earlier_sessions_out(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    run("report", str(SAMPLE_LOGS), "--html", str(out), "--since", "2026-08-07")
    page = out.read_text()
    assert "38b50b0c" in page and "24ccb34f" not in page


def test_blocks_shows_the_active_block_and_its_pace(tmp_path: Path) -> None:
    claude_session(tmp_path, [50, 40, 10])
    data = json.loads(run("blocks", str(tmp_path), "--token-limit", "100000", "-f", "json").stdout)
    (block,) = data["blocks"]
    assert block["active"] is True and block["calls"] == 3
    assert block["total_tokens"] == 3 * (10 + 1_000 + 2_000 + 100)
    (pace,) = data["active"]
    assert pace["token_limit"] == 100_000
    assert pace["projected_total_tokens"] >= block["total_tokens"]
    text = run("blocks", str(tmp_path), "--token-limit", "100000").stdout
    assert "active block:" in text and "token limit 100,000: projected" in text


def test_blocks_counts_claude_code_calls_by_default(tmp_path: Path) -> None:
    claude_session(tmp_path / "claude", [600])
    tree = [str(SAMPLE_LOGS), str(tmp_path / "claude")]
    data = json.loads(run("blocks", *tree, "-f", "json").stdout)
    assert sum(b["calls"] for b in data["blocks"]) == 1
    assert data["active"] == []


def test_a_bad_token_limit_is_a_usage_error(tmp_path: Path) -> None:
    claude_session(tmp_path, [10])
    result = CliRunner().invoke(app, ["--no-cache", "blocks", str(tmp_path), "--token-limit", "x"])
    assert result.exit_code == 2
    assert "--token-limit 'x': expected a number of tokens or max" in result.output


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_fold_without_items_gives_the_same_calls(agent: str) -> None:
    """Reports of calls and money fold without the context items (less memory on a large
    tree): every call and session figure is the same, only the items are left out."""
    from analytics.agents import claude_code, codex
    from tests.conftest import REAL_LOGS

    root = REAL_LOGS / agent
    if not root.is_dir():
        pytest.skip(f"{root} is absent (the shared real logs)")
    module = claude_code if agent == "claude-code" else codex
    files = sorted(root.rglob("*.jsonl"))
    full, lean = module.read_files(files), module.read_files(files, items=False)
    assert full.items.height > 0 and lean.items.height == 0
    keys = ["session_id", "source_file", "source_line"]
    figures = [*keys, "model", "input_tokens", "cache_read_tokens", "output_tokens", "kind"]
    assert lean.calls.select(figures).sort(keys).equals(full.calls.select(figures).sort(keys))
    assert lean.sessions.drop("issues").equals(full.sessions.drop("issues"))
