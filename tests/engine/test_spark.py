"""The engine inside Spark (``analytics.engine.spark``, local[2]): the same dataset as each person's
``agentcost export``, row for row and byte for byte; bad input as ``issues`` rows, never a
failed job; Spark SQL period reports equal DuckDB's.

One SparkSession serves the module. In CI (``CI`` set) a missing PySpark fails the tests: they
skip, saying why, only on a machine without the ``spark`` extra and outside CI.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core.dataset import read_table
from analytics.core.period_sql import duckdb_report, spark_report
from tests.conftest import REAL_LOGS, SAMPLE_LOGS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_KEYS = {
    "calls": ["user", "session_id", "event_seq"],
    "sessions": ["user", "session_id"],
    "issues": ["user", "file", "line", "severity", "message"],
}


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """A local[2] SparkSession on this machine's JDK, shared by the module's tests."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI must run the Spark tests: install the spark extra (.ci/run does)")
        pytest.skip("PySpark is not installed (pip install 'agentcost[spark]'); CI runs these")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("agentcost-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """homes/<user>: the sample logs, a simulated Copilot home, the real logs (where present)
    and a home of bad input (a truncated log, a file that is no log, an unreadable file), and
    a home whose path leads nowhere."""
    root = tmp_path_factory.mktemp("team")
    homes = root / "homes"
    shutil.copytree(SAMPLE_LOGS, homes / "ana")
    simulated = CliRunner().invoke(
        app, ["simulate", str(homes / "bob" / ".copilot"), "--sessions", "4", "--seed", "7"]
    )
    assert simulated.exit_code == 0, simulated.output
    if REAL_LOGS.is_dir():
        (homes / "real").symlink_to(REAL_LOGS)
    carol = CliRunner().invoke(
        app, ["simulate", str(homes / "carol" / ".copilot"), "--sessions", "2", "--seed", "11"]
    )
    assert carol.exit_code == 0, carol.output
    first, second = sorted((homes / "carol" / ".copilot").glob("session-state/*/events.jsonl"))
    whole = first.read_bytes()
    first.write_bytes(whole[: len(whole) // 2 + 7])  # cut inside a line
    second.chmod(0)  # unreadable, except to root
    (homes / "carol" / "notes.jsonl").write_text("not a log, just notes\n")
    (homes / "dave").symlink_to(root / "gone")  # a home that is not there
    return homes


@pytest.fixture(scope="module")
def datasets(
    spark: SparkSession, team: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, str]:
    """(each person's export into one directory, the Spark job's dataset, its summary)."""
    from analytics.engine.spark import run

    exported = tmp_path_factory.mktemp("exported")
    for home in sorted(team.iterdir()):
        if home.name == "dave":
            continue  # nothing there to export: its issue is the Spark job's alone
        invoked = CliRunner().invoke(
            app, ["--no-cache", "export", str(exported), str(home), "--user", home.name]
        )
        assert invoked.exit_code == 0, invoked.output
    output = tmp_path_factory.mktemp("spark") / "dataset"
    homes = [str(home) for home in sorted(team.iterdir())]
    summary = run(homes, output, spark=spark, task_bytes=2**20)  # several tasks a person
    return exported, output, summary


def test_spark_writes_the_export_row_for_row_and_byte_for_byte(
    datasets: tuple[Path, Path, str],
) -> None:
    exported, output, summary = datasets
    assert "0 replaced" in summary  # every session in one task: no file written twice
    for table, keys in _KEYS.items():
        mine = read_table(exported, table)
        theirs = read_table(output, table)
        if table == "issues":
            theirs = theirs.filter(pl.col("user") != "dave")
        assert_frame_equal(theirs.sort(keys, nulls_last=True), mine.sort(keys, nulls_last=True))
    assert read_table(output, "sessions")["user"].unique().len() >= 3
    names = sorted(p.relative_to(exported) for p in exported.rglob("*.parquet"))
    theirs = sorted(p.relative_to(output) for p in output.rglob("*.parquet"))
    assert len(theirs) == len(names) + 1  # and dave's issues
    assert set(names) < set(theirs)
    assert all((exported / n).read_bytes() == (output / n).read_bytes() for n in names)


def test_bad_input_gives_issues_rows_and_the_job_succeeds(
    datasets: tuple[Path, Path, str], team: Path
) -> None:
    _, output, _ = datasets
    issues = read_table(output, "issues")
    carol = issues.filter(pl.col("user") == "carol")
    first, second = sorted((team / "carol" / ".copilot").glob("session-state/*/events.jsonl"))
    assert carol.filter(pl.col("file") == str(first)).height
    assert carol.filter(pl.col("file").str.ends_with("notes.jsonl")).height
    if os.geteuid() != 0:  # root reads a chmod 000 file
        assert carol.filter(pl.col("file") == str(second)).height
    dave = issues.filter(pl.col("user") == "dave")
    assert dave["message"].str.contains("a symlink to .*, which does not exist").all()
    assert dave.height == 1
    sessions = read_table(output, "sessions").filter(pl.col("user") == "carol")
    assert str(first) in sessions["source_files"].explode().to_list()  # still read, in part


def test_spark_sql_reports_equal_duckdb(
    spark: SparkSession, datasets: tuple[Path, Path, str]
) -> None:
    _, output, _ = datasets
    for period, by, zone in [
        ("day", None, "UTC"),
        ("week", "user", "Europe/Paris"),
        ("month", "agent", "America/Los_Angeles"),
        ("day", "model", "Asia/Kolkata"),
    ]:
        expected = duckdb_report(output, period=period, zone=zone, by=by)
        got = spark_report(spark, str(output), period=period, zone=zone, by=by)
        assert_frame_equal(got.rows, expected.rows)
        assert_frame_equal(got.totals, expected.totals)


def test_a_retried_task_writes_its_files_once(tmp_path: Path) -> None:
    """Stage 2 of a task run twice (an executor died, Spark ran it again) writes the same
    bytes under the same names: the second run changes no file."""
    from analytics.core.dataset import Who
    from analytics.engine.spark import _ipc, analyse_task, plan_tasks, write_task

    (task,), _ = plan_tasks([str(SAMPLE_LOGS)])
    tables = analyse_task(task)
    quoted = {task.user: _ipc(tables["log_prices"])}
    who = Who(task.user, "host-1")
    first = write_task(tmp_path, task.task, who, tables, "github-copilot", quoted)
    again = write_task(tmp_path, task.task, who, tables, "github-copilot", quoted)
    assert first[1] == again[4] > 0  # what was added the first time is unchanged the second
    assert again[1:4] == [0, 0, 0]
