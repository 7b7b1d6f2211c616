"""Every conversation database of ``../shared/real_logs/antigravity`` read alone equals its
README facts: the row of the per-file table (calls, calls only in ``steps``, usage records,
tokens by kind, calls per model, rows read) and each line of the per-call table (response
id, step, model slot, uncached, cache read, output with its thinking and visible parts).
Figures are read from the README, so the test fails if a row is changed."""

from __future__ import annotations

import fnmatch
import re
from itertools import takewhile
from pathlib import Path

import polars as pl
import pytest

from analytics.agents import antigravity
from analytics.agents.antigravity import database
from tests.conftest import REAL_LOGS
from tests.readme_facts import cells, number

README = REAL_LOGS / "antigravity" / "README.md"
USAGE = "usage over calls"
RECORDS = "usage records / **API calls** (only in steps)"
_FIGURE = re.compile(r"(uncached|cr|cw|input|out|thinking|visible|total) \**([\d,]+)")


def facts_params() -> list[object]:
    """pytest parameters, one per row of the README's per-file table: (database, row). This
    README shortens paths with ``…``, which stands for any run of path parts here; a single
    skipped parameter, saying why, where it is absent."""
    if not README.is_file():
        reason = f"real Antigravity logs not present at {README.parent} (shared/ is absent)"
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=reason), id="absent")]
    header: list[str] = []
    found: list[object] = []
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("| file |"):
            header = cells(line)
        elif header and line.startswith("| `"):
            row = dict(zip(header, cells(line), strict=True))
            pattern = "*" + row["file"].strip("`").replace("…", "*")
            (path,) = [p for p in README.parent.rglob("*.db") if fnmatch.fnmatch(str(p), pattern)]
            found.append(pytest.param(path, row, id=path.name))
        elif not line.startswith("|"):
            header = []
    return found


def slot_names(row: dict[str, str]) -> dict[str, tuple[str, int]]:
    """The models cell (``MODEL_PLACEHOLDER_M16 = "Gemini 3.1 Pro (High)" / … 3; …``): each
    slot's expected ``model`` (its display label, else the slot) and its calls."""
    found = {}
    for part in row["models (calls)"].split(";"):
        slot = re.search(r"`MODEL_PLACEHOLDER_(M\d+)`", part).group(1)  # type: ignore[union-attr]
        label = re.search(r'"([^"]+)"', part)
        name = label.group(1) if label else f"MODEL_PLACEHOLDER_{slot}"
        found[slot] = (name, number(part.rsplit(" ", 1)[-1]))
    return found


def figures(cell: str) -> dict[str, int]:
    """``uncached 14,438 · cr 40,697 · … · out 851 (thinking 843, visible 8)`` as a dict."""
    return {name: number(value) for name, value in _FIGURE.findall(cell)}


def per_call_rows() -> list[dict[str, str]]:
    """The README's table of calls (``| # | time | step | model | response_id | …``)."""
    if not README.is_file():
        return []
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| # | time |"))
    header = cells(lines[start])
    body = takewhile(lambda line: line.startswith("| "), lines[start + 2 :])
    return [dict(zip(header, cells(line), strict=True)) for line in body]


@pytest.mark.parametrize(("path", "row"), facts_params())
def test_file_equals_its_facts_row(path: Path, row: dict[str, str]) -> None:
    before = sorted(path.parent.iterdir())
    tables = antigravity.read_files([path])
    assert sorted(path.parent.iterdir()) == before, "reading wrote beside the database"
    calls, sessions = tables.calls, tables.sessions

    count, _, rest = row[RECORDS].partition("/")
    api_calls, only_steps = re.fullmatch(r"\s*\*\*([\d,]+)\*\* \(([\d,]+)\)", rest).groups()  # type: ignore[union-attr]
    assert calls.height == number(api_calls)
    found = database.read(path)
    in_gen = {r.usage.key for r in found.usage if r.table == "gen_metadata"}
    assert calls.filter(~pl.col("api_call_id").is_in(list(in_gen))).height == number(only_steps)
    # The payload copies are byte-identical to their metadata, so SQL drops them: each
    # steps record stands for two of the README's records.
    in_steps = sum(r.table == "steps" for r in found.usage)
    assert len(found.usage) + in_steps == number(count)

    expected = figures(row[USAGE])
    uncached = calls["input_tokens"] - calls["cache_read_tokens"] - calls["cache_write_tokens"]
    got = {
        "uncached": int(uncached.sum()),
        "cr": int(calls["cache_read_tokens"].sum()),
        "cw": int(calls["cache_write_tokens"].sum()),
        "input": int(calls["input_tokens"].sum()),
        "out": int(calls["output_tokens"].sum()),
        "thinking": int(calls["reasoning_tokens"].sum()),
        "visible": int((calls["output_tokens"] - calls["reasoning_tokens"]).sum()),
        "total": int((calls["input_tokens"] + calls["output_tokens"]).sum()),
    }  # fmt: skip
    assert got == expected

    models = {name: count for name, count in slot_names(row).values()}
    assert dict(calls.group_by("model").len().iter_rows()) == models

    tables_read = dict(re.findall(r"(steps|gen_metadata) (\d+)", row["rows"]))
    assert sessions["lines_read"].sum() == sum(int(n) for n in tables_read.values())
    assert sessions["llm_calls"].sum() == calls.height
    assert tables.issues.height == 0


@pytest.mark.skipif(
    not README.is_file(), reason=f"real Antigravity logs not present at {README.parent}"
)
def test_each_call_equals_its_line() -> None:
    ((path, row),) = [x.values for x in facts_params()]  # type: ignore[attr-defined]
    names = slot_names(row)
    calls = antigravity.read_files([path]).calls
    lines = per_call_rows()
    assert calls.height == len(lines)
    for line in lines:
        (call,) = calls.filter(pl.col("api_call_id") == line["response_id"].strip("`")).to_dicts()
        out, thinking, visible = (
            number(n) for n in re.findall(r"[\d,]+", line["out (thinking + visible)"])
        )
        assert call["input_tokens"] - call["cache_read_tokens"] == number(line["uncached"])
        assert call["cache_read_tokens"] == number(line["cr"])
        assert (call["output_tokens"], call["reasoning_tokens"]) == (out, thinking)
        assert out == thinking + visible
        assert call["source_line"] == int(re.search(r"step (\d+)", line["step"]).group(1))  # type: ignore[union-attr]
        assert call["kind"] == ("compaction" if "CHECKPOINT" in line["step"] else "main")
        assert call["model"] == names[line["model"]][0]
        assert call["start_time"].strftime("%H:%M:%S.%f")[:12] == line["time"]
