"""Table contracts (``schema.py``): conformance is strict, padding is explicit."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.core.schema import (
    ISSUES,
    TIMESTAMP,
    as_literals,
    beside,
    conform,
    empty,
    in_row_order,
    padded,
    with_nulls,
)


def test_conform_names_a_missing_column_instead_of_inventing_it() -> None:
    frame = pl.DataFrame({"file": ["a"], "line": [1], "severity": ["error"]})
    with pytest.raises(ValueError, match=r"\['message'\]"):
        conform(frame, ISSUES)


def test_conform_orders_casts_and_drops_extra_columns() -> None:
    frame = pl.DataFrame(
        {"message": ["m"], "extra": [0], "severity": ["warning"], "line": [3], "file": ["a"]}
    )
    out = conform(frame, ISSUES)
    assert out.columns == list(ISSUES)
    assert out.schema == pl.Schema(ISSUES)


def test_padding_and_stated_nulls_are_explicit() -> None:
    out = padded(pl.DataFrame({"file": ["a"]}), ISSUES)
    assert out.row(0) == ("a", None, None, None)
    stated = with_nulls(pl.DataFrame({"file": ["a"]}), {"line": pl.Int64()})
    assert stated.schema["line"] == pl.Int64()
    assert stated["line"].null_count() == 1


def test_conform_keeps_a_conforming_frame_and_only_reorders_one_in_another_order() -> None:
    frame = pl.DataFrame(
        {"file": ["a"], "line": [1], "severity": ["error"], "message": ["m"]}, schema=ISSUES
    )
    assert conform(frame, ISSUES) is frame  # nothing to cast: the frame itself
    shuffled = frame.select("message", "file", "severity", "line", pl.lit(0).alias("extra"))
    out = conform(shuffled, ISSUES)
    assert out.columns == list(ISSUES) and out.equals(frame)


def test_conform_casts_when_only_a_detail_of_a_dtype_differs() -> None:
    contract = {"at": TIMESTAMP}  # milliseconds, UTC
    micro = pl.DataFrame({"at": [1_500]}, schema={"at": pl.Datetime("us", "UTC")})
    out = conform(micro, contract)
    assert out.schema["at"] == TIMESTAMP and out["at"].dt.epoch("us").to_list() == [1_000]
    with pytest.raises(pl.exceptions.PolarsError):
        conform(pl.DataFrame({"at": ["not a time"]}), contract)  # strict, as before
    # a dtype class in a contract matches any of its kinds: such a contract always casts
    assert conform(micro, {"at": pl.Datetime}).schema["at"] == pl.Datetime("us")


def test_empty_frames_are_fresh_each_time() -> None:
    first = empty(ISSUES)
    first.insert_column(0, pl.Series("added", [], dtype=pl.Int64))
    second = empty(ISSUES)
    assert second.columns == list(ISSUES) and second.schema == pl.Schema(ISSUES)
    assert second.height == 0


def test_beside_is_a_left_join_in_the_frames_order() -> None:
    """``beside`` gives what a left join gives (rows in the frame's order, a key met twice
    twice, a null or absent key null), without copying the frame's columns."""
    frame = pl.DataFrame({"id": ["b", "a", None, "z", "b"], "x": [1, 2, 3, 4, 5]})
    per_key = pl.DataFrame({"id": ["a", "b", None], "v": [10, 20, 30], "l": [["m"], [], None]})
    joined = frame.join(per_key, on="id", how="left", maintain_order="left")
    assert beside(frame, per_key, "id").equals(joined)
    assert beside(frame.clear(), per_key, "id").equals(joined.clear())


def test_rows_in_a_few_runs_are_slices_of_the_frame() -> None:
    """A live session's tree: the rows moved stand after the others, so the frame is set as
    slices of itself (a chunk per run), not gathered into a copy."""
    frame = pl.DataFrame({"x": list(range(10)), "s": [f"row {i} of ten" for i in range(10)]})
    rows = pl.Series([0, 1, 2, 7, 8, 3, 4, 5, 6, 9], dtype=pl.UInt32)
    ordered = in_row_order(frame, rows)
    assert ordered.equals(frame[rows])
    assert ordered.n_chunks() == 4  # one per run: 0-2, 7-8, 3-6, 9
    assert in_row_order(frame, pl.Series([], dtype=pl.UInt32)).equals(frame.clear())


@given(st.permutations(list(range(80))), st.integers(0, 80))
def test_in_row_order_is_a_gather(order: list[int], cut: int) -> None:
    """Any rows, in any order (runs or not, more runs than it slices or fewer), give what
    ``gather`` gives."""
    frame = pl.DataFrame({"x": list(range(80)), "s": [str(i) * 13 for i in range(80)]})
    runs = sorted(order[:cut]) + order[cut:]  # a sorted part: long runs
    for rows in (order, runs, list(range(80))):
        picked = pl.Series(rows, dtype=pl.UInt32)
        assert in_row_order(frame, picked).equals(frame[picked])


def test_columns_of_one_value_are_the_same_as_literals() -> None:
    """``as_literals`` changes no value, dtype or order: null and one-valued columns of every
    kind a fold gives, a list column left as it is, a frame with no row."""
    frame = pl.DataFrame(
        {
            "agent": ["pi"] * 4,
            "speed": pl.Series([None] * 4, dtype=pl.String),
            "tokens": [5, 5, 5, 5],
            "web": pl.Series([None] * 4, dtype=pl.Int64),
            "done": [True] * 4,
            "at": pl.Series([1_700_000_000_000] * 4).cast(TIMESTAMP),
            "model": ["a", "b", "a", None],
            "files": [["x"], ["x"], ["x"], ["x"]],
        }
    )
    assert as_literals(frame).equals(frame)
    assert as_literals(frame).schema == frame.schema
    assert as_literals(frame.clear()).equals(frame.clear())


@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b"])), min_size=1, max_size=20))
def test_as_literals_keeps_every_value(values: list[str | None]) -> None:
    frame = pl.DataFrame(
        {"s": pl.Series(values, dtype=pl.String), "n": [len(values)] * len(values)}
    )
    assert as_literals(frame).equals(frame)


def test_an_agent_table_joins_by_session_id_and_places_its_columns() -> None:
    """``joined``: each agent table's columns where its ``after`` says (chains followed), null
    for the sessions it has no row of; the sessions' own order and rows kept."""
    from analytics.core.schema import AgentTable, joined

    table = AgentTable(
        name="mine",
        description="d",
        columns={"session_id": pl.String(), "x": pl.Int64(), "y": pl.String(), "z": pl.Int64()},
        after={"x": "a", "y": "x", "z": "b"},
    )
    assert table.view_order(["session_id", "a", "b"]) == ["session_id", "a", "x", "y", "b", "z"]
    sessions = pl.DataFrame({"session_id": ["s2", "s1"], "a": [1, 2], "b": [3, 4]})
    rows = pl.DataFrame(
        {"session_id": ["s1"], "x": [7], "y": ["seven"], "z": [9]}, schema=table.columns
    )
    view = joined(sessions, [(table, rows)])
    assert view.columns == ["session_id", "a", "x", "y", "b", "z"]
    assert view.rows() == [("s2", 1, None, None, 3, None), ("s1", 2, 7, "seven", 4, 9)]
    assert joined(sessions, []).equals(sessions)
    # a table that names a session twice: the join's rows, as before
    twice = pl.concat([rows, rows])
    doubled = joined(sessions, [(table, twice)])
    expected = sessions.join(twice, on="session_id", how="left", maintain_order="left")
    assert doubled.equals(expected.select(doubled.columns))
    assert doubled.height == 3
