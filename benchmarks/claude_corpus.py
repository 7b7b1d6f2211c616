"""The reconstruction's accuracy on real Claude Code logs and its intervals' coverage.

``python -m benchmarks.claude_corpus [--claude DIR] [--seed 7 --sessions 100]`` prints, by
kind of call, the per-call input error of every Claude Code session with at least 3 calls
under ``DIR`` (default ``../shared/real_logs/claude-code``), reconstructed from content with
only each session's per-model totals known and with none (``analytics/engine/corpus.py``), and the
share of estimated calls inside their 80% interval; then the same coverage on an
``agentcost simulate`` tree with its shutdown lines removed (every call estimated, compared
with the tree's ``session-store.db``). The README's accuracy table quotes these figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import polars as pl

from analytics.agents import claude_code
from analytics.agents.copilot.simulate import SimulationParams, simulate
from analytics.engine.analyze import analyze
from analytics.engine.corpus import corpus_errors
from analytics.engine.validate import error_summary, reconstruction_errors

REAL_LOGS = Path(__file__).resolve().parents[2] / "shared" / "real_logs"
_SHOWN = [
    "session_id",
    "calls",
    "median_abs_error_pct",
    "p90_abs_error_pct",
    "max_abs_error_pct",
    "with_interval",
    "inside_interval_pct",
]


def without_shutdowns(tree: Path, out: Path) -> Path:
    """Copy a Copilot tree's ``events.jsonl`` files into ``out`` with every
    ``session.shutdown`` line dropped: the same sessions with no totals at all, where every
    call is estimated (how honest the intervals are is measured there). Returns ``out``."""
    for source in sorted(tree.rglob("events.jsonl")):
        target = out / source.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        with source.open("rb") as lines, target.open("wb") as kept:
            kept.writelines(line for line in lines if b'"session.shutdown"' not in line)
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the corpus figures and the simulated coverage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claude", type=Path, default=REAL_LOGS / "claude-code")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=100)
    args = parser.parse_args(argv)
    pl.Config.set_tbl_rows(-1)
    pl.Config.set_tbl_width_chars(160)
    pl.Config.set_tbl_hide_column_data_types(True)
    if args.claude.is_dir():
        tables = claude_code.read([args.claude])
        for label, with_totals in (("with per-model totals", True), ("no totals", False)):
            errors = corpus_errors(tables.calls, tables.items, with_totals=with_totals)
            print(f"Claude Code, {label}: {errors['session_id'].n_unique()} sessions")
            print(error_summary(errors, per_session=False).select(_SHOWN))
    else:
        print(f"no Claude Code logs at {args.claude}: skipped", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="agentcost-corpus-") as tmp:
        tree = Path(tmp) / "simulated"
        simulate(tree, SimulationParams(seed=args.seed, sessions=args.sessions), store=True)
        bare = without_shutdowns(tree / "session-state", Path(tmp) / "bare" / "session-state")
        (tree / "session-store.db").rename(bare.parent / "session-store.db")
        errors = reconstruction_errors(analyze([bare.parent]))
        print(f"agentcost simulate --seed {args.seed} --sessions {args.sessions}, no shutdowns")
        print(error_summary(errors, per_session=False).select(_SHOWN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
