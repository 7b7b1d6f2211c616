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

from analytics.agents.discover import LogFile, Seen
from analytics.cache.results import in_order
from analytics.engine.groups import bucket, groups_of


def logs_named(hints: list[str], size: int = 1000) -> list[LogFile]:
    """Logs of ``size`` bytes each, one per session hint (only the size of the stat counts)."""
    stat = Seen(st_size=size, st_mtime_ns=0, st_ctime_ns=0, st_ino=1)
    return [LogFile(f"/logs/{hint}/events.jsonl", hint, "", stat) for hint in hints]


@given(st.lists(st.uuids(), min_size=2, max_size=40), st.sampled_from([1, 2, 4, 16, 1024]))
def test_session_ids_fall_in_runs(ids: list[uuid.UUID], count: int) -> None:
    hints = sorted(str(i) for i in ids)
    buckets = [bucket(hint, count) for hint in hints]
    assert buckets == sorted(buckets)
    assert all(0 <= b < count for b in buckets)


def test_random_ids_make_even_runs_and_time_ordered_ids_fall_back_to_checksums() -> None:
    rng = random.Random(7)
    v4 = sorted(str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(256))
    groups = groups_of(logs_named(v4), 16_000)  # 16 groups of about 16 logs
    assert len(groups) == 16 and max(map(len, groups)) <= 2 * 16 + 1
    # each group a run of ids: the groups in order hold the ids in order
    assert [log.session_hint for group in groups for log in group] == v4
    # UUID v7: a month of sessions shares its first eight hex digits' top, so runs would put
    # them all in one group; they are spread by checksum instead
    v7 = [f"0193{i:04x}-0000-7000-8000-{i:012x}" for i in range(256)]
    spread = groups_of(logs_named(v7), 16_000)
    assert len(spread) == 16 and max(map(len, spread)) <= 2 * 16 + 1


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
