"""OpenCode (and Kilo, its fork): where its databases are, which files they are, the fold.

OpenCode keeps no log file: its sessions are rows of the SQLite database ``opencode.db``
(channel builds write ``opencode-<channel>.db`` beside it) in its data directory,
``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``; ``$OPENCODE_DATA_DIR``
names another, as ccusage reads it). Kilo writes the same tables into ``kilo.db`` under
``$KILO_DATA_DIR`` (default ``$XDG_DATA_HOME/kilo``). Every database named or found is one
group: a part migrated or copied into several counts once (``fold``). The databases are
opened read-only and never written (``database``).

The JSON store OpenCode wrote before its database (``storage/{session,message,part}/``,
``legacy``) is read too; its migration copies it into the database under the same ids, so
a part found in both counts once. Not read: the OpenCode 2.x table ``session_message``,
whose rows are reported as an issue.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from analytics.agents import AgentTables
from analytics.agents.opencode import legacy
from analytics.core.registry import OPENCODE

if TYPE_CHECKING:
    import polars as pl

#: The names of OpenCode's and Kilo's databases.
DATABASE_NAME = re.compile(r"(opencode(-[\w.-]+)?|kilo)\.db")

#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"

#: Directories of a data home holding no usage: OpenCode's git snapshots of the user's
#: worktrees (large), its logs, tool output and binaries.
SKIPPED = frozenset({"snapshot", "log", "tool-output", "bin"})

#: The subdirectories of ``$XDG_DATA_HOME`` that are OpenCode's and Kilo's homes.
XDG_HOMES = ("opencode", "kilo")


def recognizes(line: dict[str, object]) -> bool:
    """OpenCode writes no JSON-lines log: no line is its."""
    return False


def claims(path: Path, head: bytes) -> bool:
    """Whether ``path`` is an OpenCode or Kilo database (an SQLite file, by its first bytes,
    named as they name theirs: ``opencode.db``, ``opencode-<channel>.db``, ``kilo.db``) or a
    record of OpenCode's legacy JSON store (a JSON object at ``storage/<kind>/…/<id>.json``)."""
    if path.suffix == ".json":
        return legacy.claims(path) and head.lstrip()[:1] == b"{"
    return head.startswith(SQLITE_HEADER) and DATABASE_NAME.fullmatch(path.name) is not None


def is_log(path: Path) -> bool:
    """Whether ``path`` is named as one of OpenCode's stores (a database or a legacy record)."""
    return DATABASE_NAME.fullmatch(path.name) is not None or legacy.claims(path)


def homes() -> list[Path]:
    """OpenCode's and Kilo's data directories that exist, each once (never created or
    written): ``$XDG_DATA_HOME/{opencode,kilo}`` when it is set, then the registry's homes
    (``$OPENCODE_DATA_DIR``, ``$KILO_DATA_DIR``, ``~/.local/share/{opencode,kilo}``)."""
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    named = [Path(xdg).expanduser() / name for name in XDG_HOMES] if xdg else []
    found: list[Path] = []
    seen: set[Path] = set()
    for home in [*named, *OPENCODE.log_dirs()]:
        if home.is_dir() and (real := home.resolve()) not in seen:
            seen.add(real)
            found.append(home)
    return found


def stores(root: Path) -> list[Path]:
    """The OpenCode and Kilo databases and legacy records under ``root`` (itself, if it is a
    file named as one), sorted; links are not followed and ``SKIPPED`` directories not
    entered."""
    if not root.is_dir():
        return [root] if root.is_file() and is_log(root) else []
    found: list[Path] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in reversed(listed):
            if entry.is_dir(follow_symlinks=False) and entry.name not in SKIPPED:
                stack.append(Path(entry.path))
            elif is_log(Path(entry.path)) and entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
    return sorted(found)


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """One group of every database and legacy record under ``paths`` (each file once however
    it is named): a part copied between them counts once."""
    seen: set[Path] = set()
    group: list[Path] = []
    for target in paths:
        for path in stores(target):
            if (real := path.resolve()) not in seen:
                seen.add(real)
                group.append(path)
    return [group] if group else []


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues (and items) of exactly ``files``, folded as one group."""
    from analytics.agents.opencode import fold

    return fold.tables(files, items=items)


def session_prints(files: Sequence[Path]) -> pl.DataFrame | None:
    """Each session tree's print (``session_id``, ``print``: ``slices.prints``) of a group of
    one database, which changes when a row of the tree does; None for another group or a
    database that cannot be read. Taken before the group is folded: a write meanwhile makes
    the next run fold the trees it changed again."""
    from analytics.agents.opencode import database, slices

    if len(files) != 1 or legacy.claims(files[0]):
        return None

    try:
        return database.opened(files[0], slices.prints)
    except database.UnreadableError:
        return None


def read_changed(
    files: Sequence[Path], before: AgentTables, changed: Collection[str], *, items: bool = True
) -> AgentTables | None:
    """The fold of ``files`` from ``before`` (their fold when the session trees ``changed``
    were otherwise): those trees folded again, the others' rows kept (``fold.refolded``);
    None where a fold of all of them is needed."""
    from analytics.agents.opencode import fold

    return fold.refolded(files, items, before, changed)


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the databases under ``paths`` (default: the homes),
    and their context items unless ``items`` is false."""
    from analytics.agents.opencode import fold

    groups = discover(homes() if paths is None else paths)
    return fold.tables(groups[0] if groups else [], items=items)
