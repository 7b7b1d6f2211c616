"""Run every stage, from log files to per-call tokens, in groups of sessions.

Sessions are independent: a session's calls, totals and tokens depend on its own events (and
its own per-call records) only. So a large tree is analysed a group of files at a time (about
``GROUP_BYTES`` of logs each, ``engine.groups``): the group's events are built, turned into
calls, sessions and tokens, and dropped before the next group is read. Peak memory then follows
the group size and the result tables, not the size of the tree. Callers that need the events
themselves (context attribution, the HTML report, exports) ask for one group holding everything
(``keep_events``).

Files are put in groups by a hash of their session hint (directory name or file stem), so a
session's files share a group and a group keeps its files from run to run: with a result
cache, an unchanged group is taken from the previous result instead of analysed
(``fingerprints.group_key``, ``Previous``), and a live session costs the re-reading and
re-analysis of its own group only. A session whose files
name it differently (a file with no ``session.start`` beside one that has it) can still land in two
groups; such groups are merged and analysed again, so grouping never changes a result.

Groups are analysed two at a time (``WORKERS``): the scan and the engine's pass run with
the GIL released, so two groups in flight keep both cores of a small machine busy while the
Python between them (discovery of the next group, conforming tables) waits its turn. Results
are collected in group order, so the output never depends on which group finished first.

With a result cache, the previous whole result of the same paths (``Previous``) serves: a
group whose fingerprint (key and records digest) it lists has the same tables, so its rows
are taken from that one result, read while the changed groups are analysed. Its calls are not
even decoded: the new result's are its calls patched (``results.Patched``), put together only
for a command that reads them. The groups of a larger tree are not also stored one by one:
on the 1 GB benchmark tree that cost a cold run 0.19 s (median wall of 5 alternating runs,
1.65 against 1.46 s) and served nothing the whole result does not. A lone group (a session, a
small tree) is stored on its own, as ``Previous`` does not serve it: its result then outlives
a change to another session's per-call records, which changes the tree's key.

The stages are imported where they run: a result loaded from the result cache needs none of
them, and importing them is a tenth of such a run.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from analytics import _scanner
from analytics.agents.discover import Found, LogFile
from analytics.agents.pipeline import pipeline
from analytics.cache import fingerprints
from analytics.cache.results import TABLES, Patched, ResultCache, in_order, records_digest
from analytics.core.schema import ISSUES, LOG_PRICES, OBSERVED_USAGE, conform, empty, stacked
from analytics.engine.groups import GROUP_BYTES, WORKERS, groups_of, largest_first, size

if TYPE_CHECKING:
    from analytics.agents.pipeline import Progress

#: The table of each group's issues kept beside a whole result (``Tables.group_issues``).
GROUP_ISSUES = "group_issues"
#: A whole result's calls are stored as the previous result's patched (``results.Patched``)
#: while the sessions dropped from its base are at most one in this many of its sessions;
#: past that they are stored whole again, so reading them never costs much more than that.
PATCHED_AT_MOST = 4


@dataclasses.dataclass(frozen=True)
class Tables:
    """What the stages produce; ``events`` is None unless they were asked to be kept.
    ``groups``: the groups of sessions analysed, as the paths of their logs (``run_stages``
    sets it), which ``Analysis.event_groups`` reads events back in."""

    #: CALLS, or what gives them (``calls``): with rows taken from the previous result, its
    #: calls patched (``results.Patched``), put together only if asked for (a run that shows
    #: sessions needs them only to store them, and stores the patch).
    calls_source: pl.DataFrame | Callable[[], pl.DataFrame] = dataclasses.field(compare=False)
    sessions: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame
    log_prices: pl.DataFrame
    events: pl.DataFrame | None
    groups: tuple[tuple[str, ...], ...] = ()
    #: Per group (as ``groups``): what decides its tables, its key and the digest of its
    #: sessions' per-call records (``fingerprint``; None without a result cache), and the
    #: ids of its sessions. Two runs' groups with one fingerprint have the same tables.
    fingerprints: tuple[str | None, ...] = ()
    members: tuple[tuple[str, ...], ...] = ()
    #: Each group's own issues (ISSUES and ``_group``, its index in ``groups``): the ones a
    #: later run takes with the group's rows (``Previous``). None with a single group.
    group_issues: pl.DataFrame | None = None
    #: With rows taken from the previous result: the calls of the groups analysed (or
    #: loaded) in this run, which hold every session not taken from it, in order; for
    #: pricing those sessions alone (``analytics.cache.priced_tables``). None otherwise.
    fresh_calls: pl.DataFrame | None = None

    @cached_property
    def calls(self) -> pl.DataFrame:
        """One row per LLM call (schema.CALLS with tokens)."""
        source = self.calls_source
        return source if isinstance(source, pl.DataFrame) else source()

    @classmethod
    def of(cls, frames: Mapping[str, pl.DataFrame]) -> Tables:
        """Tables from stored frames (``results.TABLES``), without events."""
        return cls(
            calls_source=frames["calls"],
            sessions=frames["sessions"],
            model_metrics=frames["model_metrics"],
            issues=frames["issues"],
            log_prices=frames["log_prices"],
            events=None,
        )


@dataclasses.dataclass(frozen=True)
class Previous:
    """The previous whole result of the same inputs, stored under ``key``, as its note lists
    its groups: each one's fingerprint (``Tables.fingerprints``) and session ids.

    A group of this run with one of those fingerprints has the tables it had then, so its
    rows are taken from that result: one read of the whole result, instead of one of each
    stored group, when a live session changed one group of many.
    """

    key: str
    fingerprints: tuple[str | None, ...]
    members: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, key: str | None, note: Mapping[str, Any] | None) -> Previous | None:
        """From a result's key and note; None when either is missing or malformed."""
        fingerprints = note.get("fingerprints") if note else None
        members = note.get("members") if note else None
        if not (key and isinstance(fingerprints, list) and isinstance(members, list)):
            return None
        if len(fingerprints) != len(members) or not all(
            isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in members
        ):
            return None
        return cls(
            key,
            tuple(f if isinstance(f, str) else None for f in fingerprints),
            tuple(tuple(ids) for ids in members),
        )


def run_stages(
    found: Found,
    progress: Progress | None,
    *,
    keep_events: bool,
    group_bytes: int = GROUP_BYTES,
    cache: ResultCache | None = None,
    previous: Previous | None = None,
) -> Tables:
    """Analyse ``found``'s logs: in one group (``keep_events``), else in groups of about
    ``group_bytes``, each taken from ``previous`` or loaded from ``cache`` when unchanged."""
    groups = [found.logs] if keep_events else groups_of(found.logs, group_bytes)
    observed = _Observed(found, whole=len(groups) > 1)
    tally = _Tally(progress, sum(size(log) for log in found.logs))
    # Only a lone group is stored on its own (see the module docstring); a larger tree's
    # groups are kept in its whole result, by fingerprint, for the next run (``previous``).
    alone = len(groups) == 1

    def key_of(logs: list[LogFile]) -> str | None:
        return fingerprints.group_key(logs) if cache and not keep_events else None

    def run(logs: list[LogFile], key: str | None) -> tuple[Tables, str | None]:
        stored = _stored(cache, key, observed) if cache and key and alone else None
        if stored is not None:
            tally.read(id(logs), sum(size(log) for log in logs))
            return stored
        step = tally.step(id(logs)) if progress else None
        # Kept while the next groups run, and no copy needed: the engine builds these tables
        # in arrays of their own (only the events gathered for ``keep_events`` view the
        # scanner's buffers), so a group's scanned lines are freed as soon as it is analysed.
        tables = _analyse(logs, step, observed, keep_events)
        if keep_events or not (cache and key):
            return tables, None
        ids = tables.sessions["session_id"].to_list()
        digest = records_digest(observed.of(ids))
        if alone:
            note = {"sessions": ids, "records": digest}
            cache.save_later(key, {name: getattr(tables, name) for name in TABLES}, note)
        return tables, _fingerprint(key, digest)

    keys = [key_of(logs) for logs in groups]
    # A lone group is loaded or analysed as before: it reads only its own sessions' records.
    usable = previous if cache and len(groups) > 1 else None
    taken = _same_groups(usable, keys, observed) if usable else {}
    for i in taken:
        tally.read(id(groups[i]), sum(size(log) for log in groups[i]))
    todo = [i for i in range(len(groups)) if i not in taken]
    # The previous result is read while the changed groups are analysed.
    with ThreadPoolExecutor(1, thread_name_prefix="agentcost-previous") as reader:
        reading = reader.submit(_Reused.read, cache, usable) if cache and usable and taken else None
        ran = _run_groups(run, groups, keys, todo)
        reused = reading.result() if reading else None
    if reused is None and taken:  # it could not be read: those groups are loaded after all
        ran |= {i: run(groups[i], keys[i]) for i in taken}
        taken = {}
    entries = [
        reused.entry(groups[i], taken[i])
        if reused and i in taken
        else _Entry(groups[i], ran[i][0], ran[i][1], _ids_of(ran[i][0]))
        for i in range(len(groups))
    ]
    merges = _split_sessions([entry.logs for entry in entries], [e.members for e in entries])
    if merges:
        gone = set().union(*(indexes for _, indexes in merges))
        entries = [entry for index, entry in enumerate(entries) if index not in gone]
        for logs, _ in merges:
            tables, fingerprint = run(logs, key_of(logs))
            entries.append(_Entry(logs, tables, fingerprint, _ids_of(tables)))
    # The scans are done: the scanned columns' memory kept for the next scan is freed before
    # the groups' tables are combined (where the run's peak RSS is).
    _scanner.release_buffers()
    parts, group_issues = [], []
    for entry in entries:
        if entry.tables is not None:
            parts.append(entry.tables)
            group_issues.append(entry.tables.issues)
        elif reused and entry.previous is not None:
            group_issues.append(reused.issues_of(entry.previous))
    kept = {entry.previous for entry in entries if entry.previous is not None}
    fresh = None
    if reused and kept:
        fresh = in_order([part.calls for part in parts]) if parts else reused.calls.added.clear()
        parts.insert(0, reused.rows(kept))
    members = tuple(entry.members for entry in entries)
    combined = _combine(parts, observed.issues([s for ids in members for s in ids]))
    return dataclasses.replace(
        combined,
        groups=tuple(tuple(log.file for log in entry.logs) for entry in entries),
        fingerprints=tuple(entry.fingerprint for entry in entries),
        members=members,
        group_issues=_numbered(group_issues) if len(entries) > 1 else None,
        fresh_calls=fresh,
    )


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One group of a run: its logs, its tables (None when taken from the previous result,
    at index ``previous`` there), its fingerprint and its session ids."""

    logs: list[LogFile]
    tables: Tables | None
    fingerprint: str | None
    members: tuple[str, ...]
    previous: int | None = None


def _run_groups(
    run: Callable[[list[LogFile], str | None], tuple[Tables, str | None]],
    groups: list[list[LogFile]],
    keys: list[str | None],
    todo: list[int],
) -> dict[int, tuple[Tables, str | None]]:
    """``run`` on the groups ``todo`` (indexes into ``groups``), ``WORKERS`` at a time, the
    largest first (``largest_first``), so the last to finish are small ones."""
    if min(WORKERS, len(todo)) <= 1:  # one group (a session, a small tree): no thread
        return {i: run(groups[i], keys[i]) for i in todo}
    with ThreadPoolExecutor(WORKERS) as workers:
        order = largest_first([groups[i] for i in todo])
        started = {todo[j]: workers.submit(run, groups[todo[j]], keys[todo[j]]) for j in order}
        return {i: started[i].result() for i in todo}


def ordered_events(logs: Sequence[LogFile]) -> pl.DataFrame:
    """The logs' events in each session's order, for a result that was analysed without them."""
    return pipeline().ordered_events(logs)


def _stored(cache: ResultCache, key: str, observed: _Observed) -> tuple[Tables, str | None] | None:
    """A group's stored tables and fingerprint, if the per-call records of its sessions are
    unchanged."""
    stored = cache.load(key)
    if stored is None:
        return None
    tables, note = stored
    ids, digest = note.get("sessions"), note.get("records")
    if not isinstance(ids, list) or digest != records_digest(observed.of(ids)):
        return None
    return Tables.of(tables), _fingerprint(key, digest)


@dataclasses.dataclass(frozen=True)
class _Reused:
    """The previous result's tables (its calls as a patch: ``results.Patched``, not decoded)
    and group issues (``Previous``)."""

    tables: Tables
    calls: Patched
    group_issues: pl.DataFrame
    previous: Previous

    def entry(self, logs: list[LogFile], index: int) -> _Entry:
        """This run's group ``logs``, taken from the previous result's group ``index``."""
        previous = self.previous
        return _Entry(logs, None, previous.fingerprints[index], previous.members[index], index)

    def rows(self, indexes: set[int]) -> Tables:
        """The previous result's rows of its groups ``indexes``, as one group's tables (its
        calls as the previous ones without the other groups' sessions)."""
        ids = [s for index in sorted(indexes) for s in self.previous.members[index]]
        mine = pl.col("session_id").is_in(_ids(ids))
        others = {
            s
            for index, members in enumerate(self.previous.members)
            if index not in indexes
            for s in members
        }
        return Tables(
            calls_source=self.calls.patched(others - set(ids), []),
            sessions=self.tables.sessions.filter(mine),
            model_metrics=self.tables.model_metrics.filter(mine),
            issues=self.group_issues.filter(pl.col("_group").is_in(sorted(indexes))).drop("_group"),
            log_prices=self.tables.log_prices.filter(mine),
            events=None,
        )

    def issues_of(self, index: int) -> pl.DataFrame:
        return self.group_issues.filter(pl.col("_group") == index).drop("_group")

    @classmethod
    def read(cls, cache: ResultCache, previous: Previous) -> _Reused | None:
        """``previous``'s tables and group issues (not its note: ``Previous`` was read from
        it); None when they cannot be read."""
        names = [name for name in (*TABLES, GROUP_ISSUES) if name != "calls"]
        read = {name: cache.load_table(previous.key, name) for name in names}
        tables = {name: table for name, table in read.items() if table is not None}
        calls = cache.load_patchable(previous.key, "calls")
        if calls is None or len(tables) < len(read) or "_group" not in tables[GROUP_ISSUES]:
            return None
        # its calls are patched by session (``rows``): each must be one of its groups'
        if not calls.sessions() <= {s for ids in previous.members for s in ids}:
            return None
        tables["calls"] = calls.added  # its calls are the patch's (``rows``), never decoded
        return cls(Tables.of(tables), calls, tables[GROUP_ISSUES], previous)


def _same_groups(previous: Previous, keys: list[str | None], observed: _Observed) -> dict[int, int]:
    """The groups of this run (by ``keys``) that ``previous`` holds with the same
    fingerprint (the same key, and per-call records that digest the same now): this run's
    index -> its index there."""
    where = {f.split(" ")[0]: i for i, f in enumerate(previous.fingerprints) if f}
    pairs = {}
    for i, key in enumerate(keys):
        j = where.get(key) if key else None
        if key and j is not None:
            digest = records_digest(observed.of(list(previous.members[j])))
            if previous.fingerprints[j] == _fingerprint(key, digest):
                pairs[i] = j
    return pairs


def _ids_of(tables: Tables) -> tuple[str, ...]:
    return tuple(tables.sessions["session_id"].to_list())


def _numbered(issues: list[pl.DataFrame]) -> pl.DataFrame:
    """Each group's issues with its index (``_group``), in one table."""
    return pl.concat(
        [
            conform(frame, ISSUES).with_columns(pl.lit(index, pl.Int64).alias("_group"))
            for index, frame in enumerate(issues)
        ]
    )


def _fingerprint(key: str, records: str) -> str:
    """What decides a group's tables: its key (code, files) and its records' digest."""
    return f"{key} {records}"


def analyse_parsed(scanned: Any, found: Found) -> Tables:
    """The tables ``run_stages`` gives for ``found`` (one group), from its logs already scanned.

    For ``agentcost watch``, which holds a growing log's batches and scans only the lines
    written since (the agent's ``Pipeline.follower``): every stage after scanning runs again
    on them, so the result is a fresh analysis of the file.
    """
    observed = _Observed(found, whole=False)
    tables = _stages(scanned, observed, keep_events=False)
    return _combine([tables], observed.issues(tables.sessions["session_id"].to_list()))


def _analyse(
    logs: Sequence[LogFile],
    progress: Progress | None,
    observed: _Observed,
    keep_events: bool,
) -> Tables:
    """Every stage on one group of logs."""
    return _stages(pipeline().scan(logs, progress), observed, keep_events)


def _stages(scanned: Any, observed: _Observed, keep_events: bool) -> Tables:
    """Every stage after scanning (the agent's ``Pipeline.stages``), with the per-call
    records kept beside the logs for the sessions scanned."""
    agent = pipeline()
    # most trees keep no per-call records: their sessions need not even be listed
    named = observed.of(agent.session_ids(scanned)) if observed.kept else empty(OBSERVED_USAGE)
    staged = agent.stages(scanned, named, keep_events)
    return Tables(
        staged.calls,
        staged.sessions,
        staged.model_metrics,
        staged.issues,
        staged.log_prices,
        staged.events,
    )


class _Tally:
    """Bytes read so far across the groups in flight, for ``progress`` (which may be called
    from any worker, one call at a time)."""

    def __init__(self, progress: Progress | None, todo: int) -> None:
        self._progress = progress
        self._todo = todo
        self._read: dict[int, int] = {}
        self._lock = threading.Lock()

    def read(self, group: int, now: int) -> None:
        with self._lock:
            self._read[group] = now
            if self._progress:
                self._progress(min(sum(self._read.values()), self._todo), self._todo)

    def step(self, group: int) -> Progress:
        return lambda now, _: self.read(group, now)


class _Observed:
    """Per-call token records kept beside the logs (session-store.db rows, OTel spans).

    With several groups they are read once, whole, on first use, and handed to each group for
    its sessions. With one group (a session, a small tree) only its sessions' store rows are
    read, as a store may hold years of other sessions. Either way a record's problems are
    reported only for the sessions analysed (``issues``), so grouping never changes them.
    """

    def __init__(self, found: Found, *, whole: bool) -> None:
        self._found = found
        self._whole = whole
        self._read_for: dict[tuple[str, ...] | None, tuple[pl.DataFrame, pl.DataFrame]] = {}
        self._lock = threading.Lock()  # groups in flight share the records read

    @property
    def kept(self) -> bool:
        """Whether any records are kept beside the logs (a session store, an OTel export)."""
        return pipeline().has_records(self._found)

    def of(self, session_ids: list[str]) -> pl.DataFrame:
        rows, _ = self._records(session_ids)
        if not rows.height:  # most trees have no records: no filter to run per group
            return rows
        return rows.filter(pl.col("session_id").is_in(_ids(session_ids)))

    def issues(self, session_ids: list[str]) -> pl.DataFrame:
        """Problems of the records: whole files', and those of the sessions' own rows."""
        rows, issues = self._records(session_ids)
        if not issues.height:  # most trees keep no records: no filter of every session's id
            return issues
        theirs = rows.filter(pl.col("session_id").is_in(_ids(session_ids))).select(
            pl.col("source_file").alias("file"), pl.col("source_line").alias("line")
        )
        return pl.concat(
            [
                issues.filter(pl.col("line").is_null()),
                issues.join(theirs, on=["file", "line"], how="semi"),
            ]
        )

    def _records(self, session_ids: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
        wanted = None if self._whole else tuple(sorted(session_ids))
        with self._lock:
            if wanted not in self._read_for:
                self._read_for[wanted] = self._read(wanted)
            return self._read_for[wanted]

    def _read(self, session_ids: tuple[str, ...] | None) -> tuple[pl.DataFrame, pl.DataFrame]:
        return pipeline().records(self._found, session_ids)


def _ids(session_ids: list[str]) -> pl.Expr:
    return pl.lit(pl.Series(session_ids, dtype=pl.String).implode())


def _split_sessions(
    groups: list[list[LogFile]], members: list[tuple[str, ...]]
) -> list[tuple[list[LogFile], set[int]]]:
    """Groups that share a session (``members``: each group's session ids), merged: (their
    logs together, the group indexes)."""
    where: dict[str, int] = {}
    parent = list(range(len(groups)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for index, ids in enumerate(members):
        for session in ids:
            if session in where and root(where[session]) != root(index):
                parent[root(index)] = root(where[session])
            where.setdefault(session, index)
    merged: dict[int, set[int]] = {}
    for index in range(len(groups)):
        merged.setdefault(root(index), set()).add(index)
    return [
        ([log for i in sorted(indexes) for log in groups[i]], indexes)
        for indexes in merged.values()
        if len(indexes) > 1
    ]


def _combine(results: list[Tables], observed_issues: pl.DataFrame) -> Tables:
    """One set of tables from the groups', in one order whatever the grouping; with the
    issues of the log's prices, which compare the prices of every group."""
    from analytics.core.pricing.learned import learned_prices

    prices = stacked([r.log_prices for r in results], LOG_PRICES).sort(
        "source_file", "source_line", maintain_order=True
    )
    price_issues = learned_prices(prices)[1] if prices.height else empty(ISSUES)
    sessions = pl.concat([r.sessions for r in results]).sort(
        "start_time", "session_id", nulls_last=False
    )
    calls: pl.DataFrame | Callable[[], pl.DataFrame]
    patches = [r.calls_source for r in results if isinstance(r.calls_source, Patched)]
    if not patches:
        calls = in_order([r.calls for r in results])
    else:  # the previous result's, patched (one of ``results``: ``run_stages``)
        (patch,) = patches
        calls = patch.patched((), [r.calls for r in results if r.calls_source is not patch])
        if len(calls.dropped) * PATCHED_AT_MOST > sessions.height:  # stored whole again
            calls = calls.__call__
    return Tables(
        calls_source=calls,
        sessions=sessions,
        model_metrics=pl.concat([r.model_metrics for r in results]).sort(
            "source_file", "source_line", maintain_order=True
        ),
        issues=stacked([*(r.issues for r in results), observed_issues, price_issues], ISSUES),
        log_prices=prices,
        events=results[0].events if len(results) == 1 else None,
    )
