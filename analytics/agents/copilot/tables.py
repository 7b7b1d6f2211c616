"""Copilot's own tables: what only its logs give, beside the core's SESSIONS and CALLS.

The shutdown's reconciliation (its request count checked against the calls counted), the
log's own totals and bill (nano-AIU, premium requests), and the fit of the per-call
reconstruction (``native/agents/copilot/fit.rs``) exist for Copilot's sessions alone, so
they live in ``COPILOT_SESSIONS`` (one row per Copilot session), joined to SESSIONS by
session id where a view needs them (``core.schema.joined``). Copilot's pipeline works on its
sessions with both sets of columns (``PASS_SESSIONS``) and the engine splits them
(``split``).

Each call's bill in AI credits (nano-AIU, from the log's usage records) is Copilot's alone
too: ``COPILOT_CALLS``, one row per Copilot call. Its calls keep it beside the core's
columns (``PASS_CALLS``), as they are made, stored and priced (a join of some 500,000 rows
on a large tree would copy every column); ``Analysis.calls`` gives CALLS without it and
``Analysis.call_view`` with it, where the views and pricing read it.
"""

from __future__ import annotations

import polars as pl

from analytics.core.schema import CALL_TOKENS, CALLS, SESSIONS, AgentTable, combine, conform

#: Copilot's columns, each after the view's column it follows (``AgentTable.after``).
_COLUMNS: list[tuple[str, pl.DataType, str]] = [
    ("copilot_version", pl.String(), "repository"),
    # whether the shutdowns' counters are cumulative or per process (null without one)
    ("shutdown_mode", pl.String(), "shutdowns"),
    # the shutdown's request count (null when the log has no shutdown with modelMetrics)
    ("shutdown_requests", pl.Int64(), "interrupted_calls"),
    ("calls_checked", pl.Int64(), "shutdown_requests"),  # main + sub-agent calls it covers
    ("calls_delta", pl.Int64(), "calls_checked"),  # calls_checked - shutdown_requests
    ("calls_agree", pl.Boolean(), "calls_delta"),
    ("calls_delta_reason", pl.String(), "calls_agree"),  # why calls_delta is not 0
    ("autopilot_nudges", pl.Int64(), "user_messages"),  # user messages autopilot sent
    ("api_time_ms", pl.Int64(), "wall_time_ms"),  # from the shutdown totals; null without
    # what the log's own totals state (a check on the calls, never the session's total: a
    # shutdown leaves compaction calls out, and an old CLI's counts one process), and where
    # they come from: shutdown | shutdown+messages | usage_records | messages
    ("logged_input_tokens", pl.Int64(), "reasoning_tokens"),
    ("logged_output_tokens", pl.Int64(), "logged_input_tokens"),
    ("logged_cache_read_tokens", pl.Int64(), "logged_output_tokens"),
    ("logged_cache_write_tokens", pl.Int64(), "logged_cache_read_tokens"),
    ("logged_reasoning_tokens", pl.Int64(), "logged_cache_write_tokens"),
    ("token_totals_source", pl.String(), "logged_reasoning_tokens"),
    # the log's own bill (totalNanoAiu); USD = nano-AIU / 1e11
    ("billed_nano_aiu", pl.String(), "token_totals_source"),
    ("premium_requests", pl.String(), "billed_nano_aiu"),
    # how the per-call reconstruction fitted the log: constraints used, their root-mean-square
    # relative misfit, and which unknowns the log determined or a prior decided
    # (``fixed:<agent>|<model>``, ``tool``, ``prose``, ``json``, ``item``)
    ("fit_constraints", pl.Int64(), "premium_requests"),
    ("fit_residual_pct", pl.Float64(), "fit_constraints"),
    ("fit_determined", pl.List(pl.String()), "fit_residual_pct"),
    ("fit_from_prior", pl.List(pl.String()), "fit_determined"),
    # the fitted values: fixed parts in tokens, tool/prose/json in tokens per byte, item and
    # task in tokens
    (
        "fit_parameters",
        pl.List(pl.Struct({"name": pl.String(), "value": pl.Float64()})),
        "fit_from_prior",
    ),
]

#: One row per Copilot session: its id and what only Copilot's logs give.
COPILOT_SESSIONS = AgentTable(
    name="copilot_sessions",
    description="One row per Copilot session: its shutdown check, the log's own totals and "
    "bill, and the fit of the per-call reconstruction.",
    columns={"session_id": pl.String(), **{name: dtype for name, dtype, _ in _COLUMNS}},
    after={name: anchor for name, _, anchor in _COLUMNS},
)

#: One row per Copilot call: its key and the log's bill of it, in nano-AIU as exact
#: integer text (USD = nano-AIU / 1e11; null where the log bills it nowhere).
COPILOT_CALLS = AgentTable(
    name="copilot_calls",
    description="One row per Copilot call: the log's own bill of it in AI credits.",
    columns={"session_id": pl.String(), "event_seq": pl.Int64(), "billed_nano_aiu": pl.String()},
    after={"billed_nano_aiu": "estimate_reason"},
    key=("session_id", "event_seq"),
)

#: Copilot's calls as its pipeline makes, stores and prices them: CALLS with their tokens
#: and the bill of each (``COPILOT_CALLS``), in the order of the view.
PASS_CALLS: dict[str, pl.DataType] = COPILOT_CALLS.contract(combine(CALLS, CALL_TOKENS))

#: Copilot's sessions as its pipeline makes, stores and reads them: SESSIONS with its own
#: columns, in the order of the view (``AgentTable.view_order``).
PASS_SESSIONS: dict[str, pl.DataType] = {
    name: combine(SESSIONS, COPILOT_SESSIONS.columns)[name]
    for name in COPILOT_SESSIONS.view_order(list(SESSIONS))
}


#: SESSIONS and the agent's version, which every agent's sessions carry.
_NEUTRAL: dict[str, pl.DataType] = {**SESSIONS, "agent_version": pl.String()}


def split(sessions: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``PASS_SESSIONS`` rows as (SESSIONS rows with ``agent_version``, ``COPILOT_SESSIONS``
    rows). ``copilot_version`` stays in Copilot's table too, as its readers know it."""
    version = sessions.with_columns(pl.col("copilot_version").alias("agent_version"))
    return conform(version, _NEUTRAL), conform(sessions, COPILOT_SESSIONS.columns)
