"""agentcost against ccusage 20.0.24 on the real Claude Code and Codex logs, to the token.

``tests/fixtures/ccusage/<agent>.json`` holds what ccusage's ``session`` and ``daily``
reports said of ``../shared/real_logs/<agent>`` laid out as an agent home (recorded by
``python -m benchmarks.ccusage_agents``, which names its version, date and commands; ccusage
is never run here). Each row is a ccusage session (a session file with its sub-agents' files,
or a rollout) or a UTC day: its tokens by kind, whether agentcost agreed, and where it did
not, the causes (found on the log lines) and the tokens ccusage counts more than the format's
rules. The files listed are folded together, as the home was; agentcost's calls are summed
by the file they came from (a ccusage session's files) and by day. Where ccusage is right,
agentcost must equal it; where it is not, agentcost must differ from it by exactly the
recorded tokens. Only the files the fixture lists are read, each checked against its
recorded sha256.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import polars as pl
import pytest

from analytics.agents import claude_code, codex
from tests.conftest import FIXTURES, REAL_LOGS

CCUSAGE_ANSWERS = FIXTURES / "ccusage"
KINDS = ("input", "output", "cache_read", "cache_write")
READERS = {"claude-code": claude_code.read_files, "codex": codex.read_files}


def fixture(agent: str) -> dict[str, Any]:
    """The recorded ccusage figures of one agent."""
    value: dict[str, Any] = json.loads((CCUSAGE_ANSWERS / f"{agent}.json").read_text())
    return value


def rows(kind: str) -> list[object]:
    """One pytest parameter per recorded session or day of each agent; a row recorded with
    agentcost off the format's count is a strict xfail naming the lines."""
    params: list[object] = []
    for agent in READERS:
        for row in fixture(agent)[kind]:
            name = row.get("session") or row["day"]
            marks = []
            if row["verdict"] == "agentcost differs":
                reason = f"agentcost is not the format's count here: {row['causes']}"
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            params.append(pytest.param(agent, row, marks=marks, id=f"{agent}:{name}"))
    return params


@functools.cache
def folded(agent: str) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """agentcost's tokens over the fixture's files, by ccusage session and by UTC day."""
    if not REAL_LOGS.is_dir():
        pytest.skip(f"real logs not present at {REAL_LOGS} (the shared/ folder is absent)")
    recorded = fixture(agent)
    paths = [REAL_LOGS / file["path"] for file in recorded["files"]]
    for file, path in zip(recorded["files"], paths, strict=True):
        if not path.is_file():
            pytest.skip(f"real {agent} log {path} not present (the shared/ folder is absent)")
        if hashlib.sha256(path.read_bytes()).hexdigest() != file["sha256"]:
            pytest.skip(f"{path} changed since ccusage was recorded; run benchmarks.ccusage_agents")
    calls = READERS[agent](paths).calls
    session_of = {
        str(REAL_LOGS / file): row["session"]
        for row in recorded["sessions"]
        for file in row["files"]
    }
    calls = calls.with_columns(
        pl.col("source_file").replace_strict(session_of, default=None).alias("session"),
        pl.col("start_time").dt.strftime("%Y-%m-%d").alias("day"),
    )
    return by(calls, "session"), by(calls, "day")


def by(calls: pl.DataFrame, key: str) -> dict[str, dict[str, int]]:
    """Tokens by kind (input = uncached input; a null count as 0) summed by ``key``."""
    read = pl.col("cache_read_tokens").fill_null(0)
    written = pl.col("cache_write_tokens").fill_null(0)
    sums = calls.group_by(key).agg(
        (pl.col("input_tokens") - read - written).sum().alias("input"),
        pl.col("output_tokens").sum().alias("output"),
        read.sum().alias("cache_read"),
        written.sum().alias("cache_write"),
    )
    return {
        row[key]: {kind: int(row[kind]) for kind in KINDS} for row in sums.iter_rows(named=True)
    }


def expected(row: dict[str, Any]) -> dict[str, int]:
    """ccusage's tokens less what it counts more than the format's rules (0 where it agrees)."""
    return {kind: row["ccusage"][kind] - row["ccusage_more"][kind] for kind in KINDS}


@pytest.mark.parametrize(("agent", "row"), rows("sessions"))
def test_session_agrees_with_ccusage_or_differs_as_explained(
    agent: str, row: dict[str, Any]
) -> None:
    by_session, _ = folded(agent)
    got = by_session.get(row["session"], dict.fromkeys(KINDS, 0))
    assert got == expected(row)
    assert (got == row["ccusage"]) == row["agrees"]


@pytest.mark.parametrize(("agent", "row"), rows("days"))
def test_day_agrees_with_ccusage_or_differs_as_explained(agent: str, row: dict[str, Any]) -> None:
    _, by_day = folded(agent)
    got = by_day.get(row["day"], dict.fromkeys(KINDS, 0))
    assert got == expected(row)
    assert (got == row["ccusage"]) == row["agrees"]


@pytest.mark.parametrize("agent", list(READERS))
def test_agentcost_reports_no_session_or_day_ccusage_did_not(agent: str) -> None:
    """Every ccusage session and day agentcost counts tokens in is a recorded row (a call
    whose file no recorded session holds would fall under None)."""
    by_session, by_day = folded(agent)
    recorded = fixture(agent)
    nonzero = {name for name, tokens in by_session.items() if any(tokens.values())}
    assert nonzero <= {row["session"] for row in recorded["sessions"]}
    assert set(by_day) <= {row["day"] for row in recorded["days"]}


@pytest.mark.parametrize("agent", list(READERS))
def test_every_recorded_difference_names_its_cause(agent: str) -> None:
    """A row where the tools differ names at least one cause the fixture explains, and
    ccusage counts other tokens there; a row where they agree names none."""
    recorded = fixture(agent)
    for row in recorded["sessions"] + recorded["days"]:
        differs = any(row["ccusage_more"].values())
        assert differs == (not row["agrees"]), row
        assert bool(row["causes"]) == differs, row
        assert set(row["causes"]) <= set(recorded["causes"]), row


def test_fixture_is_ccusage_20_0_24() -> None:
    for agent in READERS:
        assert fixture(agent)["ccusage_version"] == "20.0.24"
