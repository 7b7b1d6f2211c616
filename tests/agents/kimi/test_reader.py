"""The Kimi reader: which first records are Kimi's (and no other agent's), where its homes
are, which files of a home are read, and the counting rules on literal lines through the
reader (the native fold's own tests, ``native/agents/kimi/tests.rs``, take each rule apart).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.agents import claude_code, codex, kimi
from analytics.agents.discover import agent_of

META = {"type": "metadata", "protocol_version": "1.5", "created_at": 1000}
LEGACY = {"timestamp": 1760000000.5, "message": {"type": "TurnBegin", "payload": {}}}


def request(t: int) -> dict[str, object]:
    return {
        "type": "llm.request",
        "agentId": "main",
        "provider": "openai",
        "model": "kimi-k2.7-code",
        "modelAlias": "moonshot-ai/kimi-k2.7-code",
        "time": t,
    }


def usage(other: int, out: int, read: int, write: int = 0) -> dict[str, int]:
    return {"inputOther": other, "output": out, "inputCacheRead": read, "inputCacheCreation": write}


def record(t: int, u: dict[str, int], scope: str = "turn") -> dict[str, object]:
    return {
        "type": "usage.record",
        "agentId": "main",
        "model": "moonshot-ai/kimi-k2.7-code",
        "usage": u,
        "usageScope": scope,
        "time": t,
    }


def step_end(t: int, u: dict[str, int] | None) -> dict[str, object]:
    event: dict[str, object] = {"type": "step.end", "uuid": f"s{t}", "finishReason": "tool_use"}
    if u is None:
        event["finishReason"] = "error"
    else:
        event |= {"usage": u, "messageId": f"chatcmpl-{t}"}
    return {"type": "context.append_loop_event", "agentId": "main", "event": event, "time": t}


def replay(t: int, u: dict[str, int]) -> dict[str, object]:
    meta = {"model": {"provider": "agent-loop", "model": "agent-loop"}, "usage": u}
    return {
        "message": {"message": {"role": "assistant", "content": []}, "meta": meta},
        "type": "agent.message.appended",
        "time": t,
        "kind": "event",
    }


RETRY = {"type": "turn.step.retrying", "agentId": "main", "failedAttempt": 1, "statusCode": 429}
A, B = usage(100, 10, 50), usage(20, 5, 150)
#: One turn: a request whose usage is written three times, a rate-limited attempt, the
#: request that succeeds.
TURN = [
    META,
    request(1),
    record(2, A),
    step_end(3, A),
    request(4),
    step_end(5, None),
    RETRY,
    request(6),
    record(7, B),
    step_end(8, B),
    replay(9, A),
    replay(9, B),
]


def lines(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def wire(root: Path, session: str, text: str, agent: str = "main") -> Path:
    path = root / session / "agents" / agent / "wire.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "kimis"),
    [
        (META, True),
        ({"type": "metadata", "protocol_version": "1.1"}, True),  # kimi-cli's header
        ({"type": "metadata"}, False),
        (LEGACY, True),  # a kimi-cli wire without a header
        ({"role": "_checkpoint", "id": 0}, True),  # kimi-cli context.jsonl, skipped
        ({"role": "_system_prompt", "content": "You are"}, True),
        ({"role": "user", "content": "hi"}, False),
        ({"sessionId": "session_1", "sessionDir": "/h", "workDir": "/w"}, True),  # the index
        ({"content": "a prompt typed"}, False),  # kimi-cli user-history: too bare to claim
        ({"content": "a prompt", "role": "user"}, False),
        ({"type": "user", "sessionId": "s", "uuid": "u", "message": {}}, False),  # Claude Code
        ({"type": "session_meta", "payload": {"id": "x"}, "timestamp": "t"}, False),  # Codex
        ({"type": "session.start", "data": {}, "id": "e"}, False),  # Copilot
    ],
)
def test_recognizes_kimi_first_records_only(line: dict[str, object], kimis: bool) -> None:
    assert kimi.recognizes(line) is kimis


@pytest.mark.parametrize("line", [META, LEGACY, {"role": "_checkpoint", "id": 0}])
def test_no_other_agent_claims_a_kimi_first_record(line: dict[str, object]) -> None:
    assert not claude_code.recognizes(line)
    assert not codex.recognizes(line)


@pytest.mark.parametrize(
    ("name", "text", "agent"),
    [
        ("wire.jsonl", lines(TURN), "kimi"),
        ("context.jsonl", '{"role": "_checkpoint", "id": 0}\n', "kimi"),
        ("session_index.jsonl", '{"sessionId": "s", "sessionDir": "/", "workDir": "/"}\n', "kimi"),
        ("0a1b.jsonl", '{"content": "fix it"}\n', None),  # kimi-cli user-history: not a log
    ],
)
def test_discovery_tells_each_file_of_a_home(
    tmp_path: Path, name: str, text: str, agent: str | None
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert agent_of(path) == agent


def test_homes_default_each_variable_replaces_its_own_and_absent_is_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KIMI_CODE_HOME", raising=False)
    monkeypatch.delenv("KIMI_SHARE_DIR", raising=False)
    assert kimi.homes() == []
    assert kimi.read().calls.height == 0
    code, legacy = tmp_path / ".kimi-code" / "sessions", tmp_path / ".kimi" / "sessions"
    wire(code, "wd_p_1/session_a", lines(TURN))
    legacy.mkdir(parents=True)
    assert kimi.homes() == [code, legacy]
    assert kimi.read().calls.height == 2
    other = tmp_path / "elsewhere"
    wire(other / "sessions", "wd_p_2/session_b", lines(TURN))
    monkeypatch.setenv("KIMI_CODE_HOME", str(other))
    assert kimi.homes() == [other / "sessions", legacy]
    assert set(kimi.read().sessions["session_id"]) == {"session_b"}


def test_a_home_named_reads_its_wires_not_its_index(tmp_path: Path) -> None:
    index = tmp_path / "session_index.jsonl"
    index.write_text('{"sessionId": "s", "sessionDir": "/d", "workDir": "/w"}\n', "utf-8")
    path = wire(tmp_path / "sessions", "wd_p_1/session_a", lines(TURN))
    (path.parent.parent.parent / "state.json").write_text(
        json.dumps({"id": "session_a", "cwd": "/w/p"}), encoding="utf-8"
    )
    assert kimi.discover([tmp_path]) == [[path]]
    sessions = kimi.read([tmp_path]).sessions
    assert sessions.select("session_id", "cwd").rows() == [("session_a", "/w/p")]
    claimed = kimi.read_files([index, path])  # as discovery hands them over
    assert claimed.sessions["session_id"].to_list() == ["session_a"]
    assert claimed.issues.height == 0


def figures(text: str) -> tuple[object, ...]:
    """Calls, input, cache reads, output, calls without final usage, issues by severity and
    unknown lines of ``text`` read as one wire."""
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        tables = kimi.read_files([wire(Path(root), "s", text)])
    calls, issues = tables.calls, tables.issues
    return (
        calls.height,
        calls["input_tokens"].sum(),
        calls["cache_read_tokens"].sum(),
        calls["output_tokens"].sum(),
        int((~calls["final_usage"]).sum()),
        sorted(issues["severity"]),
        int(tables.sessions["unknown_lines"].sum()),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # one call per usage.record: not the step.end and replay copies, not the 429 attempt
        (lines(TURN), (2, 320, 200, 15, 0, [], 0)),
        # the same file with a line written twice: the same calls
        (lines([*TURN, record(7, B)]), (2, 320, 200, 15, 0, [], 0)),
        # a compaction request (usageScope session) is a call
        (lines([META, record(2, A, "session")]), (1, 150, 50, 10, 0, [], 0)),
        # all zeros: the provider sent no usage, a call of unknown tokens
        (lines([META, record(2, usage(0, 0, 0))]), (1, 0, 0, 0, 1, [], 0)),
        # a record without usage: a call of unknown tokens, with a warning
        (
            lines([META, {"type": "usage.record", "agentId": "main", "time": 2}]),
            (1, 0, 0, 0, 1, ["warning"], 0),
        ),
        # a sub-agent's total, restated in the parent's wire, is not a call
        (
            lines([META, {"type": "subagent.completed", "agentId": "agent-0", "usage": A}]),
            (0, 0, 0, 0, 0, [], 0),
        ),
        # unknown record types are counted and named once
        (
            lines([META, {"type": "x.y", "time": 1}, {"type": "x.z"}, record(2, A)]),
            (1, 150, 50, 10, 0, ["warning"], 2),
        ),
        # an unknown protocol version is a warning, the rest is read
        (
            lines([{**META, "protocol_version": "9.0"}, record(2, A)]),
            (1, 150, 50, 10, 0, ["warning"], 0),
        ),
        # a truncated last line is an error, the rest is read
        (lines([META, record(2, A)]) + '{"type": "usage.rec', (1, 150, 50, 10, 0, ["error"], 0)),
        # NUL bytes in a line are removed with a warning
        (lines([META]) + "\x00\x00" + lines([record(2, A)]), (1, 150, 50, 10, 0, ["warning"], 0)),
        # a line that is not JSON is an error
        (lines([META]) + "not json\n" + lines([record(2, A)]), (1, 150, 50, 10, 0, ["error"], 0)),
    ],
)
def test_counting_rules(text: str, expected: tuple[object, ...]) -> None:
    assert figures(text) == expected


@given(
    homes=st.integers(min_value=1, max_value=3),
    cuts=st.lists(st.integers(min_value=1, max_value=len(TURN)), max_size=3),
    doubled=st.lists(st.integers(min_value=0, max_value=len(TURN) - 1), max_size=3),
)
def test_a_sessions_calls_count_once_however_many_copies(
    homes: int, cuts: list[int], doubled: list[int]
) -> None:
    """Copies of a wire in other homes (whole, or a prefix kept from before a resume), and
    lines written twice, add no call: each of the turn's two calls counts once."""
    import tempfile

    records = list(TURN)
    for at in doubled:
        records.insert(at, records[at])
    with tempfile.TemporaryDirectory() as root:
        files = [wire(Path(root) / f"home{h}", "session_a", lines(records)) for h in range(homes)]
        for i, cut in enumerate(cuts):
            files.append(wire(Path(root) / f"cut{i}", "session_a", lines(TURN[:cut])))
        tables = kimi.read_files(files)
    assert tables.calls.height == 2
    assert tables.sessions["session_id"].to_list() == ["session_a"]
    assert tables.calls.select(pl.col("input_tokens").sum()).item() == 320


#: Lines of any kind a wire may hold, damaged ones included.
ANY_LINE = st.one_of(
    st.sampled_from([json.dumps(r) for r in TURN]),
    st.just(json.dumps({"type": "brand.new", "time": 1})),
    st.just(json.dumps({"no": "type"})),
    st.just("[1, 2]"),
    st.just("not json"),
    st.just('{"type": "usage.rec'),
)


@given(st.lists(ANY_LINE, min_size=1, max_size=12))
def test_every_line_is_read_or_an_error(texts: list[str]) -> None:
    """Every line of a wire is a line of its session (read, or counted as unknown) or an
    error issue; nothing is lost without a word."""
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        tables = kimi.read_files([wire(Path(root), "s", "".join(f"{t}\n" for t in texts))])
    errors = tables.issues.filter(pl.col("severity") == "error").height
    assert int(tables.sessions["lines_read"].sum()) + errors == len(texts)
