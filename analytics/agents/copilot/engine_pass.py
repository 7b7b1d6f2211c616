"""The native engine's Copilot pass, from the scanner's batches to CALLS and sessions
(``PASS_SESSIONS``: SESSIONS with Copilot's own columns).

``pass_group`` hands a group's scanned batches (``agents.copilot.events.scan_logs``: Arrow columns,
never a polars table of events) and the shutdowns' per-model totals to the engine
(``native/agents/copilot/pass.rs``), which orders each session's lines, drops repeated
ones, places the totals on the shutdowns kept, folds each session on its own (in parallel,
``fold.rs``) and finds the lines that quote prices. The polars stages it replaces are
kept as the oracle in ``tests/oracle/reference/`` and a differential test holds the two equal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

from analytics import _scanner
from analytics.agents.copilot.call_tokens import with_call_totals, with_tokens
from analytics.agents.copilot.event_types import KNOWN_EVENT_TYPES
from analytics.agents.copilot.events import ScannedLogs, unknown_type_issues
from analytics.agents.copilot.events import batch_frame as frame
from analytics.agents.copilot.items import item_of_event
from analytics.agents.copilot.tables import PASS_SESSIONS
from analytics.core.schema import (
    CALLS,
    EVENTS,
    ISSUES,
    MODEL_METRICS,
    OBSERVED_USAGE,
    conform,
    padded,
    with_nulls,
)

#: Session columns a later stage fills (the per-call token sums and the fit).
_LATER = {
    name: dtype
    for name, dtype in PASS_SESSIONS.items()
    if name.startswith("fit_")
    or name
    in (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
    )
}
#: The columns of the lines that quote prices (``agents.copilot.log_prices.log_prices``
#: decodes them).
PRICED_LINES = {
    "source_file": pl.String(),
    "source_line": pl.Int64(),
    "session_id": pl.String(),
    "timestamp": EVENTS["timestamp"],
    "model": pl.String(),
    "token_details": pl.String(),
}


@dataclasses.dataclass(frozen=True)
class Passed:
    """A group's pass: CALLS and SESSIONS (with their tokens, sums and fit when the pass ran
    the token stage, else before them); the placed MODEL_METRICS; the issues of reading (the
    scan's, repeated lines, unknown event types) and of the fold (orphan ends; the sessions'
    own); the lines that quote prices (``PRICED_LINES``); the events, with the columns asked
    for (None when none were; ``item``, the neutral kind, from ``event_type``); and the token
    stage's issues (None when it did not run)."""

    calls: pl.DataFrame
    sessions: pl.DataFrame
    model_metrics: pl.DataFrame
    read_issues: pl.DataFrame
    fold_issues: pl.DataFrame
    priced_lines: pl.DataFrame
    events: pl.DataFrame | None
    token_issues: pl.DataFrame | None = None


def pass_group(
    scanned: ScannedLogs,
    columns: Sequence[str] | None = None,
    usage: pl.DataFrame | None = None,
) -> Passed:
    """The one native pass over ``scanned``; ``columns``: the EVENTS columns to return of
    the lines kept, in each session's order (None: no events); ``usage``: the OBSERVED_USAGE
    rows beside the logs, to run the token stage (``call_tokens``) on each session's fold
    in the same pass (None: the caller runs it)."""
    metrics = conform(scanned.model_metrics, MODEL_METRICS).rechunk()
    rows = None if usage is None else conform(usage, OBSERVED_USAGE).rechunk()
    folded, repeats, unknown, placed, priced, events, tokens = _scanner.pass_copilot(
        scanned.tables,
        metrics.__arrow_c_stream__(),
        scanned.failed,
        sorted(KNOWN_EVENT_TYPES),
        list(columns) if columns is not None else None,
        rows.__arrow_c_stream__() if rows is not None else None,
    )
    calls, sessions, orphans, session_issues = (frame(table) for table in folded)
    placement = frame(placed)
    model_metrics = (
        metrics.with_columns(
            placement["session_id"].alias("session_id"),
            placement["process_index"].alias("process_index"),
        )
        .filter(pl.col("session_id").is_not_null())
        .select(MODEL_METRICS.keys())
    )
    read_issues = pl.concat(
        [
            conform(scanned.issues, ISSUES),
            conform(frame(repeats), ISSUES),
            unknown_type_issues(frame(unknown)),
        ]
    )
    chosen = None
    if events is not None and columns is not None:
        chosen = padded(frame(events), {name: EVENTS[name] for name in columns})
        if "item" in columns and "event_type" in columns:
            chosen = chosen.with_columns(item_of_event())
    token_issues = None
    if tokens is None:
        calls = conform(calls, CALLS)
        sessions = conform(with_nulls(sessions, _LATER), PASS_SESSIONS)
    else:
        # The token stage's tables come aligned with the fold's: each conformed once.
        figures, totals, stage_issues = tokens
        calls = with_tokens(calls, figures)
        sessions = with_call_totals(sessions, frame(totals), PASS_SESSIONS)
        token_issues = conform(frame(stage_issues), ISSUES)
    return Passed(
        calls=calls,
        sessions=sessions,
        model_metrics=conform(model_metrics, MODEL_METRICS),
        read_issues=read_issues,
        fold_issues=pl.concat([conform(orphans, ISSUES), conform(session_issues, ISSUES)]),
        priced_lines=conform(frame(priced), PRICED_LINES),
        events=chosen,
        token_issues=token_issues,
    )
