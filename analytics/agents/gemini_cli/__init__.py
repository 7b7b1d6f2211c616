"""Gemini CLI chat recordings: which files they are, where they live, and the native fold.

Home (``registry.GEMINI_CLI``): Gemini CLI keeps its files in ``<home>/.gemini``, where
``<home>`` is ``$GEMINI_CLI_HOME`` (Gemini CLI's own override of the user's home) or ``~``;
the chats are ``.gemini/tmp/<project>/chats/session-<stamp>-<id8>.jsonl`` (JSON lines since
April 2026), ``session-<stamp>-<id8>.json`` (one JSON document before) and sub-agents'
``chats/<parent sessionId>/<sessionId>.jsonl``. ``tmp/<project>/`` also holds prompt logs,
checkpoints and tool outputs, and ``~/.gemini/antigravity-cli/`` holds Antigravity's SQLite
conversations: none of them is a chat, so a file is taken by its first record (a JSON-lines
file, :func:`recognizes`) or by its opening bytes (a ``.json`` document, :func:`claims`),
never by where it lies.

Every chat file found is folded in one group: message ids are unique within a session and
each file names its session, so a message written into several files (a legacy document
and the JSON-lines file its resume wrote) counts once. The counting rules are in
``native/agents/gemini_cli/mod.rs``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables, fold, unique
from analytics.core.registry import GEMINI_CLI

#: Types of the messages a recording writes (a message line's ``type``).
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
#: The keys of a session header (``ConversationRecord`` less its messages).
_HEADER = ("sessionId", "projectHash", "startTime")
#: A chat document's opening: an object whose first key is ``sessionId`` (a string) followed
#: by ``projectHash`` (a string), as Gemini CLI writes it (``JSON.stringify``, indented or
#: not); its ``messages`` follow.
_DOCUMENT = re.compile(
    rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"sessionId"\s*:\s*"[^"\\]*"\s*,\s*"projectHash"\s*:\s*"[^"\\]*"'
)
#: How much of a JSON-lines file's start is read to find its first record.
_FIRST_LINE_BYTES = 1 << 16


def recognizes(line: dict[str, object]) -> bool:
    """Whether a decoded JSON-lines record (a file's first object line) is Gemini CLI's: a
    session header (``sessionId``, ``projectHash``, ``startTime``, no ``type``), or, where
    the header was lost, a metadata patch or rewind alone (``$set``, ``$rewindTo``), or a
    ``gemini`` message (no other agent writes that type)."""
    if all(isinstance(line.get(key), str) for key in _HEADER) and "type" not in line:
        return True
    if line.keys() in ({"$set"}, {"$rewindTo"}):
        return True
    return line.get("type") == "gemini" and isinstance(line.get("id"), str)


def claims(path: Path, head: bytes) -> bool:
    """Whether a ``.json`` file is a legacy chat document: its opening is an object whose
    first keys are ``sessionId`` and ``projectHash`` (prompt logs and checkpoints open with
    an array or other keys; Antigravity's conversations are SQLite, a Copilot SDK capture
    holds ``events``)."""
    return path.suffix == ".json" and _DOCUMENT.match(head) is not None


def homes() -> list[Path]:
    """The ``.gemini/tmp`` directory of Gemini CLI's home, if it exists (never created or
    written)."""
    return GEMINI_CLI.log_dirs()


def session_file(path: Path) -> Path:
    """The chat a file belongs to: a sub-agent's ``chats/<parent sessionId>/<id>.jsonl`` is
    its parent's ``chats/session-<stamp>-<parent[:8]>.jsonl`` where that exists (the first,
    by name, should two share the prefix); any other file is its own."""
    chats = path.parent.parent
    if chats.name != "chats":
        return path
    parents = sorted(chats.glob(f"session-*-{path.parent.name[:8]}.jsonl"))
    return parents[0] if parents else path


def _first_record(path: Path) -> dict[str, object] | None:
    """The first line of a JSON-lines file, decoded, if it is an object."""
    try:
        with open(path, "rb") as file:
            raw = file.readline(_FIRST_LINE_BYTES)
        value = json.loads(raw.removeprefix(b"\xef\xbb\xbf").strip(b" \t\r\n\x00"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(4096)
    except OSError:
        return b""


def is_chat(path: Path) -> bool:
    """Whether a file is a Gemini CLI chat: a ``.jsonl`` file whose first record
    :func:`recognizes`, or a ``.json`` document it :func:`claims`."""
    if path.suffix == ".jsonl":
        first = _first_record(path)
        return first is not None and recognizes(first)
    return claims(path, _head(path))


def _chats_under(root: Path) -> list[tuple[Path, Path]]:
    """(identity, path) of every chat file under a directory (links not followed)."""
    real = root.resolve()
    found: list[tuple[Path, Path]] = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories.sort()
        for name in sorted(names):
            path = Path(directory, name)
            if path.suffix in GEMINI_CLI.suffixes and path.is_file() and is_chat(path):
                found.append((real / path.relative_to(root), path))
    return found


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """One group of the chat files under ``paths``: each named file, and the chats (by their
    contents, see :func:`is_chat`) under each named directory."""
    found: list[tuple[Path, Path]] = []
    for target in paths:
        found += _chats_under(target) if target.is_dir() else [(target.resolve(), target)]
    group = unique(found)
    return [group] if group else []


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the chats under ``paths`` (default: the home), and
    their context items unless ``items`` is false."""
    return fold(discover(homes() if paths is None else paths), GEMINI_CLI.id, items)


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues (and items) of exactly ``files``, folded as one group,
    with no discovery."""
    return fold([list(files)], GEMINI_CLI.id, items)
