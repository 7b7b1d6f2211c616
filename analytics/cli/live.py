"""``agentcost watch``'s loop: the live view redrawn whenever the followed log grows, a newer
session log followed once one is written (unless the paths name one session), ``q`` (on a
terminal) or Ctrl-C to quit. Nothing is written inside the session directory.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from analytics.core.errors import InputError
from analytics.engine.following import follow_of
from analytics.render.live_view import view

if TYPE_CHECKING:
    from rich.console import Console

    from analytics.engine.following import Following
    from analytics.engine.live_figures import Figures
    from analytics.engine.live_session import Watched

#: Seconds between looks at the file (and at the keyboard).
POLL_SECONDS = 0.25
#: Seconds between looks for a newer session log (when no session was named).
SWITCH_SECONDS = 2.0


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
