"""Agent trees of a stated size, made from the real logs' shapes.

``python -m benchmarks.agent_trees OUT [--mb 1000] [--agent ID ...]`` copies every real file of
``../shared/real_logs/<agent>`` again and again until each agent's tree ``OUT/<agent>`` holds
``--mb`` megabytes. Each copy renames what makes a call or a session unique, so the folds (and
ccusage) count every copy's calls instead of deduplicating them, while what the real data
relates stays related within the copy: the tree has the real files' line shapes, sizes and mix,
at scale. The trees are test data for a measurement: never commit them.

- Claude Code: ``OUT/claude-code/projects/<copy>/...`` (one set of projects per copy, sub-agent
  directories kept; session ids, ``message.id``, ``requestId`` renamed); Codex:
  ``OUT/codex/sessions/<copy>/...`` (session ids renamed). These two trees are the agents'
  homes themselves (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``).
- pi, Gemini CLI, Kimi Code (``benchmarks/jsonl_trees.py``) and OpenCode, Antigravity
  (``benchmarks/db_trees.py``): ``OUT/<agent>`` is a user's home (``HOME``) holding the agent's
  folder exactly as the agent lays it out (``TREES`` says where).

``python -m benchmarks.agent_trees --time OUT`` then reads each tree once with the folds
(``analytics.agents``) and prints the seconds, calls and sessions; run it under
``/usr/bin/time -v`` for the peak RSS.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import db_trees, jsonl_trees

REAL_LOGS = Path(__file__).resolve().parents[2] / "shared" / "real_logs"

#: Values that make a Claude Code call or session unique: session ids (also in file and
#: directory names), message ids and request ids.
_CLAUDE_IDS = re.compile(r'"(sessionId|requestId)":"([^"]+)"|"id":"(msg_[^"]+)"')
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _uuids(text: str, copy: int) -> str:
    """``text`` with every uuid's last four hex digits made ``copy``'s."""
    return _UUID.sub(lambda m: f"{m.group(0)[:-4]}{copy:04x}", text)


def _renamed(text: str, copy: int) -> str:
    """``text`` with every uuid and every message/request id made unique to ``copy``."""
    text = _uuids(text, copy)

    def rename(m: re.Match[str]) -> str:
        if m.group(3):
            return f'"id":"{m.group(3)}_{copy}"'
        return f'"{m.group(1)}":"{m.group(2)}_{copy}"' if m.group(1) == "requestId" else m.group(0)

    return _CLAUDE_IDS.sub(rename, text)


@dataclass(frozen=True)
class Tree:
    """How one agent's tree is built and where, under ``OUT/<agent>``, its logs lie."""

    #: writes the tree: (home, limit in bytes, the real logs' folder) -> bytes written
    build: Callable[[Path, int, Path], int]
    #: the folder holding the agent's logs, under the tree (what ``agentcost analyze`` names)
    logs: str
    #: the agent's reader package under ``analytics.agents`` (for ``--time``)
    reader: str
    #: the folder of ``shared/real_logs`` holding the agent's real files
    source: str


TREES = {
    "pi": Tree(jsonl_trees.build_pi, ".pi/agent/sessions", "pi", "pi"),
    "gemini-cli": Tree(jsonl_trees.build_gemini, ".gemini/tmp", "gemini_cli", "gemini-cli"),
    "opencode": Tree(db_trees.build_opencode, ".local/share/opencode", "opencode", "opencode"),
    "kimi": Tree(jsonl_trees.build_kimi, ".kimi-code/sessions", "kimi", "kimi"),
    "antigravity": Tree(
        db_trees.build_antigravity,
        ".gemini/antigravity-cli/conversations",
        "antigravity",
        "antigravity",
    ),
}
AGENT_IDS = ("claude-code", "codex", *TREES)


def build(agent: str, out: Path, megabytes: int) -> int:
    """Write ``agent``'s tree under ``out`` (as ``out/<agent>``); its size in bytes."""
    if agent in TREES:
        tree = TREES[agent]
        source = REAL_LOGS / tree.source
        if not source.is_dir():
            sys.exit(f"no real {agent} logs at {source}")
        return tree.build((out / agent).resolve(), megabytes * 1_000_000, source)
    source = REAL_LOGS / agent
    files = sorted(source.rglob("*.jsonl"))
    if not files:
        sys.exit(f"no real {agent} logs at {source}")
    root = out / agent / ("projects" if agent == "claude-code" else "sessions")
    # each copy is a directory of its own: a Claude Code copy is then a set of projects
    written, copy, limit = 0, 0, megabytes * 1_000_000
    while written < limit:
        for path in files:
            relative = str(path.relative_to(source))
            target = root / f"{copy:04d}" / _uuids(relative, copy)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = _renamed(path.read_text(encoding="utf-8", errors="replace"), copy)
            target.write_text(text, encoding="utf-8")
            written += len(text.encode())
            if written >= limit:
                break
        copy += 1
    return written


def measure(out: Path) -> None:
    """Read each tree under ``out`` once with the folds; print seconds, calls, sessions (an
    agent whose reader has not landed is named and skipped)."""
    homes = {"claude-code": ("claude_code", "projects"), "codex": ("codex", "")}
    homes |= {agent: (tree.reader, tree.logs) for agent, tree in TREES.items()}
    for agent, (package, logs) in homes.items():
        home = out / agent / logs
        if not home.exists():
            continue
        try:
            reader = importlib.import_module(f"analytics.agents.{package}")
        except ImportError:
            print(f"{agent}: no reader (analytics.agents.{package}) yet")
            continue
        started = time.perf_counter()
        tables = reader.read([home])
        took = time.perf_counter() - started
        print(
            f"{agent}: {took:.2f} s, {tables.calls.height} calls, "
            f"{tables.sessions.height} sessions, {tables.issues.height} issues"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=int, default=1000)
    parser.add_argument(
        "--agent", choices=AGENT_IDS, action="append", help="this agent's tree (default: all)"
    )
    parser.add_argument("--time", action="store_true", help="read the trees, do not build")
    args = parser.parse_args()
    if args.time:
        measure(args.out)
        return
    for agent in args.agent or AGENT_IDS:
        size = build(agent, args.out, args.mb)
        print(f"{agent}: {size / 1e6:.0f} MB under {args.out / agent}")


if __name__ == "__main__":
    main()
