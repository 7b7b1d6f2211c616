"""A command's whole output, replayed when nothing it depends on has changed.

A warm ``agentcost analyze`` of an unchanged tree would load the stored analysis, price it and
render it again, to print the same text as last time. Stored here, that text is found in
start-up, discovery and one read: polars is never imported (its import alone takes about
0.2 s, more than the rest of a warm run).

An output is stored under ``fingerprints.output_key``: a digest of agentcost's code, the
installed polars and rich, its inputs (each log, session store and OTel export by identity on
disk, and the problems discovery reported), and every option that shapes the output: the
command's own, the timezone the output is shown in (named, or the machine's), the width and
colour of a terminal a table is drawn for, and the identity of any rate-table file named. A
stored output is what the command printed, on stdout (or into ``--output``) and stderr, and how it
exited; only a run that got that far is stored, so a replay is exactly what running the
command again would print.

The report commands use it (``analyze``, ``daily``/``weekly``/``monthly``, ``top``,
``compare``, ``issues``, and the first screen, whose key holds today's date); ``watch``,
``statusline`` and ``budget`` do not, since the clock and a live session decide what they
show; nor ``export`` and ``report``, which write files.

Each output is one file: a JSON line (stderr lines, exit status, whether there is a report
and whether it holds a terminal's colour codes), then the report's text as UTF-8. A report
is never held whole: it is kept as it is written (``Spool``: past ``SPOOL_IN_MEMORY`` bytes
in a temporary file), copied into the store as bytes, and replayed from the open file
(``Stored``: copied to stdout as bytes where stdout writes UTF-8). So the JSON report of a
1 GB tree (350 MB) replays in the time of a copy. Writes go aside and are renamed into place;
anything unreadable is a miss, a cache that cannot be written is skipped.

Disk: a report past ``LIMIT_BYTES`` (512 MiB) is not stored, and the ``KEEP`` most recently
used outputs are kept within ``BUDGET_BYTES`` (1 GiB) together, the most recent whatever its
size. ``agentcost --no-cache`` uses none of it.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
import tempfile
import uuid
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from analytics.cache.location import cache_dir, drop_least_recent

#: Bump when the stored file changes shape.
FORMAT = 2
#: Outputs kept, and the bytes they may take together; the least recently used go first.
KEEP = 32
BUDGET_BYTES = 1 << 30
#: Larger reports are not stored (a ``--calls`` of years of logs): disk, not time, decides.
LIMIT_BYTES = 512 << 20


#: Bytes of a report kept in memory while it is written (``Spool``), past which the rest
#: goes to a temporary file.
SPOOL_IN_MEMORY = 16 << 20
#: Where a terminal's colour codes start.
ESCAPE = "\x1b["


class Spool:
    """A report's text kept as it is written, to store it after (``OutputCache.save``):
    encoded, in memory up to ``SPOOL_IN_MEMORY`` bytes, past that in an anonymous temporary
    file. A report of up to ``LIMIT_BYTES`` (a large tree's JSON, which is still being
    rendered from the tables) is so never held in memory beside them: on the 1 GB benchmark
    trees those MBs were the run's peak. Iterates its text in pieces (about ``PIECE``
    bytes each)."""

    def __init__(self) -> None:
        self._file = tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY)  # noqa: SIM115 (closed with the spool)
        # closed (its file deleted) when the spool is dropped, if not before
        self._closed = weakref.finalize(self, self._file.close)
        #: Characters written, and their bytes as UTF-8.
        self.size = self.bytes = 0
        #: Whether a piece held a terminal's colour codes (``ESCAPE``); the last character.
        self.escaped, self.last = False, ""

    def add(self, piece: str) -> None:
        """Keep ``piece``, after those kept before (a whole piece of the report: no colour
        code is cut in two, ``pieces``)."""
        self.bytes += self._file.write(piece.encode("utf-8"))
        self.size += len(piece)
        self.escaped = self.escaped or ESCAPE in piece
        self.last = piece[-1:] or self.last

    def close(self) -> None:
        """Drop what was kept."""
        self._closed()

    def copy_to(self, binary: BinaryIO) -> int:
        """Write the kept text, as UTF-8, to ``binary``; the bytes written."""
        self._file.seek(0)
        return _copy(self._file, binary)

    def __iter__(self) -> Iterator[str]:
        self._file.seek(0)
        return _decoded(self._file)


class Stored:
    """A stored report, left on disk: its file open (from ``offset`` on: so a file dropped
    meanwhile is still read whole), its text given in pieces or copied as bytes, never read
    into memory whole."""

    def __init__(self, file: BinaryIO, offset: int, *, escaped: bool) -> None:
        self._file, self._offset = file, offset
        self._closed = weakref.finalize(self, file.close)
        #: Whether the report holds a terminal's colour codes (``ESCAPE``).
        self.escaped = escaped
        #: The report's bytes, and its last character ("" for an empty report).
        self.bytes = os.fstat(file.fileno()).st_size - offset
        self.last = ""
        if self.bytes > 0:
            end = os.pread(file.fileno(), 4, offset + max(0, self.bytes - 4))
            self.last = end.decode("utf-8", "replace")[-1:]

    def copy_to(self, binary: BinaryIO) -> int:
        """Write the report's bytes to ``binary``; the bytes written. Where ``binary`` is a
        file or a pipe the kernel copies them (``os.sendfile``), else they pass through
        here a piece at a time."""
        try:
            target = binary.fileno()
        except (AttributeError, OSError, ValueError):
            target = -1
        if target >= 0:
            binary.flush()
            sent = self._sent(target)
            if sent is not None:
                return sent
        self._file.seek(self._offset)
        return _copy(self._file, binary)

    def _sent(self, target: int) -> int | None:
        """The report sent to the descriptor ``target`` by the kernel; None when it cannot
        send to it (nothing was sent). A reader that went away raises ``BrokenPipeError``."""
        source, start, end = self._file.fileno(), self._offset, self._offset + self.bytes
        done = start
        while done < end:
            try:
                count = os.sendfile(target, source, done, end - done)
            except OSError as error:
                if done == start and error.errno in _CANNOT_SEND:
                    return None
                raise
            if not count:  # the end of the file (stored files are replaced, never cut)
                break
            done += count
        return done - start

    def text(self) -> str:
        """The whole report (for a report of a few lines, and tests)."""
        return "".join(self)

    def __iter__(self) -> Iterator[str]:
        self._file.seek(self._offset)
        return _decoded(self._file)


class _Source(Protocol):
    """A file a report's bytes are read from (an open file, a spooled temporary file)."""

    def read(self, size: int = -1, /) -> bytes: ...


#: What ``os.sendfile`` says of a descriptor it cannot send to (a terminal, say).
_CANNOT_SEND = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ESPIPE})


def _spooled(text: str | list[str]) -> Spool:
    """``text`` kept in a ``Spool``, a piece at a time."""
    spool = Spool()
    for piece in pieces(text):
        spool.add(piece)
    return spool


def _copy(source: _Source, binary: BinaryIO) -> int:
    """The rest of ``source`` written to ``binary`` a piece at a time; the bytes written."""
    size = 0
    while chunk := source.read(PIECE):
        binary.write(chunk)
        size += len(chunk)
    return size


def _decoded(source: _Source) -> Iterator[str]:
    """The rest of ``source``, UTF-8, decoded a piece at a time (a character cut by a
    piece's end is completed by the next)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    while chunk := source.read(PIECE):
        if text := decoder.decode(chunk):
            yield text
    if text := decoder.decode(b"", final=True):
        yield text


#: A report's text: whole, the pieces it is made of, in order (a large JSON report is
#: never joined into one string: ``render.views.render_sections_json``), those pieces as
#: kept while it was written (``Spool``), or as stored (``Stored``).
Report = str | list[str] | Spool | Stored
#: A report as a command renders it: whole, in pieces, or its pieces as they come
#: (``render.views.render_sections_json``), written as they come and never held whole.
Rendered = Report | Iterator[str]
#: Characters of a report written at a time (``pieces``).
PIECE = 1 << 20


def pieces(text: Rendered) -> Iterator[str]:
    """``text`` in pieces of about ``PIECE`` characters, to write one at a time: a report of
    tens of MB is then never encoded, or copied to add a newline, whole. A piece of a whole
    text ends at a line's end, and one of a list is whole pieces of it, so no colour code is
    cut in two."""
    if not isinstance(text, str):
        group: list[str] = []
        size = 0
        for piece in text:
            group.append(piece)
            size += len(piece)
            if size >= PIECE:
                yield "".join(group)
                group, size = [], 0
        if group:
            yield "".join(group)
        return
    start = 0
    while start < len(text):
        end = text.find("\n", start + PIECE)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def ends_line(text: Report) -> bool:
    """Whether ``text`` ends with a newline."""
    if isinstance(text, Spool | Stored):
        return text.last == "\n"
    if isinstance(text, list):
        return next((piece for piece in reversed(text) if piece), "").endswith("\n")
    return text.endswith("\n")


def escaped(text: Report) -> bool:
    """Whether ``text`` holds a terminal's colour codes (``ESCAPE``)."""
    if isinstance(text, Spool | Stored):
        return text.escaped
    return ESCAPE in text if isinstance(text, str) else any(ESCAPE in p for p in text)


@dataclass(frozen=True)
class Output:
    """What one run of a command printed: ``report`` (stdout, or the ``--output`` file; None
    when it wrote none), the lines it wrote on stderr, and its exit status."""

    report: Report | None
    notes: tuple[str, ...] = ()
    status: int = 0


class OutputCache:
    """Stored outputs under ``root`` (default: ``cache_dir()``), one file per key."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_dir()) / f"outputs-v{FORMAT}"

    def load(self, key: str) -> Output | None:
        """The output stored under ``key``, or None (missing, unreadable, or not as long as
        its head says); its report is left in the file, open (``Stored``)."""
        path = self.root / key
        try:
            file = path.open("rb")
        except OSError:
            return None
        try:
            head = file.readline()
            meta = json.loads(head)
            notes, status, has_report = meta["notes"], meta["status"], meta["report"]
            report = Stored(file, len(head), escaped=meta["escape"]) if has_report else None
            whole = (report.bytes if report else 0) == meta["bytes"]
            os.utime(path)  # most recently used: kept longest
        except (OSError, ValueError, KeyError, TypeError):
            file.close()
            return None
        if report is None:
            file.close()
        if not whole or not (isinstance(notes, list) and all(isinstance(n, str) for n in notes)):
            return None
        if not isinstance(status, int) or isinstance(status, bool):
            return None
        return Output(report, tuple(notes), status)

    def save(self, key: str, output: Output) -> None:
        """Store ``output`` under ``key`` (best effort); drop the least recently used. A
        report in memory is first spooled (encoded once, past ``SPOOL_IN_MEMORY`` into a
        temporary file): its bytes are then known before they are written."""
        report = output.report or ""
        length = report.size if isinstance(report, Spool) else 0
        if isinstance(report, str | list):
            length = len(report) if isinstance(report, str) else sum(map(len, report))
        if length > LIMIT_BYTES:  # each character is a byte at the least
            return
        if isinstance(report, str | list):
            report = _spooled(report)
        if report.bytes > LIMIT_BYTES:
            return
        meta = {"notes": list(output.notes), "status": output.status}
        meta |= {"report": output.report is not None, "escape": report.escaped}
        meta |= {"bytes": report.bytes}
        temporary = self.root / f".{key}.{uuid.uuid4().hex}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with temporary.open("wb") as stored:
                stored.write(json.dumps(meta).encode() + b"\n")
                report.copy_to(stored)
            temporary.replace(self.root / key)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        drop_least_recent(self.root, KEEP, BUDGET_BYTES)
