"""Issue 36: CALLS and SESSIONS hold what every agent has; what one agent alone has lives in
its own table (``core.schema.AgentTable``), joined by session id where a view needs it.

Checked on a mixed analysis (the sample logs, Copilot's, with real Claude Code, Codex and pi
logs): no
SESSIONS column is null for every other agent's session but those listed below (columns
whose meaning is the same for any agent, which the other agents' folds do not fill yet), and
Copilot's own table joins back to the sessions it came from (and is stored and loaded by
the result cache: ``tests/cache/test_results.py``).
"""

from __future__ import annotations

import polars as pl
import pytest

from analytics.core.schema import ANALYSIS_SESSIONS
from analytics.engine.analyze import analyze
from tests.conftest import REAL_LOGS, SAMPLE_LOGS

#: SESSIONS columns every agent can have, and the other agents' folds leave null so far.
NOT_YET_FILLED = {
    "repository",  # the git repository the session ran in
    "user_messages",
    "tool_calls",
    "tool_calls_total",
    "status",
    "status_detail",
    "parent_session_id",  # a fork's parent: Codex names it, none of these logs is a fork
    "logged_cost_usd",  # the agent's own cost estimate: pi's here, OpenCode's too
}
#: CALLS columns every agent can have, null for calls of agents that do not need them:
#: a reconstructed call's estimate (``estimate_reason``, ``fixed_part_tokens``, the interval),
#: the ids of an agent that has them, the premium-request flag of an agent billed per prompt.
#: ``billed_nano_aiu`` (Copilot's bill per call) stays on CALLS for now: the per-call bill
#: is read where calls are priced, over every call.
CALLS_NOT_YET_FILLED = {
    "parent_tool_call_id",
    "interaction_id",
    "user_initiated",
    "estimate_reason",
    "fixed_part_tokens",
    "input_tokens_low",
    "input_tokens_high",
    "billed_nano_aiu",
    "logged_cost_usd",
}


@pytest.fixture(scope="module")
def mixed() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(sessions, calls, the session view) of the sample logs with real Claude Code, Codex
    and pi logs."""
    folders = [REAL_LOGS / name for name in ("claude-code", "codex", "pi")]
    if not all(folder.is_dir() for folder in folders):
        pytest.skip(f"real logs not present at {REAL_LOGS}")
    result = analyze([SAMPLE_LOGS, *folders])
    return result.sessions, result.calls, result.session_view


def test_sessions_and_calls_hold_no_column_only_one_agent_fills(
    mixed: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    """Of SESSIONS, for every agent; of CALLS, for Copilot's (the other agents' per-call
    usage fields, ``AGENT_CALLS``, are the API's: any agent on that API states them)."""
    sessions, calls, _ = mixed
    assert sessions["agent"].n_unique() > 3
    for agent in sessions["agent"].unique():
        assert _only(sessions, agent) <= NOT_YET_FILLED, agent
    assert _only(calls, "copilot") <= CALLS_NOT_YET_FILLED


def _only(frame: pl.DataFrame, agent: str) -> set[str]:
    """The columns of ``frame`` that ``agent``'s rows fill and every other agent's leave null."""
    others = frame.filter(pl.col("agent") != agent)
    mine = frame.filter(pl.col("agent") == agent)
    return {
        c
        for c in frame.columns
        if others[c].null_count() == others.height and mine[c].null_count() < mine.height
    }


def test_copilots_table_joins_back(
    mixed: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    """The view is the sessions with Copilot's columns, null for the other agents', and the
    sessions' own columns untouched."""
    sessions, _, view = mixed
    assert list(sessions.columns) == list(ANALYSIS_SESSIONS)
    assert view.select(sessions.columns).equals(sessions)
    own = [c for c in view.columns if c not in sessions.columns]
    assert {"shutdown_requests", "billed_nano_aiu", "fit_parameters"} <= set(own)
    copilot = pl.col("agent") == "copilot"  # a test may name an agent
    assert view.filter(copilot)["shutdown_requests"].null_count() < view.filter(copilot).height
    assert view.filter(~copilot).select(own).null_count().row(0) == (
        view.filter(~copilot).height,
    ) * len(own)
    assert view.filter(copilot)["copilot_version"].equals(
        view.filter(copilot)["agent_version"], check_names=False
    )
