"""Claude Code session logs: where they are, how they group, and the native fold.

Homes: every directory of ``$CLAUDE_CONFIG_DIR`` (comma-separated; logs under
``<dir>/projects/``), ``~/.config/claude/projects`` and ``~/.claude/projects``. Inside a home
each project directory (``<project>/<session>.jsonl``, sub-agents in
``<project>/<session>/subagents/agent-*.jsonl`` or flat ``<project>/agent-*.jsonl``) is one
group: its files are folded together, so a request that a resume or ``--continue`` wrote into
several files counts once, and sub-agent calls join their parent session. The counting rules
are in ``analytics/scanner/claude.rs``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables, fold, jsonl_files


def homes() -> list[Path]:
    """The Claude Code ``projects`` directories that exist (never created or written)."""
    candidates: list[Path] = []
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "")
    candidates += [Path(d.strip()).expanduser() / "projects" for d in configured.split(",")]
    candidates += [
        Path.home() / ".config" / "claude" / "projects",
        Path.home() / ".claude" / "projects",
    ]
    found: list[Path] = []
    seen: set[Path] = set()
    for candidate in candidates:
        if candidate == Path("projects") or not candidate.is_dir():
            continue
        real = candidate.resolve()
        if real not in seen:
            seen.add(real)
            found.append(candidate)
    return found


def project_of(path: Path) -> Path:
    """The project directory a log file belongs to (a ``subagents/`` file's session's)."""
    parent = path.parent
    return parent.parent.parent if parent.name == "subagents" else parent


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """Groups of files to fold together, one per project directory: each named file (with
    its session's ``subagents/`` files) and every ``*.jsonl`` under each named directory."""
    groups: dict[Path, list[Path]] = {}
    seen: set[Path] = set()
    for target in paths:
        if target.is_dir():
            files = jsonl_files(target)
        else:
            subagents = target.with_suffix("") / "subagents"
            files = [target, *(jsonl_files(subagents) if subagents.is_dir() else [])]
        for file in files:
            real = file.resolve()
            if real not in seen:
                seen.add(real)
                groups.setdefault(project_of(file), []).append(file)
    return list(groups.values())


def read(paths: Sequence[Path] | None = None) -> AgentTables:
    """The calls, sessions and issues of the logs under ``paths`` (default: every home)."""
    from analytics import _scanner

    return fold(discover(homes() if paths is None else paths), _scanner.fold_claude_code)


def read_files(files: Sequence[Path]) -> AgentTables:
    """The calls, sessions and issues of exactly ``files``, folded as one group (as one
    project directory's files are), with no discovery."""
    from analytics import _scanner

    return fold([list(files)], _scanner.fold_claude_code)
