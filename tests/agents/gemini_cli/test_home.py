"""Where Gemini CLI's chats are found with no path named, and which files are its chats:
``$GEMINI_CLI_HOME`` (standing for the user's home) or ``~``, then ``.gemini/tmp``; an
absent home is silent; a file is taken by its first record or opening bytes, never another
agent's (Claude Code, Codex, Copilot, Antigravity) and never Gemini CLI's own prompt logs
or checkpoints.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analytics.agents import claude_code, codex, gemini_cli
from analytics.agents.reader import reader_of
from analytics.core.registry import GEMINI_CLI

HEADER = {
    "sessionId": "6fa49bec-41c1-4a7f-802e-eeb343ba34ad",
    "projectHash": "1c8e" * 16,
    "startTime": "2026-06-12T08:36:37.044Z",
    "lastUpdated": "2026-06-12T08:36:37.044Z",
    "kind": "main",
}
CALL = {
    "id": "f8e3856c",
    "timestamp": "2026-06-12T08:37:22.529Z",
    "type": "gemini",
    "content": "still-here",
    "tokens": {"input": 10, "output": 3, "cached": 0, "thoughts": 2, "tool": 0, "total": 15},
    "model": "gemini-3.5-flash",
}


def chat(root: Path, project: str = "cwd-3") -> Path:
    """A one-call session file where Gemini CLI writes it under ``root/.gemini``."""
    path = root / ".gemini" / "tmp" / project / "chats" / "session-2026-06-12T08-36-6fa49bec.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(f"{json.dumps(HEADER)}\n{json.dumps(CALL)}\n")
    return path


def test_the_default_home_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    chat(tmp_path)
    (tmp_path / ".gemini" / "tmp" / "cwd-3" / ".project_root").write_text("/work/project\n")
    assert gemini_cli.homes() == [tmp_path / ".gemini" / "tmp"]
    tables = gemini_cli.read()
    assert tables.calls.height == 1
    assert tables.sessions["cwd"].to_list() == ["/work/project"]
    assert reader_of(GEMINI_CLI.id) is gemini_cli


def test_gemini_cli_home_replaces_the_users_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "elsewhere"))
    chat(tmp_path / "nobody")
    chat(tmp_path / "elsewhere")
    assert gemini_cli.homes() == [tmp_path / "elsewhere" / ".gemini" / "tmp"]
    assert gemini_cli.read().calls.height == 1


def test_an_absent_home_is_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    assert gemini_cli.homes() == []
    tables = gemini_cli.read()
    assert tables.calls.height == tables.sessions.height == tables.issues.height == 0
    assert not (tmp_path / ".gemini").exists()  # nothing is created


def test_discovery_takes_chats_and_nothing_else(tmp_path: Path) -> None:
    session = chat(tmp_path)
    project = session.parent.parent
    (project / "logs.json").write_text(json.dumps([{"sessionId": "x", "type": "user"}]))
    (project / "checkpoint-a.json").write_text(json.dumps({"history": []}))
    (project / "logs.jsonl").write_text(json.dumps({"sessionId": "x", "messageId": 0}) + "\n")
    legacy = session.with_name("session-2026-04-01T10-00-6fa49bec.json")
    document = {k: v for k, v in HEADER.items() if k != "kind"} | {"messages": [CALL]}
    legacy.write_text(json.dumps(document, indent=2))
    child = session.parent / HEADER["sessionId"] / "c1.jsonl"
    child.parent.mkdir()
    child.write_text(json.dumps({**HEADER, "sessionId": "c1", "kind": "subagent"}) + "\n")
    antigravity = tmp_path / ".gemini" / "antigravity-cli" / "conversations" / "a.db"
    antigravity.parent.mkdir(parents=True)
    antigravity.write_bytes(b"SQLite format 3\x00")
    (groups,) = gemini_cli.discover([tmp_path / ".gemini"])
    assert sorted(groups) == sorted([session, legacy, child])
    # the legacy document and the session file name the same session and call
    assert gemini_cli.read_files(groups).calls.height == 1


#: First records of other agents' logs and of Gemini CLI's own non-chat files.
OTHERS = {
    "claude code": {"type": "user", "sessionId": "s", "uuid": "u", "message": {}},
    "claude summary": {"type": "summary", "summary": "x", "leafUuid": "u"},
    "codex": {"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}},
    "copilot": {"type": "session.start", "data": {"sessionId": "s"}, "id": "e"},
    "qwen code": {"uuid": "u", "parentUuid": None, "sessionId": "s", "timestamp": "t",
                  "type": "user", "cwd": "/", "version": "0.1"},
    "gemini prompt log": {"sessionId": "s", "messageId": 0, "type": "user", "message": "hi"},
    "pi": {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"},
}  # fmt: skip


@pytest.mark.parametrize("line", OTHERS.values(), ids=OTHERS.keys())
def test_other_agents_records_are_not_recognized(line: dict[str, object]) -> None:
    assert not gemini_cli.recognizes(line)


@pytest.mark.parametrize("line", [HEADER, CALL, {"$set": {"lastUpdated": "t"}}, {"$rewindTo": "x"}])
def test_gemini_records_are_recognized_and_no_other_reader_takes_them(
    line: dict[str, object],
) -> None:
    assert gemini_cli.recognizes(line)
    assert not claude_code.recognizes(line) and not codex.recognizes(line)


HEADS = {
    "indented legacy document": (
        b'{\n  "sessionId": "6fa4",\n  "projectHash": "1c8e",\n  "messages": [',
        True,
    ),
    "compact legacy document": (
        b'\xef\xbb\xbf{"sessionId":"6f","projectHash":"1c","startTime"',
        True,
    ),
    "prompt log": (b'[\n  {\n    "sessionId": "6fa4",\n    "messageId": 0', False),
    "checkpoint": (b'{"history": [{"role": "user"', False),
    "copilot sdk capture": (b'{"sessionId": "x", "events": [{"type": "session.start"', False),
    "settings": (b'{"security": {"auth": {"selectedType": "gemini-api-key"}}}', False),
    "sqlite": (b"SQLite format 3\x00", False),
}


@pytest.mark.parametrize(("head", "taken"), HEADS.values(), ids=HEADS.keys())
def test_claims_only_legacy_chat_documents(head: bytes, taken: bool) -> None:
    assert gemini_cli.claims(Path("session-x.json"), head) is taken
    assert not gemini_cli.claims(Path("conversation.db"), head)


def test_a_subagents_chat_stands_for_its_parents_session(tmp_path: Path) -> None:
    session = chat(tmp_path)
    child = session.parent / HEADER["sessionId"] / "c1.jsonl"
    child.parent.mkdir()
    child.write_text(json.dumps({**HEADER, "sessionId": "c1", "kind": "subagent"}) + "\n")
    assert gemini_cli.session_file(child) == session
    assert gemini_cli.session_file(session) == session
    orphan = session.parent / "0000aaaa-rest" / "c2.jsonl"
    assert gemini_cli.session_file(orphan) == orphan


def test_no_other_agents_real_log_is_a_gemini_chat_and_no_other_reader_takes_ours() -> None:
    """Every ``.json``/``.jsonl`` file of the other agents' real logs is passed over, and
    each Gemini CLI recording is recognized by its reader alone."""
    from analytics.agents.reader import readers
    from tests.conftest import REAL_LOGS

    files = [p for p in REAL_LOGS.rglob("*.json*") if p.suffix in {".json", ".jsonl"}]
    if not files:
        pytest.skip(f"real logs not present at {REAL_LOGS} (the shared/ folder is absent)")
    ours = [p for p in files if "gemini-cli" in p.relative_to(REAL_LOGS).parts]
    assert [p for p in files if p not in ours and gemini_cli.is_chat(p)] == []
    for path in ours:
        first = json.loads(path.read_bytes().split(b"\n", 1)[0])
        takers = [agent.id for agent, reader in readers() if reader.recognizes(first)]
        assert takers == [GEMINI_CLI.id], path
