"""Gemini CLI's counting rules, each on literal recording lines: upserts, checkpoints,
rewinds, compression, per-session ids, several sessions per file, the model of each record,
the token arithmetic, sub-agents, legacy documents, and bad input (unknown records, invalid,
truncated and NUL-damaged lines), with hypothesis properties for the invariants.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.agents import AgentTables, gemini_cli
from analytics.core import items as kinds

T0 = "2026-06-12T10:00:00.000Z"


def header(session: str = "s1", kind: str = "main") -> dict[str, Any]:
    return {
        "sessionId": session,
        "projectHash": "ab" * 32,
        "startTime": T0,
        "lastUpdated": T0,
        "kind": kind,
    }


def user(mid: str, text: str = "hi", t: str = "2026-06-12T10:00:01.000Z") -> dict[str, Any]:
    return {"id": mid, "timestamp": t, "type": "user", "content": [{"text": text}]}


def gemini(
    mid: str,
    *,
    tokens: dict[str, int] | None = None,
    model: str = "gemini-3.5-flash",
    t: str = "2026-06-12T10:00:02.000Z",
    tools: list[str] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    record: dict[str, Any] = {"id": mid, "timestamp": t, "type": "gemini", "content": "ok"}
    record["thoughts"] = []
    if tokens is not None:
        record["tokens"] = tokens
    record["model"] = model
    if tools:
        record["toolCalls"] = [
            {"id": f"{name}_1", "name": name, "args": {"p": 1}, "status": "success"}
            for name in tools
        ]
    return record


def tok(inp: int, out: int, cached: int = 0, thoughts: int = 0, tool: int = 0) -> dict[str, int]:
    total = inp + out + thoughts + tool
    return {
        "input": inp,
        "output": out,
        "cached": cached,
        "thoughts": thoughts,
        "tool": tool,
        "total": total,
    }


def text(records: list[Any]) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def fold(tmp_path: Path, files: dict[str, Any]) -> AgentTables:
    """Write ``files`` (relative path: records or raw text) and fold them as one group."""
    paths = []
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else text(content))
        paths.append(path)
    return gemini_cli.read_files(paths)


def sums(tables: AgentTables) -> tuple[int, ...]:
    calls = tables.calls
    cols = ("input_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens")
    return (calls.height, *(int(calls[c].sum()) for c in cols))


A = tok(100, 5, cached=40, thoughts=7)
B = tok(200, 3, thoughts=2)

#: (case, records, expected (calls, input, cache read, output, reasoning))
CASES = [
    ("one call", [header(), user("u1"), gemini("g1", tokens=A)], (1, 100, 40, 12, 7)),
    (
        "a tool-call upsert is the same call",
        [header(), user("u1"), gemini("g1", tokens=A), gemini("g1", tokens=A, tools=["glob"])],
        (1, 100, 40, 12, 7),
    ),
    (
        "a checkpoint re-listing a call adds nothing",
        [
            header(),
            gemini("g1", tokens=A),
            {"$set": {"messages": [user("u1"), gemini("g1", tokens=A)]}},
        ],
        (1, 100, 40, 12, 7),
    ),
    (
        "a call seen only in a checkpoint counts",
        [header(), {"$set": {"messages": [user("u1"), gemini("g1", tokens=A)]}}],
        (1, 100, 40, 12, 7),
    ),
    (
        "a rewound call was billed and counts",
        [
            header(),
            user("u1"),
            gemini("g1", tokens=A),
            user("u2"),
            gemini("g2", tokens=B),
            {"$rewindTo": "u2"},
            {"$set": {"messages": [user("u1"), gemini("g1", tokens=A)]}},
        ],
        (2, 300, 40, 17, 9),
    ),
    (
        "a compression checkpoint dropping a call keeps it; synthetic turns are no calls",
        [
            header(),
            user("u1"),
            gemini("g1", tokens=A),
            {"$set": {"messages": [user("c1", "summary"), gemini("c2")]}},
        ],
        (1, 100, 40, 12, 7),
    ),
    ("a gemini record without tokens is no call", [header(), gemini("g1")], (0, 0, 0, 0, 0)),
    (
        "tool-use prompt tokens are input the prompt count leaves out",
        [header(), gemini("g1", tokens=tok(100, 5, thoughts=7, tool=11))],
        (1, 111, 0, 12, 7),
    ),
    (
        "notices are no calls",
        [
            header(),
            {"id": "i1", "timestamp": T0, "type": "info", "content": "Request cancelled."},
            {"id": "e1", "timestamp": T0, "type": "error", "content": "[API Error: 500]"},
        ],
        (0, 0, 0, 0, 0),
    ),
    (
        "ids are per session: the same id in two sessions is two calls",
        [header("s1"), gemini("g1", tokens=A), header("s2"), gemini("g1", tokens=A)],
        (2, 200, 80, 24, 14),
    ),
    (
        "$set.sessionId keeps the file's session",
        [
            header("s1"),
            gemini("g1", tokens=A),
            {"$set": {"sessionId": "s1"}},
            gemini("g1", tokens=A),
        ],
        (1, 100, 40, 12, 7),
    ),
]


@pytest.mark.parametrize(("records", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_counting_rule(tmp_path: Path, records: list[Any], expected: tuple[int, ...]) -> None:
    tables = fold(tmp_path, {"chats/session-1.jsonl": records})
    assert sums(tables) == expected
    assert tables.issues.height == 0


def test_the_model_is_each_records_own(tmp_path: Path) -> None:
    notice = {
        "id": "i1",
        "timestamp": T0,
        "type": "info",
        "content": "Model set to gemini-2.5-flash",
    }
    records = [
        header(),
        gemini("g1", tokens=A),
        notice,
        gemini("g2", tokens=B, model="gemini-2.5-pro"),
    ]
    calls = fold(tmp_path, {"s.jsonl": records}).calls
    assert calls["model"].to_list() == ["gemini-3.5-flash", "gemini-2.5-pro"]
    assert calls["api_call_id"].to_list() == ["g1", "g2"]
    assert calls["kind"].to_list() == ["main", "main"]
    assert calls["final_usage"].all() and not calls["interrupted"].any()


def test_unknown_figures_are_null_not_zero(tmp_path: Path) -> None:
    calls = fold(tmp_path, {"s.jsonl": [header(), gemini("g1", tokens={"input": 10})]}).calls
    row = calls.row(0, named=True)
    assert row["input_tokens"] == 10
    assert row["output_tokens"] is None and row["reasoning_tokens"] is None
    assert row["cache_read_tokens"] is None and row["cache_write_tokens"] is None


#: (case, raw lines, severity, words of the issue, calls kept)
BAD = [
    ("unknown record type", ['{"type":"compression","id":"x"}'], "warning", "unknown type", 1),
    ("invalid JSON", ["{not json"], "error", "invalid JSON", 1),
    ("truncated last line", ['{"id":"g9","type":"gem'], "error", "truncated line?", 1),
    ("NUL run", ["\x00\x00\x00" + json.dumps(user("u9"))], "warning", "NUL bytes removed", 1),
    ("not an object", ["[1, 2]"], "error", "not a JSON object", 1),
    ("blank line", ["   "], "warning", "blank line", 1),
    (
        "copies with other tokens",
        [json.dumps(gemini("g1", tokens=B))],
        "warning",
        "written again with other tokens",
        1,
    ),
    (
        "a total that is not the sum of its parts",
        [json.dumps(gemini("g2", tokens={**B, "total": 1}))],
        "warning",
        "tokens.total",
        2,
    ),
    (
        "a call without an id",
        [json.dumps({k: v for k, v in gemini("g3", tokens=B).items() if k != "id"})],
        "warning",
        "without an id",
        2,
    ),
]


@pytest.mark.parametrize(
    ("lines", "severity", "words", "calls"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_is_an_issue_and_the_rest_is_read(
    tmp_path: Path, lines: list[str], severity: str, words: str, calls: int
) -> None:
    good = [json.dumps(header()), json.dumps(gemini("g1", tokens=A))]
    raw = "\n".join([*good, *lines])
    tables = fold(tmp_path, {"s.jsonl": raw if "truncated" in words else raw + "\n"})
    issues = tables.issues
    assert issues.filter(pl.col("message").str.contains(words, literal=True)).height == 1, issues
    assert set(issues["severity"]) == {severity}
    assert issues["line"].drop_nulls().min() >= 3
    assert tables.calls.height == calls


def test_a_subagent_joins_its_parent_session(tmp_path: Path) -> None:
    parent = [header("p1"), user("u1"), gemini("g1", tokens=A)]
    child = [header("c1", kind="subagent"), user("u1"), gemini("g1", tokens=B)]
    tables = fold(tmp_path, {"chats/session-x.jsonl": parent, "chats/p1/c1.jsonl": child})
    calls = tables.calls.sort("kind")
    assert calls["session_id"].to_list() == ["p1", "p1"]
    assert calls["kind"].to_list() == ["main", "subagent"]
    assert calls["agent_id"].to_list() == [None, "c1"]
    (session,) = tables.sessions.iter_rows(named=True)
    assert (session["main_calls"], session["subagent_calls"]) == (1, 1)


def legacy(session: str, messages: list[Any]) -> str:
    document = {**header(session), "messages": messages}
    del document["kind"]
    return json.dumps(document, indent=2)


def test_a_legacy_document_is_read_and_its_resume_adds_only_new_calls(tmp_path: Path) -> None:
    old = legacy("s1", [user("u1"), gemini("g1", tokens=A), user("u2"), gemini("g2", tokens=B)])
    resumed = [
        header("s1"),
        user("u1"),
        gemini("g1", tokens=A),
        user("u2"),
        gemini("g2", tokens=B),
        user("u3"),
        gemini("g3", tokens=B),
    ]
    tables = fold(tmp_path, {"chats/session-a.json": old, "chats/session-b.jsonl": resumed})
    assert sums(tables) == (3, 500, 40, 22, 11)
    calls = tables.calls.sort("api_call_id")
    assert calls["source_file"].str.ends_with(".json").to_list() == [True, True, False]
    # each call at the document line its message starts on
    lines = old.splitlines()
    g1 = next(i for i, line in enumerate(lines, 1) if '"g1"' in line)
    assert calls["source_line"][0] <= g1
    assert lines[calls["source_line"][0] - 1].strip() == "{"
    assert tables.issues.height == 0
    assert int(tables.sessions["lines_read"].sum()) == len(lines) + len(resumed)


@pytest.mark.parametrize(
    "document",
    ["[]", '{"sessionId": "s1"', "{\x00}", "not json at all", '{"sessionId": "s1", "messages": 3}'],
)
def test_a_damaged_legacy_document_is_an_issue(tmp_path: Path, document: str) -> None:
    tables = fold(tmp_path, {"chats/session-a.json": document})
    assert tables.calls.height == 0
    assert tables.issues.height >= 1


def test_items_attribute_prompts_replies_tool_requests_and_results(tmp_path: Path) -> None:
    result = {"functionResponse": {"id": "glob_1", "name": "glob", "response": {"output": "x"}}}
    records = [
        header(),
        user("u1", "list files"),
        gemini("g1", tokens=A),
        gemini("g1", tokens=A, tools=["glob"]),
        {"id": "u2", "timestamp": "2026-06-12T10:00:03.000Z", "type": "user", "content": [result]},
        gemini("g2", tokens=B, t="2026-06-12T10:00:04.000Z"),
        {"id": "i1", "timestamp": T0, "type": "info", "content": "notice"},
    ]
    tables = fold(tmp_path, {"s.jsonl": records})
    items = tables.items.sort("event_seq")
    assert items["item"].to_list() == [
        kinds.PROMPT,
        kinds.REPLY,
        kinds.TOOL_CALL,
        kinds.TOOL_OUTPUT,
        kinds.REPLY,
    ]
    assert items["tool_name"].to_list()[2:4] == ["glob", "glob"]
    assert items["tool_call_id"].to_list()[2:4] == ["glob_1", "glob_1"]
    reply = items.row(1, named=True)
    assert reply["tool_request_bytes"] > 0 and reply["content_bytes"] > reply["tool_request_bytes"]
    seqs = sorted([*items["event_seq"], *tables.calls["event_seq"]])
    assert seqs == list(range(1, len(seqs) + 1))


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[Any], int]:
    """A recording of 1-3 sessions with distinct calls, and how many calls it has."""
    records: list[Any] = []
    calls = 0
    for s in range(draw(st.integers(1, 3))):
        records.append(header(f"s{s}"))
        for c in range(draw(st.integers(0, 4))):
            records += [user(f"u{c}"), gemini(f"g{c}", tokens=tok(10 + c, 1 + c, thoughts=c))]
            calls += 1
    return records, calls


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=sessions(), copies=st.lists(st.integers(0, 1000), max_size=6), rewind=st.booleans())
def test_calls_count_once_however_many_copies_checkpoints_and_rewinds(
    tmp_path_factory: pytest.TempPathFactory,
    data: tuple[list[Any], int],
    copies: list[int],
    rewind: bool,
) -> None:
    records, calls = data
    base = fold(tmp_path_factory.mktemp("g"), {"s.jsonl": records})
    assert base.calls.height == calls
    noisy = list(records)
    for at in copies:  # a message line written again after itself, or listed in a checkpoint
        i = at % len(noisy)
        if isinstance(noisy[i], dict) and "id" in noisy[i]:
            copy = noisy[i] if at % 2 else {"$set": {"messages": [noisy[i]]}}
            noisy.insert(i + 1, copy)
    if rewind:
        noisy.append({"$rewindTo": "u0"})
    again = fold(tmp_path_factory.mktemp("g"), {"a.jsonl": noisy, "b.jsonl": records})
    assert sums(again) == sums(base)
    assert again.issues.height == 0


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(
            [
                json.dumps(header()),
                json.dumps(gemini("g1", tokens=A)),
                '{"$set":{}}',
                '{"x":1}',
                "{bad",
                "[]",
                "",
                "\x00",
            ]
        ),
        max_size=12,
    )
)
def test_every_line_becomes_a_session_line_or_an_issue(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    tables = fold(tmp_path_factory.mktemp("g"), {"s.jsonl": "".join(f"{line}\n" for line in lines)})
    read = int(tables.sessions["lines_read"].sum())
    lost = tables.issues.filter(
        pl.col("message").str.contains("invalid JSON|not a JSON object|blank line ignored")
    ).height
    assert read + lost == len(lines)


def test_the_log_check_finds_a_total_that_is_not_its_parts(tmp_path: Path) -> None:
    from analytics.agents.gemini_cli.log_check import log_check

    records = [
        header(),
        gemini("g1", tokens=A),
        gemini("g1", tokens=A, tools=["glob"]),
        gemini("g2", tokens={**B, "total": 1}),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text(text(records))
    row = log_check([str(path)], gemini_cli.read_files([path]).calls).row(0, named=True)
    assert (row["calls"], row["agree"], row["disagree"]) == (2, 1, 1)
    assert (row["usage_lines"], row["repeated_lines"]) == (3, 1)
    assert (row["tokens"], row["checked_tokens"]) == (A["total"] + 1, A["total"] + B["total"])


def test_what_leaves_the_conversation_is_no_longer_charged_to_later_calls(tmp_path: Path) -> None:
    """A rewind, and a checkpoint that no longer lists a message (``/compress``), leave the
    model only the conversation left: one ``compaction`` item sized as
    that, and a replacing checkpoint's new messages add no items of their own. The first
    checkpoint of a session replaces nothing."""
    start = {"$set": {"messages": [user("ctx", "session context")]}}
    summary = [user("c1", "summary of it all"), gemini("c2")]
    records = [
        header(),
        start,
        user("u1"),
        gemini("g1", tokens=A),
        user("u2", "later"),
        gemini("g2", tokens=B),
        {"$rewindTo": "u2"},
        {"$set": {"messages": summary, "lastUpdated": "2026-06-12T10:00:05.000Z"}},
        user("u3", "again", t="2026-06-12T10:00:06.000Z"),
        gemini("g3", tokens=B, t="2026-06-12T10:00:07.000Z"),
    ]
    tables = fold(tmp_path, {"s.jsonl": records})
    assert tables.calls.height == 3
    items = tables.items.sort("event_seq")
    resets = items.filter(pl.col("item") == kinds.COMPACTION)
    assert resets["source_line"].to_list() == [7, 8]
    kept = resets["content_bytes"].to_list()
    assert kept[0] == sum(len(t) for t in ("session context", "hi", "ok"))  # ctx, u1, g1
    assert kept[1] == len("summary of it all") + len("ok")  # c1, c2
    assert items.filter(pl.col("event_id").is_in(["c1", "c2"])).height == 0
    assert items.filter(pl.col("event_id") == "ctx").height == 1
