"""``agentcost validate`` on Claude Code and Codex logs (issue 35): the reconstruction's
``CLAUDE CODE totals`` rows, and each log's usage checked against what it says twice
(``analytics/engine/log_checks.py``): literal lines, then every real log of the two agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.agents.checks import read_lines
from analytics.agents.claude_code.log_check import check as claude_code_check
from analytics.agents.codex.log_check import check as codex_check
from analytics.cli import app


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _assistant(
    message: str, request: str | None, second: int, output: int, *, final: bool = True
) -> dict[str, Any]:
    """A streamed line of request (``message``, ``request``): 5 uncached input tokens, 995
    read from cache and ``output`` so far (``final``: it carries the stop reason)."""
    line: dict[str, Any] = {
        "type": "assistant", "uuid": f"{message}-{second}", "sessionId": "cc-1",
        "timestamp": f"2026-05-01T10:00:{second:02d}Z",
        "message": {"id": message, "model": "claude-sonnet-4-6",
                    "stop_reason": "end_turn" if final else None,
                    "content": [{"type": "text", "text": "x" * 40}],
                    "usage": {"input_tokens": 5, "cache_read_input_tokens": 995,
                              "cache_creation_input_tokens": 0, "output_tokens": output}},
    }  # fmt: skip
    if request:
        line["requestId"] = request
    return line


def _user(second: int) -> dict[str, Any]:
    return {"type": "user", "uuid": f"u{second}", "sessionId": "cc-1",
            "timestamp": f"2026-05-01T10:00:{second:02d}Z",
            "message": {"role": "user", "content": "go on " * 50}}  # fmt: skip


#: Three requests: m1 streamed as three lines (output 10, 20, then the final 50), m2 in one
#: line without a ``requestId`` (as Bedrock writes it), m3 in two lines; a ``<synthetic>``
#: reply that is no request.
CLAUDE = [
    _user(0),
    _assistant("m1", "r1", 1, 10, final=False),
    _assistant("m1", "r1", 2, 20, final=False),
    _assistant("m1", "r1", 3, 50),
    _user(4),
    _assistant("m2", None, 5, 7),
    _user(6),
    _assistant("m3", "r3", 7, 3, final=False),
    _assistant("m3", "r3", 8, 9),
    {"type": "assistant", "sessionId": "cc-1", "uuid": "s", "timestamp": "2026-05-01T10:00:09Z",
     "message": {"id": "syn", "model": "<synthetic>", "usage": {"input_tokens": 0,
                                                               "output_tokens": 0}}},
]  # fmt: skip


def _claude_calls(output: list[int]) -> pl.DataFrame:
    """The calls a fold would give for ``CLAUDE`` in ``path`` (each request at its last
    line), with ``output`` tokens."""
    return pl.DataFrame(
        {
            "source_line": [4, 6, 9],
            "input_tokens": [1000, 1000, 1000],
            "output_tokens": output,
        }
    )


def test_each_claude_code_request_agrees_with_its_last_streamed_line(tmp_path: Path) -> None:
    path = str(_write(tmp_path / "p" / "cc-1.jsonl", CLAUDE))
    lines = read_lines([path], '"usage"')
    calls = _claude_calls([50, 7, 9]).with_columns(pl.lit(path).alias("source_file"))
    row = claude_code_check(lines, calls).row(0, named=True)
    assert row["check"] == "CLAUDE CODE usage"
    assert (row["sessions"], row["calls"], row["agree"], row["disagree"]) == (1, 3, 3, 0)
    assert (row["usage_lines"], row["repeated_lines"]) == (6, 3)  # 3 streamed copies
    assert row["tokens"] == row["checked_tokens"] == 3000 + 50 + 7 + 9


def test_a_call_with_a_streamed_copys_partial_usage_disagrees(tmp_path: Path) -> None:
    path = str(_write(tmp_path / "p" / "cc-1.jsonl", CLAUDE))
    lines = read_lines([path], '"usage"')
    # m1 counted at its first line's 10 output tokens, and m3 counted twice
    calls = pl.DataFrame(
        {
            "source_file": [path] * 4,
            "source_line": [2, 6, 8, 9],
            "input_tokens": [1000] * 4,
            "output_tokens": [10, 7, 3, 9],
        }
    )
    row = claude_code_check(lines, calls).row(0, named=True)
    assert (row["calls"], row["agree"], row["disagree"]) == (4, 1, 2)
    assert row["tokens"] == 4000 + 29 and row["checked_tokens"] == 3000 + 66


def _meta(session: str, second: int) -> dict[str, Any]:
    return {"timestamp": f"2026-05-01T10:00:{second:02d}Z", "type": "session_meta",
            "payload": {"id": session, "cwd": "/repo", "cli_version": "0.130.0"}}  # fmt: skip


#: (input, cached input, output) tokens.
Figures = tuple[int, int, int]


def _tokens(second: int, total: Figures | None, last: Figures) -> dict[str, Any]:
    """A token_count: (input, cached, output) running ``total`` and ``last`` turn."""

    def usage(figures: Figures) -> dict[str, int]:
        inp, cached, out = figures
        return {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
                "reasoning_output_tokens": 0, "total_tokens": inp + out}  # fmt: skip

    info = None if total is None else {"total_token_usage": usage(total),
                                       "last_token_usage": usage(last)}  # fmt: skip
    return {"timestamp": f"2026-05-01T10:00:{second:02d}Z", "type": "event_msg",
            "payload": {"type": "token_count", "info": info}}  # fmt: skip


#: Session a: a null info, two turns, the second total written again; session b (a new
#: header in the same file, totals from 0) whose second turn's last_token_usage is the
#: running total itself (as a real codex_cli 0.125.0 rollout writes it).
CODEX = [
    _meta("a", 0),
    _tokens(1, None, (0, 0, 0)),
    _tokens(2, (1000, 800, 50), (1000, 800, 50)),
    _tokens(3, (2100, 1800, 80), (1100, 1000, 30)),
    _tokens(4, (2100, 1800, 80), (1100, 1000, 30)),
    _meta("b", 5),
    _tokens(6, (500, 0, 20), (500, 0, 20)),
    _tokens(7, (900, 0, 60), (900, 0, 60)),
]


def test_codex_running_totals_against_each_turns_last_usage(tmp_path: Path) -> None:
    path = str(_write(tmp_path / "rollout-a.jsonl", CODEX))
    lines = read_lines([path], "session_meta", "token_count")
    row = codex_check(lines).row(0, named=True)
    assert row["check"] == "CODEX totals"
    assert (row["sessions"], row["calls"], row["agree"], row["disagree"]) == (2, 4, 3, 1)
    assert (row["usage_lines"], row["repeated_lines"]) == (5, 1)
    assert row["tokens"] == 2180 + 960  # each session's last total
    assert row["checked_tokens"] == 1050 + 1130 + 520 + 960  # Σ last_token_usage


def _validate(*paths: Path) -> dict[str, Any]:
    result = CliRunner().invoke(
        app, ["validate", *map(str, paths), "--format", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_validate_measures_and_checks_claude_code_logs(tmp_path: Path) -> None:
    # before: "nothing to validate against" (the command read no Claude Code content)
    report = _validate(_write(tmp_path / "p" / "cc-1.jsonl", CLAUDE))
    rows = {row["session_id"]: row for row in report["sessions"]}
    assert rows["CLAUDE CODE totals"]["calls"] == 3
    assert rows["CLAUDE CODE no totals"]["calls"] == 3
    assert "ALL" not in rows  # no Copilot call was measured: no empty Copilot row
    [check] = report["log_checks"]
    assert (check["check"], check["calls"], check["agree"], check["disagree"]) == (
        "CLAUDE CODE usage", 3, 3, 0
    )  # fmt: skip


def test_validate_checks_codex_totals_and_reconstructs_no_codex_call(tmp_path: Path) -> None:
    # before: "nothing to validate against"; Codex calls are not fed to the Copilot model
    report = _validate(_write(tmp_path / "rollout-a.jsonl", CODEX))
    assert [row["session_id"] for row in report["sessions"]] == ["ALL"]
    assert report["sessions"][0]["calls"] == 0
    [check] = report["log_checks"]
    assert (check["check"], check["calls"], check["disagree"]) == ("CODEX totals", 4, 1)
    table = CliRunner().invoke(app, ["validate", str(tmp_path)], env={"COLUMNS": "80"})
    assert "CODEX totals" in table.stdout and "nothing to validate" not in table.stdout


def test_the_rows_hold_on_every_real_claude_code_and_codex_log(real_logs: Path) -> None:
    """Every request of the real Claude Code logs agrees with its last line; the Codex
    check counts the calls agentcost counts, and disagrees exactly where the fold warns
    that a running total moved by other figures than ``last_token_usage``."""
    claude, codex = real_logs / "claude-code", real_logs / "codex"
    report = _validate(claude, codex)
    checks = {row["check"]: row for row in report["log_checks"]}
    analysed = CliRunner().invoke(
        app, ["analyze", str(claude), str(codex), "--format", "json", "--calls"]
    )
    agents = [call["agent"] for call in json.loads(analysed.stdout)["calls"]]
    by_agent = {agent: agents.count(agent) for agent in set(agents)}
    usage = checks["CLAUDE CODE usage"]
    assert usage["calls"] == usage["agree"] == by_agent["claude-code"]
    assert usage["disagree"] == 0 and usage["tokens"] == usage["checked_tokens"]
    totals = checks["CODEX totals"]
    assert totals["calls"] == by_agent["codex"]
    warned = [i for i in report["issues"] if "than last_token_usage" in i["message"]]
    assert totals["disagree"] == len(warned)
    names = {row["session_id"] for row in report["sessions"]}
    assert {"CLAUDE CODE totals", "CLAUDE CODE no totals"} <= names


_turn = st.tuples(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(0, 10**5)).map(
    lambda t: (t[0] + t[1], t[1], t[2])
)  # (input with cached, cached, output)


@settings(max_examples=50, deadline=None)
@given(
    sessions=st.lists(st.lists(_turn, min_size=1, max_size=6), min_size=1, max_size=3),
    repeats=st.lists(st.booleans(), min_size=18, max_size=18),
)
def test_consistent_running_totals_always_agree(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[list[Figures]], repeats: list[bool]
) -> None:
    """Whatever the turns, a rollout whose totals are the running sums of its turns' usage
    agrees on every call, a total written again is no call, and each session's last total
    is the sum of its turns'."""
    lines: list[dict[str, Any]] = []
    flags = iter(repeats)
    for number, turns in enumerate(sessions):
        lines.append(_meta(f"s{number}", 0))
        total = (0, 0, 0)
        for turn in turns:
            total = (total[0] + turn[0], total[1] + turn[1], total[2] + turn[2])
            lines += [_tokens(1, total, turn)] * (2 if next(flags) else 1)
    path = str(_write(tmp_path_factory.mktemp("codex") / "rollout.jsonl", lines))
    row = codex_check(read_lines([path], "session_meta", "token_count")).row(0, named=True)
    turns = sum(len(turns) for turns in sessions)
    assert (row["sessions"], row["calls"], row["agree"]) == (len(sessions), turns, turns)
    assert row["repeated_lines"] == len(lines) - len(sessions) - turns
    assert (
        row["tokens"]
        == row["checked_tokens"]
        == sum(t[0] + t[2] for turns in sessions for t in turns)
    )
