"""Where agy's databases are found, and which files the Antigravity reader claims: only SQLite
files named as agy names its conversations, never Gemini CLI's chats beside them under
``~/.gemini`` nor OpenCode's ``opencode.db``."""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.agents import antigravity
from analytics.agents.antigravity import SQLITE_HEADER
from analytics.core.registry import ANTIGRAVITY
from tests.agents.antigravity.dbs import CONVERSATION, REAL_CALLS, copy

SQLITE = SQLITE_HEADER + b"\x10\x00\x02\x02"


@pytest.mark.parametrize(
    ("path", "head", "claimed"),
    [
        (f"~/.gemini/antigravity-cli/conversations/{CONVERSATION}.db", SQLITE, True),
        (f"/any/copy/store/conversations/{CONVERSATION.upper()}.db", SQLITE, True),
        (f"~/.gemini/antigravity-ide/conversations/{CONVERSATION}.db", SQLITE, True),
        (f"~/.gemini/antigravity-cli/conversations/{CONVERSATION}.db", b"", False),
        (f"~/.gemini/antigravity-cli/conversations/{CONVERSATION}.db", b'{"a": 1}', False),
        ("~/.gemini/antigravity-cli/conversation_summaries.db", SQLITE, False),
        ("~/.local/share/opencode/opencode.db", SQLITE, False),
        ("~/.local/share/opencode/conversations/opencode.db", SQLITE, False),
        (f"~/.gemini/tmp/abc/chats/session-{CONVERSATION}.json", b'{"sessionId": "x"}', False),
        (f"~/.gemini/antigravity-cli/implicit/{CONVERSATION}.pb", b"\x0a\x01", False),
        (f"~/.gemini/antigravity-cli/{CONVERSATION}.db", SQLITE, False),
    ],
)
def test_claims_only_agy_conversation_databases(path: str, head: bytes, claimed: bool) -> None:
    assert antigravity.claims(Path(path), head) is claimed


def test_recognizes_no_json_lines() -> None:
    assert not antigravity.recognizes({"type": "user", "sessionId": "x"})
    assert not antigravity.recognizes({"step_index": 0, "source": "USER", "type": "USER_INPUT"})


def test_the_registry_offers_only_db_files() -> None:
    assert ANTIGRAVITY.suffixes == (".db",)
    assert ANTIGRAVITY.reader == "analytics.agents.antigravity"


def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ANTIGRAVITY_DATA_DIR", raising=False)
    return tmp_path


def test_the_default_home_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = _home(monkeypatch, tmp_path)
    conversations = home / ".gemini" / "antigravity-cli" / "conversations"
    copy(conversations)
    (home / ".gemini" / "tmp" / "p" / "chats").mkdir(parents=True)
    (home / ".gemini" / "tmp" / "p" / "chats" / "session-1.json").write_text("{}")
    (home / ".gemini" / "antigravity-cli" / "conversation_summaries.db").write_bytes(SQLITE)
    assert antigravity.homes() == [conversations]
    tables = antigravity.read()
    assert tables.calls.height == REAL_CALLS
    assert antigravity.discover([home / ".gemini"]) == [[conversations / f"{CONVERSATION}.db"]]


def test_the_environment_override_is_honoured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = _home(monkeypatch, tmp_path)
    copy(home / ".gemini" / "antigravity-cli" / "conversations")
    other = tmp_path / "elsewhere"
    copy(other / "conversations")
    monkeypatch.setenv("ANTIGRAVITY_DATA_DIR", str(other))
    assert antigravity.homes() == [other / "conversations"]


def test_an_absent_home_is_silent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _home(monkeypatch, tmp_path)
    assert antigravity.homes() == []
    tables = antigravity.read()
    assert (tables.calls.height, tables.sessions.height, tables.issues.height) == (0, 0, 0)


def test_a_database_named_through_links_is_taken_once(tmp_path: Path) -> None:
    """A database reached through a linked directory, a linked file or a relative path is
    the file itself: read once, under the name it was first given."""
    conversations = tmp_path / "home" / "conversations"
    path = copy(conversations)
    linked_folder = tmp_path / "elsewhere" / "conversations"
    linked_folder.parent.mkdir()
    linked_folder.symlink_to(conversations)
    linked_file = tmp_path / "copy" / "conversations" / path.name
    linked_file.parent.mkdir(parents=True)
    linked_file.symlink_to(path)
    through_folder = linked_folder / path.name
    assert antigravity.discover([through_folder, linked_file, path]) == [[through_folder]]
    assert antigravity.discover([linked_file, through_folder]) == [[linked_file]]


def test_discover_takes_named_files_and_directories_once(tmp_path: Path) -> None:
    conversations = tmp_path / "home" / "conversations"
    path = copy(conversations)
    (tmp_path / "home" / "opencode.db").write_bytes(SQLITE)
    (conversations / "notes.db").write_bytes(SQLITE)
    (conversations / f"{CONVERSATION[:-1]}0.db").write_text("not a database")
    assert antigravity.discover([tmp_path, path, conversations]) == [[path]]
    assert antigravity.discover([tmp_path / "absent"]) == []
    tables = antigravity.read([tmp_path], items=False)
    assert (tables.calls.height, tables.items.height) == (REAL_CALLS, 0)
