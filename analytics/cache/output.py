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

Each output is one file: a JSON line (stderr lines, exit status, whether there is a report),
then the report's text. Writes go aside and are renamed into place; anything unreadable is a
miss, a cache that cannot be written is skipped, and the ``KEEP`` most recently used are
kept, within ``BUDGET_BYTES``. ``agentcost --no-cache`` uses none of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from analytics.cache.location import cache_dir

#: Bump when the stored file changes shape.
FORMAT = 1
#: Outputs kept, and the bytes they may take together; the least recently used go first.
KEEP = 32
BUDGET_BYTES = 512 * 1024 * 1024
#: Larger reports are not stored (a ``--calls`` of years of logs): disk, not time, decides.
LIMIT_BYTES = 128 * 1024 * 1024


#: Characters of a report kept in memory while it is written (``Spool``), past which the
#: rest goes to a temporary file.
SPOOL_IN_MEMORY = 16 << 20


class Spool:
    """A report's text kept as it is written, to store it after (``OutputCache.save``): in
    memory up to ``SPOOL_IN_MEMORY`` characters, past that in an anonymous temporary file. A
    report of up to ``LIMIT_BYTES`` (a large tree's JSON, which is still being rendered from
    the tables) is so never held in memory beside them: on the 1 GB benchmark trees those
    128 MB were the run's peak. Iterates its pieces (about ``PIECE`` characters each)."""

    def __init__(self) -> None:
        self._file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 (closed with the spool)
            SPOOL_IN_MEMORY, mode="w+", encoding="utf-8", newline=""
        )
        # closed (its file deleted) when the spool is dropped, if not before
        self._closed = weakref.finalize(self, self._file.close)
        #: Characters written.
        self.size = 0

    def add(self, piece: str) -> None:
        """Keep ``piece``, after those kept before."""
        self._file.write(piece)
        self.size += len(piece)

    def close(self) -> None:
        """Drop what was kept."""
        self._closed()

    def __iter__(self) -> Iterator[str]:
        self._file.seek(0)
        while piece := self._file.read(PIECE):
            yield piece


#: A report's text: whole, the pieces it is made of, in order (a large JSON report is
#: never joined into one string: ``render.views.render_sections_json``), or those pieces
#: as kept while it was written (``Spool``).
Report = str | list[str] | Spool
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
    if isinstance(text, Spool):
        last = ""
        for piece in text:
            last = piece or last
        return last.endswith("\n")
    if isinstance(text, list):
        return next((piece for piece in reversed(text) if piece), "").endswith("\n")
    return text.endswith("\n")


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
        """The output stored under ``key``, or None (missing or unreadable)."""
        path = self.root / key
        try:
            data = path.read_bytes()
            head, _, body = data.partition(b"\n")
            meta = json.loads(head)
            notes, status, has_report = meta["notes"], meta["status"], meta["report"]
            report = body.decode("utf-8") if has_report else None
            os.utime(path)  # most recently used: kept longest
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not (isinstance(notes, list) and all(isinstance(n, str) for n in notes)):
            return None
        if not isinstance(status, int) or isinstance(status, bool):
            return None
        return Output(report, tuple(notes), status)

    def save(self, key: str, output: Output) -> None:
        """Store ``output`` under ``key`` (best effort); drop the least recently used."""
        report = output.report or ""
        if isinstance(report, Spool):
            length = report.size
        else:
            length = len(report) if isinstance(report, str) else sum(map(len, report))
        if length > LIMIT_BYTES:  # each character is a byte at the least
            return
        meta = {"notes": list(output.notes), "status": output.status}
        head = json.dumps(meta | {"report": output.report is not None}).encode()
        temporary = self.root / f".{key}.{uuid.uuid4().hex}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with temporary.open("wb") as stored:
                stored.write(head + b"\n")
                # encoded a piece at a time: a report of MBs is never held twice
                size = sum(stored.write(piece.encode("utf-8")) for piece in pieces(report))
            if size > LIMIT_BYTES:
                temporary.unlink()
                return
            temporary.replace(self.root / key)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        self._drop_oldest()

    def _drop_oldest(self) -> None:
        """Keep the ``KEEP`` most recently used outputs, within ``BUDGET_BYTES``."""
        with contextlib.suppress(OSError):
            stored = [
                (entry.path, entry.stat())
                for entry in os.scandir(self.root)
                if not entry.name.startswith(".")
            ]
            stored.sort(key=lambda kept: kept[1].st_mtime_ns, reverse=True)
            total = 0
            for rank, (path, stat) in enumerate(stored):
                total += stat.st_size
                if rank >= KEEP or (rank and total > BUDGET_BYTES):
                    with contextlib.suppress(OSError):
                        os.unlink(path)
