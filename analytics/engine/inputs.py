"""What the engine reads: every agent's files under the paths a user names.

The one door from the commands to the agents' knowledge of their files: the agents' facts
(``agents``: ``analytics.core.registry``, which help texts are written from), discovery of every
agent's home and logs (``agents.discover``) and SDK captures made into the logs Copilot would have
written (``agents.pipeline``: the staged pipeline's agent converts them). The core, the renderers
and the command line import no agent module (``tests/house/test_layers.py``); they name inputs
through this module.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from analytics.agents.discover import COPILOT, EMPTY, Found, LogFile, default_targets, discover
from analytics.agents.pipeline import pipeline
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


def captures_as_logs(paths: list[Path] | None) -> AbstractContextManager[list[Path] | None]:
    """``paths`` with the other inputs the staged pipeline's agent reads (an SDK capture: a
    ``.json`` document) made, in a temporary directory, into the logs it would have written
    (``Pipeline.captures_as_logs``, handed on as it is)."""
    return pipeline().captures_as_logs(paths)
