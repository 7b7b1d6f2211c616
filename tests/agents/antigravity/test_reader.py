"""The counting rules of the Antigravity reader, each on a database built from the real one's
rows (``dbs``): copies, deleted rows, rows only in ``-wal``, changed statuses and types, and
files that are not (or not yet, or no longer) databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from unittest.mock import patch

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.agents import antigravity
from analytics.agents.antigravity import database, fold, schema
from tests.agents.antigravity.dbs import CONVERSATION, RESPONSES, change, copy, real_database

TOTALS = ("input_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens")


def totals(tables: antigravity.AgentTables) -> tuple[int, ...]:
    return (tables.calls.height, *(int(tables.calls[c].sum()) for c in TOTALS))


REAL_TOTALS = (4, 55_135, 40_697, 851, 843)


def test_each_call_counts_once_though_written_four_times(tmp_path: Path) -> None:
    tables = antigravity.read_files([copy(tmp_path)])
    assert totals(tables) == REAL_TOTALS
    assert tables.calls["api_call_id"].to_list() == list(RESPONSES)


def test_a_copied_conversation_counts_once(tmp_path: Path) -> None:
    first = copy(tmp_path / "a" / "conversations")
    second = copy(tmp_path / "b" / "conversations", "00000000-0000-4000-8000-000000000000.db")
    tables = antigravity.read_files([first, second])
    assert totals(tables) == REAL_TOTALS
    assert set(tables.calls["source_file"]) == {str(first)}
    ((files,),) = tables.sessions.select("source_files").rows()
    assert files == [str(first), str(second)]


def test_calls_only_in_steps_count_and_keep_their_slot(tmp_path: Path) -> None:
    """Without ``gen_metadata`` every call is still in ``steps``; no row names the model, so
    it stays the placeholder (unpriced), never a guessed name."""
    tables = antigravity.read_files([change(copy(tmp_path), "DELETE FROM gen_metadata")])
    assert totals(tables) == REAL_TOTALS
    assert set(tables.calls["model"]) == {"MODEL_PLACEHOLDER_M16", "MODEL_PLACEHOLDER_M50"}


def test_planner_calls_only_in_gen_metadata_count(tmp_path: Path) -> None:
    tables = antigravity.read_files([change(copy(tmp_path), "DELETE FROM steps")])
    assert tables.calls["api_call_id"].to_list() == [RESPONSES[0], RESPONSES[2], RESPONSES[3]]
    assert set(tables.calls["model"]) == {"Gemini 3.1 Pro (High)"}


def test_the_checkpoint_is_a_background_compaction_call(tmp_path: Path) -> None:
    path = change(
        copy(tmp_path), "DELETE FROM steps WHERE step_type != 23", "DELETE FROM gen_metadata"
    )
    (call,) = antigravity.read_files([path]).calls.to_dicts()
    assert (call["kind"], call["model"], call["api_call_id"]) == (
        "compaction",
        "MODEL_PLACEHOLDER_M50",
        RESPONSES[1],
    )
    assert (call["input_tokens"], call["output_tokens"], call["reasoning_tokens"]) == (46, 5, 0)


def test_a_slot_named_elsewhere_in_the_database_takes_that_name(tmp_path: Path) -> None:
    """A step call with no ``gen_metadata`` row of its own is named by a row naming its slot."""
    path = change(copy(tmp_path), "DELETE FROM gen_metadata WHERE idx > 0")
    models = dict(antigravity.read_files([path]).calls.select("api_call_id", "model").rows())
    assert models[RESPONSES[3]] == "Gemini 3.1 Pro (High)"
    assert models[RESPONSES[1]] == "MODEL_PLACEHOLDER_M50"


def test_rows_only_in_the_wal_are_read_and_nothing_is_written(tmp_path: Path) -> None:
    """A running agy keeps new rows in ``-wal``: they count, and the home is not touched."""
    path = copy(tmp_path)
    (row,) = sqlite3.connect(path).execute("SELECT * FROM steps WHERE idx = 10").fetchall()
    change(path, "DELETE FROM steps WHERE idx = 10", "DELETE FROM gen_metadata WHERE idx = 2")
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute(f"INSERT INTO steps VALUES ({','.join('?' * len(row))})", row)
    writer.commit()
    try:
        before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
        assert f"{CONVERSATION}.db-wal" in before
        tables = antigravity.read_files([path])
        assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
    finally:
        writer.close()
    assert totals(tables) == REAL_TOTALS


def test_an_empty_wal_beside_a_closed_database_is_no_reason_to_copy_it(tmp_path: Path) -> None:
    """A reader that opened the database without ``immutable`` (ccusage) leaves an empty
    ``-wal`` and ``-shm`` beside it: the main file holds every row, read in place (no copy),
    and nothing beside it changes."""
    path = copy(tmp_path)
    (tmp_path / f"{path.name}-wal").write_bytes(b"")
    (tmp_path / f"{path.name}-shm").write_bytes(b"\x00" * 32768)
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.iterdir()}
    with patch.object(database.shutil, "copyfile", side_effect=AssertionError("copied")):
        tables = antigravity.read_files([path])
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.iterdir()} == before
    assert totals(tables) == REAL_TOTALS
    assert tables.issues.height == 0


def test_a_wal_shorter_than_one_frame_holds_no_row(tmp_path: Path) -> None:
    """Only a ``-wal`` long enough for its header and one whole frame can hold rows."""
    path = copy(tmp_path)
    header = path.read_bytes()[:100]
    wal = tmp_path / f"{path.name}-wal"
    page = int.from_bytes(header[16:18], "big")
    wal.write_bytes(b"\x00" * (32 + 24 + page - 1))
    assert not database._holds_frames(wal, header)
    wal.write_bytes(b"\x00" * (32 + 24 + page))
    assert database._holds_frames(wal, header)
    wal.unlink()
    assert not database._holds_frames(wal, header)


def test_a_closed_database_is_read_without_creating_files(tmp_path: Path) -> None:
    path = copy(tmp_path)
    antigravity.read_files([path])
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a database at all\n", "not a database"),
        (b"SQLite format 3\x00" + b"\x00" * 84, "database not read"),
        (b"\x00" * 4096, "not a database"),
    ],
)
def test_a_file_that_is_no_database_is_an_issue(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / f"{CONVERSATION}.db"
    path.write_bytes(content)
    tables = antigravity.read_files([path])
    assert tables.calls.height == 0
    assert tables.issues["severity"].to_list() == ["error"]
    assert message in tables.issues["message"][0]


def test_a_half_written_database_keeps_what_it_can(tmp_path: Path) -> None:
    path = copy(tmp_path)
    path.write_bytes(path.read_bytes()[: 40 * 1024])
    tables = antigravity.read_files([path])
    assert tables.issues.filter(pl.col("severity") == "error").height >= 1
    assert tables.calls.height <= 4


def test_an_empty_file_is_a_database_not_written_yet(tmp_path: Path) -> None:
    path = tmp_path / f"{CONVERSATION}.db"
    path.touch()
    tables = antigravity.read_files([path])
    assert (tables.calls.height, tables.issues.height) == (0, 0)


def test_a_locked_database_is_an_issue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = change(copy(tmp_path), "PRAGMA journal_mode=DELETE")
    monkeypatch.setattr(database, "BUSY_SECONDS", 0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        tables = antigravity.read_files([path])
    finally:
        holder.close()
    assert tables.calls.height == 0
    assert "locked" in tables.issues["message"][0]


def test_an_unknown_schema_version_is_a_warning_and_still_read(tmp_path: Path) -> None:
    tables = antigravity.read_files([change(copy(tmp_path), "PRAGMA user_version = 2")])
    assert totals(tables) == REAL_TOTALS
    assert tables.issues.rows() == [
        (
            str(tmp_path / f"{CONVERSATION}.db"),
            0,
            "warning",
            "unknown schema version 2 (read as version 1)",
        )
    ]


def test_a_step_that_does_not_decode_is_an_issue_the_rest_counted(tmp_path: Path) -> None:
    path = change(copy(tmp_path), "UPDATE steps SET metadata = x'0a05ff' WHERE idx = 4")
    tables = antigravity.read_files([path])
    assert tables.calls["api_call_id"].to_list() == [RESPONSES[0], RESPONSES[2], RESPONSES[3]]
    ((line, severity),) = tables.issues.select("line", "severity").rows()
    assert (line, severity) == (4, "error")


@pytest.mark.parametrize("metadata", ["NULL", "x''"])
def test_the_payload_copy_counts_where_the_metadata_is_missing(
    tmp_path: Path, metadata: str
) -> None:
    path = change(copy(tmp_path), f"UPDATE steps SET metadata = {metadata} WHERE idx = 4")
    tables = antigravity.read_files([path])
    assert totals(tables) == REAL_TOTALS
    (call,) = tables.calls.filter(pl.col("kind") == "compaction").to_dicts()
    assert call["start_time"].isoformat() == "2026-06-28T09:54:35.264000+00:00"


def test_an_unknown_step_type_still_counts(tmp_path: Path) -> None:
    tables = antigravity.read_files(
        [change(copy(tmp_path), "UPDATE steps SET step_type = 999 WHERE idx = 4")]
    )
    assert totals(tables) == REAL_TOTALS
    assert tables.sessions["unknown_lines"].to_list() == [1]


@pytest.mark.parametrize(
    ("status", "final", "interrupted"), [(3, True, False), (1, False, False), (6, True, True)]
)
def test_step_status_sets_the_call_state(
    tmp_path: Path, status: int, final: bool, interrupted: bool
) -> None:
    path = change(copy(tmp_path), f"UPDATE steps SET status = {status} WHERE idx = 4")
    call = (
        antigravity.read_files([path])
        .calls.filter(pl.col("api_call_id") == RESPONSES[1])
        .row(0, named=True)
    )
    assert (call["final_usage"], call["interrupted"]) == (final, interrupted)


@pytest.mark.parametrize(
    ("extra", "fields"),
    [(b"\xa0\x06\x01", "100"), (b"\x12\x01x", "2"), (b"\xa0\x06\x01\xa8\x06\x02", "100, 101")],
)
def test_unknown_usage_fields_are_a_warning(tmp_path: Path, extra: bytes, fields: str) -> None:
    """A usage record carrying a field ``ModelUsageStats`` does not have, or one of its
    fields with another wire type (here a second copy of the checkpoint's usage, appended to
    its step with ``extra`` added), is reported; the calls are still counted."""
    path = copy(tmp_path)
    connection = sqlite3.connect(path)
    (metadata,) = connection.execute("SELECT metadata FROM steps WHERE idx = 4").fetchone()
    usage = schema.StepMetadata.FromString(metadata).usage[0].SerializeToString() + extra
    metadata += b"\x4a" + bytes([len(usage)]) + usage  # field 9, length-delimited
    connection.execute(
        "UPDATE steps SET metadata = ?, step_payload = NULL WHERE idx = 4", (metadata,)
    )
    connection.commit()
    connection.close()
    tables = antigravity.read_files([path])
    assert totals(tables) == REAL_TOTALS
    assert tables.issues["message"].to_list() == [
        f"usage records carry unknown fields {fields} (not counted)"
    ]


@pytest.mark.parametrize(
    ("enum", "name"),
    [
        (1016, "MODEL_PLACEHOLDER_M16"),
        (1050, "MODEL_PLACEHOLDER_M50"),
        (7, "MODEL_7"),
        (None, None),
    ],
)
def test_model_enums_name_their_slot(enum: int | None, name: str | None) -> None:
    frame = pl.DataFrame({"enum": [enum]}, schema={"enum": pl.Int64})
    assert frame.select(fold.slot_name(pl.col("enum")))["enum"].to_list() == [name]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(copies=st.integers(1, 4), order=st.permutations(range(4)), drop_gen=st.booleans())
def test_calls_count_once_however_many_copies(
    tmp_path: Path, copies: int, order: list[int], drop_gen: bool
) -> None:
    """However many copies of a conversation are read, in whatever order, and whether their
    ``gen_metadata`` survives, its calls and tokens are the real ones."""
    real_database()
    folder = tmp_path / f"{copies}-{''.join(map(str, order))}-{drop_gen}"
    names = [f"{CONVERSATION[:-1]}{i}.db" for i in range(copies)]
    files = [copy(folder, name) for name in names]
    if drop_gen:
        change(files[-1], "DELETE FROM gen_metadata")
    picked = [files[i] for i in order if i < copies]
    assert totals(antigravity.read_files(picked)) == REAL_TOTALS


#: Which real call each usage-bearing row holds: steps idx -> call, gen_metadata idx -> call.
STEP_CALLS = {3: 0, 4: 1, 7: 2, 10: 3}
GEN_CALLS = {0: 0, 1: 2, 2: 3}


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.sets(st.integers(0, 10)),
    generations=st.sets(st.integers(0, 2)),
)
def test_every_row_is_read_or_an_issue(
    tmp_path: Path, steps: set[int], generations: set[int]
) -> None:
    """Damage any rows: each damaged row is one error naming it, and a call is lost only
    when every row holding a copy of it is damaged."""
    real_database()
    folder = tmp_path / f"{sorted(steps)}-{sorted(generations)}".replace(" ", "")
    path = copy(folder)
    change(
        path,
        *(
            f"UPDATE steps SET metadata = x'ff', step_payload = x'ff' WHERE idx = {i}"
            for i in steps
        ),
        *(f"UPDATE gen_metadata SET data = x'ff' WHERE idx = {i}" for i in generations),
    )
    tables = antigravity.read_files([path])
    errors = tables.issues.filter(pl.col("severity") == "error")
    assert sorted(errors["line"]) == sorted([*steps, *generations])
    kept = {c for i, c in STEP_CALLS.items() if i not in steps}
    kept |= {c for i, c in GEN_CALLS.items() if i not in generations}
    assert tables.calls["api_call_id"].to_list() == [RESPONSES[c] for c in sorted(kept)]
