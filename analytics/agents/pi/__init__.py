"""pi (pi-coding-agent) session files: where they are, how they group, and the native fold.

Home (``core.registry.PI``): ``$PI_CODING_AGENT_SESSION_DIR`` (the sessions directory itself)
when set, else ``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``, holding
``--<cwd>--/<ts>_<uuid>.jsonl`` (``--session-dir`` puts them there without the ``--<cwd>--``
level). OpenClaw writes the same format in a home of its own (``core.registry.OPENCLAW``,
:mod:`analytics.agents.pi.openclaw`); the two files look alike line for line, so this module
recognizes both, and :func:`read_files` folds a file laid out as OpenClaw's
(``agents/<agentId>/sessions/<id>.jsonl``) as OpenClaw's.

All files named together are one group: a ``/fork`` or ``/clone`` file, an earlier snapshot
of a session file, a copied recording repeat their source's lines, and each call counts once
across them. The counting rules are in ``native/agents/pi/mod.rs``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables, fold, keyed, unique
from analytics.core.registry import OPENCLAW, PI

#: The variable naming pi's sessions directory itself (not the agent directory).
SESSION_DIR_VARIABLE = "PI_CODING_AGENT_SESSION_DIR"

#: OpenClaw's per-token trace beside a session file: not a session.
TRAJECTORY_SUFFIX = ".trajectory.jsonl"


def recognizes(line: dict[str, object]) -> bool:
    """Whether a decoded line (a file's first) is a pi session header:
    ``{"type": "session", "id": ..., "version"/"timestamp"/"cwd"}`` (no other agent writes
    ``type: session``; pi-subagents' artifacts open with ``recordType`` and are not pi's)."""
    return (
        line.get("type") == "session"
        and isinstance(line.get("id"), str)
        and any(key in line for key in ("version", "timestamp", "cwd"))
    )


def claims(path: Path, head: bytes) -> bool:
    """pi writes JSON lines only: no other file is its log."""
    return False


def homes() -> list[Path]:
    """pi's sessions directory, if it exists (never created or written): the one
    ``$PI_CODING_AGENT_SESSION_DIR`` names, else the registry's (``sessions`` of
    ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``)."""
    named = os.environ.get(SESSION_DIR_VARIABLE, "").strip()
    if named:
        directory = Path(named).expanduser()
        return [directory] if directory.is_dir() else []
    return PI.log_dirs()


def is_openclaw(path: Path) -> bool:
    """Whether a session file is laid out as OpenClaw keeps them
    (``agents/<agentId>/sessions/<id>.jsonl``)."""
    parents = path.parents
    return len(parents) > 2 and parents[0].name == "sessions" and parents[2].name == "agents"


def opens_a_session(path: Path) -> bool:
    """Whether a file's first line is a pi session header (:func:`recognizes`), or cannot be
    decoded at all (a damaged session file is still read, its lines reported). Files that
    open with another record (pi-subagents' ``subagent-artifacts`` transcripts, an RPC
    answer saved as ``.jsonl``) are not pi's session files."""
    try:
        with open(path, "rb") as file:
            first = file.readline(1 << 20)
    except OSError:
        return True  # the fold reports why it cannot be read
    try:
        value = json.loads(first)
    except ValueError:
        return True
    return not isinstance(value, dict) or recognizes(value)


def sessions_in(paths: Sequence[Path]) -> list[Path]:
    """Every session file under ``paths`` (a named file as it is), each once: files that
    open with a pi session header (:func:`opens_a_session`), OpenClaw's
    ``*.trajectory.jsonl`` traces left out."""
    found: list[tuple[Path, Path]] = []
    for target in paths:
        found += keyed(target)
    return [
        file
        for file in unique(found)
        if not file.name.endswith(TRAJECTORY_SUFFIX) and opens_a_session(file)
    ]


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """One group of the session files under ``paths`` (a home's ``sessions/`` when a pi
    agent directory is named): a call copied between them counts once."""
    roots = [target / "sessions" if (target / "sessions").is_dir() else target for target in paths]
    group = sessions_in(roots)
    return [group] if group else []


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues (and items) of exactly ``files``, folded as one group
    (OpenClaw's files as a group of their own, agent ``openclaw``); OpenClaw's trajectory
    traces are not sessions and are left out."""
    sessions = [file for file in files if not file.name.endswith(TRAJECTORY_SUFFIX)]
    claws = [file for file in sessions if is_openclaw(file)]
    own = [file for file in sessions if not is_openclaw(file)]
    folded = [
        fold([group], agent.id, items) for agent, group in ((PI, own), (OPENCLAW, claws)) if group
    ]
    return joined(folded) if folded else fold([], PI.id, items)


def joined(parts: Sequence[AgentTables]) -> AgentTables:
    """Folds of several agents as one set of tables (their rows one after another)."""
    import polars as pl

    def concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
        return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]

    return AgentTables(
        calls=concat([part.calls for part in parts]),
        sessions=concat([part.sessions for part in parts]),
        issues=concat([part.issues for part in parts]),
        items=concat([part.items for part in parts]),
    )


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the session files under ``paths`` (default: pi's
    home), and their context items unless ``items`` is false."""
    groups = discover(homes() if paths is None else paths)
    return read_files([file for group in groups for file in group], items=items)
