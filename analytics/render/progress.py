"""A progress bar on stderr for long reads, and silence for everything else.

The bar (rich's) appears only when stderr is a terminal and the run has already taken more
than a second, so quick runs, pipes, files and tests never see it. The CLI wires it in::

    with progress_bar() as progress:
        result = analyze(paths, use_cache=True, progress=progress)

``progress`` is ``None`` when no bar can be shown; the library then reports nothing. rich is
imported only once a bar is drawn, so a quick run never pays for it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class Bar:
    """``label ━━━━━━╸━━━━ 42% 120.0/290.0 MB`` on ``stream`` once ``delay`` seconds have
    passed, redrawn at most ten times a second.

    Call it with (bytes done, bytes in total); ``close`` erases the bar if it was drawn.
    """

    def __init__(self, stream: TextIO, label: str, delay: float = 1.0) -> None:
        self._stream = stream
        self._label = label
        self._shown_after = time.monotonic() + delay
        self._next_draw = 0.0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now < self._shown_after or now < self._next_draw or total <= 0:
            return
        self._next_draw = now + 0.1
        if self._progress is None:
            self._start(total)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=min(done, total), total=total)
            self._progress.refresh()

    def _start(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TaskProgressColumn

        console = Console(file=self._stream, force_terminal=True, highlight=False)
        self._progress = Progress(
            "{task.description}",
            BarColumn(bar_width=30),
            TaskProgressColumn(),
            DownloadColumn(binary_units=False),
            console=console,
            transient=True,
            auto_refresh=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(self._label, total=total)

    def close(self) -> None:
        """Erase the bar, leaving the stream as it was."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def progress_bar(label: str = "agentcost: reading logs") -> Iterator[Bar | None]:
    """A ``Bar`` on stderr when it is a terminal, else ``None``; erased on exit."""
    if not sys.stderr.isatty():
        yield None
        return
    bar = Bar(sys.stderr, label)
    try:
        yield bar
    finally:
        bar.close()
