"""Where the time and memory of one ``analyze`` go, per stage, cold (empty cache) and warm.

Stage functions are wrapped in place (``analytics.engine.analyze`` names; the reader, and within
it the native scanner's call, which runs on both cores). Per stage: wall seconds and CPU
seconds of the thread that ran it (``time.thread_time``; the scanner's and polars' own threads
are not counted, so the scan's CPU shows as its wall), summed over calls (two groups run at
once, so stages overlap), and the process RSS after its last call. Within the native pass,
the engine's own stages as it measures them (``_scanner.pass_copilot``'s ``stages``). The
warm run follows the cold one in the same process, so its RSS includes what the cold run left
allocated (the benchmark table has the warm peak of a fresh process). Import and ``--help``
times are measured in fresh processes.
"""

from __future__ import annotations

import functools
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analytics import _scanner
from analytics.agents.copilot import engine_pass as engine
from analytics.agents.copilot import events as copilot_events
from analytics.cache import fingerprints, priced_tables
from analytics.cache import results as result_cache
from analytics.core.pricing import rates
from analytics.engine import analyze as analysis
from analytics.engine import group_analysis as pipeline
from analytics.render import views

#: The command line's module, whose import time the profile reports.
_CLI = "analytics.cli.commands"

_STAGES: list[tuple[Any, str]] = [
    (analysis, "discover"),
    (fingerprints, "tree_key"),  # the whole tree's key: every input's identity
    (fingerprints, "group_key"),
    (result_cache.ResultCache, "load_lazily"),  # every stored result is read through it
    (result_cache.ResultCache, "save"),
    (result_cache.ResultCache, "load_priced"),
    (pipeline._Reused, "read"),  # the previous result, read for its unchanged groups
    (copilot_events, "scan_logs"),
    (_scanner, "scan_copilot"),
    (copilot_events, "_model_metrics"),
    # the native pass: order, repeats, placed totals, every session's fold and tokens (sums,
    # fit), priced lines
    (engine, "pass_group"),
    (_scanner, "pass_copilot"),
    (pipeline, "_analyse"),
    (priced_tables, "_repriced"),  # the previous result's priced rows, and the rest priced
    (priced_tables, "_priced"),  # as the command calls it: the tables asked for, priced
    (views, "render_json"),
    (result_cache, "flush"),
]
#: The engine's stages within the native pass (the keys of ``_scanner.pass_copilot``'s
#: ``stages``), each with its row's name: reading the lines' columns into each session's
#: events; ordering, dropping repeats and placing the shutdown totals; the fold; the token
#: stage less its fit and calibration; those two; building the Arrow tables returned.
ENGINE_STAGES = (
    ("events", "engine: events"),
    ("order", "engine: order+repeats"),
    ("fold", "engine: fold"),
    ("tokens", "engine: tokens"),
    ("fit", "engine: fit+calibration"),
    ("tables", "engine: tables"),
)
#: The runs profiled, in order: empty cache; nothing changed; one log's mtime touched (the
#: result cache misses for that log's group of sessions, which is read and analysed again;
#: the other groups come from the previous result).
_RUNS = ("cold", "warm", "one file touched")


def stages(tree: Path, cache_root: Path) -> str:
    """A markdown section: per-stage wall time of each of ``_RUNS`` on ``tree``."""
    timings: dict[str, list[tuple[float, float, float]]] = {}
    engine_seconds: dict[str, float] = {}
    originals = [(owner, name, getattr(owner, name)) for owner, name in _STAGES]
    for owner, name, function in originals:
        reporting = (owner, name) == (_scanner, "pass_copilot")
        measured = with_stages(function, engine_seconds) if reporting else function
        setattr(owner, name, _timed(_label(owner, name), measured, timings))
    shutil.rmtree(cache_root, ignore_errors=True)
    previous = os.environ.get("AGENTCOST_CACHE_DIR")
    os.environ["AGENTCOST_CACHE_DIR"] = str(cache_root)
    results = []
    table = rates.load_rates("github-copilot")
    try:
        for label in _RUNS:
            if label == "one file touched":
                first = min(tree.rglob("events.jsonl"))
                os.utime(first)
            timings.clear()
            engine_seconds.clear()
            began = time.perf_counter()
            result = analysis.analyze([tree], use_cache=True, keep_events=False)
            shown = priced_tables.priced_tables(result, table, {}, ["sessions"])["sessions"]
            views.render_json("sessions", shown, result.issues)
            result_cache.flush()  # the command waits for the cache's writes before it exits
            total = time.perf_counter() - began
            for key, row in ENGINE_STAGES:
                if key in engine_seconds:
                    timings[row] = [(engine_seconds[key], math.nan, math.nan)]
            results.append((label, total, dict(timings), _rss_mb()))
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)
        if previous is None:
            del os.environ["AGENTCOST_CACHE_DIR"]
        else:
            os.environ["AGENTCOST_CACHE_DIR"] = previous

    def cells(name: str, measured: dict[str, list[tuple[float, float, float]]]) -> str:
        calls = measured.get(name, [])
        if not calls:
            return "- | - | -"
        wall, cpu, rss = sum(c[0] for c in calls), sum(c[1] for c in calls), calls[-1][2]
        if math.isnan(cpu):  # an engine stage: its thread-seconds only
            return f"{wall:.2f} | - | -"
        return f"{wall:.2f} | {cpu:.2f} | {rss:.0f}"

    labels = [_label(owner, name) for owner, name in _STAGES]
    after = labels.index("pass_copilot") + 1
    labels[after:after] = [row for _, row in ENGINE_STAGES]
    rows = [
        f"| {label} | " + " | ".join(cells(label, t) for _, _, t, _ in results) + " |"
        for label in labels
    ]
    totals = " | ".join(f"{total:.2f} | | {rss:.0f}" for _, total, _, rss in results)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    return "\n".join(
        [
            f"## Profile ({tree.name}, in-process: what `agentcost analyze --format json` runs)",
            "",
            "Wall and CPU seconds and RSS after each stage, summed over the groups of "
            "sessions. The pipeline analyses two groups at a time, on two worker threads, so "
            "a stage's wall seconds add up across both and the stages sum to more than the "
            "total. CPU seconds are those of the thread that ran the stage (the scanner's and "
            "polars' own threads are not counted). The `engine:` rows split the native pass "
            "(`pass_copilot`) into the stages the engine measures itself: reading the lines' "
            "columns into each session's events, ordering the lines with repeats dropped and "
            "shutdown totals placed, the per-session fold, the token stage (observed tokens, "
            "segments, models), its fit and calibration, and building the Arrow tables it "
            "returns. Their seconds are thread-seconds: the steps run per session are timed "
            "on each session's thread and summed over the pass's sessions, which run in "
            "parallel on both cores, so these rows can add up to more than the pass's wall. "
            "Runs: cold (empty caches), warm (nothing "
            "changed: the result cache answers, as for an option not run before on the tree; "
            "a command run before replays its stored output instead, without any of these "
            "stages, `analytics/cache/output.py`), and one file touched (its mtime changed, as "
            "a live session's log does: the result cache misses for that log's group, which "
            "is analysed again, and the other "
            "groups' rows come from the previous result, read beside it). Later runs share "
            "the process with earlier ones, so their RSS includes what those left allocated. "
            "This process also loaded polars before agentcost's allocator options could apply "
            "(`core/allocators.py`), so its RSS is higher than the command's: the table "
            "above has the peak of fresh processes.",
            "",
            "| stage | "
            + " | ".join(f"{run} wall s | {run} CPU s | {run} RSS after, MB" for run in _RUNS)
            + " |",
            "|---|" + "---|" * 3 * len(_RUNS),
            *rows,
            f"| **total** | {totals} |",
            "",
            f"- peak RSS of this process over both runs: {peak:.0f} MB",
            *_startup(),
        ]
    )


def _label(owner: Any, name: str) -> str:
    """A stage's name in the table: a method is named with its class (two classes have load)."""
    return f"{owner.__name__}.{name}" if isinstance(owner, type) else name


def _timed(
    name: str, function: Callable[..., Any], into: dict[str, list[tuple[float, float, float]]]
) -> Any:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        began, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent = (time.perf_counter() - began, time.thread_time() - cpu, _rss_mb())
            into.setdefault(name, []).append(spent)

    return timed


def with_stages(pass_copilot: Callable[..., Any], into: dict[str, float]) -> Callable[..., Any]:
    """``pass_copilot`` adding each call's engine stage seconds to ``into``."""

    @functools.wraps(pass_copilot)
    def reporting(*args: Any, **kwargs: Any) -> Any:
        return pass_copilot(*args, **kwargs, stages=into)

    return reporting


def _rss_mb() -> float:
    """Resident set size of this process now (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _startup() -> list[str]:
    """Import time of ``analytics.cli.commands`` (``-X importtime``) and wall time of ``--help``."""
    trace = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {_CLI}"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    cumulative = {
        m.group(2).strip(): int(m.group(1))
        for m in re.finditer(r"\|\s*(\d+) \|(.*)$", trace, re.MULTILINE)
    }
    heavy = sorted(
        ((name.strip(), us) for name, us in cumulative.items() if "." not in name.strip()),
        key=lambda item: -item[1],
    )[:4]
    began = time.perf_counter()
    subprocess.run(
        [str(Path(sys.executable).parent / "agentcost"), "--help"],
        capture_output=True,
        check=True,
    )
    help_s = time.perf_counter() - began
    return [
        f"- `import {_CLI}`: {cumulative.get(_CLI, 0) / 1e6:.2f} s "
        f"(top-level packages: {', '.join(f'{n} {us / 1e6:.2f} s' for n, us in heavy)}); "
        f"plotly imported: {'plotly' in cumulative}",
        f"- `agentcost --help`: {help_s:.2f} s wall",
    ]
