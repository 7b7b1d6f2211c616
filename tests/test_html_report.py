"""The HTML report: its chart inputs, the page, and the page in a real browser."""

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

from analytics.analysis import analyze
from analytics.attribution import attribute_context
from analytics.cli import app
from analytics.compare import table_totals
from analytics.html_report import carried_context
from analytics.pricing import price_calls
from analytics.rates import load_rate_table, parse_rate_table
from analytics.schema import CALL_TOKENS, CALLS, MONEY, combine, conform
from tests.conftest import SAMPLE_LOGS

CHROMIUM = Path("/usr/bin/chromium")
CHARTS = 5


def frame(rows: list[dict[str, Any]], contract: dict[str, pl.DataType]) -> pl.DataFrame:
    return conform(pl.DataFrame(rows, infer_schema_length=None), contract)


def test_carried_items_are_the_attributed_conversation_items() -> None:
    result = analyze([SAMPLE_LOGS])
    priced = price_calls(result.calls, load_rate_table("github-copilot"))
    chart = carried_context(result.events, priced)
    _, items = attribute_context(priced, result.events)
    conversation = items.filter(pl.col("item_kind") != "fixed")
    assert chart.height == conversation.height > 0
    assert chart["cost_usd"].sum() == conversation["cost_usd"].sum()
    assert (chart["times_carried"] >= 1).all()


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


def test_table_totals_report_unpriced_tables_as_unknown() -> None:
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
    totals = table_totals(calls, [known, nothing])
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
