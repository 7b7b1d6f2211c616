"""The floor of a cold ``agentcost analyze``: what it must do before any stage after the scan.

``python -m benchmarks.floor TREE`` starts the interpreter, tunes the allocators and imports
polars as the command does, discovers the logs under ``TREE``, and has the native scanner read
every log, in the pipeline's groups, two groups at a time (``analytics/engine/stages.py``). It then
drops what the scanner returned and exits: no events frame, no calls, sessions, tokens,
prices or report. ``benchmarks.run`` times it as a child process beside the real command, so
the gap between the two is what the stages after the scan cost, and the floor against
ccusage is the best ratio a cold run can reach with this scanner.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from analytics.engine import allocators

allocators.tune()

import polars  # noqa: E402, F401  (the command imports it before reading)

from analytics import _scanner  # noqa: E402
from analytics.agents.copilot.events import BATCH_BYTES, BLOCK_BYTES, scan_inputs  # noqa: E402
from analytics.agents.discover import LogFile, discover  # noqa: E402
from analytics.engine.stages import GROUP_BYTES, WORKERS, _groups  # noqa: E402


def scan(logs: list[LogFile]) -> int:
    """Scan one group as ``scan_logs`` does; the count of column batches it returned."""
    tables, *_ = _scanner.scan_copilot(*scan_inputs(logs), BATCH_BYTES, BLOCK_BYTES)
    return len(tables)


def main() -> None:
    found = discover([Path(sys.argv[1])])
    groups = _groups(found.logs, GROUP_BYTES)
    with ThreadPoolExecutor(WORKERS) as workers:
        batches = sum(workers.map(scan, groups))
    print(f"{len(found.logs)} logs, {len(groups)} groups, {batches} batches")


if __name__ == "__main__":
    main()
