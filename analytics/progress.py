"""A progress bar on stderr for long reads, and silence for everything else.

The bar appears only when stderr is a terminal and the run has already taken more than a second,
so quick runs, pipes, files and tests never see it. The CLI wires it in::

    with progress_bar() as progress:
        result = analyze(paths, use_cache=True, progress=progress)

``progress`` is ``None`` when no bar can be shown; the library then reports nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

_WIDTH = 30
_MB = 1_000_000


class Bar:
    """Draws ``label [#####.....] 42% 120/290 MB`` on one line, redrawn at most ten times a second.

    Call it with (bytes done, bytes in total); ``close`` erases the line if it was drawn.
    """

    def __init__(self, stream: TextIO, label: str, delay: float = 1.0) -> None:
        self._stream = stream
        self._label = label
        self._shown_after = time.monotonic() + delay
        self._next_draw = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now < self._shown_after or now < self._next_draw or total <= 0:
            return
        self._next_draw = now + 0.1
        share = min(done / total, 1.0)
        filled = round(share * _WIDTH)
        self._stream.write(
            f"\r{self._label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {share:4.0%} "
            f"{done / _MB:,.0f}/{total / _MB:,.0f} MB"
        )
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the bar, leaving stderr as it was."""
        if self._drawn:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._drawn = False


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
