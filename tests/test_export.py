"""Parquet export: Hive day partitions that read back to the same tables, and a schema file."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from analytics.analysis import analyze
from analytics.cli import app
from analytics.costs import price_analysis
from analytics.errors import UsageError
from analytics.export import TIME_COLUMNS, export_tables, write_export
from analytics.rates import load_rate_table
from tests.conftest import SAMPLE_LOGS

_SORT = {
    "events": ["session_id", "event_seq"],
    "calls": ["session_id", "call_index"],
    "sessions": ["session_id"],
    "priced_calls": ["session_id", "call_index"],
    "issues": ["file", "line", "message"],
}


def _tables() -> dict[str, pl.DataFrame]:
    result = analyze([SAMPLE_LOGS])
    priced_calls, priced_sessions = price_analysis(
        result.calls, result.sessions, load_rate_table("github-copilot")
    )
    return export_tables(result.events, result.calls, priced_sessions, priced_calls, result.issues)


def test_export_reads_back_the_same_tables(tmp_path: Path) -> None:
    tables = _tables()
    write_export(tmp_path, tables, "github-copilot")
    for name, frame in tables.items():
        back = pl.read_parquet(tmp_path / name, hive_partitioning=True)
        # a table whose rows all lack a time (issues) has only the null partition
        assert back.schema["day"] == (pl.String if name == "issues" else pl.Date)
        assert_frame_equal(
            back.drop("day").sort(_SORT[name], nulls_last=True),
            frame.sort(_SORT[name], nulls_last=True),
        )
    # nested and decimal columns survive
    sessions = pl.scan_parquet(tmp_path / "sessions", hive_partitioning=True).collect()
    assert sessions.schema["tool_calls"] == tables["sessions"].schema["tool_calls"]
    assert sessions.schema["cost_usd"] == pl.Decimal(38, 18)
    days = sorted(p.name for p in (tmp_path / "calls").iterdir())
    assert days[0].startswith("day=2026-08-0")
    assert all((tmp_path / "calls" / day / "part-0.parquet").is_file() for day in days)
    schema = json.loads((tmp_path / "schema.json").read_text())
    assert set(schema["tables"]) == set(TIME_COLUMNS)
    assert {"name": "cost_usd", "dtype": "Decimal(precision=38, scale=18)"} in schema["tables"][
        "priced_calls"
    ]["columns"]


def test_rows_without_a_time_and_empty_tables_are_kept(tmp_path: Path) -> None:
    tables = _tables()
    tables["issues"] = tables["issues"].head(0)
    write_export(tmp_path, tables, "github-copilot")
    issues = pl.read_parquet(tmp_path / "issues", hive_partitioning=True)
    assert issues.height == 0
    assert issues.drop("day").schema == tables["issues"].schema


def test_a_second_export_replaces_the_first(tmp_path: Path) -> None:
    tables = _tables()
    write_export(tmp_path, tables, "github-copilot")
    write_export(tmp_path, tables, "github-copilot")
    back = pl.read_parquet(tmp_path / "calls", hive_partitioning=True)
    assert back.height == tables["calls"].height


@pytest.mark.parametrize("where", ["session", "session-state", "foreign"])
def test_refuses_session_directories_and_foreign_files(tmp_path: Path, where: str) -> None:
    session = tmp_path / "session-state" / "abc"
    session.mkdir(parents=True)
    (session / "events.jsonl").write_text("")
    (tmp_path / "notes.txt").write_text("mine")
    target = {
        "session": session / "out",
        "session-state": tmp_path / "session-state",
        "foreign": tmp_path,
    }[where]
    with pytest.raises(UsageError):
        write_export(target, {"issues": pl.DataFrame({"file": ["x"]})}, "github-copilot")


def test_cli_export(tmp_path: Path) -> None:
    out = tmp_path / "export"
    result = CliRunner().invoke(app, ["export", str(out), str(SAMPLE_LOGS)])
    assert result.exit_code == 0, result.output
    assert (out / "schema.json").is_file()
    refused = CliRunner().invoke(app, ["export", str(SAMPLE_LOGS / "session-state")])
    assert refused.exit_code == 2


def test_events_written_in_parts_read_back_whole(tmp_path: Path) -> None:
    """Events exported a group of sessions at a time (one file per part and day) read back as
    the same table."""
    tables = _tables()
    events = tables["events"]
    assert isinstance(events, pl.DataFrame)
    ids = events["session_id"].unique().sort()
    halves = [ids.head(len(ids) // 2), ids.tail(len(ids) - len(ids) // 2)]
    tables["events"] = (events.filter(pl.col("session_id").is_in(h.implode())) for h in halves)
    write_export(tmp_path, tables, "github-copilot")
    back = pl.read_parquet(tmp_path / "events", hive_partitioning=True).drop("day")
    assert_frame_equal(back.sort(_SORT["events"]), events.sort(_SORT["events"]))
    assert {p.name for p in (tmp_path / "events").glob("*/*.parquet")} == {
        "part-0.parquet",
        "part-1.parquet",
    }
    schema = json.loads((tmp_path / "schema.json").read_text())
    assert schema["tables"]["events"]["rows"] == events.height


def test_cli_export_writes_events_by_groups(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", str(tmp_path / "out"), str(SAMPLE_LOGS)])
    assert result.exit_code == 0, result.output
    back = pl.read_parquet(tmp_path / "out" / "events", hive_partitioning=True).drop("day")
    expected = analyze([SAMPLE_LOGS]).events
    assert_frame_equal(back.sort(_SORT["events"]), expected.sort(_SORT["events"]))
