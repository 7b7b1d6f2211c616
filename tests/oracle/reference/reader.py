"""The reference reader: log files to one polars EVENTS table, as the analysis built it before
the engine's pass (``native/agents/copilot/pass.rs``) took the scanned batches directly.
The reference stages (``tests/oracle/reference/events.py`` and after) and the reader's own tests
start from it; the analysis never builds this table on its path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analytics import _scanner
from analytics.agents.copilot.event_types import KNOWN_EVENT_TYPES
from analytics.agents.copilot.events import (
    Progress,
    ScanState,
    batch_frame,
    scan_logs,
    unknown_type_issues,
)
from analytics.agents.copilot.items import item_of_event
from analytics.agents.discover import LogFile
from analytics.core.schema import EVENTS, conform


@dataclass(frozen=True)
class ParsedLog:
    """What log files yield: their events, their shutdown per-model totals, their problems;
    with ``read_logs(..., resume=...)``, where each log's scan stopped (aligned with the logs;
    empty otherwise)."""

    events: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame
    ends: list[ScanState] = field(default_factory=list)


def read_events(path: Path, session_hint: str) -> ParsedLog:
    """Parse one Copilot events file.

    ``session_hint`` names the session when the file has no ``session.start`` (a crash before
    the first line was flushed, or an excerpt): the session directory name or the file stem.
    An unreadable file yields one error issue and no events.
    """
    return read_logs([LogFile(str(path), session_hint)])


def read_logs(
    logs: Sequence[LogFile],
    progress: Progress | None = None,
    *,
    resume: Sequence[ScanState | None] | None = None,
) -> ParsedLog:
    """Parse many events files into one set of tables, in file and line order.

    Each file is read up to the size discovery saw (bytes written since are read next time).
    A file holds one session or several one after another: each line belongs to the latest
    ``session.start`` before it (earlier lines to the first one), a file without any to its
    hint. ``process_index`` counts the file's ``session.resume`` lines up to each line.

    ``resume``: as ``scan_logs``. The analysis itself never builds this table of events
    (``agents.copilot.engine_pass.pass_group`` reads the scanned batches); the reference
    stages and the tests do.
    """
    scanned = scan_logs(logs, progress, resume=resume)
    if scanned.tables:
        events = pl.concat([batch_frame(table) for table in scanned.tables], rechunk=False)
    else:
        events = pl.DataFrame(schema=dict.fromkeys(_scanner.event_columns(), pl.String))
    events = conform(
        events.with_columns(pl.col("source_line").alias("event_seq"), item_of_event()), EVENTS
    )
    if scanned.failed:
        lost = pl.Series(scanned.failed, dtype=pl.String).implode()
        events = events.filter(~pl.col("source_file").is_in(lost))
    issues = pl.concat([scanned.issues, _unknown_types(events)])
    return ParsedLog(
        events,
        scanned.model_metrics,
        issues.sort("file", "line", nulls_last=False, maintain_order=True),
        scanned.ends,
    )


def _unknown_types(events: pl.DataFrame) -> pl.DataFrame:
    """One warning per file and unknown event type, at its first line, with its count."""
    unknown = (
        events.filter(~pl.col("event_type").is_in(list(KNOWN_EVENT_TYPES)))
        .group_by("source_file", "event_type")
        .agg(pl.col("source_line").min().alias("line"), pl.len().alias("count"))
        .sort("source_file", "line")
        .rename({"source_file": "file"})
    )
    return unknown_type_issues(unknown)
