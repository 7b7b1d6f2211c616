"""Where agentcost keeps its caches: never next to the logs it reads.

Its own module so the result cache can find it without importing the log reader.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$AGENTCOST_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentcost``, else ``~/.cache/agentcost``."""
    configured = os.environ.get("AGENTCOST_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "agentcost"
