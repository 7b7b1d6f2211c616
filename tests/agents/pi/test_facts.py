"""Every pi session file of ``../shared/real_logs/pi`` folded alone equals its README facts
row (calls, calls with tokens, lines, tokens by kind, pi's logged cost, calls per model,
sessions, aborted calls); the whole folder folded together counts each call once (53, not
the 59 a per-file sum gives); and each session pi's own ``get_session_stats`` answered for
equals agentcost's sums over that session's calls.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from analytics.agents import pi
from tests.conftest import REAL_LOGS
from tests.readme_facts import number, params

FOLDER = REAL_LOGS / "pi"
CALLS = "lines / assistant / **API calls** (with tokens)"
_USAGE = re.compile(
    r"in ([\d,]+)\s+·\s+out ([\d,]+)\s+·\s+cr ([\d,]+)\s+·\s+cw ([\d,]+)\s+·\s+total ([\d,]+)"
)


def usage(text: str) -> list[int]:
    """in, out, cache read, cache write, total of a "usage over calls" cell or sentence."""
    match = _USAGE.search(text)
    assert match, text
    return [number(figure) for figure in match.groups()]


def figures(calls: pl.DataFrame) -> list[int]:
    """in (uncached), out, cache read, cache write, total of calls, as pi's log counts them."""
    read, write = int(calls["cache_read_tokens"].sum()), int(calls["cache_write_tokens"].sum())
    fed, out = int(calls["input_tokens"].sum()), int(calls["output_tokens"].sum())
    return [fed - read - write, out, read, write, fed + out]


def logged_cost(calls: pl.DataFrame) -> Decimal:
    """The sum of pi's own per-call estimates, exactly."""
    return sum((Decimal(cost) for cost in calls["logged_cost_usd"].drop_nulls()), Decimal(0))


@pytest.mark.parametrize(("path", "row"), params("pi"))
def test_file_equals_its_facts_row(path: Path, row: dict[str, str]) -> None:
    tables = pi.read_files([path])
    calls, sessions = tables.calls, tables.sessions
    lines, _, counted = row[CALLS].split("/")
    api_calls, with_tokens = re.match(r"\s*\*\*([\d,]+)\*\* \(([\d,]+)\)", counted).groups()  # type: ignore[union-attr]
    assert calls.height == number(api_calls)
    tokened = calls.filter((pl.col("input_tokens") + pl.col("output_tokens")) > 0)
    assert tokened.height == number(with_tokens)
    assert int(sessions["lines_read"].sum()) == number(lines)
    assert figures(calls) == usage(row["usage over calls"])
    assert round(logged_cost(calls), 6) == Decimal(row["cost logged"])
    models = Counter(
        {
            m.rsplit(" ", 1)[0]: number(m.rsplit(" ", 1)[1])
            for m in row["models (calls)"].split(", ")
        }
    )
    assert Counter(calls["model"].to_list()) == models
    count, _, ids = row["sessions"].partition(":")
    prefixes = [p.strip(" `") for p in ids.split(",")]
    assert sessions.height == number(count)
    assert all(any(s.startswith(p) for s in sessions["session_id"]) for p in prefixes)
    stops = dict(s.rsplit(" ", 1) for s in row["stopReason"].split(", "))
    assert int(calls["interrupted"].sum()) == number(stops.get("aborted", "0"))
    assert tables.issues.filter(pl.col("severity") == "error").height == 0


def _summary() -> str:
    readme = FOLDER / "README.md"
    if not readme.is_file():
        pytest.skip(f"real pi logs not present at {FOLDER} (the shared/ folder is absent)")
    text = readme.read_text(encoding="utf-8")
    start = text.index("**All ")
    return text[start : text.index("\n\n", start)]


def test_the_folder_counts_each_call_once() -> None:
    summary = _summary()
    per_file = number(re.search(r"([\d,]+) calls per file summed", summary).group(1))  # type: ignore[union-attr]
    unique = number(re.search(r"\*\*([\d,]+) calls\*\* \(", summary).group(1))  # type: ignore[union-attr]
    with_tokens = number(re.search(r"calls\*\* \(([\d,]+) with tokens", summary).group(1))  # type: ignore[union-attr]
    cost = Decimal(re.search(r"cost logged (\d+\.\d+)", summary).group(1))  # type: ignore[union-attr]
    files = [path for path, _ in params_paths()]
    calls = pi.read_files(files).calls
    assert sum(pi.read_files([file]).calls.height for file in files) == per_file
    assert calls.height == unique
    assert calls.filter(pl.col("output_tokens") > 0).height == with_tokens
    assert figures(calls) == usage(summary)
    assert round(logged_cost(calls), 8) == cost
    assert calls["api_call_id"].n_unique() == calls.height
    # discovery of the folder finds the same files (and none of the reference files)
    assert sorted(f for g in pi.discover([FOLDER]) for f in g) == sorted(files)


def params_paths() -> list[tuple[Path, dict[str, str]]]:
    from tests.readme_facts import facts_rows

    return facts_rows(FOLDER / "README.md")


def _stats() -> list[object]:
    answers = sorted(FOLDER.rglob("pi-session-stats.stdout.jsonl")) if FOLDER.is_dir() else []
    if not answers:
        reason = f"no pi get_session_stats answer under {FOLDER} (the shared/ folder is absent)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="absent")]
    return [pytest.param(path, id=path.parent.parent.parent.name) for path in answers]


@pytest.mark.parametrize("answer", _stats())
def test_sums_equal_pis_own_session_stats(answer: Path) -> None:
    """pi's ``get_session_stats`` RPC answer (its own totals of the session) equals the sums
    over the calls agentcost counts for that session, all the folder's files read together
    (the session's earlier snapshot among them)."""
    data = json.loads(answer.read_text(encoding="utf-8"))["data"]
    calls = pi.read([FOLDER]).calls.filter(pl.col("session_id") == data["sessionId"])
    tokens = data["tokens"]
    assert calls.height == data["assistantMessages"]
    expected = [tokens[k] for k in ("input", "output", "cacheRead", "cacheWrite", "total")]
    assert figures(calls) == expected
    # pi sums its per-call floats; agentcost sums the logged decimals exactly
    assert abs(logged_cost(calls) - Decimal(str(data["cost"]))) < Decimal("1e-12")
