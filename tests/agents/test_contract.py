"""The agents' folded tables in the core's contracts (``analytics.agents.contract``): a
session's sums of its calls, run by run where the calls lie together, else by session id."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from analytics.agents.contract import _session_sums
from analytics.core.schema import ANALYSIS_CALLS, padded

#: (session, input tokens or None) of a call.
Call = tuple[str, int | None]


def sums(calls: list[Call], sessions: dict[str, int]) -> pl.DataFrame:
    """``_session_sums`` of ``calls`` given ``sessions``' ``llm_calls``, by session id."""
    frame = padded(
        pl.DataFrame(
            {"session_id": [s for s, _ in calls], "input_tokens": [n for _, n in calls]},
            schema={"session_id": pl.String, "input_tokens": pl.Int64},
        ),
        ANALYSIS_CALLS,
    )
    table = pl.DataFrame(
        {"session_id": list(sessions), "llm_calls": list(sessions.values())},
        schema={"session_id": pl.String, "llm_calls": pl.Int64},
    )
    return _session_sums(frame, table).sort("session_id").select("session_id", "input_tokens")


def test_each_session_sums_its_calls_whether_together_or_apart() -> None:
    together = [("a", 1), ("a", 2), ("b", None), ("c", 5), ("c", None)]
    apart = [("a", 1), ("c", 5), ("a", 2), ("b", None), ("c", None)]
    expected = pl.DataFrame(
        {"session_id": ["a", "b", "c"], "input_tokens": [3, None, 5]},
        schema={"session_id": pl.String, "input_tokens": pl.Int64},
    )
    every = {"a": 2, "b": 1, "c": 2, "idle": 0}  # a session without calls has no row
    assert_frame_equal(sums(together, every), expected)
    assert_frame_equal(sums(apart, every), expected)
    assert sums([], {"idle": 0}).is_empty()


@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.none() | st.integers(0, 9)), max_size=12
    ),
    together=st.booleans(),
)
def test_sums_are_those_of_a_grouping_by_session(calls: list[Call], together: bool) -> None:
    """Run by run (calls sorted by session) or grouped by id (any order), the same sums."""
    if together:
        calls = sorted(calls, key=lambda call: call[0])
    counts = {s: sum(1 for c, _ in calls if c == s) for s in ("a", "b", "c")}
    expected = (
        pl.DataFrame(
            {"session_id": [s for s, _ in calls], "input_tokens": [n for _, n in calls]},
            schema={"session_id": pl.String, "input_tokens": pl.Int64},
        )
        .group_by("session_id")
        .agg(pl.when(pl.col("input_tokens").is_not_null().any()).then(pl.col("input_tokens").sum()))
        .sort("session_id")
    )
    assert_frame_equal(sums(calls, counts), expected)
