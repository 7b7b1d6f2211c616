"""``agentcost analyze`` through typer's CliRunner: formats, filters, exit codes, side effects.

Exit codes (``errors.py``): 0 success, 1 ``--strict`` with issues, 2 bad usage or unreadable
input, always with one line on stderr that says what to do. Sessions are small literal logs
written to ``tmp_path``.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from analytics.cli.commands import _only_the_command_named, app

RUNNER = CliRunner()


def event(kind: str, stamp: str, **data: object) -> str:
    return json.dumps({"type": kind, "data": data, "id": kind, "timestamp": stamp})


def write_session(root: Path, session: str, day: str = "2026-05-01T10:00", extra: str = "") -> Path:
    """A complete one-call session starting at ``day`` (UTC)."""
    directory = root / "session-state" / session
    directory.mkdir(parents=True)
    lines = [
        event(
            "session.start",
            f"{day}:00.000Z",
            sessionId=session,
            copilotVersion="1.0.80",
            selectedModel="claude-sonnet-4.6",
        ),
        event("user.message", f"{day}:01.000Z", content="hi"),
        event("assistant.turn_start", f"{day}:02.000Z", turnId="0"),
        event("assistant.message", f"{day}:03.000Z", content="ok", outputTokens=12),
        event("assistant.turn_end", f"{day}:04.000Z", turnId="0"),
        event(
            "session.shutdown",
            f"{day}:05.000Z",
            shutdownType="routine",
            totalNanoAiu=5,
            modelMetrics={
                "claude-sonnet-4.6": {
                    "requests": {"count": 1, "cost": 1},
                    "usage": {"inputTokens": 900, "outputTokens": 12},
                }
            },
        ),
    ]
    (directory / "events.jsonl").write_text("\n".join(lines) + "\n" + extra)
    return directory


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Two sessions: s-late starts 23:30 UTC on May 1 (May 2 in Paris), s-early May 1 10:00."""
    root = tmp_path / "home"
    write_session(root, "s-early")
    write_session(root, "s-late", day="2026-05-01T23:30")
    return root


def run(*args: str | Path) -> Result:
    return RUNNER.invoke(app, [str(arg) for arg in args])


def session_ids(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [row["session_id"] for row in json.loads(result.stdout)["sessions"]]


def test_table_is_the_default(home: Path) -> None:
    result = run("analyze", home, "--timezone", "UTC")
    assert result.exit_code == 0, result.output
    assert "s-early" in result.stdout and "s-late" in result.stdout
    assert "2 sessions" in result.stdout
    assert result.stderr == ""


def test_json_sessions_and_calls(home: Path) -> None:
    sessions = json.loads(run("analyze", home, "-f", "json").stdout)
    assert [s["llm_calls"] for s in sessions["sessions"]] == [1, 1]
    assert sessions["issues"] == []
    calls = json.loads(run("analyze", home, "--format", "json", "--calls").stdout)
    assert [c["session_id"] for c in calls["calls"]] == ["s-early", "s-late"]
    assert calls["calls"][0]["start_time"] == "2026-05-01T10:00:02.000Z"
    assert calls["calls"][0]["output_tokens"] == 12


@pytest.mark.parametrize("calls", [False, True], ids=["sessions", "calls"])
def test_csv(home: Path, calls: bool) -> None:
    result = run("analyze", home, "-f", "csv", *(["--calls"] if calls else []))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["session_id"] for row in rows] == ["s-early", "s-late"]
    assert "kind" in rows[0] if calls else "llm_calls" in rows[0]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--since", "2026-05-02", "--timezone", "Europe/Paris"], ["s-late"]),
        (["--until", "2026-05-01", "--timezone", "Europe/Paris"], ["s-early"]),
        (["--since", "2026-05-02", "--timezone", "UTC"], []),
        (["--until", "2026-05-01", "--timezone", "UTC"], ["s-early", "s-late"]),
        (
            ["--since", "2026-05-01", "--until", "2026-05-01", "--timezone", "America/New_York"],
            ["s-early", "s-late"],
        ),
        (
            ["--since", "2026-04-30", "--until", "2026-04-30", "--timezone", "Pacific/Kiritimati"],
            [],
        ),
    ],
    ids=["paris-since", "paris-until", "utc-since", "utc-until", "new-york-day", "empty-window"],
)
def test_day_window_uses_the_timezone(home: Path, options: list[str], expected: list[str]) -> None:
    assert session_ids(run("analyze", home, "-f", "json", *options)) == expected


def test_window_also_filters_calls(home: Path) -> None:
    result = run(
        "analyze",
        home,
        "-f",
        "json",
        "--calls",
        "--since",
        "2026-05-02",
        "--timezone",
        "Europe/Paris",
    )
    assert [c["session_id"] for c in json.loads(result.stdout)["calls"]] == ["s-late"]


def test_strict_fails_only_when_there_are_issues(tmp_path: Path) -> None:
    clean = write_session(tmp_path / "clean", "s1")
    assert run("analyze", clean, "--strict").exit_code == 0
    torn = write_session(tmp_path / "torn", "s2", extra='{"type":"assistant.turn_st')
    lenient = run("analyze", torn, "-f", "json")
    assert lenient.exit_code == 0
    assert "1 issue (1 error" in lenient.stderr
    issue = json.loads(lenient.stdout)["issues"][0]
    assert (issue["line"], issue["severity"]) == (7, "error")
    strict = run("analyze", torn, "--strict")
    assert strict.exit_code == 1
    assert "--strict" in strict.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["{missing}"], "no such file or directory"),
        (["{inside_file}"], "no such file or directory"),
        (["{ok}", "--since", "2026-13-01"], "--since"),
        (["{ok}", "--until", "yesterday"], "--until"),
        (["{ok}", "--timezone", "Mars/Olympus_Mons"], "unknown timezone"),
    ],
    ids=["missing-path", "path-inside-a-file", "bad-since", "bad-until", "unknown-timezone"],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    ok = write_session(tmp_path, "s1")
    paths = {"missing": tmp_path / "nope", "inside_file": ok / "events.jsonl" / "x", "ok": ok}
    result = run("analyze", *(arg.format(**paths) for arg in args))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentcost: error: ")
    assert words in lines[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 directory anyway")
def test_unreadable_path_exit_2(tmp_path: Path) -> None:
    locked = write_session(tmp_path, "s1")
    locked.chmod(0)
    try:
        result = run("analyze", locked)
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 2
    assert "permission denied" in result.stderr


def test_a_directory_without_events_is_an_issue_not_a_crash(tmp_path: Path) -> None:
    """Beside a session, an issue; named alone, nothing is a log: one line, exit 2."""
    (tmp_path / "session-state" / "abc" / "checkpoints").mkdir(parents=True)
    ok = write_session(tmp_path / "other", "s1")
    result = run("analyze", tmp_path / "session-state" / "abc", ok, "-f", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [session["session_id"] for session in document["sessions"]] == ["s1"]
    assert len(document["issues"]) == 1
    assert "1 issue " in result.stderr
    assert run("analyze", tmp_path / "session-state" / "abc", ok, "--strict").exit_code == 1
    alone = run("analyze", tmp_path / "session-state" / "abc")
    assert alone.exit_code == 2
    assert alone.stderr.startswith(f"agentcost: error: {tmp_path}/session-state/abc: no session")
    assert len(alone.stderr.splitlines()) == 1


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(root)): (path.stat().st_mtime_ns, path.stat().st_size)
        for path in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    "options", [[], ["-f", "json"], ["-f", "csv", "--calls"], ["--strict"]], ids=str
)
def test_never_writes_inside_the_session_directory(home: Path, options: list[str]) -> None:
    before = _tree(home)
    run("analyze", home, *options)
    assert _tree(home) == before


@pytest.mark.parametrize("command", [[], ["analyze"]], ids=str)
def test_help(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage" in result.stdout


def test_every_command_has_help() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    names = sorted(group.commands)
    assert "analyze" in names
    for name in names:
        result = run(name, "--help")
        assert result.exit_code == 0, (name, result.output)
        assert len(result.stdout.strip().splitlines()) > 2, name


def test_a_run_builds_only_the_command_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """``main`` leaves on ``app`` only the command (or group) named first, and that
    command's help is what it is beside the others; an option or an unknown name first
    leaves every command."""

    def built() -> list[str]:
        group = typer.main.get_command(app)
        assert isinstance(group, typer.core.TyperGroup)
        return sorted(group.commands)

    names = built()
    assert {"analyze", "budget", "capture-to-log", "rates"} <= set(names)
    for first in (["--no-cache"], ["analyse"], []):
        _only_the_command_named(first)
        assert built() == names
    for name in names:
        whole = run(name, "--help").stdout
        monkeypatch.setattr(app, "registered_commands", list(app.registered_commands))
        monkeypatch.setattr(app, "registered_groups", list(app.registered_groups))
        _only_the_command_named([name])
        assert built() == [name]
        assert run(name, "--help").stdout == whole
        monkeypatch.undo()


def test_cli_import_does_not_import_plotly() -> None:
    code = "import sys, analytics.cli.commands; print('plotly' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


#: Runs ``agentcost`` in this process and says, as it leaves, whether numpy was loaded.
_NUMPY_PROBE = (
    "import os, sys\n"
    "from analytics.cli import main\n"
    "leave = os._exit\n"
    "def _exit(code):\n"
    "    print('numpy' in sys.modules, file=sys.stderr, flush=True)\n"
    "    leave(code)\n"
    "os._exit = _exit\n"
    "sys.argv = ['agentcost', *sys.argv[1:]]\n"
    "main()\n"
)


@pytest.mark.skipif(
    importlib.util.find_spec("numpy") is None, reason="numpy is not installed: nothing to load"
)
@pytest.mark.parametrize("options", [["--format", "json"], ["--calls", "--format", "json"], []])
def test_analyze_never_imports_numpy(tmp_path: Path, options: list[str]) -> None:
    """Cold, warm and with one log touched: polars imports numpy (~0.04 s, and its BLAS threads
    spin a core) if money reaches it as ``Decimal`` objects (``schema.money_text``)."""
    from tests.conftest import SAMPLE_LOGS

    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    env = os.environ | {"AGENTCOST_CACHE_DIR": str(tmp_path / "cache"), "COPILOT_HOME": "/none"}

    def loads_numpy() -> str:
        done = subprocess.run(
            [sys.executable, "-c", _NUMPY_PROBE, "analyze", str(logs), *options],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return done.stderr.splitlines()[-1]

    cold, warm = loads_numpy(), loads_numpy()
    log = next(logs.glob("session-state/*/events.jsonl"))
    os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 10**9))
    assert [cold, warm, loads_numpy()] == ["False"] * 3


@pytest.mark.parametrize("command", [["analyze"], ["analyze", "--calls"], ["compare"], ["top"]])
def test_every_report_writes_parquet_to_a_file(tmp_path: Path, command: list[str]) -> None:
    import polars as pl

    from tests.conftest import SAMPLE_LOGS

    target = tmp_path / "out.parquet"
    result = RUNNER.invoke(app, [*command, str(SAMPLE_LOGS), "-f", "parquet", "-o", str(target)])
    assert result.exit_code == 0, result.output
    as_json = RUNNER.invoke(app, [*command, str(SAMPLE_LOGS), "-f", "json"])
    document = json.loads(as_json.stdout)
    key = next(k for k in document if k not in ("issues", "timezone", "compactions", "behaviour"))
    assert pl.read_parquet(target).height == len(document[key])


def test_parquet_without_an_output_file_is_a_usage_error() -> None:
    from tests.conftest import SAMPLE_LOGS

    result = RUNNER.invoke(app, ["analyze", str(SAMPLE_LOGS), "-f", "parquet"])
    assert result.exit_code == 2
    assert "--output" in result.stderr


def test_own_table_overrides_one_model_of_a_bundled_one(tmp_path: Path) -> None:
    from tests.conftest import SAMPLE_LOGS

    mine = tmp_path / "mine.toml"
    mine.write_text(
        'unit = "usd_per_million_tokens"\ncurrency = "USD"\nsource = "test"\n'
        'checked = "2026-11-29"\n[models."claude-haiku-4.5"]\n'
        '[[models."claude-haiku-4.5".prices]]\ninput = "0"\ncache_read = "0"\n'
        'cache_write_5m = "0"\noutput = "0"\n'
    )

    def costs(rates: str) -> dict[str, tuple[str, str]]:
        result = RUNNER.invoke(app, ["analyze", str(SAMPLE_LOGS), "-f", "json", "--rates", rates])
        assert result.exit_code == 0, result.output
        sessions = json.loads(result.stdout)["sessions"]
        return {s["session_id"]: (s["rates"], s["cost_usd"]) for s in sessions}

    bundled, merged = costs("github-copilot"), costs(f"github-copilot+{mine}")
    assert {rates for rates, _ in merged.values()} == {"github-copilot+mine"}
    changed = {sid for sid in bundled if bundled[sid][1] != merged[sid][1]}
    haiku = {"6c2b0476-58de-4348-be1c-d5ccae36508e", "c96959e0-053d-4785-9b2a-95d55662a127"}
    assert changed == haiku  # only the sessions with claude-haiku-4.5 calls got cheaper


def test_a_table_on_stderr_fits_the_terminal_of_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--show-issues`` prints to stderr: its width is stderr's terminal's, also when stdout
    is a pipe or a file; $COLUMNS still wins, and without a terminal it is 120."""
    import fcntl
    import pty
    import struct
    import termios

    from analytics.cli import printing
    from analytics.render.text_table import Layout

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 70, 0, 0))
    try:
        with open(secondary, "w", closefd=False) as terminal:
            assert printing.layout(wide=False, stream=terminal) == Layout(width=70, colour=True)
            assert printing.layout(wide=True, stream=terminal).width is None
            monkeypatch.setenv("COLUMNS", "90")
            assert printing.layout(wide=False, stream=terminal).width == 90
    finally:
        os.close(main)
        os.close(secondary)
    monkeypatch.delenv("COLUMNS")
    assert printing.layout(wide=False, stream=io.StringIO()).width == 120
