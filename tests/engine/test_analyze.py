"""``in_session_order``: calls listed as their sessions are (by start, then id; a session
without a start last), each session's calls in log order."""

from __future__ import annotations

import datetime as dt

import polars as pl

from analytics.engine.analyze import in_session_order


def sessions() -> pl.DataFrame:
    day = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
    return pl.DataFrame(
        {
            "session_id": ["late", "early", "none", "tie-b", "tie-a"],
            "start_time": [day.replace(hour=9), day.replace(hour=1), None, day, day],
        }
    )


def test_calls_in_the_order_sessions_are_listed() -> None:
    calls = pl.DataFrame(
        {
            "session_id": ["none", "late", "early", "late", "tie-b", "tie-a", "early", "gone"],
            "event_seq": [1, 2, 5, 1, 1, 1, 3, 1],
            "cost": [10, 20, 30, 40, 50, 60, 70, 80],
        }
    )
    ordered = in_session_order(calls, sessions())
    assert ordered.rows() == [
        ("tie-a", 1, 60),
        ("tie-b", 1, 50),
        ("early", 3, 70),
        ("early", 5, 30),
        ("late", 1, 40),
        ("late", 2, 20),
        ("gone", 1, 80),  # a session not listed: last, by id, as one without a start
        ("none", 1, 10),
    ]


def test_calls_in_that_order_already_are_kept_as_they_are() -> None:
    calls = pl.DataFrame(
        {"session_id": ["tie-a", "early", "early", "late"], "event_seq": [1, 1, 2, 1]}
    )
    assert in_session_order(calls, sessions()) is calls
