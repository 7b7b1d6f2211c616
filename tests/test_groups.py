"""Groups of sessions as runs of session ids (``engine.groups.bucket``), and the groups' calls
put together in one order (``results.in_order``) whether or not they come in it.

The order is the one a sort by session id and event gives; ``in_order`` only skips that sort
when the rows are strictly in it already. Properties: any split of a table of calls into
groups of whole sessions, in any order of groups, gives the sorted table.
"""

from __future__ import annotations

import random
import uuid

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from analytics.cache.results import in_order
from analytics.engine.groups import bucket


@given(st.lists(st.uuids(), min_size=2, max_size=40), st.sampled_from([1, 2, 4, 16, 1024]))
def test_session_ids_fall_in_runs(ids: list[uuid.UUID], count: int) -> None:
    hints = sorted(str(i) for i in ids)
    buckets = [bucket(hint, count) for hint in hints]
    assert buckets == sorted(buckets)
    assert all(0 <= b < count for b in buckets)


def test_other_hints_are_spread_by_their_checksum() -> None:
    assert {bucket(hint, 4) for hint in ("events", "a-session", "ABCDEF01-x", "x")} <= set(range(4))
    assert bucket("0000000g-not-hex", 8) == bucket("0000000g-not-hex", 8)


def calls_of(rows: list[tuple[str | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "session_id": [s for s, _ in rows],
            "event_seq": [e for _, e in rows],
            "n": range(len(rows)),
        },
        schema={"session_id": pl.String, "event_seq": pl.Int64, "n": pl.Int64},
    )


@given(
    st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.lists(st.integers(0, 50), max_size=6)),
        max_size=8,
    ),
    st.randoms(use_true_random=False),
)
def test_groups_calls_come_in_one_order_whatever_the_grouping(
    sessions: list[tuple[str, list[int]]], shuffler: random.Random
) -> None:
    rows: dict[str, list[int]] = {}
    for name, seqs in sessions:
        rows.setdefault(name, []).extend(seqs)
    table = calls_of([(s, e) for s, seqs in rows.items() for e in seqs])
    groups: dict[int, list[str]] = {}
    for name in rows:
        groups.setdefault(ord(name) % 3, []).append(name)
    parts = [
        table.filter(pl.col("session_id").is_in(names)).sort("session_id", "event_seq")
        for names in groups.values()
    ]
    shuffler.shuffle(parts)
    expected = table.sort("session_id", "event_seq")
    got = in_order(parts) if parts else expected
    assert got.drop("n").equals(expected.drop("n"))


def test_rows_in_order_are_kept_as_they_are_and_others_sorted() -> None:
    first, second = calls_of([("a", 1), ("a", 2)]), calls_of([("b", 1)])
    assert in_order([first, second]).equals(pl.concat([first, second]))
    assert in_order([second, first]).equals(pl.concat([first, second]))
    # a null sorts first; a repeated event is left to the sort
    nulls = in_order([calls_of([("a", 1)]), calls_of([("a", None)])])
    assert nulls["event_seq"].to_list() == [None, 1]
    assert in_order([calls_of([(None, 1)]), calls_of([("a", 1)])])["session_id"].to_list() == [
        None,
        "a",
    ]
    assert in_order([calls_of([("a", 1), ("a", 1)])]).height == 2
