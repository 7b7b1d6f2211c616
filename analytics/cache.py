"""Keep parsed log pieces between runs, so re-analysing an unchanged tree parses nothing.

The cache lives in the user's cache directory (``cache_dir()``), never next to the logs. It
holds what ``sources/copilot_lines.py`` produces before placing rows in their files: the local
tables of each piece (EVENTS, MODEL_METRICS, ISSUES rows tagged with a piece id) as Parquet
*segments*, one per parsed batch, and a JSON *manifest* that says, per file, which pieces cover
its bytes up to its last complete line (the *boundary*), in order.

A file is looked up by its resolved path and checked before its pieces are trusted:

* unchanged: same size, ``mtime_ns`` and ``ctime_ns`` (any write sets ``ctime``, and it
  cannot be set back), and the same hash of its first and last 4 KiB;
  only the bytes after the boundary (a torn or unterminated last line) are parsed again;
* grown: larger, with the same hash of its first 4 KiB and of the 4 KiB before the cached
  boundary (which ends with a newline): only the new bytes are parsed, continuing the file's
  line numbers and ``process_index`` (the reader places pieces by their counts);
* anything else (shrunk, rewritten, or the same size and time with other content at either
  end): parsed again from the start.

Concurrent runs are safe: segments get unique names, every file is written to a temporary name
and renamed into place, the manifest is merged with the one on disk just before it is
replaced, and a segment that has vanished only turns its files into cache misses. Unreferenced
segments are deleted once they are an hour old (a running process may still be about to
reference a fresh one). A cache that cannot be written is silently read-only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from analytics import __version__
from analytics.cache_dir import cache_dir
from analytics.sources.copilot_events import PieceStore, Resume
from analytics.sources.copilot_lines import LocalTables, PieceInfo
from analytics.sources.discover import LogFile

#: Bump when the local tables or the manifest change shape; old caches are then ignored.
FORMAT = 4
#: Bytes hashed at each checked region of a file (ctime catches rewrites in between).
REGION = 4 * 1024
#: Unreferenced segments younger than this may belong to a run still in progress.
_GRACE_SECONDS = 3600
_TABLES = ("events", "model_metrics", "issues")
#: Columns read together from the segment files (see ``_read_contiguous``).
_COLUMNS_AT_ONCE = 8
_ENTRY_KEYS = {"size", "mtime_ns", "ctime_ns", "boundary", "head", "edge", "tail", "pieces"}


class LogCache(PieceStore):
    """A ``PieceStore`` on disk under ``root`` (default: ``cache_dir()``)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_dir()) / f"events-v{FORMAT}-{__version__}"
        self._segments = self.root / "segments"
        self._manifest_path = self.root / "manifest.json"
        self._files = _read_manifest(self._manifest_path)
        self._segment_of: dict[int, str] = {
            piece[0]: piece[1] for entry in self._files.values() for piece in entry["pieces"]
        }
        self._writable = True

    # --- PieceStore -------------------------------------------------------------------------

    def resume(self, log: LogFile) -> Resume:
        """Where to start reading ``log``, and which cached pieces cover it up to there."""
        fresh = super().resume(log)
        entry = self._files.get(_key(log))
        if fresh.error is not None or entry is None:
            return fresh
        size, boundary = fresh.size, int(entry["boundary"])
        try:
            with log.path.open("rb") as handle:
                if _digest(handle, 0, min(REGION, boundary)) != entry["head"]:
                    return fresh
                same = (size, fresh.mtime_ns, fresh.ctime_ns)
                if same == (entry["size"], entry["mtime_ns"], entry["ctime_ns"]):
                    ok = _digest(handle, max(0, size - REGION), size) == entry["tail"]
                else:
                    edge = _digest(handle, max(0, boundary - REGION), boundary)
                    ok = size > entry["size"] and edge == entry["edge"]
                if not ok:
                    return fresh
        except OSError:
            return fresh
        pieces = tuple(PieceInfo(p[0], p[2], p[3], p[4], p[5]) for p in entry["pieces"])
        return Resume(fresh.size, fresh.mtime_ns, fresh.ctime_ns, boundary, pieces)

    def load(self, resumes: Sequence[Resume]) -> tuple[list[LocalTables], list[Resume]]:
        """Read the cached pieces of ``resumes``; those with a vanished segment start over."""
        wanted: dict[str, set[int]] = {}
        for resume in resumes:
            for info in resume.cached:
                wanted.setdefault(self._segment_of[info.id], set()).add(info.id)
        parts, lost = self._read_segments(list(wanted))
        kept = [
            Resume(r.size, r.mtime_ns, r.ctime_ns)
            if any(info.id in lost for info in r.cached)
            else r
            for r in resumes
        ]
        # Segments also hold pieces of files read again since, or not asked for now; a file
        # with pieces in a vanished segment starts over, so its other pieces go too.
        ids = {info.id for r in kept for info in r.cached}
        if sum(part.events["piece"].n_unique() for part in parts) > len(ids):
            parts = [part.only(ids) for part in parts]
        return parts, kept

    def _read_segments(self, segments: list[str]) -> tuple[list[LocalTables], set[int]]:
        """The tables of ``segments`` and the piece ids of those that vanished.

        All segments are read together (one multi-file read per table); if one is missing or
        unreadable they are read one by one, and the pieces of the failing ones are lost.
        """
        if not segments:
            return [], set()
        try:
            return [self._read_tables(segments)], set()
        except (OSError, pl.exceptions.PolarsError):
            pass
        parts: list[LocalTables] = []
        lost: set[int] = set()
        for segment in segments:
            try:
                parts.append(self._read_tables([segment]))
            except (OSError, pl.exceptions.PolarsError):
                lost |= {piece for piece, name in self._segment_of.items() if name == segment}
        return parts, lost

    def _read_tables(self, segments: list[str]) -> LocalTables:
        """The local tables of ``segments``, each read from all their files at once."""
        events, metrics, issues = (
            _read_contiguous([self._segment_file(segment, table) for segment in segments])
            for table in _TABLES
        )
        return LocalTables(events, metrics, issues)

    def save(self, tables: LocalTables, ids: set[int]) -> None:
        """Write the rows of pieces ``ids`` as one new segment."""
        if not ids or not self._writable:
            return
        name = uuid.uuid4().hex
        rows = tables if len(ids) == len(tables.infos) else tables.only(ids)
        try:
            self._segments.mkdir(parents=True, exist_ok=True)
            for table in _TABLES:
                target = self._segment_file(name, table)
                temporary = target.with_suffix(f".{os.getpid()}.tmp")
                # Uncompressed: a third of lz4's write time, files a fifth larger (measured).
                getattr(rows, table).write_parquet(
                    temporary, compression="uncompressed", statistics=False
                )
                temporary.replace(target)
        except OSError:
            self._writable = False
            return
        self._segment_of.update(dict.fromkeys(ids, name))

    def commit(self, files: Sequence[tuple[LogFile, Resume, int, tuple[PieceInfo, ...]]]) -> None:
        """Record what each file's pieces cover; merge with the manifest on disk; tidy up."""
        if not self._writable:
            return
        changed: dict[str, dict[str, Any]] = {}
        for log, resume, boundary, pieces in files:
            key = _key(log)
            old = self._files.get(key)
            if (
                old is not None
                and boundary == resume.start == old["boundary"]
                and (old["size"], old["mtime_ns"], old["ctime_ns"])
                == (resume.size, resume.mtime_ns, resume.ctime_ns)
            ):
                continue  # nothing new was cached for this file
            if any(info.id not in self._segment_of for info in pieces):
                continue
            entry = _entry(log.path, resume, boundary, pieces, self._segment_of)
            if entry is not None:
                changed[key] = entry
        if not changed:
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            merged = {**_read_manifest(self._manifest_path), **changed}
            temporary = self._manifest_path.with_suffix(f".{os.getpid()}.{uuid.uuid4().hex}")
            temporary.write_text(json.dumps({"format": FORMAT, "files": merged}))
            temporary.replace(self._manifest_path)
        except OSError:
            self._writable = False
            return
        self._files = merged
        self._collect_garbage(merged)

    # --- helpers ------------------------------------------------------------------------------

    def _segment_file(self, segment: str, table: str) -> Path:
        return self._segments / f"{segment}.{table}.parquet"

    def _collect_garbage(self, files: dict[str, dict[str, Any]]) -> None:
        """Delete segments (and stray temporary files) nothing references, once old enough."""
        used = {piece[1] for entry in files.values() for piece in entry["pieces"]}
        cutoff = time.time() - _GRACE_SECONDS
        with contextlib.suppress(OSError):
            for item in self._segments.iterdir():
                if item.name.split(".")[0] not in used and item.stat().st_mtime < cutoff:
                    item.unlink(missing_ok=True)


def _key(log: LogFile) -> str:
    """A file's manifest key: its resolved path (however the user spelled it)."""
    return log.real_path or str(log.path.resolve())


def _read_contiguous(files: list[Path]) -> pl.DataFrame:
    """One table from many Parquet files, in one chunk per column.

    Read ``_COLUMNS_AT_ONCE`` columns at a time and made contiguous before the next ones are
    read, so besides the result only a few columns are ever held in pieces.
    """
    names = list(pl.read_parquet_schema(files[0]))
    columns: list[pl.Series] = []
    for start in range(0, len(names), _COLUMNS_AT_ONCE):
        group = names[start : start + _COLUMNS_AT_ONCE]
        columns += [series.rechunk() for series in pl.read_parquet(files, columns=group)]
    return pl.DataFrame(columns)


def _entry(
    path: Path,
    resume: Resume,
    boundary: int,
    pieces: tuple[PieceInfo, ...],
    segment_of: dict[int, str],
) -> dict[str, Any] | None:
    """The manifest entry of one file read up to ``resume.size`` (None if it vanished)."""
    try:
        with path.open("rb") as handle:
            head = _digest(handle, 0, min(REGION, boundary))
            edge = _digest(handle, max(0, boundary - REGION), boundary)
            tail = _digest(handle, max(0, resume.size - REGION), resume.size)
    except OSError:
        return None
    return {
        "size": resume.size,
        "mtime_ns": resume.mtime_ns,
        "ctime_ns": resume.ctime_ns,
        "boundary": boundary,
        "head": head,
        "edge": edge,
        "tail": tail,
        "pieces": [[p.id, segment_of[p.id], p.lines, p.resumes, p.session, p.size] for p in pieces],
    }


def _digest(handle: BinaryIO, start: int, stop: int) -> str:
    """SHA-256 (hex) of bytes ``start..stop`` of an open file (a content check, not security)."""
    handle.seek(start)
    return hashlib.sha256(handle.read(max(0, stop - start))).hexdigest()


def _read_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """The manifest's files, or none when it is missing, unreadable or of another format."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    files = data.get("files")
    if not isinstance(files, dict):
        return {}
    return {key: entry for key, entry in files.items() if _well_formed(entry)}


def _well_formed(entry: object) -> bool:
    """Whether a manifest entry has the shape ``_entry`` writes (else it is ignored)."""
    if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
        return False
    pieces = entry["pieces"]
    return isinstance(pieces, list) and all(
        isinstance(p, list)
        and len(p) == 6
        and all(isinstance(v, int) for v in (p[0], p[2], p[3], p[5]))
        and isinstance(p[1], str)
        and (p[4] is None or isinstance(p[4], str))
        for p in pieces
    )
