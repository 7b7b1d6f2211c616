"""Benchmark ``agentcost analyze`` against ``ccusage copilot session`` on simulated trees.

Run from the repository root: ``python -m benchmarks.run`` (``make bench``). For each size it
generates a tree once with ``agentcost simulate`` (kept in ``benchmarks/data/``), installs
ccusage (pinned) into ``benchmarks/.tools`` with npm, then alternates, for each repetition:
ccusage, agentcost cold (empty caches), agentcost warm (the caches the cold run filled, nothing
changed: the output cache replays the report), agentcost warm without that output (the stored
analysis loaded, priced and rendered, as for an option not run before), agentcost touched (one
log's mtime changed, as a live session's log does: the result cache misses for that log's group
of sessions, which is read and analysed again). Wall
time and the child's peak RSS come from ``os.wait4``. It checks that both tools report the same
per-session tokens where both see a session, prints the table and writes
``benchmarks/README.md``; with ``--profile`` it adds a per-stage profile of the largest tree.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from analytics.cache.output import OutputCache
from benchmarks import profile
from benchmarks.notes import write_keeping_notes

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data"
RESULTS = HERE / "results"
#: Where ``measure`` writes the child's stdout.
STDOUT = RESULTS / "stdout.tmp"
TOOLS = HERE / ".tools"
#: The newest ccusage that runs here. 20.0.26 (2026-09-29, the version issue 37 names) ships
#: only a launcher on npm; its binary for this platform, ``@ccusage/ccusage-linux-x64``, stops
#: at 20.0.24 in the registry (``npm view @ccusage/ccusage-linux-x64 versions``, 2026-12-07).
CCUSAGE_VERSION = "20.0.24"
CCUSAGE = TOOLS / "node_modules" / ".bin" / "ccusage"
AGENTCOST = Path(sys.executable).parent / "agentcost"
SEED = 7
STORED = "agentcost warm, no stored output"
FLOOR = "scan floor (no analysis)"
TOOLS_MEASURED = (
    "ccusage",
    FLOOR,
    "agentcost cold",
    "agentcost warm",
    STORED,
    "agentcost touched",
)


@dataclass(frozen=True)
class Run:
    """One measured child process."""

    tool: str
    size_mb: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000], help="tree MB")
    parser.add_argument("--repeat", type=int, default=5, help="runs per tool and size")
    parser.add_argument("--profile", action="store_true", help="profile the largest tree")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    ensure_ccusage()
    # Byte-compile agentcost as `pip install` does for an installed package: the editable
    # development install never writes .pyc where PYTHONDONTWRITEBYTECODE is set (it is on
    # this machine), which would add ~60 ms of compiling to every measured run.
    compileall.compile_dir(REPO / "analytics", quiet=1)
    runs: list[Run] = []
    agreement: dict[int, str] = {}
    for size in args.sizes:
        tree = ensure_tree(size)
        cache = RESULTS / f"cache-{size}mb"
        for _ in range(args.repeat):
            ccusage_run, ccusage_out = measure("ccusage", size, ccusage_command(), tree, cache)
            floor, _ = measure(FLOOR, size, floor_command(tree), tree, cache)
            shutil.rmtree(cache, ignore_errors=True)
            cold, agentcost_out = measure(
                "agentcost cold", size, agentcost_command(tree), tree, cache
            )
            warm, _ = measure("agentcost warm", size, agentcost_command(tree), tree, cache)
            shutil.rmtree(OutputCache(cache).root)
            stored, _ = measure(STORED, size, agentcost_command(tree), tree, cache)
            os.utime(min(tree.rglob("events.jsonl")))
            touched, _ = measure("agentcost touched", size, agentcost_command(tree), tree, cache)
            runs += [ccusage_run, floor, cold, warm, stored, touched]
        agreement[size] = compare(agentcost_out, ccusage_out)
    big = max(args.sizes)
    ladder = steps(ensure_tree(big), big, RESULTS / "steps-cache", args.repeat)
    ladder += validation_reference(ensure_tree(big), big, args.repeat)
    profiles = (
        profile.stages(ensure_tree(max(args.sizes)), RESULTS / "profile-cache")
        if args.profile
        else ""
    )
    report = render(runs, agreement, ladder + profiles)
    print(report)
    write_keeping_notes(HERE / "README.md", report)
    (RESULTS / f"runs-{dt.date.today()}.json").write_text(
        json.dumps([run.__dict__ for run in runs], indent=1)
    )


def ensure_ccusage() -> None:
    """Install the pinned ccusage into benchmarks/.tools (npm), once."""
    if not CCUSAGE.exists():
        subprocess.run(
            ["npm", "install", "--prefix", str(TOOLS), f"ccusage@{CCUSAGE_VERSION}"], check=True
        )


def ensure_tree(size: int) -> Path:
    """``benchmarks/data/tree-<size>mb`` made by ``agentcost simulate`` (once per seed/size)."""
    tree = DATA / f"tree-{size}mb"
    command = [str(AGENTCOST), "simulate", str(tree), "--seed", str(SEED), "--size-mb", str(size)]
    marker = DATA / f"tree-{size}mb.command"
    if not marker.exists() or marker.read_text() != " ".join(command[1:]):
        shutil.rmtree(tree, ignore_errors=True)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        marker.write_text(" ".join(command[1:]))
    return tree


def ccusage_command() -> list[str]:
    return [str(CCUSAGE), "copilot", "session", "--json", "--offline"]


def agentcost_command(tree: Path) -> list[str]:
    """``agentcost analyze --format json`` (the result cache is on by default)."""
    return [str(AGENTCOST), "analyze", str(tree), "--format", "json"]


def floor_command(tree: Path, upto: str = "scan") -> list[str]:
    """Start-up, discovery and the native scan of every log, nothing after (``floor.py``);
    with ``upto``, the steps of the command after it up to that one."""
    return [sys.executable, "-m", "benchmarks.floor", str(tree), "--upto", upto]


def steps(tree: Path, size: int, cache: Path, repeat: int) -> str:
    """A markdown section: the wall time of each of ``floor.STEPS`` and of the cold command,
    on ``tree``, in ``repeat`` alternating rounds on an empty cache; medians, and what each
    step adds to the one before."""
    # imported here, after polars: its allocator tuning is for a process of its own
    from benchmarks.floor import STEPS

    labels = [*STEPS, "command"]
    walls: dict[str, list[float]] = {label: [] for label in labels}
    for _ in range(repeat):
        for label in labels:
            shutil.rmtree(cache, ignore_errors=True)
            command = agentcost_command(tree) if label == "command" else floor_command(tree, label)
            run, _ = measure(label, size, command, tree, cache)
            walls[label].append(run.wall_s)
    medians = {label: statistics.median(walls[label]) for label in labels}
    base = medians["scan"]
    rows, before = [], base
    for label in labels:
        name = STEPS.get(label, "the command: `agentcost analyze --format json`, cold")
        rows.append(
            f"| {name} | {medians[label]:.3f} | {medians[label] / base:.2f}x "
            f"| {medians[label] - before:+.3f} |"
        )
        before = medians[label]
    return "\n".join(
        [
            f"## From the scan floor to the command ({size} MB, cold)",
            "",
            "Each step is `python -m benchmarks.floor TREE --upto STEP` (see `floor.py`): it "
            "does what the step before did and one thing more, so the last column is what "
            f"that thing costs in wall time. {repeat} alternating rounds, medians; an empty "
            "cache for every run.",
            "",
            "| step | median wall s | vs the floor | added s |",
            "|---|---|---|---|",
            *rows,
            "",
            "",
        ]
    )


#: The scanner alone, and the maintained JSON readers validating every line of the same tree
#: (``native/bench.rs``), built as the extension is (release).
SCAN_BENCH = ["cargo", "run", "--release", "--quiet", "--example", "scan_bench", "--"]


def validation_reference(tree: Path, size: int, repeat: int) -> str:
    """A markdown section: the native scanner's CPU time on ``tree`` against serde_json's
    and sonic-rs's full validation of every line, in the same run (issue 38's target: the
    scan within 1.3x of full validation), as ``scan_bench --reference`` prints them."""
    command = [*SCAN_BENCH, str(tree), str(repeat), "--reference"]
    printed = subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True)
    lines = printed.stdout.strip().splitlines()
    return "\n".join(
        [
            "",
            f"## The scanner against full validation ({size} MB)",
            "",
            "`cargo run --release --example scan_bench -- TREE N --reference` "
            "(`native/bench.rs`): the scanner alone, without Python, then two maintained "
            "JSON libraries validating every line in full and keeping nothing, on the same "
            "threads; CPU seconds, medians of the runs.",
            "",
            *[f"- {line}" for line in lines[-3:]],
            "",
        ]
    )


def measure(
    tool: str,
    size: int,
    command: list[str],
    tree: Path,
    cache: Path,
    extra_env: dict[str, Path] | None = None,
    *,
    check: bool = True,
    keep_stdout: bool = True,
) -> tuple[Run, bytes]:
    """Run one child; its wall time, CPU time and peak RSS (from ``os.wait4``); its stdout.
    ``extra_env``: more variables for the child (another agent's home, say). An exit status
    other than 0 or 1 stops the benchmark, unless ``check`` is false (a tool that is expected
    to refuse the tree yet: its stdout then tells). With ``keep_stdout`` false the stdout stays
    in ``STDOUT`` and is not read: a child forked from a process that grew reports that
    process's size as its own peak RSS (Linux keeps the larger ``maxrss`` across ``exec``), so
    a benchmark of large outputs must not hold them."""
    env = {**os.environ, "COPILOT_HOME": str(tree), "AGENTCOST_CACHE_DIR": str(cache)}
    env |= {name: str(value) for name, value in (extra_env or {}).items()}
    out_path = STDOUT
    with out_path.open("wb") as out:
        began = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
    if check and os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{command} failed with status {status}")
    run = Run(tool, size, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
    return run, out_path.read_bytes() if keep_stdout else b""


def compare(agentcost_json: bytes, ccusage_json: bytes) -> str:
    """Per-session token totals of both tools, on the sessions both report.

    A known, explained difference: when a session's last process crashed after its last
    ``session.shutdown``, agentcost adds the output tokens of the later ``assistant.message``
    lines (``token_totals_source`` = ``shutdown+messages``); ccusage counts shutdowns only.
    """
    sessions = json.loads(agentcost_json)["sessions"]
    ours = {
        s["session_id"]: (
            s["input_tokens"] - s["cache_read_tokens"] - s["cache_write_tokens"],
            s["output_tokens"],
            s["cache_read_tokens"],
            s["cache_write_tokens"],
        )
        for s in sessions
        if s["input_tokens"] is not None
    }
    source = {s["session_id"]: s["token_totals_source"] for s in sessions}
    theirs = {
        s["sessionId"]: (
            s["inputTokens"],
            s["outputTokens"],
            s["cacheReadTokens"],
            s["cacheCreationTokens"],
        )
        for s in json.loads(ccusage_json)["sessions"]
    }
    both = ours.keys() & theirs.keys()
    differ = sorted(k for k in both if ours[k] != theirs[k])
    explained = [
        k
        for k in differ
        if source[k] == "shutdown+messages"
        and ours[k][1] > theirs[k][1]
        and (ours[k][0], *ours[k][2:]) == (theirs[k][0], *theirs[k][2:])
    ]
    unexplained = sorted(set(differ) - set(explained))
    return (
        f"{len(both)} sessions in both ({len(ours)} with token totals in agentcost, "
        f"{len(theirs)} in ccusage); uncached input, output, cache read and cache write "
        f"tokens agree on {len(both) - len(differ)}; {len(explained)} differ only in output "
        "tokens after a crash (agentcost adds the messages written after the last shutdown, "
        f"ccusage does not); {len(unexplained)} differ otherwise"
        + (f": {', '.join(unexplained[:5])}" if unexplained else "")
    )


def render(runs: list[Run], agreement: dict[int, str], profiles: str) -> str:
    """benchmarks/README.md: how, where, the table, the targets, the agreement, the profile."""
    sizes = sorted({run.size_mb for run in runs})
    rows = []
    medians: dict[tuple[str, int], tuple[float, float]] = {}
    for size in sizes:
        for tool in TOOLS_MEASURED:
            mine = [run for run in runs if run.tool == tool and run.size_mb == size]
            wall = statistics.median(run.wall_s for run in mine)
            rss = statistics.median(run.peak_rss_mb for run in mine)
            cpu = statistics.median(run.cpu_s for run in mine)
            medians[tool, size] = (wall, rss)
            base = medians["ccusage", size][0]
            walls = ", ".join(f"{run.wall_s:.2f}" for run in mine)
            rows.append(
                f"| {size} MB | {tool} | {wall:.2f} | {walls} | {cpu:.2f} | {rss:.0f} "
                f"| {wall / base:.2f}x |"
            )
    return "\n".join(
        [
            "# Benchmarks: agentcost analyze vs ccusage copilot session",
            "",
            f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by `python -m benchmarks.run` "
            f"(`make bench`); {len(runs) // (len(TOOLS_MEASURED) * len(sizes))} alternating "
            "repetitions per size (ccusage, the scan floor, agentcost cold, warm, warm "
            "without a stored output, touched), medians shown. "
            "Numbers are measured, "
            "never estimated; other processes shared the machine, so compare within a row set.",
            "",
            *machine_facts(),
            "",
            "| tree | tool | median wall s | each run s | median CPU s | median peak RSS MB "
            "| wall vs ccusage |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "## Targets",
            "",
            *targets(medians, sizes),
            "",
            "## What is being compared",
            "",
            "ccusage reports per-session totals from the log's own `session.shutdown` lines "
            "(the agreement check below shows it ignores calls after the last shutdown). "
            "agentcost decodes and validates every line with its native scanner (every line "
            "becomes an event or an issue), builds one row per event (~50 columns) and per LLM "
            "call, reconstructs "
            "per-call tokens and prices them, a group of sessions (~64 MB of logs) at a time, "
            "two groups at once (`analytics/engine/group_analysis.py`). The scan floor "
            "(`benchmarks/floor.py`) is the part of a cold run no stage after the scan can "
            "remove: start-up, discovery, and the native scan of every log in the same "
            "groups, two at a time (the first two begun while polars is imported, as the "
            "command does), its results dropped, and the command's exit. "
            "Cold = empty caches. Warm = nothing changed since the cold run: the output "
            "cache (`analytics/cache/output.py`, keyed "
            "by every input's path, size, mtime, ctime and inode, the options and the code) "
            "replays what the same command printed, and the time is start-up, discovery and "
            "one read, without importing polars. Warm without a stored output = the same, "
            "with the output cache emptied first (a command or option not run before on this "
            "tree): the result cache (`analytics/cache/results.py`, keyed the same way) "
            "answers, and the time is start-up, discovery, loading the stored tables and the "
            "priced sessions kept beside them (`analytics/cache/priced_tables.py`), and JSON. "
            "Touched = one log's mtime changed (what a live session does): the result cache "
            "misses for that log's group of sessions, which is read and analysed again; the "
            "other groups' rows come from the previous whole result, and only that group's "
            "sessions are priced again (`Previous` in `analytics/engine/group_analysis.py`, "
            "`analytics/cache/priced_tables.py`). The profile at the end shows where "
            "the time and the memory go, stage by stage.",
            "",
            "## Do the tools agree?",
            "",
            *(f"- {size} MB: {text}" for size, text in agreement.items()),
            "",
            profiles,
        ]
    )


def cpu_model() -> str:
    """The machine's CPU model, as ``/proc/cpuinfo`` names it."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    return next(
        (line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
        platform.processor(),
    )


def machine_facts() -> list[str]:
    cpu = cpu_model()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    node = subprocess.run(
        ["node", "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    import polars

    return [
        f"- machine: {cpu}, {os.cpu_count()} cores, {memory:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}",
        f"- agentcost: Python {platform.python_version()}, polars {polars.__version__}; "
        f"ccusage {CCUSAGE_VERSION} (npm, native binary) on node {node}",
        f"- trees: `agentcost simulate --seed {SEED} --size-mb N` (CLI 1.0.80-shaped logs); "
        "ccusage reads them through `COPILOT_HOME`",
        f"- agentcost command: `{' '.join(agentcost_command(DATA / 'tree-NNNmb')[:-4])} "
        "analyze TREE --format json` (the `analytics` package byte-compiled first, as `pip "
        "install` does)",
    ]


def targets(medians: dict[tuple[str, int], tuple[float, float]], sizes: list[int]) -> list[str]:
    big, small = max(sizes), min(sizes)
    floor, cold, warm, stored, touched, base = (
        medians[t, big]
        for t in (FLOOR, "agentcost cold", "agentcost warm", STORED, "agentcost touched", "ccusage")
    )
    lines = [
        f"- cold ≤ 3x ccusage wall on {big} MB: {cold[0] / base[0]:.2f}x "
        f"({'met' if cold[0] <= 3 * base[0] else 'missed'})",
        f"  - the scan floor (start-up, discovery and the native scan, nothing after) is "
        f"{floor[0] / base[0]:.2f}x: within 3x, the stages after the scan would have "
        f"{3 * base[0] - floor[0]:.2f} s; the cold run spends {cold[0] - floor[0]:.2f} s on them",
        f"- cold ≤ 1.5x the scan floor on {big} MB: {cold[0] / floor[0]:.2f}x "
        f"({'met' if cold[0] <= 1.5 * floor[0] else 'missed'})",
        f"- cold peak RSS ≤ 300 MB on {big} MB: {cold[1]:.0f} MB "
        f"({'met' if cold[1] <= 300 else 'missed'})",
        f"- warm ≤ 0.5x ccusage wall on {big} MB: {warm[0] / base[0]:.2f}x "
        f"({'met' if warm[0] <= 0.5 * base[0] else 'missed'}); without a stored output "
        f"{stored[0] / base[0]:.2f}x ({'within' if stored[0] <= base[0] else 'over'} 1x)",
        f"- one file touched ≤ 1.5x ccusage wall on {big} MB: {touched[0] / base[0]:.2f}x "
        f"({'met' if touched[0] <= 1.5 * base[0] else 'missed'})",
    ]
    if big != small:
        scale = big / small
        for tool in TOOLS_MEASURED[1:]:
            (w1, r1), (w2, r2) = medians[tool, small], medians[tool, big]
            lines.append(
                f"- {tool}, {small} → {big} MB ({scale:.0f}x the data): wall {w2 / w1:.2f}x, "
                f"peak RSS {r2 / r1:.2f}x"
            )
    return lines


if __name__ == "__main__":
    main()
