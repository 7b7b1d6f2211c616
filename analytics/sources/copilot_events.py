"""Read Copilot CLI ``events.jsonl`` files (or legacy ``<sessionId>.jsonl``) into tables.

Returns the EVENTS, MODEL_METRICS and ISSUES tables of ``schema.py``; decoding itself is
``copilot_lines.py``. How it stays fast and flat at any size: files are cut into *pieces* of
whole lines (a small file is one piece, a huge one is read in chunks split at newlines, and the
bytes after the last newline are a piece of their own), and the pieces of many files are parsed
together in batches of a few MB on a small thread pool, so each polars operation's fixed cost is
paid per batch, not per file, and no more than a few batches of raw bytes are held at once. A
piece is parsed in local form; ``place`` then adds each piece's offsets within its file and the
file's session id. ``analytics.cache`` stores the local tables, which is how a file that grew
parses only its new bytes.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analytics.schema import EVENTS, ISSUES, MODEL_METRICS, conform
from analytics.sources.copilot_event_types import KNOWN_EVENT_TYPES
from analytics.sources.copilot_lines import (
    LocalTables,
    Piece,
    PieceInfo,
    issue_table,
    parse_pieces,
)
from analytics.sources.discover import LogFile

#: Bytes read from a file at once: a larger file is parsed in pieces of about this size.
CHUNK_BYTES = 8 * 2**20
#: Raw bytes of pieces parsed together in one batch (many small files share a batch).
BATCH_BYTES = 8 * 2**20
#: Threads parsing batches (polars releases the GIL while it decodes).
WORKERS = 2


@dataclass(frozen=True)
class ParsedLog:
    """What log files yield: their events, their shutdown per-model totals, their problems."""

    events: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame


@dataclass(frozen=True)
class Resume:
    """Where to read a file: up to ``size`` bytes from ``start``; ``cached`` covers the rest.

    ``error`` is set (and nothing is read) when the file cannot even be inspected.
    """

    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    start: int = 0
    cached: tuple[PieceInfo, ...] = ()
    error: str | None = None


@dataclass
class _FileRead:
    """One file during a run: how it was resumed and the pieces read from it, in order."""

    log: LogFile
    resume: Resume
    complete: list[int] = dataclasses.field(default_factory=list)  # pieces of whole lines
    tail: int | None = None  # the piece after the last newline, never cached
    boundary: int = 0  # byte offset just after the last complete line read
    error: str | None = None


class PieceStore:
    """Where parsed pieces are kept between runs (``analytics.cache.LogCache``); no-op here."""

    def resume(self, log: LogFile) -> Resume:
        """Where to start reading ``log``: here, from the beginning, up to the size discovery
        saw (bytes written since are read next time)."""
        try:
            seen = log.stat or log.path.stat()
        except OSError as exc:
            return Resume(error=str(exc))
        return Resume(size=seen.st_size, mtime_ns=seen.st_mtime_ns, ctime_ns=seen.st_ctime_ns)

    def load(self, resumes: Sequence[Resume]) -> tuple[list[LocalTables], list[Resume]]:
        """The cached pieces of ``resumes`` (in parts); a resume whose pieces are gone restarts
        at 0."""
        return [], list(resumes)

    def save(self, tables: LocalTables, ids: set[int]) -> None:
        """Keep the pieces ``ids`` of ``tables`` for later runs."""

    def commit(self, files: Sequence[tuple[LogFile, Resume, int, tuple[PieceInfo, ...]]]) -> None:
        """Record, per file, what was read: (log, resume, boundary, pieces up to boundary)."""


Progress = Callable[[int, int], None]
"""Called with (bytes parsed so far, bytes to parse) as batches finish."""


def read_events(path: Path, session_hint: str) -> ParsedLog:
    """Parse one Copilot events file.

    ``session_hint`` names the session when the file has no ``session.start`` (a crash before
    the first line was flushed, or an excerpt): the session directory name or the file stem.
    An unreadable file yields one error issue and no events.
    """
    return read_logs([LogFile(path, session_hint)])


def read_logs(
    logs: Sequence[LogFile],
    store: PieceStore | None = None,
    progress: Progress | None = None,
) -> ParsedLog:
    """Parse many events files into one set of tables, reusing what ``store`` kept.

    Files are read once, in chunks; batches of pieces are parsed on ``WORKERS`` threads while
    the next batch is read, and at most a few batches are in flight, so memory stays flat.
    """
    store = store or PieceStore()
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        cached, resumes = store.load(list(pool.map(store.resume, logs)))
        reads = [_FileRead(log, resume) for log, resume in zip(logs, resumes, strict=True)]
        parsed = _parse_files(reads, pool, store, progress)
    parts = cached + parsed
    del cached, parsed  # stacking releases each column of the parts as it copies it
    local = LocalTables.stack(parts)
    new = {info.id: info for info in local.infos}
    store.commit(
        [
            (read.log, read.resume, read.boundary, _infos_of(read, new, tail=False))
            for read in reads
            if read.error is None and read.resume.error is None
        ]
    )
    return place(local, reads, new)


def _parse_files(
    reads: Sequence[_FileRead],
    pool: ThreadPoolExecutor,
    store: PieceStore,
    progress: Progress | None,
) -> list[LocalTables]:
    """Read the files' new bytes as pieces and parse them in batches on ``pool``."""
    total = sum(r.resume.size - r.resume.start for r in reads if r.resume.error is None)
    done: list[LocalTables] = []
    pending: deque[tuple[Future[LocalTables], int]] = deque()
    parsed_bytes = 0

    def finish() -> None:
        nonlocal parsed_bytes
        future, batch_bytes = pending.popleft()
        done.append(future.result())
        parsed_bytes += batch_bytes
        if progress:
            progress(parsed_bytes, total)

    batch: list[Piece] = []
    complete: set[int] = set()
    size = 0
    for piece, is_complete in _pieces(reads):
        batch.append(piece)
        size += len(piece.data)
        if is_complete:
            complete.add(piece.id)
        if size >= BATCH_BYTES:
            pending.append((pool.submit(_parse_and_keep, batch, complete, store), size))
            batch, complete, size = [], set(), 0
            if len(pending) > WORKERS:
                finish()
    if batch:
        pending.append((pool.submit(_parse_and_keep, batch, complete, store), size))
    while pending:
        finish()
    return done


def _parse_and_keep(batch: Sequence[Piece], complete: set[int], store: PieceStore) -> LocalTables:
    """Parse a batch and keep its complete pieces in ``store`` (on a worker thread)."""
    tables = parse_pieces(batch)
    store.save(tables, complete)
    return tables


def _pieces(reads: Sequence[_FileRead]) -> Iterator[tuple[Piece, bool]]:
    """Each file's unread bytes as pieces (and whether the piece ends with a newline).

    Reads at most ``CHUNK_BYTES`` at once; a chunk is cut after its last newline and the rest
    carried into the next one, so every piece but a file's tail holds whole lines.
    """
    for read in reads:
        resume = read.resume
        read.boundary = resume.start
        if resume.error is not None or resume.size <= resume.start:
            continue
        try:
            with read.log.path.open("rb") as handle:
                handle.seek(resume.start)
                left = resume.size - resume.start
                carry = b""
                while left > 0:
                    block = handle.read(min(CHUNK_BYTES, left))
                    if not block:
                        break
                    left -= len(block)
                    data = carry + block if carry else block
                    cut = data.rfind(b"\n") + 1
                    carry = data[cut:]
                    if cut:
                        piece = Piece(_new_id(), data[:cut])
                        read.complete.append(piece.id)
                        read.boundary += cut
                        yield piece, True
                if carry:
                    piece = Piece(_new_id(), carry)
                    read.tail = piece.id
                    yield piece, False
        except OSError as exc:
            read.error = str(exc)


def _new_id() -> int:
    """A piece id unique across runs (pieces of many runs share the cache)."""
    return random.getrandbits(62)


def _infos_of(read: _FileRead, new: dict[int, PieceInfo], *, tail: bool) -> tuple[PieceInfo, ...]:
    """The pieces of one file in order: cached, newly read, and (``tail``) its tail."""
    ids = read.complete + ([read.tail] if tail and read.tail is not None else [])
    return read.resume.cached + tuple(new[i] for i in ids)


def place(local: LocalTables, reads: Sequence[_FileRead], new: dict[int, PieceInfo]) -> ParsedLog:
    """Final tables: each piece's rows moved to their place in their file.

    Line numbers, byte offsets and ``process_index`` are offset by the pieces before it in the
    same file. A file can hold several sessions one after another: each line belongs to the
    latest ``session.start`` before it (lines before the first one, to the first one), and a
    file without any to its hint (directory name or file stem). Unknown event
    types are reported here, once per file and type, because a type's lines can span pieces.
    """
    rows: list[tuple[int, int, str, int, int, int, str]] = []
    failed: list[tuple[str, int | None, str, str]] = []
    for order, read in enumerate(reads):
        file = str(read.log.path)
        error = read.resume.error or read.error
        if error is not None:
            failed.append((file, None, "error", error))
            continue
        pieces = _infos_of(read, new, tail=True)
        session = next((p.session for p in pieces if p.session), read.log.session_hint)
        lines = resumes = offset = 0
        for info in pieces:
            rows.append((info.id, order, file, lines, resumes, offset, session))
            lines += info.lines
            resumes += info.resumes
            offset += info.size
    where = pl.DataFrame(
        rows,
        schema={
            "piece": pl.Int64,
            "_order": pl.Int64,
            "_file": pl.String,
            "_lines": pl.Int64,
            "_resumes": pl.Int32,
            "_offset": pl.Int64,
            "_session": pl.String,
        },
        orient="row",
    )
    events = _moved(local.events, where, "source_file", "source_line").with_columns(
        pl.col("source_line").alias("event_seq"),
        pl.col("session_id")
        .forward_fill()
        .backward_fill()
        .over("_order")
        .fill_null(pl.col("_session"))
        .alias("session_id"),
    )
    metrics = _moved(local.model_metrics, where, "source_file", "source_line")
    metrics = metrics.drop("session_id", "process_index").join(
        events.select("source_file", "source_line", "session_id", "process_index"),
        on=["source_file", "source_line"],
        how="left",
    )
    issues = _moved(local.issues, where, "file", "line")
    issues = pl.concat([conform(issues, ISSUES), _unknown_types(events), _issues(failed)])
    return ParsedLog(
        conform(events, EVENTS),
        conform(metrics, MODEL_METRICS),
        issues.sort("file", "line", nulls_last=False, maintain_order=True),
    )


def _moved(frame: pl.DataFrame, where: pl.DataFrame, file: str, line: str) -> pl.DataFrame:
    """Rows of ``frame`` with their file, line, process and session from ``where`` (by piece),
    in file and line order.

    The new values are looked up per column, so the other columns are shared, not copied, and
    the rows are re-ordered only when they are not in order already (pieces usually arrive in
    order). Rows of a piece ``where`` does not name (its file failed) are dropped.
    """

    def of(column: str) -> pl.Expr:
        return pl.col("piece").replace_strict(where["piece"], where[column], default=None)

    moved = frame.with_columns(
        of("_file").alias(file),
        (pl.col(line) + of("_lines")).alias(line),
        of("_order").alias("_order"),
        *(
            [
                of("_session").alias("_session"),
                pl.col("process_index") + of("_resumes"),
                pl.col("byte_offset") + of("_offset"),
            ]
            if "byte_offset" in frame.columns
            else []
        ),
    )
    if moved[file].null_count():
        moved = moved.filter(pl.col(file).is_not_null())
    order = (pl.col("_order") * 2**32 + pl.col(line)).alias("_key")
    if not moved.select(order)["_key"].is_sorted():
        moved = moved.sort("_order", line, maintain_order=True)
    return moved


def _unknown_types(events: pl.DataFrame) -> pl.DataFrame:
    """One warning per file and unknown event type, at its first line, with its count."""
    unknown = (
        events.filter(~pl.col("event_type").is_in(list(KNOWN_EVENT_TYPES)))
        .group_by("source_file", "event_type")
        .agg(pl.col("source_line").min(), pl.len())
        .sort("source_file", "source_line")
    )
    return _issues(
        [
            (
                file,
                first,
                "warning",
                f"unknown event type {kind!r} ({count} lines) kept, not analysed",
            )
            for file, kind, first, count in unknown.iter_rows()
        ]
    )


IssueRow = tuple[str, int | None, str, str]


def _issues(rows: Sequence[IssueRow]) -> pl.DataFrame:
    """ISSUES table from (file, line, severity, message) tuples."""
    return issue_table(rows, "file", ISSUES)
