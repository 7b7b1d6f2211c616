"""The everyday commands on a real three-agent home, against ccusage's work on the same home.

``python -m benchmarks.real_home [--repeat 5]`` lays the real logs of ``../shared/real_logs``
out as one user's home, in a temporary directory: the Claude Code files under
``.claude/projects`` and the Codex rollouts under ``.codex/sessions``, as
``benchmarks.ccusage_agents`` lays them out, and every Copilot CLI log under
``.copilot/session-state/<session>/events.jsonl``. Then, alternating, ``--repeat`` times:

- ccusage's work on that home: ``claude session``, ``codex session`` and ``copilot session``
  (``--json --offline``), three processes, timed together (their walls summed);
- agentcost, on the default homes (no path given), each command cold (an empty cache) and
  then warm (the same command again, nothing changed): ``analyze``, ``analyze --calls``,
  ``top``, ``report --html`` and ``statusline``.

It prints the CPU model and a table of medians with each command's ratio to ccusage's work,
against issue 38's targets (``analyze`` ≤ 4x, ``--calls`` and ``top`` ≤ 6x, ``report`` ≤ 12x,
``statusline`` ≤ 1x), and writes it to ``benchmarks/HOME.md`` (notes under the marker kept).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import shutil
import statistics
import tempfile
from pathlib import Path

from benchmarks.ccusage_agents import REAL_LOGS, claude_layout, codex_layout
from benchmarks.notes import write_keeping_notes
from benchmarks.run import AGENTCOST, CCUSAGE, cpu_model, ensure_ccusage, measure

HERE = Path(__file__).resolve().parent
#: The real-log folders that hold Copilot CLI logs (the others are other agents').
NOT_COPILOT = {"claude-code", "codex", "pi", "gemini-cli", "opencode", "kimi", "antigravity"}
#: agentcost's commands, as the user types them after ``agentcost``, with their targets.
COMMANDS: dict[str, tuple[list[str], float]] = {
    "analyze": (["analyze"], 4.0),
    "analyze --calls": (["analyze", "--calls"], 6.0),
    "top": (["top"], 6.0),
    "report --html": (["report", "--html", "{out}/report.html"], 12.0),
    "statusline": (["statusline"], 1.0),
}
CCUSAGE_REPORTS = ("claude", "codex", "copilot")


def lay_out(home: Path) -> dict[str, int]:
    """The real logs as one home under ``home``; how many files each agent got."""
    claude = claude_layout(REAL_LOGS / "claude-code", home / ".claude")
    codex = codex_layout(REAL_LOGS / "codex", home / ".codex")
    copilot = 0
    for folder in sorted(REAL_LOGS.iterdir()):
        if not folder.is_dir() or folder.name in NOT_COPILOT:
            continue
        for log in sorted(folder.rglob("*.jsonl")):
            session = hashlib.sha256(str(log.relative_to(REAL_LOGS)).encode()).hexdigest()[:32]
            dest = home / ".copilot" / "session-state" / session / "events.jsonl"
            dest.parent.mkdir(parents=True)
            shutil.copyfile(log, dest)
            copilot += 1
    return {"claude-code": len(claude), "codex": len(codex), "copilot": copilot}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measure")
    args = parser.parse_args()
    ensure_ccusage()
    with tempfile.TemporaryDirectory(prefix="agentcost-home-") as tmp:
        home = Path(tmp) / "home"
        files = lay_out(home)
        env = {
            "HOME": home,
            "CLAUDE_CONFIG_DIR": home / ".claude",
            "CODEX_HOME": home / ".codex",
            "XDG_DATA_HOME": home / ".local" / "share",
        }
        copilot, cache, out = home / ".copilot", Path(tmp) / "cache", Path(tmp) / "out"
        out.mkdir()
        walls: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            total = 0.0
            for report in CCUSAGE_REPORTS:
                command = [str(CCUSAGE), report, "session", "--json", "--offline"]
                run, _ = measure("ccusage", 0, command, copilot, cache, env, keep_stdout=False)
                total += run.wall_s
            walls.setdefault("ccusage (claude + codex + copilot session)", []).append(total)
            for name, (words, _) in COMMANDS.items():
                command = [str(AGENTCOST), *(w.format(out=out) for w in words)]
                shutil.rmtree(cache, ignore_errors=True)
                for state in ("cold", "warm"):
                    run, _ = measure(name, 0, command, copilot, cache, env, keep_stdout=False)
                    walls.setdefault(f"{name}, {state}", []).append(run.wall_s)
    report = render(walls, files, args.repeat)
    print(report)
    write_keeping_notes(HERE / "HOME.md", report)


def render(walls: dict[str, list[float]], files: dict[str, int], repeat: int) -> str:
    """The report: the machine, the home, and a row per measure with its ratio and target."""
    medians = {name: statistics.median(runs) for name, runs in walls.items()}
    base_name = next(iter(walls))
    base = medians[base_name]
    rows = [
        "| measure | median wall s | each run s | vs ccusage's work | target |",
        "|---|---|---|---|---|",
    ]
    for name, runs in walls.items():
        command = name.rsplit(", ", 1)[0]
        target = COMMANDS[command][1] if command in COMMANDS else None
        ratio = medians[name] / base
        met = "" if target is None else f"≤ {target:g}x: {'met' if ratio <= target else 'missed'}"
        each = ", ".join(f"{run:.2f}" for run in runs)
        rows.append(f"| {name} | {medians[name]:.3f} | {each} | {ratio:.2f}x | {met} |")
    held = ", ".join(f"{count} {agent}" for agent, count in files.items())
    return "\n".join(
        [
            "# The everyday commands on a real three-agent home",
            "",
            f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by "
            f"`python -m benchmarks.real_home` on {cpu_model()}; {repeat} alternating "
            f"repetitions, medians. The home: the real logs of `../shared/real_logs` laid out "
            f"as one user's ({held} files). ccusage's work is its three `session --json "
            f"--offline` reports, one process each, their walls summed. agentcost runs each "
            f"command on the default homes, cold (an empty cache) then warm (again, nothing "
            f"changed).",
            "",
            *rows,
            "",
        ]
    )


if __name__ == "__main__":
    main()
