"""Every Gemini CLI recording of ``../shared/real_logs/gemini-cli`` folded alone equals its
README facts row: the calls (distinct session and message id of a gemini record with tokens,
checkpoints and rewound replies included), their usage to the token (input with its cached
part and the tool-use prompt, output and thoughts, the total), the calls per model, the
sessions and the lines read.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from analytics.agents import gemini_cli
from tests.readme_facts import empty, number, params

USAGE = re.compile(
    r"in (?P<input>[\d,]+) \(cached (?P<cached>[\d,]+)\) · out (?P<output>[\d,]+) · "
    r"thoughts (?P<thoughts>[\d,]+) · tool (?P<tool>[\d,]+) · total (?P<total>[\d,]+)"
)


def usage(cell: str) -> dict[str, int]:
    """The figures of a "usage over calls" cell."""
    match = USAGE.fullmatch(cell.strip())
    assert match, cell
    return {name: number(value) for name, value in match.groupdict().items()}


def models(cell: str) -> dict[str, int]:
    """The calls per model of a "models (calls)" cell (``gemini-3.5-flash 7, ...``)."""
    if empty(cell):
        return {}
    pairs = (part.strip().rsplit(" ", 1) for part in cell.split(","))
    return {model: number(count) for model, count in pairs}


@pytest.mark.parametrize(("path", "row"), params("gemini-cli"))
def test_file_equals_its_facts_row(path: Path, row: dict[str, str]) -> None:
    tables = gemini_cli.read_files([path])
    calls, sessions = tables.calls, tables.sessions

    records, _, calls_cell = row["token records → **calls**"].partition("→")
    assert calls.height == number(calls_cell.split("(")[0])
    assert calls.height <= number(records)
    assert calls["api_call_id"].n_unique() == calls.height

    figures = usage(row["usage over calls"])
    got = {
        column: int(calls[column].sum())
        for column in ("input_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens")
    }
    assert got == {
        "input_tokens": figures["input"] + figures["tool"],
        "cache_read_tokens": figures["cached"],
        "output_tokens": figures["output"] + figures["thoughts"],
        "reasoning_tokens": figures["thoughts"],
    }
    assert got["input_tokens"] + got["output_tokens"] == figures["total"]
    assert calls["cache_write_tokens"].null_count() == calls.height  # not logged: unknown

    per_model = dict(calls.group_by("model").len().iter_rows())
    assert per_model == models(row["models (calls)"])

    count, _, ids = row["sessions"].partition(":")
    prefixes = [p.strip(" `") for p in ids.split(",")]
    assert sessions.height == number(count) == len(prefixes)
    assert all(any(s.startswith(p) for s in sessions["session_id"]) for p in prefixes)
    assert int(sessions["lines_read"].sum()) == number(row["lines: kinds"].split(":")[0])
    assert int(sessions["unknown_lines"].sum()) == 0
    assert tables.issues.filter(pl.col("severity") == "error").height == 0


def test_all_files_together_count_each_call_once() -> None:
    """Read as one group (as a home's files are), the recordings give the sum of their rows:
    the ``<session_context>`` message id every session shares joins no two sessions."""
    rows = [(path, row) for path, row in (p.values for p in params("gemini-cli")) if path]
    if not rows:
        pytest.skip("real gemini-cli logs not present (the shared/ folder is absent)")
    tables = gemini_cli.read_files([path for path, _ in rows])
    expected = sum(
        number(row["token records → **calls**"].split("→")[1].split("(")[0]) for _, row in rows
    )
    assert tables.calls.height == expected
    assert tables.calls.select("session_id", "api_call_id").n_unique() == expected


@pytest.mark.parametrize(("path", "row"), params("gemini-cli"))
def test_each_calls_total_is_the_sum_of_its_parts(path: Path, row: dict[str, str]) -> None:
    """The log check (``log_check``) counts the same calls as the fold and finds every
    logged total equal to its parts, and equal to the row's total."""
    from analytics.agents.gemini_cli.log_check import log_check

    calls = gemini_cli.read_files([path]).calls
    check = log_check([str(path)], calls).row(0, named=True)
    assert (check["calls"], check["agree"], check["disagree"]) == (calls.height, calls.height, 0)
    total = usage(row["usage over calls"])["total"]
    assert check["tokens"] == check["checked_tokens"] == total
