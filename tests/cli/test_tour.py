"""Issue 21: a tour of every command of the README, in a real terminal (tmux, 80 columns).

Each command runs in its own tmux window 80 columns wide, on ``sample_logs/`` and on a real
log of each agent agentcost reads (``AGENT_LOGS``: when another agent's logs are read, its
line goes there). What the terminal shows (``capture-pane -J``: a line the terminal wrapped
is joined again) must hold no traceback and no line longer than 80 characters. CI installs
tmux (``.ci/run``); elsewhere the tour is skipped without it.

Issue 39: the shell examples of the docs (each ```sh block of ``docs/``, collected by
``tests.house.test_docs.shell_examples``) run the same way, a block's commands in order, in a
scratch directory where ``sample_logs`` is the bundled sample logs.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REAL_LOGS, SAMPLE_LOGS
from tests.house.test_docs import shell_examples

WIDTH = 80
_SOCKETS = itertools.count()
AGENTCOST = Path(sys.executable).parent / "agentcost"
#: (agent, a real log of it under ../shared/real_logs): the tour runs every command on each,
#: and none refuses any agent's logs.
AGENT_LOGS: list[tuple[str, str]] = [
    ("copilot", "qiaolei81-session-demo"),
    ("claude-code", "claude-code/marot__spotter"),
    ("codex", "codex/madshn__localpush"),
    ("gemini-cli", "gemini-cli/ingo-eichhorst__Irrlicht"),
    ("pi", "pi/ingo-eichhorst__Irrlicht"),
    ("antigravity", "antigravity/ingo-eichhorst__Irrlicht"),
    ("kimi", "kimi/jazzyalex__session-bench"),
]
#: An SDK capture for ``capture-to-log`` and ``validate CAPTURE.json``.
CAPTURE = "darthmolen-sdk-captures/spike-05-0132-output.json"

#: The commands of the README and of docs/commands.md; ``{logs}`` is the tour's input, ``{tmp}``
#: a scratch directory.
COMMANDS = [
    "agentcost",
    "agentcost analyze {logs}",
    "agentcost analyze {logs} --calls",
    "agentcost compare {logs}",
    "agentcost daily {logs}",
    "agentcost weekly {logs} --by model",
    "agentcost monthly {logs} --by project",
    "agentcost daily {logs} --by session",
    "agentcost top {logs}",
    "agentcost issues {logs}",
    "timeout --foreground -s INT 4 agentcost watch {logs}",  # q or Ctrl-C quits
    "agentcost budget set --credits 300 --start-day 1 && agentcost budget {logs}",
    "agentcost statusline {logs}",
    "agentcost report {logs} --html {tmp}/report.html",
    "agentcost export {tmp}/export {logs}",
    "agentcost validate {logs}",
    "agentcost validate {capture}",
    "agentcost capture-to-log {capture} {tmp}/captured",
    "agentcost simulate {tmp}/simulated --sessions 2 --store",
    "agentcost rates learn {logs}",
    "agentcost rates show github-copilot",
    "agentcost --version",
    "agentcost --help",
]


def inputs() -> list[tuple[str, Path]]:
    """The tour's inputs: sample_logs, then each agent's real log."""
    real = [(agent, REAL_LOGS / path) for agent, path in AGENT_LOGS]
    return [("sample_logs", SAMPLE_LOGS), *real]


def in_tmux(command: str, env: dict[str, str], tmp: Path) -> str:
    """What an 80-column terminal shows after ``command`` (stdout and stderr) ran in it."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing in CI; .ci/run installs it")
        pytest.skip("tmux is not installed (.ci/run installs it in CI)")
    socket = f"agentcost-tour-{os.getpid()}-{next(_SOCKETS)}"
    done = "__tour_done__"
    exports = "".join(f"export {name}={shlex.quote(value)}; " for name, value in env.items())
    script = f"{exports}{command}; echo {done} $?; sleep 600"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", str(WIDTH), "-y", "50", "sh", "-c", script],
        check=True,
        cwd=tmp,
    )
    try:
        subprocess.run([*tmux, "set-option", "-g", "history-limit", "100000"], check=True)
        deadline = time.monotonic() + 180
        while True:
            shown = subprocess.run(
                [*tmux, "capture-pane", "-p", "-J", "-S", "-", "-E", "-"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            if done in shown or time.monotonic() > deadline:
                return shown
            time.sleep(0.2)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)


def tour_env(logs: Path, tmp: Path) -> dict[str, str]:
    """The environment of a tour step: agentcost on the PATH, a home, cache and config of
    its own in ``tmp``, and ``logs`` as the Copilot home."""
    return {
        "PATH": f"{AGENTCOST.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp),
        "AGENTCOST_CACHE_DIR": str(tmp / "cache"),
        "AGENTCOST_CONFIG_DIR": str(tmp / "config"),
        "COPILOT_HOME": str(logs if logs.is_dir() else logs.parent),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
    }


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("name", "logs"), inputs(), ids=[name for name, _ in inputs()])
def test_the_tour(name: str, logs: Path, command: str, tmp_path: Path) -> None:
    if not logs.exists():
        pytest.skip(f"{logs} is not present (the shared/ folder is absent)")
    capture = REAL_LOGS / CAPTURE
    if "{capture}" in command and not capture.exists():
        pytest.skip(f"{capture} is not present (the shared/ folder is absent)")
    text = command.format(logs=shlex.quote(str(logs)), tmp=tmp_path, capture=capture)
    assert_shown_well(text, in_tmux(text, tour_env(logs, tmp_path), tmp_path))


@pytest.mark.parametrize(
    ("page", "commands"),
    shell_examples(),
    ids=[f"{page}:{index}" for index, (page, _) in enumerate(shell_examples())],
)
def test_the_docs_examples(page: str, commands: list[str], tmp_path: Path) -> None:
    """A ```sh block of the docs, as a reader would run it beside the sample logs."""
    (tmp_path / "sample_logs").symlink_to(SAMPLE_LOGS)
    text = " && ".join(commands)
    assert_shown_well(text, in_tmux(text, tour_env(SAMPLE_LOGS, tmp_path), tmp_path))


def assert_shown_well(text: str, shown: str) -> None:
    """``text`` finished with a status the tour accepts, and the terminal shows no traceback
    and no line longer than ``WIDTH``."""
    lines = [line.rstrip() for line in shown.splitlines()]
    assert any(line.startswith("__tour_done__") for line in lines), f"{text} did not finish"
    status = next(line for line in lines if line.startswith("__tour_done__")).split()[1]
    # 1: a budget is over, say; 124: timeout ended watch (Ctrl-C), as it ends it by design
    assert status in {"0", "1", "124"}, f"{text}: exit {status}\n{shown}"
    if "agentcost watch" in text:  # every agent's newest session is shown, with its calls
        assert "calls so far" in shown, shown
    assert "Traceback" not in shown, shown
    long = [line for line in lines if len(line) > WIDTH]
    assert not long, f"{text}: lines longer than {WIDTH}:\n" + "\n".join(long)
