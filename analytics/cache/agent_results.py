"""The agents folded per call, kept between runs a group of files at a time.

Copilot's analysis keeps its groups of sessions in the result cache (``results``); this is
the same for every agent read through ``analytics.agents.reader.readers()``. A run folds only
the files that changed since the previous run of the same paths (and what must be folded with
them), and takes every other group's rows from that run's stored tables: a live session (one
file being written) costs the fold of its own files, not of the whole tree.

**Groups.** A fold counts a call once however many files hold it (a resume's copy, a fork's
replay), so files that share anything must be folded together. The cache never assumes which
do; it finds out from the folds:

- A file is first folded alone (JSON-lines logs, where every line names its session or the
  file does), with the files under the directory named as it (a session's sub-agents).
  Other layouts (a chat spread over several JSON files, a database) start from the reader's
  own groups (``Reader.discover``).
- Two groups that share an *identity* are folded again as one: a session (by id, or one's
  ``parent_session_id`` naming the other's session), a call's ``api_call_id`` (the dedupe
  key), or an item's ``event_id``. Repeated until no two groups share one. A fold of files
  that share none of these is the fold of each apart (each group's rows are then those the
  whole fold gives them), which the tests check on every kind of copy and fork.

**Reuse.** The groups, each with a digest of its files' identities on disk (path, size,
``mtime_ns``, ``ctime_ns``, inode), are the note of the agent's stored tables, remembered
under the paths analysed (as ``ResultCache.remember``). The next run reuses every group of
that note whose files are all unchanged and still there, folds the rest, and checks the
fresh groups' identities against the reused ones (merging and folding again where they
meet), so a file deleted drops its calls and a request copied into a new file still counts
once. Nothing changed at all: the stored tables are loaded under the key of every file.

The rows come out in the order a single fold of every file gives them: sessions by their
first file (in discovery's order), each group's own order kept within.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from analytics.agents import AgentTables
from analytics.cache import fingerprints
from analytics.cache.results import ResultCache

if TYPE_CHECKING:
    from analytics.agents.discover import LogFile
    from analytics.agents.reader import Reader
    from analytics.agents.registry import Agent

#: The tables of a fold, as stored (each with ``GROUP``).
NAMES = ("calls", "sessions", "issues", "items")
#: The column that tells each stored row's group (its index in the note's groups).
GROUP = "_group"


@dataclass(frozen=True)
class Part:
    """Files folded together (in discovery's order), and their fold's tables tagged with
    ``GROUP`` (any index: ``_numbered`` sets it), or None while not folded."""

    files: tuple[LogFile, ...]
    tables: dict[str, pl.DataFrame] | None = None


def agent_tables(
    agent: Agent,
    reader: Reader,
    logs: Sequence[LogFile],
    *,
    items: bool,
    slot: str | None,
    cache: ResultCache | None,
    fold_counter: list[int] | None = None,
) -> AgentTables:
    """The fold of ``logs`` (one agent's files, in discovery's order) as one fold of them
    all gives it, with the groups unchanged since the last run of ``slot`` (the paths
    analysed) taken from ``cache`` (None: fold everything, store nothing).
    ``fold_counter`` is given the number of files each fold reads (for the tests)."""
    if cache is None:
        return reader.read_files([log.path for log in logs], items=items)
    order = {str(log.path): at for at, log in enumerate(logs)}
    key = _key(agent, logs, items) if cache else None
    if cache and key:
        stored = _load(cache, key)
        if stored is not None:
            return _plain(stored[0])
    previous = _previous(cache, _slot(slot, agent, items)) if cache and slot else None
    parts = _reused(previous, logs)
    kept = {str(log.path) for part in parts for log in part.files}
    parts += [
        Part(files) for files in _units(reader, agent, [g for g in logs if str(g.path) not in kept])
    ]
    while True:
        parts = _folded(agent, reader, parts, items, order, fold_counter)
        merged = _merged(parts, order)
        if len(merged) == len(parts):
            break
        parts = merged
    tables = _together(parts, order)
    if cache and key:
        note = {
            "groups": [[str(log.path) for log in part.files] for part in parts],
            "prints": [_print(part.files) for part in parts],
        }
        cache.save_later(key, tables, note, _slot(slot, agent, items) if slot else None)
    return _plain(tables)


def _key(agent: Agent, logs: Sequence[LogFile], items: bool) -> str | None:
    """The key of the agent's tables folded from exactly ``logs`` as they are on disk."""
    inputs: list[fingerprints.Input] = [(log.real_path or str(log.path), log.stat) for log in logs]
    return fingerprints.digest("agent", inputs, json.dumps([agent.id, items]))


def _slot(slot: str | None, agent: Agent, items: bool) -> str:
    """The slot the agent's latest tables of the paths whose slot is ``slot`` are noted in."""
    return hashlib.sha256(f"{slot} {agent.id} {items}".encode()).hexdigest()[:32]


def _print(files: Sequence[LogFile]) -> str:
    """A digest of the files' identities on disk (path, size, mtime, ctime, inode)."""
    lines = []
    for log in files:
        stat = log.stat
        seen = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino) if stat else None
        lines.append(f"{log.real_path or log.path} {seen}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _load(cache: ResultCache, key: str) -> tuple[dict[str, pl.DataFrame], dict[str, object]] | None:
    """The tables and note stored under ``key``, or None."""
    note = cache.note(key)
    if note is None:
        return None
    tables = {}
    for name in NAMES:
        table = cache.load_table(key, name)
        if table is None or GROUP not in table.columns:
            return None
        tables[name] = table
    return tables, note


@dataclass(frozen=True)
class _Previous:
    tables: dict[str, pl.DataFrame]
    groups: list[list[str]]
    prints: list[str]


def _previous(cache: ResultCache, slot: str) -> _Previous | None:
    """The tables last stored under ``slot`` with their note's groups, or None."""
    key = cache.recall(slot)
    stored = _load(cache, key) if key else None
    if stored is None:
        return None
    tables, note = stored
    groups, prints = note.get("groups"), note.get("prints")
    if not (isinstance(groups, list) and isinstance(prints, list) and len(groups) == len(prints)):
        return None
    return _Previous(tables, groups, prints)


def _reused(previous: _Previous | None, logs: Sequence[LogFile]) -> list[Part]:
    """The previous run's groups whose files are all still there and unchanged, with their
    rows."""
    if previous is None:
        return []
    now = {str(log.path): log for log in logs}
    parts = []
    for at, (group, printed) in enumerate(zip(previous.groups, previous.prints, strict=True)):
        files = tuple(now[path] for path in group if path in now)
        if len(files) == len(group) and files and _print(files) == printed:
            mine = {name: t.filter(pl.col(GROUP) == at) for name, t in previous.tables.items()}
            parts.append(Part(files, mine))
    return parts


def _units(reader: Reader, agent: Agent, logs: Sequence[LogFile]) -> list[tuple[LogFile, ...]]:
    """The first groups of files never folded before (see the module's docstring), each in
    discovery's order."""
    if not logs:
        return []
    if agent.suffixes != (".jsonl",):
        by_path = {str(log.path): log for log in logs}
        groups = reader.discover([log.path for log in logs])
        found = [tuple(by_path[p] for p in map(str, group) if p in by_path) for group in groups]
        found = [unit for unit in found if unit]
        placed = {str(log.path) for unit in found for log in unit}
        return found + [(log,) for log in logs if str(log.path) not in placed]
    owner: dict[str, int] = {}
    units: list[list[LogFile]] = []
    for log in logs:  # in path order: a file comes before the files under its stem
        parent = log.path.parent
        home = next((owner[str(d)] for d in (parent, *parent.parents) if str(d) in owner), None)
        if home is None:
            owner[str(log.path.with_suffix(""))] = len(units)
            units.append([log])
        else:
            units[home].append(log)
    return [tuple(unit) for unit in units]


def _folded(
    agent: Agent,
    reader: Reader,
    parts: list[Part],
    items: bool,
    order: dict[str, int],
    counter: list[int] | None,
) -> list[Part]:
    """``parts``, each folded (those not folded yet, in one fold of several groups where
    the agent has a native fold)."""
    todo = [at for at, part in enumerate(parts) if part.tables is None]
    if not todo:
        return parts
    if counter is not None:
        counter.extend(len(parts[at].files) for at in todo)
    groups = [[log.path for log in parts[at].files] for at in todo]
    out = list(parts)
    for at, tables in zip(todo, _fold_groups(agent, reader, groups, items), strict=True):
        out[at] = Part(parts[at].files, tables)
    return out


def _fold_groups(
    agent: Agent, reader: Reader, groups: list[list[Path]], items: bool
) -> list[dict[str, pl.DataFrame]]:
    """Each group's fold; a natively folded agent's groups in one call (folded in
    parallel), its rows told apart by their files."""
    from analytics.agents import fold

    try:
        whole = fold(groups, agent.id, items)
    except ValueError:  # no native fold: the reader's own, a group at a time
        return [_tables(reader.read_files(group, items=items), 0) for group in groups]
    if len(groups) == 1:
        return [_tables(whole, 0)]
    where = {str(path): at for at, group in enumerate(groups) for path in group}
    tagged = _tables(whole, where)
    return [
        {name: t.filter(pl.col(GROUP) == at) for name, t in tagged.items()}
        for at in range(len(groups))
    ]


def _tables(tables: AgentTables, where: int | dict[str, int]) -> dict[str, pl.DataFrame]:
    """A fold's tables, each row tagged with its group: ``where`` (one for all), or the
    group of the file each row comes from (a session's first file)."""
    files = {
        "calls": pl.col("source_file"),
        "sessions": pl.col("source_files").list.first(),
        "issues": pl.col("file"),
        "items": pl.col("source_file"),
    }
    out = {}
    for name in NAMES:
        table: pl.DataFrame = getattr(tables, name)
        if isinstance(where, int):
            tag = pl.lit(where, pl.Int64)
        else:
            tag = files[name].replace_strict(where, default=None, return_dtype=pl.Int64)
        out[name] = table.with_columns(tag.alias(GROUP))
    return out


#: Seeds that keep apart the hashes of the kinds of identity (``_identities``).
_SESSION, _CALL, _ITEM = 11, 23, 37


def _identities(part: int, tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """(part, identity hash) of everything a group's fold names that another group's may
    share: sessions (their own and their parents), calls' ``api_call_id``, items'
    ``event_id``. A hash collision only folds two groups together needlessly."""
    calls, sessions, items = tables["calls"], tables["sessions"], tables["items"]
    columns = [
        calls["session_id"].hash(_SESSION),
        calls["api_call_id"].drop_nulls().hash(_CALL),
        sessions["session_id"].hash(_SESSION),
        sessions["parent_session_id"].drop_nulls().hash(_SESSION),
        items["session_id"].hash(_SESSION),
        items["event_id"].drop_nulls().hash(_ITEM),
    ]
    ids = pl.concat([c.alias("id") for c in columns]).unique()
    return pl.DataFrame({"id": ids}).with_columns(pl.lit(part, pl.Int64).alias("part"))


def _merged(parts: list[Part], order: dict[str, int]) -> list[Part]:
    """``parts`` with every set that shares an identity (see ``_identities``) made one part,
    not folded yet; the others as they are."""
    ids = pl.concat([_identities(at, part.tables or {}) for at, part in enumerate(parts)])
    shared = (
        ids.group_by("id")
        .agg(pl.col("part").unique())
        .filter(pl.col("part").list.len() > 1)["part"]
        .to_list()
    )
    if not shared:
        return parts
    root = list(range(len(parts)))

    def find(at: int) -> int:
        while root[at] != at:
            root[at] = root[root[at]]
            at = root[at]
        return at

    for members in shared:
        first = find(members[0])
        for other in members[1:]:
            root[find(other)] = first
    together: dict[int, list[int]] = {}
    for at in range(len(parts)):
        together.setdefault(find(at), []).append(at)
    out = []
    for members in together.values():
        if len(members) == 1:
            out.append(parts[members[0]])
            continue
        files = sorted(
            (log for at in members for log in parts[at].files), key=lambda g: order[str(g.path)]
        )
        out.append(Part(tuple(files)))
    return out


def _together(parts: list[Part], order: dict[str, int]) -> dict[str, pl.DataFrame]:
    """Every part's tables as one fold of all the files gives them, tagged with each row's
    part: sessions (and their calls and items) by their first file, each part's order kept
    within; issues by file and line."""
    tables = {
        name: pl.concat(
            [
                (part.tables or {})[name].with_columns(pl.lit(at, pl.Int64).alias(GROUP))
                for at, part in enumerate(parts)
            ],
            how="vertical",
        )
        for name in NAMES
    }
    where = (
        pl.col("source_files")
        .list.first()
        .replace_strict(order, default=None, return_dtype=pl.Int64)
    )
    sessions = (
        tables["sessions"]
        .with_columns(where.alias("_first"))
        .sort("_first", maintain_order=True, nulls_last=True)
    )
    first = sessions.select("session_id", "_first")
    out = {"sessions": sessions.drop("_first")}
    for name in ("calls", "items"):
        table = tables[name]
        out[name] = (
            table.join(first, on="session_id", how="left", maintain_order="left")
            .sort("_first", maintain_order=True, nulls_last=True)
            .drop("_first")
        )
    issues = tables["issues"]
    place = pl.col("file").replace_strict(order, default=None, return_dtype=pl.Int64)
    out["issues"] = issues.sort(place, pl.col("line"), maintain_order=True, nulls_last=False)
    return out


def _plain(tables: dict[str, pl.DataFrame]) -> AgentTables:
    """Stored tables as a fold's (without ``GROUP``)."""
    return AgentTables(**{name: tables[name].drop(GROUP) for name in NAMES})
