"""Period reports: local days, weeks and months; exact totals equal to the session totals."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.core.errors import UsageError
from analytics.core.periods import Period, period_report
from analytics.core.pricing.price import price_analysis
from analytics.core.schema import CALL_TOKENS, CALLS, combine, padded
from analytics.core.timezones import resolve_zone
from tests.conftest import SAMPLE_LOGS
from tests.core.pricing.test_price import TEST_TABLE as TABLE


def _calls(rows: list[dict[str, Any]]) -> pl.DataFrame:
    frame = pl.DataFrame(rows, infer_schema_length=None)
    frame = frame.with_columns(
        pl.int_range(1, pl.len() + 1).over("session_id").alias("event_seq"),
        pl.lit("main").alias("kind"),
        pl.lit(False).alias("user_initiated"),
        pl.lit(0).alias("reasoning_tokens"),
    )
    # with a call's own bill, which an agent may keep beside CALLS (Copilot's call table)
    return padded(frame, combine(CALLS, CALL_TOKENS, {"billed_nano_aiu": pl.String()}))


def _sessions(ids: list[str], nano: list[str | None] | None = None) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "session_id": ids,
            "repository": [None] * len(ids),
            "cwd": [f"/work/{i}" for i in ids],
            "billed_nano_aiu": nano or [None] * len(ids),
        },
        schema_overrides={"repository": pl.String, "billed_nano_aiu": pl.String},
    )


def _call(session: str, at: datetime, model: str = "flat-1", tokens: int = 1000) -> dict[str, Any]:
    return {
        "session_id": session,
        "model": model,
        "start_time": at,
        "end_time": at + timedelta(minutes=20),
        "input_tokens": tokens,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "output_tokens": 10,
    }


def _report(calls: pl.DataFrame, sessions: pl.DataFrame, **options: Any) -> Any:
    priced, priced_sessions = price_analysis(calls, sessions, TABLE)
    return period_report(priced, priced_sessions, **options)


def test_days_are_local_and_a_call_counts_on_its_start_day() -> None:
    calls = _calls(
        [
            _call("a", datetime(2026, 8, 3, 21, 50, tzinfo=UTC)),  # 23:50 Paris, ends 00:10
            _call("a", datetime(2026, 8, 3, 22, 30, tzinfo=UTC)),  # 00:30 Paris, next day
            _call("b", datetime(2026, 8, 3, 23, 0, tzinfo=UTC), model="mystery"),
        ]
    )
    rep = _report(calls, _sessions(["a", "b"]), period="day", zone=ZoneInfo("Europe/Paris"))
    rows = rep.rows.select("timezone", "period", "sessions", "calls", "unpriced_calls")
    assert rows.to_dicts() == [
        {
            "timezone": "Europe/Paris",
            "period": "2026-08-03",
            "sessions": 1,
            "calls": 1,
            "unpriced_calls": 0,
        },
        {
            "timezone": "Europe/Paris",
            "period": "2026-08-04",
            "sessions": 2,
            "calls": 2,
            "unpriced_calls": 1,
        },
    ]
    # 1000 input tokens at $0.015/M + 10 output at $25/M, per priced call; never $0 for "mystery"
    assert rep.rows["cost_usd"].to_list() == [Decimal("0.000265"), Decimal("0.000265")]
    assert rep.totals.select("period", "sessions", "calls", "cost_usd").row(0) == (
        "total",
        2,
        3,
        Decimal("0.000530"),
    )


def test_only_unpriced_calls_cost_null_not_zero() -> None:
    calls = _calls([_call("a", datetime(2026, 8, 3, 12, tzinfo=UTC), model="mystery")])
    rep = _report(calls, _sessions(["a"]), period="day", zone=ZoneInfo("UTC"))
    assert rep.rows["cost_usd"].to_list() == [None]
    assert rep.rows["unpriced_calls"].to_list() == [1]


@pytest.mark.parametrize(
    ("period", "labels", "starts"),
    [
        ("week", ["2026-W01", "2026-W02"], [date(2025, 12, 29), date(2026, 1, 5)]),
        ("month", ["2026-01"], [date(2026, 1, 1)]),
        ("day", ["2026-01-03", "2026-01-05"], [date(2026, 1, 3), date(2026, 1, 5)]),
    ],
)
def test_period_labels(period: Period, labels: list[str], starts: list[date]) -> None:
    calls = _calls(
        [
            _call("a", datetime(2026, 1, 3, 12, tzinfo=UTC)),  # a Saturday: ISO week 2026-W01
            _call("a", datetime(2026, 1, 5, 12, tzinfo=UTC)),  # the next Monday
        ]
    )
    rep = _report(calls, _sessions(["a"]), period=period, zone=ZoneInfo("UTC"))
    assert rep.rows["period"].to_list() == labels
    assert rep.rows["period_start"].to_list() == starts


def test_breakdowns_and_window() -> None:
    calls = _calls(
        [
            _call("a", datetime(2026, 8, 3, 12, tzinfo=UTC)),
            _call("a", datetime(2026, 8, 4, 12, tzinfo=UTC), model="flat-2"),
            _call("b", datetime(2026, 8, 5, 12, tzinfo=UTC)),
        ]
    )
    sessions = _sessions(["a", "b"])
    zone = ZoneInfo("UTC")
    by_model = _report(calls, sessions, period="month", zone=zone, by="model")
    assert by_model.rows.select("model", "calls").rows() == [("flat-1", 2), ("flat-2", 1)]
    by_project = _report(calls, sessions, period="month", zone=zone, by="project")
    assert by_project.rows["project"].to_list() == ["/work/a", "/work/b"]
    window = _report(
        calls, sessions, period="day", zone=zone, since=date(2026, 8, 4), until=date(2026, 8, 4)
    )
    assert window.rows["period"].to_list() == ["2026-08-04"]
    assert window.totals["calls"].item() == 1


def test_session_bill_is_split_over_calls_without_one_exactly() -> None:
    calls = _calls(
        [
            _call("a", datetime(2026, 8, 3, 12, tzinfo=UTC), tokens=90),
            _call("a", datetime(2026, 8, 4, 12, tzinfo=UTC), tokens=290),
            _call("a", datetime(2026, 8, 5, 12, tzinfo=UTC), tokens=0),
        ]
    ).with_columns(
        pl.when(pl.col("input_tokens") == 0)
        .then(pl.lit("300"))
        .otherwise(None)
        .alias("billed_nano_aiu")
    )
    rep = _report(calls, _sessions(["a"], ["1000"]), period="day", zone=ZoneInfo("UTC"))
    # 700 nano-AIU left for two calls weighted 100 and 300 tokens: 175 and 525
    expected = [Decimal(n) / Decimal(10) ** 11 for n in (175, 525, 300)]
    assert rep.rows["billed_usd"].to_list() == expected
    assert rep.rows["billed_split_calls"].to_list() == [1, 1, 0]
    assert rep.totals["billed_usd"].item() == Decimal(1000) / Decimal(10) ** 11


def test_a_zone_polars_cannot_use_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="timezone"):
        resolve_zone("Factory")


def _usable(name: str) -> bool:
    try:
        resolve_zone(name)
    except UsageError:
        return False
    return True


_ZONES = sorted(name for name in available_timezones() if _usable(name))
_MOMENTS = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 12, 31))


@st.composite
def _random_calls(draw: st.DrawFn) -> pl.DataFrame:
    rows = []
    for _ in range(draw(st.integers(1, 25))):
        total = draw(st.integers(0, 2_000_000))
        read = draw(st.integers(0, total))
        write = draw(st.integers(0, total - read))
        rows.append(
            {
                "session_id": draw(st.sampled_from(["a", "b", "c"])),
                "model": draw(st.sampled_from(["flat-1", "flat-2", "mystery"])),
                "start_time": draw(_MOMENTS).replace(tzinfo=UTC),
                "input_tokens": total,
                "cache_read_tokens": read,
                "cache_write_tokens": write,
                "output_tokens": draw(st.integers(0, 100_000)),
            }
        )
    return _calls(rows)


@given(calls=_random_calls(), zone=st.sampled_from(_ZONES))
def test_periods_add_up_to_the_sessions_exactly(calls: pl.DataFrame, zone: str) -> None:
    sessions = _sessions(["a", "b", "c"])
    priced, priced_sessions = price_analysis(calls, sessions, TABLE)
    session_cost = priced_sessions["cost_usd"].drop_nulls().sum()
    for period in ("day", "week", "month"):
        rep = period_report(priced, priced_sessions, period=period, zone=ZoneInfo(zone))
        rows = rep.rows
        assert rows["cost_usd"].drop_nulls().sum() == session_cost
        total = rep.totals["cost_usd"].item()
        assert (
            total == session_cost
            if total is not None
            else rows["cost_usd"].null_count() == rows.height
        )
        assert rows["calls"].sum() == calls.height
        assert rows["unpriced_calls"].sum() == priced_sessions["unpriced_calls"].sum()
        for tokens in ("input_tokens", "output_tokens"):
            assert rows[tokens].sum() == priced_sessions[f"calls_{tokens}"].sum()
        for tokens in ("cache_read_tokens", "cache_write_tokens"):
            assert rows[tokens].sum() == calls[tokens].sum()


def test_cli_daily_states_the_timezone_and_totals() -> None:
    result = CliRunner().invoke(app, ["daily", str(SAMPLE_LOGS), "--timezone", "Asia/Tokyo"])
    assert result.exit_code == 0, result.output
    assert "DAY (Asia/Tokyo)" in result.stdout
    lines = result.stdout.splitlines()
    rules = [n for n, line in enumerate(lines) if line.startswith("─")]
    assert lines[rules[-1] + 1].startswith("total")  # the legend of ~ follows it


def test_cli_parquet_needs_an_output_file(tmp_path: Any) -> None:
    runner = CliRunner()
    refused = runner.invoke(app, ["weekly", str(SAMPLE_LOGS), "-f", "parquet"])
    assert refused.exit_code == 2
    out = tmp_path / "weeks.parquet"
    written = runner.invoke(
        app, ["monthly", str(SAMPLE_LOGS), "-f", "parquet", "--output", str(out), "--by", "model"]
    )
    assert written.exit_code == 0, written.output
    assert pl.read_parquet(out)["calls"].sum() > 0
