"""Copilot's own session table (``agents/copilot/tables.py``): what only its logs give,
apart from SESSIONS, and the pipeline's sessions split into the two."""

from __future__ import annotations

import polars as pl

from analytics.agents.copilot.tables import (
    COPILOT_CALLS,
    COPILOT_SESSIONS,
    PASS_CALLS,
    PASS_SESSIONS,
    split,
)
from analytics.core.schema import CALL_TOKENS, CALLS, SESSIONS, combine, padded
from tests.conftest import REPO
from tests.core.test_dataset import docs_table


def test_the_pipeline_sessions_are_sessions_and_copilots_columns() -> None:
    """Every column is SESSIONS' or Copilot's, none both (but the key), and the view's order
    places Copilot's where they have always been listed."""
    own = set(COPILOT_SESSIONS.columns) - {"session_id"}
    assert own.isdisjoint(SESSIONS)
    assert set(PASS_SESSIONS) == set(SESSIONS) | own
    assert list(PASS_SESSIONS)[:8] == [
        "session_id",
        "source_files",
        "start_time",
        "end_time",
        "cwd",
        "repository",
        "copilot_version",
        "models",
    ]
    assert set(COPILOT_SESSIONS.after) == own


def test_split_gives_sessions_with_the_version_and_copilots_rows() -> None:
    wide = padded(
        pl.DataFrame(
            {
                "session_id": ["a", "b"],
                "copilot_version": ["1.0.9", None],
                "shutdown_mode": ["cumulative", None],
            }
        ),
        PASS_SESSIONS,
    )
    neutral, own = split(wide)
    assert neutral.columns == [*SESSIONS, "agent_version"]
    assert neutral["agent_version"].to_list() == ["1.0.9", None]
    assert own.columns == list(COPILOT_SESSIONS.columns)
    assert own["shutdown_mode"].to_list() == ["cumulative", None]


def test_the_pipeline_calls_are_calls_and_the_bill_of_each() -> None:
    """Copilot's calls are CALLS with tokens and its call table's column, placed where
    ``--calls`` has always listed it (after ``estimate_reason``); the key is the core's."""
    core = combine(CALLS, CALL_TOKENS)
    assert "billed_nano_aiu" not in core
    assert COPILOT_CALLS.key == ("session_id", "event_seq") and COPILOT_CALLS.of_calls
    assert set(COPILOT_CALLS.key) <= set(core)
    names = list(core)
    at = names.index("estimate_reason") + 1
    assert list(PASS_CALLS) == [*names[:at], "billed_nano_aiu", *names[at:]]


def test_the_contracts_page_lists_copilots_dataset_tables() -> None:
    """docs/contracts.md's dataset table has the ``copilot_sessions`` and ``copilot_calls``
    rows as written here."""
    page = (REPO / "docs" / "contracts.md").read_text()
    assert docs_table([COPILOT_SESSIONS, COPILOT_CALLS]) in page
