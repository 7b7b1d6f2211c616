"""Every given Claude Code and Codex file through ``agentcost analyze FILE --calls --format
json`` equals its README facts row, per session and per model: calls, input, output, cache
read, cache writes (5-minute and 1-hour). The same facts as the fold's own tests
(``test_claude_code_facts``, ``test_codex_facts``), here through discovery, the core's
contracts, pricing and the JSON the user reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from tests.agents.claude_code.test_facts import (
    expected_models,
    session_prefixes,
    usage_facts,
    usage_figures,
)
from tests.agents.codex.test_facts import FINAL
from tests.readme_facts import empty, number, params


def calls_of(path: Path) -> pl.DataFrame:
    """The ``--calls`` JSON of one file, as a frame: the calls of that file's own lines (a
    Claude Code session file named alone brings its ``subagents/`` files too, whose calls
    their own facts rows count)."""
    result = CliRunner().invoke(app, ["--no-cache", "analyze", str(path), "--calls", "-f", "json"])
    assert result.exit_code == 0, result.output
    every: list[dict[str, Any]] = json.loads(result.stdout)["calls"]
    rows = [row for row in every if Path(row["source_file"]) == path]
    columns = ["session_id", "model", "agent", "input_tokens", "cache_read_tokens"]
    columns += ["cache_write_tokens", "cache_write_1h_tokens", "output_tokens", "reasoning_tokens"]
    return pl.DataFrame(
        [{c: row[c] for c in columns} for row in rows],
        schema={c: pl.String() if c in columns[:3] else pl.Int64() for c in columns},
    )


@pytest.mark.parametrize(("path", "row"), params("claude-code"))
def test_claude_code_file_through_analyze(path: Path, row: dict[str, str]) -> None:
    calls = calls_of(path)
    assert set(calls["agent"]) <= {"claude-code"}
    assert usage_figures(calls) == usage_facts(row)
    assert dict(calls.group_by("model").len().iter_rows()) == expected_models(row["models (calls)"])
    wanted = session_prefixes(row)
    assert {s[: len(wanted[0])] for s in calls["session_id"]} <= set(wanted)


@pytest.mark.parametrize(("path", "row"), params("codex"))
def test_codex_file_through_analyze(path: Path, row: dict[str, str]) -> None:
    calls = calls_of(path)
    assert set(calls["agent"]) <= {"codex"}
    _, with_info, unchanged, replayed = (
        number(n) for n in row["token_count / with info / unchanged / replayed"].split("/")
    )
    assert calls.height == with_info - unchanged - replayed
    _, _, ids = row["session_meta ids"].partition(":")
    prefixes = [p.strip(" `") for p in ids.split(",")]
    finals = [f.strip() for f in row[FINAL].split("‖")]
    for prefix, final in zip(prefixes, finals, strict=True):
        own = calls.filter(pl.col("session_id").str.starts_with(prefix))
        if empty(final):
            assert own.height == 0
            continue
        # the README's input includes cached input, as agentcost's input_tokens does
        got = [
            int(own[c].sum())
            for c in ("input_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens")
        ]
        assert [*got, got[0] + got[2]] == [number(n) for n in final.split("/")], prefix
