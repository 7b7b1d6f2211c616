"""SDK captures read as the Copilot logs the CLI would have written."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def captures_as_logs(paths: list[Path] | None) -> Iterator[list[Path] | None]:
    """``paths`` with each SDK capture (a ``.json`` document) converted, in a temporary
    directory, into the log and ``session-store.db`` the CLI would have written."""
    from analytics.agents.copilot.sdk_capture import is_capture, read_capture

    if not paths or not any(is_capture(p) for p in paths):
        yield paths
        return
    from analytics.agents.copilot.simulate import write_capture_tree

    with tempfile.TemporaryDirectory(prefix="agentcost-capture-") as tmp:
        logs = []
        for n, path in enumerate(paths):
            home = Path(tmp) / str(n)
            if is_capture(path):
                write_capture_tree(home, read_capture(path))
            logs.append(home if is_capture(path) else path)
        yield logs
