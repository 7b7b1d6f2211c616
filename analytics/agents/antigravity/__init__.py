"""Antigravity CLI (``agy``): its conversation databases, where they are, and their fold.

Home (``core.registry.ANTIGRAVITY``): ``$ANTIGRAVITY_DATA_DIR`` (ccusage's variable: agy itself
reads none, only ``HOME`` moves it), else ``~/.gemini/antigravity-cli``, ``-ide`` and
``~/.gemini/antigravity``; each home's ``conversations/<conversation-id>.db`` is one SQLite
database per conversation, its steps and generations as protobuf blobs (``database``,
``records``, ``schema``). Gemini CLI's chats sit beside them under ``~/.gemini/tmp`` as JSON:
this reader claims only SQLite files named as agy names them, and never JSON. All databases
named together are one group: a call whose usage is in two databases (a copied conversation,
a sub-agent's) counts once (``fold``).

Importing this package is cheap (discovery imports it to ask ``claims``): SQLite and the
protobuf runtime are loaded by ``read_files``. Decoding is per blob in Python (``protobuf``'s
C parser, through ``schema``); measured on a database of the real rows copied 10,000 times
in ``docs/agents/antigravity.md``. Databases are read ``WORKERS`` at a time: opening one,
parsing its schema and stepping through its rows run in SQLite with the GIL released, so a
second thread keeps the other core busy (4,883 databases: 5.4 s wall alone, 4.4 s two at a
time, means of three on a loaded 2-core machine, for ~10% more CPU); the conversations keep
the order of ``files``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables
from analytics.core.registry import ANTIGRAVITY

#: How many databases are read at once (``read_files``).
WORKERS = 2
#: The first bytes of every SQLite 3 database.
SQLITE_HEADER = b"SQLite format 3\x00"
#: A conversation database's name: the conversation's UUID.
_CONVERSATION = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.db$")


def recognizes(line: dict[str, object]) -> bool:
    """agy writes no JSON-lines log that holds usage (its ``transcript.jsonl`` has none)."""
    return False


def claims(path: Path, head: bytes) -> bool:
    """Whether ``path`` is an agy conversation database: an SQLite file named
    ``<uuid>.db`` in a ``conversations`` directory (OpenCode's ``opencode.db``, agy's own
    ``conversation_summaries.db`` index and any JSON are not). The file is not opened."""
    return (
        head.startswith(SQLITE_HEADER)
        and path.parent.name == "conversations"
        and _CONVERSATION.match(path.name.lower()) is not None
    )


def homes() -> list[Path]:
    """The ``conversations`` directories of agy's homes that exist (never created)."""
    return ANTIGRAVITY.log_dirs()


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """One group of the conversation databases under ``paths`` (a home, its
    ``conversations`` directory, any directory, or named files), each file once."""
    found: dict[str, Path] = {}
    folders: dict[str, str] = {}
    for target in paths:
        candidates = sorted(_databases(target)) if target.is_dir() else [target]
        for path in candidates:
            if _head_claims(path):
                found.setdefault(_resolved(path, folders), path)
    return [list(found.values())] if found else []


def _resolved(path: Path, folders: dict[str, str]) -> str:
    """``path`` with every link followed (``os.path.realpath``), its folder resolved once
    per folder in ``folders``: thousands of databases share one ``conversations``
    directory, and resolving each path whole was two thirds of ``discover``."""
    if path.is_symlink():
        return os.path.realpath(path)
    folder = str(path.parent)
    if folder not in folders:
        folders[folder] = os.path.realpath(folder)
    return os.path.join(folders[folder], path.name)


def _databases(root: Path) -> list[Path]:
    """Every ``*.db`` file under ``root`` (links not followed)."""
    return [
        Path(folder, name)
        for folder, _, names in os.walk(root)
        for name in names
        if name.endswith(".db") and not Path(folder, name).is_symlink()
    ]


def _head_claims(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return claims(path, file.read(len(SQLITE_HEADER)))
    except OSError:
        return False


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the databases under ``paths`` (default: the
    homes); agy's items are not attributed yet, so ``items`` changes nothing."""
    groups = discover(homes() if paths is None else paths)
    return read_files([file for group in groups for file in group], items=items)


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of exactly ``files``, folded as one group."""
    from concurrent.futures import ThreadPoolExecutor

    from analytics.agents.antigravity import database, fold

    with ThreadPoolExecutor(WORKERS, thread_name_prefix="agentcost-antigravity") as pool:
        return fold.tables(list(pool.map(database.read, files)))
