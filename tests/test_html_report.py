"""The HTML report: carried-context arithmetic on literal frames, the page, and a real browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from analytics.cli import app
from analytics.html_report import carried_context, compare_rate_tables
from analytics.rates import parse_rate_table
from analytics.schema import CALL_TOKENS, CALLS, COSTS, EVENTS, MONEY, combine, conform
from tests.conftest import SAMPLE_LOGS

CHROMIUM = Path("/usr/bin/chromium")
CHARTS = 5


def frame(rows: list[dict[str, Any]], contract: dict[str, pl.DataType]) -> pl.DataFrame:
    return conform(pl.DataFrame(rows, infer_schema_length=None), contract)


def event(seq: int, kind: str, size: int | None = None, **more: Any) -> dict[str, Any]:
    return {"session_id": "s1", "event_seq": seq, "event_type": kind, "content_bytes": size, **more}


EVENTS_ROWS = [
    event(1, "system.message", 9000),
    event(2, "user.message", 400),  # 100 tokens
    event(4, "assistant.message", 40),  # 10 tokens
    event(5, "tool.execution_start", tool_name="view", tool_call_id="t1"),
    event(6, "tool.execution_complete", 8, tool_call_id="t1"),  # 2 tokens
    event(8, "session.compaction_complete"),
    event(10, "user.message", 80),  # after the last main call: never carried
    event(11, "assistant.message", 40, agent_id="sub", parent_tool_call_id="sub"),
]


def call(
    seq: int, tokens: int, cost: str | None, kind: str = "main", **more: Any
) -> dict[str, Any]:
    return {
        "session_id": "s1",
        "event_seq": seq,
        "call_index": seq,
        "kind": kind,
        "input_tokens": tokens,
        "input_cost_usd": None if cost is None else Decimal(cost),
        "cache_read_cost_usd": Decimal(0),
        "cache_write_cost_usd": Decimal(0),
        **more,
    }


def carried(costs: tuple[str | None, str, str, str]) -> dict[str, tuple[int, Decimal | None]]:
    calls = frame(
        [
            call(3, 1000, costs[0]),  # $1e-6 per input token when priced
            call(7, 2000, costs[1]),  # $2e-6
            call(9, 500, costs[2]),  # after the compaction
            call(12, 100, costs[3], kind="subagent", agent_id="sub"),  # $1e-6
        ],
        combine(CALLS, CALL_TOKENS, COSTS),
    )
    out = carried_context(frame(EVENTS_ROWS, EVENTS), calls)
    return {row["item"]: (row["times_carried"], row["cost_usd"]) for row in out.to_dicts()}


def test_items_are_carried_by_later_calls_of_their_agent_until_a_compaction() -> None:
    assert carried(("0.001", "0.004", "0.0005", "0.0001")) == {
        "s1 · user prompt · event 2": (2, Decimal("0.0003")),
        "s1 · assistant reply · event 4": (1, Decimal("0.00002")),
        "s1 · tool result: view · event 6": (1, Decimal("0.000004")),
        "s1 · assistant reply · event 11": (1, Decimal("0.00001")),
    }


def test_an_unpriced_carrying_call_makes_the_item_cost_unknown() -> None:
    out = carried((None, "0.004", "0.0005", "0.0001"))
    assert out["s1 · user prompt · event 2"] == (2, None)
    assert out["s1 · assistant reply · event 4"] == (1, Decimal("0.00002"))


TEST_TABLE = """
unit = "usd_per_million_tokens"
currency = "USD"
source = "test"
checked = "2026-01-01"
[models."m"]
[[models."m".prices]]
input = "1.00"
output = "2.00"
cache_read = "0.10"
cache_write_5m = "1.25"
"""


def test_compare_rate_tables_reports_unpriced_tables_as_unknown() -> None:
    calls = frame(
        [
            {"model": model, "input_tokens": 1_000_000, "cache_read_tokens": 0}
            | {"cache_write_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}
            for model in ("m", "m", "other")
        ],
        combine(CALLS, CALL_TOKENS),
    )
    known = parse_rate_table(TEST_TABLE, name="known")
    nothing = parse_rate_table(TEST_TABLE.replace('"m"', '"x"'), name="nothing")
    totals = compare_rate_tables(calls, [known, nothing])
    assert totals.to_dicts() == [
        {"rates": "known", "cost_usd": Decimal(2), "calls": 3, "priced_calls": 2},
        {"rates": "nothing", "cost_usd": None, "calls": 3, "priced_calls": 0},
    ]
    assert totals.schema["cost_usd"] == MONEY


def report_logs(real_logs_dir: Path | None) -> Path:
    """``sample_logs/`` once it holds logs, else the shared real logs (skip if neither)."""
    if any(SAMPLE_LOGS.rglob("*.jsonl")):
        return SAMPLE_LOGS
    if real_logs_dir is None:
        pytest.skip("neither sample_logs/ nor ../shared/real_logs holds session logs")
    return real_logs_dir


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``agentcost report`` of the report logs, written once for the module."""
    from tests.conftest import REAL_LOGS

    logs = report_logs(REAL_LOGS if REAL_LOGS.is_dir() else None)
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(
        app, ["report", str(logs), "--html", str(out), "--timezone", "UTC"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return out


def test_report_is_self_contained(report_html: Path) -> None:
    page = report_html.read_text("utf-8")
    assert page.count('class="plotly-graph-div"') == CHARTS
    assert len(re.findall(r"/\*\* vim: set|plotly\.js v\d", page)) >= 1
    assert page.count("Plotly.newPlot(") == CHARTS
    assert not re.search(r"<script[^>]+src=", page), "the report must not load scripts"
    for title in ("Context growth", "Cost per call", "carried context", "Cost per day"):
        assert title in page


def test_report_command_rejects_an_unwritable_path(tmp_path: Path) -> None:
    logs = report_logs(None) if any(SAMPLE_LOGS.rglob("*.jsonl")) else tmp_path
    result = CliRunner().invoke(
        app, ["report", str(logs), "--html", str(tmp_path / "missing" / "r.html")]
    )
    assert result.exit_code == 2
    assert "cannot write" in result.output or "no session" in result.output.lower()


def test_every_chart_renders_in_headless_chromium(report_html: Path, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing in CI; run .ci/install-browser")
        pytest.skip(f"{CHROMIUM} is not installed (run .ci/install-browser); CI is not set")
    profile = tmp_path / "chromium-profile"
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        report_html.as_uri(),
    ]
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=120, env=env
    ).stdout
    errors = re.search(r'<pre id="js-errors"[^>]*>(.*?)</pre>', dom, re.DOTALL)
    assert errors is not None, "the page did not load"
    assert errors.group(1).strip() == "", f"JavaScript errors: {errors.group(1)}"
    charts = re.split(r'<div id="chart-\d+"', dom)[1:]
    assert len(charts) == CHARTS
    for index, chart in enumerate(charts, start=1):
        assert 'class="main-svg"' in chart.split("</section>")[0], f"chart {index} not drawn"
    shutil.rmtree(profile, ignore_errors=True)
