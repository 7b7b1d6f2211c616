"""Following a live session's log: what it has written so far, read again as it grows.

A log of an agent with a reader is folded again whenever it (or a file of its session)
changes (``AgentFollow``): its calls state their usage, so the whole fold of one session is a
few milliseconds. The staged pipeline's agent (Copilot) brings its own follower
(``Pipeline.follower``), which reads only the bytes written since.
"""

from __future__ import annotations

from typing import TypeAlias

import polars as pl

from analytics.agents.discover import COPILOT, copilot_session_id
from analytics.agents.pipeline import Follower, pipeline, pipeline_agent
from analytics.engine.live_session import Watched


class AgentFollow:
    """A session log of an agent with a reader, folded again whenever it changes:
    ``update()`` says whether it (or a file of its group: a Claude Code session's sub-agent
    files; an SQLite database's write-ahead log, where its new rows wait until a checkpoint)
    did, and folds it; ``calls`` and ``sessions`` are the fold's, in the core's contracts."""

    def __init__(self, watched: Watched) -> None:
        from analytics.agents.reader import reader_of

        self.agent = watched.agent
        self.log = watched.log
        self._module = reader_of(watched.agent)
        self._seen: tuple[tuple[str, int, int, int], ...] | None = None
        self.calls = pl.DataFrame()
        self.sessions = pl.DataFrame()

    def update(self) -> bool:
        """Fold the log again if a file of it changed; False when none did (or they are
        gone for a moment: the last view stays)."""
        from analytics.agents.contract import core_tables

        files = [file for group in self._module.discover([self.log.path]) for file in group]
        wal = [w for f in files if (w := f.with_name(f.name + "-wal")).is_file()]
        try:
            now = tuple(
                (str(f), (st := f.stat()).st_ino, st.st_size, st.st_mtime_ns)
                for f in [*files, *wal]
            )
        except OSError:
            return False
        if not files or now == self._seen:
            return False
        self._seen = now
        self.calls, self.sessions, _, _ = core_tables(self._module.read_files(files))
        return True


#: What ``watch`` holds of the log it shows: a reader's agent's fold, or the staged
#: pipeline's agent's own follower.
Following: TypeAlias = "Follower | AgentFollow"


def follow_of(watched: Watched) -> Following:
    """The follower of a log: the staged pipeline's agent's own (``Pipeline.follower``:
    Copilot's reads only what was written since), a new fold for a reader's agent."""
    if watched.agent == pipeline_agent():
        return pipeline().follower(watched.log)
    return AgentFollow(watched)


def agent_session_id(watched: Watched) -> str | None:
    """The id of the session a Claude Code or Codex log is writing now: of the sessions its
    fold finds, the one written last (a file can hold several); None when it names none."""
    follow = AgentFollow(watched)
    follow.update()
    sessions = follow.sessions.sort("end_time", "session_id", nulls_last=False)
    return str(sessions["session_id"][-1]) if sessions.height else None


def session_name(watched: Watched) -> str:
    """The id of the session ``watched`` is writing, as its agent names it: a Copilot log's
    ``session.start`` (its first line), another agent's fold (``agent_session_id``); else
    the session hint (its directory or file name), so a copied or renamed session directory
    is still named as its agent names it."""
    log = watched.log
    named = copilot_session_id(log) if watched.agent == COPILOT else agent_session_id(watched)
    return named or log.session_hint
