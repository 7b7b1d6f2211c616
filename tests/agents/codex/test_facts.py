"""Every Codex rollout of ``../shared/real_logs/codex`` folded alone equals its README facts
row: per session, the sum of its calls' increments is its final ``total_token_usage`` (input,
cached input, output, reasoning output, and input + output is the total); the calls are the
``token_count`` lines with info less those that repeat the previous total or replay a
parent's; every call's model is one the rollout's ``turn_context`` lines name; lines read.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from analytics.agents import codex
from tests.readme_facts import empty, number, params

FINAL = "final total_token_usage per session: in / cached / out / reasoning / **total**"


@pytest.mark.parametrize(("path", "row"), params("codex"))
def test_file_equals_its_facts_row(path: Path, row: dict[str, str]) -> None:
    tables = codex.read_files([path])
    calls, sessions = tables.calls, tables.sessions
    token_counts, with_info, unchanged, replayed = (
        number(n) for n in row["token_count / with info / unchanged / replayed"].split("/")
    )
    assert calls.height == with_info - unchanged - replayed
    assert int(sessions["lines_read"].sum()) == number(row["lines"])
    assert token_counts >= with_info

    count, _, ids = row["session_meta ids"].partition(":")
    prefixes = [p.strip(" `") for p in ids.split(",")]
    finals = [f.strip() for f in row[FINAL].split("‖")]
    assert len(prefixes) == number(count) == len(finals) == sessions.height
    for prefix, final in zip(prefixes, finals, strict=True):
        (session_id,) = [s for s in sessions["session_id"] if s.startswith(prefix)]
        own = calls.filter(pl.col("session_id") == session_id)
        if empty(final):
            assert own.height == 0
            continue
        expected = [number(n) for n in final.split("/")]
        got = [
            int(own[column].sum())
            for column in ("input_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens")
        ]
        assert [*got, got[0] + got[2]] == expected, session_id

    turn_models = {
        part.strip().rsplit(" ", 1)[0] for part in row["models (turn_context lines)"].split(",")
    }
    assert set(calls["model"]) <= turn_models
    assert tables.issues.filter(pl.col("severity") == "error").height == 0
