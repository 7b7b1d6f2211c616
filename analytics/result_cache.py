"""Keep whole analyses between runs: re-analysing an unchanged tree loads four small tables.

The parse cache (``analytics.cache``) spares parsing; this one spares every stage after it too.
An analysis is stored under a *key*: a SHA-256 over

* agentcost's version and the ``analytics`` package's own files (size and ``mtime_ns``), so an
  edited checkout never reuses a result its old code computed;
* every input the analysis read: each log file, session store (with its ``-wal``) and OTel
  export, by resolved path, size, ``mtime_ns``, ``ctime_ns`` and inode;
* the problems discovery reported (an empty session directory appearing changes the issues).

``ctime`` changes on every write and cannot be set back (setting ``mtime`` sets it), so a file
rewritten with its old size and mtime still changes the key; a file that grows (a live session)
does too, and the run goes through the parse cache, which parses only the new bytes.

Stored: CALLS (with tokens), SESSIONS, MODEL_METRICS and ISSUES, as Parquet. EVENTS are not
stored (they are ~40x larger than the rest); the commands that need them get them from the
parse cache on first use (``Analysis.events`` is lazy). The newest ``KEEP`` results are kept.
Writes go to a temporary directory renamed into place, so concurrent runs never see half a
result; anything unreadable is a miss, and a cache that cannot be written is skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from analytics import __version__
from analytics.cache_dir import cache_dir
from analytics.sources.discover import Found

#: Bump when the stored tables change shape.
FORMAT = 1
#: Results kept (one per distinct set of inputs analysed); older ones are deleted.
KEEP = 8
TABLES = ("calls", "sessions", "model_metrics", "issues")
_PACKAGE = Path(__file__).resolve().parent


class ResultCache:
    """Analyses on disk under ``root`` (default: ``cache_dir()``), one directory per key."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_dir()) / f"results-v{FORMAT}"

    def key(self, found: Found) -> str | None:
        """The key of an analysis of ``found``; None when an input cannot be inspected."""
        digest = hashlib.sha256(f"{__version__}\n".encode())
        try:
            for line in _fingerprints(found):
                digest.update(line.encode())
        except OSError:
            return None
        digest.update(json.dumps(found.problems).encode())
        return digest.hexdigest()

    def load(self, key: str) -> dict[str, pl.DataFrame] | None:
        """The tables stored under ``key``, or None (missing, partial or unreadable)."""
        folder = self.root / key
        try:
            tables = {name: pl.read_parquet(folder / f"{name}.parquet") for name in TABLES}
            os.utime(folder)  # most recently used: kept longest
        except (OSError, pl.exceptions.PolarsError):
            return None
        return tables

    def save(self, key: str, tables: dict[str, pl.DataFrame]) -> None:
        """Store ``tables`` under ``key`` (best effort), then drop the oldest results."""
        temporary = self.root / f".{key}.{uuid.uuid4().hex}"
        try:
            temporary.mkdir(parents=True)
            for name in TABLES:
                tables[name].write_parquet(temporary / f"{name}.parquet", compression="lz4")
            temporary.rename(self.root / key)
        except OSError:  # unwritable, or another run stored the same key first
            shutil.rmtree(temporary, ignore_errors=True)
            return
        self._drop_oldest()

    def _drop_oldest(self) -> None:
        with contextlib.suppress(OSError):
            stored = [entry for entry in os.scandir(self.root) if not entry.name.startswith(".")]
            stored.sort(key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
            for entry in stored[KEEP:]:
                shutil.rmtree(entry.path, ignore_errors=True)


def _fingerprints(found: Found) -> Iterator[str]:
    """One line per file the result depends on: agentcost's code, then every input."""
    for code in sorted(_PACKAGE.rglob("*.py")):
        stat = code.stat()
        yield f"code {code.relative_to(_PACKAGE)} {stat.st_size} {stat.st_mtime_ns}\n"
    inputs: list[tuple[str, os.stat_result | None]] = [
        (log.real_path or str(log.path), log.stat) for log in found.logs
    ]
    for store in found.stores:
        inputs += [(str(store), None), (f"{store}-wal", None)]
    inputs += [(str(export), None) for export in found.otel]
    for path, seen in inputs:
        try:
            stat = seen or os.stat(path)
        except FileNotFoundError:
            yield f"absent {path}\n"
            continue
        identity = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
        yield f"input {path} {identity}\n"
