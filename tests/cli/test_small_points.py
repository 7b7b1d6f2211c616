"""Issue 35, the smaller points, each through the command line on literal data:
``agentcost --version``; ``rates show NAME``; ``rates learn --output`` saying what it wrote;
``blocks --since/--until``; ``top`` costliest session first; one wording of "cannot write"
(and a reader that leaves the pipe is no error); the issues table's paths, with ``~`` and cut
from the left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner, Result

from analytics import _scanner
from analytics.cli.commands import app
from analytics.core.attribution import top_items
from analytics.core.schema import ISSUES, MONEY
from analytics.render.text_table import Layout
from analytics.render.views import issues_table
from tests.cli.test_analyze import write_session
from tests.cli.test_bad_input import claude_line
from tests.conftest import REPO, SAMPLE_LOGS


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


# --- --version ---


def test_version_names_the_distribution_and_the_engine_build() -> None:
    result = run("--version")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"agentcost {version('agentcost')}, engine {_scanner.BUILD}\n"
    assert _scanner.BUILD.startswith(f"{_scanner.__version__} ")


def test_version_answers_without_loading_polars() -> None:
    probe = (
        "import sys; from analytics.cli import app\n"
        "try:\n    app(['--version'])\nexcept SystemExit:\n    pass\n"
        "print('polars' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout.startswith("agentcost ")
    assert done.stdout.splitlines()[-1] == "False"


# --- rates show ---

#: A rate table of two models, one with two price entries and a tier.
TABLE = """
unit = "usd_per_million_tokens"
currency = "USD"
source = "a literal table for a test"
checked = "2026-12-01"
description = "two models"

[models."big-model"]
aliases = ["big"]
[[models."big-model".prices]]
effective_until = "2026-06-01"
input = "3"
output = "15"
cache_read = "0.30"
[[models."big-model".prices]]
effective_from = "2026-06-01"
input = "2.5"
output = "12.5"
cache_read = "0.25"
[[models."big-model".prices.tiers]]
above_prompt_tokens = 200000
input = "5"
output = "20"
cache_read = "0.5"

[models."small-model"]
[[models."small-model".prices]]
input = "0.000125"
output = "0.5"
"""


def test_rates_show_lists_each_price_entry_of_a_table(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(TABLE)
    result = run("rates", "show", path, "-f", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["prices"]
    assert [
        (r["model"], r["effective_from"], r["effective_until"], r["input"], r["output"])
        for r in rows
    ] == [
        ("big-model", None, "2026-06-01", "3", "15"),
        ("big-model", "2026-06-01", None, "2.5", "12.5"),
        ("small-model", None, None, "0.000125", "0.5"),
    ]
    assert rows[0]["cache_read"] == "0.3" and rows[2]["cache_read"] is None  # unset, not 0
    assert rows[1]["also"] == "above 200,000 prompt tokens"
    assert rows[0]["aliases"] == "big"


def test_rates_show_prints_a_table_with_what_the_prices_are_in(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(TABLE)
    result = run("rates", "show", path, "--wide")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "MODEL", "FROM", "UNTIL", "INPUT", "CACHE", "READ", "OUTPUT", "ALSO", "ALIASES"
    ]  # fmt: skip
    assert lines[4].split() == ["small-model", "-", "-", "0.000125", "-", "0.5", "-", "-"]
    assert "3 price entries" in result.stdout
    assert "mine: two models" in result.stdout
    assert "prices per million tokens in USD; source: a literal table for a test" in result.stdout


def test_rates_show_of_a_bundled_table_and_of_an_unknown_name() -> None:
    shown = run("rates", "show", "github-copilot", "-f", "json")
    assert shown.exit_code == 0, shown.output
    assert "claude-sonnet-4.6" in {row["model"] for row in json.loads(shown.stdout)["prices"]}
    unknown = run("rates", "show", "no-such-table")
    assert unknown.exit_code == 2
    assert unknown.stderr.startswith("agentcost: error: no-such-table: cannot read rate table")


# --- rates learn --output ---


def test_rates_learn_output_says_what_it_wrote(tmp_path: Path) -> None:
    target = tmp_path / "learned.toml"
    result = run("--no-cache", "rates", "learn", SAMPLE_LOGS, "--output", target)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert target.read_text().startswith("# `agentcost rates learn`")
    models = target.read_text().count("\n[models.")
    assert result.stderr.splitlines()[0] == (
        f"agentcost: wrote {target}: the prices of {models} models; "
        f"price with them: --rates github-copilot+{target}"
    )


# --- blocks --since/--until ---


def test_blocks_since_until_keeps_the_blocks_starting_on_those_days(tmp_path: Path) -> None:
    """Three calls on Aug 3, Aug 4 23:30 UTC (Aug 5 in Paris) and Aug 5: the days are the
    zone's, and the blocks are those of the whole history."""
    log = tmp_path / "projects" / "-repo" / "c1.jsonl"
    log.parent.mkdir(parents=True)
    stamps = ["2026-08-03T10:00:01.000Z", "2026-08-04T23:30:00.000Z", "2026-08-05T09:00:00.000Z"]
    log.write_text("".join(claude_line(n, s) + "\n" for n, s in enumerate(stamps, 1)))

    def starts(*options: str) -> list[str]:
        result = run("--no-cache", "blocks", tmp_path, "-f", "json", *options)
        assert result.exit_code == 0, result.output
        return [block["block_start"] for block in json.loads(result.stdout)["blocks"]]

    every = ["2026-08-03T10:00:00.000Z", "2026-08-04T23:00:00.000Z", "2026-08-05T09:00:00.000Z"]
    assert starts("--timezone", "UTC") == every
    assert starts("--timezone", "UTC", "--since", "2026-08-05") == every[2:]
    assert starts("--timezone", "Europe/Paris", "--since", "2026-08-05") == every[1:]
    assert starts("--timezone", "UTC", "--until", "2026-08-04") == every[:2]
    none = run("--no-cache", "blocks", tmp_path, "--since", "2026-09-01")
    assert none.stdout == "no 5-hour block starts on these days (--since/--until)\n"


def test_blocks_in_days_filters_on_the_block_start_in_the_zone() -> None:
    from datetime import UTC, datetime

    from analytics.core.blocks import blocks_in_days, usage_blocks

    calls = pl.DataFrame(
        {
            "session_id": ["s1", "s1"],
            "model": ["m", "m"],
            "start_time": [
                datetime(2026, 8, 3, 22, 30, tzinfo=UTC),
                datetime(2026, 8, 5, 9, tzinfo=UTC),
            ],
            "input_tokens": [1, 1],
            "cache_read_tokens": [0, 0],
            "cache_write_tokens": [0, 0],
            "output_tokens": [1, 1],
            "cost_usd": [Decimal("0.01"), Decimal("0.01")],
            "token_source": ["observed", "observed"],
        },
        schema_overrides={"start_time": pl.Datetime("ms", "UTC"), "cost_usd": MONEY},
    )
    blocks = usage_blocks(calls, now=datetime(2026, 9, 1, tzinfo=UTC))
    tokyo = blocks_in_days(blocks, date(2026, 8, 4), date(2026, 8, 4), "Asia/Tokyo")
    assert tokyo["calls"].to_list() == [1]  # 22:00 UTC on Aug 3 is Aug 4 in Tokyo
    assert blocks_in_days(blocks, date(2026, 8, 4), None, "UTC").height == 1
    assert blocks_in_days(blocks, None, None, "UTC").height == 2


# --- top: costliest first ---


def test_top_items_puts_the_costliest_session_first() -> None:
    items = pl.DataFrame(
        {
            "session_id": ["a-cheap", "a-cheap", "b-dear", "b-dear", "c-mid"],
            "agent": ["copilot"] * 5,
            "item_seq": [0, 1, 0, 1, 0],
            "label": ["x", "y", "x", "y", "x"],
            "tokens_added": [1] * 5,
            "sends": [1] * 5,
            "tokens_sent": [10, 20, 30, 40, 50],
            "cost_usd": [Decimal("0.01"), Decimal("0.02"), Decimal("0.50"), None, Decimal("0.10")],
            "unpriced_sends": [0, 0, 0, 1, 0],
        },
        schema_overrides={"cost_usd": MONEY},
    )
    top = top_items(items, 5)
    assert list(zip(top["session_id"], top["label"], strict=True)) == [
        ("b-dear", "x"),
        ("b-dear", "y"),  # no cost: after the costed item
        ("c-mid", "x"),
        ("a-cheap", "y"),
        ("a-cheap", "x"),
    ]


def test_top_command_lists_the_costliest_session_first() -> None:
    """On the sample logs, whose sessions' ids do not sort as their costs do."""
    result = run("--no-cache", "top", SAMPLE_LOGS, "-f", "json", "--limit", "1000")
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)["items"]
    totals: dict[str, Decimal] = {}
    for item in items:  # in the order shown
        totals[item["session_id"]] = totals.get(item["session_id"], Decimal(0)) + Decimal(
            item["cost_usd"] or 0
        )
    shown = list(totals)
    assert shown == sorted(totals, key=lambda session: totals[session], reverse=True)
    assert shown != sorted(shown)


# --- cannot write, one wording ---


def test_cannot_write_is_worded_one_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--output``, ``--html``, an export's DIR and the budget file that cannot be written:
    the same words."""
    logs = write_session(tmp_path / "home", "s1").parent.parent
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("AGENTCOST_CONFIG_DIR", str(blocker / "config"))
    cases = {
        "output": ["analyze", logs, "-o", blocker / "x.txt"],
        "html": ["report", logs, "--html", blocker / "r.html"],
        "export": ["export", blocker / "dataset", logs],
        "budget": ["budget", "set", "--credits", "20"],
    }
    targets = {"export": blocker / "dataset", "budget": blocker / "config" / "budget.toml"}
    lines = {}
    for name, args in cases.items():
        result = run("--no-cache", *args)
        assert result.exit_code == 2, (name, result.output)
        lines[name] = result.stderr.splitlines()[0]
    for name, line in lines.items():
        target = targets.get(name, cases[name][-1])
        assert line == (
            f"agentcost: error: {target}: cannot write (not a directory); choose another path"
        ), name


def test_a_reader_that_leaves_the_pipe_is_not_an_error() -> None:
    """``agentcost analyze ... | head -1``: no "cannot write (broken pipe)" on stderr."""
    shell = (
        f'{sys.executable} -c \'import sys; from analytics.cli import main; sys.argv[0] = "a"; '
        f"main()' --no-cache analyze {SAMPLE_LOGS} --calls --wide | head -c 10"
    )
    done = subprocess.run(
        ["sh", "-c", shell],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout == "SESSION   "
    assert "cannot write" not in done.stderr and "Traceback" not in done.stderr


# --- the issues table's paths ---


def test_the_issues_table_names_home_with_a_tilde_and_cuts_long_paths_from_the_left(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", "/home/ana")
    monkeypatch.chdir(tmp_path)
    session = "/home/ana/.copilot/session-state/2bb4ba81-a6b0-418e-bd4e-a1a02f89ff18"
    issues = pl.DataFrame(
        {
            "file": [f"{session}/events.jsonl", "/home/ana/x.jsonl", f"{tmp_path}/here.jsonl"],
            "line": [23, None, 1],
            "severity": ["error", "warning", "warning"],
            "message": ["invalid JSON", "the log is empty", "odd"],
        },
        schema=ISSUES,
    )
    narrow = issues_table(issues, Layout(width=80)).splitlines()
    assert narrow[2].split()[0] == "…a1a02f89ff18/events.jsonl"  # 80 // 3 characters
    assert narrow[3].split()[0] == "~/x.jsonl"
    assert narrow[4].split()[0] == "here.jsonl"  # under the working directory: relative
    wide = issues_table(issues, Layout(width=None)).splitlines()
    assert wide[2].split()[0] == f"~{session.removeprefix('/home/ana')}/events.jsonl"
