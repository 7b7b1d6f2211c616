"""Read the exact per-call token records in Copilot CLI's ``~/.copilot/session-store.db``.

The store is one SQLite database for all sessions; its table ``assistant_usage_events`` holds
one row per model call with input, output, cache and reasoning tokens and the charge in
nano-AIU. It is the only per-call *input* token record Copilot persists by default (schema doc
§5.3), so agentcost treats it as the truth for the calls it covers. Coverage is partial: a
session without rows is unknown, not free.

Strictly read-only. The store runs in WAL mode and most recent rows live in
``session-store.db-wal``. Opening it in place, even with ``mode=ro``, can make SQLite create or
write ``-shm`` next to it, and agentcost never writes into the user's Copilot directory. So the
database and its ``-wal`` (and a rollback ``-journal``, if any) are copied into a private
temporary directory and the copy is opened; SQLite applies the WAL to the copy. ``-shm`` is not
copied: it is only an index of the WAL, and the first connection to a database rebuilds it.
If the files change while being copied (Copilot is writing), the copy is retried; if they
keep changing the rows are still read and a warning says the newest calls may be missing.

The module also holds what both per-call readers share (this one and ``otel.py``): the
``OBSERVED`` table contract, exact decimal text for nano-AIU, and the final step that numbers
calls within a session and checks the token arithmetic.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Collection, Iterable, Sequence
from contextlib import closing
from decimal import Decimal, InvalidOperation
from pathlib import Path

import polars as pl

from analytics.core.errors import InputError
from analytics.core.schema import (
    ISSUES,
    OBSERVED_USAGE,
    TIMESTAMP,
    combine,
    conform,
    empty,
    with_nulls,
)

#: Keys, after the ``OBSERVED_USAGE`` columns, that let ``tokens.py`` match a per-call record
#: to a call reconstructed from ``events.jsonl``; neither source carries the message's
#: ``apiCallId``. The store gives ``turn_index`` (0-based index of the user turn in the
#: session) and ``finish_reason`` (``tool_calls`` for a message with tool requests, ``stop``
#: for a final answer), which with order and model identify the call (schema doc §5.3).
#: OpenTelemetry gives ``interaction_id`` and ``turn_id``, the same ids ``assistant.turn_start``
#: carries, so those rows join exactly. ``conform(frame, OBSERVED_USAGE)`` drops them.
OBSERVED_MATCH_KEYS: dict[str, pl.DataType] = {
    "turn_index": pl.Int64(),
    "interaction_id": pl.String(),
    "turn_id": pl.String(),
    "finish_reason": pl.String(),
}

#: What both per-call readers return: the contract, then the match keys.
OBSERVED: dict[str, pl.DataType] = combine(OBSERVED_USAGE, OBSERVED_MATCH_KEYS)

#: One problem: (file, line or None, severity, message), as in the ISSUES contract.
IssueRow = tuple[str, int | None, str, str]

#: The schema version the column mapping was checked against (CLI 1.0.80 to 1.0.91).
KNOWN_SCHEMA_VERSION = 8

_TABLE = "assistant_usage_events"
#: Files that together are the database's current state. ``-shm`` is deliberately absent.
_STATE_SUFFIXES = ("", "-wal", "-journal")
_COPY_ATTEMPTS = 3
#: Range of decimal exponents ``exact_decimal`` accepts: that of ``schema.MONEY``.
_DIGITS, _SMALLEST_DIGIT = 38, -18

#: Store columns read, as named in the vendor DDL; each lands in the output column of that name.
_COUNT_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "turn_index",
)
_TEXT_COLUMNS = (
    "session_id",
    "agent_id",
    "parent_tool_call_id",
    "model",
    "initiator",
    "finish_reason",
)
#: The row's itemised bill, with Copilot's prices (``[{tokenType, tokenCount, costPerBatch,
#: batchSize}]``, no model: the row's), kept as raw JSON for ``log_prices.py``.
_DETAILS = "token_details_json"
_READ_COLUMNS = (*_TEXT_COLUMNS, *_COUNT_COLUMNS, "total_nano_aiu", "created_at", _DETAILS)


def read_session_store(
    path: Path, session_ids: Collection[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read ``assistant_usage_events`` into (``OBSERVED`` rows, ``ISSUES`` rows).

    One row per stored model call: ``source_line`` is the row id, ``seq`` the call's order in
    its session (by row id, which is the order Copilot recorded the calls), ``total_nano_aiu``
    the exact integer as text. ``session_ids`` limits the rows to those sessions.

    A missing table, missing columns or an unknown ``schema_version`` become issues and the
    columns that can be read are still read; an unreadable or corrupt file becomes an issue
    naming it. Only a path that does not exist raises (``InputError``).

    >>> usage, issues = read_session_store(Path.home() / ".copilot" / "session-store.db")
    ... # doctest: +SKIP
    """
    if not path.is_file():
        raise InputError(
            f"{path}: not a file. Hint: Copilot CLI keeps it at ~/.copilot/session-store.db "
            "(or $COPILOT_HOME/session-store.db)."
        )
    file = str(path)
    issues: list[IssueRow] = []
    try:
        with tempfile.TemporaryDirectory(prefix="agentcost-store-") as private:
            copy, copy_issues = _private_copy(path, Path(private))
            issues += copy_issues
            with closing(sqlite3.connect(copy)) as db:
                db.execute("PRAGMA query_only = ON")
                frame, read_issues = _read_usage(db, file, session_ids)
    except (OSError, sqlite3.Error) as exc:
        issues.append(
            (
                file,
                None,
                "error",
                f"cannot read the session store: {exc}. Hint: check that the file is a "
                "readable SQLite database; per-call tokens from it are missing.",
            )
        )
        return empty(OBSERVED), issues_frame(issues)
    # The store's rows carry no turn ids (only OpenTelemetry does).
    ids = {name: OBSERVED_MATCH_KEYS[name] for name in ("interaction_id", "turn_id")}
    usage, checks = finish_observed(with_nulls(frame, ids), ["source_line"])
    return usage, pl.concat([issues_frame([*issues, *read_issues]), checks])


def _private_copy(path: Path, into: Path) -> tuple[Path, list[IssueRow]]:
    """Copy the database's state files into ``into``; retry while Copilot is writing them."""
    for _ in range(_COPY_ATTEMPTS):
        before = _fingerprint(path)
        for old in into.iterdir():
            old.unlink()
        for suffix in _STATE_SUFFIXES:
            source = path.with_name(path.name + suffix)
            if source.is_file():
                shutil.copyfile(source, into / source.name)
        if _fingerprint(path) == before:
            return into / path.name, []
    warning = (
        str(path),
        None,
        "warning",
        "the session store changed while it was copied (Copilot is running); calls recorded "
        "during the copy may be missing. Hint: run again when Copilot is idle.",
    )
    return into / path.name, [warning]


def _fingerprint(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Size and modification time of each state file, to notice a write during the copy."""
    stats = []
    for suffix in _STATE_SUFFIXES:
        try:
            stat = path.with_name(path.name + suffix).stat()
        except FileNotFoundError:
            continue
        stats.append((suffix, stat.st_size, stat.st_mtime_ns))
    return tuple(stats)


def _read_usage(
    db: sqlite3.Connection, file: str, session_ids: Collection[str] | None
) -> tuple[pl.DataFrame, list[IssueRow]]:
    """Select the usage rows (every value as text) and type them; schema problems are issues."""
    issues = _schema_version_issues(db, file)
    present = {row[1] for row in db.execute(f"PRAGMA table_info({_TABLE})")}
    if not present:
        issues.append(
            (
                file,
                None,
                "warning",
                f"no table {_TABLE}: this Copilot CLI version records no per-call usage. "
                "Hint: token counts come from events.jsonl only.",
            )
        )
        return pl.DataFrame(), issues
    if "session_id" not in present:
        issues.append(
            (
                file,
                None,
                "error",
                f"table {_TABLE} has no session_id column, so its rows cannot be attributed "
                "to sessions. Hint: report this Copilot CLI version to agentcost.",
            )
        )
        return pl.DataFrame(), issues
    missing = [name for name in _READ_COLUMNS if name not in present]
    if missing:
        issues.append(
            (
                file,
                None,
                "warning",
                f"table {_TABLE} lacks columns {', '.join(missing)}; they are left unknown. "
                "Hint: a different Copilot CLI version wrote this store.",
            )
        )
    selected = ", ".join(
        f"CAST({name} AS TEXT)" if name in present else "NULL" for name in _READ_COLUMNS
    )
    query = f"SELECT rowid, {selected} FROM {_TABLE}"
    parameters: tuple[str, ...] = ()
    if session_ids is not None:
        query += " WHERE session_id IN (SELECT value FROM json_each(?))"
        parameters = (json.dumps(sorted(session_ids)),)
    rows = db.execute(query + " ORDER BY rowid", parameters).fetchall()
    columns = list(zip(*rows, strict=True)) or [()] * (len(_READ_COLUMNS) + 1)
    raw = pl.DataFrame(
        {
            "source_line": pl.Series(columns[0], dtype=pl.Int64),
            **{
                name: pl.Series(values, dtype=pl.String)
                for name, values in zip(_READ_COLUMNS, columns[1:], strict=True)
            },
        }
    )
    nano = [exact_decimal(value) for value in raw["total_nano_aiu"]]
    typed = raw.with_columns(
        pl.lit(file).alias("source_file"),
        *(pl.col(name).cast(pl.Int64, strict=False).alias(name) for name in _COUNT_COLUMNS),
        pl.Series("total_nano_aiu", nano, dtype=pl.String),
        _utc_timestamp(pl.col("created_at")).alias("created_at"),
        pl.col(_DETAILS).alias("token_details"),
    )
    issues += _unusable_values(raw, typed, file)
    return typed, issues


def _schema_version_issues(db: sqlite3.Connection, file: str) -> list[IssueRow]:
    """A warning unless ``schema_version`` says the store has the layout this reader knows."""
    try:
        (version,) = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    except sqlite3.OperationalError:
        version = None
    if isinstance(version, int) and version >= KNOWN_SCHEMA_VERSION:
        return []
    found = "no schema_version" if version is None else f"schema_version {version}"
    return [
        (
            file,
            None,
            "warning",
            f"{found}; this reader knows version {KNOWN_SCHEMA_VERSION} (Copilot CLI 1.0.80+) "
            "and reads the columns that are present. Hint: update Copilot CLI for complete "
            "per-call records.",
        )
    ]


def _utc_timestamp(text: pl.Expr) -> pl.Expr:
    """Parse ``created_at``: ISO 8601 with ``Z`` or an offset, or SQLite's UTC ``datetime()``."""
    normalized = text.str.strip_chars().str.replace(r"Z$", "+00:00").str.replace("T", " ")
    return pl.coalesce(
        normalized.str.to_datetime("%Y-%m-%d %H:%M:%S%.f%:z", time_unit="ms", strict=False),
        normalized.str.to_datetime(
            "%Y-%m-%d %H:%M:%S%.f", time_unit="ms", time_zone="UTC", strict=False
        ),
    ).cast(TIMESTAMP)


def _unusable_values(raw: pl.DataFrame, typed: pl.DataFrame, file: str) -> list[IssueRow]:
    """A warning per stored value that is present but could not be typed (left null)."""
    issues: list[IssueRow] = []
    for name in (*_COUNT_COLUMNS, "total_nano_aiu", "created_at"):
        bad = raw.select("source_line", name).filter(
            raw[name].is_not_null() & typed[name].is_null()
        )
        issues += [
            (file, line, "warning", f"{name} {value!r} is not a valid value; left unknown")
            for line, value in bad.iter_rows()
        ]
    return issues


def finite_decimal(value: object) -> Decimal | None:
    """A finite ``Decimal`` from an int, a ``Decimal`` or numeric text; else None (a bool,
    a float, other text, infinity or NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def exact_decimal(value: object) -> str | None:
    """Canonical decimal text of a number, or None; never goes through a binary float.

    Accepts ints, ``Decimal`` (JSON parsed with ``parse_float=Decimal``) and numeric text.
    Trailing fractional zeros are dropped (``1451505000.0`` -> ``"1451505000"``), so the same
    charge reads the same from every source. Values outside what ``MONEY`` can hold (38 digits,
    18 after the point) are refused rather than rounded.

    >>> exact_decimal("1451505000.0"), exact_decimal(Decimal("0.50")), exact_decimal("x")
    ('1451505000', '0.5', None)
    """
    number = finite_decimal(value)
    if number is None:
        return None
    if number.is_zero():
        return "0"
    if not _SMALLEST_DIGIT <= number.adjusted() < _DIGITS:
        return None
    text = format(number, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def issues_frame(rows: Iterable[IssueRow]) -> pl.DataFrame:
    """The ISSUES table from (file, line, severity, message) tuples."""
    rows = list(rows)
    if not rows:
        return empty(ISSUES)
    return pl.DataFrame(rows, schema=dict(ISSUES), orient="row")


def finish_observed(
    frame: pl.DataFrame, order_by: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Number the calls within each session by ``order_by``, conform to ``OBSERVED``, check.

    The checks are warnings on rows whose counts contradict Copilot's token semantics:
    input tokens include cache reads and writes, and output tokens include reasoning. A row
    that breaks them was probably written by a producer that counts differently.
    """
    if frame.is_empty():
        return empty(OBSERVED), empty(ISSUES)
    usage = conform(
        frame.sort(order_by, nulls_last=True, maintain_order=True).with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).over("session_id").alias("seq")
        ),
        OBSERVED,
    )
    cached = pl.col("cache_read_tokens").fill_null(0) + pl.col("cache_write_tokens").fill_null(0)
    checks = [
        (
            pl.col("input_tokens") < cached,
            "input_tokens is less than cache_read_tokens + cache_write_tokens; Copilot counts "
            "input including cache, so this record may count it differently",
        ),
        (
            pl.col("output_tokens") < pl.col("reasoning_tokens"),
            "output_tokens is less than reasoning_tokens; Copilot counts output including "
            "reasoning, so this record may count it differently",
        ),
    ]
    issues = pl.concat(
        [
            usage.filter(condition.fill_null(False)).select(
                pl.col("source_file").alias("file"),
                pl.col("source_line").alias("line"),
                pl.lit("warning").alias("severity"),
                pl.lit(message).alias("message"),
            )
            for condition, message in checks
        ]
    )
    return usage, conform(issues, ISSUES)
