"""Read Copilot CLI ``events.jsonl`` files (or legacy ``<sessionId>.jsonl``) into tables.

One stage: files in; the EVENTS, MODEL_METRICS and ISSUES tables of ``schema.py`` out. The work
is done by the native scanner (``analytics._scanner``, Rust, in ``native/``): it
reads each file once, checks every line (every line becomes an event or an issue with its file
and line), extracts only the fields EVENTS needs with a streaming JSON tokenizer on all cores,
and hands the columns to polars through the Arrow C data interface, without a Python object
per row; it also decodes the shutdown lines' per-model totals (keyed by model name, numbers as
exact decimals). What is left here is small: those rows given their files' paths, one warning
per file and unknown event type, and the messages of files that could not be read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import polars as pl

from analytics import _scanner
from analytics.agents.copilot.scan_ahead import BATCH_BYTES, BLOCK_BYTES, scan, scan_inputs
from analytics.agents.discover import LogFile
from analytics.core.schema import ISSUES, MODEL_METRICS, empty

Progress = Callable[[int, int], None]
"""Called with (bytes read so far, bytes to read)."""


ScanState = _scanner.ScanState
"""Where the scan of one log stopped (``ScannedLogs.ends``): pass it back in ``scan_logs``'s
``resume`` to read only the lines written since."""


@dataclass(frozen=True)
class ScannedLogs:
    """What the scanner gives of log files, before any table of events: its batches
    (``tables``), the shutdowns' per-model totals (not yet placed on their sessions), the
    problems (all but the unknown event types, which the pass counts), the files that could
    not be read (their lines are left out), and where each log's scan stopped (``resume``)."""

    tables: list[_scanner.ArrowTable]
    model_metrics: pl.DataFrame
    issues: pl.DataFrame
    failed: list[str]
    ends: list[ScanState] = field(default_factory=list)

    @classmethod
    def joined(cls, parts: Sequence[ScannedLogs]) -> ScannedLogs:
        """Successive reads of the same logs as one read."""
        return cls(
            [table for part in parts for table in part.tables],
            pl.concat([part.model_metrics for part in parts]),
            pl.concat([part.issues for part in parts]),
            sorted({name for part in parts for name in part.failed}),
            parts[-1].ends if parts else [],
        )


def scan_logs(
    logs: Sequence[LogFile],
    progress: Progress | None = None,
    *,
    resume: Sequence[ScanState | None] | None = None,
) -> ScannedLogs:
    """Scan many events files into the scanner's batches.

    ``resume`` (aligned with ``logs``) reads each log from a state a previous read ended at
    (``ScannedLogs.ends``; None: from its start), for a log that grows: the lines, offsets,
    process indexes and sessions of the new lines are those a read of the whole file gives
    them, and a last line without its newline (being written) is left for the next read. By
    design, rows already read are never renamed (lines of a session read before its
    ``session.start`` named it keep the hint; see ``native/read/scan.rs``, ``Resume``).
    """
    names, hints, sizes = scan_inputs(logs)
    ends: list[ScanState] = []
    if resume is None:
        tables, issue_columns, totals, failures = scan(logs)
    else:
        if len(resume) != len(logs):
            raise ValueError("resume must hold one state (or None) per log")
        scanned, ends = _scanner.scan_copilot_from(
            names, hints, sizes, list(resume), BATCH_BYTES, BLOCK_BYTES
        )
        tables, issue_columns, totals, failures = scanned
    files, lines, severities, messages = issue_columns
    metrics, metric_issues = _model_metrics(totals, names)
    issues = _issues(
        [*zip([names[f] for f in files], lines, severities, messages, strict=True), *metric_issues]
    )
    failed = [(names[f], None, "error", _failure(errno, text)) for f, errno, text in failures]
    lost = [name for name, *_ in failed]
    if failed:
        gone = pl.Series(lost, dtype=pl.String).implode()
        metrics = metrics.filter(~pl.col("source_file").is_in(gone))
        issues = issues.filter(~pl.col("file").is_in(gone))
    if progress:
        total = sum(size or 0 for size in sizes)
        progress(total, total)
    return ScannedLogs(list(tables), metrics, pl.concat([issues, _issues(failed)]), lost, ends)


def unknown_type_issues(unknown: pl.DataFrame) -> pl.DataFrame:
    """One warning per file and unknown event type (``file``, ``event_type``, first ``line``,
    ``count`` of lines), at its first line."""
    return _issues(
        [
            (
                file,
                first,
                "warning",
                f"unknown event type {kind!r} ({count} lines) kept, not analysed",
            )
            for file, kind, first, count in unknown.select(
                "file", "event_type", "line", "count"
            ).iter_rows()
        ]
    )


def batch_frame(table: _scanner.ArrowTable) -> pl.DataFrame:
    """A table of the engine as a frame: polars adopts its buffers (no copy), every column
    in one call (the Arrow stream protocol), which costs half of a ``polars.Series`` per
    column on the engine's small result tables."""
    return pl.DataFrame(table)


def _failure(errno: int | None, text: str) -> str:
    """A file's read error in agentcost's words (``cannot read the file: permission
    denied``), as the other agents' files word it (``scanner/calls.rs``): no ``[Errno 13]``,
    no path (the issue's file column names it)."""
    reason = os.strerror(errno).lower() if errno is not None else text
    return f"cannot read the file: {reason}"


IssueRow = tuple[str, int | None, str, str]
#: The scanner's decoded per-model totals: MODEL_METRICS rows with a file index (``file``)
#: for their path, and the warnings of their lines as columns (file index, line, message).
Totals = tuple[_scanner.ArrowTable, tuple[list[int], list[int], list[str]]]


def _model_metrics(totals: Totals, names: Sequence[str]) -> tuple[pl.DataFrame, list[IssueRow]]:
    """Per-model totals of every ``session.shutdown`` with ``modelMetrics``, as the scanner
    decoded them (``native/agents/copilot/model_metrics.rs``: keyed by model name, numbers as exact
    decimals), each row given its file's path; and the warnings of those lines."""
    table, (files, lines, messages) = totals
    issues: list[IssueRow] = [
        (names[file], line, "warning", message)
        for file, line, message in zip(files, lines, messages, strict=True)
    ]
    if not len(table):
        return empty(MODEL_METRICS), issues
    rows = pl.DataFrame(table)
    paths = pl.Series("source_file", names, dtype=pl.String()).gather(rows["file"])
    return rows.with_columns(paths).select(MODEL_METRICS.keys()), issues


def _issues(rows: Sequence[IssueRow]) -> pl.DataFrame:
    """ISSUES table from (file, line, severity, message) tuples."""
    if not rows:
        return empty(ISSUES)
    files, lines, severities, messages = zip(*rows, strict=True)
    return pl.DataFrame(
        {"file": files, "line": lines, "severity": severities, "message": messages},
        schema=ISSUES,
    )
