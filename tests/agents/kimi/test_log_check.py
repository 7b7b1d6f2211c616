"""Kimi's own check: each ``usage.record`` against the ``step.end`` that closes its step."""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.agents import kimi
from analytics.agents.kimi.log_check import log_check
from tests.agents.kimi.test_reader import META, TURN, A, lines, record, request, step_end, wire


@pytest.mark.parametrize(
    ("records", "agree", "disagree", "tokens", "checked"),
    [
        (TURN, 2, 0, 335, 335),  # the failed attempt's step.end has no usage: not paired
        ([META, request(1), record(2, A), step_end(3, {**A, "output": 11})], 0, 1, 160, 161),
        ([META, request(1), record(2, A)], 0, 1, 160, None),  # no step.end: nothing to check
    ],
)
def test_each_record_is_checked_against_its_step_end(
    tmp_path: Path,
    records: list[dict[str, object]],
    agree: int,
    disagree: int,
    tokens: int,
    checked: int | None,
) -> None:
    path = wire(tmp_path, "s", lines(records))
    row = log_check([str(path)], kimi.read_files([path]).calls).row(0, named=True)
    assert (row["agree"], row["disagree"]) == (agree, disagree)
    assert (row["tokens"], row["checked_tokens"]) == (tokens, checked)
