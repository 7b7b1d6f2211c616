"""What the engine reads: every agent's files under the paths a user names.

The one door from the commands to the agents' knowledge of their files: the agents' facts
(``agents``: ``analytics.core.registry``, which help texts are written from), discovery of
every agent's home and logs (``agents.discover``) and SDK captures made into the logs Copilot would
have written (``agents.copilot.sdk_capture``). The core, the renderers and the command line
import no agent module (``tests/house/test_layout.py``); they name inputs through this module.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from analytics.agents.discover import COPILOT, EMPTY, Found, LogFile, default_targets, discover
from analytics.core import registry as agents

__all__ = [
    "COPILOT",
    "EMPTY",
    "Found",
    "LogFile",
    "agents",
    "captures_as_logs",
    "default_targets",
    "discover",
]


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
