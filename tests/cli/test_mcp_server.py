"""``agentcost mcp`` through the SDK's own stdio client: the server starts as an agent starts
it (the console script, over stdin/stdout), and each tool answers the figures of the
command it stands for, run on the same home in the same environment.

The home is written from literal lines: every agent's logs (``tests/mixed_tree.py``: the
sample Copilot sessions, a month-long Claude Code session, a Codex session) and a Claude Code
session of a few minutes ago, the one being written now (the newest log, in the active
5-hour block and this budget month).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.mixed_tree import _write, write_mixed_tree

needs_mcp = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None,
    reason="the mcp package is not installed (pip install 'agentcost[mcp]', or the dev extra)",
)
AGENTCOST = str(Path(sys.executable).with_name("agentcost"))
TOOLS = {"spend", "session_cost", "top_items", "blocks", "budget"}
NOW_SESSION = "cc-now-0001"


def _now_session(now: datetime) -> list[dict[str, Any]]:
    """A Claude Code session of two calls, 2 minutes and 1 minute before ``now`` (both on
    today's date: just after midnight, in its first minutes): a prompt, a tool call and its
    result (re-sent by the second call), a reply."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    first = max(now - timedelta(minutes=2), midnight)
    stamps = (first, first + (now - first) / 2)
    at = [f"{stamp:%Y-%m-%dT%H:%M:%S}.{stamp.microsecond // 1000:03d}Z" for stamp in stamps]
    usage = [(3, 5200, 0, 40), (4, 300, 5200, 25)]  # input, cache write, cache read, output
    lines: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u0", "sessionId": NOW_SESSION, "timestamp": at[0],
         "message": {"role": "user", "content": "read the config"}},
    ]  # fmt: skip
    for n, (stamp, (fresh, write, read, out)) in enumerate(zip(at, usage, strict=True)):
        content: list[dict[str, Any]] = (
            [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/c"}}]
            if n == 0
            else [{"type": "text", "text": "done"}]
        )
        lines.append(
            {"type": "assistant", "uuid": f"a{n}", "sessionId": NOW_SESSION,
             "requestId": f"now-r{n}", "timestamp": stamp,
             "message": {"id": f"now-m{n}", "model": "claude-opus-4-5", "content": content,
                         "stop_reason": "tool_use" if n == 0 else "end_turn",
                         "usage": {"input_tokens": fresh, "cache_creation_input_tokens": write,
                                   "cache_read_input_tokens": read, "output_tokens": out}}}
        )  # fmt: skip
        if n == 0:
            lines.append(
                {"type": "user", "uuid": "u1", "sessionId": NOW_SESSION, "timestamp": stamp,
                 "message": {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1\n" * 3000}]}}
            )  # fmt: skip
    return lines


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a home holding every agent's logs (see the module docstring): its
    variables point at them alone, the cache and config are private, days are UTC."""
    root = write_mixed_tree(tmp_path_factory.mktemp("home"))
    for log in root.rglob("*.jsonl"):  # every log older than the session being written
        os.utime(log, (1_700_000_000, 1_700_000_000))
    _write(root / "claude" / "projects" / "-w" / f"{NOW_SESSION}.jsonl", _now_session(now()))
    return {
        "HOME": str(root),
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(REPO),
        "COPILOT_HOME": str(root / "copilot"),
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
        "CODEX_HOME": str(root / "codex"),
        "AGENTCOST_CACHE_DIR": str(root / "cache"),
        "AGENTCOST_CONFIG_DIR": str(root / "config"),
        "TZ": "UTC",
    }


@pytest.fixture(scope="module")
def budgeted(home: dict[str, str]) -> dict[str, str]:
    """The home's environment with a monthly budget of $40 saved (``budget set``)."""
    env = {**home, "AGENTCOST_CONFIG_DIR": home["AGENTCOST_CONFIG_DIR"] + "-budget"}
    subprocess.run([AGENTCOST, "budget", "set", "--usd", "40"], env=env, check=True)
    return env


def now() -> datetime:
    return datetime.now(UTC)


def cli(env: dict[str, str], *args: str) -> Any:
    """``agentcost ARGS`` in ``env``: its JSON output."""
    run = subprocess.run([AGENTCOST, *args], env=env, capture_output=True, text=True, check=False)
    assert run.returncode in (0, 1), run.stderr  # 1: budget --json when over the budget
    return json.loads(run.stdout)


def ask(env: dict[str, str], *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """Start ``agentcost mcp`` in ``env`` with the SDK's stdio client, initialize, list the
    tools and call each of ``calls``: ``{"init", "tools", "calls": [(is_error, text)]}``."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def session() -> dict[str, Any]:
        server = StdioServerParameters(command=AGENTCOST, args=["mcp"], env=env)
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            tools = await client.list_tools()
            answers = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                assert len(result.content) == 1 and result.content[0].type == "text"
                answers.append((result.is_error, result.content[0].text))
            return {"init": init, "tools": tools.tools, "calls": answers}

    return anyio.run(session)


def answer(env: dict[str, str], name: str, **arguments: Any) -> dict[str, Any]:
    """One tool's answer, parsed; it must not be an error and must carry its summary."""
    ((is_error, text),) = ask(env, (name, arguments))["calls"]
    assert not is_error, text
    found: dict[str, Any] = json.loads(text)
    summary = found.pop("summary")
    assert isinstance(summary, str) and summary and "\n" not in summary
    return found


@needs_mcp
def test_initialize_and_tools_list_name_every_tool(home: dict[str, str]) -> None:
    found = ask(home)
    assert found["init"].server_info.name == "agentcost"
    tools = {tool.name: tool for tool in found["tools"]}
    assert set(tools) == TOOLS
    for tool in tools.values():  # every tool reads any logs, the home by default
        assert tool.description and "paths" in tool.input_schema["properties"]


@needs_mcp
def test_spend_without_arguments_is_the_homes_total_as_analyze_gives_it(
    home: dict[str, str],
) -> None:
    found = answer(home, "spend")
    sessions = cli(home, "analyze", "-f", "json")["sessions"]
    total = sum(Decimal(s["cost_usd"]) for s in sessions if s["cost_usd"] is not None)
    assert {s["agent"] for s in sessions} == {"copilot", "claude-code", "codex"}
    spent = Decimal(found["totals"]["cost_usd"])
    assert spent.quantize(Decimal("0.01")) == total.quantize(Decimal("0.01"))
    assert spent == total  # exact: decimal strings, no float on the way
    assert found["totals"]["calls"] == sum(s["llm_calls"] for s in sessions)
    monthly = cli(home, "monthly", "-f", "json")
    assert found["periods"] == monthly["periods"]
    assert found["totals"] == monthly["totals"][0]


@needs_mcp
def test_spend_of_a_window_by_agent_is_daily_s(home: dict[str, str]) -> None:
    found = answer(home, "spend", since="2026-05-01", until="2026-08-04", by="agent")
    daily = cli(home, "daily", "--since", "2026-05-01", "--until", "2026-08-04", "--by", "agent",
                "-f", "json")  # fmt: skip
    assert found["periods"] == daily["periods"] and found["totals"] == daily["totals"][0]
    assert {row["agent"] for row in found["periods"]} == {"copilot", "claude-code", "codex"}
    today = answer(home, "spend", period="today")
    day = today["since"]
    assert day == today["until"] == str(now().date())
    assert (
        today["totals"]
        == cli(home, "daily", "--since", day, "--until", day, "-f", "json")["totals"][0]
    )
    assert today["totals"]["calls"] == 2  # the session being written


@needs_mcp
def test_session_cost_of_the_session_being_written_and_the_budget_left(
    home: dict[str, str], budgeted: dict[str, str]
) -> None:
    row = next(
        s for s in cli(home, "analyze", "-f", "json")["sessions"] if s["session_id"] == NOW_SESSION
    )
    found = answer(home, "session_cost")
    assert found["session"] == row and found["budget"] is None
    assert found["cost_is"] == "exact" and Decimal(row["cost_usd"]) > 0
    by_prefix = answer(home, "session_cost", session_id="cc-long")  # the start of an id
    assert by_prefix["session"]["session_id"] == "cc-long"
    left = answer(budgeted, "session_cost")["budget"]
    status = cli(budgeted, "budget", "--json")
    assert left["left_usd"] == status["left_usd"] and left["spent_usd"] == status["spent_usd"]
    assert Decimal(left["left_usd"]) == Decimal(40) - Decimal(row["cost_usd"])


@needs_mcp
def test_top_items_are_top_s_for_the_session(home: dict[str, str]) -> None:
    found = answer(home, "top_items", session_id="cx-1", limit=3)
    items = cli(home, "top", "--limit", "3", "--no-behaviour", "-f", "json")["items"]
    assert found["items"] == [item for item in items if item["session_id"] == "cx-1"]
    assert found["items"] and found["session_id"] == "cx-1"
    now_items = answer(home, "top_items")["items"]  # the session being written
    assert {item["session_id"] for item in now_items} == {NOW_SESSION}
    assert any(item["sends"] == 2 for item in now_items)  # the tool result, re-sent once


@needs_mcp
def test_blocks_are_blocks_s_with_the_active_one(home: dict[str, str]) -> None:
    found = answer(home, "blocks", token_limit="max")
    shown = cli(home, "blocks", "--token-limit", "max", "-f", "json")
    assert found["blocks"] == shown["blocks"] and len(found["blocks"]) > 1
    assert found["blocks"][-1]["active"] and found["blocks"][-1]["calls"] == 2
    ((pace,), (cli_pace,)) = found["active"], shown["active"]  # measured at two moments
    assert pace["token_limit"] == cli_pace["token_limit"] > 0
    assert abs(pace["minutes_left"] - cli_pace["minutes_left"]) < 5


@needs_mcp
def test_budget_is_budget_json(home: dict[str, str], budgeted: dict[str, str]) -> None:
    found = answer(budgeted, "budget")
    assert found == cli(budgeted, "budget", "--json")
    assert found["budget"]["usd"] == "40" and Decimal(found["spent_usd"]) > 0
    unset = answer(home, "budget")  # no budget: the month's spend all the same
    assert unset["budget"] is None and unset["spent_usd"] == found["spent_usd"]


@needs_mcp
@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("spend", {"period": "year"}, "Input should be 'today', 'week' or 'month'"),
        ("spend", {"since": "2026-08-05", "until": "2026-08-01"},
         "until 2026-08-01 is before since 2026-08-05"),
        ("spend", {"since": "yesterday"}, "since 'yesterday' is not a date; use YYYY-MM-DD"),
        ("spend", {"period": "week", "since": "2026-08-01"}, "give period or since/until"),
        ("session_cost", {"session_id": "no-such-session"}, "no session 'no-such-session'"),
        ("session_cost", {"session_id": "c"}, "give more of it"),
        ("top_items", {"session_id": "no-such-session"}, "no session 'no-such-session'"),
        ("blocks", {"token_limit": "lots"}, "token_limit 'lots': expected a number of tokens"),
        ("budget", {"timezone": "Mars/Olympus"}, "Mars/Olympus"),
        ("spend", {"paths": ["/no/such/dir"]}, "/no/such/dir"),
    ],
)  # fmt: skip
def test_a_bad_argument_is_a_tool_error_saying_what_is_wrong(
    home: dict[str, str], tool: str, arguments: dict[str, Any], words: str
) -> None:
    ((is_error, text),) = ask(home, (tool, arguments))["calls"]
    assert is_error and words in text
    assert "Traceback" not in text


@needs_mcp
def test_stdout_carries_the_protocol_alone(home: dict[str, str]) -> None:
    """A raw session: initialize, list, a bad call and a good one; every line on stdout is a
    JSON-RPC message, and each request has its answer."""
    from mcp_types import LATEST_PROTOCOL_VERSION

    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "spend", "arguments": {"since": "2026-13-01"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "spend", "arguments": {}}},
    ]  # fmt: skip
    server = subprocess.Popen(
        [AGENTCOST, "mcp"],
        env=home,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdin and server.stdout
    server.stdin.write("".join(json.dumps(request) + "\n" for request in requests))
    server.stdin.flush()
    lines, answers = [], {}
    while len(answers) < 4 and (line := server.stdout.readline()):  # stdin open till then
        lines.append(line)
        message = json.loads(line)
        answers.update({message["id"]: message} if "id" in message else {})
    rest, errors = server.communicate(timeout=60)  # closes stdin: the server ends
    messages = [json.loads(line) for line in [*lines, *rest.splitlines()]]
    assert all(message["jsonrpc"] == "2.0" for message in messages)
    assert set(answers) == {1, 2, 3, 4}, errors
    assert server.returncode == 0
    assert answers[3]["result"]["isError"] and not answers[4]["result"].get("isError")
    assert "Traceback" not in errors


def test_without_the_extra_one_line_says_what_to_install(tmp_path: Path) -> None:
    """An ``mcp`` that cannot be imported (the extra not installed): one line, exit 2."""
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    run = subprocess.run(
        [AGENTCOST, "mcp"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == (
        "agentcost: error: agentcost mcp needs the mcp extra: pip install 'agentcost[mcp]'\n"
    )


@needs_mcp
def test_spend_on_the_real_logs_is_analyze_s_total(real_logs: Path, home: dict[str, str]) -> None:
    """Every agent's real logs (``paths``): the total is analyze's, exactly."""
    found = answer(home, "spend", paths=[str(real_logs)])
    sessions = cli(home, "analyze", str(real_logs), "-f", "json")["sessions"]
    total = sum(Decimal(s["cost_usd"]) for s in sessions if s["cost_usd"] is not None)
    assert Decimal(found["totals"]["cost_usd"]) == total > 0
