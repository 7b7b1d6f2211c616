"""Every Kimi Code wire of ``../shared/real_logs/kimi`` folded alone equals its README facts
row: calls (one per ``usage.record``: the ``step.end`` and replay copies and the rate-limit
retries are not calls), uncached input, output, cache reads and writes, input including the
cache, calls per model (the provider's id the ``llm.request`` names), the session (named by
its ``state.json``), lines read; and each call keeps the per-call detail ccusage gives.

The README's ``in`` is ``inputOther`` (uncached), so here it is ``input_tokens - cache_read -
cache_write``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from analytics.agents import kimi
from tests.conftest import REAL_LOGS
from tests.readme_facts import cells, facts_rows, number, params

_USAGE = re.compile(r"in ([\d,]+) · out ([\d,]+) · cr ([\d,]+) · cw ([\d,]+)")
_MODELS = re.compile(r"([\w.\-/]+) ([\d,]+) \(alias ([\w.\-/]+)\)")
_REQUESTS = "`llm.request` / **calls** / retries"


def usage_facts(row: dict[str, str]) -> dict[str, int]:
    """A row's calls and usage figures."""
    match = _USAGE.fullmatch(row["usage over calls"].strip())
    assert match, row["usage over calls"]
    requests, calls, retries = (number(n) for n in row[_REQUESTS].split("/"))
    assert requests == calls + retries  # a failed attempt leaves a request and no usage
    figures = dict(zip(("in", "out", "cr", "cw"), (number(n) for n in match.groups()), strict=True))
    return {"calls": calls, **figures, "input": number(row["input incl. cache"])}


def usage_figures(calls: pl.DataFrame) -> dict[str, int]:
    """The same figures summed over ``calls`` (CALLS columns)."""
    cache = calls["cache_read_tokens"] + calls["cache_write_tokens"]
    return {
        "calls": calls.height,
        "in": int((calls["input_tokens"] - cache).sum()),
        "out": int(calls["output_tokens"].sum()),
        "cr": int(calls["cache_read_tokens"].sum()),
        "cw": int(calls["cache_write_tokens"].sum()),
        "input": int(calls["input_tokens"].sum()),
    }


def wire_rows(readme: Path) -> list[tuple[Path, dict[str, str]]]:
    """The README's wire table (its header opens ``| # | file |``, its rows ``| R1 |``), each
    row as header -> cell with the file's path under the section's base folder."""
    found: list[tuple[Path, dict[str, str]]] = []
    base: Path | None = None
    header: list[str] = []
    for text in readme.read_text(encoding="utf-8").splitlines():
        if text.startswith("Paths below are relative to `"):
            base = readme.parent / text.split("`")[1]
        elif text.startswith("| # | file |"):
            header = cells(text)
        elif base is not None and header and re.match(r"\| R\d+ \|", text):
            row = dict(zip(header, cells(text), strict=True))
            found.append((base / row["file"].strip("`"), row))
        elif not text.startswith("|"):
            header = []
    return found


def rows(kind: str) -> list[object]:
    """pytest parameters: the README's wire rows (``wire``) or its reference files' rows
    (``reference``: ``state.json`` and the session log), or one skip where the folder is
    absent."""
    readme = REAL_LOGS / "kimi" / "README.md"
    if not readme.is_file():
        return params("kimi")  # the skip, saying why
    found = wire_rows(readme) if kind == "wire" else facts_rows(readme)
    return [pytest.param(path, row, id=str(path.relative_to(readme.parent))) for path, row in found]


@pytest.mark.parametrize(("path", "row"), rows("wire"))
def test_file_equals_its_facts_row(path: Path, row: dict[str, str]) -> None:
    tables = kimi.read_files([path])
    calls, sessions = tables.calls, tables.sessions
    assert usage_figures(calls) == usage_facts(row)

    models = {m: number(n) for m, n, _ in _MODELS.findall(row["models (calls)"])}
    assert dict(calls["model"].value_counts().iter_rows()) == models
    assert calls["final_usage"].all()
    assert calls["reasoning_tokens"].is_null().all()  # Kimi logs no split of its output
    assert calls["api_call_id"].n_unique() == calls.height

    lines, _turns = (number(n) for n in row["lines / turns"].split("/"))
    assert sessions["session_id"].to_list() == [row["session"].strip("`")]
    assert sessions["lines_read"].to_list() == [lines]
    assert sessions["unknown_lines"].to_list() == [0]
    assert sessions["cwd"][0]
    assert tables.issues.height == 0, tables.issues
    assert tables.items.height > 0


@pytest.mark.parametrize(("path", "row"), rows("wire"))
def test_each_call_runs_from_its_request_to_its_usage_record(
    path: Path, row: dict[str, str]
) -> None:
    calls = kimi.read_files([path], items=False).calls
    assert (calls["start_time"] <= calls["end_time"]).all()
    assert calls["call_index"].to_list() == list(range(1, calls.height + 1))


@pytest.mark.parametrize(("path", "row"), rows("reference"))
def test_a_state_json_names_the_session_of_the_wire_beside_it(
    path: Path, row: dict[str, str]
) -> None:
    """A session's ``state.json`` is read by the fold beside its wires, never as a log; the
    session log (``logs/kimi-code.log``) is not read at all."""
    if path.name != "state.json":
        assert not kimi.recognizes({"text": path.read_text("utf-8")})
        return
    state = json.loads(path.read_text("utf-8"))
    (wire,) = path.parent.glob("agents/*/wire.jsonl")
    sessions = kimi.read_files([wire], items=False).sessions
    assert sessions.select("session_id", "cwd").rows() == [(state["id"], state["cwd"])]
