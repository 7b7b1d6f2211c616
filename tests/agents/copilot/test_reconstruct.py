"""The reconstruction as a fit (``reconstruct.py``) on sessions generated exactly from its model.

A session here is a literal EVENTS frame of one main agent: a prompt, then calls that each
write prose and tool arguments and get a tool result, with more prompts between. Its true
per-call prompts follow the model exactly, from known parameters (fixed part, tokens per byte
of tool output, prose and JSON, tokens per message), and so do its shutdown totals (Σ input,
Σ cache read: each call reads what the previous one left cacheable). Properties:

- with most calls observed, the fit recovers the fixed part (within 3%), tool output's tokens
  per byte (within 10%) and the other calls' prompts (within 1%);
- adding an observed call never makes the other calls' mean error worse, beyond 10% of it plus
  0.25 percentage points: not strictly never, since one observation can move the split between
  the fixed part and the growth that the shutdown sums had balanced (hypothesis found a 6-call
  session where observing the first call took the others from 2.40% to 2.65%);
- calibrated calls sum to the shutdown exactly and read + write + uncached = input on every call.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analytics import _scanner
from analytics.agents.copilot.call_tokens import call_tokens_and_fit
from analytics.core.schema import EVENTS, MODEL_METRICS, OBSERVED_USAGE, padded
from tests.oracle.reference.calls import build_calls
from tests.oracle.reference.events import order_events
from tests.oracle.reference.sessions import summarize_sessions

MODEL = "claude-sonnet-4.6"
FILE = "/logs/s1/events.jsonl"
T0 = datetime(2026, 8, 3, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Truth:
    """Known parameters: fixed tokens; tokens per byte of tool output, prose, JSON; per item."""

    fixed: float
    tool: float
    prose: float
    json: float
    item: float


@dataclass(frozen=True)
class Session:
    events: pl.DataFrame
    metrics: pl.DataFrame
    inputs: list[int]
    reads: list[int]


truths = st.builds(
    Truth,
    fixed=st.floats(8_000, 40_000),
    tool=st.floats(0.22, 0.45),
    prose=st.floats(0.18, 0.32),
    json=st.floats(0.2, 0.42),
    item=st.floats(0, 30),
)
#: per call: (prose bytes, tool-argument bytes, tool-result bytes, a new prompt after it)
plans = st.lists(
    st.tuples(
        st.integers(50, 3_000),
        st.integers(20, 4_000),
        st.integers(200, 30_000),
        st.booleans(),
    ),
    min_size=6,
    max_size=24,
)


def generate(truth: Truth, plan: list[tuple[int, int, int, bool]]) -> Session:
    """The log and the exact per-call prompts the model gives for ``truth`` and ``plan``."""
    rows: list[dict[str, Any]] = [{"event_type": "session.start", "model": MODEL}]
    sizes = {"tool": 0, "prose": 0, "json": 0, "item": 0}
    inputs, reads, newest = [], [], 0.0

    def prompt() -> float:
        return truth.fixed + sum(getattr(truth, k) * v for k, v in sizes.items())

    def user(size: int) -> float:
        rows.append({"event_type": "user.message", "content_bytes": size})
        sizes["prose"] += size
        sizes["item"] += 1
        return truth.prose * size + truth.item

    newest = user(900)
    previous = None
    for prose, arguments, result, ask in plan:
        rows.append({"event_type": "assistant.turn_start"})
        now = prompt()
        inputs.append(round(now))
        reads.append(0 if previous is None else round(previous))
        previous = now - newest
        rows.append(
            {
                "event_type": "assistant.message",
                "content_bytes": prose + arguments,
                "tool_request_bytes": arguments,
                "model": MODEL,
                "output_tokens": 10,
            }
        )
        rows.append({"event_type": "tool.execution_complete", "content_bytes": result})
        rows.append({"event_type": "assistant.turn_end"})
        sizes["prose"] += prose
        sizes["json"] += arguments
        sizes["tool"] += result
        sizes["item"] += 2
        newest = user(300) if ask else 0.0
    rows.append({"event_type": "session.shutdown"})
    frame = pl.DataFrame(
        [
            {
                "source_file": FILE,
                "source_line": line,
                "session_id": "s1",
                "timestamp": T0 + timedelta(seconds=line),
                **row,
            }
            for line, row in enumerate(rows, start=1)
        ],
        infer_schema_length=None,
    )
    metrics = padded(
        pl.DataFrame(
            {
                "source_file": [FILE],
                "source_line": [len(rows)],
                "session_id": ["s1"],
                "process_index": [0],
                "model": [MODEL],
                "requests_count": [len(inputs)],
                "input_tokens": [sum(inputs)],
                "output_tokens": [10 * len(inputs)],
                "cache_read_tokens": [sum(reads)],
                "cache_write_tokens": [sum(inputs) - sum(reads)],
            }
        ),
        MODEL_METRICS,
    )
    return Session(order_events(padded(frame, EVENTS)), metrics, inputs, reads)


def reconstruct(session: Session, observed: int) -> tuple[pl.DataFrame, dict[str, float], set[str]]:
    """Calls with tokens, the fitted parameters and those the log determined (not left to a
    prior), with the first ``observed`` calls known."""
    calls, _ = build_calls(session.events, session.metrics)
    sessions = summarize_sessions(session.events, calls, session.metrics)
    rows = padded(
        pl.DataFrame(
            {
                "source_file": ["/store.db"] * observed,
                "session_id": ["s1"] * observed,
                "seq": list(range(observed)),
                "model": [MODEL] * observed,
                "input_tokens": session.inputs[:observed],
                "output_tokens": [10] * observed,
                "cache_read_tokens": session.reads[:observed],
                "cache_write_tokens": [
                    i - r for i, r in zip(session.inputs, session.reads, strict=False)
                ][:observed],
            },
            schema_overrides={"seq": pl.Int64},
        ),
        OBSERVED_USAGE,
    )
    with_tokens, _, fit = call_tokens_and_fit(
        calls, session.events, sessions, session.metrics, rows if observed else None
    )
    parameters = {p["name"]: p["value"] for p in fit["fit_parameters"][0]}
    return with_tokens.sort("call_index"), parameters, set(fit["fit_determined"][0])


#: A session whose calls' content varies at random (fixed seed): 20 calls, a prompt in four.
_DRAW = random.Random(7)
VARIED = [
    (_DRAW.randint(50, 3_000), _DRAW.randint(20, 4_000), _DRAW.randint(200, 30_000),
     _DRAW.random() < 0.25)
    for _ in range(20)
]  # fmt: skip


@settings(max_examples=15, deadline=None)
@given(truths)
def test_the_fit_recovers_the_parameters_of_a_session_made_by_the_model(truth: Truth) -> None:
    """15 of 20 calls observed: the fixed part within 3%, tool output's tokens per byte within
    10%, and each of the other 5 calls' prompts within 1%. How the rest of the growth splits
    into prose, JSON and framing is not identifiable from such data (their byte counts grow
    together); those stay near their priors and the fit says so (``fit_from_prior``)."""
    session = generate(truth, VARIED)
    calls, got, determined = reconstruct(session, observed=15)
    assert {f"fixed:main|{MODEL}", "tool"} <= determined
    assert abs(got[f"fixed:main|{MODEL}"] - truth.fixed) <= 0.03 * truth.fixed
    assert abs(got["tool"] - truth.tool) <= 0.10 * truth.tool
    rebuilt = calls["input_tokens"].to_list()[15:]
    assert all(abs(g - w) <= 0.01 * w for g, w in zip(rebuilt, session.inputs[15:], strict=True))


def _other_error(calls: pl.DataFrame, inputs: list[int], start: int) -> float:
    """Mean absolute error (%) of the calls after the first ``start``."""
    got = calls["input_tokens"].to_list()[start:]
    want = inputs[start:]
    return sum(abs(g - w) / w for g, w in zip(got, want, strict=True)) / len(want) * 100


@settings(max_examples=15, deadline=None)
@given(truths, plans, st.integers(0, 4))
@example(  # found by hypothesis: 0.36% before, 0.65% after
    Truth(fixed=8000.0, tool=0.34375, prose=0.181640625, json=0.41796875, item=0.0),
    [(50, 1375, 202, False), (50, 24, 200, False), (50, 21, 201, False),
     (50, 20, 200, False), (50, 20, 15364, False), (50, 20, 200, False)],
    0,
)  # fmt: skip
def test_an_observed_call_never_makes_the_others_worse_on_average(
    truth: Truth, plan: list[tuple[int, int, int, bool]], observed: int
) -> None:
    """One more observed call leaves the others' mean error within 10% of what it was, plus
    half a point: errors under 1% move by a few tenths either way (300 random sessions stayed
    within 0.09 points of 1.1x; the example above, six calls with one 15 kB tool output, goes
    from 0.36% to 0.65%)."""
    session = generate(truth, plan)
    before, _, _ = reconstruct(session, observed)
    after, _, _ = reconstruct(session, observed + 1)
    others = observed + 1
    after_error, before_error = (
        _other_error(after, session.inputs, others),
        _other_error(before, session.inputs, others),
    )
    assert after_error <= before_error * 1.10 + 0.5


@settings(max_examples=15, deadline=None)
@given(truths, plans, st.integers(0, 3))
def test_calibrated_calls_add_up_to_the_shutdown_exactly(
    truth: Truth, plan: list[tuple[int, int, int, bool]], observed: int
) -> None:
    session = generate(truth, plan)
    calls, _, _ = reconstruct(session, observed)
    metrics = session.metrics.row(0, named=True)
    for column in ("input_tokens", "cache_read_tokens", "cache_write_tokens"):
        assert calls[column].sum() == metrics[column], column
    uncached = calls["input_tokens"] - calls["cache_read_tokens"] - calls["cache_write_tokens"]
    assert (uncached >= 0).all()
    assert set(calls["token_source"]) <= {"observed", "calibrated"}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 6),
            st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=42, max_size=42),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_the_native_solver_solves_every_stacked_system(
    systems: list[tuple[int, list[float]]],
) -> None:
    """Each system is made positive definite (MᵀM + I, as the fit's normal equations with a
    prior are); the kernel's solution satisfies it and its variances are the inverse's
    diagonal, system by system, however many are stacked."""
    sizes, matrices, vectors, expected = [], [], [], []
    for n, draws in systems:
        m = [draws[i * n : (i + 1) * n] for i in range(n)]
        a = [
            [sum(m[k][i] * m[k][j] for k in range(n)) / 1e6 + (i == j) for j in range(n)]
            for i in range(n)
        ]
        b = draws[36 : 36 + n]
        sizes.append(n)
        matrices += [v for row in a for v in row]
        vectors += b
        expected.append((a, b))
    theta, variance = _scanner.solve_systems(sizes, matrices, vectors)
    at = 0
    for (a, b), n in zip(expected, sizes, strict=True):
        x = theta[at : at + n]
        for i in range(n):
            got = sum(a[i][j] * x[j] for j in range(n))
            assert abs(got - b[i]) <= 1e-6 * (1 + max(abs(v) for v in b))
            assert variance[at + i] > 0
        at += n
