"""Read Copilot CLI ``events.jsonl`` files (or legacy ``<sessionId>.jsonl``) into tables.

One stage: files in; the EVENTS, MODEL_METRICS and ISSUES tables of ``schema.py`` out. The work
is done by the native scanner (``analytics._scanner``, Rust, in ``analytics/scanner/``): it
reads each file once, checks every line (every line becomes an event or an issue with its file
and line), extracts only the fields EVENTS needs with a streaming JSON tokenizer on all cores,
and hands the columns to polars through the Arrow C data interface, without a Python object
per row. What is left here is small: the per-model totals of the few shutdown lines (keyed by
model name, decoded with ``json`` as exact decimals), one warning per file and unknown event
type, and the messages of files that could not be read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

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
    ``session.start`` named it keep the hint; see ``analytics/scanner/scan.rs``, ``Resume``).
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
    failed = [
        (names[f], None, "error", _failure(names[f], errno, text)) for f, errno, text in failures
    ]
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


def _failure(name: str, errno: int | None, text: str) -> str:
    """A file's read error as Python words it (``[Errno 13] Permission denied: '...'``)."""
    return str(OSError(errno, os.strerror(errno), name)) if errno is not None else text


Totals = tuple[int, int, str, int, str]  # (file, line, session, process, modelMetrics JSON)
IssueRow = tuple[str, int | None, str, str]


def _model_metrics(
    totals: Sequence[Totals], names: Sequence[str]
) -> tuple[pl.DataFrame, list[IssueRow]]:
    """Per-model totals of every ``session.shutdown`` with ``modelMetrics``.

    ``modelMetrics`` is keyed by model name, which no fixed table of fields can describe, so
    the few shutdown lines' values are decoded here with ``json`` (one per process, never a
    hot loop), numbers as exact decimals.
    """
    rows: list[dict[str, Any]] = []
    issues: list[IssueRow] = []
    for file, line, session, process, text in totals:
        where = names[file]
        try:
            per_model = json.loads(text, parse_float=Decimal)
        except ValueError:
            per_model = None
        if not isinstance(per_model, dict):
            issues.append(
                (where, line, "warning", "shutdown modelMetrics is not an object; ignored")
            )
            continue
        if not per_model:  # ``{}``: no model was billed in this process (0 requests)
            rows.append(
                {
                    "source_file": where,
                    "source_line": line,
                    "session_id": session,
                    "process_index": process,
                    "model": None,
                    **dict.fromkeys(_ZERO_WHEN_EMPTY, 0),
                }
            )
        for model, values in per_model.items():
            if not isinstance(values, dict):
                issues.append((where, line, "warning", f"modelMetrics[{model!r}] is not an object"))
                continue
            requests = _object(values.get("requests"))
            usage = _object(values.get("usage"))
            rows.append(
                {
                    "source_file": where,
                    "source_line": line,
                    "session_id": session,
                    "process_index": process,
                    "model": model,
                    "requests_count": _whole(requests.get("count")),
                    "requests_cost": _text(requests.get("cost")),
                    "input_tokens": _whole(usage.get("inputTokens")),
                    "output_tokens": _whole(usage.get("outputTokens")),
                    "cache_read_tokens": _whole(usage.get("cacheReadTokens")),
                    "cache_write_tokens": _whole(usage.get("cacheWriteTokens")),
                    "reasoning_tokens": _whole(usage.get("reasoningTokens")),
                    "total_nano_aiu": _text(values.get("totalNanoAiu")),
                }
            )
    if not rows:
        return empty(MODEL_METRICS), issues
    return pl.DataFrame(rows, schema=MODEL_METRICS), issues


#: The counters of an empty ``modelMetrics`` (``{}``): zero, not unknown.
_ZERO_WHEN_EMPTY = (
    "requests_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def _object(value: object) -> dict[str, Any]:
    """A JSON object, or an empty one when the value is anything else."""
    return value if isinstance(value, dict) else {}


def _whole(value: object) -> int | None:
    """A JSON number as an int, or None when absent or not a whole number."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        return None
    return int(value) if value == int(value) else None


def _text(value: object) -> str | None:
    """A JSON number as its exact decimal text (``305426000.0`` -> ``"305426000"``), or None.

    Numbers arrive as ``int`` or ``Decimal`` (never float), so no digit is lost.
    """
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        return None
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return str(int(value))
    return str(value)


def _issues(rows: Sequence[IssueRow]) -> pl.DataFrame:
    """ISSUES table from (file, line, severity, message) tuples."""
    if not rows:
        return empty(ISSUES)
    files, lines, severities, messages = zip(*rows, strict=True)
    return pl.DataFrame(
        {"file": files, "line": lines, "severity": severities, "message": messages},
        schema=ISSUES,
    )
