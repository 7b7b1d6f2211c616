"""The whole pipeline in one call: find logs, read them, count calls, summarise sessions.

This is the library entry point the CLI and the notebooks use::

    from analytics.engine.analyze import analyze
    result = analyze([Path("sample_logs")])
    result.sessions  # one row per session (schema.SESSIONS)
    result.calls     # one row per LLM call (schema.CALLS)
    result.session_view  # the sessions with each agent's own table joined
    result.call_view     # the calls with each agent's own columns (what pricing reads)

The stages themselves run in ``analytics.engine.group_analysis`` (in groups of sessions when
the events need not be kept). With ``use_cache`` an unchanged set of inputs is not analysed again
(``analytics.cache.results``), and of a changed one only the groups of sessions whose inputs
changed are read and analysed again. Each stored analysis is noted as the latest of its inputs
(the paths asked for), with each group's fingerprint and sessions: the next analysis of those
paths takes its unchanged groups' rows from it (``group_analysis.Previous``), and what priced it
still prices their sessions (``Analysis.previous``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import polars as pl

from analytics.agents.discover import COPILOT, Found, LogFile, discover
from analytics.cache import fingerprints
from analytics.cache.results import TABLES, ResultCache, Stored
from analytics.core.allocators import release
from analytics.core.schema import (
    AGENT_CALLS,
    ANALYSIS_CALLS,
    ANALYSIS_SESSIONS,
    ISSUES,
    AgentTable,
    conform,
    in_row_order,
    joined,
    with_nulls,
)
from analytics.engine import groups as grouping
from analytics.engine.group_analysis import (
    GROUP_ISSUES,
    Previous,
    Tables,
    ordered_events,
    run_stages,
)

if TYPE_CHECKING:
    from analytics.agents.pipeline import Progress


@dataclass(frozen=True)
class Before:
    """The previous stored analysis of the same paths, as what priced it still serves
    (``analytics.cache.priced_tables``): its ``key``, the sessions whose tables are the same in
    both (``same``: their groups' fingerprints are; perhaps none), and what gives the calls of
    at least every other session (``calls``: those analysed anew, and the other agents', as
    ``Analysis.call_view`` has them), so that only those are priced, without the whole table
    of calls."""

    key: str
    same: frozenset[str]
    calls: Callable[[], pl.DataFrame]


@dataclass(frozen=True)
class Analysis:
    """Every table of one run. ``issues`` lists each problem with its file and line.

    ``events`` is computed on first use: a result loaded from the result cache, or analysed
    with ``keep_events=False``, reads its events again (``read_events``) only for the
    commands that need them; ``event_groups`` reads them a group of sessions at a time, in
    the pipeline's own groups (``groups``: the paths of each group's logs), for per-session
    work with flat memory.
    """

    #: The calls' view (``call_view``), or what gives it on first use: a stored result's are
    #: decoded only for the commands that read them (``analyze`` shows the priced sessions
    #: kept beside).
    calls_source: pl.DataFrame | Callable[[], pl.DataFrame] = field(repr=False, compare=False)
    sessions: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame
    log_prices: pl.DataFrame  # every price the logs quote (schema.LOG_PRICES): all sessions'
    found: Found
    read_events: Callable[[Sequence[LogFile]], pl.DataFrame] = field(repr=False, compare=False)
    kept_events: pl.DataFrame | None = field(default=None, repr=False, compare=False)
    groups: tuple[tuple[str, ...], ...] = field(default=(), repr=False, compare=False)
    #: The result cache and key this whole analysis is stored under (None: not stored, or
    #: restricted by ``only``): what priced it is kept there too
    #: (``analytics.cache.priced_tables``).
    stored_as: tuple[ResultCache, str] | None = field(default=None, repr=False, compare=False)
    #: The Claude Code and Codex sessions' context items, folded with their calls (see
    #: ``_with_agents``; ``agents.contract.as_events`` makes them EVENTS rows when events are
    #: read): never read again, kept whole, or None.
    agent_events: pl.DataFrame | None = field(default=None, repr=False, compare=False)
    #: The previous stored analysis of the same paths (``Before``). None when this one was
    #: not analysed anew, or there is no previous one.
    previous: Before | None = field(default=None, repr=False, compare=False)
    #: What only one agent's sessions have, each agent's in a table of its own (its
    #: declaration and rows, one per session of that agent), joined by ``session_view``.
    agent_tables: tuple[tuple[AgentTable, pl.DataFrame], ...] = field(
        default=(), repr=False, compare=False
    )

    @cached_property
    def session_view(self) -> pl.DataFrame:
        """``sessions`` with each agent's own table joined by session id (its columns null
        for the other agents' sessions): what the reports, the JSON output and the export
        list of a session."""
        return joined(self.sessions, self.agent_tables)

    @cached_property
    def call_view(self) -> pl.DataFrame:
        """One row per LLM call (``ANALYSIS_CALLS``) with each agent's own columns in their
        places (``call_tables``; null for the other agents' calls): what pricing reads (a
        call's own bill), and what ``--calls`` lists."""
        source = self.calls_source
        return source if isinstance(source, pl.DataFrame) else source()

    @cached_property
    def calls(self) -> pl.DataFrame:
        """One row per LLM call (``ANALYSIS_CALLS``: CALLS with tokens and what every agent
        adds): ``call_view`` without the agents' own columns."""
        own = [name for table in call_tables() for name in table.columns if name not in table.key]
        return self.call_view.drop(own, strict=False)

    @cached_property
    def call_table_rows(self) -> tuple[tuple[AgentTable, pl.DataFrame], ...]:
        """Each agent's own call table and its rows, one per call of that agent (the team
        dataset writes them as tables of their own)."""
        from analytics.agents.pipeline import pipeline_agent

        mine = self.call_view.filter(pl.col("agent") == pipeline_agent())
        return tuple((table, mine.select(list(table.columns))) for table in call_tables())

    @cached_property
    def events(self) -> pl.DataFrame:
        """One row per usable log line (schema.EVENTS) of the sessions analysed, in each
        session's order."""
        events = self.kept_events
        if events is None:
            events = self.read_events(self.found.logs)
        if self.agent_events is not None:
            from analytics.agents.contract import as_events

            events = pl.concat([events, as_events(self.agent_events)], how="vertical")
        return events.filter(pl.col("session_id").is_in(self.sessions["session_id"].implode()))

    def only(self, session_ids: pl.Series, events: pl.DataFrame | None = None) -> Analysis:
        """This analysis restricted to the sessions ``session_ids`` (``events``: theirs, when
        already read; else they are read, or filtered, on first use)."""
        mine = pl.col("session_id").is_in(session_ids.implode())
        return Analysis(
            calls_source=self.call_view.filter(mine),
            sessions=self.sessions.filter(mine),
            model_metrics=self.model_metrics.filter(mine),
            issues=self.issues,
            log_prices=self.log_prices,
            found=self.found,
            read_events=self.read_events,
            kept_events=self.kept_events if events is None else events,
            groups=self.groups,
            agent_events=None
            if events is not None or self.agent_events is None
            else self.agent_events.filter(mine),
            agent_tables=tuple((table, rows.filter(mine)) for table, rows in self.agent_tables),
        )

    def session_groups(self) -> Iterator[Analysis]:
        """This analysis a group of whole sessions at a time, each with its events read: for
        per-session work on a large tree with flat memory."""
        for events in self.event_groups():
            yield self.only(events["session_id"].unique(), events)

    def event_groups(self) -> Iterator[pl.DataFrame]:
        """``events``, a group of whole sessions at a time (the groups the pipeline analysed);
        at least one group. Of each group, the logs of this analysis's sessions are read
        together, so a session's events are the same as in ``events``."""
        if self.kept_events is not None or "events" in self.__dict__ or not self.groups:
            yield self.events
            return
        logs = {log.file: log for log in self.found.logs}
        wanted = set(self.sessions["source_files"].explode().drop_nulls().to_list())
        ids = self.sessions["session_id"].implode()
        read = False
        for group in self.groups:
            chosen = [logs[path] for path in group if path in wanted and path in logs]
            if chosen:
                read = True
                yield self.read_events(chosen).filter(pl.col("session_id").is_in(ids))
        if self.agent_events is not None and self.agent_events.height:
            from analytics.agents.contract import as_events

            read = True  # the other agents' sessions: one more group
            yield as_events(self.agent_events.filter(pl.col("session_id").is_in(ids)))
        if not read:  # no session: one group, with no events
            yield self.read_events([])


@dataclass(frozen=True)
class Window:
    """Which sessions to keep: those starting on ``since``..``until`` (inclusive) in ``zone``,
    written by one of ``agents`` (all when empty)."""

    since: date | None = None
    until: date | None = None
    zone: ZoneInfo | None = None
    agents: tuple[str, ...] = ()

    def narrows(self) -> bool:
        """Whether the window leaves any session out."""
        return bool(self.since or self.until or self.agents)


def analyze(
    paths: Sequence[Path],
    window: Window | None = None,
    *,
    use_cache: bool = False,
    progress: Progress | None = None,
    keep_events: bool = True,
    group_bytes: int | None = None,
    found: Found | None = None,
    agent_items: bool = True,
) -> Analysis:
    """Analyse the logs under ``paths`` (the Copilot home when empty).

    ``agent_items=False`` leaves out the Claude Code and Codex sessions' context items
    (their ``events``), which only attribution and the report read: a report of calls and
    money over a large tree then holds no row per prompt, reply and tool result.

    ``use_cache`` keeps results in ``analytics.cache.location.cache_dir()``: an unchanged set of
    inputs is loaded, not analysed; otherwise only the groups of sessions whose inputs changed
    are analysed again. ``progress`` is called with
    (bytes parsed, bytes to parse) while files are read. ``keep_events=False`` analyses a
    large tree in groups of sessions (about ``group_bytes`` of logs each), so memory stays
    flat; ``events`` are then read again if asked for, group by group. ``found``: what
    ``discover(paths)`` gives, when the caller already has it.
    """
    found = found or discover(paths)
    group_bytes = group_bytes or grouping.GROUP_BYTES  # as ``grouping.scan_ahead`` reads it
    results = ResultCache() if use_cache else None
    key = fingerprints.tree_key(found) if results else None
    stored = results.load_lazily(key, ["calls"]) if results and key else None
    if stored is None:
        slot, previous = None, None
        if results and key:
            slot = fingerprints.paths_slot(paths)
            before = results.recall(slot)
            previous = Previous.of(before, results.note(before)) if before else None
        result, ran = _run(found, results, progress, keep_events, group_bytes, previous)
        if results and key:
            note = {
                "groups": [list(group) for group in result.groups],
                "fingerprints": list(ran.fingerprints),
                "members": [list(ids) for ids in ran.members],
            }
            # the calls are taken when written (``Tables.calls_source``)
            saved: dict[str, Stored] = {
                name: getattr(result, name) for name in TABLES if name != "calls"
            }
            saved["calls"] = result.calls_source
            if ran.group_issues is not None:
                saved[GROUP_ISSUES] = ran.group_issues
            results.save_later(key, saved, note, slot)
            result = dataclasses.replace(
                result, stored_as=(results, key), previous=_unchanged(previous, ran)
            )
    else:
        tables, readers, note = stored
        groups = note.get("groups")
        result = Analysis(
            calls_source=functools.partial(
                _decoded, readers["calls"], found, keep_events, group_bytes
            ),
            sessions=tables["sessions"],
            model_metrics=tables["model_metrics"],
            issues=tables["issues"],
            log_prices=tables["log_prices"],
            found=found,
            read_events=ordered_events,
            groups=tuple(tuple(group) for group in groups) if isinstance(groups, list) else (),
            stored_as=(results, key) if results and key else None,
            previous=None,  # loaded, not analysed anew
        )
    slot = fingerprints.paths_slot(paths) if results else None
    result = _with_agents(result, agent_items, results, slot)
    release()  # what the stages freed, before the caller prices and renders
    return _within(result, window) if window and window.narrows() else result


def _with_agents(
    result: Analysis, items: bool, results: ResultCache | None = None, slot: str | None = None
) -> Analysis:
    """The analysis with every agent's calls and sessions: Copilot's (from the pipeline or
    the result cache) marked ``copilot`` with the agent columns the others carry, and the
    logs of every other agent discovery found, folded by their readers (``analytics.agents``),
    a group of files at a time, the groups unchanged since the last analysis of the same
    paths (``slot``) taken from ``results`` (``cache.agent_results``), with their context
    items (``agent_events``), which ``events`` gives as EVENTS rows, so attribution and the
    report read them as they read Copilot's events (unless ``items`` is false: then the calls
    are numbered among themselves, and what priced them is stored under a key of its own,
    apart from the analysis whose calls stand among their items). The sessions of the groups
    taken unchanged from the previous analysis, which priced them, are among the sessions
    ``previous`` shares (``Before.same``): only the others are priced again."""
    from analytics.agents.contract import core_tables
    from analytics.agents.reader import readers
    from analytics.cache.agent_results import agent_tables

    # discovery already found every file (a session's sub-agents too), once each
    named = [
        (agent, reader, [log for name, log in result.found.agent_logs if name == agent.id])
        for agent, reader in readers()
    ]
    named = [(agent, reader, logs) for agent, reader, logs in named if logs]

    def keyed(key: str) -> str:
        return key if items or not named else fingerprints.without_items(key)

    stored = result.stored_as
    if stored is not None:
        stored = (stored[0], keyed(stored[1]))
    before = result.previous
    if before is not None:
        before = dataclasses.replace(before, key=keyed(before.key))
    parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []
    same: set[str] = set()  # the agents' sessions priced by the previous analysis as they are
    for agent, reader, logs in named:
        folded = agent_tables(
            agent,
            reader,
            logs,
            items=items,
            slot=slot,
            cache=results,
            analysis=stored[1] if stored else None,
        )
        parts.append(core_tables(folded.tables))
        if before is not None and folded.before == before.key:
            same |= folded.same
        del folded
        release()  # what the fold and its groups freed
    source = result.calls_source
    copilot_sessions, own = _as_copilot_sessions(result.sessions)
    others = [calls for calls, _, _, _ in parts]

    def every(mine: pl.DataFrame, agents: Sequence[pl.DataFrame] = others) -> pl.DataFrame:
        copilot = _as_copilot_calls(mine, copilot_sessions)
        view = call_view_contract()
        own = {name: dtype for name, dtype in view.items() if name not in ANALYSIS_CALLS}
        return _stacked([copilot, *(conform(with_nulls(a, own), view) for a in agents)])

    def calls() -> pl.DataFrame:
        return every(source if isinstance(source, pl.DataFrame) else source())

    if before is not None:
        fresh, kept = before.calls, pl.Series(sorted(same), dtype=pl.String).implode()
        changed = [c.filter(~pl.col("session_id").is_in(kept)) for c in others] if same else others
        before = dataclasses.replace(
            before, same=before.same | same, calls=lambda: every(fresh(), changed)
        )

    sessions = _stacked([copilot_sessions, *(s for _, s, _, _ in parts)])
    issues = [result.issues, *(i for _, _, i, _ in parts)]
    events = [e for _, _, _, e in parts if items]
    return dataclasses.replace(
        result,
        stored_as=stored,
        previous=before,
        agent_events=pl.concat(events, how="vertical") if events else None,
        agent_tables=(own,),
        calls_source=calls,
        sessions=sessions.sort(*SESSION_ORDER, nulls_last=True),
        issues=pl.concat(issues).sort("file", "line", "severity", "message", nulls_last=False),
    )


def call_tables() -> list[AgentTable]:
    """The agents' own tables of calls, whose columns ``Analysis.call_view`` keeps."""
    from analytics.agents.pipeline import agent_tables

    return [table for table in agent_tables() if table.of_calls]


@functools.cache
def call_view_contract() -> dict[str, pl.DataType]:
    """``ANALYSIS_CALLS`` with every agent call table's columns in their places: the columns
    of ``Analysis.call_view``."""
    contract = dict(ANALYSIS_CALLS)
    for table in call_tables():
        contract = table.contract(contract)
    return contract


def _stacked(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """``frames`` (of one schema, at least one) one after another, the empty ones left out:
    an empty chunk among a column's chunks makes pricing copy the whole table
    (``call_costs._without_empty_chunks``), and a lone frame is kept as it is."""
    rows = [frame for frame in frames if frame.height] or [frames[0]]
    return pl.concat(rows, how="vertical") if len(rows) > 1 else rows[0]


#: The order sessions are listed in: by start time, then id (a session without a start last).
SESSION_ORDER = ("start_time", "session_id")


def in_session_order(calls: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """``calls`` in the order their ``sessions`` are listed (``SESSION_ORDER``), each
    session's calls in log order (``event_seq``): ``analyze --calls`` lists calls as
    ``analyze`` lists sessions, whatever agent wrote them. The order is worked out on the
    keys alone and the calls set in it once (``in_row_order``: not at all where they are in
    it already): joining the start times to every column of the calls and sorting them
    copied the whole priced table twice (on the 1 GB pi tree's 300,000 calls, +210 MB)."""
    starts = sessions.select("session_id", pl.col("start_time").alias("_session_start"))
    order = (
        calls.select("session_id", "event_seq")
        .with_row_index("_row")
        .join(starts, on="session_id", how="left", maintain_order="left")
        .sort("_session_start", "session_id", "event_seq", nulls_last=True, maintain_order=True)
        .get_column("_row")
    )
    if order.len() == calls.height and order.is_sorted():
        return calls
    return in_row_order(calls, order)


def _as_copilot_sessions(
    sessions: pl.DataFrame,
) -> tuple[pl.DataFrame, tuple[AgentTable, pl.DataFrame]]:
    """The pipeline's sessions as SESSIONS rows with the AGENT_SESSIONS columns, and the
    agent's own table (``Pipeline.split_sessions``)."""
    from analytics.agents.pipeline import pipeline

    agent = pipeline()
    table = agent.session_table()
    neutral, own = agent.split_sessions(sessions)
    rows = neutral.with_columns(
        pl.lit(COPILOT).alias("agent"),
        pl.lit(None, pl.String).alias("parent_session_id"),
        pl.lit(None, pl.Int64).alias("calls_without_final_usage"),
        pl.lit(None, ANALYSIS_SESSIONS["logged_cost_usd"]).alias("logged_cost_usd"),
    )
    return conform(rows, ANALYSIS_SESSIONS), (table, own)


def _as_copilot_calls(calls: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """Copilot calls as ``Analysis.call_view`` has them, with the AGENT_CALLS columns: the
    agent and its version; the usage fields only the other agents' logs state are null."""
    versions = sessions.select("session_id", "agent_version")
    return conform(
        with_nulls(
            calls.join(versions, on="session_id", how="left").with_columns(
                pl.lit(COPILOT).alias("agent")
            ),
            {c: t for c, t in AGENT_CALLS.items() if c not in ("agent", "agent_version")},
        ),
        call_view_contract(),
    )


def _decoded(
    read: Callable[[], pl.DataFrame], found: Found, keep_events: bool, group_bytes: int
) -> pl.DataFrame:
    """A stored result's calls (``read``); if the stored table turns out damaged, those of
    the logs analysed again, without the cache (the same inputs give the same calls)."""
    try:
        return read()
    except (OSError, pl.exceptions.PolarsError):  # polars raises OSError for a bad LZ4 block
        return _run(found, None, None, keep_events, group_bytes, None)[0].call_view


def _unchanged(previous: Previous | None, ran: Tables) -> Before | None:
    """``Analysis.previous``: the previous result's key, the sessions of the groups whose
    fingerprint it lists (none, when every group changed), and the calls of the others."""
    if previous is None:
        return None
    known = {fingerprint for fingerprint in previous.fingerprints if fingerprint}
    same = frozenset(
        session
        for fingerprint, sessions in zip(ran.fingerprints, ran.members, strict=True)
        if fingerprint in known
        for session in sessions
    )
    fresh = ran.fresh_calls
    return Before(previous.key, same, (lambda: fresh) if fresh is not None else lambda: ran.calls)


def _run(
    found: Found,
    results: ResultCache | None,
    progress: Progress | None,
    keep_events: bool,
    group_bytes: int,
    previous: Previous | None,
) -> tuple[Analysis, Tables]:
    """Every stage, from the logs to per-call tokens; the discovery problems as issues (files
    that are not logs as errors). With the pipeline's tables, for what they say of their
    groups."""
    tables = run_stages(
        found,
        progress,
        keep_events=keep_events,
        group_bytes=group_bytes,
        cache=results,
        previous=previous,
    )
    noted = [(path, "warning", what) for path, what in found.problems]
    noted += [(path, "error", what) for path, what in found.not_logs]  # unreadable as logs
    problems = conform(
        pl.DataFrame(
            {
                "file": [path for path, _, _ in noted],
                "line": [None] * len(noted),
                "severity": [severity for _, severity, _ in noted],
                "message": [message for _, _, message in noted],
            },
            schema_overrides={"line": pl.Int64},
        ),
        ISSUES,
    )
    issues = pl.concat([problems, tables.issues]) if problems.height else tables.issues
    analysis = Analysis(
        calls_source=tables.calls_source,
        sessions=tables.sessions,
        model_metrics=tables.model_metrics,
        issues=issues.sort("file", "line", "severity", "message", nulls_last=False),
        log_prices=tables.log_prices,
        found=found,
        read_events=ordered_events,
        kept_events=tables.events,
        groups=tables.groups,
    )
    return analysis, tables


def _within(result: Analysis, window: Window) -> Analysis:
    """Keep the sessions that start inside the window (and are of its agents), and their
    calls and events."""
    zone = str(window.zone) if window.zone else "UTC"
    day = pl.col("start_time").dt.convert_time_zone(zone).dt.date()
    keep = pl.lit(True)
    if window.since:
        keep = keep & (day >= window.since)
    if window.until:
        keep = keep & (day <= window.until)
    if window.agents:
        keep = keep & pl.col("agent").is_in(list(window.agents))
    return result.only(result.sessions.filter(keep)["session_id"])


def issue_summary(issues: pl.DataFrame) -> str:
    """One line for stderr: how many issues, how many lost data."""
    errors = issues.filter(pl.col("severity") == "error").height
    from analytics.core.words import counted

    warnings = issues.height - errors
    return (
        f"{counted(issues.height, 'issue')} ({counted(errors, 'error')}, "
        f"{counted(warnings, 'warning')})"
    )
