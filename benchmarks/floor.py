"""The floor of a cold ``agentcost analyze``, and the steps from it to the command.

``python -m benchmarks.floor TREE`` starts the interpreter and tunes the allocators as the
command does, discovers the logs under ``TREE``, begins the first groups' scans and imports
polars meanwhile, as the command does (``engine.groups.scan_ahead``), and has the native
scanner read every log, in the pipeline's groups, two groups at a time, largest first
(``analytics/engine/group_analysis.py``). It then drops what the scanner returned and leaves as the
command does (``os._exit`` once its output is flushed, without tearing down the
interpreter): no events frame, no calls, sessions, tokens, prices or report.
``benchmarks.run`` times it as a child process beside the real command, so the gap between
the two is what the stages after the scan cost, and the floor against ccusage is the best
ratio a cold run can reach with this scanner.

``--upto STEP`` goes further, one step of the command at a time (``STEPS``), so that the
benchmark can say what each step adds to the floor, in wall time, on the same tree:

- ``pass``: each group's scan read as the pipeline reads it (``scan_logs``: the shutdowns'
  per-model totals decoded, the scan's issues as a frame), then the engine's native pass on
  it (``_scanner.pass_copilot``: order, repeats, fold, tokens, fit), its Arrow tables dropped;
- ``tables``: the same pass through ``agents.copilot.engine_pass.pass_group``, which makes its
  tables polars frames in the contracts' schemas;
- ``analysis``: the whole analysis without a cache (``analyze``: every group's stages, the
  groups' tables combined, the other agents' logs looked for);
- ``stored``: the same with the result cache on, as the command runs it (an empty cache: the
  tables are written, and waited for);
- ``priced``: then the sessions priced and their JSON printed, as ``analyze --format json``
  does, without the command line (its option parsing, its output cache).
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from analytics.core import allocators

allocators.tune()

from analytics.agents.copilot import scan_ahead  # noqa: E402
from analytics.agents.discover import Found, LogFile, discover  # noqa: E402
from analytics.engine.groups import (  # noqa: E402
    GROUP_BYTES,
    WORKERS,
    first_scans,
    groups_of,
    largest_first,
)
from analytics.engine.groups import scan_ahead as begin_scans  # noqa: E402

#: The steps ``--upto`` takes, in order, each one doing what the one before did and more,
#: with what it adds (as ``benchmarks.run`` names it in its steps table).
STEPS = {
    "scan": "the scan floor: start-up, discovery, the native scan",
    "pass": "+ the engine's native pass on each group (Arrow tables dropped)",
    "tables": "+ its tables made polars frames (`pass_group`)",
    "analysis": "+ the analysis: groups combined, other agents looked for (no cache)",
    "stored": "+ the result cache written",
    "priced": "+ the sessions priced and their JSON printed",
}
#: The steps that run the whole analysis (``analysed``), which begins its own scans.
_ANALYSED = ("analysis", "stored", "priced")


def scan(logs: list[LogFile]) -> int:
    """Scan one group as ``scan_logs`` does; the count of column batches it returned."""
    tables, *_ = scan_ahead.scan(logs)
    return len(tables)


def passed(logs: list[LogFile], *, as_frames: bool) -> int:
    """Scan one group and run the engine's pass on it (``as_frames``: through
    ``pass_group``, its tables made polars frames); the count of column batches scanned."""
    from analytics import _scanner
    from analytics.agents.copilot.engine_pass import pass_group
    from analytics.agents.copilot.event_types import KNOWN_EVENT_TYPES
    from analytics.agents.copilot.events import scan_logs
    from analytics.core.schema import MODEL_METRICS, OBSERVED_USAGE, conform, empty

    scanned = scan_logs(logs)
    usage = empty(OBSERVED_USAGE)  # as a tree without per-call records beside its logs
    if as_frames:
        pass_group(scanned, None, usage)
    else:
        _scanner.pass_copilot(
            scanned.tables,
            conform(scanned.model_metrics, MODEL_METRICS).rechunk().__arrow_c_stream__(),
            scanned.failed,
            sorted(KNOWN_EVENT_TYPES),
            None,
            usage.__arrow_c_stream__(),
        )
    return len(scanned.tables)


def analysed(tree: Path, found: Found, step: str) -> str:
    """The ``analysis``, ``stored`` or ``priced`` step on ``tree``; what it prints."""
    from analytics.engine.analyze import analyze

    use_cache = step != "analysis"
    result = analyze([tree], use_cache=use_cache, keep_events=False, found=found)
    text = f"{result.sessions.height} sessions"
    if step == "priced":
        from analytics.cache.priced_tables import priced_tables
        from analytics.core.pricing.rates import load_rates
        from analytics.render import views

        sessions = priced_tables(result, load_rates("github-copilot"), {}, ["sessions"])["sessions"]
        text = "".join(views.render_json("sessions", sessions, result.issues))
    if use_cache:
        from analytics.cache import results

        results.flush()  # the command waits for the result cache's writes before it exits
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--upto", choices=list(STEPS), default="scan", help="the last step run")
    args = parser.parse_args()
    found = discover([args.tree])
    groups = groups_of(found.logs, GROUP_BYTES)
    if args.upto in _ANALYSED:  # the analysis begins its scans itself, as the command does
        begin_scans(found, [args.tree], use_cache=args.upto != "analysis")
        print(analysed(args.tree, found, args.upto))
        return
    if len(groups) > 1:  # as ``scan_ahead`` begins them for a cold command
        scan_ahead.start(first_scans(groups), WORKERS)
    import polars  # noqa: F401  (the command imports it while those scans run)

    def work(logs: list[LogFile]) -> int:
        return scan(logs) if args.upto == "scan" else passed(logs, as_frames=args.upto == "tables")

    with ThreadPoolExecutor(WORKERS) as workers:
        batches = sum(workers.map(work, [groups[i] for i in largest_first(groups)]))
    print(f"{len(found.logs)} logs, {len(groups)} groups, {batches} batches")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # as ``analytics.cli.main`` leaves (a normal exit costs 0.02-0.04 s more)
