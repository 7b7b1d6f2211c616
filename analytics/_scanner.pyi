"""Types of the native log scanner (``analytics/scanner/``, Rust): see ``scan_copilot``."""

from collections.abc import Sequence

__version__: str
#: This build: the crate's version, Cargo profile and target (``0.1.0 release, x86_64-linux``).
BUILD: str

class ArrowColumn:
    """One column; ``polars.Series(column)`` adopts it (Arrow C data interface)."""

    def __arrow_c_array__(
        self, requested_schema: object | None = None
    ) -> tuple[object, object]: ...

class ArrowTable:
    """The columns of one batch of files, or one of the engine's tables; ``polars.DataFrame``
    adopts it whole (Arrow C stream interface)."""

    def columns(self) -> list[tuple[str, ArrowColumn]]: ...
    def __len__(self) -> int: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

def scan_copilot(
    paths: Sequence[str],
    hints: Sequence[str],
    sizes: Sequence[int | None],
    batch_bytes: int = ...,
    block_bytes: int = ...,
) -> tuple[
    list[ArrowTable],
    tuple[list[int], list[int | None], list[str], list[str]],
    tuple[ArrowTable, tuple[list[int], list[int], list[str]]],
    list[tuple[int, int | None, str]],
]:
    """Scan Copilot event logs: event tables per batch; issues as columns (file index, line,
    severity, message); the shutdowns' per-model totals, decoded: MODEL_METRICS rows with a
    file index (``file``) for their path, and their lines' warnings as columns (file index,
    line, message); unreadable files (file index, errno, message)."""

class ScanState:
    """Where the scan of one file stopped; pass it back to ``scan_copilot_from``."""

    @property
    def offset(self) -> int:
        """Bytes scanned: just after the last complete line."""
    @property
    def lines(self) -> int:
        """Lines scanned."""

def scan_copilot_from(
    paths: Sequence[str],
    hints: Sequence[str],
    sizes: Sequence[int | None],
    states: Sequence[ScanState | None],
    batch_bytes: int = ...,
    block_bytes: int = ...,
) -> tuple[
    tuple[
        list[ArrowTable],
        tuple[list[int], list[int | None], list[str], list[str]],
        tuple[ArrowTable, tuple[list[int], list[int], list[str]]],
        list[tuple[int, int | None, str]],
    ],
    list[ScanState],
]:
    """As ``scan_copilot``, each file from ``states[i]`` (None: its start); a last line
    without its newline is left for next time. Also returns each file's end state."""

def release_buffers() -> int:
    """Free the memory of scanned columns kept for the next scan's columns, and keep none
    until the next scan (for when a run's scans are done); the bytes freed."""

def event_columns() -> list[str]:
    """The event table's column names."""

def copilot_format() -> tuple[
    list[tuple[str, str]],
    list[tuple[str, tuple[str, list[tuple[str, list[str]]], int]]],
    list[tuple[str, list[str]]],
]:
    """The Copilot format table: fields (path, shape), columns (name, (rule kind, [(event
    type or "", paths)], character limit)), and the event-type settings."""

def solve_systems(
    sizes: list[int], matrices: list[float], vectors: list[float]
) -> tuple[list[float], list[float]]:
    """Solve dense systems (row-major matrices and vectors concatenated, ``sizes[k]``
    unknowns each) by Gauss-Jordan with partial pivoting: solutions and inverse diagonals."""

def fold_agent(
    agent: str, groups: Sequence[Sequence[str]], with_items: bool = True
) -> tuple[ArrowTable, ArrowTable, ArrowTable, ArrowTable]:
    """Fold the logs of ``agent`` (its id; a ``ValueError`` when the crate has no fold of
    that name), each group (files a call may be copied between) together, groups in
    parallel: the calls, sessions, issues and items tables (see ``analytics.agents``; the
    items empty unless ``with_items``)."""

def fold_columns() -> tuple[list[str], list[str], list[str], list[str]]:
    """The column names of the folds' calls, sessions, issues and items tables."""

def pass_copilot(
    tables: list[ArrowTable],
    metrics: object,
    failed: list[str],
    known: list[str],
    columns: list[str] | None = None,
    usage: object | None = None,
    stages: dict[str, float] | None = None,
) -> tuple[
    tuple[ArrowTable, ArrowTable, ArrowTable, ArrowTable],
    ArrowTable,
    ArrowTable,
    ArrowTable,
    ArrowTable,
    ArrowTable | None,
    tuple[ArrowTable, ArrowTable, ArrowTable] | None,
]:
    """The one Copilot pass over a group's scanned batches, with the shutdowns' per-model
    totals (an Arrow stream capsule), the unreadable files and the known event types:
    (calls, sessions, orphan-end issues, session issues), repeated lines' issues, unknown
    event types, the totals' placement, the priced lines, the events' ``columns``, and, with
    ``usage`` (the OBSERVED_USAGE rows beside the logs, an Arrow stream capsule), the token
    stage's tables (``copilot_tokens``) of the sessions folded. Given ``stages``, it adds
    the pass's seconds to it by stage (``events``, ``order``, ``fold``, ``tokens``, ``fit``:
    thread-seconds, summed over the sessions of its parallel steps; ``tables``: wall)."""

def copilot_tokens(
    events: object,
    calls: object,
    sessions: object,
    metrics: object,
    records: object,
    use_observed: bool = True,
) -> tuple[ArrowTable, ArrowTable, ArrowTable]:
    """The Copilot token stage (Arrow stream capsules of the ordered events, the fold's calls
    in session id and event order, its sessions, the placed model metrics and the per-call
    rows beside the logs): the columns it sets, aligned with the calls; the sessions'
    (session_id, sums, models, fit), sessions by id; its issues."""

def copilot_token_columns() -> list[str]:
    """The EVENTS columns the token stage reads beyond the fold's."""

def read_heads(
    paths: Sequence[str], limit: int
) -> list[tuple[bytes | None, tuple[int, int, int, int] | None]]:
    """The first ``limit`` bytes of each of ``paths`` (all of a shorter file; None when it
    cannot be read) and its size, ``mtime_ns``, ``ctime_ns`` and inode (None when no status
    can be had: a file that cannot be opened is seen by its path), read in parallel with
    the GIL released: ``discover.read_head_seen`` of each."""
