"""Every Claude Code file of ``../shared/real_logs/claude-code`` folded alone equals its
README facts row: API calls, uncached input, cache writes (5-minute / 1-hour), cache reads,
output, calls per model, sessions, lines read and calls without final usage.

A file folded alone has no sub-agent files beside it: the sub-agent requests its
``agent_progress`` lines restate are counted from those lines (the facts leave them out), and
a warning names them.

The README counts a call as a unique (``message.id``, ``requestId``) with the usage of its
last line; ``in`` is uncached input, so here it is ``input_tokens - cache_read - cache_write``.
A split of cache writes exists only where the log gives one; the table then writes 5m/1h,
and 0/0 where it does not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from analytics.agents import claude_code
from tests.conftest import REAL_LOGS
from tests.readme_facts import empty, number, params

_USAGE = re.compile(
    r"in ([\d,]+) · cw ([\d,]+) \(5m ([\d,]+) / 1h ([\d,]+)\) · cr ([\d,]+) · out ([\d,]+)"
)


def expected_models(cell: str) -> dict[str, int]:
    """``claude-opus-4-6 36, claude-sonnet-4-6 1`` as model -> calls (a dash: none)."""
    if empty(cell):
        return {}
    return {
        name: number(count)
        for name, count in (part.strip().rsplit(" ", 1) for part in cell.split(","))
    }


def usage_figures(calls: pl.DataFrame) -> dict[str, int]:
    """The usage figures of a facts row, summed over ``calls`` (CALLS columns): calls,
    uncached input, cache writes (all, 5-minute and 1-hour where split), cache reads, output."""
    split = calls.filter(pl.col("cache_write_1h_tokens").is_not_null())
    return {
        "calls": calls.height,
        "in": int(
            (calls["input_tokens"] - calls["cache_read_tokens"] - calls["cache_write_tokens"]).sum()
        ),
        "cw": int(calls["cache_write_tokens"].sum()),
        "5m": int((split["cache_write_tokens"] - split["cache_write_1h_tokens"]).sum()),
        "1h": int(split["cache_write_1h_tokens"].sum()),
        "cr": int(calls["cache_read_tokens"].sum()),
        "out": int(calls["output_tokens"].sum()),
    }


def usage_facts(row: dict[str, str]) -> dict[str, int]:
    """The same figures as the facts ``row`` writes them (``usage_figures``' keys)."""
    written = row["usage over calls (last line of each call)"]
    usage = _USAGE.fullmatch(written)
    assert usage, written
    uncached, cache_write, five_min, one_hour, cache_read, output = (
        number(g) for g in usage.groups()
    )
    return {
        "calls": number(row["lines / assistant / **API calls**"].split("/")[2]),
        "in": uncached,
        "cw": cache_write,
        "5m": five_min,
        "1h": one_hour,
        "cr": cache_read,
        "out": output,
    }


def session_prefixes(row: dict[str, str]) -> list[str]:
    """The session id prefixes the facts ``row`` names, sorted (as many as it counts)."""
    count, _, prefixes = row["sessionIds"].partition(":")
    named = sorted(p.strip(" `") for p in prefixes.split(","))
    assert len(named) == number(count), row["sessionIds"]
    return named


def progress_lines(path: Path) -> list[int]:
    """The numbers of the ``progress`` lines of ``path``."""
    with path.open(encoding="utf-8") as lines:
        return [n for n, line in enumerate(lines, 1) if json.loads(line)["type"] == "progress"]


@pytest.mark.parametrize(("path", "row"), params("claude-code"))
def test_file_equals_its_facts_row(path: Path, row: dict[str, str]) -> None:
    tables = claude_code.read_files([path])
    echoes = pl.col("source_line").is_in(progress_lines(path))
    calls, sessions = tables.calls.filter(~echoes), tables.sessions
    echoed = tables.calls.filter(echoes)
    assert echoed["kind"].to_list() == ["subagent"] * echoed.height
    named = tables.issues.filter(pl.col("message").str.contains("agent_progress"))
    assert named.height == (1 if echoed.height else 0)
    lines, _, api_calls = (number(n) for n in row["lines / assistant / **API calls**"].split("/"))
    got = {
        **usage_figures(calls),
        "lines": int(sessions["lines_read"].sum()),
        "without final usage": int((~calls["final_usage"]).sum()),
    }
    assert got == {
        **usage_facts(row),
        "lines": lines,
        "without final usage": number(row["calls w/o final usage"]),
    }
    per_model = dict(calls.group_by("model").len().iter_rows())
    assert per_model == expected_models(row["models (calls)"])
    expected_sessions = session_prefixes(row)
    assert sorted(s[: len(expected_sessions[0])] for s in sessions["session_id"]) == (
        expected_sessions
    )
    assert int(sessions["llm_calls"].sum()) == api_calls + echoed.height
    assert tables.issues.filter(pl.col("severity") == "error").height == 0


def _snapshot_pairs() -> list[object]:
    """Pairs of files of one directory where one is an earlier snapshot of the other (its
    lines a proper prefix of the other's), as a growing session file is copied."""
    root = REAL_LOGS / "claude-code"
    if not root.is_dir():
        reason = f"real claude-code logs not present at {root} (the shared/ folder is absent)"
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=reason), id="absent")]
    pairs: list[object] = []
    texts = {path: path.read_bytes() for path in sorted(root.rglob("*.jsonl"))}
    for earlier, head in texts.items():
        for later, text in texts.items():
            same_folder = later.parent == earlier.parent and later != earlier
            if same_folder and len(text) > len(head) and text.startswith(head):
                pairs.append(pytest.param(earlier, later, id=str(later.relative_to(root))))
    return pairs or [pytest.param(None, None, marks=pytest.mark.skip(reason="no snapshots"))]


@pytest.mark.parametrize(("earlier", "later"), _snapshot_pairs())
def test_a_snapshot_beside_its_later_copy_adds_nothing(earlier: Path, later: Path) -> None:
    """A request written into both files is one call: the pair folds as the later alone."""
    both = claude_code.read_files([earlier, later]).calls
    alone = claude_code.read_files([later]).calls
    columns = ["session_id", "api_call_id", "input_tokens", "output_tokens", "final_usage"]
    assert (
        both.select(columns).sort("api_call_id").equals(alone.select(columns).sort("api_call_id"))
    )
    assert both.height > 0
