"""OpenCode's log check: every counted call's ``step-finish`` tokens against its assistant
message's, on the real rows (all agree) and on a message whose tokens were changed."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from analytics.agents import opencode
from analytics.agents.opencode.log_check import log_check
from analytics.agents.reader import log_checks
from tests.agents.opencode.projection import create, real_database
from tests.agents.opencode.rows import fork, session, step, usage


def test_the_real_rows_agree(tmp_path: Path) -> None:
    path = real_database(tmp_path / "opencode.db")
    row = log_check([str(path)], opencode.read_files([path]).calls).row(0, named=True)
    assert (row["calls"], row["agree"], row["disagree"], row["usage_lines"]) == (43, 43, 0, 43)
    assert row["tokens"] == row["checked_tokens"] == 890_132 + 1_810


def test_a_disagreeing_message_and_a_fork_copy(tmp_path: Path) -> None:
    with closing(create(tmp_path / "opencode.db")) as db:
        original = session(db, 1000)
        step(db, original, 1000, usage(10, 1))
        step(db, original, 2000, usage(20, 2))
        fork(db, original, 3000)
        db.execute(
            "UPDATE message SET data = json_set(data, '$.tokens.input', 99) WHERE id = "
            "(SELECT message_id FROM part WHERE json_extract(data, '$.tokens.input') = 20"
            " ORDER BY id LIMIT 1)"
        )
        db.commit()
    path = tmp_path / "opencode.db"
    row = log_check([str(path)], opencode.read_files([path]).calls).row(0, named=True)
    assert (row["calls"], row["agree"], row["disagree"]) == (2, 1, 1)
    assert (row["usage_lines"], row["repeated_lines"]) == (4, 2)


def test_the_reader_offers_it() -> None:
    assert "opencode" in [agent.id for agent, _ in log_checks()]


def test_unreadable_files_are_left_out(tmp_path: Path) -> None:
    bad = tmp_path / "opencode.db"
    bad.write_bytes(b"not a database")
    assert log_check([str(bad)], opencode.read_files([bad]).calls)["calls"].to_list() == [0]
