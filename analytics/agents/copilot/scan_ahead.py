"""Copilot logs as the native scanner reads them, and scans started before they are needed.

A cold analysis of a large tree spends its first tenth of a second importing what comes
after the scan (polars, the stages, pricing), on one core, while the other waits. ``start``
begins the scans of the first groups of logs then, on threads of their own (the scanner
releases the GIL), and ``take`` hands a scan's result to ``events.scan_logs`` when it asks for
exactly those logs, as discovery saw them. Nothing here imports polars.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from analytics import _scanner
from analytics.agents.discover import LogFile

#: Bytes of files scanned together on one thread (many small files share a batch). A batch
#: has columns and string buffers of its own, so fewer batches hold less: with the pipeline's
#: groups of 64 MB, analysed two at a time (both cores scan), 64 MB batches took the cold
#: peak on the 1 GB benchmark tree from 285-289 MB (16 MB batches) to 257 MB, in the same time.
BATCH_BYTES = 64 * 2**20
#: Bytes read from a file at once (a line may be longer: it is read whole all the same): the
#: scanner's own default, small enough that a block stays in the core's cache while it is
#: read (see ``BLOCK`` in ``native/read/scan.rs``).
BLOCK_BYTES = 256 * 2**10

#: A scan's identity: each log's path, session hint, size and what its stat says of its
#: content (mtime, ctime, inode), so a log changed since the scan started never matches.
_Key = tuple[tuple[str, str, int | None, int | None, int | None, int | None], ...]

_started: dict[_Key, Future[Any]] = {}
_lock = threading.Lock()


def scan_inputs(logs: Sequence[LogFile]) -> tuple[list[str], list[str], list[int | None]]:
    """What the scanner is given for ``logs``: paths, session hints, and the size discovery
    saw of each (the scan stops there)."""
    return (
        [log.file for log in logs],
        [log.session_hint for log in logs],
        [log.stat.st_size if log.stat else None for log in logs],
    )


def scan(logs: Sequence[LogFile]) -> Any:
    """The scanner's result for ``logs`` (``_scanner.scan_copilot``): the one ``start``
    began for exactly these logs, if any, else a scan now."""
    with _lock:
        started = _started.pop(_key(logs), None)
    if started is not None:
        return started.result()
    return _scanner.scan_copilot(*scan_inputs(logs), BATCH_BYTES, BLOCK_BYTES)


def start(groups: Sequence[Sequence[LogFile]], workers: int) -> None:
    """Begin scanning each of ``groups``, ``workers`` at a time, for ``scan`` to take; scans
    begun earlier and not taken are dropped (a new command reads its own)."""
    forget()
    if not groups:
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="agentcost-scan-ahead")
    with _lock:
        for logs in groups:
            inputs = scan_inputs(logs)
            _started[_key(logs)] = pool.submit(
                _scanner.scan_copilot, *inputs, BATCH_BYTES, BLOCK_BYTES
            )
    pool.shutdown(wait=False)  # its threads end with their scans


def forget() -> None:
    """Drop every scan begun and not taken."""
    with _lock:
        _started.clear()


def _key(logs: Sequence[LogFile]) -> _Key:
    return tuple(
        (
            log.file,
            log.session_hint,
            log.stat.st_size if log.stat else None,
            log.stat.st_mtime_ns if log.stat else None,
            log.stat.st_ctime_ns if log.stat else None,
            log.stat.st_ino if log.stat else None,
        )
        for log in logs
    )
