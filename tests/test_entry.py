"""The console script (``analytics/entry.py``): a command line run again on unchanged inputs
prints its stored output, byte for byte what the command prints, without importing typer,
rich or polars; anything changed runs the command line.

Each run is a fresh interpreter started as the console script starts one, with the cache of
the test; ``-X importtime`` shows what the run imported (its lines are taken out of stderr
before outputs are compared).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analytics.cache import heads, invocations
from analytics.cache.invocations import Invocation, Invocations, invocation_key
from tests.cli.test_analyze import write_session
from tests.conftest import REPO

#: What only the command line imports: a replay must need none of them.
_COMMAND_LINE = ("typer", "rich", "polars")


def agentcost(*args: str | Path, cwd: Path = REPO, env: dict[str, str] | None = None) -> Run:
    """One run of the console script on ``args``."""
    script = "import sys; sys.argv[0] = 'agentcost'; from analytics.entry import main; main()"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script, *map(str, args)],
        cwd=cwd,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return Run.of(done)


class Run:
    """What one run printed, and the modules it imported."""

    def __init__(self, status: int, stdout: str, stderr: str, imported: set[str]) -> None:
        self.status, self.stdout, self.stderr, self.imported = status, stdout, stderr, imported

    @classmethod
    def of(cls, done: subprocess.CompletedProcess[str]) -> Run:
        lines = done.stderr.splitlines(keepends=True)
        timed = [line for line in lines if line.startswith("import time:")]
        imported = {line.rsplit("|", 1)[1].strip() for line in timed[1:]}
        stderr = "".join(line for line in lines if not line.startswith("import time:"))
        return cls(done.returncode, done.stdout, stderr, imported)

    def printed(self) -> tuple[int, str, str]:
        return self.status, self.stdout, self.stderr

    def ran_the_command_line(self) -> bool:
        return any(module.split(".")[0] in _COMMAND_LINE for module in self.imported)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A Copilot home of two sessions, one with a damaged line (an issue: a note on stderr)."""
    root = tmp_path / "home"
    write_session(root, "s1")
    write_session(root, "s2", day="2026-05-02T10:00", extra="{truncated\n")
    return root


@pytest.mark.parametrize(
    "options",
    [
        ["analyze", "-f", "json"],
        ["analyze", "--calls", "-f", "csv"],
        ["analyze", "-f", "table", "--wide"],
        ["analyze", "-f", "json", "--strict"],
        ["daily"],
        ["issues"],
    ],
    ids=["json", "calls", "table", "strict", "daily", "issues"],
)
def test_a_second_run_replays_without_the_command_line(home: Path, options: list[str]) -> None:
    command, *rest = options
    fresh = agentcost("--no-cache", command, home, *rest)
    first, second = agentcost(command, home, *rest), agentcost(command, home, *rest)
    assert fresh.printed() == first.printed() == second.printed()
    assert first.stdout and (first.stderr or command == "issues")  # the damaged line's note
    assert first.ran_the_command_line()
    assert not second.ran_the_command_line(), second.imported & set(_COMMAND_LINE)


def test_the_first_screen_replays_with_todays_date(home: Path, tmp_path: Path) -> None:
    env = dict(os.environ) | {"COPILOT_HOME": str(home), "HOME": str(tmp_path / "user")}
    first, second = agentcost(env=env), agentcost(env=env)
    assert first.printed() == second.printed()
    assert first.stdout and not second.ran_the_command_line()


def test_a_replay_writes_the_output_file(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    first = agentcost("analyze", home, "-f", "json", "-o", target)
    written = target.read_text()
    target.unlink()
    second = agentcost("analyze", home, "-f", "json", "-o", target)
    assert first.printed() == second.printed()
    assert target.read_text() == written
    assert not second.ran_the_command_line()


def test_a_changed_log_runs_the_command_line(home: Path) -> None:
    agentcost("analyze", home, "-f", "json")
    log = home / "session-state" / "s1" / "events.jsonl"
    with log.open("a") as grown:
        grown.write(log.read_text().splitlines()[1] + "\n")  # one more user message
    after = agentcost("analyze", home, "-f", "json")
    assert after.ran_the_command_line()
    assert after.printed() == agentcost("--no-cache", "analyze", home, "-f", "json").printed()


def test_a_file_rewritten_with_its_old_size_and_mtime_runs_the_command_line(
    tmp_path: Path,
) -> None:
    """Discovery recalls what it read of each settled file (``cache.heads``): a file
    rewritten after (a text file become a log), its size and mtime put back, is read again
    and its new output printed, never the stored one."""
    root = tmp_path / "home"
    write_session(root / "copilot", "s1")
    log = write_session(tmp_path / "elsewhere", "s2") / "events.jsonl"
    flat = root / "more" / "s2.jsonl"
    flat.parent.mkdir()
    flat.write_text("x" * (log.stat().st_size - 1) + "\n")  # text named like a log
    time.sleep(heads.SETTLING_NS / 1e9 + 0.1)  # settled: the memo keeps every file
    first, second = (
        agentcost("analyze", root, "-f", "json"),
        agentcost("analyze", root, "-f", "json"),
    )
    assert first.printed() == second.printed() and not second.ran_the_command_line()
    before = flat.stat()
    flat.write_bytes(log.read_bytes())
    os.utime(flat, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert flat.stat().st_size == before.st_size
    after = agentcost("analyze", root, "-f", "json")
    assert after.ran_the_command_line()
    assert after.printed() == agentcost("--no-cache", "analyze", root, "-f", "json").printed()
    assert after.printed() != first.printed()


def test_another_directory_or_environment_is_another_invocation(home: Path, tmp_path: Path) -> None:
    """Relative paths name other files elsewhere, and a variable may change what is shown."""
    agentcost("analyze", "home", "-f", "json", cwd=tmp_path)
    elsewhere = agentcost("analyze", ".", "-f", "json", cwd=home)
    assert elsewhere.ran_the_command_line()
    other = dict(os.environ) | {"TZ": "Asia/Tokyo"}
    assert agentcost(
        "analyze", "home", "-f", "json", cwd=tmp_path, env=other
    ).ran_the_command_line()


def test_a_bad_path_is_the_command_lines_error(tmp_path: Path) -> None:
    for _ in range(2):
        run = agentcost("analyze", tmp_path / "absent", "-f", "json")
        assert run.status == 2 and run.stderr.count("\n") == 1


# --- the invocation's key and its note ---


def test_the_key_is_the_words_the_directory_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    base = invocation_key(["analyze", "x"])
    assert invocation_key(["analyze", "x"]) == base
    assert invocation_key(["analyze", "y"]) != base
    monkeypatch.setenv("OLDPWD", "/somewhere")  # of the moment: not keyed
    assert invocation_key(["analyze", "x"]) == base
    monkeypatch.setenv("NO_COLOR", "1")
    assert invocation_key(["analyze", "x"]) != base
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.chdir(tmp_path.parent)
    assert invocation_key(["analyze", "x"]) != base


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"[]", b'{"command": 1, "paths": [], "shape": {}}', b'{"paths": []}'],
    ids=["empty", "cut", "not-an-object", "wrong-type", "missing"],
)
def test_a_damaged_note_is_no_invocation(tmp_path: Path, content: bytes) -> None:
    noted = Invocations(tmp_path)
    noted.save("k", Invocation("analyze", ["a"], {"format": "json"}, None, None))
    assert noted.load("k") == Invocation("analyze", ["a"], {"format": "json"}, None, None)
    (noted.root / "k").write_bytes(content)
    assert noted.load("k") is None


def test_only_the_console_script_notes_its_invocation() -> None:
    assert invocations.started() is None  # a test calling the command line notes nothing
