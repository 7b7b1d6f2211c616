"""Output unchanged: every command's output from two source trees, compared byte for byte.

``python -m benchmarks.compare_outputs BEFORE TREE...`` runs each command of ``COMMANDS`` on
each ``TREE`` (a directory, or one log file) twice: with the code of the source tree
``BEFORE`` (a checkout, on ``PYTHONPATH``) and with this one, each run cold (an empty cache
directory of its own), and compares the outputs: standard output and status, and the files a
command writes (the Parquet export read back as frames, the HTML report as bytes). With
``--quick`` only ``analyze --format json``, ``--calls`` and ``issues`` run (for many single
files). It prints one line per difference and the counts, and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

REPO = Path(__file__).resolve().parent.parent
#: (name, arguments before the tree, arguments after it); ``{out}`` is a fresh directory.
COMMANDS: list[tuple[str, list[str], list[str]]] = [
    ("analyze json", ["analyze"], ["--format", "json"]),
    ("calls json", ["analyze"], ["--calls", "--format", "json"]),
    ("issues", ["issues"], []),
    ("daily", ["daily"], []),
    ("weekly", ["weekly"], []),
    ("monthly", ["monthly"], []),
    ("top", ["top"], []),
    ("compare", ["compare"], []),
    ("export", ["export", "{out}/dataset"], []),
    ("report html", ["report"], ["--html", "{out}/report.html"]),
]
QUICK = {"analyze json", "calls json", "issues"}


def run(source: Path, args: list[str], out: Path) -> tuple[int, bytes, dict[str, object]]:
    """Run agentcost from ``source`` cold; its status, stdout and the files it wrote."""
    env = {
        **os.environ,
        "PYTHONPATH": str(source),
        "AGENTCOST_CACHE_DIR": str(out / "cache"),
        "COLUMNS": "160",
        "NO_COLOR": "1",
        "TZ": "UTC",
    }
    done = subprocess.run(
        [sys.executable, "-c", "from analytics.cli import main; main()", *args],
        env=env,
        capture_output=True,
        cwd=out,
        check=False,
    )
    written: dict[str, object] = {}
    for path in sorted(out.rglob("*")):
        if "cache" in path.relative_to(out).parts or not path.is_file():
            continue
        name = str(path.relative_to(out))
        written[name] = pl.read_parquet(path) if path.suffix == ".parquet" else path.read_bytes()
    return done.returncode, done.stdout.replace(str(out).encode(), b"{out}"), written


def same(a: tuple[int, bytes, dict[str, object]], b: tuple[int, bytes, dict[str, object]]) -> str:
    """'' when the two runs gave the same output, else what differs."""
    if a[0] != b[0] or a[1] != b[1]:
        return "status or standard output"
    if a[2].keys() != b[2].keys():
        return f"files written: {sorted(a[2])} vs {sorted(b[2])}"
    for name, left in a[2].items():
        right = b[2][name]
        if isinstance(left, pl.DataFrame) and isinstance(right, pl.DataFrame):
            try:
                assert_frame_equal(left, right)
            except AssertionError:
                return f"{name} differs"
        elif left != right:
            return f"{name} differs"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before", type=Path, help="the source tree to compare with")
    parser.add_argument("trees", type=Path, nargs="+")
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    compared = differ = 0
    for tree in options.trees:
        for name, head, tail in COMMANDS:
            if options.quick and name not in QUICK:
                continue
            results = []
            for source in (options.before.resolve(), REPO):
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp)
                    args = [a.format(out=out) for a in [*head, str(tree.resolve()), *tail]]
                    results.append(run(source, args, out))
            compared += 1
            why = same(*results)
            if why:
                differ += 1
                print(f"DIFFERENT {name} on {tree}: {why}")
    print(f"{compared} outputs compared, {differ} different")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
