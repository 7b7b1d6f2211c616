"""Copilot's side of the engine's staged pipeline (``agents.pipeline.Pipeline``).

A Copilot log states no call's tokens, only each session's totals at its shutdowns: its calls
are worked out from the whole log. So its logs are not folded by a reader but analysed by
the engine (``engine.group_analysis``) in groups of sessions, with these parts its own: the native
scan (``events.scan_logs``, begun ahead by ``scan_ahead``), the engine's one pass over a
group (``engine_pass.pass_group``: order, repeats, shutdown totals placed, the fold, the
tokens) with the per-call records kept beside the logs (``session-store.db``, OTel exports),
the prices the log quotes (``log_prices``), the follower ``watch`` holds (``follow``), the
SDK captures read as the logs the CLI would have written (``captures``), and the tools that
make its logs (``write_capture``, ``simulator``). Importing it loads neither polars nor the
stages: the engine begins the first scans (``start_scans``) before it imports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from analytics.agents.copilot import scan_ahead
from analytics.agents.copilot.captures import captures_as_logs

if TYPE_CHECKING:
    import polars as pl

    from analytics.agents.copilot.events import ScannedLogs
    from analytics.agents.copilot.follow import Follow
    from analytics.agents.discover import Found, LogFile
    from analytics.agents.pipeline import GroupTables, Progress
    from analytics.core.schema import AgentTable

__all__ = [
    "call_table",
    "captures_as_logs",
    "event_of_item",
    "follower",
    "forget_scans",
    "has_records",
    "ordered_events",
    "reconstruction",
    "records",
    "scan",
    "session_ids",
    "session_table",
    "simulator",
    "split_sessions",
    "stages",
    "start_scans",
    "write_capture",
]


def scan(logs: Sequence[LogFile], progress: Progress | None = None) -> ScannedLogs:
    """The logs scanned into the scanner's batches (a scan begun ahead taken over)."""
    from analytics.agents.copilot.events import scan_logs

    return scan_logs(logs, progress)


def session_ids(scanned: ScannedLogs) -> list[str]:
    """The sessions the scanned lines name (the pass may keep fewer: lines of unreadable
    files are left out), for their per-call records."""
    import polars as pl

    ids = [
        pl.Series(column).unique()
        for table in scanned.tables
        for name, column in table.columns()
        if name == "session_id"
    ]
    return pl.concat(ids).unique().drop_nulls().to_list() if ids else []


def stages(scanned: ScannedLogs, records: pl.DataFrame, keep_events: bool) -> GroupTables:
    """Every stage after scanning, in the engine's one pass: order, repeats, the fold and the
    tokens of each session, with the per-call ``records`` of its sessions (no table of
    events is built unless ``keep_events``), and the prices the log quotes."""
    import polars as pl

    from analytics.agents.copilot.engine_pass import pass_group
    from analytics.agents.copilot.log_prices import log_prices
    from analytics.agents.pipeline import GroupTables
    from analytics.core.schema import EVENTS, ISSUES, stacked

    passed = pass_group(scanned, list(EVENTS) if keep_events else None, records)
    del scanned
    ids = passed.sessions["session_id"]
    kept = records.filter(pl.col("session_id").is_in(ids.implode())) if records.height else records
    tokens = [passed.token_issues] if passed.token_issues is not None else []
    issues = stacked([passed.read_issues, passed.fold_issues, *tokens], ISSUES)
    prices = log_prices(passed.priced_lines, kept)
    return GroupTables(
        passed.calls, passed.sessions, passed.model_metrics, issues, prices, passed.events
    )


def ordered_events(logs: Sequence[LogFile]) -> pl.DataFrame:
    """The logs' events in each session's order, for a result that was analysed without them."""
    from analytics.agents.copilot.engine_pass import pass_group
    from analytics.agents.copilot.events import scan_logs
    from analytics.core.schema import EVENTS, empty

    events = pass_group(scan_logs(logs), list(EVENTS)).events
    return events if events is not None else empty(EVENTS)


def has_records(found: Found) -> bool:
    """Whether per-call records are kept beside the logs (a session store, an OTel export)."""
    return bool(found.stores or found.otel)


def records(found: Found, session_ids: tuple[str, ...] | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The per-call records kept beside the logs (``session-store.db`` rows of
    ``session_ids``, all when None; every OTel span), and their problems."""
    from analytics.agents.copilot.otel import read_otel_export
    from analytics.agents.copilot.store import read_session_store
    from analytics.core.schema import ISSUES, OBSERVED_USAGE, stacked

    read = [read_session_store(store, session_ids) for store in found.stores]
    read += [read_otel_export(export) for export in found.otel]
    return (
        stacked([rows for rows, _ in read], OBSERVED_USAGE),
        stacked([issues for _, issues in read], ISSUES),
    )


def start_scans(groups: Sequence[Sequence[LogFile]], workers: int) -> None:
    """Begin scanning ``groups``, ``workers`` at a time, for ``scan`` to take over."""
    scan_ahead.start(groups, workers)


def forget_scans() -> None:
    """Drop the scans begun ahead and not taken."""
    scan_ahead.forget()


def follower(log: LogFile) -> Follow:
    """What ``watch`` holds of a growing Copilot log (``follow.Follow``)."""
    from analytics.agents.copilot.follow import Follow

    return Follow(log)


def write_capture(capture: Path, out: Path) -> Path:
    """An SDK capture written under ``out`` as the Copilot home the CLI would have written
    (``capture-to-log``); the folder of its ``events.jsonl``."""
    from analytics.agents.copilot.sdk_capture import read_capture
    from analytics.agents.copilot.simulate import write_capture_tree

    return write_capture_tree(out, read_capture(capture))


def simulator() -> ModuleType:
    """The simulator of Copilot session trees with exact per-call truth (``simulate``)."""
    from analytics.agents.copilot import simulate

    return simulate


def event_of_item() -> pl.Expr:
    """Copilot's event type of each row's neutral ``item`` (``items.event_of_item``; imported
    here on first use, as polars is)."""
    from analytics.agents.copilot.items import event_of_item as of_item

    return of_item()


def session_table() -> AgentTable:
    """Copilot's own session table (``agents.copilot.tables.COPILOT_SESSIONS``)."""
    from analytics.agents.copilot.tables import COPILOT_SESSIONS

    return COPILOT_SESSIONS


def reconstruction() -> ModuleType:
    """The per-call reconstruction (``agents.copilot.call_tokens``)."""
    from analytics.agents.copilot import call_tokens

    return call_tokens


def call_table() -> AgentTable:
    """Copilot's own call table (``agents.copilot.tables.COPILOT_CALLS``): its calls keep
    its columns as ``stages`` gives them."""
    from analytics.agents.copilot.tables import COPILOT_CALLS

    return COPILOT_CALLS


def split_sessions(sessions: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The sessions ``stages`` gives as (SESSIONS rows, ``session_table()`` rows)."""
    from analytics.agents.copilot.tables import split

    return split(sessions)
