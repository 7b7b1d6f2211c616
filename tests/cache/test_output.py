"""The output cache (``analytics/cache/output.py``): a stored output round-trips exactly,
is keyed on everything that shapes it, and a warm ``agentcost analyze`` replays exactly what a
fresh run prints (stdout, stderr, exit status) without importing polars."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from analytics.cache import output as output_cache
from analytics.cache.output import KEEP, Output, OutputCache
from analytics.cli.commands import app
from tests.cli.test_analyze import write_session
from tests.conftest import SAMPLE_LOGS, python_run

RUNNER = CliRunner()


def run(*args: str | Path) -> Result:
    return RUNNER.invoke(app, [str(arg) for arg in args])


def stored(cache_root: Path) -> list[Path]:
    folder = cache_root / f"outputs-v{output_cache.FORMAT}"
    if not folder.exists():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


# --- the stored file ---


def loaded(cache: OutputCache, key: str) -> Output | None:
    """The output stored under ``key``, its report's text read out of the store."""
    found = cache.load(key)
    if found is None or not isinstance(found.report, output_cache.Stored):
        return found
    return Output(found.report.text(), found.notes, found.status)


@given(
    report=st.none() | st.text(),
    notes=st.lists(st.text(), max_size=3),
    status=st.integers(min_value=0, max_value=255),
)
def test_an_output_round_trips_exactly(
    tmp_path_factory: pytest.TempPathFactory, report: str | None, notes: list[str], status: int
) -> None:
    cache = OutputCache(tmp_path_factory.mktemp("outputs"))
    cache.save("k", Output(report, tuple(notes), status))
    assert loaded(cache, "k") == Output(report, tuple(notes), status)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json\nreport",
        b'{"notes": [], "status": 0, "escape": false, "bytes": 9}\nno report flag',
        b'{"notes": "x", "status": 0, "report": true, "escape": false, "bytes": 0}\n',
        b'{"notes": [], "status": "0", "report": true, "escape": false, "bytes": 0}\n',
        b'{"notes": [], "status": true, "report": true, "escape": false, "bytes": 0}\n',
        b'{"notes": [1], "status": 0, "report": false, "escape": false, "bytes": 0}\n',
        b'{"notes": [], "status": 0, "report": true, "escape": false, "bytes": 9}\ncut',
        b'{"notes": [], "status": 0, "report": true, "escape": false}\nno length',
    ],
    ids=[
        "empty",
        "bad-head",
        "no-flag",
        "notes",
        "status-text",
        "status-bool",
        "note",
        "cut-short",
        "no-length",
    ],
)
def test_a_damaged_output_is_a_miss(tmp_path: Path, content: bytes) -> None:
    cache = OutputCache(tmp_path)
    cache.root.mkdir(parents=True)
    (cache.root / "k").write_bytes(content)
    assert cache.load("k") is None
    assert cache.load("absent") is None


def test_the_most_recently_used_outputs_are_kept(tmp_path: Path) -> None:
    cache = OutputCache(tmp_path)
    cache.save("first", Output("1"))
    for n in range(KEEP + 2):
        cache.save(f"k{n}", Output(str(n)))
        if n % 4 == 0:
            assert loaded(cache, "first") == Output("1")  # used: stays newest
        os.utime(cache.root / f"k{n}", ns=(n, n))  # older than "first" and each other, in order
    names = {p.name for p in stored(tmp_path)}
    assert len(names) == KEEP and "first" in names
    assert "k0" not in names and "k1" not in names


def test_the_outputs_kept_stay_within_their_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes, not only the count, bound the cache; the newest output stays even alone over
    the budget (it is within ``LIMIT_BYTES``)."""
    monkeypatch.setattr(output_cache, "BUDGET_BYTES", 300)  # two outputs of 113 bytes
    cache = OutputCache(tmp_path)
    for n in range(4):
        cache.save(f"k{n}", Output("x" * 40))
        os.utime(cache.root / f"k{n}", ns=(n, n))
    assert [p.name for p in stored(tmp_path)] == ["k2", "k3"]
    cache.save("big", Output("y" * 500))
    assert [p.name for p in stored(tmp_path)] == ["big"]


def test_a_large_report_or_an_unwritable_cache_is_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output_cache, "LIMIT_BYTES", 10)
    cache = OutputCache(tmp_path)
    cache.save("big", Output("x" * 11))
    cache.save("small", Output("x" * 10))
    assert [p.name for p in stored(tmp_path)] == ["small"]
    blocked = tmp_path / "file"
    blocked.write_text("")
    OutputCache(blocked).save("k", Output("x"))  # its root cannot be made: skipped, no error


def test_a_report_too_large_to_keep_is_written_as_rendered_and_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON report is written a piece at a time as it is rendered (never held whole); one
    past ``LIMIT_BYTES`` is printed in full and analysed again the next time."""
    fresh = run("--no-cache", "analyze", SAMPLE_LOGS, "-f", "json", "--calls")
    monkeypatch.setattr(output_cache, "LIMIT_BYTES", len(fresh.stdout) // 2)
    runs = [run("analyze", SAMPLE_LOGS, "-f", "json", "--calls") for _ in range(2)]
    same(fresh, *runs)
    assert stored(Path(os.environ["AGENTCOST_CACHE_DIR"])) == []
    monkeypatch.setattr(output_cache, "LIMIT_BYTES", len(fresh.stdout) * 2)
    same(fresh, run("analyze", SAMPLE_LOGS, "-f", "json", "--calls"))
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == 1


def test_a_report_kept_past_memory_is_stored_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report's pieces kept while it is written (``Spool``) go to a temporary file past
    ``SPOOL_IN_MEMORY``: stored, they are the text written, in order."""
    monkeypatch.setattr(output_cache, "SPOOL_IN_MEMORY", 8)
    monkeypatch.setattr(output_cache, "PIECE", 5)
    kept = output_cache.Spool()
    written = ["{\n", '  "é": [', "1, 2, 3", "]\n}", "\n"]
    for piece in written:
        kept.add(piece)
    assert kept.size == len("".join(written))
    assert "".join(kept) == "".join(written)
    assert output_cache.ends_line(kept)
    cache = OutputCache(tmp_path)
    cache.save("k", Output(kept, ("a note",)))
    assert loaded(cache, "k") == Output("".join(written), ("a note",))


# --- agentcost analyze, replayed ---


def fresh_and_replayed(*args: str | Path) -> tuple[Result, Result, Result]:
    """The command with --no-cache, then twice with the cache: computed, then replayed."""
    return run("--no-cache", *args), run(*args), run(*args)


def same(*results: Result) -> None:
    first = results[0]
    for other in results[1:]:
        assert (other.exit_code, other.stdout, other.stderr) == (
            first.exit_code,
            first.stdout,
            first.stderr,
        )


@pytest.mark.parametrize(
    "options",
    [
        ["-f", "json"],
        ["-f", "json", "--calls"],
        ["-f", "csv"],
        ["-f", "table", "--timezone", "Europe/Paris"],
        ["--wide", "--show-issues"],
        ["-f", "json", "--since", "2026-05-01", "--until", "2026-05-01"],
        ["-f", "json", "--strict"],
    ],
    ids=["json", "calls", "csv", "table", "issues", "window", "strict"],
)
def test_a_replay_prints_what_a_fresh_run_prints(tmp_path: Path, options: list[str]) -> None:
    home = tmp_path / "home"
    write_session(home, "s1")
    write_session(home, "s2", day="2026-05-02T10:00", extra="{truncated\n")
    results = fresh_and_replayed("analyze", home, *options)
    same(*results)
    assert results[0].stdout and results[0].stderr  # one issue: the truncated line
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == 1
    if "--strict" in options:
        assert results[-1].exit_code == 1
        assert results[-1].stderr.splitlines()[-1].startswith("agentcost: error: --strict")
    # The third run printed the stored bytes: what is stored is what is printed.
    (kept,) = stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))
    head, _, report = kept.read_bytes().partition(b"\n")
    kept.write_bytes(head + b"\n" + report.replace(b"s1", b"S1"))
    assert run("analyze", home, *options).stdout == results[0].stdout.replace("s1", "S1")


def test_each_option_gets_its_own_output(tmp_path: Path) -> None:
    """One cache, many option sets: each run prints what a fresh run with its options does
    (an option missing from the key would replay another's output)."""
    home = tmp_path / "home"
    write_session(home, "s1")
    write_session(home, "s2", day="2026-05-02T23:30")
    variants = [
        ["-f", "json"],
        ["-f", "json", "--calls"],
        ["-f", "csv"],
        ["-f", "csv", "--calls"],
        ["-f", "table"],
        ["-f", "table", "--timezone", "UTC"],
        ["-f", "table", "--timezone", "Asia/Tokyo"],
        ["-f", "table", "--wide"],
        ["-f", "json", "--rates", "anthropic"],
        ["-f", "json", "--model-map", "claude-sonnet-4.6=gpt-5"],
        ["-f", "json", "--since", "2026-05-02"],
        ["-f", "json", "--until", "2026-05-01"],
        ["-f", "json", "--show-issues"],
        ["-f", "json", "--strict"],
    ]
    for _ in range(2):
        for options in variants:
            same(run("analyze", home, *options), run("--no-cache", "analyze", home, *options))
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == len(variants)


def test_a_replay_writes_the_output_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    assert run("analyze", SAMPLE_LOGS, "-f", "json", "-o", target).exit_code == 0
    written = target.read_text()
    target.unlink()
    assert run("analyze", SAMPLE_LOGS, "-f", "json", "-o", target).exit_code == 0
    assert target.read_text() == written
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == 1


def test_a_changed_log_or_rate_file_is_analysed_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = write_session(home, "s1") / "events.jsonl"
    before = run("analyze", home, "-f", "json")
    with log.open("a") as grown:
        grown.write(log.read_text().splitlines()[1] + "\n")  # one more user message
    after = run("analyze", home, "-f", "json")
    same(after, run("--no-cache", "analyze", home, "-f", "json"))
    assert after.stdout != before.stdout

    mine = tmp_path / "mine.toml"
    table = (
        'unit = "usd_per_million_tokens"\ncurrency = "USD"\nsource = "test"\n'
        'checked = "2026-11-29"\n[models."claude-sonnet-4.6"]\n'
        '[[models."claude-sonnet-4.6".prices]]\ninput = "{price}"\ncache_read = "0"\n'
        'cache_write_5m = "0"\noutput = "0"\n'
    )
    costs = []
    for price in ["1", "2"]:
        mine.write_text(table.replace("{price}", price))
        result = run("analyze", home, "-f", "json", "--rates", mine)
        same(result, run("--no-cache", "analyze", home, "-f", "json", "--rates", mine))
        costs.append(json.loads(result.stdout)["sessions"][0]["cost_usd"])
    assert costs[0] != costs[1]


def test_nothing_is_stored_with_no_cache_or_for_parquet(tmp_path: Path) -> None:
    assert run("--no-cache", "analyze", SAMPLE_LOGS, "-f", "json").exit_code == 0
    assert run("analyze", SAMPLE_LOGS, "-f", "parquet", "-o", tmp_path / "x.parquet").exit_code == 0
    assert stored(Path(os.environ["AGENTCOST_CACHE_DIR"])) == []


def test_a_missing_path_is_still_one_error_line(tmp_path: Path) -> None:
    for _ in range(2):
        result = run("analyze", tmp_path / "absent", "-f", "json")
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and "agentcost: error:" in result.stderr


def test_a_replay_never_imports_polars(tmp_path: Path) -> None:
    """In a fresh interpreter, as a user runs it: the second run prints the same bytes and
    leaves polars unimported."""
    script = (
        "import sys\n"
        "from analytics.cli.commands import app\n"
        "try:\n"
        f"    app(['analyze', {str(SAMPLE_LOGS)!r}, '-f', 'json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('polars' in sys.modules, file=sys.stderr)\n"
    )
    env = os.environ | {"AGENTCOST_CACHE_DIR": str(tmp_path)}
    runs = [python_run(script, env) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.startswith('{\n  "sessions"')
    assert runs[0].stderr.splitlines()[-1] == "True"
    assert runs[1].stderr.splitlines()[-1] == "False"
    assert runs[0].stderr.splitlines()[:-1] == runs[1].stderr.splitlines()[:-1]


def test_real_logs_replay_exactly(real_logs: Path) -> None:
    for options in (["-f", "json"], ["-f", "json", "--calls"], ["-f", "table", "--wide"]):
        same(*fresh_and_replayed("analyze", real_logs, *options))


@pytest.mark.parametrize(
    "command",
    [
        ["daily"],
        ["weekly", "--by", "model", "-f", "json"],
        ["monthly", "--timezone", "Asia/Tokyo", "-f", "csv"],
        ["compare", "-f", "json"],
        ["compare", "--rates", "github-copilot,anthropic"],
        ["issues"],
        ["issues", "--strict", "-f", "json"],
        ["top", "--limit", "2"],
        ["top", "--by", "tool", "-f", "json", "--no-behaviour"],
    ],
    ids="-".join,
)
def test_every_report_command_replays_what_it_printed(tmp_path: Path, command: list[str]) -> None:
    home = tmp_path / "home"
    write_session(home, "s1")
    write_session(home, "s2", day="2026-05-02T23:30", extra="{truncated\n")
    name, *options = command
    same(*fresh_and_replayed(name, home, *options))
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == 1


def test_the_first_screen_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``agentcost`` alone shows today's spend; today is part of its key (``commands._home``)."""
    write_session(tmp_path / "home", "s1")
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "home"))
    results = run("--no-cache"), run(), run()
    same(*results)
    assert results[0].exit_code == 0 and "s1" in results[0].stdout
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == 1


def test_the_html_report_replays_its_page_and_notes(tmp_path: Path) -> None:
    """``report --html``: the page is stored as a report is, and written again, byte for byte,
    with the same notes; a changed log makes a new page."""
    home, page = tmp_path / "home", tmp_path / "report.html"
    write_session(home, "s1")
    write_session(home, "s2", day="2026-05-02T23:30", extra="{truncated\n")
    fresh = run("--no-cache", "report", home, "--html", page)
    written = page.read_bytes()
    page.unlink()
    same(fresh, run("report", home, "--html", page), run("report", home, "--html", page))
    assert page.read_bytes() == written
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == 1
    write_session(home, "s3", day="2026-05-03T10:00")
    assert run("report", home, "--html", page).exit_code == 0
    assert len(stored(Path(os.environ["AGENTCOST_CACHE_DIR"]))) == 2
