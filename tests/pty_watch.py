"""``agentcost watch`` run in a real pseudo-terminal, as a user runs it.

The live-view tests of every agent share this: the installed command started on a terminal of
100 x 30 with its own cache, what it draws read back (ANSI codes stripped before a search),
a key pressed to quit, and the process killed and reaped however the test ends. POSIX only:
callers skip on Windows, where there is no ``pty``.
"""

from __future__ import annotations

import os
import re
import select
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

AGENTCOST = Path(sys.executable).with_name("agentcost")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


class Screen:
    """The terminal of a running ``agentcost watch``: what it has drawn since the last
    ``clear`` and the keys sent to it."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.drawn = b""

    def wait_for(self, text: str, seconds: float) -> float | None:
        """Seconds until ``text`` is on the screen, or None after ``seconds``."""
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            if select.select([self.fd], [], [], 0.05)[0]:
                try:
                    self.drawn += os.read(self.fd, 65536)
                except OSError:
                    break
            if text.encode() in ANSI.sub(b"", self.drawn):
                return time.monotonic() - started
        return None

    def clear(self) -> None:
        """Forget what was drawn, so that the next ``wait_for`` sees only what comes after."""
        self.drawn = b""

    def shown(self) -> str:
        """What was drawn, as text, for an assertion's message."""
        return self.drawn.decode(errors="replace")

    def quit(self, key: bytes, seconds: float = 5) -> int | None:
        """Press ``key``: the exit code once the command ends, None while it still runs after
        ``seconds``."""
        os.write(self.fd, key)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        return None


@contextmanager
def watching(target: Path, cache: Path) -> Iterator[Screen]:
    """``agentcost watch target`` on a new pseudo-terminal, caching in ``cache``; killed and
    reaped on leaving, whether it quit or not."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: agentcost watch on the terminal
        os.environ.update(COLUMNS="100", LINES="30", AGENTCOST_CACHE_DIR=str(cache))
        os.execv(str(AGENTCOST), [str(AGENTCOST), "watch", str(target)])
    try:
        yield Screen(pid, fd)
    finally:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
