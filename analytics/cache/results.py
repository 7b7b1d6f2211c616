"""Keep whole analyses between runs: re-analysing an unchanged tree loads five small tables.

It spares reading the logs and every stage after it. An analysis is stored under its tree's
key (``fingerprints.tree_key``: agentcost's code, the installed polars and rich, every input
the analysis read by resolved path, size, ``mtime_ns``, ``ctime_ns`` and inode, and the
problems discovery reported). A file that grows (a live session) changes the key, and so does
one rewritten with its old size and mtime (its ``ctime`` changes).

Stored: CALLS (with tokens), SESSIONS, MODEL_METRICS, ISSUES and LOG_PRICES, as Arrow IPC
files (``_write`` says why not Parquet).
A whole analysis made from the previous one of the same paths (``group_analysis.Previous``: a live
session changed one group of many) stores its calls as that one's, linked, without the changed
groups' sessions and with their new rows (``Patched``): a touched run of the 1 GB benchmark
tree then neither decodes the previous calls nor encodes 76,000 calls again.
EVENTS are not stored (an order of magnitude larger than the rest); the commands that need
them read them again on first use (``Analysis.events`` is lazy). Beside a whole analysis:
each group's own issues (``group_analysis.GROUP_ISSUES``) and the tables a rate table priced it to
(``cache.priced_tables``). Its note lists its groups, and its key is remembered under the slot of
the paths analysed (``fingerprints.paths_slot``), for the next analysis of those paths
(``group_analysis.Previous``). The newest ``KEEP`` results are kept.

A lone *group* of sessions (a session, a small tree: ``group_analysis.run_stages``) is also
stored on its own (``fingerprints.group_key``: the code and the group's log files), with a
small JSON *note*: its session ids and a digest of the per-call records (session store, OTel)
of those sessions. It is reused only if its files are unchanged and those records still digest
the same, so another session's new store rows (which change the tree's key) cost it nothing.
The groups of a larger tree are kept in its whole result instead (its note's fingerprints), for
``group_analysis.Previous``.

Writes go to a temporary directory renamed into place, so concurrent runs never see half a
result; anything unreadable is a miss, and a cache that cannot be written is skipped. The
results are written in the background (``save_later``): a lone group's and the whole
analysis's while the caller prices and renders it. A read of a key
or slot waits for its own write first, so a run always sees its own results, and ``flush``
(which the command line calls before it exits) waits for them all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import io
import json
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

from analytics.cache.location import results_dir

#: What joins a result's key and a variant of it (``ResultCache._beside``); keys are hex.
VARIANT = "-"
#: Tables are stored as Arrow IPC files, LZ4-compressed (``_write``).
SUFFIX = ".arrow"
#: Results kept (whole analyses and groups of sessions); older ones are deleted.
KEEP = 64
TABLES = ("calls", "sessions", "model_metrics", "issues", "log_prices")
#: The files of a table stored as ``Patched``, after its name: the earlier table, the rows
#: added, the sessions whose rows of the earlier table are dropped.
BASE, ADDED, DROPPED = "-base", "-added", "-dropped"


@dataclasses.dataclass(frozen=True)
class Patched:
    """A table of calls as an earlier stored one (``base``: its IPC bytes, not decoded; and
    ``source``, the file they were read from) without the rows of the sessions ``dropped``,
    with the rows ``added``. Called, it gives the table.

    A whole result made from the previous one (a live session changed one group of many) is
    mostly that one's calls: it is stored as them (a link to the same file) and the changed
    groups' calls, so neither the previous calls are decoded nor the new ones encoded again
    (``group_analysis.Previous``); the table is put together only when read.
    """

    base: bytes
    source: Path | None
    dropped: frozenset[str]
    added: pl.DataFrame

    @classmethod
    def of(cls, data: bytes, source: Path | None) -> Patched:
        """A whole stored table (its bytes) as a patch that changes nothing."""
        schema = pl.read_ipc_schema(io.BytesIO(data))
        return cls(data, source, frozenset(), pl.DataFrame(schema=schema))

    def __call__(self) -> pl.DataFrame:
        base = _decode(self.base)
        kept = base.filter(~_among(self.dropped)) if self.dropped else base
        return in_order([kept, self.added])

    def sessions(self) -> set[str]:
        """The sessions the table has rows of (only the base's ``session_id`` is decoded)."""
        base = pl.read_ipc(io.BytesIO(self.base), columns=["session_id"])["session_id"]
        return (set(base.unique().to_list()) - self.dropped) | set(
            self.added["session_id"].unique().to_list()
        )

    def patched(self, dropped: Collection[str], added: Sequence[pl.DataFrame]) -> Patched:
        """This table without the rows of the sessions ``dropped``, with the rows ``added``."""
        mine = self.added.filter(~_among(dropped)) if dropped else self.added
        return Patched(
            self.base, self.source, self.dropped | frozenset(dropped), pl.concat([mine, *added])
        )

    def write(self, folder: Path, name: str) -> None:
        """Store this table as ``name`` in ``folder``: the earlier table linked (written again
        only where it cannot be), the rows added and the sessions dropped."""
        base = folder / f"{name}{BASE}{SUFFIX}"
        try:
            if self.source is None:
                raise OSError("no file to link")
            os.link(self.source, base)
        except OSError:  # gone meanwhile (dropped as one of the oldest), or no links here
            base.write_bytes(self.base)
        _write(self.added, folder / f"{name}{ADDED}{SUFFIX}")
        dropped = pl.DataFrame(
            {"session_id": sorted(self.dropped)}, schema={"session_id": pl.String}
        )
        _write(dropped, folder / f"{name}{DROPPED}{SUFFIX}")


def in_order(calls: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Groups' calls as one table, in one order whatever the grouping: by session id, then
    event. The groups of a tree are usually runs of session ids (``engine.groups.bucket``),
    each in that order already: their calls are then checked, not sorted again (a sort of the
    1 GB benchmark tree's 76,000 calls is 0.02-0.03 s of the run's serial end)."""
    whole = pl.concat(calls)
    session, event = pl.col("session_id"), pl.col("event_seq")
    after = (session > session.shift()) | ((session == session.shift()) & (event > event.shift()))
    known = session.null_count() + event.null_count() == 0  # a sort puts nulls first
    if whole.select(known & after.fill_null(True).all()).item():  # null: the first row
        return whole
    return whole.sort("session_id", "event_seq")


def _among(sessions: Collection[str]) -> pl.Expr:
    return pl.col("session_id").is_in(pl.Series(sorted(sessions), dtype=pl.String).implode())


#: A table to store, or what gives it when it is written (``Patched``).
Stored = pl.DataFrame | Callable[[], pl.DataFrame]


class ResultCache:
    """Analyses on disk under ``root`` (default: ``cache_dir()``), one directory per key."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = results_dir(root)

    def remember(self, slot: str, key: str) -> None:
        """Note ``key`` as the latest whole analysis of the paths whose slot is ``slot``
        (``fingerprints.paths_slot``; best effort), for ``recall``: the next run of those
        paths, whose key differs once a file changed, takes its unchanged groups from it."""
        with contextlib.suppress(OSError):
            slots = self.root / "slots"
            slots.mkdir(parents=True, exist_ok=True)
            temporary = slots / f".{uuid.uuid4().hex}"
            temporary.write_text(key)
            temporary.replace(slots / slot)

    def recall(self, slot: str) -> str | None:
        """The key ``remember`` last noted for ``slot``, if any."""
        flush(f"slot {slot}")
        try:
            key = (self.root / "slots" / slot).read_text()
        except OSError:
            return None
        return key if key.isalnum() else None

    def load(self, key: str) -> tuple[dict[str, pl.DataFrame], dict[str, Any]] | None:
        """The tables and the note stored under ``key``, or None (missing, partial or
        unreadable)."""
        stored = self.load_lazily(key, ())
        if stored is None:
            return None
        tables, _, note = stored
        return tables, note

    def load_lazily(
        self, key: str, deferred: Sequence[str]
    ) -> (
        tuple[dict[str, pl.DataFrame], dict[str, Callable[[], pl.DataFrame]], dict[str, Any]] | None
    ):
        """``load``, but the tables ``deferred`` are only read into memory now, and decoded
        by the function given for each when called (a warm ``analyze`` never decodes the
        calls: 35 ms on the 1 GB benchmark tree). The bytes are read at once, so a result
        dropped meanwhile by another run cannot fail them later, and their schema is read:
        a truncated or foreign file is a miss now. Damage inside the data shows only when
        decoded, as ``OSError`` or ``polars.exceptions.PolarsError``."""
        flush(f"result {key}")
        folder = self.root / key
        try:
            tables = {name: _whole(folder, name) for name in TABLES if name not in deferred}
            raw = {name: _raw(folder, name) for name in deferred}
            for data in raw.values():
                if isinstance(data, bytes):
                    pl.read_ipc_schema(io.BytesIO(data))
            note = json.loads((folder / "note.json").read_text())
            os.utime(folder)  # most recently used: kept longest
        except (OSError, ValueError, pl.exceptions.PolarsError):
            return None
        readers: dict[str, Callable[[], pl.DataFrame]] = {
            name: functools.partial(_decode, data) if isinstance(data, bytes) else data
            for name, data in raw.items()
        }
        return tables, readers, note if isinstance(note, dict) else {}

    def note(self, key: str) -> dict[str, Any] | None:
        """The note stored with result ``key`` alone, or None (missing or unreadable)."""
        flush(f"result {key}")
        try:
            note = json.loads((self.root / key / "note.json").read_text())
        except (OSError, ValueError):
            return None
        return note if isinstance(note, dict) else None

    def load_table(self, key: str, name: str) -> pl.DataFrame | None:
        """Table ``name`` of result ``key`` alone (one of ``TABLES``, or one its caller kept
        beside them), or None."""
        key = key.partition(VARIANT)[0]
        flush(f"result {key}")
        try:
            return _whole(self.root / key, name)
        except (OSError, ValueError, pl.exceptions.PolarsError):
            return None

    def load_patchable(self, key: str, name: str) -> Patched | None:
        """Table ``name`` of result ``key`` as a patch (``Patched``), to patch further without
        decoding it; None when it cannot be read."""
        flush(f"result {key}")
        folder = self.root / key
        try:
            raw = _raw(folder, name)
            return Patched.of(raw, folder / f"{name}{SUFFIX}") if isinstance(raw, bytes) else raw
        except (OSError, ValueError, pl.exceptions.PolarsError):
            return None

    def save(
        self, key: str, tables: Mapping[str, Stored], note: dict[str, Any] | None = None
    ) -> None:
        """Store ``tables`` (``TABLES``, and any other a caller keeps beside them: see
        ``load_table``) and ``note`` under ``key`` (best effort); drop the oldest."""
        temporary = self.root / f".{key}.{uuid.uuid4().hex}"
        try:
            temporary.mkdir(parents=True)
            for name, table in tables.items():
                if isinstance(table, Patched):
                    table.write(temporary, name)
                else:
                    _write(
                        table if isinstance(table, pl.DataFrame) else table(),
                        temporary / f"{name}{SUFFIX}",
                    )
            with (temporary / "note.json").open("w", encoding="utf-8") as written:
                written.writelines(note_text(note or {}))
            temporary.rename(self.root / key)
        except OSError:  # unwritable, or another run stored the same key first
            shutil.rmtree(temporary, ignore_errors=True)
            return
        self._drop_oldest()

    def load_priced(
        self, key: str, digest: str, names: Sequence[str]
    ) -> dict[str, pl.DataFrame] | None:
        """The priced tables ``names`` kept beside result ``key`` for prices ``digest``
        (``analytics.cache.priced_tables``), or None."""
        tables = {}
        for name in names:
            table = self.load_beside(key, f"priced-{digest}-{name}")
            if table is None:
                return None
            tables[name] = table
        return tables

    def save_priced_later(self, key: str, digest: str, tables: dict[str, pl.DataFrame]) -> None:
        """Keep priced tables beside result ``key`` for prices ``digest`` (``load_priced``)."""
        self.save_beside_later(
            key, {f"priced-{digest}-{name}": table for name, table in tables.items()}
        )

    def load_beside(self, key: str, stem: str) -> pl.DataFrame | None:
        """The table kept beside result ``key`` as ``stem`` (``save_beside_later``), or None.
        Waits only for a write of that table: the result itself, or other tables beside it,
        may still be being written (a result just computed has nothing beside it)."""
        flush(f"beside {key} {stem}")
        folder, stem = self._beside(key, stem)
        try:
            return _read(folder / f"{stem}{SUFFIX}")
        except (OSError, ValueError, pl.exceptions.PolarsError):
            return None

    def save_beside_later(self, key: str, tables: dict[str, pl.DataFrame]) -> None:
        """Keep ``tables`` beside result ``key``, each as its stem (best effort, in the
        background; each file is written aside and renamed into place), after the result
        itself (writes run in the order they were asked for)."""

        def write() -> None:
            for name, table in tables.items():
                folder, stem = self._beside(key, name)
                temporary = folder / f".{uuid.uuid4().hex}"
                try:
                    _write(table, temporary)
                    temporary.replace(folder / f"{stem}{SUFFIX}")
                except OSError:  # the result was dropped meanwhile, or is unwritable
                    with contextlib.suppress(OSError):
                        temporary.unlink()
                    return

        _start({f"beside {key} {stem}" for stem in tables}, write)

    def save_later(
        self,
        key: str,
        tables: Mapping[str, Stored],
        note: dict[str, Any] | None = None,
        slot: str | None = None,
    ) -> None:
        """``save`` (then ``remember`` under ``slot``) in the background: the tables are not
        changed meanwhile (polars frames are immutable; one given as what gives it is taken
        then). A read of this key or slot, and
        ``flush`` (or the interpreter's exit), waits for it."""

        def write() -> None:
            self.save(key, tables, note)
            if slot:
                self.remember(slot, key)

        what = {f"result {key}"} | ({f"slot {slot}"} if slot else set())
        _start(what, write)

    def _beside(self, key: str, stem: str) -> tuple[Path, str]:
        """The folder and file stem of table ``stem`` kept beside result ``key``: a variant
        key (``KEY-VARIANT``, ``fingerprints.without_items``) keeps its tables beside the
        result ``KEY`` itself, each stem named after the variant."""
        key, _, variant = key.partition(VARIANT)
        return self.root / key, f"{variant}-{stem}" if variant else stem

    def _drop_oldest(self) -> None:
        with contextlib.suppress(OSError):
            stored = [
                entry
                for entry in os.scandir(self.root)
                if not entry.name.startswith(".") and entry.name != "slots"
            ]
            stored.sort(key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
            for entry in stored[KEEP:]:
                shutil.rmtree(entry.path, ignore_errors=True)


#: The one thread background writes run on, one after another: a write's memory (its IPC
#: buffers) is held once at a time, and a result is written before what is kept beside it.
_WRITER = ThreadPoolExecutor(1, thread_name_prefix="agentcost-cache")
#: Writes not yet waited for, each with what it writes (``"result KEY"``, ``"priced KEY"``,
#: ``"slot SLOT"``).
_PENDING: list[tuple[set[str], Future[None]]] = []
_PENDING_LOCK = threading.Lock()


def _start(what: set[str], write: Callable[[], None]) -> None:
    with _PENDING_LOCK:
        _PENDING.append((what, _WRITER.submit(write)))


def flush(what: str | None = None) -> None:
    """Wait for every background write (``save_later``, ``save_priced_later``), or only for
    those of ``what``."""
    with _PENDING_LOCK:
        waited = [(w, done) for w, done in _PENDING if what is None or what in w]
        _PENDING[:] = [entry for entry in _PENDING if entry not in waited]
    for _, done in waited:
        done.result()


def note_text(note: Mapping[str, Any]) -> Iterator[str]:
    """``json.dumps(note)``, in pieces: a long list a slice of its items at a time. A note
    can list every file of a tree (``cache.agent_results``: 170,000 groups and their
    digests on the 1 GB pi tree): encoded at once, its text, the encoder's pieces of it and
    its UTF-8 bytes were held together, some 130 MB while the result was written."""
    yield "{"
    for at, (key, value) in enumerate(note.items()):
        yield f"{', ' if at else ''}{json.dumps(key)}: "
        if isinstance(value, list) and len(value) > _NOTE_SLICE:
            for start in range(0, len(value), _NOTE_SLICE):
                items = json.dumps(value[start : start + _NOTE_SLICE])[1:-1]
                yield f"{', ' if start else '['}{items}"
            yield "]"
        else:
            yield json.dumps(value)
    yield "}"


#: The items of a note's list encoded at a time (``note_text``).
_NOTE_SLICE = 4096


def _write(table: pl.DataFrame, path: Path) -> None:
    """Store one table: Arrow IPC, LZ4-compressed.

    Not Parquet: polars encodes a Parquet file's columns on its shared thread pool, so a
    background write stalls every other polars operation of the run until it is done (a
    0.9 MB read took 62 ms instead of 11 during the write of 76,000 calls). An IPC file is
    written on the writer's own thread (43 ms against Parquet's 58 for those calls, the
    read beside it 13 ms). It reads back a little slower (58 ms against 39 for a whole
    stored analysis of the 1 GB benchmark tree) and is a quarter larger.
    """
    table.write_ipc(path, compression="lz4")


def _read(path: Path) -> pl.DataFrame:
    return pl.read_ipc(path)


def _decode(data: bytes) -> pl.DataFrame:
    return pl.read_ipc(io.BytesIO(data))


def _raw(folder: Path, name: str) -> bytes | Patched:
    """Table ``name`` of the result in ``folder``, read but not decoded: its bytes, or, when
    it is stored as a patch, the patch (its base not decoded)."""
    try:
        return (folder / f"{name}{SUFFIX}").read_bytes()
    except FileNotFoundError:
        base = folder / f"{name}{BASE}{SUFFIX}"
        if not base.is_file():
            raise
    dropped = _read(folder / f"{name}{DROPPED}{SUFFIX}")["session_id"].to_list()
    added = _read(folder / f"{name}{ADDED}{SUFFIX}")
    return dataclasses.replace(
        Patched.of(base.read_bytes(), base), dropped=frozenset(dropped), added=added
    )


def _whole(folder: Path, name: str) -> pl.DataFrame:
    """Table ``name`` of the result in ``folder``, decoded (put together, when a patch)."""
    path = folder / f"{name}{SUFFIX}"
    if path.is_file() or not (folder / f"{name}{BASE}{SUFFIX}").is_file():
        return _read(path)
    patch = _raw(folder, name)
    return _decode(patch) if isinstance(patch, bytes) else patch()


def records_digest(records: pl.DataFrame) -> str:
    """A digest of per-call records (rows in a fixed order), for a group's note. No records
    (most trees) digest as their columns alone, without the CSV writer (a group's digest is
    taken for each group of a run)."""
    if not records.height:
        return hashlib.sha256(",".join(records.columns).encode()).hexdigest()
    ordered = records.sort(records.columns, nulls_last=False)
    return hashlib.sha256(ordered.write_csv().encode()).hexdigest()
