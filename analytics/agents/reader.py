"""What an agent folded one call per API request offers the engine, and where to find it.

Each such agent's module (``claude_code``, ``codex``) is a :class:`Reader`, named by its
registry entry (``registry.Agent.reader``): the engine, ``watch`` and the tests reach every
agent through :func:`readers` and :func:`reader_of`, so a new agent is its module and its
registry line, not an edit of each place that reads logs.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from analytics.core.registry import AGENTS, Agent

if TYPE_CHECKING:
    import polars as pl

    from analytics.agents import AgentTables


class Reader(Protocol):
    """An agent's log reader: which files are its logs, where they live, how they group,
    and their fold.

    Discovery offers a reader the files whose names end in one of its registry entry's
    ``suffixes``: a ``.jsonl`` file through :meth:`recognizes` (its first line that decodes
    as a JSON object), any other (a ``.json`` chat, an SQLite database) through
    :meth:`claims`. A file no reader takes is set aside as not a log, saying so."""

    def recognizes(self, line: dict[str, object]) -> bool:
        """Whether a decoded JSON-lines record (a file's first object line) is one this
        agent writes; never true of another agent's records."""
        ...

    def claims(self, path: Path, head: bytes) -> bool:
        """Whether a file that is not JSON lines (``head``: its first bytes) is one of this
        agent's logs; read nothing else of it."""
        ...

    def homes(self) -> list[Path]:
        """The directories (or files) holding this agent's logs when no path is named: those
        of its registry entry's homes that exist (nothing is created or written)."""
        ...

    def discover(self, paths: Sequence[Path]) -> list[list[Path]]:
        """The groups of files under ``paths`` to fold together (a call written into
        several files of a group counts once)."""
        ...

    def read_files(self, files: Sequence[Path], *, items: bool = True) -> AgentTables:
        """The fold of ``files`` (already discovered, each once), with the sessions'
        context items unless ``items`` is false."""
        ...


def session_file(agent_id: str, path: Path) -> Path:
    """The log that stands for the session ``path`` belongs to: the reader's own
    ``session_file(path)`` where it has one (a sub-agent's file is its session's, when that
    exists), else ``path`` itself. Optional in the contract: most agents write one file per
    session."""
    agent = next((a for a in AGENTS if a.id == agent_id and a.reader), None)
    rule = getattr(_module(agent), "session_file", None) if agent else None
    return path if rule is None else cast("Path", rule(path))


class LogCheck(Protocol):
    """An agent's log checked against itself (``agents.checks``): ``files`` read again and
    compared with ``calls``, the calls agentcost counted from them; one ``CHECK_COLUMNS`` row."""

    def __call__(self, files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame: ...


def log_checks() -> list[tuple[Agent, LogCheck]]:
    """Every agent whose log says its usage twice, with its check (the ``log_check`` of its
    package's ``log_check`` module), in the registry's order. Optional in the contract."""
    found: list[tuple[Agent, LogCheck]] = []
    for agent in AGENTS:
        if not agent.reader:
            continue
        name = f"{agent.reader}.log_check"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name != name:
                raise
            continue
        found.append((agent, cast("LogCheck", module.log_check)))
    return found


def reader_of(agent_id: str) -> Reader:
    """The reader of the agent whose id is ``agent_id`` (its module, imported now)."""
    agent = next((a for a in AGENTS if a.id == agent_id and a.reader), None)
    if agent is None:
        raise KeyError(f"no reader for agent {agent_id!r}")
    return _module(agent)


@functools.cache
def readers() -> tuple[tuple[Agent, Reader], ...]:
    """Every agent that has a reader, with it, in the registry's order (imported once:
    discovery asks for each file of a tree)."""
    return tuple((agent, _module(agent)) for agent in AGENTS if agent.reader)


def _module(agent: Agent) -> Reader:
    return cast("Reader", importlib.import_module(agent.reader))
