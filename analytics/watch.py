"""``agentcost watch``: a live view of one session while its ``events.jsonl`` grows.

The session is the most recently written log under the paths (the Copilot home by default).
Each time the file's size or mtime changes, the session is analysed again through the
library (``analysis.analyze``; the native scanner reads a 64 MB log in about 0.2 s, so a long
session still costs little per update) and the screen is redrawn with rich's Live
display: calls so far, the current context size, cost so far, the last call's cost and a
sparkline of input tokens per call. Nothing is written inside the session directory (caches
live in agentcost's cache directory). ``q`` (on a terminal) or Ctrl-C quits.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from analytics.errors import InputError
from analytics.sources.discover import LogFile, discover

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

#: Seconds between looks at the file (and at the keyboard).
POLL_SECONDS = 0.25
_BARS = "▁▂▃▄▅▆▇█"


def latest_log(paths: list[Path]) -> LogFile:
    """The most recently written events log under ``paths`` (the Copilot home when empty)."""
    logs = [log for log in discover(paths).logs if log.stat is not None]
    if not logs:
        where = ", ".join(map(str, paths)) or "the Copilot home"
        raise InputError(f"no session log under {where}; name a session directory or a home")
    return max(logs, key=lambda log: (log.stat.st_mtime_ns if log.stat else 0, str(log.path)))


def session_target(log: LogFile) -> Path:
    """What to analyse for ``log``: its session directory (so the home's session store and
    OTel exports are read with it), or the file itself when it is a legacy flat log."""
    return log.path.parent if log.path.name == "events.jsonl" else log.path


@dataclass(frozen=True)
class Figures:
    """What the live view shows of one session (money as exact decimals; ``None`` unknown)."""

    session_id: str
    calls: int
    context_tokens: int | None  # input tokens of the last call: the context it re-sent
    cost_usd: Decimal | None  # the priced calls' sum
    unpriced_calls: int
    last_cost_usd: Decimal | None
    estimated: bool  # some tokens are estimates: the costs are too
    growth: list[int]  # input tokens per call, in order (unknown as 0)


def figures(priced_calls: pl.DataFrame) -> Figures | None:
    """The live view's figures from one log's priced calls (``pricing.price_calls``): of its
    session with the latest call (a file may hold several sessions); ``None`` before any."""
    if not priced_calls.height:
        return None
    latest = priced_calls.sort("start_time", nulls_last=False)["session_id"][-1]
    calls = priced_calls.filter(pl.col("session_id") == latest).sort("call_index")
    costs, known = calls["cost_usd"], calls["input_tokens"].drop_nulls()
    return Figures(
        session_id=str(latest),
        calls=calls.height,
        context_tokens=int(known[-1]) if known.len() else None,
        cost_usd=Decimal(costs.sum()) if costs.count() else None,
        unpriced_calls=costs.null_count(),
        last_cost_usd=costs[-1],
        estimated=bool((calls["token_source"] == "estimated").any()),
        growth=calls["input_tokens"].fill_null(0).to_list(),
    )


def sparkline(values: list[int], width: int) -> str:
    """The last ``width`` values as bars from the smallest (``▁``) to the largest (``█``), so
    the growth on top of the fixed part shows; all equal is a flat ``▁`` line.

    >>> sparkline([10_000, 10_500, 11_000, 12_000], 10)
    '▁▃▅█'
    """
    tail = pl.Series(values[-width:] if width > 0 else [], dtype=pl.Int64)
    low, high = tail.min(), tail.max()
    if not isinstance(low, int) or not isinstance(high, int) or high == low:
        return _BARS[0] * tail.len()
    levels = ((tail - low) * (len(_BARS) - 1) / (high - low)).round().cast(pl.Int64)
    return "".join(_BARS[level] for level in levels.to_list())


def view(shown: Figures | None, log: Path, width: int) -> RenderableType:
    """The screen: a small table of figures under the session id."""
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("watching", str(log))
    if shown is None:
        table.add_row("", "waiting for the first call…")
    else:
        mark = "~" if shown.estimated else ""
        unpriced = f" (+{shown.unpriced_calls} without a cost)" if shown.unpriced_calls else ""
        table.add_row("session", shown.session_id)
        table.add_row("calls so far", f"{shown.calls:,}")
        context = "-" if shown.context_tokens is None else f"{mark}{shown.context_tokens:,}"
        table.add_row("context now", f"{context} input tokens")
        table.add_row("cost so far", f"{_usd(shown.cost_usd, mark)}{unpriced}")
        table.add_row("last call", _usd(shown.last_cost_usd, mark, unknown="no cost"))
        span = f"  {shown.growth[0]:,} → {shown.growth[-1]:,}" if shown.growth else ""
        table.add_row("growth", sparkline(shown.growth, max(width - 40, 1)) + span)
    table.add_row("", "q or Ctrl-C quits")
    return table


def _usd(amount: Decimal | None, mark: str, unknown: str = "unpriced") -> str:
    return unknown if amount is None else f"{mark}${amount:,.4f}"


def run(
    log: Path,
    analyse: Callable[[], Figures | None],
    console: Console,
    *,
    poll: float = POLL_SECONDS,
) -> None:
    """Show ``analyse()`` live, again whenever ``log`` changes, until ``q`` (or Ctrl-C, which
    raises ``KeyboardInterrupt`` to the caller)."""
    from rich.live import Live

    seen: tuple[int, int] | None = None
    with Live(console=console, auto_refresh=False, transient=False) as live, _keys() as key:
        while True:
            try:
                stat = log.stat()
                now = (stat.st_size, stat.st_mtime_ns)
            except OSError:
                now = (-1, -1)  # gone for a moment (rotated, rewritten): keep the last view
            if now != seen and now[0] >= 0:
                seen = now
                live.update(view(analyse(), log, console.width), refresh=True)
            if key(poll) in ("q", "Q"):
                return


@contextmanager
def _keys() -> Iterator[Callable[[float], str]]:
    """A function that waits up to a timeout for one key of stdin (``""`` if none); on a
    terminal, keys arrive unbuffered and the terminal is restored on exit."""
    if not sys.stdin.isatty():

        def wait(timeout: float) -> str:
            time.sleep(timeout)
            return ""

        yield wait
        return
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)

    def read(timeout: float) -> str:
        ready, _, _ = select.select([fd], [], [], timeout)
        return os.read(fd, 1).decode(errors="replace") if ready else ""

    try:
        yield read
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
