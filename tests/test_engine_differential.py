"""The native engine's Copilot pass equals the polars stages, table for table.

The polars stages (``order_events`` -> ``drop_repeats`` -> ``place_model_metrics`` ->
``build_calls`` -> ``summarize_sessions`` -> ``session_issues``; the priced lines
``log_prices`` decodes; the reconstruction's ``regressors``, ``constraints`` and ``fit``; the
calibration) are the oracle; the engine (``analytics.engine.native.pass_group``,
``analytics/scanner/copilot_pass.rs`` and ``copilot_fold.rs``; ``fit.rs``; ``calibrate.rs``)
must give the same ordered EVENTS (repeats dropped), placed MODEL_METRICS, reading issues
(the scan's, repeated lines, unknown event types), CALLS, SESSIONS (before tokens), orphan-end
and session issues, LOG_PRICES, the same per-call estimates and per-session fit figures, and
the same calibrated tokens and token sources: same columns, dtypes, rows and row order (issues
as sets: ``analysis`` sorts them; the fit's rows by session, which joins place). Compared on
``sample_logs/`` (whole and one file at a time), every real Copilot log one file at a time,
simulated sessions (``analytics.agents.copilot.simulate``: resumes, crashes, compactions,
sub-agents, autopilot) with and without damage (lines dropped, repeated, swapped, torn), and
generated event sequences over the event types the rules name, with odd values (repeated ids,
torn lines, priced and odd ``tokenDetails``). ``AGENTCOST_DIFFERENTIAL_EXAMPLES`` sets the
number of generated cases (200 by default).
"""

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

from analytics.agents.copilot.events import read_logs, scan_logs
from analytics.agents.copilot.log_prices import log_prices
from analytics.agents.copilot.simulate import SimulationParams, simulate
from analytics.agents.discover import LogFile
from analytics.core.schema import EVENTS
from analytics.engine import native as engine
from analytics.engine import tokens
from tests.conftest import SAMPLE_LOGS
from tests.reference import calibrate as reference_calibrate
from tests.reference import fit as reference_fit
from tests.reference.calls import build_calls
from tests.reference.events import drop_repeats, order_events, place_model_metrics, priced_lines
from tests.reference.sessions import session_issues, summarize_sessions

REAL_LOGS = Path(__file__).resolve().parents[2] / "shared" / "real_logs"
#: Folders of other agents' logs under the real logs.
OTHER_AGENTS = {"claude-code", "codex"}
EXAMPLES = int(os.environ.get("AGENTCOST_DIFFERENTIAL_EXAMPLES", "200"))
NAMES = ("calls", "sessions", "fold issues", "events", "model metrics", "read issues", "prices")
#: The columns the regressors add to the calls.
REGRESSORS = [
    "_agent",
    "_fkey",
    "_c_fixed",
    *(f"{part}_{kind}" for part in "xp" for kind in ("tool", "prose", "json", "item", "task")),
    "_offset",
    "_prev_seq",
    "_prev_part",
]
#: The columns calibration fills.
CALIBRATED = [
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "output_tokens",
    "token_source",
]


def _logs(paths: list[Path]) -> list[LogFile]:
    return [LogFile(p, p.parent.name if p.name == "events.jsonl" else p.stem) for p in paths]


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


def stage_inputs(passed: engine.Passed) -> dict[str, tuple[Any, ...]]:
    """What the token stage hands the native regressors (calls, events), fit (regressors,
    events, priors) and
    the calibration (the calls with their totals and estimates), by stage name; a stage with
    nothing to do is absent."""
    seen: dict[str, tuple[Any, ...]] = {}
    natives = {name: getattr(tokens, name) for name in ("regressors", "fit", "_calibrate")}

    def spy(name: str) -> Any:
        def run(*frames: Any) -> Any:
            seen[name] = frames
            return natives[name](*frames)

        return run

    for name in natives:
        setattr(tokens, name, spy(name))
    try:
        events = passed.events if passed.events is not None else pl.DataFrame()
        tokens.call_tokens_and_fit(passed.calls, events, passed.sessions, passed.model_metrics)
    finally:
        for name, native in natives.items():
            setattr(tokens, name, native)
    return seen


def assert_same(paths: list[Path]) -> None:
    got, passed = engine_tables(paths)
    pairs = list(zip(NAMES, reference(paths), got, strict=True))
    inputs = stage_inputs(passed)
    if "regressors" in inputs:
        keys = ["session_id", "event_seq"]
        pairs.append(
            (
                "regressors",
                *(
                    x.select(*keys, *REGRESSORS).cast({"p_task": pl.Int64}).sort(keys)
                    for x in (
                        reference_fit.regressors(*inputs["regressors"]),
                        tokens.regressors(*inputs["regressors"]),
                    )
                ),
            )
        )
    if "fit" in inputs:
        x, events_in, priors = inputs["fit"]
        members, targets = reference_fit.constraints(x, events_in)
        (want_estimates, want_fit), (got_estimates, got_fit) = (
            reference_fit.fit(x, members, targets, priors),
            tokens.fit(x, events_in, priors),
        )
        keys = ["session_id", "event_seq"]
        pairs += [
            ("fit", want_fit.sort("session_id"), got_fit.sort("session_id")),
            # (the engine's estimates may carry figures the reference never had, such as
            # ``_estimate_sd``: compared on the reference's columns)
            (
                "estimates",
                want_estimates.sort(keys),
                got_estimates.select(want_estimates.columns).sort(keys),
            ),
        ]
    if "_calibrate" in inputs:
        figures = ["session_id", "event_seq", *CALIBRATED]
        pairs.append(
            (
                "calibrated tokens",
                reference_calibrate.calibrate(*inputs["_calibrate"]).select(figures),
                tokens._calibrate(*inputs["_calibrate"]).select(figures),
            )
        )
    for name, want, got in pairs:
        # Issues are in no order until ``analysis`` sorts them (polars joins keep none).
        ordered = [
            f.sort(pl.all(), nulls_last=False) if "issues" in name else f for f in (got, want)
        ]
        try:
            assert_frame_equal(*ordered)
        except AssertionError as error:
            raise AssertionError(f"{name} of {[str(p) for p in paths]}: {error}") from error


def test_sample_logs_whole_and_one_file_at_a_time() -> None:
    files = _copilot_logs(SAMPLE_LOGS)
    assert files
    assert_same(files)
    for path in files:
        assert_same([path])


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
                "requests": {"count": draw(st.integers(0, 6))},
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


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(files=_session_files())
def test_generated_event_sequences(
    tmp_path_factory: pytest.TempPathFactory, files: list[list[bytes]]
) -> None:
    root = tmp_path_factory.mktemp("gen")
    paths = []
    for index, lines in enumerate(files):
        path = root / f"s{index % 2}" / f"part{index}" / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"\n".join(lines) + b"\n")
        paths.append(path)
    assert_same(paths)
