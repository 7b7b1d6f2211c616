"""Hypothesis properties of the Claude Code and Codex readers beside those of
``test_agent_folds``: a Codex line written twice, or a session's lines copied into a resumed
file, changes no figure; and for both agents, cost is additive over sessions and days (the
sessions' costs and the periods' costs are the calls' exact sum)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.agents import claude_code, codex
from analytics.agents.contract import core_tables
from analytics.core.periods import period_report
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rates
from tests.agents.test_folds import claude_session, figures, meta, requests, token_count, write

increments = st.lists(st.tuples(st.integers(1, 999), st.integers(0, 99)), min_size=1, max_size=6)


def rollout(steps: list[tuple[int, int]], start_second: int = 0) -> list[str]:
    """A Codex session ``s`` whose running total grows by ``steps`` (input, output), one
    token_count a call, ``start_second`` s after 10:00 and an hour apart."""
    lines = [meta("s", "2026-05-01T10:00:00.000Z")]
    total = (0, 0)
    for k, (i, o) in enumerate(steps):
        total = (total[0] + i, total[1] + o)
        lines.append(token_count(start_second + 3600 * k + 1, total, (i, o)))
    return lines


@settings(max_examples=30, deadline=None)
@given(steps=increments, twice=st.integers(0, 100), cut=st.integers(0, 100))
def test_codex_copies_change_no_figure(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[int, int]], twice: int, cut: int
) -> None:
    root = tmp_path_factory.mktemp("codex")
    lines = rollout(steps)
    expected = figures(codex.read_files([write(root / "a" / "r.jsonl", lines)]))
    assert expected["s"][0] == len(steps)
    at = twice % len(lines)
    doubled = [*lines[: at + 1], *lines[at:]]
    assert figures(codex.read_files([write(root / "b" / "r.jsonl", doubled)])) == expected
    resumed = [
        write(root / "c" / "r.jsonl", lines),
        write(root / "c" / "archived.jsonl", lines[: cut % len(lines) + 1]),
    ]
    assert figures(codex.read_files(resumed)) == expected


@settings(max_examples=20, deadline=None)
@given(claude=requests, steps=increments)
def test_cost_is_additive_over_sessions_and_days(
    tmp_path_factory: pytest.TempPathFactory,
    claude: list[tuple[int, int, bool]],
    steps: list[tuple[int, int]],
) -> None:
    root = tmp_path_factory.mktemp("agents")
    folded = [
        claude_code.read_files([write(root / "claude" / "s1.jsonl", claude_session(claude))]),
        codex.read_files([write(root / "codex" / "r.jsonl", rollout(steps))]),
    ]
    table = load_rates("github-copilot")
    for tables in folded:
        calls, sessions, _, _ = core_tables(tables)
        priced, costed = price_analysis(calls, sessions, table)
        every_call = sum((c for c in priced["cost_usd"] if c is not None), Decimal(0))
        assert sum(costed["cost_usd"].drop_nulls(), Decimal(0)) == every_call
        days = period_report(priced, costed, period="day", zone=ZoneInfo("UTC"))
        assert sum(days.rows["cost_usd"].drop_nulls(), Decimal(0)) == every_call
        assert (days.totals["cost_usd"].item() or Decimal(0)) == every_call


def test_rollout_builder_spreads_calls_over_days(tmp_path: Path) -> None:
    """The cost property covers several days: calls an hour apart cross midnight."""
    tables = codex.read_files([write(tmp_path / "r.jsonl", rollout([(1, 1)] * 20))])
    days = {t.date() for t in tables.calls["start_time"]}
    assert len(days) == 2
