"""The native engine's Copilot stages, from ordered events to CALLS and SESSIONS.

``fold`` hands the ordered EVENTS (repeated lines already dropped, ``events.drop_repeats``)
and the shutdowns' placed MODEL_METRICS to the engine (``analytics/scanner/copilot_fold.rs``)
through the Arrow C stream interface, without a Python object per row; the engine folds each
session on its own (in parallel) and returns CALLS before tokens, SESSIONS before tokens and
fit, and the warnings: orphan ``turn_end`` lines, and the sessions' own (bytes missing before a
shutdown, ``/rewind``). The polars stages it replaces are kept as the oracle in
``tests/reference/`` and a differential test holds the two equal.
"""

from __future__ import annotations

import polars as pl

from analytics import _scanner
from analytics.core.schema import CALLS, ISSUES, MODEL_METRICS, SESSIONS, conform, with_nulls

#: The EVENTS columns the fold reads.
FOLD_COLUMNS = [
    "source_file",
    "source_line",
    "session_id",
    "event_seq",
    "process_index",
    "event_type",
    "timestamp",
    "agent_id",
    "parent_tool_call_id",
    "turn_id",
    "interaction_id",
    "model",
    "api_call_id",
    "tool_call_id",
    "tool_name",
    "output_tokens",
    "is_autopilot",
    "initiator",
    "text",
    "duration_ms",
    "interaction_type",
    "usage_id",
    "cwd",
    "repository",
    "copilot_version",
    "status_detail",
    "total_nano_aiu",
    "total_premium_requests",
    "total_api_duration_ms",
    "info_type",
    "is_byok",
    "nano_aiu",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "events_file_size_bytes",
    "byte_offset",
]
#: SESSIONS columns a later stage fills (the per-call token sums and the fit).
_LATER = {
    name: dtype
    for name, dtype in SESSIONS.items()
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


def fold(
    events: pl.DataFrame, metrics: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(CALLS before tokens, SESSIONS before tokens, orphan-end ISSUES, session ISSUES) of
    ordered ``events`` and their placed ``metrics`` (``events.place_model_metrics``)."""
    narrow = events.select(FOLD_COLUMNS).rechunk()
    placed = conform(metrics, MODEL_METRICS).rechunk()
    calls, sessions, orphans, session_issues = _scanner.fold_copilot(
        narrow.__arrow_c_stream__(), placed.__arrow_c_stream__()
    )
    return (
        conform(_frame(calls), CALLS),
        conform(with_nulls(_frame(sessions), _LATER), SESSIONS),
        conform(_frame(orphans), ISSUES),
        conform(_frame(session_issues), ISSUES),
    )


def _frame(table: _scanner.ArrowTable) -> pl.DataFrame:
    return pl.DataFrame([pl.Series(column).alias(name) for name, column in table.columns()])
