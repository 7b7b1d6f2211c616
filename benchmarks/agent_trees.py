"""Synthetic Claude Code and Codex trees of a stated size, made from the real logs' shapes.

``python -m benchmarks.agent_trees OUT [--mb 1000] [--agent claude-code|codex|both]`` copies
every real file of ``../shared/real_logs/claude-code`` (or ``codex``) again and again under
``OUT/claude-code/projects/`` (one project directory per copy, sub-agent directories kept)
and ``OUT/codex/sessions/`` until each tree holds ``--mb`` megabytes. Each copy renames what
makes a call or a session unique (session ids, ``message.id``, ``requestId``, Codex session
ids), so the folds count every copy's calls instead of deduplicating them: the tree has the
real files' line shapes, sizes and mix, at scale. The trees are test data for a measurement:
never commit them.

``python -m benchmarks.agent_trees --time OUT`` then reads each tree once with the folds
(``analytics.agents``) and prints the seconds, calls and sessions; run it under
``/usr/bin/time -v`` for the peak RSS.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

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


def build(agent: str, out: Path, megabytes: int) -> int:
    """Write ``agent``'s tree under ``out``; its size in bytes."""
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
    """Read each tree under ``out`` once with the folds; print seconds, calls, sessions."""
    from analytics.agents import claude_code, codex

    for agent, reader, home in (
        ("claude-code", claude_code, out / "claude-code" / "projects"),
        ("codex", codex, out / "codex"),
    ):
        if not home.exists():
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
    parser.add_argument("--agent", choices=["claude-code", "codex", "both"], default="both")
    parser.add_argument("--time", action="store_true", help="read the trees, do not build")
    args = parser.parse_args()
    if args.time:
        measure(args.out)
        return
    for agent in ("claude-code", "codex") if args.agent == "both" else (args.agent,):
        size = build(agent, args.out, args.mb)
        print(f"{agent}: {size / 1e6:.0f} MB under {args.out / agent}")


if __name__ == "__main__":
    main()
