"""OpenCode's JSON store from before its database (``storage/{session,message,part}/``),
written from the real exported rows: read by the same rules as the database, and a part
found in both (as OpenCode's migration leaves them) counted once."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from analytics.agents import opencode
from tests.agents.opencode.projection import create, legacy_tree, real_database
from tests.agents.opencode.rows import session, step, usage


@pytest.fixture
def real_rows(tmp_path: Path) -> Path:
    return real_database(tmp_path / "rows.db")


def totals(tables: opencode.AgentTables) -> tuple[int, int, int]:
    calls = tables.calls
    return calls.height, int(calls["input_tokens"].sum()), int(calls["output_tokens"].sum())


def test_the_legacy_store_reads_as_the_database(real_rows: Path, tmp_path: Path) -> None:
    data = tmp_path / "home"
    legacy_tree(real_rows, data)
    from_store = opencode.read([data])
    from_database = opencode.read_files([real_rows])
    assert totals(from_store) == totals(from_database)
    assert from_store.issues.height == 0
    key = ["api_call_id", "session_id", "kind", "model", "provider", "logged_cost_usd"]
    assert (
        from_store.calls.select(key)
        .sort("api_call_id")
        .equals(from_database.calls.select(key).sort("api_call_id"))
    )


def test_a_migrated_store_counts_once(real_rows: Path, tmp_path: Path) -> None:
    data = tmp_path / "home"
    legacy_tree(real_rows, data)
    (data / "opencode.db").write_bytes(real_rows.read_bytes())
    both = opencode.read([data])
    assert totals(both) == totals(opencode.read_files([real_rows]))
    assert set(both.calls["source_file"]) == {str(data / "opencode.db")}


def test_a_bad_record_is_an_issue_and_the_rest_is_read(tmp_path: Path) -> None:
    with closing(create(tmp_path / "rows.db")) as db:
        step(db, session(db, 1000), 1000, usage(10, 1))
        db.commit()
    written = legacy_tree(tmp_path / "rows.db", tmp_path / "home")
    broken = tmp_path / "home/storage/part/msg_x/prt_broken.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"type": "step-fin')
    tables = opencode.read_files([*written, broken])
    assert tables.calls.height == 1
    assert tables.issues.select("file", "severity").rows() == [(str(broken), "error")]


@pytest.mark.parametrize(
    ("path", "head", "claimed"),
    [
        ("d/storage/part/msg_1/prt_2.json", b'{\n  "id"', True),
        ("d/storage/message/ses_1/msg_2.json", b"{}", True),
        ("d/storage/session/prj/ses_1.json", b" {", True),
        ("d/storage/part/msg_1/prt_2.json", b"[", False),
        ("d/storage/todo/ses_1.json", b"{", False),
        ("d/other/part/msg_1/prt_2.json", b"{", False),
    ],
)
def test_claims_legacy_records(path: str, head: bytes, claimed: bool) -> None:
    assert opencode.claims(Path(path), head) is claimed
