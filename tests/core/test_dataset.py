"""The team dataset (analytics.core.dataset, ``agentcost export``): the contract, one file per
session, idempotent and incremental writes, two exports at once, and who wrote the rows."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core import dataset
from analytics.core.dataset import PARTITIONS, TABLES, Who, read_table, resolve_user
from analytics.core.errors import UsageError
from analytics.core.export import export_analysis
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rate_table
from analytics.core.schema import AgentTable
from analytics.engine.analyze import analyze
from tests.conftest import REPO, SAMPLE_LOGS

AGENTCOST = [str(Path(sys.executable).with_name("agentcost"))]
_SESSION = "2bb4ba81-a6b0-418e-bd4e-a1a02f89ff18"  # a sample session (its events.jsonl)


def _export(directory: Path, logs: Path, user: str = "ana", *extra: str) -> None:
    """``agentcost --no-cache export DIR LOGS --user USER`` (the CLI, in this process)."""
    result = CliRunner().invoke(
        app, ["--no-cache", "export", str(directory), str(logs), "--user", user, *extra]
    )
    assert result.exit_code == 0, result.output


def _digests(directory: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``directory``: its SHA-256 and modification time (ns)."""
    return {
        path.relative_to(directory).as_posix(): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def docs_table(agent_tables: Sequence[AgentTable] = ()) -> str:
    """The dataset's contract as the Markdown table docs/contracts.md shows, the agents' own
    tables (``agent_tables``) in rows after the others (each agent's tests check its own)."""
    lines = ["| table | columns (type), in file order; then the Hive keys |", "| --- | --- |"]
    described = {**dataset.DESCRIPTIONS, **{t.name: t.description for t in agent_tables}}
    for name, columns in dataset.tables(agent_tables).items():
        listed = ", ".join(f"`{c}` ({d})" for c, d in {**columns, **dataset.PARTITIONS}.items())
        lines.append(f"| `{name}`: {described[name]} | {listed} |")
    return "\n".join(lines)


def test_the_docs_state_the_contract() -> None:
    """The contracts page's dataset table (docs/contracts.md) is the one ``dataset.TABLES``
    gives."""
    assert docs_table() in (REPO / "docs" / "contracts.md").read_text()


def test_export_reads_back_as_the_priced_tables_with_who_and_version(tmp_path: Path) -> None:
    result = analyze([SAMPLE_LOGS], keep_events=False)
    calls, sessions = price_analysis(
        result.call_view,
        result.session_view,
        load_rate_table("github-copilot"),
        {},
        result.log_prices,
    )
    who = Who("ana", "laptop-1")
    export_analysis(tmp_path, result, calls, sessions, who, [str(SAMPLE_LOGS)])
    back = read_table(tmp_path, "calls")
    assert back.schema == pl.Schema({**TABLES["calls"], **PARTITIONS})
    assert back.height == calls.height
    assert set(back["user"]) == {"ana"} and set(back["host"]) == {"laptop-1"}
    assert "billed_nano_aiu" not in back.columns  # Copilot's bill of each call is its table's
    assert_frame_equal(
        back.select(calls.drop("billed_nano_aiu").columns).sort("session_id", "event_seq"),
        calls.drop("billed_nano_aiu").sort("session_id", "event_seq"),
        check_dtypes=False,  # the token-source counts are Int64 in the dataset
    )
    assert back["cost_usd"].dtype == pl.Decimal(38, 18)
    for path in tmp_path.rglob("*.parquet"):
        metadata = pl.read_parquet_metadata(path)
        assert metadata[dataset.VERSION_KEY] == dataset.VERSION
        assert metadata[dataset.TABLE_KEY] == path.relative_to(tmp_path).parts[0]
    # one file per session and table, in its agent's and UTC start day's partition
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.glob("sessions/*/*/*"))
    assert len(files) == sessions.height
    assert all(f.startswith("sessions/agent=copilot/day=2026-08-0") for f in files)
    contract = json.loads((tmp_path / "dataset.json").read_text())
    assert contract["dataset_version"] == dataset.VERSION
    # the agent's own tables, of its sessions and of its calls: each one of its own
    tables = (*result.agent_tables, *result.call_table_rows)
    assert set(contract["tables"]) == {"calls", "sessions", "issues", *(t.name for t, _ in tables)}
    assert len(tables) == 2
    for table, rows in tables:
        own = read_table(tmp_path, table.name)
        assert own.height == rows.height
        assert_frame_equal(own.select(rows.columns).sort(table.key), rows.sort(table.key))
        assert set(own["user"]) == {"ana"} and set(own["agent"]) == set(sessions["agent"])
    dataset.check_target(tmp_path)  # a dataset with an agent's table is still a dataset


def test_export_twice_changes_no_file_and_plan_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "dataset"
    _export(target, SAMPLE_LOGS)
    before = _digests(target)
    _export(target, SAMPLE_LOGS)
    assert _digests(target) == before  # same bytes, not even rewritten
    planned = CliRunner().invoke(
        app, ["--no-cache", "export", str(tmp_path / "new"), str(SAMPLE_LOGS), "--plan"]
    )
    assert planned.exit_code == 0 and "add calls/agent=copilot/day=" in planned.stdout
    assert not (tmp_path / "new").exists()


def test_a_grown_session_replaces_only_its_own_files(tmp_path: Path) -> None:
    """A live session's log is a prefix of its later self: exporting the longer log changes
    that session's files alone (and this run's issues file, as the issues moved)."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    live = logs / "session-state" / "c96959e0-053d-4785-9b2a-95d55662a127" / "events.jsonl"
    whole = live.read_bytes()
    lines = whole.splitlines(keepends=True)
    live.write_bytes(b"".join(lines[: len(lines) // 2]))
    target = tmp_path / "dataset"
    _export(target, logs)
    before = _digests(target)
    live.write_bytes(whole)
    _export(target, logs)
    after = _digests(target)
    key = dataset.key_of("c96959e0-053d-4785-9b2a-95d55662a127")
    changed = {path for path in after.keys() | before.keys() if after.get(path) != before.get(path)}
    assert changed, "the grown session's files change"
    assert all(key in path or path.startswith("issues/") for path in changed), changed
    assert read_table(target, "sessions")["session_id"].is_unique().all()


def test_two_exports_at_once_give_a_valid_dataset(tmp_path: Path) -> None:
    """Two processes export into one new directory at the same time (two people, one of
    them twice over): both succeed, and the dataset holds each session once."""
    target = tmp_path / "shared"
    bob = tmp_path / "bob"
    shutil.copytree(SAMPLE_LOGS, bob)
    commands = [
        [*AGENTCOST, "--no-cache", "export", str(target), str(SAMPLE_LOGS), "--user", "ana"],
        [*AGENTCOST, "--no-cache", "export", str(target), str(bob), "--user", "bob"],
        [*AGENTCOST, "--no-cache", "export", str(target), str(SAMPLE_LOGS), "--user", "ana"],
    ]
    running = [subprocess.Popen(c, cwd=REPO, stderr=subprocess.PIPE) for c in commands]
    for process in running:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
    sessions = read_table(target, "sessions")
    assert sessions["session_id"].is_unique().all()  # bob's copy shares ana's session ids
    assert sessions.height == 5
    assert not [p for p in target.rglob(".*") if p.is_file()]  # no temporary file left
    issues = read_table(target, "issues")
    assert set(issues["user"]) == {"ana", "bob"}  # each run's issues in its own file


def test_export_refuses_a_directory_that_holds_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not an agentcost dataset"):
        dataset.check_target(tmp_path)
    with pytest.raises(UsageError, match="Copilot session directory"):
        dataset.check_target(SAMPLE_LOGS / "session-state" / _SESSION)


def test_user_comes_from_the_option_then_the_config_then_the_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCOST_CONFIG_DIR", str(tmp_path))
    monkeypatch.setattr("getpass.getuser", lambda: "login-name")
    assert resolve_user(None) == "login-name"
    (tmp_path / "config.toml").write_text('user = "from-config"\n')
    assert resolve_user(None) == "from-config"
    assert resolve_user("given") == "given"
    (tmp_path / "config.toml").write_text("user = [")  # not TOML: the login name

    def no_login() -> str:
        raise OSError("no login name")

    monkeypatch.setattr("getpass.getuser", no_login)
    assert resolve_user(None) is None  # unknown is null


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s1", "s2", "s/3", "s 4"]),
            st.sampled_from(["copilot", "codex"]),
            st.integers(0, 3),
        ),
        max_size=30,
    )
)
def test_each_session_is_in_one_file_per_table(rows: list[tuple[str, str, int]]) -> None:
    """However rows fall, ``data_files`` puts each session's rows in one file named by its
    key, in its partition, and the files hold every row once."""
    start = datetime(2026, 8, 3, tzinfo=UTC)
    sessions = {session: (agent, day) for session, agent, day in rows}  # one agent/day each
    calls = pl.DataFrame(
        {
            "session_id": [s for s, _, _ in rows],
            "agent": [sessions[s][0] for s, _, _ in rows],
            "day": [(start + timedelta(days=sessions[s][1])).date() for s, _, _ in rows],
            "n": list(range(len(rows))),
        },
        schema={"session_id": pl.String, "agent": pl.String, "day": pl.Date, "n": pl.Int64},
    )
    empty = calls.clear()
    issues = pl.DataFrame(schema={"agent": pl.String, "day": pl.Date})
    files = dataset.data_files({"calls": calls, "sessions": empty, "issues": issues}, "k")
    assert len({f.path for f in files}) == len(files) == len(sessions)
    for file in files:
        session = file.rows["session_id"].unique().to_list()
        assert len(session) == 1
        agent, day = sessions[session[0]]
        day_name = (start + timedelta(days=day)).date().isoformat()
        expected = f"calls/agent={agent}/day={day_name}/s-{dataset.key_of(session[0])}.parquet"
        assert file.path == expected
    assert sorted(n for f in files for n in f.rows["n"]) == list(range(len(rows)))


def test_export_cli_writes_only_the_dataset(tmp_path: Path) -> None:
    _export(tmp_path / "d", SAMPLE_LOGS)
    assert {p.name for p in (tmp_path / "d").iterdir()} == {
        "dataset.json",
        "calls",
        "sessions",
        "issues",
        "copilot_sessions",  # Copilot's own tables (the sample logs are Copilot's)
        "copilot_calls",
    }
    assert os.listdir(tmp_path) == ["d"]
