"""The floor of a cold ``agentcost analyze``: what it must do before any stage after the scan.

``python -m benchmarks.floor TREE`` starts the interpreter and tunes the allocators as the
command does, discovers the logs under ``TREE``, begins the first groups' scans and imports
polars meanwhile, as the command does (``engine.groups.scan_ahead``), and has the native
scanner read every log, in the pipeline's groups, two groups at a time, largest first
(``analytics/engine/stages.py``). It then drops what the scanner returned and leaves as the
command does (``os._exit`` once its output is flushed, without tearing down the
interpreter): no events frame, no calls, sessions, tokens, prices or report.
``benchmarks.run`` times it as a child process beside the real command, so the gap between
the two is what the stages after the scan cost, and the floor against ccusage is the best
ratio a cold run can reach with this scanner.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from analytics.engine import allocators

allocators.tune()

from analytics.agents.copilot import scan_ahead  # noqa: E402
from analytics.agents.discover import LogFile, discover  # noqa: E402
from analytics.engine.groups import (  # noqa: E402
    GROUP_BYTES,
    WORKERS,
    first_scans,
    groups_of,
    largest_first,
)


def scan(logs: list[LogFile]) -> int:
    """Scan one group as ``scan_logs`` does; the count of column batches it returned."""
    tables, *_ = scan_ahead.scan(logs)
    return len(tables)


def main() -> None:
    tree = Path(sys.argv[1])
    found = discover([tree])
    groups = groups_of(found.logs, GROUP_BYTES)
    if len(groups) > 1:  # as ``scan_ahead`` begins them for a cold command
        scan_ahead.start(first_scans(groups), WORKERS)
    import polars  # noqa: F401  (the command imports it while those scans run)

    with ThreadPoolExecutor(WORKERS) as workers:
        batches = sum(workers.map(scan, [groups[i] for i in largest_first(groups)]))
    print(f"{len(found.logs)} logs, {len(groups)} groups, {batches} batches")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # as ``analytics.cli.main`` leaves (a normal exit costs 0.02-0.04 s more)
