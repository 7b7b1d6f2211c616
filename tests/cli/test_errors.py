"""Issue 21, item 1: what is not a log gets one line that says what it is and what to run.

Every case goes through the command line (``CliRunner``) with the exact message and exit code:
a missing or directory capture, a binary ``events.jsonl``, an SDK capture given to
``analyze``, a README, and a log of 0 bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analytics.agents.discover import sniff
from analytics.cli.commands import app

RUNNER = CliRunner()
NAME_A_LOG = "name an events.jsonl file, a session directory or a Copilot home"
#: One literal Copilot event line: a session's start.
START = json.dumps(
    {
        "type": "session.start",
        "id": "e1",
        "timestamp": "2026-08-03T10:00:00.000Z",
        "data": {"sessionId": "0a1b2c3d-0000-4000-8000-000000000001", "copilotVersion": "1.0.77"},
    }
)
#: An SDK capture as the SDK's spikes write it: one pretty-printed JSON document.
CAPTURE = json.dumps(
    {"sdkVersion": "0.1.32", "events": [{"type": "session.start", "data": {}}]}, indent=2
)


def run(*args: str) -> tuple[int, str, str]:
    result = RUNNER.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_capture_to_log_of_a_missing_file_is_one_line() -> None:
    code, out, err = run("capture-to-log", "/nonexist.json", "out")
    assert (code, out) == (2, "")
    assert err == (
        "agentcost: error: /nonexist.json: no such file or directory; "
        "name an SDK capture file (JSON with an 'events' array)\n"
    )


def test_capture_to_log_of_a_directory_is_one_line(tmp_path: Path) -> None:
    code, _, err = run("capture-to-log", str(tmp_path), str(tmp_path / "out"))
    assert code == 2
    assert err == (
        f"agentcost: error: {tmp_path}: a directory; "
        "name an SDK capture file (JSON with an 'events' array)\n"
    )


def test_a_binary_events_file_is_named_as_binary(tmp_path: Path) -> None:
    log = tmp_path / "s1" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40)
    code, out, err = run("analyze", str(log))
    assert (code, out) == (2, "")
    assert err == (
        f"agentcost: error: {log}: binary data, not a session log (JSON lines); {NAME_A_LOG}\n"
    )


def test_an_sdk_capture_given_to_analyze_points_to_capture_to_log(tmp_path: Path) -> None:
    capture = tmp_path / "spike-05-output.json"
    capture.write_text(CAPTURE, encoding="utf-8")
    code, _, err = run("analyze", str(capture))
    assert code == 2
    assert err == (
        f"agentcost: error: {capture}: an SDK capture, not a session log; convert it with "
        "agentcost capture-to-log FILE OUT, or measure it with agentcost validate FILE\n"
    )


def test_a_readme_is_text_not_a_log(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# agentcost\n\nTurns logs into money.\n\n    make run\n", encoding="utf-8")
    code, _, err = run("analyze", str(readme))
    assert code == 2
    assert err == (
        f"agentcost: error: {readme}: text, not a session log (JSON lines, one event per "
        f"line); {NAME_A_LOG}\n"
    )


def test_a_non_log_beside_logs_is_one_error_issue_and_one_line(tmp_path: Path) -> None:
    """With a readable log beside it, the non-log is counted as unreadable (an error issue),
    said in one line, and the report goes on."""
    readme = tmp_path / "README.md"
    readme.write_text("notes\n", encoding="utf-8")
    log = tmp_path / "s" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(START + "\n", encoding="utf-8")
    code, out, err = run("analyze", str(readme), str(log), "--format", "json")
    assert code == 0
    assert len(json.loads(out)["sessions"]) == 1
    assert err.splitlines()[0] == (
        f"agentcost: {readme}: text, not a session log (JSON lines, one event per line); "
        f"{NAME_A_LOG}"
    )
    code, out, _ = run("issues", str(readme), str(log), "--format", "json")
    rows = json.loads(out)["issues"]
    assert [(row["file"], row["severity"]) for row in rows] == [(str(readme), "error")]


def test_many_non_logs_are_named_three_and_counted(tmp_path: Path) -> None:
    """Five JSON-lines files that are no agent's log, in a tree beside a log: the first
    three named a line each, the other two counted in one line; each is still an issue."""
    readmes = [tmp_path / f"{n}-notes.jsonl" for n in range(5)]
    for readme in readmes:
        readme.write_text('{"note": "mine"}\n', encoding="utf-8")
    log = tmp_path / "s" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(START + "\n", encoding="utf-8")
    code, _, err = run("analyze", str(tmp_path), "--format", "json")
    assert code == 0
    lines = err.splitlines()
    named = [f"agentcost: {readme}: JSON lines, but not the session log" for readme in readmes[:3]]
    assert [line[: len(start)] for line, start in zip(lines, named, strict=False)] == named
    assert lines[3] == "agentcost: and 2 more files that are not a session log, or empty"
    assert lines[4].startswith("agentcost: 5 issues (5 errors, 0 warnings) in the input")
    code, out, _ = run("issues", str(tmp_path), "--format", "json")
    assert sorted(row["file"] for row in json.loads(out)["issues"]) == sorted(map(str, readmes))


def test_an_empty_log_says_it_is_empty(tmp_path: Path) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_bytes(b"")
    code, _, err = run("analyze", str(log))
    assert code == 0
    assert f"agentcost: {log}: the log is empty (0 bytes): no events in it yet" in err
    code, out, _ = run("issues", str(log))
    assert code == 0
    assert "no issues" not in out
    assert "the log is empty" in out


@pytest.mark.parametrize(
    "head",
    [
        (START + "\n").encode(),
        b"\xef\xbb\xbf" + (START + "\n").encode(),  # a byte order mark
        b"\x00" * 64 + (START + "\n").encode(),  # NUL bytes a crash left before a resume
        b"not json\n" + (START + "\n").encode(),  # a damaged first line
        (START[:40]).encode(),  # a log cut in its first line
        b"\n\n",  # blank lines: the scanner reports them
    ],
)
def test_logs_however_damaged_are_left_to_the_scanner(tmp_path: Path, head: bytes) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(head)
    assert sniff(log) is None
