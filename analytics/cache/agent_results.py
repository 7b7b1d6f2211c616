"""The agents folded per call, kept between runs a group of files at a time.

Copilot's analysis keeps its groups of sessions in the result cache (``results``); this is
the same for every agent read through ``analytics.agents.reader.readers()``. A run folds only
the files that changed since the previous run of the same paths (and what must be folded with
them), and takes every other group's rows from that run's stored tables: a live session (one
file being written) costs the fold of its own files, not of the whole tree.

**Groups.** A fold counts a call once however many files hold it (a resume's copy, a fork's
replay), so files that share anything must be folded together. The cache never assumes which
do; it finds out from the folds:

- The first groups are guesses, checked below. Files never folded before are grouped by
  directory (a tree's first run then rarely folds a file twice); the files of a group that
  changed are folded apart, each JSON-lines file (where every line names its session or the
  file does) with the files under the directory named as it (a session's sub-agents), so
  a live session's group becomes its own files (whatever else the agent writes: Gemini CLI's
  JSON-lines chats too). Other files (a chat spread over several JSON files, a database, a
  Gemini CLI legacy document) start from the reader's own groups (``Reader.discover``).
- Two groups that share an *identity* are folded again as one: a session (by id, or one's
  ``parent_session_id`` naming the other's session), a call's ``api_call_id`` (the dedupe
  key), or an item's ``event_id``. Repeated until no two groups share one. A fold of files
  that share none of these is the fold of each apart (each group's rows are then those the
  whole fold gives them): the tests check it on copied and resumed requests, random edits
  and the real logs (a Codex fork among them).

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
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import polars as pl

from analytics.agents import GROUP, AgentTables
from analytics.cache.agent_groups import in_order, tables_key, tables_slot, units
from analytics.cache.results import ResultCache
from analytics.core.schema import as_literals, in_row_order

if TYPE_CHECKING:
    from analytics.agents.discover import LogFile
    from analytics.agents.reader import Reader
    from analytics.core.registry import Agent

#: The tables of a fold, as stored (each with ``GROUP``: the row's group, its index in the
#: note's groups).
NAMES = ("calls", "sessions", "issues", "items")


class Folds:
    """The groups of files of one agent (``files``, each group in discovery's order; a
    group merged into another is None) and the tables of those folded so far, one frame
    per table with each row's group in ``GROUP``: every step works on whole columns, never
    a group at a time (a 1 GB tree has thousands of groups)."""

    def __init__(self, order: dict[str, int]) -> None:
        self.order = order
        self.files: list[tuple[LogFile, ...] | None] = []
        self.tables: dict[str, pl.DataFrame] | None = None
        self.pending: list[int] = []
        #: each group's session prints, where its reader gives them (``SessionPrints``)
        self.prints: dict[int, pl.DataFrame] = {}
        #: the sessions of a group folded again in part whose rows are the previous run's
        self.kept: dict[int, set[str]] = {}

    def add(self, files: Sequence[LogFile]) -> int:
        """A group of files not folded yet; its index."""
        self.files.append(in_order(files, self.order))
        self.pending.append(len(self.files) - 1)
        return len(self.files) - 1

    def take(self, tables: dict[str, pl.DataFrame]) -> None:
        """Rows already folded (``GROUP``: indices of ``files``)."""
        self.tables = (
            tables
            if self.tables is None
            else {name: pl.concat([self.tables[name], tables[name]]) for name in NAMES}
        )

    def fold(self, agent: Agent, reader: Reader, items: bool, counter: list[int] | None) -> None:
        """Fold every pending group (a natively folded agent's in one call)."""
        todo, self.pending = self.pending, []
        if not todo:
            return
        # the paths as discovery spelled them, not ``Path`` objects: a 1 GB tree's 170,000
        # files would hold some 100 MB of them while the fold runs
        groups = [[log.file for log in self.files[at] or ()] for at in todo]
        if counter is not None:
            counter.extend(len(group) for group in groups)
        printer = getattr(reader, "session_prints", None)
        for at, group in zip(todo, groups, strict=True):  # before the fold: see SessionPrints
            printed = printer([Path(p) for p in group]) if printer else None
            if printed is not None:
                self.prints[at] = printed
        self.take(_fold_groups(agent, reader, groups, items, todo))

    def merge(self) -> bool:
        """Make every set of groups that share an identity (``_identities``) one pending
        group, their rows dropped; whether any did. One group left shares with none: its
        identities are not hashed (those of the one OpenCode database of a 1 GB tree held
        10 MiB more than the peak of its fold)."""
        if self.tables is None or sum(files is not None for files in self.files) < 2:
            return False
        shared = (
            _identities(self.tables)
            .filter(pl.col("id").is_duplicated())  # (group, id) pairs are unique
            .group_by("id")
            .agg(pl.col(GROUP).unique())
            .filter(pl.col(GROUP).list.len() > 1)[GROUP]
            .to_list()
        )
        if not shared:
            return False
        root: dict[int, int] = {}

        def find(at: int) -> int:
            while root.get(at, at) != at:
                at = root[at]
            return at

        for members in shared:
            first = find(members[0])
            for other in members[1:]:
                if find(other) != first:
                    root[find(other)] = first
        together: dict[int, list[int]] = {}
        for at in root:
            together.setdefault(find(at), []).append(at)
        gone = []
        for top, members in together.items():
            members.append(top)
            gone += members
            self.add([log for at in members for log in self.files[at] or ()])
            for at in members:
                self.files[at] = None
                self.prints.pop(at, None)
                self.kept.pop(at, None)
        self.tables = {
            name: t.filter(~pl.col(GROUP).is_in(gone)) for name, t in self.tables.items()
        }
        return True


@dataclass(frozen=True)
class Folded:
    """An agent's tables (``agent_tables``), the sessions whose rows are those of an
    earlier run's, unchanged (``same``: their groups were reused), and the analysis that
    earlier run was stored as (``before``: ``Analysis.stored_as``), which priced them."""

    tables: AgentTables
    same: frozenset[str] = frozenset()
    before: str | None = None


def agent_tables(
    agent: Agent,
    reader: Reader,
    logs: Sequence[LogFile],
    *,
    items: bool,
    slot: str | None,
    cache: ResultCache | None,
    analysis: str | None = None,
    fold_counter: list[int] | None = None,
) -> Folded:
    """The fold of ``logs`` (one agent's files, in discovery's order) as one fold of them
    all gives it, with the groups unchanged since the last run of ``slot`` (the paths
    analysed) taken from ``cache`` (None: every group folded, nothing stored; still a group
    at a time, as a fold holds a group's rows until it lays them out: one group of the 1 GB
    pi tree's 170,000 files peaked at 865 MB). ``analysis``: the key the whole analysis is
    stored as, noted for the next run's ``Folded.before``. ``fold_counter`` is given the
    number of files each fold reads."""
    folds = Folds({log.file: at for at, log in enumerate(logs)})
    key = tables_key(agent, logs, items) if cache is not None else None
    if key and cache is not None:
        stored = _load(cache, key)
        if stored is not None and _spelled_alike(stored[1], logs):
            tables, note = stored
            same = frozenset(tables["sessions"]["session_id"].to_list())
            return Folded(_plain(tables), same, _noted(note))
    previous = (
        _previous(cache, tables_slot(slot, agent, items)) if slot and cache is not None else None
    )
    kept = _reuse(previous, logs, folds, reader, items)
    reused = [at for at in range(len(folds.files)) if at not in folds.kept]
    known = {path for group in previous.groups for path in group} if previous else set()
    for fine in (True, False):  # the changed groups' files apart, new ones by directory
        chosen = [log for log in logs if log.file not in kept and (log.file in known) == fine]
        for unit in units(reader, chosen, fine=fine):
            folds.add(unit)
    folds.fold(agent, reader, items, fold_counter)
    while folds.merge():
        folds.fold(agent, reader, items, fold_counter)
    same = frozenset(
        (folds.tables or {})["sessions"].filter(pl.col(GROUP).is_in(reused))["session_id"].to_list()
        if reused
        else ()
    ).union(*(sessions for at, sessions in folds.kept.items() if folds.files[at]))
    printed = _prints_of(folds)
    groups, tables = _together(folds)
    if printed is not None:
        tables = {**tables, PRINTS: printed}
    if key and cache is not None:
        note = {
            "groups": [[log.file for log in group] for group in groups],
            "prints": [_print(group) for group in groups],
            "analysis": analysis,
        }
        numbered = _numbered(tables, _paths_of(note))
        cache.save_later(key, numbered, note, tables_slot(slot, agent, items) if slot else None)
    return Folded(_plain(tables), same, previous.analysis if previous else None)


def _spelled_alike(note: dict[str, object], logs: Sequence[LogFile]) -> bool:
    """Whether the stored tables name the files as ``logs`` do: the key is the files'
    identity on disk, but the tables carry their paths as discovery spelled them then (a
    tree named through a link, or relatively), and an answer must name them as asked."""
    groups = note.get("groups")
    if not isinstance(groups, list):
        return False
    spelled = {path for group in groups if isinstance(group, list) for path in group}
    return spelled == {log.file for log in logs}


def _noted(note: dict[str, object]) -> str | None:
    """The analysis a stored note names (``agent_tables``' ``analysis``), if any."""
    analysis = note.get("analysis")
    return analysis if isinstance(analysis, str) else None


def _print(files: Sequence[LogFile]) -> str:
    """A digest of the files' identities on disk (path, size, mtime, ctime, inode)."""
    lines = []
    for log in files:
        seen = log.stat.fields() if log.stat else None  # (size, mtime, ctime, inode)
        lines.append(f"{log.real_path or log.file} {seen}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _load(cache: ResultCache, key: str) -> tuple[dict[str, pl.DataFrame], dict[str, object]] | None:
    """The tables and note stored under ``key``, or None."""
    note = cache.note(key)
    if note is None:
        return None
    tables = {}
    paths = _paths_of(note)
    for name in NAMES:
        table = cache.load_table(key, name)
        if table is None or GROUP not in table.columns:
            return None
        # as the fold gave them: read back, each row's own
        tables[name] = as_literals(_named(table, paths))
    return tables, note


#: The stored tables' columns of paths, each kept as the number of its path among those of
#: the note's groups (``_numbered``): the column of a table, and its column of numbers.
_PATH_COLUMNS = {"source_file": "_file", "source_files": "_files"}


def _paths_of(note: dict[str, object]) -> pl.Series:
    """The paths of a note's groups, one after another: what a stored path's number counts."""
    groups = note.get("groups")
    files = [
        path
        for group in (groups if isinstance(groups, list) else [])
        if isinstance(group, list)
        for path in group
    ]
    return pl.Series(files, dtype=pl.String)


def _numbered(tables: dict[str, pl.DataFrame], paths: pl.Series) -> dict[str, pl.DataFrame]:
    """``tables`` as they are stored: each path (a call's and an item's ``source_file``, a
    session's ``source_files``) as its number among ``paths``. Written as text, a path was
    held once per row while the table was written (+35 MB on the 1 GB pi tree's calls, the
    run's peak then) and read back once per row (+64 MB); its number is 4 bytes."""
    numbers = pl.Series(range(len(paths)), dtype=pl.Int32)
    return {name: _relabelled(t, paths, numbers, _PATH_COLUMNS) for name, t in tables.items()}


def _named(table: pl.DataFrame, paths: pl.Series) -> pl.DataFrame:
    """A stored table with its paths again (``_numbered``'s inverse), each row's a view of
    ``paths``' text, not a copy of its own."""
    numbers = pl.Series(range(len(paths)), dtype=pl.Int32)
    return _relabelled(table, numbers, paths, {v: k for k, v in _PATH_COLUMNS.items()})


def _relabelled(
    table: pl.DataFrame, keys: pl.Series, labels: pl.Series, columns: dict[str, str]
) -> pl.DataFrame:
    """``table`` with each value of each of ``columns`` (a column, or a column of lists) that
    it has replaced by its label (the value of ``labels`` at its place among ``keys``; null
    where it is not among them), the column renamed as ``columns`` names it."""
    for column, renamed in columns.items():
        if column not in table.columns:
            continue
        values = table[column]
        if isinstance(values.dtype, pl.List):
            relabelled = values.list.eval(
                pl.element().replace_strict(keys, labels, default=None, return_dtype=labels.dtype)
            )
        else:
            relabelled = _looked_up(values, keys, labels)
        table = table.with_columns(relabelled.alias(column)).rename({column: renamed})
    return table


@dataclass(frozen=True)
class _Previous:
    tables: dict[str, pl.DataFrame]
    groups: list[list[str]]
    prints: list[str]
    analysis: str | None
    #: the groups' session prints (``PRINTS``), where their reader gave them
    session_prints: pl.DataFrame | None = None


def _previous(cache: ResultCache, slot: str) -> _Previous | None:
    """The tables last stored under ``slot`` with their note's groups, or None."""
    key = cache.recall(slot)
    stored = _load(cache, key) if key else None
    if stored is None or key is None:
        return None
    tables, note = stored
    groups, prints = note.get("groups"), note.get("prints")
    if not (isinstance(groups, list) and isinstance(prints, list) and len(groups) == len(prints)):
        return None
    return _Previous(tables, groups, prints, _noted(note), cache.load_table(key, PRINTS))


def _reuse(
    previous: _Previous | None,
    logs: Sequence[LogFile],
    folds: Folds,
    reader: Reader,
    items: bool,
) -> set[str]:
    """Give ``folds`` the previous run's groups whose files are all still there and
    unchanged, with their rows, and those whose files changed but whose reader folds again
    only the sessions that did (``_in_part``); the paths of their files."""
    if previous is None:
        return set()
    now = {log.file: log for log in logs}
    index: dict[int, int] = {}
    for at, (group, printed) in enumerate(zip(previous.groups, previous.prints, strict=True)):
        files = tuple(now[path] for path in group if path in now)
        if len(files) == len(group) and files and _print(files) == printed:
            folds.files.append(files)
            index[at] = len(folds.files) - 1
        elif len(files) == len(group) and files:
            _in_part(previous, at, files, folds, reader, items)
    if index:
        moved = pl.col(GROUP).replace_strict(index, default=None, return_dtype=pl.Int64)
        folds.take(
            {
                name: table.filter(pl.col(GROUP).is_in(list(index))).with_columns(moved)
                for name, table in previous.tables.items()
            }
        )
    taken = [*index.values(), *folds.kept]
    return {log.file for at in taken for log in folds.files[at] or ()}


#: The stored table of each group's session prints (``SessionPrints``), beside ``NAMES``.
PRINTS = "prints"


class SessionPrints(Protocol):
    """What a reader may offer (optional in the contract) to fold again only the sessions
    of a group that changed: the OpenCode database, one file holding every session. A
    session whose print is gone folds the whole group again."""

    def session_prints(self, files: Sequence[Path]) -> pl.DataFrame | None:
        """Each session's print (``session_id``, ``print``: what changes when the session's
        rows do), None where the group has none; taken before the group is folded, so a
        write meanwhile shows in the next run's prints."""
        ...

    def read_changed(
        self, files: Sequence[Path], before: AgentTables, changed: Collection[str], *, items: bool
    ) -> AgentTables | None:
        """The group's fold from ``before`` (its tables when it had the stored prints) with
        the sessions ``changed`` folded again; None where the whole group must be."""
        ...


def _in_part(
    previous: _Previous,
    at: int,
    files: tuple[LogFile, ...],
    folds: Folds,
    reader: Reader,
    items: bool,
) -> None:
    """Give ``folds`` the previous group ``at`` (whose files changed) folded again in part
    (``SessionPrints``), where its reader can; else nothing (it is folded anew)."""
    stored = previous.session_prints
    if stored is None or not hasattr(reader, "read_changed"):
        return
    offered = cast("SessionPrints", reader)
    printer, again = offered.session_prints, offered.read_changed
    before = stored.filter(pl.col(GROUP) == at).drop(GROUP)
    paths = [log.path for log in files]
    if before.is_empty() or (printed := printer(paths)) is None:
        return
    compared = printed.join(before, on="session_id", how="full", suffix="_before", coalesce=True)
    if compared["print"].null_count():  # a session gone
        return
    changed = compared.filter(pl.col("print").ne_missing(pl.col("print_before")))["session_id"]
    rows = {name: t.filter(pl.col(GROUP) == at).drop(GROUP) for name, t in previous.tables.items()}
    tables = (
        AgentTables(**rows)
        if changed.is_empty()
        else again(paths, AgentTables(**rows), changed.to_list(), items=items)
    )
    if tables is None:
        return
    folds.files.append(files)
    placed = len(folds.files) - 1
    folds.take(_tagged(tables, placed))
    folds.prints[placed] = printed
    folds.kept[placed] = set(rows["sessions"]["session_id"].to_list()) - set(changed.to_list())


def _prints_of(folds: Folds) -> pl.DataFrame | None:
    """The session prints of the groups left (``PRINTS``), each row with its group's index
    among them (as ``_together`` numbers them); None where no group has any."""
    live = [at for at, files in enumerate(folds.files) if files is not None]
    printed = [
        folds.prints[at].with_columns(pl.lit(place, pl.Int64).alias(GROUP))
        for place, at in enumerate(live)
        if at in folds.prints
    ]
    return pl.concat(printed) if printed else None


def _fold_groups(
    agent: Agent, reader: Reader, groups: list[list[str]], items: bool, tags: list[int]
) -> dict[str, pl.DataFrame]:
    """The fold of each group, its rows tagged with the group's tag (``GROUP``); a natively
    folded agent's groups in one call (folded in parallel), its rows' groups told by it."""
    from analytics.agents import fold

    try:
        whole = fold(groups, agent.id, items, grouped=True)
    except ValueError:  # no native fold: the reader's own, a group at a time
        parts = [
            _tagged(reader.read_files([Path(p) for p in g], items=items), t)
            for g, t in zip(groups, tags, strict=True)
        ]
        return {name: pl.concat([part[name] for part in parts]) for name in NAMES}
    if tags == list(range(len(tags))):
        return {name: getattr(whole, name) for name in NAMES}
    tag = pl.col(GROUP).replace_strict(list(range(len(tags))), tags, return_dtype=pl.Int64)
    return {name: getattr(whole, name).with_columns(tag) for name in NAMES}


def _tagged(tables: AgentTables, tag: int) -> dict[str, pl.DataFrame]:
    """A fold's tables, each row tagged (``GROUP``) with ``tag``."""
    return {
        name: getattr(tables, name).with_columns(pl.lit(tag, pl.Int64).alias(GROUP))
        for name in NAMES
    }


#: Seeds that keep apart the hashes of the kinds of identity (``_identities``).
_SESSION, _CALL, _ITEM = 11, 23, 37


def _identities(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """(group, identity hash) of everything a group's fold names that another group's may
    share: sessions (their own and their parents), calls' ``api_call_id``, items'
    ``event_id``. A hash collision only folds two groups together needlessly."""
    calls, sessions, items = tables["calls"], tables["sessions"], tables["items"]
    named = [
        (calls, "session_id", _SESSION),
        (calls, "api_call_id", _CALL),
        (sessions, "session_id", _SESSION),
        (sessions, "parent_session_id", _SESSION),
        (items, "session_id", _SESSION),
        (items, "event_id", _ITEM),
    ]
    return (
        pl.concat(
            [
                table.lazy()
                .filter(pl.col(column).is_not_null())
                .select(GROUP, pl.col(column).hash(seed).alias("id"))
                for table, column, seed in named
            ]
        )
        .unique()
        .collect()
    )


def _together(folds: Folds) -> tuple[list[tuple[LogFile, ...]], dict[str, pl.DataFrame]]:
    """The groups left, and every table as one fold of all the files gives it, each row
    tagged with its group's index among them: sessions (and their calls and items) by their
    first file, each group's own order kept within; issues by file and line. A table already
    in that order (a tree's first run, folded in discovery's order) is kept as it is: each
    sort is a copy of a whole table."""
    live = [at for at, files in enumerate(folds.files) if files is not None]
    groups = [folds.files[at] or () for at in live]
    tables = dict(folds.tables or {})
    if not tables:
        return groups, {}
    if live != list(range(len(live))):
        number = pl.col(GROUP).replace_strict(live, list(range(len(live))), return_dtype=pl.Int64)
        tables = {name: t.with_columns(number) for name, t in tables.items()}
    order = folds.order
    paths, places = pl.Series(list(order), dtype=pl.String), pl.Series(list(order.values()))
    sessions = tables["sessions"]
    first = _looked_up(sessions["source_files"].list.first(), paths, places)
    out = {"sessions": _in_order(sessions, first)}
    for name in ("calls", "items"):
        table = tables[name]
        starts = _looked_up(table["session_id"], sessions["session_id"], first)
        out[name] = _in_order(table, starts)
    issues = tables["issues"]
    place = _looked_up(issues["file"], paths, places)
    out["issues"] = issues.sort(place, pl.col("line"), maintain_order=True, nulls_last=False)
    return groups, out


def _looked_up(values: pl.Series, keys: pl.Series, found: pl.Series) -> pl.Series:
    """``found`` at the place among ``keys`` of each of ``values``, null where it is not
    among them: ``values.replace_strict(keys, found, default=None)``, as a join, which for
    the 170,000 paths of a 1 GB tree holds a third of the memory (and of the time). Should
    a value meet a key twice over, the join would give it two rows: then the replacement."""
    named = pl.DataFrame([keys.alias("key"), found.alias("found")])
    joined = (
        values.alias("key")
        .to_frame()
        .join(named, on="key", how="left", maintain_order="left")
        .get_column("found")
    )
    if joined.len() != values.len():
        return values.replace_strict(keys, found, default=None, return_dtype=found.dtype)
    return joined.alias(values.name)


def _in_order(table: pl.DataFrame, key: pl.Series) -> pl.DataFrame:
    """``table`` sorted by ``key`` (nulls last), rows of equal keys in their order;
    ``table`` itself when it is in that order already. On a touched tree the groups folded
    again come after the reused ones, each in order: the sorted table is then a few runs of
    ``table``'s rows, set as slices rather than copied (``schema.in_row_order``)."""
    if key.is_sorted(nulls_last=True):
        return table
    order = (
        key.alias("key")
        .to_frame()
        .select(pl.arg_sort_by("key", maintain_order=True, nulls_last=True))
        .to_series()
    )
    return in_row_order(table, order)


def _plain(tables: dict[str, pl.DataFrame]) -> AgentTables:
    """Stored tables as a fold's (without ``GROUP``)."""
    return AgentTables(**{name: tables[name].drop(GROUP) for name in NAMES})
