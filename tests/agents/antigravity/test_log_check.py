"""``agentcost validate``'s check of agy's databases against themselves: every copy of a
call agrees, and the counted tokens equal those its ``gen_metadata`` copy states."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from analytics.agents import antigravity
from analytics.agents.antigravity import schema
from analytics.agents.antigravity.log_check import log_check
from analytics.agents.reader import log_checks
from tests.agents.antigravity.dbs import copy


def test_the_real_copies_agree(tmp_path: Path) -> None:
    path = copy(tmp_path)
    row = log_check([str(path)], antigravity.read_files([path]).calls).row(0, named=True)
    assert (row["calls"], row["agree"], row["disagree"]) == (4, 4, 0)
    assert (row["usage_lines"], row["repeated_lines"]) == (11, 7)
    assert row["tokens"] == row["checked_tokens"] == 55_986


def test_a_copy_that_disagrees_is_counted(tmp_path: Path) -> None:
    """A second copy of the checkpoint's usage with one more input token: the call
    disagrees, the fold keeps the larger copy and says so."""
    path = copy(tmp_path)
    connection = sqlite3.connect(path)
    (metadata,) = connection.execute("SELECT metadata FROM steps WHERE idx = 4").fetchone()
    usage = schema.StepMetadata.FromString(metadata).usage[0]
    usage.input_tokens += 1
    extra = usage.SerializeToString()
    metadata += b"\x4a" + bytes([len(extra)]) + extra
    update = "UPDATE steps SET metadata = ?, step_payload = NULL WHERE idx = 4"
    connection.execute(update, (metadata,))
    connection.commit()
    connection.close()
    tables = antigravity.read_files([path])
    row = log_check([str(path)], tables.calls).row(0, named=True)
    assert (row["agree"], row["disagree"]) == (3, 1)
    assert tables.calls["input_tokens"].sum() == 55_136
    assert tables.issues.filter(pl.col("message").str.contains("disagree")).height == 1


def test_validate_finds_the_check() -> None:
    assert "antigravity" in [agent.id for agent, _ in log_checks()]
