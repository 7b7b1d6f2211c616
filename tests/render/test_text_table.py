"""Text tables fit the terminal: every report at 80, 120 and 200 columns, ``--wide``, colour.

Snapshots (``tests/snapshots/text/``) are priced with fixed test tables, so a refreshed price
in a shipped table does not change them. Regenerate after a reviewed change with
``AGENTCOST_UPDATE_SNAPSHOTS=1 pytest tests/render/test_text_table.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from analytics.render.text_table import Column, Layout, render_table
from tests.conftest import FIXTURES, REPO, SAMPLE_LOGS, SNAPSHOTS

TEXT_SNAPSHOTS = SNAPSHOTS / "text"
FIXED = str(FIXTURES / "fixed-rates.toml")
HALF = str(FIXTURES / "half-rates.toml")
WIDTHS = [80, 120, 200]

#: Every command that prints a table, as the user would type it (sample_logs, times in UTC).
COMMANDS = {
    "analyze": ["analyze", "--rates", FIXED],
    "analyze-calls": ["analyze", "--calls", "--rates", FIXED],
    "compare": ["compare", "--rates", f"{FIXED},{HALF}"],
    "daily": ["daily", "--rates", FIXED],
    "daily-by-model": ["daily", "--by", "model", "--rates", FIXED],
    "top": ["top", "--rates", FIXED],
    "issues": ["issues"],
    "validate": ["validate"],
}
SNAPSHOT = ["analyze", "compare", "daily", "top"]


def render(command: list[str], width: int | None, *extra: str) -> str:
    env = {"COLUMNS": str(width)} if width else {}
    args = [*command, str(SAMPLE_LOGS), *extra]
    if command[0] not in ("issues", "validate"):
        args += ["--timezone", "UTC"]
    result = CliRunner().invoke(app, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    # Paths in the output are the repository's: make them independent of where it is.
    return result.stdout.replace(str(REPO) + os.sep, "")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", COMMANDS)
def test_no_line_is_wider_than_the_terminal(name: str, width: int) -> None:
    text = render(COMMANDS[name], width)
    longest = max(len(line) for line in text.splitlines())
    assert longest <= width, f"{name} at {width}: a line of {longest} characters"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_first_screen_fits_too(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(SAMPLE_LOGS))
    result = CliRunner().invoke(app, [], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", SNAPSHOT)
def test_snapshot(name: str, width: int) -> None:
    text = render(COMMANDS[name], width)
    path = TEXT_SNAPSHOTS / f"{name}-{width}.txt"
    if os.environ.get("AGENTCOST_UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_narrow_keeps_the_key_columns_and_says_what_it_left_out() -> None:
    text = render(COMMANDS["analyze"], 80)
    header = text.splitlines()[0].split()
    assert header[:2] == ["SESSION", "CALLS"] and "COST" in header
    assert "columns left out to fit 80 (--wide shows all): START (UTC)" in " ".join(text.split())


@pytest.mark.parametrize("name", ["analyze", "analyze-calls", "compare", "daily", "top"])
def test_wide_shows_every_column_and_full_session_ids(name: str) -> None:
    full = "24ccb34f-02d7-4b8f-aea1-6d95145b2643"
    command = [*COMMANDS[name], "--by", "session"] if name == "daily" else COMMANDS[name]
    text = render(command, 80, "--wide")
    assert full in text
    assert "left out" not in text
    assert full not in render(COMMANDS[name], 80) or name == "daily"


def test_numbers_are_right_aligned_and_there_is_a_totals_row() -> None:
    lines = render(COMMANDS["analyze"], 200).splitlines()
    header = lines[0]
    end = header.index("CALLS") + len("CALLS")
    rows = [line for line in lines[2:] if line[:1].isalnum()][:5]  # not a wrapped cell's line
    assert all(line[end - 1].isdigit() and line[end] == " " for line in rows)
    assert any(line.startswith("5 sessions") for line in lines)


def test_no_colour_when_not_a_terminal_or_no_color() -> None:
    assert "\x1b[" not in render(COMMANDS["analyze"], 120)
    frame = pl.DataFrame({"a": ["MISMATCH 1 counted vs 2 logged"]})
    coloured = render_table(frame, [Column("A", "a")], None, Layout(width=80, colour=True))
    assert "\x1b[" in coloured
    plain = render_table(frame, [Column("A", "a")], None, Layout(width=80, colour=False))
    assert "\x1b[" not in plain


def test_colour_follows_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from analytics.cli import printing

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert printing.layout(wide=False).colour
    monkeypatch.setenv("NO_COLOR", "1")
    assert not printing.layout(wide=False).colour
    monkeypatch.delenv("NO_COLOR")
    assert not printing.layout(wide=False, output=Path("report.txt")).colour


def test_a_table_too_wide_even_when_compact_is_wrapped_inside_its_cells() -> None:
    frame = pl.DataFrame({"id": ["x" * 50], "text": ["word " * 40]})
    columns = [Column("ID", "id", right=False), Column("TEXT", "text", right=False)]
    text = render_table(frame, columns, None, Layout(width=60))
    assert max(len(line) for line in text.splitlines()) <= 60
    assert re.sub(r"\s+", "", text).count("x") == 50


@pytest.mark.parametrize("width", [80, 120, 200, None])
@pytest.mark.parametrize("with_totals", [False, True])
def test_a_long_table_is_drawn_as_rich_draws_it(
    width: int | None, with_totals: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above LONG_TABLE rows polars pads the rows; the text is the one rich makes itself."""
    from analytics.render import text_table

    rows = text_table.LONG_TABLE + 50
    frame = pl.DataFrame(
        {
            f"c{i}": [None if j % 7 == 0 else f"{(j * 7919 + i) % 100_000:,}" for j in range(rows)]
            for i in range(12)
        }
    ).with_columns(pl.col("c0").str.replace("1", "session-"))
    columns = [Column(f"C{i}", f"c{i}", right=i > 0, drop=i) for i in range(12)]
    totals = {"c0": "total", "c3": "123,456,789"} if with_totals else None
    long = render_table(frame, columns, totals, Layout(width=width))
    monkeypatch.setattr(text_table, "LONG_TABLE", 10**9)
    assert long == render_table(frame, columns, totals, Layout(width=width))
    assert len(long.splitlines()) >= rows + 2
