"""pi's counting rules on literal lines, through the reader (the native fold), its homes
(pi's and OpenClaw's, with the environment's overrides), and what it recognizes."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.agents import claude_code, codex, pi
from analytics.agents.pi import openclaw
from analytics.core import registry

HEADER = {
    "type": "session",
    "version": 3,
    "id": "s1",
    "timestamp": "2026-05-01T10:00:00.000Z",
    "cwd": "/w",
}


def reply(
    n: int, usage: tuple[int, int, int, int], stop: str = "stop", response: bool = True
) -> dict[str, object]:
    """Assistant line ``n`` with usage (input, output, cache read, cache write)."""
    message: dict[str, object] = {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": usage[0],
            "output": usage[1],
            "cacheRead": usage[2],
            "cacheWrite": usage[3],
            "totalTokens": sum(usage),
            "cost": {"total": 0.0125},
        },
        "stopReason": stop,
        "timestamp": 1777629600000 + n,
    }
    if response:
        message["responseId"] = f"msg_{n}"
    return {
        "type": "message",
        "id": f"a{n}",
        "parentId": None,
        "timestamp": f"2026-05-01T10:00:{n % 60:02d}.500Z",
        "message": message,
    }


def write(path: Path, lines: list[dict[str, object]] | list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    )
    return path


@pytest.mark.parametrize(
    ("line", "pi_", "other"),
    [
        (HEADER, True, False),
        ({"type": "session", "id": "x", "version": 1}, True, False),
        ({"type": "session", "version": 3}, False, False),  # no id
        ({"type": "message", "id": "a", "message": {}}, False, False),
        ({"version": 1, "recordType": "message"}, False, False),  # pi-subagents artifact
        ({"id": "r", "type": "response", "command": "get_session_stats", "data": {}}, False, False),
        ({"type": "session_meta", "payload": {"id": "c"}}, False, True),  # Codex
        ({"type": "user", "sessionId": "s", "uuid": "u"}, False, True),  # Claude Code
    ],
)
def test_recognizes_only_a_session_header(line: dict[str, object], pi_: bool, other: bool) -> None:
    assert pi.recognizes(line) is pi_
    assert (claude_code.recognizes(line) or codex.recognizes(line)) is other
    assert openclaw.recognizes(line) is False


def test_a_call_as_the_contract_counts_it(tmp_path: Path) -> None:
    file = write(tmp_path / "s.jsonl", [HEADER, reply(1, (100, 20, 4000, 300))])
    calls = pi.read_files([file]).calls
    row = calls.row(0, named=True)
    assert (
        row["input_tokens"],
        row["output_tokens"],
        row["cache_read_tokens"],
        row["cache_write_tokens"],
    ) == (
        4400,
        20,
        4000,
        300,
    )
    assert row["reasoning_tokens"] is None
    assert (row["provider"], row["logged_cost_usd"], row["api_call_id"]) == (
        "anthropic",
        "0.0125",
        "msg_1",
    )
    assert (row["agent"], row["kind"], row["final_usage"], row["interrupted"]) == (
        "pi",
        "main",
        True,
        False,
    )


@pytest.mark.parametrize(
    ("stop", "response", "interrupted"),
    [("aborted", True, True), ("error", False, False), ("length", True, False)],
)
def test_aborted_and_failed_requests_are_calls(
    tmp_path: Path, stop: str, response: bool, interrupted: bool
) -> None:
    file = write(tmp_path / "s.jsonl", [HEADER, reply(1, (0, 0, 0, 0), stop, response)])
    tables = pi.read_files([file])
    assert tables.calls["interrupted"].to_list() == [interrupted]
    # an aborted stream never got the provider's final usage: its zeros are a lower bound
    assert tables.calls["final_usage"].to_list() == [not interrupted]
    assert tables.calls["output_tokens"].to_list() == [0]
    assert tables.sessions["interrupted_calls"].to_list() == [int(interrupted)]


def test_copies_forks_and_snapshots_count_each_call_once(tmp_path: Path) -> None:
    lines = [HEADER, reply(1, (10, 1, 0, 0)), reply(2, (20, 2, 0, 0))]
    home = tmp_path / "sessions" / "--w--"
    parent = write(home / "2026-05-01T10-00-00-000Z_s1.jsonl", lines)
    write(tmp_path / "backup" / parent.name, lines[:2])  # an earlier snapshot
    fork_header = {
        **HEADER,
        "id": "f1",
        "timestamp": "2026-05-01T11:00:00.000Z",
        "parentSession": str(parent),
    }
    write(
        home / "2026-05-01T11-00-00-000Z_f1.jsonl",
        [fork_header, *lines[1:], reply(70, (5, 5, 0, 0))],
    )
    tables = pi.read([tmp_path])
    by_session = dict(tables.sessions.select("session_id", "llm_calls").iter_rows())
    assert by_session == {"s1": 2, "f1": 1}
    assert tables.sessions.filter(pl.col("session_id") == "f1")["parent_session_id"].to_list() == [
        "s1"
    ]
    assert tables.calls["input_tokens"].sum() == 35


def test_bad_lines_are_issues_and_the_rest_is_read(tmp_path: Path) -> None:
    lines = [
        json.dumps(HEADER),
        "{not json",
        "\x00\x00",
        '{"type":"warp","id":"w"}',
        json.dumps(reply(1, (1, 1, 0, 0))),
    ]
    file = write(tmp_path / "s.jsonl", lines)
    with file.open("a") as out:
        out.write('{"type":"message","id":"a2"')  # torn
    tables = pi.read_files([file])
    assert tables.calls.height == 1
    severities = sorted(tables.issues["severity"].to_list())
    assert severities.count("error") == 2
    assert tables.sessions["unknown_lines"].to_list() == [1]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    usage=st.lists(st.tuples(*[st.integers(0, 5000)] * 4), min_size=1, max_size=6),
    copies=st.lists(st.integers(1, 7), max_size=4),
)
def test_calls_count_once_however_many_copies(
    tmp_path_factory: pytest.TempPathFactory,
    usage: list[tuple[int, int, int, int]],
    copies: list[int],
) -> None:
    """A session's calls and tokens are the same however many snapshots (prefixes) of its
    file lie beside it; every line is a session's."""
    root = tmp_path_factory.mktemp("copies")
    lines = [HEADER, *(reply(n, u) for n, u in enumerate(usage))]
    files = [write(root / "s.jsonl", lines)]
    files += [
        write(root / f"copy{k}" / "s.jsonl", lines[: 1 + cut]) for k, cut in enumerate(copies)
    ]
    tables = pi.read_files(files)
    assert tables.calls.height == len(usage)
    assert tables.calls["input_tokens"].sum() == sum(u[0] + u[2] + u[3] for u in usage)
    assert tables.calls["output_tokens"].sum() == sum(u[1] for u in usage)
    assert sum(Decimal(c) for c in tables.calls["logged_cost_usd"]) == Decimal("0.0125") * len(
        usage
    )
    assert tables.sessions["lines_read"].sum() == sum(
        1 + min(cut, len(usage)) for cut in copies
    ) + len(lines)


def test_pis_home_and_its_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(variable, raising=False)
    assert pi.homes() == []
    assert pi.read().calls.height == 0  # an absent home is silent
    default = tmp_path / ".pi" / "agent" / "sessions"
    write(default / "--w--" / "2026-05-01T10-00-00-000Z_s1.jsonl", [HEADER, reply(1, (1, 1, 0, 0))])
    assert pi.homes() == [default]
    assert pi.read().calls.height == 1
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert pi.homes() == []
    (tmp_path / "agent" / "sessions").mkdir(parents=True)
    assert pi.homes() == [tmp_path / "agent" / "sessions"]
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "elsewhere"))
    assert pi.homes() == []
    (tmp_path / "elsewhere").mkdir()
    assert pi.homes() == [tmp_path / "elsewhere"]


def test_openclaws_home_and_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)
    assert openclaw.homes() == []
    sessions = tmp_path / ".openclaw" / "agents" / "main" / "sessions"
    session = write(sessions / "s1.jsonl", [HEADER, reply(1, (1, 1, 0, 0))])
    write(sessions / "s1.trajectory.jsonl", ['{"type":"token","t":1}'])
    (sessions / "sessions.json").write_text("{}")
    assert openclaw.homes() == [tmp_path / ".openclaw" / "agents"]
    assert openclaw.discover([tmp_path / ".openclaw"]) == [[session]]
    tables = openclaw.read()
    assert (tables.calls["agent"].to_list(), tables.sessions["agent"].to_list()) == (
        ["openclaw"],
        ["openclaw"],
    )
    # discovery gives OpenClaw's files to pi's reader (same lines): it folds them as OpenClaw's
    mixed = pi.read_files([session, sessions / "s1.trajectory.jsonl"])
    assert mixed.calls["agent"].to_list() == ["openclaw"]
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    assert openclaw.homes() == []


def test_the_registry_lines() -> None:
    assert [registry.PI.reader, registry.OPENCLAW.reader] == [
        "analytics.agents.pi",
        "analytics.agents.pi.openclaw",
    ]
    assert not registry.PI.blocks and not registry.OPENCLAW.blocks
    assert registry.PI.logs_in == ("sessions",) and registry.OPENCLAW.logs_in == ("agents",)
