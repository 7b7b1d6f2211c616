"""Codex CLI rollouts: where they are, how they group, and the native fold.

Home (``registry.CODEX``): ``$CODEX_HOME`` (default ``~/.codex``), whose
``sessions/YYYY/MM/DD/rollout-*.jsonl`` and ``archived_sessions/`` hold the rollouts. All
rollouts named together are one group: a session's running totals found in several files
count once, and a fork's child finds its parent's totals. The counting rules (the fork
replay rule included) are in ``native/agents/codex/mod.rs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables, fold, keyed, unique
from analytics.core.registry import CODEX

#: The directories of a Codex home that hold rollouts.
ROLLOUT_DIRS = CODEX.logs_in


#: Line types of a rollout (``{timestamp, type, payload}``).
LINE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})


def recognizes(line: dict[str, object]) -> bool:
    """Whether a decoded log line is a Codex rollout line (the oldest rollouts open with a
    bare ``{id, timestamp, instructions}`` line)."""
    if line.get("type") in LINE_TYPES and "payload" in line:
        return True
    return {"id", "timestamp", "instructions"} <= line.keys() and "type" not in line


def homes() -> list[Path]:
    """The Codex home's rollout directories that exist (``sessions``, ``archived_sessions``;
    not the home itself, whose ``history.jsonl`` is prompts, not calls); never created or
    written."""
    return CODEX.log_dirs()


def claims(path: Path, head: bytes) -> bool:
    """Codex writes JSON lines only: no other file is its log."""
    return False


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """One group of the rollouts under ``paths``: a home's ``sessions/`` and
    ``archived_sessions/``, any other directory's ``*.jsonl`` files, and named files."""
    found: list[tuple[Path, Path]] = []
    for target in paths:
        roots = [target / d for d in ROLLOUT_DIRS if (target / d).is_dir()]
        for root in roots or [target]:
            found += keyed(root)
    group = unique(found)
    return [group] if group else []


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the rollouts under ``paths`` (default: the home),
    and their context items unless ``items`` is false."""

    return fold(discover(homes() if paths is None else paths), CODEX.id, items)


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues (and items) of exactly ``files``, folded as one group
    (as one home's files are), with no discovery."""

    return fold([list(files)], CODEX.id, items)
