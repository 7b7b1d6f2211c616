"""The groups of files ``agent_results`` folds first, the keys it stores their tables under,
and the fold of a tree never folded before, begun as soon as discovery is done.

Nothing here imports polars: ``fold_ahead`` runs before the command line has imported what
comes after discovery, so that the fold (native, on rayon's threads) and those imports share
the machine's cores instead of taking turns (``analytics.agents.fold_ahead``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from analytics.cache import fingerprints
from analytics.cache.location import results_dir

if TYPE_CHECKING:
    from analytics.agents.discover import Found, LogFile
    from analytics.agents.reader import Reader
    from analytics.core.registry import Agent


def tables_key(agent: Agent, logs: Sequence[LogFile], items: bool) -> str | None:
    """The key of the agent's tables folded from exactly ``logs`` as they are on disk."""
    inputs: list[fingerprints.Input] = [(log.real_path or log.file, log.stat) for log in logs]
    return fingerprints.digest("agent", inputs, json.dumps([agent.id, items]))


def tables_slot(slot: str | None, agent: Agent, items: bool) -> str:
    """The slot the agent's latest tables of the paths whose slot is ``slot`` are noted in."""
    return hashlib.sha256(f"{slot} {agent.id} {items}".encode()).hexdigest()[:32]


def units(reader: Reader, logs: Sequence[LogFile], *, fine: bool) -> list[list[LogFile]]:
    """The first groups of files to fold (see ``agent_results``' docstring): each JSON-lines
    file with the files under the directory named as it, and, unless ``fine``, with the other
    JSON-lines files of its directory (a tree never folded before: fewer groups to fold
    again when files share a session); other files (a chat spread over several JSON files, a
    database, a Gemini CLI legacy document) by the reader's own groups."""
    lines = [log for log in logs if log.file.endswith(".jsonl")]
    others = [log for log in logs if not log.file.endswith(".jsonl")]
    return _by_directory(lines, fine=fine) + _reader_units(reader, others)


def _by_directory(logs: Sequence[LogFile], *, fine: bool) -> list[list[LogFile]]:
    """``units`` of JSON-lines files."""
    owner: dict[str, int] = {}
    units: list[list[LogFile]] = []
    for log in logs:  # in path order: a file comes before the files under its stem
        path = log.file
        directory = path[: path.rfind(os.sep)]
        home, above = owner.get(directory), directory
        while home is None and os.sep in above:
            above = above[: above.rfind(os.sep)]
            home = owner.get(above)
        if home is None:
            home = len(units)
            units.append([])
            if not fine:
                owner[directory] = home
        units[home].append(log)
        stem = path[: path.rfind(".")] if "." in path[path.rfind(os.sep) :] else path
        owner.setdefault(stem, home)
    return units


def _reader_units(reader: Reader, logs: Sequence[LogFile]) -> list[list[LogFile]]:
    """``units`` of files the reader groups: its groups, then each file it left out."""
    if not logs:
        return []
    by_path = {log.file: log for log in logs}
    groups = reader.discover([log.path for log in logs])
    found = [[by_path[p] for p in map(str, group) if p in by_path] for group in groups]
    placed = {log.file for unit in found for log in unit}
    return [unit for unit in found if unit] + [[log] for log in logs if log.file not in placed]


def in_order(unit: Sequence[LogFile], order: dict[str, int]) -> tuple[LogFile, ...]:
    """A group's files in discovery's ``order`` (each file's place among the agent's logs):
    the order its fold reads them in."""
    return tuple(sorted(unit, key=lambda log: order[log.file]))


def fold_ahead(found: Found, paths: Sequence[Path], *, items: bool, use_cache: bool) -> None:
    """Begin the fold ``agent_results.agent_tables`` will make first of each agent's logs in
    ``found`` (``items``: with their context items), where that is the fold of every file
    grouped by directory: the cache is used, and holds neither the agent's tables of these
    files nor an earlier run's of these ``paths`` (from which it would take groups). An
    agent with files other than JSON lines is left to the analysis (its reader groups
    those: asking it twice would cost what starting early saves). Any fold begun earlier
    and not taken is dropped."""
    from analytics.agents import fold_ahead as ahead
    from analytics.agents.reader import readers

    ahead.forget()
    if not use_cache or not found.agent_logs:
        return
    root, slot = results_dir(), fingerprints.paths_slot(paths)
    for agent, reader in readers():
        logs = [log for name, log in found.agent_logs if name == agent.id]
        if not logs or not all(log.file.endswith(".jsonl") for log in logs):
            continue
        key = tables_key(agent, logs, items)
        if key is None or (root / key).exists():
            continue
        if (root / "slots" / tables_slot(slot, agent, items)).exists():
            continue
        order = {log.file: at for at, log in enumerate(logs)}
        groups = [in_order(unit, order) for unit in units(reader, logs, fine=False)]
        ahead.start(agent.id, [[log.file for log in group] for group in groups], items)
