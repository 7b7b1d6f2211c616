"""An estimated call's 80% interval (the engine's ``copilot_tokens.rs``, ``bounds``; its
polars oracle ``tests/oracle/reference/intervals.py``, which the differential test holds it to):
built from the fit's standard errors, empty where the log pins the figure, and honest on
simulated
sessions."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from analytics.agents.copilot.simulate import SimulationParams, simulate
from analytics.engine.analyze import analyze
from analytics.engine.validate import error_summary, reconstruction_errors
from benchmarks.claude_corpus import without_shutdowns
from tests.conftest import SAMPLE_LOGS
from tests.oracle.reference.intervals import MODEL_SD, Z80, bounds, estimate_sd


def test_a_calls_standard_error_sums_its_unknowns_variances() -> None:
    x = pl.DataFrame(
        {
            "session_id": ["s", "s"],
            "event_seq": [1, 2],
            "_fkey": ["fixed:main|m", "fixed:main|m"],
            "_c_fixed": [1, 0],
            **{f"x_{r}": [0, 0] for r in ("prose", "json", "item", "task")},
            "x_tool": [0, 10_000],
        }
    )
    parameters = pl.DataFrame(
        {"session_id": ["s", "s"], "param": ["fixed:main|m", "tool"], "sd": [3_000.0, 0.04]}
    )
    sd = estimate_sd(x, parameters).sort("event_seq")["_estimate_sd"].to_list()
    assert sd == [3_000.0, 400.0]  # the fixed part alone; then 10,000 bytes x 0.04 only


@given(
    tokens=st.integers(1, 10_000_000),
    estimate=st.integers(1, 10_000_000),
    sd=st.floats(0, 1e7, allow_nan=False),
)
def test_an_interval_holds_its_estimate(tokens: int, estimate: int, sd: float) -> None:
    frame = pl.DataFrame(
        {"t": [tokens, tokens], "e": [estimate, estimate], "s": [sd, sd], "k": [True, False]}
    )
    low, high = frame.select(bounds("e", "s", "t", pl.col("k"))).rows()[0]
    assert 0 <= low <= tokens <= high
    # never narrower than the model's own per-call error
    assert high - tokens >= math.floor(tokens * MODEL_SD * Z80)
    assert frame.select(bounds("e", "s", "t", pl.col("k"))).rows()[1] == (None, None)


def test_pinned_calls_have_no_interval_and_estimated_ones_do() -> None:
    calls = analyze([SAMPLE_LOGS]).calls
    pinned = calls.filter(pl.col("token_source").is_in(["observed", "calibrated"]))
    assert pinned.height and pinned["input_tokens_low"].null_count() == pinned.height
    estimated = calls.filter(pl.col("token_source") == "estimated")
    assert estimated.height and estimated["input_tokens_low"].null_count() == 0
    assert (estimated["input_tokens_low"] <= estimated["input_tokens"]).all()
    assert (estimated["input_tokens"] <= estimated["input_tokens_high"]).all()


def test_simulated_sessions_without_totals_fall_inside_about_80_percent(tmp_path: Path) -> None:
    """Issue 19: 75-90% of estimated calls inside their 80% interval (too narrow is a
    defect, too wide says nothing)."""
    simulate(tmp_path / "sim", SimulationParams(seed=3, sessions=30), store=True)
    bare = without_shutdowns(
        tmp_path / "sim" / "session-state", tmp_path / "bare" / "session-state"
    )
    (tmp_path / "sim" / "session-store.db").rename(bare.parent / "session-store.db")
    errors = reconstruction_errors(analyze([bare.parent]))
    assert set(errors["method"]) == {"estimated"}
    overall = error_summary(errors).filter(pl.col("session_id") == "ALL").row(0, named=True)
    assert 75 <= overall["inside_interval_pct"] <= 90
