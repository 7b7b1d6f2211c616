"""Every real OpenCode export of ``../shared/real_logs/opencode``, loaded into a database of
OpenCode's schema (``projection``), equals its README facts row: the calls (one per
``step-finish`` part), the usage over them (uncached input, output, reasoning, cache read and
write, the logged total and cost), the calls per model, and the part rows read; nothing is
reported as lost."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from analytics.agents import opencode
from tests.agents.opencode.projection import database_of
from tests.readme_facts import empty, number, params

USAGE = re.compile(
    r"in (?P<input>[\d,]+) · out (?P<output>[\d,]+) · reasoning (?P<reasoning>[\d,]+) · "
    r"cache r/w (?P<read>[\d,]+)/(?P<write>[\d,]+) · "
    r"total (?P<total>[\d,]+) · cost (?P<cost>[\d.]+)"
)


def models(cell: str) -> dict[str, int]:
    """``gemma 40, qwen/qwen3-4b 1`` as {model: calls}; an en dash as none."""
    if empty(cell):
        return {}
    pairs = (part.strip().rsplit(" ", 1) for part in cell.split(","))
    return {name: number(count) for name, count in pairs}


@pytest.mark.parametrize(("path", "row"), params("opencode"))
def test_file_equals_its_facts_row(path: Path, row: dict[str, str], tmp_path: Path) -> None:
    tables = opencode.read_files([database_of([path], tmp_path / "opencode.db")])
    calls = tables.calls
    *_, expected_calls = row["user msgs / step-starts / **calls**"].split("/")
    assert calls.height == number(expected_calls.split("(")[0])
    usage = USAGE.fullmatch(row["usage over calls"])
    assert usage is not None, row["usage over calls"]
    read, write = (int(calls[c].sum()) for c in ("cache_read_tokens", "cache_write_tokens"))
    reasoning = int(calls["reasoning_tokens"].sum())
    uncached = int(calls["input_tokens"].sum()) - read - write
    output = int(calls["output_tokens"].sum()) - reasoning
    got = {
        "input": uncached,
        "output": output,
        "reasoning": reasoning,
        "read": read,
        "write": write,
    }
    got["total"] = sum(got.values())
    assert got == {key: number(usage[key]) for key in got}
    cost = calls["logged_cost_usd"].str.to_decimal(scale=18).sum()
    assert Decimal(cost) == Decimal(usage["cost"])
    per_model = calls.group_by("model").len()
    assert dict(per_model.iter_rows()) == models(row["model (calls)"])
    assert int(tables.sessions["lines_read"].sum()) == number(
        row["lines: parts by type"].split(":")[0]
    )
    assert int(tables.sessions["unknown_lines"].sum()) == 0
    assert tables.issues.height == 0
