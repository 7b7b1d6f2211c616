"""The Claude Code and Codex readers (``analytics.agents``) on literal log lines: discovery,
the tables' contract, bad input, and hypothesis properties of the folds (copies, streamed
replies and fork replays change no figure). The folds' rules themselves are tested line by
line in ``native/agents/claude_code/`` and ``codex/``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics import _scanner
from analytics.agents import (
    AgentTables,
    call_columns,
    claude_code,
    codex,
    issue_columns,
    item_columns,
    session_columns,
)

T0 = "2026-05-01T10:00:0{}.000Z"
START = datetime(2026, 5, 1, 10, tzinfo=UTC)


def reply(session: str, mid: str, stop: str | None, out: int, second: int = 1) -> str:
    """A Claude Code assistant line of request (``mid``, ``req_<mid>``)."""
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": session,
            "requestId": f"req_{mid}",
            "timestamp": T0.format(second),
            "version": "2.1.101",
            "message": {
                "id": mid,
                "model": "claude-opus-4-6",
                "stop_reason": stop,
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 1000,
                    "output_tokens": out,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 40,
                        "ephemeral_1h_input_tokens": 60,
                    },
                },
            },
        }
    )


def token_count(second: int, total: tuple[int, int], last: tuple[int, int]) -> str:
    """A Codex token_count ``second`` s after 10:00: running total and last request as
    (input, output)."""

    def usage(u: tuple[int, int]) -> dict[str, int]:
        return {
            "input_tokens": u[0],
            "cached_input_tokens": 0,
            "output_tokens": u[1],
            "reasoning_output_tokens": 0,
            "total_tokens": u[0] + u[1],
        }

    stamp = (START + timedelta(seconds=second)).isoformat(timespec="milliseconds")[:-6] + "Z"
    info = {"total_token_usage": usage(total), "last_token_usage": usage(last)}
    return json.dumps(
        {
            "timestamp": stamp,
            "type": "event_msg",
            "payload": {"type": "token_count", "info": info},
        }
    )


def meta(session: str, stamp: str, forked_from: str | None = None) -> str:
    payload = {"id": session, "timestamp": stamp, "cwd": "/w", "cli_version": "0.130.0"}
    if forked_from:
        payload["forked_from_id"] = forked_from
    return json.dumps({"timestamp": stamp, "type": "session_meta", "payload": payload})


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def figures(tables: AgentTables) -> dict[str, tuple[int, ...]]:
    """Per session: calls, input, cache reads, cache writes, output."""
    sums = tables.calls.group_by("session_id").agg(
        pl.len().cast(pl.Int64),
        *(
            pl.col(c).fill_null(0).sum()
            for c in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
        ),
    )
    return {row[0]: tuple(row[1:]) for row in sums.iter_rows()}


def test_the_native_columns_are_the_contract() -> None:
    calls, sessions, issues, items = _scanner.fold_columns()
    assert calls == list(call_columns())
    assert sessions == list(session_columns())
    assert issues == list(issue_columns())
    assert items == list(item_columns())


def test_claude_code_tables_have_the_contract_dtypes(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-w"
    write(project / "s1.jsonl", [reply("s1", "m1", None, 5), reply("s1", "m1", "end_turn", 42)])
    tables = claude_code.read([tmp_path / "projects"])
    assert tables.calls.schema == pl.Schema(call_columns())
    assert tables.sessions.schema == pl.Schema(session_columns())
    assert tables.issues.schema == pl.Schema(issue_columns())
    call = tables.calls.row(0, named=True)
    assert (call["agent"], call["output_tokens"], call["input_tokens"]) == ("claude-code", 42, 1103)
    assert (call["cache_write_1h_tokens"], call["token_source"], call["final_usage"]) == (
        60,
        "observed",
        True,
    )
    assert str(call["start_time"]) == "2026-05-01 10:00:01+00:00"
    empty = claude_code.read([tmp_path / "nothing-here"])
    assert empty.calls.schema == pl.Schema(call_columns())
    assert empty.calls.height == 0


def test_claude_code_homes_and_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    (first / "projects").mkdir(parents=True)
    second.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{first}, {second}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert claude_code.homes() == [first / "projects"]
    assert not (second / "projects").exists(), "discovery never creates a home"
    project = first / "projects" / "-w"
    session = write(project / "s1.jsonl", [reply("s1", "m1", "end_turn", 1)])
    sub = write(project / "s1" / "subagents" / "agent-a1.jsonl", [reply("s1", "m2", "end_turn", 2)])
    other = write(first / "projects" / "-x" / "s9.jsonl", [reply("s9", "m9", "end_turn", 9)])
    assert claude_code.discover([first / "projects"]) == [[session, sub], [other]]
    assert claude_code.discover([session]) == [[session, sub]]
    tables = claude_code.read()
    kinds = dict(tables.calls.select("api_call_id", "kind").iter_rows())
    assert kinds == {"m1": "main", "m2": "subagent", "m9": "main"}


def test_codex_home_and_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    assert codex.homes() == []
    lines = [meta("s1", "2026-05-01T10:00:00.000Z"), token_count(3, (100, 10), (100, 10))]
    live = write(home / "sessions" / "2026" / "05" / "01" / "rollout-x-s1.jsonl", lines)
    archived = write(home / "archived_sessions" / "rollout-x-s1.jsonl", lines)
    write(home / "history.jsonl", ['{"session_id":"s1"}'])
    assert codex.homes() == [home / "sessions", home / "archived_sessions"]
    assert codex.discover([home]) == [[live, archived]]
    tables = codex.read()
    assert figures(tables) == {"s1": (1, 100, 0, 0, 10)}, "a copy in archived_sessions"
    assert tables.calls["agent"].to_list() == ["codex"]


def test_bad_input_is_an_issue_with_its_file_and_line(tmp_path: Path) -> None:
    good = reply("s1", "m1", "end_turn", 10)
    path = tmp_path / "p" / "s1.jsonl"
    path.parent.mkdir()
    path.write_bytes(
        b"\n".join(
            [
                good.encode(),
                good[:40].encode(),
                b"\x00\x00" + reply("s1", "m2", "end_turn", 20).encode(),
                reply("s1", "m3", "end_turn", 30).encode().replace(b"2.1.101", b"2.1.\xff"),
                b'{"type":"assistant","sessionId":"s1","message":{"model":"m","usage":{}}}',
            ]
        )
    )
    tables = claude_code.read_files([path])
    assert tables.calls.height == 3
    issues = tables.issues.select("line", "severity").rows()
    assert issues == [(2, "error"), (3, "warning"), (4, "warning"), (5, "error")]
    assert set(tables.issues["file"]) == {str(path)}


def claude_session(requests: list[tuple[int, int, bool]]) -> list[str]:
    """Lines of requests (partial lines before the last, output, finished)."""
    lines = []
    for r, (partial, output, finished) in enumerate(requests):
        lines += [reply("s1", f"m{r}", None, min(k, output)) for k in range(partial)]
        lines.append(reply("s1", f"m{r}", "end_turn" if finished else None, output))
    return lines


requests = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 400), st.booleans()), min_size=1, max_size=5
)


@given(requests=requests, twice=st.integers(0, 100), cut=st.integers(0, 100))
def test_claude_copies_change_no_figure(
    tmp_path_factory: pytest.TempPathFactory,
    requests: list[tuple[int, int, bool]],
    twice: int,
    cut: int,
) -> None:
    root = tmp_path_factory.mktemp("claude")
    lines = claude_session(requests)
    expected = figures(claude_code.read_files([write(root / "a" / "s1.jsonl", lines)]))
    doubled = [*lines[: twice % len(lines) + 1], *lines[twice % len(lines) :]]
    got = claude_code.read_files([write(root / "b" / "s1.jsonl", doubled)])
    assert figures(got) == expected
    resumed = [
        write(root / "c" / "s1.jsonl", lines),
        write(root / "c" / "s2.jsonl", lines[: cut % len(lines) + 1]),
    ]
    assert figures(claude_code.read_files(resumed)) == expected


@given(
    increments=st.lists(st.tuples(st.integers(1, 999), st.integers(0, 99)), min_size=1, max_size=6),
    own=st.lists(st.tuples(st.integers(1, 999), st.integers(0, 99)), min_size=1, max_size=3),
    fork_after=st.integers(0, 100),
)
def test_codex_fork_replay_adds_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    increments: list[tuple[int, int]],
    own: list[tuple[int, int]],
    fork_after: int,
) -> None:
    root = tmp_path_factory.mktemp("codex")
    parent = [meta("p", "2026-05-01T10:00:00.000Z")]
    total = (0, 0)
    for k, (i, o) in enumerate(increments):
        total = (total[0] + i, total[1] + o)
        parent.append(token_count(k + 1, total, (i, o)))
    upto = 1 + fork_after % len(increments)
    child = [meta("c", "2026-05-01T11:00:00.000Z", forked_from="p")]
    child += [  # the copy, stamped as it was written: at the fork
        json.dumps({**json.loads(line), "timestamp": "2026-05-01T11:00:00.002Z"})
        for line in parent[: upto + 1]
    ]
    seeded = (sum(i for i, _ in increments[:upto]), sum(o for _, o in increments[:upto]))
    for k, (i, o) in enumerate(own):
        seeded = (seeded[0] + i, seeded[1] + o)
        child.append(token_count(3600 + 30 + k, seeded, (i, o)))
    got = figures(
        codex.read_files([write(root / "p.jsonl", parent), write(root / "c.jsonl", child)])
    )
    inputs, outputs = zip(*increments, strict=True)
    assert got["p"] == (len(increments), sum(inputs), 0, 0, sum(outputs))
    assert got["c"] == (len(own), sum(i for i, _ in own), 0, 0, sum(o for _, o in own))


def test_claude_a_request_copied_between_projects_counts_once(tmp_path: Path) -> None:
    lines = [reply("s1", "m1", "end_turn", 10), reply("s1", "m2", "end_turn", 20, second=2)]
    write(tmp_path / "projects" / "-old-name" / "s1.jsonl", lines)
    write(tmp_path / "projects" / "-new-name" / "s1.jsonl", lines)
    assert len(claude_code.discover([tmp_path / "projects"])) == 2
    tables = claude_code.read([tmp_path / "projects"])
    assert figures(tables) == {"s1": (2, 2206, 2000, 200, 30)}


#: Lines whose hygiene every agent's reader shares (``native/read/line.rs``): a line of
#: Unicode space (U+00A0, U+2003) is blank, a byte order mark and NULs are read past, a line
#: that is JSON but not an object is an error, each with the same words.
HYGIENE_LINES = [
    ("\u00a0", "warning", "blank line ignored"),
    ("\u2003 \u3000", "warning", "blank line ignored"),
    ("[1, 2]", "error", "not a JSON object: list"),
    ('{"type": "x"', "error", "invalid JSON (truncated line?): Expecting ',' delimiter"),
]


@pytest.mark.parametrize("agent", ["copilot", "claude-code", "codex"])
def test_a_line_reads_alike_in_every_agents_log(tmp_path: Path, agent: str) -> None:
    """A log of each agent, its good lines followed by the same odd lines: the same issues.
    Before, a U+00A0 line was a blank-line warning in a Copilot log and a JSON error in a
    Claude Code or Codex one."""
    from analytics.engine.analyze import analyze

    good = {
        "copilot": [
            json.dumps({"type": "session.start", "data": {"sessionId": "s"}, "id": "1"}),
        ],
        "claude-code": [reply("s1", "m1", "end_turn", 10)],
        "codex": [meta("c1", "2026-05-01T10:00:00.000Z"), token_count(1, (10, 1), (10, 1))],
    }[agent]
    folder = {"copilot": "session-state/s", "claude-code": "projects/p", "codex": "sessions"}
    name = {"copilot": "events.jsonl", "claude-code": "s1.jsonl", "codex": "rollout-c1.jsonl"}
    path = write(tmp_path / folder[agent] / name[agent], good + [t for t, _, _ in HYGIENE_LINES])
    issues = analyze([path]).issues.filter(pl.col("line") > len(good))
    found = [(sev, msg) for sev, msg in issues.select("severity", "message").rows()]
    for (_, severity, words), (got_severity, got) in zip(HYGIENE_LINES, found, strict=True):
        assert (got_severity, got[: len(words)]) == (severity, words)


def test_every_registered_reader_keeps_the_reader_contract() -> None:
    """Each agent the registry names a reader for offers ``discover`` and ``read_files`` with
    the :class:`analytics.agents.reader.Reader` signatures, so the engine and ``watch``
    reach it through the registry alone."""
    import inspect

    from analytics.agents.reader import Reader, reader_of, readers
    from analytics.core.registry import AGENTS

    found = readers()
    assert [agent.id for agent, _ in found] == [agent.id for agent in AGENTS if agent.reader]
    assert len(found) >= 2
    for agent, reader in found:
        for name in ("recognizes", "claims", "homes", "discover", "read_files"):
            wanted = inspect.signature(getattr(Reader, name))
            given = inspect.signature(getattr(reader, name))
            assert list(given.parameters) == [p for p in wanted.parameters if p != "self"]
        assert reader_of(agent.id) is reader
    with pytest.raises(KeyError):
        reader_of("copilot")  # the engine's own pipeline reads Copilot's logs
