"""The agents' result cache (``analytics.cache.agent_results``): a run that reuses groups
from the previous one gives what one fold of every file gives, and folds only what changed."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal, assert_series_equal

from analytics.agents import AgentTables
from analytics.agents.discover import LogFile, discover
from analytics.agents.reader import readers
from analytics.cache import priced_tables, results
from analytics.cache.agent_groups import units
from analytics.cache.agent_results import _looked_up, _named, _numbered, _paths_of, agent_tables
from analytics.cache.results import ResultCache
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rates
from analytics.engine.analyze import analyze
from tests.conftest import REAL_LOGS


def reply(session: str, message: str, output: int, second: int, uuid: str = "") -> str:
    """One Claude Code assistant line: request ``message`` of ``session``, finished."""
    line = {
        "type": "assistant",
        "sessionId": session,
        "uuid": uuid or f"u-{session}-{message}",
        "requestId": f"req_{message}",
        "timestamp": f"2026-05-01T10:00:{second:02d}Z",
        "message": {
            "id": message,
            "model": "claude-opus-4-6",
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": output},
        },
    }
    return json.dumps(line) + "\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def run(
    root: Path, cache: ResultCache | None, counter: list[int] | None = None
) -> AgentTables | None:
    """The agent's tables under ``root`` as ``_with_agents`` asks for them (one agent per
    tree in these tests; None when discovery finds no log of any)."""
    found = discover([root])
    if not found.agent_logs:
        return None
    (agent_id,) = {name for name, _ in found.agent_logs}
    agent, reader = next((a, r) for a, r in readers() if a.id == agent_id)
    logs = [log for name, log in found.agent_logs if name == agent_id]
    folded = agent_tables(
        agent, reader, logs, items=True, slot=str(root), cache=cache, fold_counter=counter
    )
    results.flush()
    return folded.tables


def one_fold(root: Path) -> AgentTables | None:
    """The oracle: every file under ``root`` folded as one group by its reader, no groups
    guessed, merged or reused. Both ways of ``agent_tables`` (with the cache and without)
    must give exactly this."""
    found = discover([root])
    if not found.agent_logs:
        return None
    (agent_id,) = {name for name, _ in found.agent_logs}
    reader = next(r for a, r in readers() if a.id == agent_id)
    return reader.read_files([log.path for name, log in found.agent_logs], items=True)


def assert_all_same(root: Path, cache: ResultCache) -> AgentTables | None:
    """``root``'s tables with ``cache`` and without any, each checked against the oracle
    (``one_fold``); the cached ones."""
    got, expected = run(root, cache), one_fold(root)
    assert_same(got, expected)
    assert_same(run(root, None), expected)
    return got


def assert_same(a: AgentTables | None, b: AgentTables | None) -> None:
    assert (a is None) == (b is None)
    if a is None or b is None:
        return
    for name in ("calls", "sessions", "issues", "items"):
        assert_frame_equal(getattr(a, name), getattr(b, name))


def test_a_touched_file_folds_again_only_its_group(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    write(
        root,
        {
            "p1/s1.jsonl": reply("s1", "m1", 5, 1),
            "p2/s2.jsonl": reply("s2", "m2", 6, 2),
            "p3/s3.jsonl": reply("s3", "m3", 7, 3),
        },
    )
    cache = ResultCache(tmp_path / "cache")
    counter: list[int] = []
    run(root, cache, counter)
    assert sum(counter) == 3  # cold: every file, once
    counter.clear()
    assert_same(run(root, cache, counter), one_fold(root))
    assert counter == []  # warm: nothing folded
    with (root / "p2/s2.jsonl").open("a") as log:
        log.write(reply("s2", "m4", 8, 4))
    got = run(root, cache, counter)
    assert counter == [1]  # the touched file alone
    assert_same(got, one_fold(root))
    counter.clear()
    assert_same(run(root, None, counter), got)
    # without the cache too, a group at a time (a fold holds its group's rows whole)
    assert counter == [1, 1, 1]
    assert got is not None
    assert got.calls.height == 4


def test_json_lines_files_are_grouped_by_directory_and_other_files_by_the_reader() -> None:
    gemini = next(reader for agent, reader in readers() if agent.id == "gemini-cli")
    names = ["a/chats/s1.jsonl", "a/chats/s1/sub.jsonl", "a/chats/s2.jsonl", "b/chats/s3.jsonl"]
    names += ["a/chats/old1.json", "b/chats/old2.json"]
    logs = [LogFile(str(Path("/t", name)), "") for name in names]
    grouped = [
        [str(log.path.relative_to("/t")) for log in unit]
        for unit in units(gemini, logs, fine=False)
    ]
    # the reader (Gemini CLI's) makes one group of whatever it is given
    assert grouped == [names[:3], names[3:4], names[4:]]
    grouped = [
        [str(log.path.relative_to("/t")) for log in unit] for unit in units(gemini, logs, fine=True)
    ]
    assert grouped == [names[:2], names[2:3], names[3:4], names[4:]]


@pytest.mark.parametrize("warm", [False, True])
def test_a_request_copied_into_another_group_counts_once(tmp_path: Path, warm: bool) -> None:
    root = tmp_path / "projects"
    write(root, {"p1/s1.jsonl": reply("s1", "m1", 5, 1) + reply("s1", "m2", 9, 2)})
    cache = ResultCache(tmp_path / "cache")
    if warm:  # the original is stored before its copy appears
        run(root, cache)
    # a session file copied into another project, and a resume writing the request again
    write(
        root,
        {
            "p2/s1.jsonl": reply("s1", "m1", 5, 1),
            "p3/s9.jsonl": reply("s9", "m2", 9, 2, uuid="u-s1-m2") + reply("s9", "m3", 4, 5),
        },
    )
    got = run(root, cache)
    assert_same(got, one_fold(root))
    assert_same(run(root, None), got)
    assert got is not None
    assert sorted(got.calls["api_call_id"].to_list()) == ["m1", "m2", "m3"]
    assert_same(run(root, cache), got)  # and warm after it


def test_a_deleted_file_drops_its_calls(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    write(root, {"p1/s1.jsonl": reply("s1", "m1", 5, 1), "p2/s2.jsonl": reply("s2", "m2", 6, 2)})
    cache = ResultCache(tmp_path / "cache")
    run(root, cache)
    (root / "p2/s2.jsonl").unlink()
    got = run(root, cache)
    assert got is not None
    assert got.calls["session_id"].to_list() == ["s1"]
    assert_same(got, one_fold(root))
    assert_same(run(root, None), got)


#: Lines the edits write: requests of three sessions, some shared between them.
POOL = [
    reply("s1", "m1", 5, 1),
    reply("s1", "m2", 9, 2),
    reply("s2", "m3", 4, 3),
    reply("s2", "m1", 5, 1),  # a request copied into another session
    reply("s3", "m4", 7, 4),
    reply("s3", "m4", 8, 5),  # the same request, more output
    '{"type":"assistant","sessionId":"s3","message":{"id":"m5"',  # cut off
]
FILES = [
    "p1/s1.jsonl",
    "p1/s2.jsonl",
    "p2/s1.jsonl",
    "p2/s3.jsonl",
    "p1/s1/subagents/agent-a.jsonl",
]
EDITS = st.tuples(
    st.sampled_from(["append", "delete", "copy"]),
    st.sampled_from(FILES),
    st.sampled_from(FILES),
    st.sampled_from(POOL),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(EDITS, min_size=1, max_size=6))
def test_any_edits_give_what_a_cold_fold_gives(edits: list[tuple[str, str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "projects"
        write(root, {"p1/s1.jsonl": POOL[0], "p2/s3.jsonl": POOL[4]})
        cache = ResultCache(Path(folder) / "cache")
        run(root, cache)
        for what, name, other, line in edits:
            path, target = root / name, root / other
            if what == "append":
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a") as log:
                    log.write(line if line.endswith("\n") else line + "\n")
            elif what == "delete" and path.exists() and len(list(root.rglob("*.jsonl"))) > 1:
                path.unlink()
            elif what == "copy" and path.exists() and path != target:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
            assert_all_same(root, cache)


def real_trees() -> list[object]:
    return [
        pytest.param(agent, id=agent)
        if (REAL_LOGS / agent).is_dir()
        else pytest.param(
            agent, marks=pytest.mark.skip(reason=f"no real logs at {REAL_LOGS / agent}")
        )
        for agent in ("claude-code", "codex", "pi", "gemini-cli")
    ]


@pytest.mark.parametrize("agent", real_trees())
def test_real_logs_cached_cold_warm_and_touched(tmp_path: Path, agent: str) -> None:
    root = tmp_path / agent
    shutil.copytree(REAL_LOGS / agent, root)
    cache = ResultCache(tmp_path / "cache")
    cold = one_fold(root)
    assert_same(run(root, None), cold)
    assert_same(run(root, cache), cold)
    assert_same(run(root, cache), cold)
    files = sorted(root.rglob("*.jsonl"))
    last = files[len(files) // 2]
    lines = last.read_bytes().splitlines(keepends=True)
    with last.open("ab") as log:
        log.write(lines[-1] if lines[-1].endswith(b"\n") else b"\n" + lines[-1])
    files[0].unlink()
    assert_all_same(root, cache)


@pytest.mark.parametrize("items", [False, True])
def test_a_touched_tree_prices_only_the_changed_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, items: bool
) -> None:
    """The sessions of the groups reused unchanged are priced by the previous analysis
    (``Before.same``), with or without the context items; the priced tables are those of a
    fresh pricing."""
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[int] = []
    real = priced_tables._priced

    def spy(calls: pl.DataFrame, *args: Any) -> Any:
        seen.append(calls.height)
        return real(calls, *args)

    monkeypatch.setattr(priced_tables, "_priced", spy)
    root = tmp_path / "projects"
    write(root, {f"p{n}/s{n}.jsonl": reply(f"s{n}", f"m{n}", n, n) for n in range(1, 5)})
    table = load_rates("github-copilot")

    def priced() -> tuple[pl.DataFrame, pl.DataFrame]:
        result = analyze([root], use_cache=True, agent_items=items)
        tables = priced_tables.priced_tables(result, table, {}, ["calls", "sessions"])
        results.flush()
        fresh = analyze([root], agent_items=items)
        calls, sessions = price_analysis(
            fresh.call_view, fresh.session_view, table, {}, fresh.log_prices
        )
        assert_frame_equal(tables["sessions"], sessions)
        assert_frame_equal(tables["calls"], calls)
        return tables["calls"], tables["sessions"]

    priced()
    with (root / "p2/s2.jsonl").open("a") as log:
        log.write(reply("s2", "m9", 3, 9))
    seen.clear()
    calls, _ = priced()
    assert seen[0] == 2  # the touched session's calls alone (then the fresh pricing's)
    assert calls.height == 5


@given(
    values=st.lists(st.sampled_from(["a", "b", "c", "d", None]), max_size=12),
    keys=st.lists(st.sampled_from(["a", "b", "c"]), unique=True),
)
def test_a_lookup_is_the_replacement_it_stands_for(
    values: list[str | None], keys: list[str]
) -> None:
    """``_looked_up`` gives what ``replace_strict`` with a null default gives."""
    found = pl.Series(range(len(keys)), dtype=pl.Int64)
    named = pl.Series("v", values, dtype=pl.String)
    key = pl.Series(keys, dtype=pl.String)
    expected = named.replace_strict(key, found, default=None, return_dtype=pl.Int64)
    assert_series_equal(_looked_up(named, key, found), expected)


_PATHS = ["/h/p1/a.jsonl", "/h/p1/b.jsonl", "/h/p2/c.jsonl"]


@given(
    files=st.lists(st.sampled_from([*_PATHS, None]), max_size=8),
    lists=st.lists(st.one_of(st.none(), st.lists(st.sampled_from(_PATHS), max_size=3)), max_size=6),
)
def test_stored_paths_are_numbers_that_name_the_same_paths(
    files: list[str | None], lists: list[list[str] | None]
) -> None:
    """A table is stored with each path as its number among the note's groups' paths, and
    read back as the same table: nulls, empty lists and column order kept."""
    paths = _paths_of({"groups": [_PATHS[:2], _PATHS[2:]]})
    tables = {
        "calls": pl.DataFrame(
            {"source_file": files, "line": list(range(len(files)))},
            schema={"source_file": pl.String, "line": pl.Int64},
        ),
        "sessions": pl.DataFrame(
            {"session_id": [f"s{i}" for i in range(len(lists))], "source_files": lists},
            schema={"session_id": pl.String, "source_files": pl.List(pl.String)},
        ),
    }
    stored = _numbered(tables, paths)
    assert stored["calls"].columns == ["_file", "line"]
    assert stored["sessions"].schema["_files"] == pl.List(pl.Int32)
    for name, table in tables.items():
        assert_frame_equal(_named(stored[name], paths), table)


def test_the_stored_tables_hold_no_path_text(tmp_path: Path) -> None:
    """The cache's tables name each file by number (its text was held once a row while
    written, and read back once a row), and a warm run still names every file."""
    root = tmp_path / "projects"
    write(root, {"p1/s1.jsonl": reply("s1", "m1", 5, 1), "p2/s2.jsonl": reply("s2", "m2", 6, 2)})
    cache = ResultCache(tmp_path / "cache")
    cold = run(root, cache)
    stored = [
        pl.read_ipc(path)
        for path in (tmp_path / "cache").rglob("*.arrow")
        if path.name.startswith(("calls", "sessions"))
    ]
    assert stored
    assert all("source_file" not in t.columns and "source_files" not in t.columns for t in stored)
    assert any("_file" in t.columns for t in stored)
    warm = run(root, cache)
    assert cold is not None and warm is not None
    assert sorted(warm.calls["source_file"].to_list()) == sorted(
        str(root / name) for name in ("p1/s1.jsonl", "p2/s2.jsonl")
    )
    assert_same(warm, cold)
