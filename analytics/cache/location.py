"""Where agentcost keeps its caches: never next to the logs it reads.

Its own module so the result cache can find it without importing the log reader.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """``$AGENTCOST_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentcost``, else ``~/.cache/agentcost``."""
    configured = os.environ.get("AGENTCOST_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "agentcost"


#: Bump when the stored results change shape or format (``results``).
RESULTS_FORMAT = 4


def results_dir(root: Path | None = None) -> Path:
    """Where whole analyses are kept (``results.ResultCache``) under ``root`` (default:
    ``cache_dir()``)."""
    return (root or cache_dir()) / f"results-v{RESULTS_FORMAT}"


def unwritable(directory: Path | None = None) -> str | None:
    """Why the cache directory (default ``cache_dir()``) cannot be written, or None when it
    can (it is created if missing). The caches tolerate a directory they cannot write (every
    write is best effort), so this is only for saying once that nothing is being cached."""
    directory = directory or cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return (error.strerror or type(error).__name__).lower()
    if not os.access(directory, os.W_OK | os.X_OK):
        return "permission denied"
    return None


def drop_least_recent(directory: Path, keep: int, budget: int) -> None:
    """Keep the ``keep`` most recently used files of ``directory`` (by mtime: a use touches
    its file), within ``budget`` bytes together (the most recent is kept whatever its
    size); best effort. Files whose names start with a dot (being written) are left."""
    with contextlib.suppress(OSError):
        stored = [
            (entry.path, entry.stat())
            for entry in os.scandir(directory)
            if not entry.name.startswith(".")
        ]
        stored.sort(key=lambda kept: kept[1].st_mtime_ns, reverse=True)
        total = 0
        for rank, (path, stat) in enumerate(stored):
            total += stat.st_size
            if rank >= keep or (rank and total > budget):
                with contextlib.suppress(OSError):
                    os.unlink(path)
