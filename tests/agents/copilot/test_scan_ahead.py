"""Scans begun before the command needs them (``engine.groups.scan_ahead``,
``agents.copilot.scan_ahead``): taken only for exactly the logs they read, begun only when the
analysis reads every group, and never changing an output.

Sessions are the bundled sample logs (several sessions: with one byte a group, every session
is a group of its own) and small literal logs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from analytics import _scanner
from analytics.agents.copilot import scan_ahead
from analytics.agents.discover import discover
from analytics.cache.location import results_dir
from analytics.cache.results import flush
from analytics.cli.commands import app
from analytics.engine import groups
from tests.conftest import REPO, SAMPLE_LOGS, python_prints

RUNNER = CliRunner()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every native scan made from here on, as the paths it read."""
    made: list[list[str]] = []
    real = _scanner.scan_copilot

    def scan(paths: list[str], *rest: Any) -> Any:
        made.append(list(paths))
        return real(paths, *rest)

    monkeypatch.setattr(_scanner, "scan_copilot", scan)
    scan_ahead.forget()
    return made


def frames(scanned: Any) -> list[pl.DataFrame]:
    tables, *_ = scanned
    return [pl.DataFrame(table) for table in tables]


def test_a_scan_begun_is_taken_for_the_same_logs_and_equals_a_scan_now(
    counted: list[list[str]],
) -> None:
    logs = discover([SAMPLE_LOGS]).logs
    scan_ahead.start([logs], 1)
    taken = scan_ahead.scan(logs)
    assert len(counted) == 1  # the scan begun, not another
    fresh = scan_ahead.scan(logs)  # nothing begun any more: a scan now
    assert len(counted) == 2
    for left, right in zip(frames(taken), frames(fresh), strict=True):
        assert left.equals(right, null_equal=True)
    (metrics, warnings), (again, warned) = taken[2], fresh[2]
    assert pl.DataFrame(metrics).equals(pl.DataFrame(again), null_equal=True)
    assert len(metrics) > 0
    assert (taken[1], warnings, taken[3]) == (fresh[1], warned, fresh[3])


def test_a_log_changed_since_its_scan_began_is_read_again(
    tmp_path: Path, counted: list[list[str]]
) -> None:
    tree = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, tree)
    before = discover([tree]).logs
    scan_ahead.start([before], 1)
    scan_ahead.scan(before[:1])  # other logs: not the scan begun
    grown = before[0].path
    with grown.open("a") as log:
        log.write(json.dumps({"type": "user.message", "data": {"content": "more"}}) + "\n")
    after = discover([tree]).logs
    scan_ahead.scan(after)  # same paths, another size and mtime: read again
    assert sorted(map(len, counted)) == [1, len(before), len(before)]  # begun, and two now


def test_a_command_drops_the_scans_another_began(counted: list[list[str]]) -> None:
    logs = discover([SAMPLE_LOGS]).logs
    scan_ahead.start([logs], 1)
    scan_ahead.start([], 1)  # the next command begins none
    scan_ahead.scan(logs)
    assert len(counted) == 2


def test_scans_begin_only_when_every_group_will_be_read(
    logs: Path, counted: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = discover([logs])
    groups.scan_ahead(found, [logs], use_cache=True)
    assert counted == []  # one group (64 MB of logs a group): it may be stored on its own
    monkeypatch.setattr(groups, "GROUP_BYTES", 1)  # every session a group of its own
    assert len(groups.groups_of(found.logs, 1)) > groups.WORKERS
    groups.scan_ahead(found, [logs], use_cache=True)
    every = groups.groups_of(found.logs, 1)
    first = groups.first_scans(every)
    assert len(first) == min(groups.AHEAD, len(every))
    assert first == [every[i] for i in groups.largest_first(every)[: len(first)]]
    for group in first:
        scan_ahead.scan(group)  # taken: each waits for its scan, none is made again
    assert sorted(counted) == sorted([str(log.path) for log in group] for group in first)
    result = RUNNER.invoke(app, ["analyze", str(logs), "--format", "json"])
    assert result.exit_code == 0, result.output
    flush()  # the result is written in the background (the command waits before it exits)
    counted.clear()
    (logs / "session-store.db").touch()  # the tree changed: its earlier result serves groups
    groups.scan_ahead(discover([logs]), [logs], use_cache=True)
    assert counted == []
    found = discover([logs])
    groups.scan_ahead(found, [logs], use_cache=False)  # --no-cache reads them all
    first = groups.first_scans(groups.groups_of(found.logs, 1))
    for group in first:
        scan_ahead.scan(group)
    assert len(counted) == len(first)


def test_scanning_ahead_never_changes_an_output(
    logs: Path, counted: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    def analyze(*options: str) -> str:
        result = RUNNER.invoke(app, [*options, "analyze", str(logs), "--format", "json"])
        assert result.exit_code == 0, result.output
        return result.stdout

    whole = analyze("--no-cache")  # one group: nothing begun ahead
    assert len(counted) == 1
    monkeypatch.setattr(groups, "GROUP_BYTES", 1)
    count = len(groups.groups_of(discover([logs]).logs, 1))
    counted.clear()
    assert analyze() == whole  # cold, every session a group, the first ones begun ahead
    assert len(counted) == count  # each group read once: those begun were taken
    assert analyze("--no-cache") == whole


def test_the_floor_benchmark_scans_as_the_command_does(tmp_path: Path) -> None:
    """``benchmarks/floor.py`` runs (it is timed by ``make bench``, never in the suite)."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.floor", str(SAMPLE_LOGS)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert done.stdout.startswith(f"{len(discover([SAMPLE_LOGS]).logs)} logs, 1 groups")


@pytest.mark.parametrize("step", ["pass", "tables", "analysis", "stored", "priced"])
def test_each_step_of_the_floor_benchmark_does_what_it_names(tmp_path: Path, step: str) -> None:
    """``floor.py --upto STEP`` runs each step of the command after the scan (``make bench``
    times them): the last prints what ``analyze --format json`` prints, the two before it
    count the sessions analysed, and the steps with the result cache on store the analysis
    there, as the command does."""
    env = {**os.environ, "AGENTCOST_CACHE_DIR": str(tmp_path / "step")}

    def run(*command: str) -> str:
        done = subprocess.run(
            [sys.executable, *command],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
            env=env,
        )
        return done.stdout

    printed = run("-m", "benchmarks.floor", str(SAMPLE_LOGS), "--upto", step)
    stored = results_dir(tmp_path / "step")
    assert (stored.is_dir() and any(stored.iterdir())) == (step in ("stored", "priced"))
    env["AGENTCOST_CACHE_DIR"] = str(tmp_path / "command")
    command = "from analytics.cli import main; main()"
    shown = run("-c", command, "analyze", str(SAMPLE_LOGS), "--format", "json")
    if step == "priced":
        assert printed == shown
    elif step in ("analysis", "stored"):
        assert printed == f"{len(json.loads(shown)['sessions'])} sessions\n"
    else:
        assert printed.startswith(f"{len(discover([SAMPLE_LOGS]).logs)} logs, 1 groups")


def test_the_scans_begin_before_polars_is_imported() -> None:
    """A cold command begins the first scans (``engine.groups.scan_ahead``) while polars and
    the stages are still to be imported: asking for the staged pipeline's agent side and
    beginning a scan loads neither."""
    script = (
        "import sys\n"
        "from analytics.agents.pipeline import pipeline\n"
        "pipeline().start_scans([], 2)\n"
        "pipeline().forget_scans()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'polars'"
        " or m.endswith(('engine_pass', 'events'))))\n"
    )
    assert python_prints(script) == "[]"
