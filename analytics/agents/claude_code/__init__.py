"""Claude Code session logs: where they are, how they group, and the native fold.

Homes (``registry.CLAUDE_CODE``): every directory of ``$CLAUDE_CONFIG_DIR`` (comma-
separated; logs under ``<dir>/projects/``), ``~/.config/claude/projects`` and
``~/.claude/projects``. Inside a home each project directory (``<project>/<session>.jsonl``,
sub-agents in ``<project>/<session>/subagents/agent-*.jsonl`` or flat
``<project>/agent-*.jsonl``) is a group (``discover``). Files folded together count a
request that a resume or ``--continue`` wrote into several of them once, and sub-agent calls
join their parent session; ``read`` folds all the groups it finds together, so a request
copied between projects counts once too. The counting rules are in
``native/agents/claude_code/mod.rs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables, fold, keyed, unique
from analytics.core.registry import CLAUDE_CODE

#: Line types a Claude Code session file writes (``type``), beside which a line carries its
#: ``sessionId`` or the ids that chain it (``uuid``, ``leafUuid``, ``messageId``).
LINE_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "progress", "file-history-snapshot",
     "queue-operation", "attachment", "custom-title", "agent-name", "tag", "last-prompt"}
)  # fmt: skip
_IDS = ("sessionId", "uuid", "leafUuid", "messageId")


def recognizes(line: dict[str, object]) -> bool:
    """Whether a decoded log line is a Claude Code session line: a known line type with one
    of the ids that chain its lines, or any undotted type with its ``sessionId`` (newer CLIs
    add types such as ``permission-mode``)."""
    kind = line.get("type")
    if kind in LINE_TYPES and any(key in line for key in _IDS):
        return True
    return isinstance(kind, str) and "." not in kind and isinstance(line.get("sessionId"), str)


def homes() -> list[Path]:
    """The Claude Code ``projects`` directories that exist (never created or written): under
    each home of ``registry.CLAUDE_CODE``."""
    return CLAUDE_CODE.log_dirs()


def claims(path: Path, head: bytes) -> bool:
    """Claude Code writes JSON lines only: no other file is its log."""
    return False


def project_of(path: Path) -> Path:
    """The project directory a log file belongs to (a ``subagents/`` file's session's)."""
    parent = path.parent
    return parent.parent.parent if parent.name == "subagents" else parent


def session_file(path: Path) -> Path:
    """The session log a file belongs to: a sub-agent's ``<session>/subagents/agent-*.jsonl``
    is its ``<session>.jsonl`` where that exists; any other file is its own."""
    if path.parent.name != "subagents":
        return path
    session = path.parent.parent.with_suffix(".jsonl")
    return session if session.is_file() else path


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """Groups of files to fold together, one per project directory: each named file (with
    its session's ``subagents/`` files) and every ``*.jsonl`` under each named directory."""
    found: list[tuple[Path, Path]] = []
    for target in paths:
        found += keyed(target)
        subagents = target.with_suffix("") / "subagents"
        if not target.is_dir() and subagents.is_dir():
            found += keyed(subagents)
    groups: dict[Path, list[Path]] = {}
    for file in unique(found):
        groups.setdefault(project_of(file), []).append(file)
    return list(groups.values())


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the logs under ``paths`` (default: every home), and
    their context items unless ``items`` is false.

    Every discovered file is folded in one group (the fold reads files in parallel, so
    nothing is lost by it): a request found in two projects (a session file copied or moved
    between project directories) counts once too; its ids are the API's own."""
    groups = discover(homes() if paths is None else paths)
    return read_files([file for group in groups for file in group], items=items)


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues (and items) of exactly ``files``, folded as one group
    (as one project directory's files are), with no discovery."""

    return fold([list(files)], CLAUDE_CODE.id, items)
