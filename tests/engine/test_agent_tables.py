"""Issue 36: CALLS and SESSIONS hold what every agent has; what one agent alone has lives in
its own table (``core.schema.AgentTable``), joined by session id where a view needs it.

Checked on a mixed analysis (the sample logs, Copilot's, with real Claude Code, Codex and pi
logs): no
SESSIONS column is null for every other agent's session but those listed below (columns
whose meaning is the same for any agent, which the other agents' folds do not fill yet), and
Copilot's own tables join back to the sessions and calls they came from (and are stored and
loaded by the result cache: ``tests/cache/test_results.py``).
"""

from __future__ import annotations

import polars as pl
import pytest

from analytics.core.schema import ANALYSIS_CALLS, ANALYSIS_SESSIONS
from analytics.engine.analyze import Analysis, analyze
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
CALLS_NOT_YET_FILLED = {
    "parent_tool_call_id",
    "interaction_id",
    "user_initiated",
    "estimate_reason",
    "fixed_part_tokens",
    "input_tokens_low",
    "input_tokens_high",
    "logged_cost_usd",
}


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    """The sample logs with real Claude Code, Codex and pi logs."""
    folders = [REAL_LOGS / name for name in ("claude-code", "codex", "pi")]
    if not all(folder.is_dir() for folder in folders):
        pytest.skip(f"real logs not present at {REAL_LOGS}")
    return analyze([SAMPLE_LOGS, *folders])


@pytest.fixture(scope="module")
def mixed(analysis: Analysis) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(sessions, calls, the session view) of ``analysis``."""
    return analysis.sessions, analysis.calls, analysis.session_view


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


def test_copilots_call_table_joins_back(analysis: Analysis) -> None:
    """The calls are ANALYSIS_CALLS; the call view adds Copilot's bill of each call (null
    for the other agents'), whose table has one row per Copilot call and joins back by
    (session id, event seq) to the same bills."""
    calls, view = analysis.calls, analysis.call_view
    assert list(calls.columns) == list(ANALYSIS_CALLS)
    assert view.select(calls.columns).equals(calls)
    assert [c for c in view.columns if c not in calls.columns] == ["billed_nano_aiu"]
    copilot = pl.col("agent") == "copilot"  # a test may name an agent
    assert view.filter(~copilot)["billed_nano_aiu"].null_count() == view.filter(~copilot).height
    assert view.filter(copilot)["billed_nano_aiu"].null_count() < view.filter(copilot).height
    ((table, rows),) = analysis.call_table_rows
    assert table.name == "copilot_calls"
    assert rows.height == view.filter(copilot).height
    assert rows.select(table.key).is_duplicated().sum() == 0  # the key tells the calls apart
    back = calls.join(rows, on=list(table.key), how="left", maintain_order="left")
    assert back["billed_nano_aiu"].equals(view["billed_nano_aiu"])
