"""OpenCode at work on its database, in a process of its own (as OpenCode is), for the tests of
reading a database a writer holds: one step written, then the database held open, with its
rows still in the ``-wal`` (``wal``) or inside an exclusive transaction (``locked``).

In another process because a writer in the test's own would not be seen: SQLite's locks are
POSIX locks, which never conflict within one process, and the reader (the ADBC driver's
SQLite) is another SQLite library than Python's, so neither knows of the other's."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import REPO

_WRITER = """
import sys
from pathlib import Path
from tests.agents.opencode.projection import create
from tests.agents.opencode.rows import session, step, usage

path, state = Path(sys.argv[1]), sys.argv[2]
writer = create(path, wal=state == "wal")
if state == "wal":
    writer.execute("PRAGMA wal_autocheckpoint = 0")
writer.commit()
if state == "locked":
    writer.execute("BEGIN EXCLUSIVE")
step(writer, session(writer, 1000), 1000, usage(10, 1))
if state == "wal":
    writer.commit()
print("written", flush=True)
sys.stdin.read()
writer.rollback()
"""


@contextmanager
def writing(path: Path, state: str) -> Iterator[None]:
    """A new OpenCode database at ``path`` with one step written, held open by a process of its
    own in ``state`` (``wal`` or ``locked``) until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), state],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline() == "written\n"
        try:
            yield
        finally:
            child.stdin.close()
            child.wait(timeout=30)
