"""Issue 21, item 4: tables and words.

Widths go through snapshots at 60, 80, 120 and 200 columns (``tests/snapshots/ux/``; refresh
after a reviewed change with ``AGENTCOST_UPDATE_SNAPSHOTS=1``); errors through ``CliRunner``
with their exact message and exit code. Logs are literal lines, or ``sample_logs``.
"""

from __future__ import annotations

import json
import os
import time
import tomllib
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner, Result

from analytics.cli.commands import app
from analytics.cli.rates import folded_toml
from analytics.core.schema import ISSUES, conform
from analytics.engine.analyze import issue_summary
from analytics.engine.live_session import latest_log
from analytics.render.text_table import Column, Layout, render_table
from tests.conftest import REPO, SAMPLE_LOGS

RUNNER = CliRunner()
SNAPSHOTS = REPO / "tests" / "snapshots" / "ux"
FIXED = str(REPO / "tests" / "fixtures" / "fixed-rates.toml")
WIDTHS = [60, 80, 120, 200]
#: A working directory deep in a monorepo, as real sessions record it.
DEEP = "/home/ana/src/company/monorepo/services/billing"


def event(kind: str, stamp: str, **data: object) -> str:
    return json.dumps({"type": kind, "data": data, "id": f"{kind}-{stamp}", "timestamp": stamp})


def write_session(
    root: Path,
    directory: str,
    session_id: str,
    *,
    cwd: str = DEEP,
    model: str = "claude-sonnet-4.6",
    billed: int = 5,
    day: str = "2026-05-01T10:00",
) -> Path:
    """A complete one-call session in ``root/session-state/<directory>/events.jsonl``."""
    folder = root / "session-state" / directory
    folder.mkdir(parents=True)
    lines = [
        event(
            "session.start",
            f"{day}:00.000Z",
            sessionId=session_id,
            copilotVersion="1.0.80",
            selectedModel=model,
            context={"cwd": cwd},
        ),
        event("user.message", f"{day}:01.000Z", content="hi"),
        event("assistant.turn_start", f"{day}:02.000Z", turnId="0"),
        event("assistant.message", f"{day}:03.000Z", content="ok", outputTokens=12, model=model),
        event("assistant.turn_end", f"{day}:04.000Z", turnId="0"),
        event(
            "session.shutdown",
            f"{day}:05.000Z",
            shutdownType="routine",
            totalNanoAiu=billed,
            modelMetrics={
                model: {
                    "requests": {"count": 1, "cost": 1},
                    "usage": {"inputTokens": 900, "outputTokens": 12},
                }
            },
        ),
    ]
    log = folder / "events.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return log


def run(*args: str | Path, width: int | None = None, **env: str) -> Result:
    environment = {**env, **({"COLUMNS": str(width)} if width else {})}
    return RUNNER.invoke(app, [str(arg) for arg in args], env=environment)


def snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    text = text.replace(str(REPO) + os.sep, "")
    if os.environ.get("AGENTCOST_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def longest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


@pytest.fixture
def deep_home(tmp_path: Path) -> Path:
    """Two sessions in deep working directories of one monorepo."""
    write_session(tmp_path, "a", "aaaaaaaa-1111-4000-8000-000000000001")
    write_session(
        tmp_path,
        "b",
        "bbbbbbbb-2222-4000-8000-000000000002",
        cwd="/home/ana/src/company/monorepo/services/payments/gateway",
        day="2026-05-02T10:00",
    )
    return tmp_path


# --- widths: snapshots at 60, 80, 120 and 200 columns ---

REPORTS = {
    "analyze": ["analyze", str(SAMPLE_LOGS), "--rates", FIXED, "--timezone", "UTC"],
    "top": ["top", str(SAMPLE_LOGS), "--rates", FIXED, "--timezone", "UTC"],
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", REPORTS)
def test_reports_fit_every_width(name: str, width: int) -> None:
    result = run(*REPORTS[name], width=width)
    assert result.exit_code == 0, result.output
    assert longest(result.stdout) <= width
    snapshot(f"{name}-{width}", result.stdout)


@pytest.mark.parametrize("width", WIDTHS)
def test_daily_by_project_shortens_paths_from_the_left(deep_home: Path, width: int) -> None:
    result = run("daily", deep_home, "--by", "project", "--rates", FIXED, "--timezone", "UTC",
                 width=width)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert longest(result.stdout) <= width
    assert "…/services/billing" in result.stdout
    assert DEEP not in result.stdout
    snapshot(f"daily-by-project-{width}", result.stdout)


def test_at_120_columns_the_short_paths_leave_room_for_the_token_columns(deep_home: Path) -> None:
    result = run("daily", deep_home, "--by", "project", "--rates", FIXED, width=120)
    header = result.stdout.splitlines()[0]
    for column in ("CALLS", "INPUT TOK", "CACHE READ", "CACHE WRITE", "OUTPUT TOK", "COST USD"):
        assert column in header


def test_wide_keeps_the_whole_path(deep_home: Path) -> None:
    result = run("daily", deep_home, "--by", "project", "--rates", FIXED, "--wide")
    assert DEEP in result.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_the_first_screen_fits_every_width(width: int) -> None:
    result = run(width=width, COPILOT_HOME=str(SAMPLE_LOGS))
    assert result.exit_code == 0, result.output
    assert longest(result.stdout) <= width


def test_one_long_cell_does_not_cost_a_column() -> None:
    """A 60-character cell of a column that is always shown wraps in its cell; the column
    ranked to go first stays while the other columns' text fits."""
    frame = pl.DataFrame(
        {
            "id": ["24ccb34f", "6c2b0476"],
            "models": ["claude-sonnet-4.6", "claude-haiku-4.5, claude-sonnet-4.6"],
            "check": ["ok 6=6", "no: 1 of 7: lines missing from the log before line 4 (cut)"],
            "calls": ["6", "1"],
        }
    )
    columns = [
        Column("SESSION", "id", right=False),
        Column("MODELS", "models", right=False, drop=1),
        Column("SHUTDOWN CHECK", "check", right=False),
        Column("CALLS", "calls"),
    ]
    text = render_table(frame, columns, None, Layout(width=80))
    assert "MODELS" in text.splitlines()[0]
    assert "left out" not in text
    assert longest(text) <= 80


def test_analyze_at_200_columns_keeps_models_beside_a_long_check(real_logs: Path) -> None:
    result = run("analyze", real_logs, width=200)
    assert result.exit_code == 0, result.output
    assert "MODELS" in result.stdout.splitlines()[0]
    assert longest(result.stdout) <= 200


# --- words ---


def test_one_of_a_thing_is_singular(tmp_path: Path) -> None:
    write_session(tmp_path, "a", "aaaaaaaa-1111-4000-8000-000000000001")
    result = run("analyze", tmp_path, "--rates", FIXED, width=60)
    assert "1 session " in result.stdout or result.stdout.count("1 session\n")
    assert "1 sessions" not in result.stdout
    assert "1 columns" not in result.stdout
    calls = run("analyze", tmp_path, "--calls", "--rates", FIXED)
    assert "1 call " in calls.stdout and "1 calls" not in calls.stdout


def test_the_issue_count_is_singular_for_one() -> None:
    one = conform(
        pl.DataFrame(
            {"file": ["f"], "line": [None], "severity": ["error"], "message": ["m"]},
            schema_overrides={"line": pl.Int64},
        ),
        ISSUES,
    )
    assert issue_summary(one) == "1 issue (1 error, 0 warnings)"


def test_one_column_left_out_is_singular() -> None:
    frame = pl.DataFrame({"a": ["x" * 30], "b": ["y" * 30]})
    columns = [Column("A", "a", right=False), Column("B", "b", drop=1)]
    text = render_table(frame, columns, None, Layout(width=40))
    assert "1 column left out to fit 40" in text


def test_the_issues_total_is_singular_for_one(tmp_path: Path) -> None:
    log = write_session(tmp_path, "a", "aaaaaaaa-1111-4000-8000-000000000001")
    with log.open("a", encoding="utf-8") as file:
        file.write("{not json\n")
    result = run("issues", tmp_path)
    assert "1 issue\n" in result.stdout + "\n"
    assert "1 issues" not in result.stdout


@pytest.mark.parametrize("command", ["analyze", "daily", "compare"])
def test_a_window_that_ends_before_it_starts_is_a_usage_error(command: str) -> None:
    result = run(command, SAMPLE_LOGS, "--since", "2026-08-08", "--until", "2026-08-01")
    assert result.exit_code == 2
    assert result.stderr == (
        "agentcost: error: --until 2026-08-01 is before --since 2026-08-08; the window would "
        "hold no day (swap them?)\n"
    )


def test_parquet_to_a_missing_directory_names_the_reason(tmp_path: Path) -> None:
    target = tmp_path / "nonexist" / "a.parquet"
    result = run("analyze", SAMPLE_LOGS, "--format", "parquet", "--output", target)
    assert result.exit_code == 2
    assert result.stderr == (
        f"agentcost: error: {target}: cannot write (no such directory: {target.parent}); "
        "choose another path\n"
    )


def test_a_price_that_ended_says_when(tmp_path: Path) -> None:
    """deepseek-chat's only price ended on 2025-09-05: calls after it are unpriced, and the
    table says why."""
    write_session(tmp_path, "a", "aaaaaaaa-1111-4000-8000-000000000001", model="deepseek-chat")
    result = run("analyze", tmp_path, "--rates", "deepseek", width=120)
    assert result.exit_code == 0, result.output
    assert "unpriced: deepseek-chat: no price after 2025-09-05 in deepseek" in result.stdout
    mapped = run(
        "analyze", SAMPLE_LOGS, "--rates", "deepseek", "--model-map",
        "claude-sonnet-4.6=deepseek-chat", width=120,
    )  # fmt: skip
    assert (
        "unpriced: claude-sonnet-4.6 (as deepseek-chat): no price after 2025-09-05 in deepseek"
        in mapped.stdout
    )
    assert "unpriced: claude-haiku-4.5: model not in the deepseek rate table" in mapped.stdout


def test_compare_says_a_call_was_byok(tmp_path: Path) -> None:
    """A bring-your-own-key session (its shutdown shows tokens and a bill of 0): under
    github-copilot its calls are BYOK, never "not sold there"."""
    write_session(
        tmp_path, "a", "aaaaaaaa-1111-4000-8000-000000000001", model="qwen3:0.6b", billed=0
    )
    result = run("compare", tmp_path, "--rates", "github-copilot,openrouter", width=200)
    assert result.exit_code == 0, result.output
    assert (
        "github-copilot: qwen3:0.6b BYOK: your own key, no provider price (1 call unpriced)"
        in result.stdout
    )
    assert "openrouter: qwen3:0.6b not sold there (1 call unpriced)" in result.stdout


def test_statusline_names_the_session_by_its_session_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCOST_CONFIG_DIR", str(tmp_path / "config"))
    log = write_session(tmp_path / "home", "copied-dir", "0a1b2c3d-0000-4000-8000-000000000001")
    now = time.time()
    os.utime(log, (now, now))
    result = run("statusline", tmp_path / "home")
    assert result.exit_code == 0, result.output
    assert "session 0a1b2c3d" in result.stdout
    assert "copied-d" not in result.stdout


@pytest.mark.parametrize("width", [80, 120])
def test_session_ids_are_cut_at_the_8_character_prefix(width: int) -> None:
    result = run("analyze", SAMPLE_LOGS, "--rates", FIXED, width=width)
    assert "24ccb34f " in result.stdout
    assert "24ccb34f-" not in result.stdout
    wide = run("analyze", SAMPLE_LOGS, "--rates", FIXED, "--wide")
    assert "24ccb34f-02d7-4b8f-aea1-6d95145b2643" in wide.stdout


def test_help_summaries_wrap_evenly() -> None:
    """Each command's summary is one run of words that rich wraps at the width: a line
    break of the docstring never leaves a short line in the middle of a summary."""
    result = run("--help", width=80)
    assert result.exit_code == 0
    panel = [
        line.strip("│ ").split("  ")[-1].strip()
        for line in result.stdout.splitlines()
        if line.startswith("│")
    ]
    text = " ".join(panel)
    assert "(Copilot, the vendor, OpenRouter) and name the cheapest." in text
    assert "lines agentcost could not use, or kept but finds suspect." in text


def test_a_long_toml_string_folds_to_the_same_value() -> None:
    """``rates learn`` on a terminal: long ``source`` strings fold into lines that fit, and
    the table reads back the same."""
    text = (
        "[models.m]\n"
        "source = \"the log's own prices: /home/ana/.copilot/session-store.db:14 (session "
        'c96959e0-053d-4785-9b2a-95d55662a127, 2026-08-06T09:38:09Z) \\"quoted\\""\n'
        'input = "3"\n'
    )
    folded = folded_toml(text, 60)
    assert longest(folded) <= 60
    assert tomllib.loads(folded) == tomllib.loads(text)
    assert folded_toml('a = "short"\n', 60) == 'a = "short"\n'


def test_watch_follows_a_named_session_directory(tmp_path: Path) -> None:
    """A session directory named on the command line (outside any session-state) is the
    log watch follows, not "no session log"."""
    log = write_session(tmp_path, "a", "aaaaaaaa-1111-4000-8000-000000000001")
    assert latest_log([log.parent]).log.path == log
    assert latest_log([log]).log.path == log
