"""Tests of ``agentcost simulate``: determinism, faithful shapes, and a self-consistent truth.

The truth is checked against the log by an independent reading of the documented token rule
(``context_tokens`` of the context text of each event), so a change to the generator that breaks
the contract between what is written and what is counted fails here.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analytics.agents.copilot.simulate import MB, SimulationParams, simulate, text_tokens
from analytics.cli.commands import app
from analytics.core.errors import UsageError
from tests.conftest import SAMPLE_LOGS

#: Every feature at a high rate, so a few dozen sessions exercise them all.
BUSY = SimulationParams(
    seed=7,
    sessions=40,
    calls_per_session=(3, 30),
    subagent_probability=0.3,
    resume_probability=0.3,
    model_switch_probability=0.5,
    autopilot_probability=0.3,
    compaction_threshold=40_000,
    crash_probability=0.3,
    torn_line_probability=0.7,
)

Event = dict[str, Any]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("busy")
    simulate(out, BUSY, store=True)
    return out


@pytest.fixture(scope="module")
def truth(tree: Path) -> dict[str, Any]:
    return dict(json.loads((tree / "ground_truth.json").read_text()))


def read_events(path: Path) -> tuple[list[Event], bytes]:
    """Parsed lines, and the unparsable tail (the torn line of a crash, NULs included)."""
    events, tail = [], b""
    for line in path.read_bytes().split(b"\n"):
        try:
            events.append(json.loads(line))
        except ValueError:
            tail += line
    return events, tail


def sessions(tree: Path, truth: dict[str, Any]) -> list[tuple[dict[str, Any], list[Event]]]:
    return [(s, read_events(tree / s["events_file"])[0]) for s in truth["sessions"]]


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".db"
    }


def store_rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT * FROM assistant_usage_events ORDER BY id").fetchall()


def test_same_seed_gives_identical_bytes(tree: Path, tmp_path: Path) -> None:
    simulate(tmp_path, BUSY, store=True)
    assert files(tmp_path) == files(tree)
    assert store_rows(tmp_path / "session-store.db") == store_rows(tree / "session-store.db")


def test_another_seed_gives_other_sessions(tmp_path: Path) -> None:
    simulate(tmp_path / "a", SimulationParams(seed=1, sessions=2))
    simulate(tmp_path / "b", SimulationParams(seed=2, sessions=2))
    assert files(tmp_path / "a") != files(tmp_path / "b")


def test_every_line_is_json_but_the_torn_last_line_of_a_crash(
    tree: Path, truth: dict[str, Any]
) -> None:
    torn = 0
    for session in truth["sessions"]:
        raw = (tree / session["events_file"]).read_bytes()
        events, tail = read_events(tree / session["events_file"])
        if session["torn_line"]:
            torn += 1
            assert session["crashed"] and tail and not raw.endswith(b"\n")
            assert raw.rstrip(b"\0").endswith(tail.rstrip(b"\0"))
        else:
            assert tail == b"" and raw.endswith(b"\n")
        assert [e["parentId"] for e in events[1:]] == [e["id"] for e in events[:-1]]
        assert list(events[0]) == ["type", "data", "id", "timestamp", "parentId"]
    assert torn > 0


def test_the_features_all_occur(tree: Path, truth: dict[str, Any]) -> None:
    types = Counter(e["type"] for _, events in sessions(tree, truth) for e in events)
    for kind in (
        "session.resume",
        "session.compaction_complete",
        "subagent.completed",
        "session.task_complete",
        "session.model_change",
        "session.usage_checkpoint",
    ):
        assert types[kind] > 0, kind
    assert any(s["crashed"] for s in truth["sessions"])


def test_call_counts_match_the_log(tree: Path, truth: dict[str, Any]) -> None:
    for session, events in sessions(tree, truth):
        main = [e for e in events if e["type"] == "assistant.turn_start" and "agentId" not in e]
        sub = [e for e in events if e["type"] == "assistant.message" and "agentId" in e]
        compactions = [e for e in events if e["type"] == "session.compaction_complete"]
        assert session["main_calls"] == len(main)
        assert session["subagent_calls"] == len(sub)
        assert session["compaction_calls"] == len(compactions)
        assert session["llm_calls"] == len(main) + len(sub) + len(compactions)
        assert session["interrupted_calls"] == int(session["crashed"])


def model_sums(calls: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    sums: dict[str, Counter[str]] = defaultdict(Counter)
    for call in calls:
        if call["kind"] != "compaction" and not call["interrupted"]:
            sums[call["model"]].update({k: v for k, v in call.items() if k.endswith("tokens")})
            sums[call["model"]]["requests"] += 1
            sums[call["model"]]["nano_aiu"] += call["nano_aiu"]
    return {model: dict(c) for model, c in sums.items()}


def test_truth_adds_up_to_the_last_shutdown(tree: Path, truth: dict[str, Any]) -> None:
    for session, events in sessions(tree, truth):
        expected = model_sums(session["calls"])
        assert {m: {k: t[k] for k in expected[m]} for m, t in session["models"].items()} == expected
        assert session["total_nano_aiu"] == sum(c["nano_aiu"] for c in session["calls"])
        shutdowns = [e["data"] for e in events if e["type"] == "session.shutdown"]
        assert len(shutdowns) == session["processes"] - session["crashed"]
        if session["crashed"]:
            continue
        last = shutdowns[-1]
        assert last["totalNanoAiu"] == session["total_nano_aiu"]
        for model, metrics in last["modelMetrics"].items():
            usage, want = metrics["usage"], expected[model]
            assert metrics["requests"]["count"] == want["requests"]
            assert usage["inputTokens"] == want["input_tokens"]
            assert usage["outputTokens"] == want["output_tokens"]
            assert usage["cacheReadTokens"] == want["cache_read_tokens"]
            assert usage["cacheWriteTokens"] == want["cache_write_tokens"]
            assert usage["reasoningTokens"] == want["reasoning_tokens"]


def test_shutdowns_are_cumulative(tree: Path, truth: dict[str, Any]) -> None:
    for _, events in sessions(tree, truth):
        totals = [e["data"]["totalNanoAiu"] for e in events if e["type"] == "session.shutdown"]
        assert totals == sorted(totals)


def context_of(event: Event, drawn: dict[str, Any]) -> int:
    """The documented rule, read independently: context tokens an event adds, at the rates
    the session drew."""
    data, kind = event["data"], event["type"]
    rate, item = drawn["tokens_per_kb"], drawn["item_tokens"]
    if kind == "user.message":
        return text_tokens(len(data["content"]), rate["prose"]) + item
    if kind == "assistant.message":
        args = "".join(
            json.dumps(r["arguments"], separators=(",", ":")) for r in data["toolRequests"]
        )
        content = text_tokens(len(data["content"]), rate["prose"])
        return content + text_tokens(len(args), rate["json"]) + item
    if kind == "tool.execution_complete":
        return text_tokens(len(data["result"]["content"]), rate["tool"]) + item
    return 0


def reconstruct(events: list[Event], drawn: dict[str, Any]) -> tuple[list[int], list[int]]:
    """Main-call prompts and shutdown context sizes, from the log and what the session drew."""
    prompts, snapshots, conversation = [], [], 0
    fixed = drawn["fixed_tokens"]
    for event in (e for e in events if "agentId" not in e):
        kind = event["type"]
        if kind == "session.compaction_complete":
            conversation = event["data"]["postCompactionTokens"] - fixed
        elif kind == "assistant.turn_start":
            prompts.append(fixed + conversation)
        elif kind == "session.shutdown":
            snapshots.append(fixed + conversation)
        else:
            conversation += context_of(event, drawn)
    return prompts, snapshots


def test_input_tokens_are_the_context_written_before_the_call(
    tree: Path, truth: dict[str, Any]
) -> None:
    for session, events in sessions(tree, truth):
        prompts, snapshots = reconstruct(events, session["drawn"])
        main = [c["input_tokens"] for c in session["calls"] if c["kind"] == "main"]
        assert prompts == main
        shutdowns = [e["data"] for e in events if e["type"] == "session.shutdown"]
        assert snapshots == [s["currentTokens"] for s in shutdowns]


def test_sessions_draw_their_own_fixed_part_and_rates(truth: dict[str, Any]) -> None:
    drawn = [s["drawn"] for s in truth["sessions"]]
    assert all(8_000 <= d["fixed_tokens"] <= 40_000 for d in drawn)
    for kind in ("tool", "prose", "json"):
        assert len({d["tokens_per_kb"][kind] for d in drawn}) > 1


def test_sub_agent_and_compaction_figures_match_the_truth(
    tree: Path, truth: dict[str, Any]
) -> None:
    for session, events in sessions(tree, truth):
        sub = [c for c in session["calls"] if c["kind"] == "subagent"]
        completed = [e["data"] for e in events if e["type"] == "subagent.completed"]
        assert sum(d["totalTokens"] for d in completed) == sum(
            c["input_tokens"] + c["output_tokens"] for c in sub
        )
        compactions = [c for c in session["calls"] if c["kind"] == "compaction"]
        done = [e["data"] for e in events if e["type"] == "session.compaction_complete"]
        assert [d["compactionTokensUsed"]["inputTokens"] for d in done] == [
            c["input_tokens"] for c in compactions
        ]
        assert [d["preCompactionTokens"] for d in done] == [c["input_tokens"] for c in compactions]


def test_caching_splits_the_input(truth: dict[str, Any]) -> None:
    calls = [c for s in truth["sessions"] for c in s["calls"]]
    assert all(c["cache_read_tokens"] + c["cache_write_tokens"] <= c["input_tokens"] for c in calls)
    assert sum(c["cache_read_tokens"] for c in calls) > sum(c["cache_write_tokens"] for c in calls)


def test_crashed_sessions_end_in_an_open_turn(tree: Path, truth: dict[str, Any]) -> None:
    for session, events in sessions(tree, truth):
        kinds = Counter(e["type"] for e in events)
        open_turns = kinds["assistant.turn_start"] - kinds["assistant.turn_end"]
        assert open_turns == int(session["crashed"])
        if session["crashed"]:
            assert events[-1]["type"] == "assistant.turn_start"


def test_store_rows_are_the_truth(tree: Path, truth: dict[str, Any]) -> None:
    expected = []
    for session in truth["sessions"]:
        crashed = session["processes"] - 1 if session["crashed"] else None
        expected += [
            (session["session_id"], c["model"], c["input_tokens"], c["output_tokens"],
             c["cache_read_tokens"], c["cache_write_tokens"], c["reasoning_tokens"], c["nano_aiu"])
            for c in session["calls"]
            if c["kind"] != "compaction" and c["process"] != crashed
        ]  # fmt: skip
    rows = [(r[1], *r[5:12]) for r in store_rows(tree / "session-store.db")]
    assert rows == expected


def test_size_target(tmp_path: Path) -> None:
    summary = simulate(tmp_path, SimulationParams(seed=3, sessions=None, target_size_mb=2))
    on_disk = sum(p.stat().st_size for p in (tmp_path / "session-state").rglob("*") if p.is_file())
    assert on_disk == summary.bytes_written
    assert abs(on_disk - 2 * MB) <= 0.1 * 2 * MB


def test_cli_simulate(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["simulate", str(tmp_path / "out"), "--sessions", "2", "--seed", "5", "--store"]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 2 sessions" in result.output
    assert (tmp_path / "out" / "session-store.db").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["--calls", "9-3"],
        ["--model", "no-such-model=1"],
        ["--crash-probability", "1.5"],
        ["--timezone", "Mars/Olympus"],
        ["--sessions", "2", "--size-mb", "1"],
    ],
)
def test_cli_rejects_bad_values(tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(app, ["simulate", str(tmp_path / "out"), *args])
    assert result.exit_code == 2


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    simulate(tmp_path, SimulationParams(sessions=1))
    with pytest.raises(UsageError, match="already exists"):
        simulate(tmp_path, SimulationParams(sessions=1))


def test_sample_logs_are_what_the_simulator_writes(tmp_path: Path) -> None:
    """``sample_logs/`` must be regenerated (``sample_logs/generate.py``) when output changes."""
    spec = importlib.util.spec_from_file_location("generate", SAMPLE_LOGS / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    simulate(tmp_path, list(generate.SCENARIOS.values()), store=True)
    written = files(tmp_path / "session-state")
    assert written == files(SAMPLE_LOGS / "session-state")
    truth = json.loads((tmp_path / "ground_truth.json").read_text())
    assert truth == json.loads((SAMPLE_LOGS / "ground_truth.json").read_text())
    assert store_rows(tmp_path / "session-store.db") == store_rows(SAMPLE_LOGS / "session-store.db")
