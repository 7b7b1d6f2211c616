"""``agentcost watch``: its figures, and the live view in a real pseudo-terminal.

The pty test runs the installed command as a user would: it appends an LLM call to a copy of
a sample session and expects the screen to show it within 2 s (twice), then writes a newer
session into the watched home and expects the view to switch to it, then presses ``q``.
``Follow`` (the log read as it grows, only new bytes each time) is checked against a fresh
analysis of the file after appends, a shrink and a replacement.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from analytics.agents.copilot.events import batch_frame
from analytics.agents.copilot.follow import Follow, session_target
from analytics.core.pricing.price import price_analysis, price_calls
from analytics.core.pricing.rates import load_rate_table
from analytics.engine.analyze import analyze
from analytics.engine.group_analysis import analyse_parsed
from analytics.engine.live_figures import Figures, figures
from analytics.engine.live_session import latest_log, names_a_session
from analytics.render.live_view import sparkline
from tests.conftest import SAMPLE_LOGS
from tests.pty_watch import watching

SESSION = "24ccb34f-02d7-4b8f-aea1-6d95145b2643"
NEWER = "99999999-0000-4000-8000-000000000001"


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
        shown.cost_usd == result.session_view["billed_nano_aiu"].cast(int).sum() / Decimal(10**11)
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
    watched = latest_log([home])
    assert (watched.agent, watched.log.path) == ("copilot", other / "events.jsonl")
    assert session_target(watched.log) == other


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
    home = copy_of_a_session(tmp_path)
    log = home / "session-state" / SESSION / "events.jsonl"
    before = sorted(p.name for p in log.parent.iterdir())
    with watching(home, tmp_path / "cache") as screen:
        assert screen.wait_for("calls so far  6", 20) is not None, screen.shown()
        screen.clear()
        with log.open("a") as out:
            out.write(turn(90, "2026-08-03T13:00:00.000Z"))
        latency = screen.wait_for("calls so far  7", 2.0)
        assert latency is not None, f"no update within 2 s: {screen.shown()}"
        screen.clear()
        with log.open("a") as out:
            out.write(turn(91, "2026-08-03T13:01:00.000Z"))
        assert screen.wait_for("calls so far  8", 2.0) is not None
        screen.clear()
        newer = home / "session-state" / NEWER
        newer.mkdir()
        text = (SAMPLE_LOGS / "session-state" / SESSION / "events.jsonl").read_text()
        (newer / "events.jsonl").write_text(text.replace(SESSION, NEWER))
        assert screen.wait_for(f"session  {NEWER}", 6.0) is not None, screen.shown()
        code = screen.quit(quit_key)
        assert code is not None, f"agentcost watch did not quit on {quit_key!r}"
        assert code == 0
    assert sorted(p.name for p in log.parent.iterdir()) == before  # nothing written there


def shown_by(follow: Follow) -> Figures | None:
    """The figures watch shows for what ``follow`` has read."""
    result = analyse_parsed(follow.parsed, follow.found)
    table = load_rate_table("github-copilot")
    priced, _ = price_analysis(result.calls, result.sessions, table, {}, result.log_prices)
    return figures(priced)


def fresh(session: Path) -> Figures | None:
    """The figures of a fresh analysis of the session."""
    result = analyze([session], keep_events=False)
    table = load_rate_table("github-copilot")
    priced, _ = price_analysis(result.calls, result.sessions, table, {}, result.log_prices)
    return figures(priced)


def scanned_lines(follow: Follow) -> list[int]:
    """The line numbers of every batch ``follow`` holds, in order."""
    return [line for table in follow.parsed.tables for line in batch_frame(table)["source_line"]]


def test_follow_reads_only_new_bytes_and_equals_a_fresh_analysis(tmp_path: Path) -> None:
    home = copy_of_a_session(tmp_path)
    session = home / "session-state" / SESSION
    log = session / "events.jsonl"
    follow = Follow(latest_log([home]).log)
    assert follow.update() and not follow.update()  # unchanged: nothing to do
    assert shown_by(follow) == fresh(session)
    calls = analyze([session], keep_events=False).calls.height
    whole = log.read_bytes()
    with log.open("a") as out:
        out.write(turn(90, "2026-08-03T13:00:00.000Z"))
        out.write('{"type":"assistant.turn_start","data":{"tur')  # being written
    assert follow.update()
    assert follow.parsed.issues.filter(pl.col("severity") == "error").height == 0
    shown = shown_by(follow)
    assert shown is not None and shown.calls == calls + 1
    with log.open("a") as out:
        out.write('nId":"91"},"id":"x91","timestamp":"2026-08-03T13:01:00.000Z"}\n')
    assert follow.update()
    assert shown_by(follow) == fresh(session)
    assert scanned_lines(follow) == list(range(1, log.read_bytes().count(b"\n") + 1))
    log.write_bytes(whole[: whole.index(b"\n") + 1])  # shrank: read again from the start
    assert follow.update()
    assert len(scanned_lines(follow)) == 1
    replaced = session / "replacement"
    replaced.write_bytes(whole)
    replaced.replace(log)  # another inode, larger: read again too
    assert follow.update()
    assert shown_by(follow) == fresh(session)


def test_names_a_session(tmp_path: Path) -> None:
    home = copy_of_a_session(tmp_path)
    session = home / "session-state" / SESSION
    assert names_a_session(session) and names_a_session(session / "events.jsonl")
    assert not names_a_session(home) and not names_a_session(None)
