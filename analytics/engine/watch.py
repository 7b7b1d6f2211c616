"""``agentcost watch``: a live view of one session while its log grows.

The session is the most recently written log under the paths (every agent's home by
default): a Copilot ``events.jsonl``, a Claude Code session file (a sub-agent's file stands
for its parent session's), a Codex rollout, any agent's log. A log of an agent with a reader
is folded again natively whenever it (or a file of its session) changes (``AgentFollow``):
its calls state their usage, so the whole fold of one session is a few milliseconds. The
staged pipeline's agent (Copilot) brings its own follower (``Pipeline.follower``), which
reads only the bytes written since, and every stage after the scan runs again on all it
read (``stages.analyse_parsed``), so the view is a fresh analysis of the file at the cost of
the new lines' scan. Unless the paths name one session (its directory or log), the
paths are looked at again every ``SWITCH_SECONDS`` and a newer session log, once one is
written, is followed instead. The screen is redrawn with rich's Live display: calls so far,
the current context size, cost so far, the last call's cost and a sparkline of input tokens
per call. Nothing is written inside the session directory. ``q`` (on a terminal) or Ctrl-C
quits.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import polars as pl

from analytics.agents.discover import (
    COPILOT,
    LogFile,
    Seen,
    copilot_session_id,
    discover,
)
from analytics.agents.pipeline import pipeline, pipeline_agent
from analytics.core.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from analytics.agents.pipeline import Follower
    from analytics.core.pricing.rates import RateTable

    #: What ``watch`` holds of the log it shows: a reader's agent's fold, or the staged
    #: pipeline's agent's own follower.
    Following: TypeAlias = "Follower | AgentFollow"

#: Seconds between looks at the file (and at the keyboard).
POLL_SECONDS = 0.25
#: Seconds between looks for a newer session log (when no session was named).
SWITCH_SECONDS = 2.0
_BARS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Watched:
    """A session log to follow, and the agent that writes it."""

    agent: str
    log: LogFile


def latest_log(paths: list[Path], agents: tuple[str, ...] = ()) -> Watched:
    """The most recently written session log under ``paths`` (every agent's home when
    empty) of one of ``agents`` (any agent when empty). A log the user named (a session
    directory, a file) was not looked at by discovery's listing: it is looked at here. A
    Claude Code sub-agent's file stands for its session's file, when that exists (the view
    is of the whole session)."""
    found = discover(paths)
    candidates = [
        (agent, log)
        for agent, log in [(COPILOT, log) for log in found.logs] + found.agent_logs
        if not agents or agent in agents
    ]
    logs = [
        Watched(agent, seen) for agent, log in candidates if (seen := _seen(log)).stat is not None
    ]
    if not logs:
        where = ", ".join(map(str, paths)) or "the agents' homes"
        whose = f" of {', '.join(agents)}" if agents else ""
        raise InputError(
            f"no session log{whose} under {where}; name a session directory or log, or an "
            "agent's home"
        )
    newest = max(
        logs,
        key=lambda w: (w.log.stat.st_mtime_ns if w.log.stat else 0, str(w.log.path)),
    )
    return _parent_session(newest)


def _parent_session(watched: Watched) -> Watched:
    """A sub-agent's log as its session's (``Reader.session_file``, where the agent's reader
    has one: a Claude Code ``<session>/subagents/agent-*.jsonl`` is its ``<session>.jsonl``);
    any other log as it is."""
    from analytics.agents.reader import session_file

    path = watched.log.path
    session = session_file(watched.agent, path)
    if session == path:
        return watched
    return Watched(
        watched.agent, _seen(LogFile(str(session), session.stem, str(session.resolve())))
    )


def _seen(log: LogFile) -> LogFile:
    """``log`` with its ``stat`` (None when the file went away meanwhile)."""
    if log.stat is not None:
        return log
    try:
        return replace(log, stat=Seen.of(os.stat(log.file)))
    except OSError:
        return log


def names_a_session(path: Path | None) -> bool:
    """Whether ``path`` is one session (a log file, or a directory holding ``events.jsonl``),
    which watch keeps to, rather than a home or tree to take the newest session from."""
    return path is not None and (path.is_file() or (path / "events.jsonl").is_file())


class AgentFollow:
    """A session log of an agent with a reader, folded again whenever it changes:
    ``update()`` says whether it (or a file of its group: a Claude Code session's sub-agent
    files; an SQLite database's write-ahead log, where its new rows wait until a checkpoint)
    did, and folds it; ``calls`` and ``sessions`` are the fold's, in the core's contracts."""

    def __init__(self, watched: Watched) -> None:
        from analytics.agents.reader import reader_of

        self.agent = watched.agent
        self.log = watched.log
        self._module = reader_of(watched.agent)
        self._seen: tuple[tuple[str, int, int, int], ...] | None = None
        self.calls = pl.DataFrame()
        self.sessions = pl.DataFrame()

    def update(self) -> bool:
        """Fold the log again if a file of it changed; False when none did (or they are
        gone for a moment: the last view stays)."""
        from analytics.agents.contract import core_tables

        files = [file for group in self._module.discover([self.log.path]) for file in group]
        wal = [w for f in files if (w := f.with_name(f.name + "-wal")).is_file()]
        try:
            now = tuple(
                (str(f), (st := f.stat()).st_ino, st.st_size, st.st_mtime_ns)
                for f in [*files, *wal]
            )
        except OSError:
            return False
        if not files or now == self._seen:
            return False
        self._seen = now
        self.calls, self.sessions, _, _ = core_tables(self._module.read_files(files))
        return True


def follow_of(watched: Watched) -> Following:
    """The follower of a log: the staged pipeline's agent's own (``Pipeline.follower``:
    Copilot's reads only what was written since), a new fold for a reader's agent."""
    if watched.agent == pipeline_agent():
        return pipeline().follower(watched.log)
    return AgentFollow(watched)


def agent_session_id(watched: Watched) -> str | None:
    """The id of the session a Claude Code or Codex log is writing now: of the sessions its
    fold finds, the one written last (a file can hold several); None when it names none."""
    follow = AgentFollow(watched)
    follow.update()
    sessions = follow.sessions.sort("end_time", "session_id", nulls_last=False)
    return str(sessions["session_id"][-1]) if sessions.height else None


def session_name(watched: Watched) -> str:
    """The id of the session ``watched`` is writing, as its agent names it: a Copilot log's
    ``session.start`` (its first line), another agent's fold (``agent_session_id``); else
    the session hint (its directory or file name), so a copied or renamed session directory
    is still named as its agent names it."""
    log = watched.log
    named = copilot_session_id(log) if watched.agent == COPILOT else agent_session_id(watched)
    return named or log.session_hint


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
    """The live view's figures from one log's priced calls (``price.price_calls``): of its
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


def priced_figures(
    follow: Following, table: RateTable, model_map: Mapping[str, str]
) -> Figures | None:
    """The figures of what ``follow`` has read so far, priced under ``table`` (the log's
    own prices included, as everywhere): the Copilot stages run on its events, another
    agent's fold gives its calls as they are."""
    from analytics.core.pricing.price import price_analysis
    from analytics.engine.stages import analyse_parsed

    if isinstance(follow, AgentFollow):
        priced, _ = price_analysis(follow.calls, follow.sessions, table, model_map)
        return figures(priced)
    result = analyse_parsed(follow.parsed, follow.found)
    priced, _ = price_analysis(result.calls, result.sessions, table, model_map, result.log_prices)
    return figures(priced)


def run(
    log: Watched,
    analyse: Callable[[Following], Figures | None],
    console: Console,
    *,
    newest: Callable[[], Watched] | None = None,
    poll: float = POLL_SECONDS,
    switch: float = SWITCH_SECONDS,
) -> None:
    """Show ``analyse(follow)`` live, again whenever ``log`` grows, until ``q`` (or Ctrl-C,
    which raises ``KeyboardInterrupt`` to the caller). With ``newest`` (the newest log under
    the watched paths), a newer log is followed instead once one appears."""
    from rich.live import Live

    follow = follow_of(log)
    looked = time.monotonic()
    with Live(console=console, auto_refresh=False, transient=False) as live, _keys() as key:
        while True:
            if newest is not None and time.monotonic() - looked >= switch:
                looked = time.monotonic()
                latest = _newest(newest)
                if latest is not None and latest.log.path != follow.log.path:
                    follow = follow_of(latest)
            if follow.update():
                shown = view(analyse(follow), follow.log.path, console.width)
                live.update(shown, refresh=True)
            if key(poll) in ("q", "Q"):
                return


def _newest(newest: Callable[[], Watched]) -> Watched | None:
    """The newest log, or None when there is none for a moment."""
    try:
        return newest()
    except InputError:
        return None


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
