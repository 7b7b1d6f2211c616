"""OpenClaw's session files: pi's format in OpenClaw's own home, read by pi's fold.

Home (``core.registry.OPENCLAW``): ``$OPENCLAW_STATE_DIR`` (default ``~/.openclaw``), whose
``agents/<agentId>/sessions/<sessionId>.jsonl`` are the sessions (beside the index
``sessions.json``; ``<sessionId>.trajectory.jsonl`` is a per-token trace, not a session).
A session file's lines are pi's, so pi's reader recognizes them (:func:`recognizes` here
claims none, so a file is never two agents'); pi's ``read_files`` gives the files laid out
this way agent ``openclaw``. All files named together are one group, as pi's are.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables, fold
from analytics.agents.pi import sessions_in
from analytics.core.registry import OPENCLAW


def recognizes(line: dict[str, object]) -> bool:
    """Never: OpenClaw's lines are pi's, and pi's reader recognizes them (by its home's
    layout, ``pi.read_files`` then folds them as OpenClaw's)."""
    return False


def claims(path: Path, head: bytes) -> bool:
    """OpenClaw's sessions are JSON lines: no other file is one."""
    return False


def homes() -> list[Path]:
    """The ``agents`` directory of OpenClaw's state directory, if it exists (never created
    or written)."""
    return OPENCLAW.log_dirs()


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """One group of the session files under ``paths`` (a state directory's ``agents/`` when
    one is named), OpenClaw's trajectory traces left out."""
    roots = [target / "agents" if (target / "agents").is_dir() else target for target in paths]
    group = sessions_in(roots)
    return [group] if group else []


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues (and items) of exactly ``files``, folded as one group
    by pi's fold, as agent ``openclaw``."""
    return fold([list(files)], OPENCLAW.id, items)


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the session files under ``paths`` (default:
    OpenClaw's home), and their context items unless ``items`` is false."""
    groups = discover(homes() if paths is None else paths)
    return read_files([file for group in groups for file in group], items=items)
