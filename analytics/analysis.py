"""The whole pipeline in one call: find logs, read them, count calls, summarise sessions.

This is the library entry point the CLI and the notebooks use::

    from analytics.analysis import analyze
    result = analyze([Path("sample_logs")])
    result.sessions  # one row per session (schema.SESSIONS)
    result.calls     # one row per LLM call (schema.CALLS)

Files are read in parallel (polars releases the GIL while decoding), then every later stage
works on whole tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl

from analytics.cache import LogCache
from analytics.calls import build_calls
from analytics.events import order_events
from analytics.schema import ISSUES, OBSERVED_USAGE, conform, empty
from analytics.sessions import summarize_sessions
from analytics.sources.copilot_events import Progress, read_logs
from analytics.sources.copilot_store import read_session_store
from analytics.sources.discover import Found, discover
from analytics.sources.otel import read_otel_export
from analytics.tokens import add_call_tokens


@dataclass(frozen=True)
class Analysis:
    """Every table of one run. ``issues`` lists each problem with its file and line."""

    events: pl.DataFrame
    calls: pl.DataFrame
    sessions: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame
    found: Found


@dataclass(frozen=True)
class Window:
    """Which sessions to keep: those starting on ``since``..``until`` (inclusive) in ``zone``."""

    since: date | None = None
    until: date | None = None
    zone: ZoneInfo | None = None


def analyze(
    paths: Sequence[Path],
    window: Window | None = None,
    *,
    use_cache: bool = False,
    progress: Progress | None = None,
) -> Analysis:
    """Analyse the logs under ``paths`` (the Copilot home when empty).

    ``use_cache`` keeps parsed files in ``analytics.cache.cache_dir()`` so an unchanged file
    is not parsed again and a grown one only for its new bytes; ``progress`` is called with
    (bytes parsed, bytes to parse) while files are read.
    """
    found = discover(paths)
    parsed = read_logs(found.logs, LogCache() if use_cache else None, progress)
    metrics, read_issues = parsed.model_metrics, parsed.issues
    # Only the ordered events are kept: the reader's copy is freed if ordering had to move rows.
    events = order_events(parsed.events)
    del parsed
    calls, call_issues = build_calls(events)
    sessions = summarize_sessions(events, calls, metrics)
    observed, observed_issues = _observed_usage(found, sessions["session_id"].to_list())
    calls, token_issues = add_call_tokens(calls, events, sessions, metrics, observed)
    problems = conform(
        pl.DataFrame(
            {
                "file": [path for path, _ in found.problems],
                "line": [None] * len(found.problems),
                "severity": ["warning"] * len(found.problems),
                "message": [message for _, message in found.problems],
            },
            schema_overrides={"line": pl.Int64},
        ),
        ISSUES,
    )
    issues = _stack([problems, read_issues, call_issues, observed_issues, token_issues], ISSUES)
    result = Analysis(
        events=events,
        calls=calls,
        sessions=sessions,
        model_metrics=metrics,
        issues=issues.sort("file", "line", nulls_last=False),
        found=found,
    )
    return _within(result, window) if window else result


def _observed_usage(found: Found, session_ids: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-call token records kept beside the logs: session-store.db rows, OTel spans."""
    read = [read_session_store(store, session_ids) for store in found.stores]
    read += [read_otel_export(export) for export in found.otel]
    return (
        _stack([rows for rows, _ in read], OBSERVED_USAGE),
        _stack([issues for _, issues in read], ISSUES),
    )


def _stack(frames: Sequence[pl.DataFrame], contract: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Concatenate frames of one contract (an empty frame when there are none)."""
    present = [frame for frame in frames if frame.height]
    return pl.concat(present) if present else empty(contract)


def _within(result: Analysis, window: Window) -> Analysis:
    """Keep the sessions that start inside the window, and their calls and events."""
    zone = str(window.zone) if window.zone else "UTC"
    day = pl.col("start_time").dt.convert_time_zone(zone).dt.date()
    keep = pl.lit(True)
    if window.since:
        keep = keep & (day >= window.since)
    if window.until:
        keep = keep & (day <= window.until)
    sessions = result.sessions.filter(keep)
    ids = sessions["session_id"].implode()
    return Analysis(
        events=result.events.filter(pl.col("session_id").is_in(ids)),
        calls=result.calls.filter(pl.col("session_id").is_in(ids)),
        sessions=sessions,
        model_metrics=result.model_metrics.filter(pl.col("session_id").is_in(ids)),
        issues=result.issues,
        found=result.found,
    )


def issue_summary(issues: pl.DataFrame) -> str:
    """One line for stderr: how many issues, how many lost data."""
    errors = issues.filter(pl.col("severity") == "error").height
    return f"{issues.height} issues ({errors} errors, {issues.height - errors} warnings)"
