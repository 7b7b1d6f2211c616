"""The HTML report: its chart inputs, the page, and the page in a real browser."""

from __future__ import annotations

import html
import json
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

from analytics.cli.commands import app
from analytics.core.attribution import attribute_context, carried_context
from analytics.core.pricing.compare import table_totals
from analytics.core.pricing.price import price_calls
from analytics.core.pricing.rates import load_rate_table, parse_rate_table
from analytics.core.schema import CALL_TOKENS, CALLS, MONEY, combine, padded
from analytics.engine.analyze import analyze
from analytics.render.plots import PALETTE
from tests.conftest import SAMPLE_LOGS
from tests.mixed_tree import CLAUDE_CALLS, CODEX, write_mixed_tree

CHROMIUM = Path("/usr/bin/chromium")
CHARTS = 5


def frame(rows: list[dict[str, Any]], contract: dict[str, pl.DataType]) -> pl.DataFrame:
    return padded(pl.DataFrame(rows, infer_schema_length=None), contract)


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


def report_data(page: str) -> dict[str, Any]:
    """The page's one JSON block, which every chart is drawn from."""
    found = re.findall(r'<script type="application/json" id="report-data">(.*?)</script>', page)
    assert len(found) == 1
    data: dict[str, Any] = json.loads(found[0])
    return data


def session_options(page: str) -> list[str]:
    """The sessions the selector offers, in its order."""
    select = page.split('id="session-select"')[1].split("</select>", maxsplit=1)[0]
    return re.findall(r'<option value="([^"]+)"', select)


def test_report_is_self_contained(report_html: Path) -> None:
    page = report_html.read_text("utf-8")
    assert page.count('class="plotly-graph-div"') == CHARTS
    assert page.count("plotly.js (basic - minified) v") == 1  # plotly.js once, inline
    assert not re.search(r"<script[^>]+src=", page), "the report must not load scripts"
    for title in ("Context growth", "Cost per call", "carried context", "Cost per day"):
        assert title in page
    assert '<select id="session-select">' in page and 'id="sessions"' in page
    data = report_data(page)
    rows = re.findall(r'<tr data-session="([^"]+)"', page)
    specs = data["sessions"]
    assert session_options(page) == rows == list(specs) and len(specs) >= 2
    assert all(set(spec) == {"calls", "growth", "cost"} for spec in specs.values())


def test_the_embedded_plotly_is_the_plotly_packages_version() -> None:
    """The vendored bundle draws the figures plotly.py builds: the same plotly.js version
    (vendor/README.md says how to update it)."""
    import plotly.offline

    from analytics.render.html_report import PLOTLY_JS

    head = PLOTLY_JS.read_text("utf-8")[:200]
    assert f"plotly.js (basic - minified) v{plotly.offline.get_plotlyjs_version()}\n" in head


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``agentcost report`` of a tree of every agent's logs (``tests/mixed_tree.py``)."""
    logs = write_mixed_tree(tmp_path_factory.mktemp("mixed") / "logs")
    out = logs.parent / "report.html"
    result = CliRunner().invoke(
        app,
        ["--no-cache", "report", str(logs), "--html", str(out), "--timezone", "UTC"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return logs, out.read_text("utf-8")


def test_a_report_of_every_agent_is_small_and_holds_each_thing_once(
    mixed_report: tuple[Path, str],
) -> None:
    """Before: 5.4 MB here (7 MB on the real logs), plotly.js and the hover text of every
    call repeated in each chart. Now plotly.js's basic bundle once (1.2 MB), and once each:
    the plotly template, the per-call hover text, each call's hover row, each trace style."""
    logs, page = mixed_report
    calls = analyze([logs]).calls.height
    assert calls > CLAUDE_CALLS
    assert len(page.encode()) < 2_000_000
    data = report_data(page)
    assert page.count('"template":') == 1
    assert page.count("input %{customdata[3]} tokens") == 1  # plots.CALL_HOVER
    rows = sum(len(spec["calls"]) for spec in data["sessions"].values())
    assert rows == calls  # every chosen session's calls, each once
    per_call = len(json.dumps(data["sessions"], separators=(",", ":"))) / calls
    assert per_call < 300, f"{per_call:.0f} bytes a call for the per-session charts"


def cells(page: str, table: str) -> list[list[str]]:
    """The text of each body row's cells of the table with id ``table``."""
    body = page.split(f'id="{table}"')[1].split("</tbody>", maxsplit=1)[0]
    return [
        [html.unescape(cell) for cell in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.split("<tbody>")[1])
    ]


def test_the_report_has_each_agents_sessions_and_totals(mixed_report: tuple[Path, str]) -> None:
    logs, page = mixed_report
    result = analyze([logs])
    calls = price_calls(
        result.calls, load_rate_table("github-copilot"), log_prices=result.log_prices
    )
    agents = {row[0]: row[1:] for row in cells(page, "agents")}
    assert list(agents) == ["claude-code", "codex", "copilot", "all agents"]
    for agent, (sessions, count, cost, unpriced) in agents.items():
        own = calls if agent == "all agents" else calls.filter(pl.col("agent") == agent)
        assert int(count) == own.height
        assert int(unpriced) == own["cost_usd"].null_count()
        assert cost == f"{own['cost_usd'].sum():.4f}"
        owned = (
            result.sessions.filter(pl.col("agent") == agent)
            if agent != "all agents"
            else result.sessions
        )
        assert int(sessions) == owned.height
    of_session = dict(result.sessions.select("session_id", "agent").iter_rows())
    rows = re.findall(r'<tr data-session="([^"]+)"><td[^>]*>[^<]*</td><td[^>]*>([^<]*)</td>', page)
    assert rows and all(of_session[session] == agent for session, agent in rows)
    assert {agent for _, agent in rows} == {"claude-code", "codex", "copilot"}


def test_every_unpriced_call_shows_its_reason(mixed_report: tuple[Path, str]) -> None:
    """The header names each reason a call has no cost, with its models and their calls;
    the calls of the reasons add up to the calls without a cost."""
    _, page = mixed_report
    facts = dict(
        (html.unescape(k), html.unescape(v))
        for k, v in re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", page)
        if k != "why unpriced"
    )
    reasons = [
        html.unescape(r) for r in re.findall(r"<tr><td>why unpriced</td><td>([^<]*)</td>", page)
    ]
    assert any(r.startswith("output_tokens unknown: claude-sonnet-4.6 (1 call)") for r in reasons)
    missing = r"model not in the [a-z, +-]+ rate tables?: claude-test-model-"
    assert any(re.match(missing, r) for r in reasons)
    counted = sum(int(n) for r in reasons for n in re.findall(r"\((\d+) calls?\)", r))
    assert counted == int(facts["calls without a cost"]) > 0


def test_cost_per_day_is_stacked_by_agent_and_by_model_on_demand(
    mixed_report: tuple[Path, str],
) -> None:
    _, page = mixed_report
    views = report_data(page)["views"]["chart-4"]
    assert list(views) == ["agent", "model"]  # the first is drawn on opening
    assert {t["name"] for t in views["agent"]["data"]} == {"claude-code", "codex", "copilot"}
    models = [t["name"] for t in views["model"]["data"]]
    assert len(models) == len(PALETTE) and models[-1].startswith("other ")
    assert '<select id="chart-4-view" data-chart="chart-4">' in page


def test_report_command_rejects_an_unwritable_path(tmp_path: Path) -> None:
    logs = report_logs(None) if any(SAMPLE_LOGS.rglob("*.jsonl")) else tmp_path
    result = CliRunner().invoke(
        app, ["report", str(logs), "--html", str(tmp_path / "missing" / "r.html")]
    )
    assert result.exit_code == 2
    assert "cannot write" in result.output or "no session" in result.output.lower()


def chromium_dom(page: str, tmp_path: Path) -> str:
    """The DOM of ``page`` (a file URL, with any ``#fragment``) after its scripts ran."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing in CI; make test installs it")
        pytest.skip(f"{CHROMIUM} is not installed (make test installs it); CI is not set")
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
        "--window-size=1400,1000",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page,
    ]
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=120, env=env
    ).stdout
    shutil.rmtree(profile, ignore_errors=True)
    errors = re.search(r'<pre id="js-errors"[^>]*>(.*?)</pre>', dom, re.DOTALL)
    assert errors is not None, "the page did not load"
    assert errors.group(1).strip() == "", f"JavaScript errors: {errors.group(1)}"
    return dom


def chart_titles(dom: str) -> list[str]:
    """The drawn title of each chart, in page order."""
    return re.findall(r'class="gtitle"[^>]*>([^<]*)<', dom)


def test_every_chart_renders_in_headless_chromium(report_html: Path, tmp_path: Path) -> None:
    dom = chromium_dom(report_html.as_uri(), tmp_path)
    charts = re.split(r'<div id="chart-\d+"', dom)[1:]
    assert len(charts) == CHARTS
    for index, chart in enumerate(charts, start=1):
        assert 'class="main-svg"' in chart.split("</section>")[0], f"chart {index} not drawn"


def test_the_session_selector_redraws_both_session_charts(
    report_html: Path, tmp_path: Path
) -> None:
    """Opened on the busiest session; picking another (``#session=`` sets the selector and
    fires its change event, as a reader's pick does) redraws the growth and cost charts."""
    sessions = session_options(report_html.read_text("utf-8"))
    first = chart_titles(chromium_dom(report_html.as_uri(), tmp_path))
    assert f"session {sessions[0][:8]}" in first[0] and f"session {sessions[0][:8]}" in first[1]
    seen = {}
    for session in sessions[-2:]:
        dom = chromium_dom(f"{report_html.as_uri()}#session={session}", tmp_path)
        titles = chart_titles(dom)
        assert titles[0] == f"Context growth, session {session[:8]}"
        assert titles[1].startswith(f"Cost per call, session {session[:8]}")
        assert titles[2:] == first[2:]  # the other charts stay as they are
        assert re.search(f'<div id="chart-1"[^>]*data-session="{session}"', dom)
        assert re.search(f'<tr data-session="{session}" class="chosen"', dom)
        charts = re.split(r'<div id="chart-\d+"', dom)[1:]
        seen[session] = [chart.split("</section>")[0] for chart in charts[:2]]
        assert all('class="main-svg"' in chart for chart in seen[session])
    one, other = seen.values()
    assert one != other  # different data drawn, not only a different title


#: The calls cell (the 5th) of each sessions-table row.
CALLS_CELL = (
    r'<tr data-session="[^"]+"[^>]*>(?:<td[^>]*>[^<]*</td>){4}<td class="num" data-value="(\d+)"'
)


@pytest.mark.parametrize(("fragment", "descending"), [("sort=4", False), ("sort=4d", True)])
def test_a_heading_sorts_the_sessions_table(
    report_html: Path, tmp_path: Path, fragment: str, descending: bool
) -> None:
    """Column 4 is calls: ``#sort=4`` clicks its heading once (ascending), ``4d`` twice."""
    dom = chromium_dom(f"{report_html.as_uri()}#{fragment}", tmp_path)
    body = dom.split('id="sessions"')[1].split("</tbody>")[0]
    calls = [int(value) for value in re.findall(CALLS_CELL, body)]
    assert len(calls) >= 2
    assert calls == sorted(calls, reverse=descending)
    assert ('aria-sort="descending"' if descending else 'aria-sort="ascending"') in dom


def test_the_sessions_table_prices_with_the_model_map(tmp_path: Path) -> None:
    """``--model-map`` prices the sessions table's costs as it prices the charts and the
    totals: before, the table priced each session's calls under their own model names, and a
    renamed model's session read unpriced beside a priced total."""
    lines = [
        {**line, "payload": {**line["payload"], "model": "in-house-model"}}
        if line["type"] == "turn_context"
        else line
        for line in CODEX
    ]
    logs = tmp_path / "codex" / "sessions" / "2026" / "05" / "03" / "rollout-x-cx-1.jsonl"
    logs.parent.mkdir(parents=True)
    logs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        app,
        ["--no-cache", "report", str(tmp_path / "codex"), "--html", str(out),
         "--model-map", "in-house-model=gpt-5.5"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    page = out.read_text("utf-8")
    agents = {row[0]: row[1:] for row in cells(page, "agents")}
    cost = agents["codex"][2]
    assert cost != "unknown"
    sessions = cells(page, "sessions")
    assert [row[6] for row in sessions] == [cost]  # the cost cell of the one session


def test_a_report_of_no_session_draws_every_chart_empty(tmp_path: Path) -> None:
    """A window with no call: the session charts drawn empty (their layouts, no data), the
    others too, with no JavaScript error."""
    out = tmp_path / "report.html"
    args = ["--no-cache", "report", str(SAMPLE_LOGS), "--html", str(out), "--since", "2030-01-01"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    dom = chromium_dom(out.as_uri(), tmp_path)
    charts = re.split(r'<div id="chart-\d+"', dom)[1:]
    assert len(charts) == CHARTS
    assert all('class="main-svg"' in chart.split("</section>")[0] for chart in charts)
    assert chart_titles(dom)[:2] == ["Context growth", "Cost per call, by part"]
