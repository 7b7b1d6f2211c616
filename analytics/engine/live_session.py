"""The session ``agentcost watch`` (and ``statusline``) shows: the most recently written
session log under the paths (every agent's home by default), of any agent: a Copilot
``events.jsonl``, a Claude Code session file (a sub-agent's file stands for its parent
session's), a Codex rollout, any agent's log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from analytics.agents.discover import COPILOT, Found, LogFile, Seen, discover
from analytics.core.errors import InputError


@dataclass(frozen=True)
class Watched:
    """A session log to follow, and the agent that writes it."""

    agent: str
    log: LogFile


def latest_log(
    paths: list[Path], agents: tuple[str, ...] = (), found: Found | None = None
) -> Watched:
    """The most recently written session log under ``paths`` (every agent's home when
    empty) of one of ``agents`` (any agent when empty). A log the user named (a session
    directory, a file) was not looked at by discovery's listing: it is looked at here. A
    Claude Code sub-agent's file stands for its session's file, when that exists (the view
    is of the whole session). ``found``: what discovery already found under ``paths``."""
    found = found or discover(paths)
    candidates = [
        (agent, log)
        for agent, log in [(COPILOT, log) for log in found.logs] + found.agent_logs
        if not agents or agent in agents
    ]
    logs = [
        Watched(agent, seen) for agent, log in candidates if (seen := _seen(log)).stat is not None
    ]
    if not logs:
        where = ", ".join(map(str, paths)) or "the agents' homes"
        whose = f" of {', '.join(agents)}" if agents else ""
        raise InputError(
            f"no session log{whose} under {where}; name a session directory or log, or an "
            "agent's home"
        )
    newest = max(
        logs,
        key=lambda w: (w.log.stat.st_mtime_ns if w.log.stat else 0, w.log.file),
    )
    return _parent_session(newest)


def _parent_session(watched: Watched) -> Watched:
    """A sub-agent's log as its session's (``Reader.session_file``, where the agent's reader
    has one: a Claude Code ``<session>/subagents/agent-*.jsonl`` is its ``<session>.jsonl``);
    any other log as it is."""
    from analytics.agents.reader import session_file

    path = watched.log.path
    session = session_file(watched.agent, path)
    if session == path:
        return watched
    return Watched(
        watched.agent, _seen(LogFile(str(session), session.stem, str(session.resolve())))
    )


def _seen(log: LogFile) -> LogFile:
    """``log`` with its ``stat`` (None when the file went away meanwhile)."""
    if log.stat is not None:
        return log
    try:
        return replace(log, stat=Seen.of(os.stat(log.file)))
    except OSError:
        return log


def names_a_session(path: Path | None) -> bool:
    """Whether ``path`` is one session (a log file, or a directory holding ``events.jsonl``),
    which watch keeps to, rather than a home or tree to take the newest session from."""
    return path is not None and (path.is_file() or (path / "events.jsonl").is_file())
