"""The native engine's Copilot pass and token stage equal the polars stages, table for table.

The polars stages (``order_events`` -> ``drop_repeats`` -> ``place_model_metrics`` ->
``build_calls`` -> ``summarize_sessions`` -> ``session_issues``; the priced lines ``log_prices``
decodes; the token stage, ``tests/oracle/reference/tokens.py``, with its reconstruction and
calibration) are the oracle; the engine (``analytics.agents.copilot.engine_pass.pass_group``,
``native/agents/copilot/pass.rs`` and ``fold.rs``; ``analytics.agents.copilot.call_tokens``,
``tokens.rs`` with ``fit.rs`` and ``calibrate.rs``) must give the same ordered EVENTS (repeats
dropped), placed MODEL_METRICS, reading issues (the scan's, repeated lines, unknown event
types), CALLS, SESSIONS, orphan-end and session issues, LOG_PRICES, and calls with tokens,
sessions with their sums and fit, and token issues: same columns, dtypes, rows and row order
(issues as sets: ``analysis`` sorts them), a reconstructed figure within a token (see
``assert_calls_close``). The token stage is compared with the per-call rows beside the logs and
without (``use_observed=False``, what ``validate`` runs). Compared on ``sample_logs/`` (whole
with its session store, and one file at a time), every real Copilot log one file at a time, the
real SDK captures with their per-call truth, simulated sessions
(``analytics.agents.copilot.simulate``: resumes, crashes, compactions, sub-agents, autopilot)
with and without damage (lines dropped, repeated, swapped, torn), and generated event sequences
over the event types the rules name, with odd values (repeated ids, torn lines, priced and odd
``tokenDetails``) and generated per-call rows.
``AGENTCOST_DIFFERENTIAL_EXAMPLES`` sets the number of generated cases (200 by default)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from analytics import _scanner
from analytics.agents.copilot import call_tokens as tokens
from analytics.agents.copilot import engine_pass as engine
from analytics.agents.copilot.events import scan_logs
from analytics.agents.copilot.log_prices import log_prices
from analytics.agents.copilot.sdk_capture import read_capture
from analytics.agents.copilot.simulate import SimulationParams, simulate, write_capture_tree
from analytics.agents.copilot.store import read_session_store
from analytics.agents.copilot.tables import PASS_SESSIONS
from analytics.agents.discover import LogFile
from analytics.core.schema import EVENTS, OBSERVED_USAGE, empty, padded
from benchmarks.profile import ENGINE_STAGES, with_stages
from tests.conftest import REAL_LOGS, SAMPLE_LOGS
from tests.oracle.reference import tokens as reference_tokens
from tests.oracle.reference.calls import build_calls
from tests.oracle.reference.events import (
    drop_repeats,
    order_events,
    place_model_metrics,
    priced_lines,
)
from tests.oracle.reference.reader import read_logs
from tests.oracle.reference.sessions import session_issues, summarize_sessions

#: Folders of other agents' logs under the real logs.
OTHER_AGENTS = {"claude-code", "codex"}
EXAMPLES = int(os.environ.get("AGENTCOST_DIFFERENTIAL_EXAMPLES", "200"))
NAMES = ("calls", "sessions", "fold issues", "events", "model metrics", "read issues", "prices")
#: The figures a call's reconstruction gives (see ``assert_calls_close``).
RECONSTRUCTED = [
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "fixed_part_tokens",
    "input_tokens_low",
    "input_tokens_high",
]
#: The real SDK captures (their per-call truth goes to a session store beside the log).
CAPTURES = REAL_LOGS / "darthmolen-sdk-captures"


def _logs(paths: list[Path]) -> list[LogFile]:
    return [LogFile(str(p), p.parent.name if p.name == "events.jsonl" else p.stem) for p in paths]


def _copilot_logs(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*.jsonl") if not OTHER_AGENTS.intersection(p.relative_to(root).parts)
    )


def reference(paths: list[Path]) -> tuple[pl.DataFrame, ...]:
    """The polars stages' tables of the logs ``paths``, in ``NAMES`` order."""
    parsed = read_logs(_logs(paths))
    events, repeats = drop_repeats(order_events(parsed.events))
    metrics = place_model_metrics(parsed.model_metrics, events)
    calls, orphans = build_calls(events, metrics)
    sessions = summarize_sessions(events, calls, metrics)
    return (
        calls,
        sessions,
        pl.concat([orphans, session_issues(events, sessions)]),
        events,
        metrics,
        pl.concat([parsed.issues, repeats]),
        log_prices(priced_lines(events), pl.DataFrame()),
    )


def engine_tables(paths: list[Path]) -> tuple[tuple[pl.DataFrame, ...], engine.Passed]:
    """The engine's pass over the logs ``paths``: its tables in ``NAMES`` order, and itself."""
    passed = engine.pass_group(scan_logs(_logs(paths)), list(EVENTS))
    assert passed.events is not None
    tables = (
        passed.calls,
        passed.sessions,
        passed.fold_issues,
        passed.events,
        passed.model_metrics,
        passed.read_issues,
        log_prices(passed.priced_lines, pl.DataFrame()),
    )
    return tables, passed


def token_pairs(
    passed: engine.Passed, records: pl.DataFrame | None
) -> list[tuple[str, pl.DataFrame, pl.DataFrame]]:
    """The token stage's calls, sessions and issues, the reference's and the engine's, with the
    per-call rows beside the log and without, on the engine's pass (the same input to both)."""
    calls, sessions, metrics = passed.calls, passed.sessions, passed.model_metrics
    assert passed.events is not None
    events = passed.events
    pairs = []
    for use_observed in (True, False):
        mode = "" if use_observed else " (validate)"
        want_calls, want_issues, fitted = reference_tokens.call_tokens_and_fit(
            calls, events, sessions, metrics, records, use_observed=use_observed
        )
        got_calls, got_issues, totals = tokens.call_tokens_and_fit(
            calls,
            events,
            sessions,
            metrics,
            records,
            use_observed=use_observed,
        )
        keys = ["session_id", "event_seq"]
        pairs += [
            (f"calls with tokens{mode}", want_calls.sort(keys), got_calls),
            (
                f"sessions with totals{mode}",
                reference_tokens.with_call_totals(sessions, want_calls, fitted),
                tokens.with_call_totals(sessions, totals, PASS_SESSIONS),
            ),
            (f"token issues{mode}", want_issues, got_issues),
        ]
    return pairs


def pass_pairs(
    paths: list[Path], passed: engine.Passed, records: pl.DataFrame | None
) -> list[tuple[str, pl.DataFrame, pl.DataFrame]]:
    """The pass that runs the token stage on its folds (what ``analyze`` runs) against the
    token stage on the pass's tables: the same calls, sessions and issues."""
    usage = records if records is not None else empty(OBSERVED_USAGE)
    inside = engine.pass_group(scan_logs(_logs(paths)), None, usage)
    assert passed.events is not None and inside.token_issues is not None
    calls, issues, totals = tokens.call_tokens_and_fit(
        passed.calls,
        passed.events,
        passed.sessions,
        passed.model_metrics,
        records,
    )
    return [
        ("calls in the pass", calls, inside.calls),
        (
            "sessions in the pass",
            tokens.with_call_totals(passed.sessions, totals, PASS_SESSIONS),
            inside.sessions,
        ),
        ("token issues in the pass", issues, inside.token_issues),
    ]


def assert_same(paths: list[Path], records: pl.DataFrame | None = None) -> None:
    tables, passed = engine_tables(paths)
    pairs = list(zip(NAMES, reference(paths), tables, strict=True))
    pairs += token_pairs(passed, records)
    pairs += pass_pairs(paths, passed, records)
    for name, want, got in pairs:
        # Issues are in no order until ``analysis`` sorts them (polars joins keep none).
        ordered = [
            f.sort(pl.all(), nulls_last=False) if "issues" in name else f for f in (got, want)
        ]
        try:
            if name.startswith("calls with tokens"):
                assert_calls_close(*ordered)
            elif name.startswith("sessions with totals"):
                assert_sessions_close(*ordered)
            else:
                assert_frame_equal(*ordered)
        except AssertionError as error:
            raise AssertionError(f"{name} of {[str(p) for p in paths]}: {error}") from error


def _one_token(got: pl.DataFrame, want: pl.DataFrame, columns: list[str]) -> None:
    """The same nulls, and figures at most 1 token apart."""
    for column in columns:
        assert got[column].is_null().equals(want[column].is_null()), column
        apart = (got[column] - want[column]).abs().fill_null(0)
        assert (apart <= 1).all(), f"{column}: more than 1 token apart"


def assert_calls_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Identical, but for the reconstructed figures of the calls no record gives: the fit's
    floats sum in another order in the engine (its unknowns in the order the calls name them,
    the reference's in polars' order), so a figure that rounds at .5 may differ by 1 token.
    Observed calls are identical, and the calibrated calls of each shutdown total sum to the
    same, exactly."""
    assert_frame_equal(got.drop(RECONSTRUCTED), want.drop(RECONSTRUCTED))
    _one_token(got, want, RECONSTRUCTED)
    observed = pl.col("token_source") == "observed"
    assert_frame_equal(got.filter(observed), want.filter(observed))
    calibrated = pl.col("token_source") == "calibrated"
    sums = [pl.col(c).sum() for c in ("input_tokens", "cache_read_tokens", "cache_write_tokens")]
    keys = ["session_id", "model"]
    assert_frame_equal(
        *(f.filter(calibrated).group_by(keys).agg(sums).sort(keys) for f in (got, want))
    )


def assert_sessions_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Identical, but for sums of reconstructed figures, which differ by at most a token per
    estimated call (see ``assert_calls_close``)."""
    summed = ["input_tokens", "cache_read_tokens", "cache_write_tokens"]
    assert_frame_equal(got.drop(summed), want.drop(summed))
    for column in summed:
        apart = (got[column] - want[column]).abs().fill_null(0)
        assert (apart <= got["llm_calls"]).all(), column


def test_sample_logs_whole_and_one_file_at_a_time() -> None:
    files = _copilot_logs(SAMPLE_LOGS)
    assert files
    store, _ = read_session_store(SAMPLE_LOGS / "session-store.db")
    assert store.height
    assert_same(files, store)
    for path in files:
        assert_same([path])


def test_the_pass_reports_where_its_time_went(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pass adds its engine stages' seconds to the dict the profile hands it (through
    ``benchmarks.profile``'s wrapper, as ``make bench`` runs it), every stage's more than 0
    on the sample logs with the token stage run, and they add up over passes."""
    seconds: dict[str, float] = {}
    monkeypatch.setattr(_scanner, "pass_copilot", with_stages(_scanner.pass_copilot, seconds))
    store, _ = read_session_store(SAMPLE_LOGS / "session-store.db")
    scanned = scan_logs(_logs(_copilot_logs(SAMPLE_LOGS)))
    engine.pass_group(scanned, None, store)
    assert set(seconds) == {key for key, _ in ENGINE_STAGES}
    assert all(value > 0 for value in seconds.values()), seconds
    once = dict(seconds)
    engine.pass_group(scanned, None, store)
    assert all(seconds[key] > once[key] for key in once), (once, seconds)


@pytest.mark.skipif(not CAPTURES.is_dir(), reason=f"no SDK captures at {CAPTURES}")
def test_the_real_sdk_captures_with_their_per_call_truth(tmp_path: Path) -> None:
    captures = sorted(CAPTURES.glob("*.json"))
    assert captures
    for index, path in enumerate(captures):
        home = tmp_path / str(index)
        session = write_capture_tree(home, read_capture(path))
        store, _ = read_session_store(home / "session-store.db")
        assert_same([session / "events.jsonl"], store)
        assert_same([session / "events.jsonl"])


@pytest.mark.skipif(not REAL_LOGS.is_dir(), reason=f"no real logs at {REAL_LOGS}")
def test_every_real_copilot_log() -> None:
    for path in _copilot_logs(REAL_LOGS):
        assert_same([path])


def _damaged(lines: list[bytes], rng: random.Random) -> list[bytes]:
    """Lines dropped, repeated, swapped with the next, or torn."""
    out: list[bytes] = []
    for line in lines:
        roll = rng.random()
        if roll < 0.05:
            continue
        if roll < 0.10:
            out += [line, line]
        elif roll < 0.14 and out:
            out.insert(len(out) - 1, line)
        elif roll < 0.16:
            out.append(line[: rng.randrange(len(line) + 1)])
        else:
            out.append(line)
    return out


@settings(
    max_examples=max(EXAMPLES // 10, 5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**31), damage=st.booleans())
def test_simulated_sessions(
    tmp_path_factory: pytest.TempPathFactory, seed: int, damage: bool
) -> None:
    out = tmp_path_factory.mktemp("sim")
    params = SimulationParams(
        seed=seed,
        sessions=2,
        calls_per_session=(2, 12),
        subagent_probability=0.5,
        resume_probability=0.4,
        crash_probability=0.3,
        compaction_threshold=20_000,
    )
    simulate(out, params)
    files = _copilot_logs(out)
    if damage:
        rng = random.Random(seed)
        for path in files:
            path.write_bytes(b"\n".join(_damaged(path.read_bytes().split(b"\n"), rng)))
    assert_same(files)


_TYPES = [
    "session.start",
    "session.resume",
    "session.model_change",
    "session.auto_mode_resolved",
    "session.shutdown",
    "session.usage_checkpoint",
    "session.usage_record",
    "session.error",
    "session.info",
    "session.task_complete",
    "session.compaction_start",
    "session.compaction_complete",
    "abort",
    "user.message",
    "system.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "assistant.usage",
    "tool.execution_start",
    "tool.execution_complete",
    "subagent.started",
    "subagent.completed",
    "subagent.failed",
]
#: ``tokenDetails`` values: priced lists (with and without their own model), odd entries,
#: and shapes that quote no price.
_TOKEN_DETAILS = [
    [{"tokenType": "input", "tokenCount": 4, "costPerBatch": 200000000000, "batchSize": 1000000}],
    [
        {"tokenType": "output", "costPerBatch": 5e11, "batchSize": 1000000, "model": "M2"},
        {"tokenType": "cache_read", "costPerBatch": "x", "batchSize": None},
    ],
    [],
    {"input": {"tokenCount": 15}},
    "[not json",
]
_MODELS = st.sampled_from(["m1", "m2", "claude-haiku-4.5", "auto", ""])
_IDS = st.sampled_from(["a", "b", "c"])
_NUMBERS = st.one_of(
    st.integers(-5, 3000), st.sampled_from(["80", "2.31", "1e3", "0", "0.0000000025"])
)


@st.composite
def _event(draw: st.DrawFn, index: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(_TYPES))
    data: dict[str, Any] = {}

    def maybe(key: str, values: st.SearchStrategy[Any]) -> None:
        if draw(st.booleans()):
            data[key] = draw(values)

    if kind == "session.start":
        data["sessionId"] = draw(st.sampled_from(["s1", "s2"]))
        maybe("copilotVersion", st.sampled_from(["1.0.40", "1.0.66", "1.0.80", "2"]))
        maybe("context", st.fixed_dictionaries({"cwd": st.sampled_from(["/x", "/y"])}))
    maybe("model", _MODELS)
    maybe("selectedModel", _MODELS)
    maybe("parentToolCallId", _IDS)
    maybe("toolCallId", _IDS)
    maybe("agentName", st.sampled_from(["explore", "task"]))
    maybe("toolName", st.sampled_from(["bash", "view", "task"]))
    maybe("outputTokens", st.integers(0, 500))
    maybe("turnId", st.sampled_from(["0", "1"]))
    maybe("apiCallId", _IDS)
    maybe("content", st.sampled_from(["hi", "a longer text"]))
    maybe("message", st.sampled_from(["rate limited", "boom"]))
    maybe("summary", st.sampled_from(["done"]))
    maybe("infoType", st.sampled_from(["rewind", "other"]))
    maybe("shutdownType", st.sampled_from(["routine", "error"]))
    maybe("totalNanoAiu", _NUMBERS)
    maybe("totalPremiumRequests", _NUMBERS)
    maybe("totalApiDurationMs", st.integers(0, 10_000))
    maybe("eventsFileSizeBytes", st.integers(0, 100_000))
    maybe("initiator", st.sampled_from(["sub-agent", "user", "agent"]))
    maybe("isAutopilotContinuation", st.booleans())
    if kind == "session.shutdown" and draw(st.booleans()):
        data["modelMetrics"] = {
            model: {
                # now and then a count left out, or beyond 64 bits (both unknown)
                "requests": draw(st.sampled_from([{}, {"count": 1e30}]))
                if draw(st.integers(0, 4)) == 0
                else {"count": draw(st.integers(0, 6))},
                "usage": {"inputTokens": draw(st.integers(0, 9999)), "outputTokens": 7},
            }
            for model in draw(st.lists(st.sampled_from(["m1", "m2"]), max_size=2, unique=True))
        }
    if kind == "session.usage_record":
        data["usage"] = {
            "model": draw(_MODELS),
            "inputTokens": draw(st.integers(0, 999)),
            "outputTokens": draw(st.integers(0, 99)),
            "isByok": draw(st.booleans()),
            "interactionType": draw(
                st.sampled_from(["conversation-agent", "conversation-subagent"])
            ),
            "accounting": {"usageId": draw(_IDS)},
            "duration": draw(st.integers(0, 5000)),
            "initiator": draw(st.sampled_from(["sub-agent", "user"])),
            "copilotUsage": {"totalNanoAiu": draw(_NUMBERS)},
        }
        if draw(st.booleans()):
            data["usage"]["copilotUsage"]["tokenDetails"] = draw(st.sampled_from(_TOKEN_DETAILS))
    line: dict[str, Any] = {"type": kind, "data": data}
    if draw(st.booleans()):
        line["id"] = draw(st.sampled_from([f"e{index}", "dup"]))
    if draw(st.integers(0, 9)):
        seconds = draw(st.integers(0, 3600))
        line["timestamp"] = (
            f"2026-05-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"
        )
    if draw(st.integers(0, 3)) == 0:
        line["agentId"] = draw(_IDS)
    return line


@st.composite
def _session_files(draw: st.DrawFn) -> list[list[bytes]]:
    files: list[list[bytes]] = []
    for _ in range(draw(st.integers(1, 2))):
        count = draw(st.integers(0, 25))
        lines = [json.dumps(draw(_event(i))).encode() for i in range(count)]
        if draw(st.booleans()) and lines:
            lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
        files.append(lines)
    return files


_TOKENS = st.one_of(st.none(), st.integers(0, 5000))


@st.composite
def _records(draw: st.DrawFn) -> pl.DataFrame | None:
    """Per-call rows beside the logs (session store, OTel) for the generated sessions: from one
    or two sources, main and sub-agent rows, figures missing or odd."""
    if draw(st.booleans()):
        return None
    rows = [
        {
            "source_file": draw(st.sampled_from(["/a/session-store.db", "/b/otel.jsonl"])),
            "source_line": index,
            "session_id": draw(st.sampled_from(["s1", "s2", "part0", "part1"])),
            "seq": index,
            "agent_id": draw(st.one_of(st.none(), _IDS)),
            "model": draw(st.one_of(st.none(), _MODELS)),
            "input_tokens": draw(_TOKENS),
            "output_tokens": draw(_TOKENS),
            "cache_read_tokens": draw(_TOKENS),
            "cache_write_tokens": draw(_TOKENS),
            "reasoning_tokens": draw(_TOKENS),
            "total_nano_aiu": draw(st.one_of(st.none(), st.sampled_from(["0", "12345"]))),
        }
        for index in range(draw(st.integers(0, 12)))
    ]
    if not rows:
        return None
    return padded(
        pl.DataFrame(rows, schema={name: OBSERVED_USAGE[name] for name in rows[0]}), OBSERVED_USAGE
    )


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(files=_session_files(), records=_records())
def test_generated_event_sequences(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[list[bytes]],
    records: pl.DataFrame | None,
) -> None:
    root = tmp_path_factory.mktemp("gen")
    paths = []
    for index, lines in enumerate(files):
        path = root / f"s{index % 2}" / f"part{index}" / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"\n".join(lines) + b"\n")
        paths.append(path)
    assert_same(paths, records)
