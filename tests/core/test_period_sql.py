"""The period reports as DuckDB SQL over the team dataset equal ``periods.period_report`` on
the logs, and ``agentcost daily --dataset`` prints what ``agentcost daily`` prints."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core.period_sql import duckdb_report, period_query
from analytics.core.periods import period_report
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rate_table
from analytics.engine.analyze import analyze
from tests.conftest import SAMPLE_LOGS

PERIODS = ("day", "week", "month")
BREAKDOWNS = (None, "agent", "model", "project", "session")


def _exported(logs: Path, target: Path) -> Path:
    result = CliRunner().invoke(app, ["--no-cache", "export", str(target), str(logs)])
    assert result.exit_code == 0, result.output
    return target


def _assert_reports_equal(logs: Path, target: Path) -> None:
    result = analyze([logs], keep_events=False)
    calls, sessions = price_analysis(
        result.call_view,
        result.session_view,
        load_rate_table("github-copilot"),
        {},
        result.log_prices,
    )
    for period in PERIODS:
        for by in BREAKDOWNS:
            for zone in ("UTC", "Pacific/Kiritimati", "America/Los_Angeles"):
                expected = period_report(calls, sessions, period=period, zone=ZoneInfo(zone), by=by)
                got = duckdb_report(target, period=period, zone=zone, by=by)
                assert_frame_equal(got.rows, expected.rows)
                assert_frame_equal(got.totals, expected.totals)
    window = {"since": date(2026, 8, 4), "until": date(2026, 8, 5)}
    expected = period_report(calls, sessions, period="day", zone=ZoneInfo("UTC"), **window)
    got = duckdb_report(target, period="day", zone="UTC", **window)
    assert_frame_equal(got.rows, expected.rows)
    assert_frame_equal(got.totals, expected.totals)


def test_duckdb_reports_equal_the_period_reports_on_the_logs(tmp_path: Path) -> None:
    _assert_reports_equal(SAMPLE_LOGS, _exported(SAMPLE_LOGS, tmp_path / "d"))


def test_duckdb_reports_equal_on_every_real_log(real_logs: Path, tmp_path: Path) -> None:
    _assert_reports_equal(real_logs, _exported(real_logs, tmp_path / "d"))


@pytest.mark.parametrize("command", ["daily", "weekly", "monthly"])
@pytest.mark.parametrize("options", [[], ["--by", "model"], ["--format", "csv"]])
def test_dataset_option_prints_what_the_logs_print(
    tmp_path: Path, command: str, options: list[str]
) -> None:
    target = _exported(SAMPLE_LOGS, tmp_path / "d")
    from_logs = CliRunner().invoke(app, ["--no-cache", command, str(SAMPLE_LOGS), *options])
    from_dataset = CliRunner().invoke(app, [command, "--dataset", str(target), *options])
    assert from_dataset.exit_code == 0, from_dataset.output
    assert from_dataset.stdout == from_logs.stdout


def test_by_user_reads_the_dataset(tmp_path: Path) -> None:
    target = tmp_path / "d"
    for user in ("ana", "bob"):
        invoked = CliRunner().invoke(
            app, ["--no-cache", "export", str(target), str(SAMPLE_LOGS), "--user", user]
        )
        assert invoked.exit_code == 0, invoked.output
    # the same sessions exported by two people: a session's id is its own key, the last wins
    rows = duckdb_report(target, period="month", zone="UTC", by="user").rows
    assert rows["user"].to_list() == ["bob"] and rows["calls"].item() > 0
    on_logs = CliRunner().invoke(app, ["--no-cache", "daily", str(SAMPLE_LOGS), "--by", "user"])
    assert on_logs.exit_code == 2 and "--dataset" in on_logs.output


def test_queries_name_their_dialects_functions() -> None:
    assert "from_utc_timestamp" in period_query("week", "UTC", "user", "spark")
    assert "timezone('UTC', start_time)" in period_query("week", "UTC", "user", "duckdb")
    with pytest.raises(Exception, match="Nowhere"):
        duckdb_report(Path("."), period="day", zone="Nowhere/Land")


def test_dataset_refuses_the_options_of_logs(tmp_path: Path) -> None:
    target = _exported(SAMPLE_LOGS, tmp_path / "d")
    mixed = CliRunner().invoke(app, ["daily", str(SAMPLE_LOGS), "--dataset", str(target)])
    assert mixed.exit_code == 2 and "name no PATH" in mixed.output
    missing = CliRunner().invoke(app, ["daily", "--dataset", str(tmp_path)])
    assert missing.exit_code == 2 and "no agentcost dataset" in missing.output
