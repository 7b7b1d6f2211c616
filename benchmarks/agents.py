"""Benchmark ``agentcost analyze`` against ccusage on 1 GB Claude Code and Codex trees.

``python -m benchmarks.agents [--mb 1000] [--repeat 5]`` (part of ``make bench``) builds each
tree once from the real logs' shapes (``benchmarks/agent_trees.py``, under
``benchmarks/data/agents-<mb>mb``), then alternates, per repetition: ccusage (``claude session``
or ``codex session``, ``--json --offline``, the tree as ``CLAUDE_CONFIG_DIR`` or
``CODEX_HOME``) and a cold ``agentcost analyze TREE --format json`` (empty caches). It prints
the medians with the ratio to ccusage and checks the issue's targets: cold ≤ 3x ccusage and
peak RSS ≤ 300 MB. The table goes to ``benchmarks/AGENTS.md``; every run to
``benchmarks/results/agents-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
from pathlib import Path

from benchmarks.agent_trees import build
from benchmarks.notes import write_keeping_notes
from benchmarks.run import AGENTCOST, CCUSAGE, DATA, HERE, RESULTS, Run, ensure_ccusage, measure

#: Each agent's tree under the data directory, the ccusage report and how ccusage finds it.
AGENTS = {
    "claude-code": ("claude", "CLAUDE_CONFIG_DIR", "projects"),
    "codex": ("codex", "CODEX_HOME", "sessions"),
}
TARGET_RATIO = 3.0
TARGET_RSS_MB = 300.0


def ensure_trees(megabytes: int) -> Path:
    """``benchmarks/data/agents-<mb>mb`` with both agents' trees, built once."""
    root = DATA / f"agents-{megabytes}mb"
    marker = root / "done"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        for agent in AGENTS:
            build(agent, root, megabytes)
        marker.write_text(str(megabytes))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1000, help="tree size per agent, MB")
    parser.add_argument("--repeat", type=int, default=5, help="runs per tool and agent")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    ensure_ccusage()
    root = ensure_trees(args.mb)
    runs: list[Run] = []
    for agent, (report, variable, _) in AGENTS.items():
        home = root / agent
        for _ in range(args.repeat):
            cache = RESULTS / "agents-cache"
            shutil.rmtree(cache, ignore_errors=True)
            ccusage = [str(CCUSAGE), report, "session", "--json", "--offline"]
            run, _ = measure(f"ccusage {agent}", args.mb, ccusage, home, cache, {variable: home})
            runs.append(run)
            cold = [str(AGENTCOST), "analyze", str(home), "--format", "json"]
            run, _ = measure(f"agentcost {agent} cold", args.mb, cold, home, cache, {})
            runs.append(run)
    text = render(runs)
    print(text)
    write_keeping_notes(HERE / "AGENTS.md", text)
    (RESULTS / f"agents-{dt.date.today()}.json").write_text(
        json.dumps([run.__dict__ for run in runs], indent=1)
    )


def render(runs: list[Run]) -> str:
    """The medians per tool, the ratio to ccusage, and the targets met or missed."""
    lines = [
        "# Benchmarks: Claude Code and Codex trees, agentcost vs ccusage",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by `python -m benchmarks.agents`"
        " (`make bench`): medians of alternating repetitions; other processes may share the"
        " machine, so compare within the table.",
        "",
        "| tree | tool | median wall s | each run s | median peak RSS MB | wall vs ccusage |",
        "|---|---|---|---|---|---|",
    ]
    targets = []
    for agent in AGENTS:
        mine = [r for r in runs if r.tool == f"agentcost {agent} cold"]
        theirs = [r for r in runs if r.tool == f"ccusage {agent}"]
        base = statistics.median(r.wall_s for r in theirs)
        for tool_runs in (theirs, mine):
            wall = statistics.median(r.wall_s for r in tool_runs)
            rss = statistics.median(r.peak_rss_mb for r in tool_runs)
            each = ", ".join(f"{r.wall_s:.2f}" for r in tool_runs)
            lines.append(
                f"| {agent} {tool_runs[0].size_mb} MB | {tool_runs[0].tool} | {wall:.2f} | {each}"
                f" | {rss:.0f} | {wall / base:.2f}x |"
            )
        ratio = statistics.median(r.wall_s for r in mine) / base
        rss = statistics.median(r.peak_rss_mb for r in mine)
        targets.append(
            f"- {agent}: cold {ratio:.2f}x ccusage (target ≤ {TARGET_RATIO:.0f}x: "
            f"{'met' if ratio <= TARGET_RATIO else 'missed'}), peak RSS {rss:.0f} MB "
            f"(target ≤ {TARGET_RSS_MB:.0f} MB: {'met' if rss <= TARGET_RSS_MB else 'missed'})"
        )
    return "\n".join([*lines, "", "## Targets", "", *targets, ""])


if __name__ == "__main__":
    main()
