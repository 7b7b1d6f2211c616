"""Test databases built only from the real agy database's rows (as the format note asks):
copies under other names, rows deleted or changed in a copy, rows living only in ``-wal``."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import REAL_LOGS

#: The real conversation's id (its file's stem and ``trajectory_meta.cascade_id``).
CONVERSATION = "18ee78b4-4643-45db-85df-8abd89b51b1b"
#: How many calls the real database holds.
REAL_CALLS = 4
#: The real calls' response ids, in order: planner, checkpoint, planner, planner.
RESPONSES = (
    "WO9AarbzEOmKxN8PhrOu8AQ",
    "W-9Aasb9I4WgxN8PoL-a-Ag",
    "Yu9AaqzaLoGxxN8P8L61yAI",
    "be9Aas7kHff7xs0P49qZiAM",
)


def real_database() -> Path:
    """The real database, or a skip saying why."""
    found = sorted((REAL_LOGS / "antigravity").rglob(f"{CONVERSATION}.db"))
    if not found:
        pytest.skip(f"real Antigravity database not present under {REAL_LOGS / 'antigravity'}")
    return found[0]


def copy(directory: Path, name: str = f"{CONVERSATION}.db") -> Path:
    """A writable copy of the real database at ``directory/name`` (``conversations/``
    directories are created as needed)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    shutil.copyfile(real_database(), target)
    target.chmod(0o644)
    return target


def change(path: Path, *statements: str) -> Path:
    """``path`` after ``statements`` ran on it (committed and checkpointed: no ``-wal``)."""
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return path
