"""Golden tests on the real Copilot logs in ``../shared/real_logs`` (see its README).

The figures asserted here are the acceptance figures: each was checked by hand against the
log's own shutdown totals or the matching ``session-store.db`` rows. The ``--format json``
output of ``agentcost analyze`` for each log is also compared with a reviewed snapshot in
``tests/snapshots/real/<path, / as __>.json``: the columns of Copilot's sessions
(``PASS_SESSIONS``) and the issues, with the file's folder replaced by ``<dir>``. Cost columns
are left out: they depend on the rate table and are pinned by the pricing tests.

To regenerate the snapshots after an intended change, run::

    .venv/bin/python tests/agents/copilot/test_real_logs.py

(``... tests/agents/copilot/test_real_logs.py table`` prints the docs' table of every real log,
``docs/agents/copilot.md``.)

then review the diff (``git diff tests/snapshots``) before committing it. Tests never write them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from analytics.agents.copilot.tables import PASS_SESSIONS
from analytics.cli.commands import app
from analytics.engine.analyze import Analysis, analyze
from tests.conftest import REAL_LOGS, REPO, SNAPSHOTS

DEFAULT_REAL_LOGS = REAL_LOGS

SDK = "darthmolen-sdk-wire-usage-excerpts"
#: snapshot name -> the path (relative to real_logs) given to ``agentcost analyze``
TARGETS = {
    "qiaolei81-session-demo": "qiaolei81-session-demo",
    "qiaolei81-session-medium": "qiaolei81-session-medium",
    "session-bench-excerpt": "session-bench-copilot-2026-10-04-01-excerpt",
    "aiusage-core-1.0.80": "aiusage-core-session-store-1.0.80",
    "darthmolen-spike-01": f"{SDK}/spike-01-single-agent.usage-excerpt.jsonl",
    "darthmolen-spike-07": f"{SDK}/spike-07-fleet-subagents.usage-excerpt.jsonl",
}


def session_of(real_logs: Path, name: str) -> tuple[dict[str, Any], Analysis]:
    result = analyze([real_logs / TARGETS[name]])
    assert result.sessions.height == 1
    return result.session_view.row(0, named=True), result


def test_qiaolei81_session_demo(real_logs: Path) -> None:
    """3 turn pairs but 5 LLM calls: 2 come from the explore sub-agent's messages."""
    row, result = session_of(real_logs, "qiaolei81-session-demo")
    assert (row["llm_calls"], row["main_calls"], row["subagent_calls"]) == (5, 3, 2)
    assert row["shutdown_requests"] == 5
    assert row["calls_agree"] is True
    assert row["output_tokens"] == 747 == 521 + 226
    assert row["input_tokens"] == 98_716 == 81_666 + 17_050
    assert row["cache_read_tokens"] == 68_028
    assert row["cache_write_tokens"] == 30_663
    assert row["billed_nano_aiu"] == "21893915000"
    sub = result.calls.filter(pl.col("kind") == "subagent")
    assert sub["model"].to_list() == ["claude-haiku-4.5"] * 2
    assert sub["agent_name"].to_list() == ["explore"] * 2
    assert sub["output_tokens"].sum() == 226
    assert result.calls.filter(pl.col("kind") == "main")["output_tokens"].sum() == 521
    assert result.issues.height == 0


def test_aiusage_core_three_processes(real_logs: Path) -> None:
    """45 calls = the 45 session-store rows; the bill is the last cumulative total."""
    row, result = session_of(real_logs, "aiusage-core-1.0.80")
    assert (row["llm_calls"], row["main_calls"], row["subagent_calls"]) == (45, 40, 5)
    assert row["interrupted_calls"] == 1
    assert (row["processes"], row["shutdowns"], row["shutdown_mode"]) == (3, 3, "cumulative")
    assert row["billed_nano_aiu"] == "18913170000"
    by_model = dict(result.calls.group_by("model").len().iter_rows())
    assert by_model == {"claude-haiku-4.5": 19, "gpt-5-mini": 26}
    last = result.calls.filter(pl.col("call_index") == 45).row(0, named=True)
    assert (last["kind"], last["interrupted"]) == ("main", True)


def test_qiaolei81_session_medium(real_logs: Path) -> None:
    row, _ = session_of(real_logs, "qiaolei81-session-medium")
    assert (row["llm_calls"], row["shutdown_requests"], row["calls_agree"]) == (2, 2, True)
    assert (row["input_tokens"], row["output_tokens"]) == (48_243, 414)
    assert row["input_tokens"] == 4 + row["cache_read_tokens"] + row["cache_write_tokens"]


def test_session_bench_excerpt(real_logs: Path) -> None:
    """The excerpt drops the middle of the file: its first turn_end has no start left, and
    the shutdown's stated file size (152,607 bytes) shows the 141,463 bytes that are gone."""
    row, result = session_of(real_logs, "session-bench-excerpt")
    orphan, gap = result.issues.rows(named=True)
    assert orphan["file"].endswith("session-bench-copilot-2026-10-04-01-excerpt/events.jsonl")
    assert orphan["line"] == 5
    assert "turn_end" in orphan["message"]
    assert gap["line"] == 10
    assert gap["message"].startswith("141463 bytes of the session's log are missing")
    assert (row["shutdown_requests"], row["calls_checked"]) == (7, 1)
    assert (row["calls_agree"], row["calls_delta"]) == (False, -6)
    assert row["calls_delta_reason"].startswith("lines missing from the log")
    assert row["models"] == ["gpt-6-luna"]
    assert row["shutdown_mode"] == "cumulative"
    assert (row["input_tokens"], row["output_tokens"], row["reasoning_tokens"]) == (
        98_270,
        676,
        153,
    )


@pytest.mark.parametrize(
    ("name", "calls", "main", "sub"),
    [("darthmolen-spike-07", 57, 5, 52), ("darthmolen-spike-01", 5, 5, 0)],
)
def test_sdk_wire_captures(real_logs: Path, name: str, calls: int, main: int, sub: int) -> None:
    row, result = session_of(real_logs, name)
    assert (row["llm_calls"], row["main_calls"], row["subagent_calls"]) == (calls, main, sub)
    assert row["logged_input_tokens"] is None  # no shutdown: the log states none, never 0
    # the session's input is its calls' own usage (assistant.usage: observed)
    assert row["input_tokens"] == result.calls["input_tokens"].sum() > 0
    assert result.calls["token_source"].unique().to_list() == ["observed"]


# --- every file through the CLI, and the snapshots -----------------------------------------
# Driven by the folder: every ``*.jsonl`` in it is a case, whatever their number. A file
# without a reviewed snapshot (new data) is still checked for reconciliation; its snapshot
# test skips, saying how to write one. A file of an agent agentcost does not read yet (as
# discovery tells it) skips, naming what discovery says of it.

FILES = sorted(REAL_LOGS.rglob("*.jsonl")) if REAL_LOGS.is_dir() else []
#: A snapshot's file name at most (most file systems allow 255 bytes).
LONGEST_NAME = 200


def _relative(path: Path) -> str:
    return str(path.relative_to(REAL_LOGS))


def snapshot_path(relative: str) -> Path:
    """Where the reviewed snapshot of one real log file is kept: its path with ``/`` as
    ``__``; a name too long for a file system keeps its end and a digest of the whole path."""
    name = relative.replace("/", "__") + ".json"
    if len(name.encode()) > LONGEST_NAME:
        digest = hashlib.sha256(relative.encode()).hexdigest()[:16]
        name = f"{digest}__{name[-(LONGEST_NAME - len(digest) - 2) :]}"
    return SNAPSHOTS / "real" / name


def read_by_agentcost(path: Path) -> None:
    """Skip, saying why, unless ``path`` is a log of an agent agentcost reads."""
    from analytics.core.errors import InputError
    from analytics.engine.inputs import discover

    try:
        found = discover([path])
    except InputError as error:  # a file that is no log of an agent agentcost reads
        pytest.skip(f"not read by agentcost: {error}")
    if not found.logs and not found.agent_logs:
        pytest.skip(f"not read by agentcost: {path}: {found.problems or found.not_logs}")


def analyze_json(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["analyze", str(path), "--format", "json"])
    assert result.exit_code == 0, (path, result.output)
    document: dict[str, Any] = json.loads(result.stdout)
    return document


@pytest.mark.parametrize("relative", [_relative(f) for f in FILES] or ["<none>"])
def test_every_session_reconciles_or_names_the_difference(real_logs: Path, relative: str) -> None:
    """Calls equal the shutdown's requests, or ``calls_delta_reason`` names why not."""
    read_by_agentcost(real_logs / relative)
    sessions = analyze_json(real_logs / relative)["sessions"]
    assert sessions
    for row in sessions:
        if row["shutdown_requests"] is not None and not row["calls_agree"]:
            assert row["calls_delta_reason"], (relative, row["session_id"])


def render(path: Path) -> str:
    """The snapshot text: ``analyze --format json`` with the real_logs path made relative."""
    result = CliRunner().invoke(app, ["analyze", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout.replace(str(path.parent), "<dir>"))
    sessions = [
        {k: v for k, v in row.items() if k in PASS_SESSIONS} for row in document["sessions"]
    ]
    facts = {"sessions": sessions, "issues": document["issues"]}
    return json.dumps(facts, indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("relative", [_relative(f) for f in FILES] or ["<none>"])
def test_snapshot(real_logs: Path, relative: str) -> None:
    read_by_agentcost(real_logs / relative)
    snapshot = snapshot_path(relative)
    if not snapshot.is_file():
        pytest.skip(f"no reviewed snapshot for {relative}; see this module's docstring")
    assert render(real_logs / relative) == snapshot.read_text()


def regenerate(real_logs: Path = DEFAULT_REAL_LOGS) -> None:
    """Rewrite every snapshot from the current code (run by hand, then review the diff)."""
    for path in sorted(real_logs.rglob("*.jsonl")):
        target = snapshot_path(str(path.relative_to(real_logs)))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(path))
        print(f"wrote {target}", file=sys.stderr)


def test_a_priced_model_with_unknown_tokens_is_not_called_unpriced(real_logs: Path) -> None:
    """The scrubbed 1.0.80 log has no output tokens, so its calls have no cost; their models
    are priced, so they are named as unknown tokens, and only gpt-6-luna as unpriced."""
    result = CliRunner().invoke(app, ["analyze", str(real_logs)])
    assert result.exit_code == 0, result.output
    rows = {line[:8]: line for line in result.stdout.splitlines()}
    assert "unknown tokens" in rows["aiusage-"]
    assert "unpriced" not in rows["aiusage-"]
    assert "unpriced (gpt-6-luna)" in rows["7c34d7cd"]
    document = CliRunner().invoke(app, ["analyze", str(real_logs), "-f", "json"]).stdout
    sessions = json.loads(document)["sessions"]
    unpriced = {s["session_id"][:12]: s["unpriced_models"] for s in sessions}
    assert unpriced["aiusage-core"] == [] and unpriced["7c34d7cd-639"] == ["gpt-6-luna"]


# --- the docs' table of every real log (docs/agents/copilot.md) -------------------------------

PAGE = REPO / "docs" / "agents" / "copilot.md"
TABLE_START = "<!-- real-logs-table: start -->"
TABLE_END = "<!-- real-logs-table: end -->"


def _usd(value: str | None) -> str:
    """A decimal-string amount as the table shows it: exact, without trailing zeros."""
    if value is None:
        return "—"
    text = value.rstrip("0").rstrip(".") if "." in value else value
    return f"${text}"


def table_rows(path: Path, relative: str) -> list[str]:
    """The table rows of one real log file: one per session it holds."""
    rows = []
    for s in analyze_json(path)["sessions"]:
        requests = "—" if s["shutdown_requests"] is None else str(s["shutdown_requests"])
        agree = "—" if s["calls_agree"] is None else ("yes" if s["calls_agree"] else "no")
        reason = (s["calls_delta_reason"] or "").split(":")[0]
        billed, cost = s["billed_usd"], s["cost_usd"]
        equal = "—" if billed is None or cost is None else ("yes" if billed == cost else "no")
        rows.append(
            "| "
            + " | ".join(
                [
                    f"`{relative}`",
                    s["session_id"][:8],
                    s["copilot_version"] or "—",
                    f"{s['llm_calls']} ({s['main_calls']}+{s['subagent_calls']}"
                    f"+{s['compaction_calls']})",
                    str(s["failed_calls"]),
                    requests,
                    agree + (f": {reason}" if reason else ""),
                    _usd(billed),
                    _usd(cost),
                    equal,
                    s["cost_source"] or "—",
                ]
            )
            + " |"
        )
    return rows


def readme_rows(real_logs: Path) -> dict[str, list[str]]:
    """The table rows the page holds, by file (for the files present here)."""
    text = PAGE.read_text()
    table = text[text.index(TABLE_START) : text.index(TABLE_END)]
    found: dict[str, list[str]] = {}
    for line in table.splitlines():
        if line.startswith("| `"):
            found.setdefault(line.split("`")[1], []).append(line)
    return found


#: The Copilot logs: the page's file-by-file table is theirs (the other agents' files are
#: checked against their own facts tables: test_claude_code_facts, test_codex_facts).
COPILOT_FILES = [f for f in FILES if _relative(f).split("/")[0] not in ("claude-code", "codex")]


@pytest.mark.parametrize("relative", [_relative(f) for f in COPILOT_FILES] or ["<none>"])
def test_the_docs_table_tells_the_truth(real_logs: Path, relative: str) -> None:
    """Each row of the page is what ``agentcost analyze FILE`` prints now (files present here)."""
    read_by_agentcost(real_logs / relative)
    written = readme_rows(real_logs).get(relative)
    if written is None:
        pytest.skip(f"{relative} is not in the page's table (new data)")
    assert written == table_rows(real_logs / relative, relative)


def print_table(real_logs: Path = DEFAULT_REAL_LOGS) -> None:
    """Print the page's table from the current code (paste it between the markers)."""
    print(
        "| file | session | CLI | calls (main+sub+compaction) | failed | shutdown requests "
        "| agree | billed | cost (github-copilot) | cost = bill | cost_source |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(real_logs.rglob("*.jsonl")):
        for row in table_rows(path, str(path.relative_to(real_logs))):
            print(row)


if __name__ == "__main__":
    if sys.argv[1:] == ["table"]:
        print_table()
    else:
        regenerate()
