"""A growing Copilot log as ``watch`` reads it: only the bytes written since the last look.

The log's scanned batches are held; each time the file's size or mtime changes, only the
bytes written since are scanned (``scan_logs(..., resume=...)``: the scan goes on from the
state the last read ended at, and a half-written last line waits for its newline) and the
new batches are appended, for the engine to run every stage after the scan again on all of
them (``engine.group_analysis.analyse_parsed``). A file that shrank or was replaced (another inode)
is read again from its start.
"""

from __future__ import annotations

from pathlib import Path

from analytics.agents.copilot.events import ScannedLogs, ScanState, scan_logs
from analytics.agents.discover import Found, LogFile, Seen, discover


def session_target(log: LogFile) -> Path:
    """What to analyse for ``log``: its session directory (so the home's session store and
    OTel exports are read with it), or the file itself when it is a legacy flat log."""
    return log.path.parent if log.path.name == "events.jsonl" else log.path


class Follow:
    """One session log read as it grows: its events so far, and where the read stopped.

    ``update()`` reads the lines written since the last one (all of them the first time, or
    when the file shrank or was replaced) and says whether the log changed; ``parsed`` is
    everything read so far, ``found`` the discovery of the session (its per-call records).
    """

    def __init__(self, log: LogFile) -> None:
        self.log = log
        self.found: Found = discover([session_target(log)])
        self._seen: tuple[int, int, int] | None = None  # (inode, size, mtime)
        self._state: ScanState | None = None
        self._parts: list[ScannedLogs] = []

    def update(self) -> bool:
        """Read what the log gained; False when it did not change (or is gone for a moment:
        rotated, rewritten; the last view stays)."""
        try:
            stat = self.log.path.stat()
        except OSError:
            return False
        now = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if now == self._seen:
            return False
        if self._seen is not None and (
            stat.st_ino != self._seen[0]
            or (self._state is not None and stat.st_size < self._state.offset)
        ):
            self._state, self._parts = None, []  # shrank or replaced: read it again
        self._seen = now
        log = LogFile(self.log.file, self.log.session_hint, self.log.real_path, Seen.of(stat))
        read = scan_logs([log], resume=[self._state])
        self._state = read.ends[0]
        if any(len(t) for t in read.tables) or read.issues.height or not self._parts:
            self._parts.append(read)
        return True

    @property
    def parsed(self) -> ScannedLogs:
        """Every batch, per-model total and issue scanned so far, in line order."""
        if len(self._parts) > 1:
            self._parts = [ScannedLogs.joined(self._parts)]
        return self._parts[0]
