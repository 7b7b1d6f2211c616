"""One set of totals: a session's tokens are its calls', and the periods' are the sessions'.

``analyze`` (sessions), ``analyze --calls`` and ``daily`` must agree to the token on every
column, whatever the log holds: resumes (several processes, several shutdowns), compactions
(calls the shutdown leaves out), crashes (calls after the last shutdown), sub-agents. The
shutdown's own figures are kept beside as ``logged_*``, the check they are.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.agents.copilot.simulate import SimulationParams, simulate
from analytics.cli.commands import app
from tests.conftest import REAL_LOGS, SAMPLE_LOGS

COLUMNS = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]


def _json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["--no-cache", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def assert_totals_agree(path: Path) -> None:
    """For each session, analyze's tokens equal its --calls rows' sums; summed over the
    sessions, they equal daily's totals."""
    sessions = _json("analyze", str(path))["sessions"]
    calls = _json("analyze", str(path), "--calls")["calls"]
    sums: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COLUMNS, 0))
    for call in calls:
        for column in COLUMNS:
            sums[call["session_id"]][column] += call[column] or 0
    for row in sessions:
        got = {column: row[column] or 0 for column in COLUMNS}
        assert got == sums[row["session_id"]], row["session_id"]
    daily = _json("daily", str(path))
    rows = daily["periods"]
    for column in COLUMNS:
        assert sum(r[column] or 0 for r in rows) == sum(s[column] or 0 for s in sessions), column


def test_sample_logs_agree() -> None:
    assert_totals_agree(SAMPLE_LOGS)


def test_every_real_log_agrees() -> None:
    """Every real log of all three agents, read as one tree."""
    if not REAL_LOGS.is_dir():
        pytest.skip(f"{REAL_LOGS} is absent (the shared real logs)")
    assert_totals_agree(REAL_LOGS)


def test_a_compaction_call_is_in_the_session_s_tokens() -> None:
    """``sample_logs``' 38b50b0c session: 7 calls, one a compaction the shutdown leaves out."""
    sessions = _json("analyze", str(SAMPLE_LOGS))["sessions"]
    row = next(s for s in sessions if s["session_id"].startswith("38b50b0c"))
    assert row["compaction_calls"] == 1
    assert row["input_tokens"] > row["logged_input_tokens"]


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    resume=st.sampled_from([0.0, 0.5]),
    crash=st.sampled_from([0.0, 0.5]),
    compaction=st.sampled_from([20_000, 120_000]),
)
def test_simulated_trees_agree(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    resume: float,
    crash: float,
    compaction: int,
) -> None:
    root = tmp_path_factory.mktemp("tree")
    params = SimulationParams(
        seed=seed,
        sessions=4,
        calls_per_session=(4, 16),
        resume_probability=resume,
        crash_probability=crash,
        subagent_probability=0.3,
        compaction_threshold=compaction,
    )
    simulate(root, params, store=False)
    assert_totals_agree(root)
