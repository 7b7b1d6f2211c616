"""``top``, ``report --html``, ``watch`` and ``statusline`` on Claude Code and Codex sessions.

Their folds give each session's context items (prompts, replies with their tool requests,
tool results, compaction summaries) as EVENTS rows numbered with the calls in log order, so
the attribution, the report's charts and the live view read them as they read Copilot's.
Literal logs first; then a real log of each agent (skipped where ../shared/real_logs is
absent), on which every session with calls must appear and no item may cost more than its
session.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from analytics.agents import claude_code, codex
from analytics.agents.contract import as_events, core_tables
from analytics.cli.budget import _active
from analytics.cli.commands import app
from analytics.core import items as kinds
from analytics.core.attribution import attribute_context
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rate_table
from analytics.core.schema import EVENTS
from analytics.engine.analyze import Analysis, analyze
from analytics.engine.following import AgentFollow, agent_session_id
from analytics.engine.live_figures import figures
from analytics.engine.live_session import latest_log
from analytics.render.html_report import MAX_SELECTABLE
from tests.conftest import REAL_LOGS, SAMPLE_LOGS
from tests.mixed_tree import CODEX
from tests.pty_watch import watching

CLAUDE: list[dict[str, Any]] = [
    {"type": "user", "uuid": "u1", "sessionId": "cc-1", "timestamp": "2026-05-01T10:00:00Z",
     "message": {"role": "user", "content": "fix the parser"}},
    {"type": "assistant", "uuid": "a1", "sessionId": "cc-1", "requestId": "r1",
     "timestamp": "2026-05-01T10:00:02Z",
     "message": {"id": "m1", "model": "claude-opus-4-6", "stop_reason": "tool_use",
                 "content": [{"type": "text", "text": "reading it"},
                             {"type": "tool_use", "id": "t1", "name": "Read",
                              "input": {"file_path": "parser.py"}}],
                 "usage": {"input_tokens": 5, "cache_creation_input_tokens": 20000,
                           "cache_read_input_tokens": 0, "output_tokens": 40}}},
    {"type": "user", "uuid": "u2", "sessionId": "cc-1", "timestamp": "2026-05-01T10:00:03Z",
     "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                              "content": "def parse():\n" * 400}]}},
    {"type": "assistant", "uuid": "a2", "sessionId": "cc-1", "requestId": "r2",
     "timestamp": "2026-05-01T10:00:06Z",
     "message": {"id": "m2", "model": "claude-opus-4-6", "stop_reason": "end_turn",
                 "content": [{"type": "text", "text": "fixed"}],
                 "usage": {"input_tokens": 5, "cache_creation_input_tokens": 1500,
                           "cache_read_input_tokens": 20005, "output_tokens": 12}}},
]  # fmt: skip


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A Claude Code project and a Codex home, under one directory."""
    root = tmp_path / "logs"
    write(root / "claude" / "projects" / "-w" / "cc-1.jsonl", CLAUDE)
    write(root / "codex" / "sessions" / "2026" / "05" / "01" / "rollout-x-cx-1.jsonl", CODEX)
    return root


def priced(result: Analysis) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(priced calls, priced sessions) of an analysis, as the reports price them."""
    table = load_rate_table("github-copilot")
    return price_analysis(result.calls, result.session_view, table, log_prices=result.log_prices)


def no_item_costs_more_than_its_session(result: Analysis) -> pl.DataFrame:
    """The attribution's items of ``result`` (checked: each costs at most its session)."""
    calls, sessions = priced(result)
    _, items = attribute_context(calls, result.events)
    joined = items.join(sessions.select("session_id", "cost_usd"), on="session_id", suffix="_s")
    known = joined.filter(pl.col("cost_usd").is_not_null())
    assert (known["cost_usd"] <= known["cost_usd_s"]).all()
    return items


def test_the_items_are_events_numbered_with_the_calls(logs: Path) -> None:
    calls, _, _, items = core_tables(claude_code.read([logs / "claude" / "projects"]))
    events = as_events(items)
    assert events.schema == pl.Schema(EVENTS)
    assert events["item"].to_list() == [
        kinds.PROMPT,
        kinds.REPLY,
        kinds.TOOL_CALL,
        kinds.TOOL_OUTPUT,
        kinds.REPLY,
    ]
    # the calls stand before the lines of their replies: 1 prompt, 2 call, 3-4 reply, 5 result
    assert calls["event_seq"].to_list() == [2, 6]
    assert events["event_seq"].to_list() == [1, 3, 4, 5, 7]
    _, _, _, rollout = core_tables(codex.read([logs / "codex"]))
    assert rollout["item"].to_list() == [
        kinds.PROMPT,
        kinds.REPLY,
        kinds.TOOL_CALL,
        kinds.TOOL_OUTPUT,
        kinds.REPLY,
    ]


def test_top_attributes_each_agents_items(logs: Path) -> None:
    result = analyze([logs])
    assert set(result.sessions["agent"]) == {"claude-code", "codex"}
    items = no_item_costs_more_than_its_session(result)
    labels = items.group_by("session_id").agg("label")
    by_session = {row[0]: row[1] for row in labels.iter_rows()}
    assert any(label.startswith("tool result: Read") for label in by_session["cc-1"])
    assert any(label.startswith("tool result: exec_command") for label in by_session["cx-1"])
    shown = CliRunner().invoke(app, ["--no-cache", "top", str(logs)])
    assert shown.exit_code == 0, shown.output
    assert "tool result: Read" in shown.output and "tool result: exec_command" in shown.output


def test_a_compaction_summary_starts_the_context_again(tmp_path: Path) -> None:
    summary: dict[str, Any] = {
        "type": "user", "uuid": "c1", "sessionId": "cc-1", "isCompactSummary": True,
        "timestamp": "2026-05-01T10:01:00Z",
        "message": {"role": "user", "content": "the story so far " * 100},
    }  # fmt: skip
    after = {**CLAUDE[-1], "uuid": "a9", "requestId": "r9", "timestamp": "2026-05-01T10:01:05Z"}
    after["message"] = {**CLAUDE[-1]["message"], "id": "m9"}
    write(tmp_path / "p" / "cc-1.jsonl", [*CLAUDE, summary, after])
    items = no_item_costs_more_than_its_session(analyze([tmp_path / "p"]))
    last = items.filter(pl.col("item_kind") == "compaction summary").row(0, named=True)
    assert last["label"] == "compaction summary (1.7 kB)"
    assert last["sends"] == 1 and last["tokens_added"] > 0
    # the items before the summary are not sent after it: the prompt went with 2 calls only
    prompt = items.filter(pl.col("item_kind") == "user message").row(0, named=True)
    assert prompt["sends"] == 2


def report_of(logs: Path, tmp_path: Path) -> str:
    out = tmp_path / "report.html"
    shown = CliRunner().invoke(app, ["--no-cache", "report", str(logs), "--html", str(out)])
    assert shown.exit_code == 0, shown.output
    return out.read_text()


def charted_sessions(page: str) -> set[str]:
    """The sessions the report's per-session charts cover."""
    found = re.search(r'id="report-data">(.*?)</script>', page, re.S)
    assert found is not None
    return set(json.loads(found.group(1).replace("<\\/", "</"))["sessions"])


def test_the_report_has_every_agents_sessions_and_costs(logs: Path, tmp_path: Path) -> None:
    page = report_of(logs, tmp_path)
    assert charted_sessions(page) == {"cc-1", "cx-1"}
    calls, _ = priced(analyze([logs]))
    total = calls["cost_usd"].sum()
    assert total > 0
    assert f"${total:,.4f}" in page  # the header's total is both agents' calls
    carried = page.replace("\\u00b7", "·")  # the chart's JSON escapes the dot
    assert "cc-1 · tool result: Read" in carried
    assert "cx-1 · tool result: exec_command" in carried


def test_watch_follows_the_newest_log_of_any_agent_and_refolds_it(logs: Path) -> None:
    rollout = next((logs / "codex").rglob("*.jsonl"))
    session = next((logs / "claude").rglob("*.jsonl"))
    now = time.time()
    os.utime(rollout, (now - 60, now - 60))
    os.utime(session, (now, now))
    watched = latest_log([logs])
    assert (watched.agent, watched.log.path) == ("claude-code", session)
    sidechain = {**CLAUDE[0], "uuid": "s1", "isSidechain": True, "agentId": "abc"}
    sub = write(session.with_suffix("") / "subagents" / "agent-abc.jsonl", [sidechain])
    os.utime(sub, (now + 5, now + 5))
    assert latest_log([logs]).log.path == session  # a sub-agent's file stands for its session
    follow = AgentFollow(watched)
    assert follow.update() and not follow.update()
    table = load_rate_table("github-copilot")
    shown = figures(price_analysis(follow.calls, follow.sessions, table)[0])
    assert shown is not None and (shown.session_id, shown.calls) == ("cc-1", 2)
    more = {**CLAUDE[-1], "uuid": "a3", "requestId": "r3", "timestamp": "2026-05-01T10:00:09Z"}
    more["message"] = {**CLAUDE[-1]["message"], "id": "m3"}
    with session.open("a") as out:
        out.write(json.dumps(more) + "\n")
    assert follow.update()
    shown = figures(price_analysis(follow.calls, follow.sessions, table)[0])
    assert shown is not None and shown.calls == 3 and shown.cost_usd is not None
    assert shown.last_cost_usd is not None and shown.cost_usd > shown.last_cost_usd > Decimal(0)


def test_statusline_names_the_session_by_its_own_id(logs: Path) -> None:
    session = next((logs / "claude").rglob("*.jsonl"))
    resumed = write(session.with_name("renamed.jsonl"), CLAUDE)  # a file named otherwise
    watched = latest_log([resumed])
    assert agent_session_id(watched) == "cc-1"
    assert _active(watched, ("claude-code",)) == "session cc-1"
    rollout = next((logs / "codex").rglob("*.jsonl"))
    # counting every agent's calls, the line says whose session it is
    assert _active(latest_log([rollout]), ("copilot", "codex")) == "Codex session cx-1"


REAL = [("claude-code", "claude-code"), ("codex", "codex")]


@pytest.mark.parametrize(("agent", "folder"), REAL, ids=[a for a, _ in REAL])
def test_top_report_and_watch_on_a_real_log(agent: str, folder: str, tmp_path: Path) -> None:
    logs = REAL_LOGS / folder
    if not logs.is_dir():
        pytest.skip(f"{logs} is not present (the shared/ folder is absent)")
    result = analyze([logs])
    with_calls = set(result.calls.filter(pl.col("agent") == agent)["session_id"])
    assert with_calls
    items = no_item_costs_more_than_its_session(result)
    assert with_calls <= set(items["session_id"])  # top attributes every session with calls
    charted = charted_sessions(report_of(logs, tmp_path))
    assert charted <= with_calls
    assert len(charted) == min(len(with_calls), MAX_SELECTABLE)
    watched = latest_log([logs])
    assert watched.agent == agent
    follow = AgentFollow(watched)
    assert follow.update()
    shown = figures(
        price_analysis(follow.calls, follow.sessions, load_rate_table("github-copilot"))[0]
    )
    assert shown is None or shown.session_id in set(result.sessions["session_id"])


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_watch_in_a_pty_shows_a_claude_code_call_appended(logs: Path, tmp_path: Path) -> None:
    session = next((logs / "claude").rglob("*.jsonl"))
    with watching(session, tmp_path / "c") as screen:
        assert screen.wait_for("calls so far  2", 20) is not None, screen.shown()
        assert "cc-1" in screen.shown()
        more = {**CLAUDE[-1], "uuid": "a3", "requestId": "r3", "timestamp": "2026-05-01T10:00:09Z"}
        more["message"] = {**CLAUDE[-1]["message"], "id": "m3"}
        with session.open("a") as out:
            out.write(json.dumps(more) + "\n")
        assert screen.wait_for("calls so far  3", 2.0) is not None, screen.shown()
        screen.quit(b"q")


def test_event_groups_hold_every_agents_items_once(logs: Path) -> None:
    kept = analyze([SAMPLE_LOGS, logs])
    grouped = analyze([SAMPLE_LOGS, logs], keep_events=False, group_bytes=1)
    groups = list(grouped.event_groups())
    assert len(groups) > 2  # Copilot's sessions a group at a time, then the other agents'
    together = pl.concat(groups).sort("session_id", "event_seq")
    assert together.equals(kept.events.sort("session_id", "event_seq"))
    for session in ("cc-1", "cx-1"):
        assert sum(session in group["session_id"] for group in groups) == 1
