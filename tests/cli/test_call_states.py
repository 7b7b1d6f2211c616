"""Issue 35: a call's two states, apart, through every command that shows them.

``interrupted``: the log shows the user or the CLI stopped the call (Claude Code's
``[Request interrupted by user]`` answering the request; Copilot's turn never closed).
``final_usage`` false: the log never states the call's final usage record (Claude Code
2.1.38/2.1.39 never do), so its output may be low. Sessions count them apart
(``interrupted_calls``, ``calls_without_final_usage``), the tables and ``top`` show them in
their own columns with a legend, and no per-state count exceeds the calls counted beside it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analytics.agents import claude_code
from analytics.cli.commands import app
from analytics.render.views import NO_FINAL_USAGE_LEGEND
from tests.agents.test_folds import reply, write
from tests.conftest import SAMPLE_LOGS

#: The spotter session whose sub-agent has a file of its own beside it (``subagents/``).
SPOTTER = (
    "claude-code/marot__spotter/test/fixtures/transcripts/8463c716-a2ea-4c14-9efa-87158ebd9f20"
)


def with_uuid(line: str, uuid: str) -> str:
    """``line`` (an assistant line of ``reply``) with its own ``uuid``."""
    return json.dumps({"uuid": uuid, **json.loads(line)})


def mark(uuid: str, parent: str, text: str) -> str:
    """A user line of session ``s1`` answering line ``parent`` with ``text``."""
    return json.dumps(
        {
            "type": "user",
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s1",
            "timestamp": "2026-05-01T10:00:08.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        }
    )


#: A session of three calls: m1 finished, m2 never stated its final usage (nobody stopped it),
#: m3 the user stopped with Esc while it streamed.
SESSION = [
    json.dumps(
        {
            "type": "user",
            "uuid": "u0",
            "sessionId": "s1",
            "timestamp": "2026-05-01T10:00:00.000Z",
            "message": {"role": "user", "content": "fix it"},
        }
    ),
    with_uuid(reply("s1", "m1", "tool_use", 40, 1), "a1"),
    with_uuid(reply("s1", "m2", None, 7, 2), "a2"),
    with_uuid(reply("s1", "m3", None, 2, 3), "a3"),
    mark("u3", "a3", "[Request interrupted by user]"),
]


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, ["--no-cache", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_the_two_states_are_counted_apart(tmp_path: Path) -> None:
    log = write(tmp_path / "p" / "s1.jsonl", SESSION)
    session = json.loads(run("analyze", str(log), "-f", "json").stdout)["sessions"][0]
    assert session["llm_calls"] == 3
    assert (session["interrupted_calls"], session["calls_without_final_usage"]) == (1, 2)
    calls = json.loads(run("analyze", str(log), "--calls", "-f", "json").stdout)["calls"]
    states = [(c["interrupted"], c["final_usage"]) for c in calls]
    assert states == [(False, True), (False, False), (True, False)]


def test_the_tables_show_them_in_their_own_columns(tmp_path: Path) -> None:
    log = str(write(tmp_path / "p" / "s1.jsonl", SESSION))
    table = run("analyze", log, "--wide").stdout
    header, *_ = table.splitlines()
    assert "INTERRUPTED" in header and "NO FINAL USAGE" in header
    assert " ".join(NO_FINAL_USAGE_LEGEND.split()) in " ".join(table.split())
    calls = run("analyze", log, "--calls", "--wide").stdout.splitlines()
    assert calls[0].rstrip().endswith("INTERRUPTED  NO FINAL USAGE")
    # m1 neither, m2 without its final usage record, m3 both
    assert [row.count(" yes") for row in calls[2:5]] == [0, 1, 2]


def test_top_shows_only_the_stopped_calls_cost_as_interrupted(tmp_path: Path) -> None:
    log = str(write(tmp_path / "p" / "s1.jsonl", SESSION))
    document = json.loads(run("top", log, "--rates", "anthropic", "-f", "json").stdout)
    calls = json.loads(run("analyze", log, "--calls", "--rates", "anthropic", "-f", "json").stdout)[
        "calls"
    ]
    (loop,) = document["behaviour"]
    assert (loop["llm_calls"], loop["interrupted_calls"], loop["calls_without_final_usage"]) == (
        3,
        1,
        2,
    )
    assert loop["interrupted_cost_usd"] == calls[2]["cost_usd"]
    table = run("top", log, "--rates", "anthropic", "--wide").stdout
    header = next(line for line in table.splitlines() if "PROMPTS" in line)
    assert header.rstrip().endswith("INTERRUPTED  INTERRUPTED USD  NO FINAL USAGE")


def test_copilot_tables_are_as_they_were() -> None:
    """Copilot's log has no final usage record to miss: no column for it."""
    table = run("analyze", str(SAMPLE_LOGS), "--wide").stdout
    assert "NO FINAL USAGE" not in table
    sessions = json.loads(run("analyze", str(SAMPLE_LOGS), "-f", "json").stdout)["sessions"]
    assert {s["calls_without_final_usage"] for s in sessions} == {None}


def test_no_per_state_count_exceeds_the_calls_in_any_real_log(real_logs: Path) -> None:
    """Over the whole tree of real logs: per session, and in ``top``'s agent loop."""
    sessions = json.loads(run("analyze", str(real_logs), "-f", "json").stdout)["sessions"]
    for s in sessions:
        assert s["interrupted_calls"] <= s["llm_calls"], s["session_id"]
        assert (s["calls_without_final_usage"] or 0) <= s["llm_calls"], s["session_id"]
    loops = json.loads(run("top", str(real_logs), "-f", "json").stdout)["behaviour"]
    for loop in loops:
        assert loop["interrupted_calls"] <= loop["llm_calls"], loop["session_id"]
        assert (loop["calls_without_final_usage"] or 0) <= loop["llm_calls"], loop["session_id"]


def test_only_the_calls_stopped_by_esc_are_interrupted_in_the_real_logs(real_logs: Path) -> None:
    """Of the Claude Code calls without a final usage record (every call of 2.1.38/2.1.39),
    only those a ``[Request interrupted by user]`` line answers are interrupted."""
    root = real_logs / "claude-code"
    calls = json.loads(run("analyze", str(root), "--calls", "-f", "json").stdout)["calls"]
    stopped = sorted(
        (Path(c["source_file"]).relative_to(root).parts[0], c["source_line"])
        for c in calls
        if c["interrupted"]
    )
    assert stopped == [
        ("codemie-ai__codemie-code", 147),
        ("ingo-eichhorst__Irrlicht", 7),
        ("ingo-eichhorst__Irrlicht", 7),
    ]
    assert all(not c["final_usage"] for c in calls if c["interrupted"])
    assert sum(not c["final_usage"] for c in calls) > 500


def test_a_session_without_its_sub_agent_files_counts_their_requests_once(
    real_logs: Path, tmp_path: Path
) -> None:
    """The spotter session alone (its ``subagents/`` folder not published): the sub-agent
    requests its ``agent_progress`` lines restate are counted once each and named in a
    warning; with the folder, they are the sub-agent file's calls and nothing more."""
    main = real_logs / f"{SPOTTER}.jsonl"
    if not main.is_file():
        pytest.skip(f"{main} is not in this copy of the real logs")
    alone = claude_code.read_files([shutil.copy(main, tmp_path / main.name)])
    whole = claude_code.read([main])
    own = whole.calls.filter(whole.calls["source_file"] == str(main)).height
    echoed = alone.calls.height - own
    assert echoed > 0
    assert alone.calls.filter(alone.calls["kind"] == "subagent").height == echoed
    (warning,) = alone.issues.filter(alone.issues["message"].str.contains("agent_progress")).rows(
        named=True
    )
    assert warning["severity"] == "warning"
    assert warning["message"].startswith(f"{echoed} sub-agent request(s) of session 8463c716")
    assert warning["message"].count("req_") == echoed
    assert not whole.issues["message"].str.contains("agent_progress").any()
    sub_agent_files = whole.calls.filter(whole.calls["source_file"] != str(main))
    echoed_ids = set(alone.calls.filter(alone.calls["kind"] == "subagent")["api_call_id"])
    assert echoed_ids <= set(sub_agent_files["api_call_id"])


def test_a_cut_off_last_line_that_held_a_calls_only_usage_says_so(
    real_logs: Path, tmp_path: Path
) -> None:
    """The sub-agent file's last line is the only line of its sixth request: cut off (a copy
    taken while it was written), the call is lost, 6 -> 5, and the line's issue says so."""
    name = (
        "claude-code/codemie-ai__codemie-code/tests/integration/session/fixtures/claude/"
        "incremental-subagents/turn-1/subagents/agent-a485154.jsonl"
    )
    source = real_logs / name
    if not source.is_file():
        pytest.skip(f"{source} is not in this copy of the real logs")
    text = source.read_bytes().rstrip(b"\n")
    last = text.rfind(b"\n") + 1
    cut = write(tmp_path / "agent-a485154.jsonl", [])
    cut.write_bytes(text[: last + (len(text) - last) // 2])
    assert claude_code.read_files([source]).calls.height == 6
    tables = claude_code.read_files([cut])
    assert tables.calls.height == 5
    (issue,) = tables.issues.rows(named=True)
    assert issue["line"] == 44
    assert "(truncated line?)" in issue["message"]
    assert issue["message"].endswith(
        "it held the only usage line of request msg_bdrk_013gjSCF7qukP68JWNcoHug1: that call "
        "is not counted"
    )
