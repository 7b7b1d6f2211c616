"""The scanner's recycled column memory (``native/read/table.rs``, ``Pool``).

The memory of a scan's columns goes back to a pool when the last Arrow array using it is
dropped, and the next scan's columns are built in it. These tests check what that must never
change: a column polars still holds keeps its values while later scans reuse the memory of
the columns that were dropped, and every scan reads as a scan in fresh memory does.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from analytics import _scanner

#: Rows enough that each written column's values fill blocks the pool keeps (64 KiB and up).
ROWS = 6000


def write_log(path: Path, tag: str) -> Path:
    """A session of ``ROWS`` tool events whose ids and names are long (stored out of line)
    and differ with ``tag``."""
    lines = [
        {
            "type": "tool.execution_start",
            "data": {"toolCallId": f"{tag}-call-{i:06d}", "toolName": f"{tag}-tool-{i % 7}"},
            "id": f"{tag}-event-{i:08d}",
            "timestamp": "2026-05-01T10:00:00.000Z",
        }
        for i in range(ROWS)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def scan(path: Path) -> dict[str, pl.Series]:
    """The event columns of one file's scan, as polars adopts them."""
    tables, _, _, _ = _scanner.scan_copilot([str(path)], ["hint"], [None])
    assert len(tables) == 1
    return {name: pl.Series(name, column) for name, column in tables[0].columns()}


def test_reused_memory_never_changes_a_column_still_held(tmp_path: Path) -> None:
    first = scan(write_log(tmp_path / "a.jsonl", "first"))
    held = first["tool_call_id"]
    expected = held.to_list()
    assert expected[0] == "first-call-000000" and len(expected) == ROWS
    del first  # every other column of the first scan goes back to the pool
    fresh = scan(write_log(tmp_path / "b.jsonl", "second"))
    for _ in range(3):  # built in the memory the scans before gave back
        again = scan(tmp_path / "b.jsonl")
        assert set(again) == set(fresh)
        for name, column in again.items():
            assert column.equals(fresh[name], check_names=True, null_equal=True), name
    assert held.to_list() == expected
    assert fresh["event_id"].to_list() == [f"second-event-{i:08d}" for i in range(ROWS)]
    assert fresh["tool_name"].to_list() == [f"second-tool-{i % 7}" for i in range(ROWS)]
    assert fresh["source_line"].to_list() == list(range(1, ROWS + 1))


def test_release_frees_what_the_pool_kept(tmp_path: Path) -> None:
    scan(write_log(tmp_path / "a.jsonl", "one"))  # dropped at once: its memory is kept
    assert _scanner.release_buffers() > 0
    assert _scanner.release_buffers() == 0
