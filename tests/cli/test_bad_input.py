"""Issue 35, bad input: what agentcost says of input it cannot use, on literal trees.

A directory with no log in it (empty, or holding other files) is exit 2 with one line, as
the README says; a dangling symlink is an issue (or, named, one line); a file that cannot be
read is one line in agentcost's words (no ``[Errno 13]``, no click box), whichever agent
wrote it; an SDK capture that keeps its events under ``allEvents`` (the darthmolen spike-01
and spike-07-first-run captures do) is read by ``validate`` and ``capture-to-log``.

Root reads a ``chmod 000`` file anyway: the unreadable-file cases either make ``os.access``
say no (the check click and ``discover`` make on a named path), or run the command in a
subprocess that cannot override file permissions (``setpriv`` dropping root's
``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH``; as another user, ``chmod 000`` alone).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from analytics.agents.discover import discover
from analytics.cli.commands import app
from analytics.core import registry
from analytics.core.errors import InputError
from tests.cli.test_analyze import write_session
from tests.conftest import REPO

RUNNER = CliRunner()
NOTHING_HERE = "no session log here (no Copilot events.jsonl or <sessionId>.jsonl"


def claude_line(n: int, stamp: str) -> str:
    """One literal Claude Code line: assistant reply ``n`` at ``stamp``, with its usage."""
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": "c1",
            "uuid": f"u{n}",
            "timestamp": stamp,
            "requestId": f"req_{n}",
            "message": {
                "id": f"msg_{n}",
                "model": "claude-sonnet-4-5",
                "role": "assistant",
                "usage": {"input_tokens": 10 * n, "output_tokens": 2},
                "content": [{"type": "text", "text": "ok"}],
            },
        }
    )


def run(*args: str | Path) -> Result:
    return RUNNER.invoke(app, [str(arg) for arg in args])


def one_error_line(result: Result) -> str:
    """The one line of an exit-2 failure, after checking it is one line and nothing else."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentcost: error: ")
    return lines[0]


# --- a directory with no log ---


@pytest.mark.parametrize("layout", ["empty", "a-readme", "empty-session-state"])
def test_a_directory_without_a_log_is_exit_2_with_one_line(tmp_path: Path, layout: str) -> None:
    target = tmp_path / "target"
    target.mkdir()
    if layout == "a-readme":
        (target / "README.md").write_text("# my notes\n")
    if layout == "empty-session-state":
        (target / "session-state").mkdir()
    for command in ("analyze", "issues", "daily", "top"):
        line = one_error_line(run(command, target))
        assert line == f"agentcost: error: {target}: {NOTHING_HERE}" + line.split(".jsonl", 2)[2]


def test_a_directory_without_a_log_beside_one_with_logs_is_an_issue(tmp_path: Path) -> None:
    write_session(tmp_path / "home", "s1")
    (tmp_path / "empty").mkdir()
    result = run("issues", tmp_path / "home", tmp_path / "empty", "-f", "json")
    assert result.exit_code == 0, result.output
    issues = json.loads(result.stdout)["issues"]
    assert [(i["file"], i["severity"]) for i in issues] == [(str(tmp_path / "empty"), "warning")]
    assert issues[0]["message"].startswith(NOTHING_HERE)


def test_an_agent_home_without_sessions_yet_is_0_sessions_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh install (the default home exists, nothing in it): the first screen and the
    reports say 0, they do not fail."""
    (tmp_path / ".copilot" / "session-state").mkdir(parents=True)
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / ".copilot"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert discover([]).logs == []
    result = run("analyze", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sessions"] == []


# --- dangling symlinks ---


def test_a_dangling_symlink_in_a_tree_is_an_issue(tmp_path: Path) -> None:
    write_session(tmp_path / "home", "s1")
    state = tmp_path / "home" / "session-state"
    (state / "s2").symlink_to(tmp_path / "moved-away" / "s2")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "old.jsonl").symlink_to(tmp_path / "gone.jsonl")
    write_session(tree / "copied", "s3")  # a tree, not a home: every .jsonl in it is looked at
    result = run("issues", tmp_path / "home", tree, "-f", "json")
    assert result.exit_code == 0, result.output
    issues = {i["file"]: i for i in json.loads(result.stdout)["issues"]}
    assert issues[str(state / "s2")]["message"] == (
        f"a symlink to {tmp_path / 'moved-away' / 's2'}, which does not exist"
    )
    assert issues[str(tree / "old.jsonl")]["message"] == (
        f"a symlink to {tmp_path / 'gone.jsonl'}, which does not exist"
    )
    assert {i["severity"] for i in issues.values()} == {"warning"}
    analyzed = run("analyze", tmp_path / "home", tree, "-f", "json")
    assert len(json.loads(analyzed.stdout)["sessions"]) == 2  # the logs are still read


def test_a_tree_of_dangling_symlinks_alone_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "gone-a.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "gone-b.jsonl")
    assert one_error_line(run("analyze", tmp_path)) == (
        f"agentcost: error: {tmp_path / 'a.jsonl'}: a symlink to {tmp_path / 'gone-a.jsonl'}, "
        "which does not exist (and 1 more problem like it)"
    )


def test_a_named_dangling_symlink_is_one_line_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "session-moved")
    with pytest.raises(InputError):
        discover([tmp_path / "link"])
    assert one_error_line(run("analyze", tmp_path / "link")) == (
        f"agentcost: error: {tmp_path / 'link'}: a symlink to {tmp_path / 'session-moved'}, "
        "which does not exist; name a session directory or log file, or an agent's home "
        f"({registry.listed([a.short_name for a in registry.AGENTS], 'or')})"
    )


# --- files that cannot be read ---


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("analyze", "permission denied; agentcost needs read access"),
        ("validate", "permission denied; agentcost needs read access"),
        ("capture-to-log", "permission denied; name an SDK capture file"),
    ],
)
def test_a_named_file_that_cannot_be_read_is_one_line_not_a_usage_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, words: str
) -> None:
    """``os.access`` says the file cannot be read (as it does to a user without the right);
    the capture is opened too, so its read is refused at ``Path.read_bytes``."""
    log = write_session(tmp_path, "s1") / "events.jsonl"
    locked = str(log)
    real_access, real_read = os.access, Path.read_bytes

    def access(path: object, mode: int, *args: object, **kwargs: object) -> bool:
        return False if str(path) == locked else real_access(path, mode, *args, **kwargs)  # type: ignore[arg-type]

    def read_bytes(path: Path) -> bytes:
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", locked)
        return real_read(path)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    extra = [tmp_path / "out"] if command == "capture-to-log" else []
    line = one_error_line(run(command, log, *extra))
    assert line.startswith(f"agentcost: error: {log}: {words}")
    assert "Errno" not in line and "Invalid value" not in line


def _without_read_override() -> list[str] | None:
    """A command prefix that runs a program unable to read a ``chmod 000`` file: none as
    another user than root; as root, ``setpriv`` without the two capabilities that let root
    read anything; None where neither works."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    caps = "-dac_override,-dac_read_search"
    prefix = [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", "--"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    return prefix if probe.returncode == 0 else None


def test_a_file_that_cannot_be_read_in_a_tree_is_an_issue_in_agentcosts_words(
    tmp_path: Path,
) -> None:
    """A Copilot log and a Claude Code file that cannot be read (discovery cannot tell
    whose it is: the Copilot scanner reports it): each is one issue in agentcost's words."""
    prefix = _without_read_override()
    if prefix is None:
        pytest.skip("running as root without setpriv: a chmod 000 file is readable")
    tree = tmp_path / "tree"
    copilot = write_session(tree / "copilot", "s1") / "events.jsonl"
    write_session(tree / "copilot", "s2")  # one log that can be read
    claude = tree / "claude" / "projects" / "-repo" / "c1.jsonl"
    claude.parent.mkdir(parents=True)
    claude.write_text(claude_line(1, "2026-08-03T10:00:01.000Z") + "\n")
    copilot.chmod(0)
    claude.chmod(0)
    try:
        code = "import sys; from analytics.cli import main; sys.argv[0] = 'agentcost'; main()"
        done = subprocess.run(
            [*prefix, sys.executable, "-c", code, "--no-cache", "issues", str(tree), "-f", "json"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    finally:
        copilot.chmod(0o644)
        claude.chmod(0o644)
    assert done.returncode == 0, done.stderr
    issues = {i["file"]: i for i in json.loads(done.stdout)["issues"]}
    for path in (copilot, claude):
        assert issues[str(path)]["message"] == "cannot read the file: permission denied"
        assert issues[str(path)]["severity"] == "error"


# --- SDK captures with allEvents ---

#: A capture as the darthmolen spike-01 wrote it: its events under ``allEvents``, beside an
#: ``eventSequence`` of types and times only (not events).
ALL_EVENTS_CAPTURE = {
    "timestamp": "2026-03-12T02:44:26.033Z",
    "spike": "spike-01-fleet-events",
    "sessionId": "79dc2624-4da2-4f36-9e36-da7e2d249816",
    "findings": ["EXP2: Total events: 6"],
    "allEvents": [
        {"timestamp": "2026-03-12T02:43:36.627Z", "type": "user.message",
         "data": {"content": "summarise", "transformedContent": "summarise", "attachments": []}},
        {"timestamp": "2026-03-12T02:43:36.628Z", "type": "assistant.turn_start",
         "data": {"turnId": "0"}},
        {"timestamp": "2026-03-12T02:43:40.913Z", "type": "assistant.usage",
         "data": {"model": "claude-sonnet-4.6", "inputTokens": 24792, "outputTokens": 333,
                  "cacheReadTokens": 0, "cacheWriteTokens": 0, "cost": 1, "duration": 4292,
                  "initiator": "user", "apiCallId": "9cfced1b"}},
        {"timestamp": "2026-03-12T02:43:40.914Z", "type": "assistant.message",
         "data": {"messageId": "m1", "content": "done", "toolRequests": []}},
        {"timestamp": "2026-03-12T02:43:40.915Z", "type": "assistant.turn_end",
         "data": {"turnId": "0"}},
        {"timestamp": "2026-03-12T02:43:40.916Z", "type": "session.idle", "data": {}},
    ],
    "subagentEvents": [],
    "eventSequence": [{"type": "assistant.usage", "timestamp": "2026-03-12T02:43:40.913Z"}],
}  # fmt: skip


def test_a_capture_with_all_events_is_validated_and_converted(tmp_path: Path) -> None:
    capture = tmp_path / "spike-01-output.json"
    capture.write_text(json.dumps(ALL_EVENTS_CAPTURE, indent=2))
    validated = run("--no-cache", "validate", capture, "-f", "json")
    assert validated.exit_code == 0, validated.output
    rows = json.loads(validated.stdout)["sessions"]
    assert [row["calls"] for row in rows if row["session_id"] == "ALL"] == [1]
    written = run("capture-to-log", capture, tmp_path / "home")
    assert written.exit_code == 0, written.output
    logs = list((tmp_path / "home").glob("session-state/*/events.jsonl"))
    assert len(logs) == 1
    types = [json.loads(line)["type"] for line in logs[0].read_text().splitlines()]
    assert "assistant.usage" not in types and types[-1] == "session.shutdown"
    named = run("analyze", capture)  # what it is, and what to run instead
    assert "an SDK capture, not a session log" in one_error_line(named)


def test_a_real_capture_with_its_events_under_all_events_is_read(
    real_logs: Path, tmp_path: Path
) -> None:
    """A real darthmolen capture, its ``events`` key renamed ``allEvents`` (the spelling of
    its sibling spikes): the same calls as the capture as stored."""
    stored = real_logs / "darthmolen-sdk-captures" / "spike-05-0132-output.json"
    document = json.loads(stored.read_text())
    document["allEvents"] = document.pop("events")
    renamed = tmp_path / "spike-05-allEvents.json"
    renamed.write_text(json.dumps(document))
    as_stored = run("--no-cache", "validate", stored, "-f", "json")
    as_renamed = run("--no-cache", "validate", renamed, "-f", "json")
    assert as_renamed.exit_code == 0, as_renamed.output

    def rows(output: str) -> list[dict[str, object]]:
        """The validation rows, without the session id (made from the file's bytes)."""
        return [{**row, "session_id": None} for row in json.loads(output)["sessions"]]

    assert rows(as_renamed.stdout) == rows(as_stored.stdout)
