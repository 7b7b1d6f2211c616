"""The team dataset: agentcost's tables as versioned, Hive-partitioned Parquet (the contract).

This module is the one place the dataset's tables, columns and types are written down
(``TABLES``), beside the agents' own tables (``core.schema.AgentTable``: what only one
agent's sessions have, a table per agent that has one, e.g. ``copilot_sessions``, whose
columns its agent declares and ``dataset.json`` lists); the docs' table of it
(docs/contracts.md) is checked against it (tests/core/test_dataset.py).
``agentcost export DIR`` (one machine) and ``agentcost spark`` (a cluster) both write it with
``write_files``, so the two give the same files for the same logs.

The columns are the core's contracts (``core.schema``, ``pricing.call_costs.AGENT_COSTS``)
plus what only the dataset holds (who, each call's share of the bill, each session's costs).
The dataset is read by other people's tools, so it changes only with ``VERSION``: the docs'
table of every column and type is generated from ``TABLES`` and checked by the tests, so a
contract that gains or loses a column fails them until the docs, and ``VERSION``, say so.
``dataset_frames`` selects exactly these columns.

Layout, under ``DIR``::

    dataset.json                                  the contract below, as JSON
    <table>/agent=<agent>/day=<YYYY-MM-DD>/s-<key>.parquet      calls, sessions, agent tables
    issues/agent=<agent>/day=__HIVE_DEFAULT_PARTITION__/i-<key>.parquet

* ``agent`` is ``copilot``, ``claude-code`` or ``codex``; ``day`` is the UTC date the row's
  *session* started (a call keeps its own ``start_time``; reports take the day from that). A
  session without a start time, and every issue, is in ``day=__HIVE_DEFAULT_PARTITION__``
  (read as a null day; an issue of a file that is no agent's log has a null ``agent`` too).
  Both are Hive keys: stored in the path, not in the file, and added by Hive-aware readers.
* Each session's rows of a table are one file, named by a key of its ``session_id``
  (``s-<sha256[:24]>``): a session that grew is replaced by one rename, so a reader sees its
  old rows or its new rows, never half of them and never both. Each run's issues are one file
  per agent, named by a key of who ran it, where, and on which inputs.
* Every file carries ``agentcost.dataset.version`` and ``agentcost.dataset.table`` in its
  Parquet key-value metadata. Money is ``Decimal(38, 18)``; times are UTC milliseconds.
* ``user`` and ``host`` say whose logs a row came from, so many people's exports can share
  one ``DIR``; a session's id stays its own key.

Writing (``write_files``) is idempotent and safe to run concurrently: a file whose bytes are
already there is not touched; any other is written under a hidden temporary name
(``.<name>.<pid>.<random>.tmp``, which Hive, Spark and DuckDB readers skip) in its own
directory, then renamed over its name. Two writers of one file each rename a whole file; the
last one stays.
"""

from __future__ import annotations

import getpass
import hashlib
import io
import json
import os
import secrets
import socket
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analytics.core import schema
from analytics.core.pricing.call_costs import AGENT_COSTS
from analytics.core.schema import MONEY, AgentTable

#: The contract's version: bumped whenever a table's columns or their meaning change.
VERSION = "4"  # 2: calls gained input_tokens_low and input_tokens_high; 3: sessions keep
# what every agent's have, an agent's own columns are its table (``copilot_sessions``); 4: so
# do calls (Copilot's bill of each call, ``billed_nano_aiu``, is ``copilot_calls``)
#: Where the version and the table's name sit in each file's Parquet metadata.
VERSION_KEY, TABLE_KEY = "agentcost.dataset.version", "agentcost.dataset.table"
#: The Hive partition keys, in path order: stored in directory names, not in the files.
PARTITIONS: dict[str, pl.DataType] = {"agent": pl.String(), "day": pl.Date()}
#: The Hive name of a null partition value.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: Who and where: on every table.
WHO: dict[str, pl.DataType] = {"user": pl.String(), "host": pl.String()}


def _without_agent(columns: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """A contract's columns but ``agent``, which the dataset keeps in its path (a partition)."""
    return {name: dtype for name, dtype in columns.items() if name not in PARTITIONS}


#: calls: one row per LLM call, priced (``price.price_calls``), with the call's share of the
#: log's own bill (``periods.with_call_bills``): the per-call truth every report sums.
CALLS: dict[str, pl.DataType] = {
    **WHO,
    **_without_agent(schema.ANALYSIS_CALLS),
    **schema.COSTS,
    **AGENT_COSTS,
    "billed_usd": MONEY,
    "project": pl.String(),
    "bill_share_usd": MONEY,
    "bill_share_split": pl.Boolean(),
}
#: sessions: one row per session, reconciled with its log and priced (``price.price_analysis``).
SESSIONS: dict[str, pl.DataType] = {
    **WHO,
    **_without_agent(schema.ANALYSIS_SESSIONS),
    "rates": pl.String(),
    **{name: dtype for name, dtype in schema.COSTS.items() if dtype == MONEY},
    "unpriced_calls": pl.Int64(),
    "unpriced_models": pl.List(pl.String()),
    "calls_input_tokens": pl.Int64(),
    "calls_output_tokens": pl.Int64(),
    "token_sources": pl.Struct(
        {"observed": pl.Int64(), "calibrated": pl.Int64(), "estimated": pl.Int64()}
    ),
    "billed_usd": MONEY,
    "cost_source": pl.String(),
    "cost_minus_billed_usd": MONEY,
}
#: issues: every input problem, with its file and line (null: the whole file).
ISSUES: dict[str, pl.DataType] = {**WHO, **schema.ISSUES}
#: Every table: its columns in the files (the partition keys are added by Hive readers).
TABLES: dict[str, dict[str, pl.DataType]] = {
    "calls": CALLS,
    "sessions": SESSIONS,
    "issues": ISSUES,
}
#: What each table holds, for ``dataset.json`` and the docs.
DESCRIPTIONS = {
    "calls": "One row per LLM call: tokens, cost under the rate table, share of the log's bill.",
    "sessions": "One row per session, reconciled with its log, with costs.",
    "issues": "Every input problem: file, line (null: the whole file), severity, message.",
}


def resolve_user(given: str | None) -> str | None:
    """Whose logs these are: ``given`` (``--user``), else ``user`` in ``config.toml`` in
    agentcost's config directory (``budget.config_dir``), else the login name; None when
    none of them says (unknown is null)."""
    if given:
        return given
    from analytics.core.budget import config_dir

    try:
        configured = tomllib.loads((config_dir() / "config.toml").read_text()).get("user")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        configured = None
    if isinstance(configured, str) and configured:
        return configured
    try:
        return getpass.getuser() or None
    except (OSError, KeyError):  # no login name in the environment nor the password file
        return None


def this_host() -> str | None:
    """This machine's name (None when it has none)."""
    return socket.gethostname() or None


@dataclass(frozen=True)
class Who:
    """Whose logs, read where: the ``user`` and ``host`` of every row."""

    user: str | None
    host: str | None


def tables(agent_tables: Sequence[AgentTable] = ()) -> dict[str, dict[str, pl.DataType]]:
    """Every table of a dataset: ``TABLES`` and one per agent table (``user`` and ``host``,
    then its columns), by name."""
    return {**TABLES, **{table.name: {**WHO, **table.columns} for table in agent_tables}}


def dataset_frames(
    priced_calls: pl.DataFrame,
    priced_sessions: pl.DataFrame,
    issues: pl.DataFrame,
    who: Who,
    agent_of_file: Mapping[str, str],
    agent_tables: Sequence[tuple[AgentTable, pl.DataFrame]] = (),
) -> dict[str, pl.DataFrame]:
    """The three tables of ``TABLES`` and the ``agent_tables`` (their declarations and rows:
    ``Analysis.agent_tables``), with ``agent`` and ``day`` still as columns, from one priced
    analysis (its sessions as ``Analysis.session_view`` gives them). An agent table's rows
    sit in their sessions' partitions. ``agent_of_file`` names the agent of each log file (an
    issue of any other file has a null agent)."""
    from analytics.core.periods import with_call_bills

    who_columns = [
        pl.lit(who.user, pl.String()).alias("user"),
        pl.lit(who.host, pl.String()).alias("host"),
    ]
    started = priced_sessions.select("session_id", _utc_day(pl.col("start_time")).alias("day"))
    calls = (
        with_call_bills(priced_calls, priced_sessions)
        .rename({"_billed_usd": "bill_share_usd", "_billed_split": "bill_share_split"})
        .join(started, on="session_id", how="left")
        .with_columns(who_columns)
    )
    sessions = priced_sessions.with_columns(
        *who_columns, _utc_day(pl.col("start_time")).alias("day")
    )
    files = pl.DataFrame(
        {"file": list(agent_of_file), "agent": list(agent_of_file.values())},
        schema={"file": pl.String(), "agent": pl.String()},
    )
    problems = issues.join(files, on="file", how="left").with_columns(
        *who_columns, pl.lit(None, pl.Date()).alias("day")
    )
    placed = sessions.select("session_id", "agent", "day")
    own = {
        table.name: _shaped(
            rows.join(placed, on="session_id", how="left").with_columns(who_columns),
            {**WHO, **table.columns},
        ).sort(*table.key, nulls_last=True)
        for table, rows in agent_tables
    }
    return {
        "calls": _shaped(calls, CALLS).sort("session_id", "event_seq", nulls_last=True),
        "sessions": _shaped(sessions, SESSIONS).sort("session_id", nulls_last=True),
        "issues": _shaped(problems, ISSUES).sort(
            "file", "line", "severity", "message", nulls_last=False
        ),
        **own,
    }


def _utc_day(time: pl.Expr) -> pl.Expr:
    """The UTC date of a UTC timestamp."""
    return time.dt.convert_time_zone("UTC").dt.date()


def _shaped(frame: pl.DataFrame, columns: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``frame`` as a table of ``columns``: its columns in order, with their types, and the
    partition keys last."""
    contract = {**columns, **PARTITIONS}
    return frame.select(pl.col(name).cast(dtype) for name, dtype in contract.items())


@dataclass(frozen=True)
class DataFile:
    """One file of the dataset to write: its path under the dataset's directory (POSIX), its
    table and its rows (without the partition keys)."""

    path: str
    table: str
    rows: pl.DataFrame


def key_of(text: str) -> str:
    """A file-name-safe key of ``text`` (24 hex digits of its SHA-256)."""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def run_key(who: Who, inputs: Sequence[str]) -> str:
    """The key of one run's issue files: who ran it, where, and on which inputs."""
    return key_of(json.dumps([who.user, who.host, sorted(inputs)]))


def data_files(frames: Mapping[str, pl.DataFrame], issues_key: str) -> list[DataFile]:
    """The files ``frames`` (``dataset_frames``) are written as: one per session and table
    (in its agent's and start day's partition), one per agent of the issues (``issues_key``:
    ``run_key``)."""
    files = []
    for table in (name for name in frames if name != "issues"):
        for (agent, day, session), rows in _parts(frames[table], ["agent", "day", "session_id"]):
            name = f"s-{key_of(str(session))}.parquet"
            files.append(DataFile(_partition_path(table, agent, day, name), table, rows))
    for (agent,), rows in _parts(frames["issues"], ["agent"]):
        name = f"i-{issues_key}.parquet"
        files.append(DataFile(_partition_path("issues", agent, None, name), "issues", rows))
    return files


def _parts(
    frame: pl.DataFrame, keys: list[str]
) -> Iterable[tuple[tuple[object, ...], pl.DataFrame]]:
    """``frame`` split by ``keys`` (in first-seen order), each part without the partition
    keys."""
    for key, part in frame.partition_by(keys, as_dict=True, maintain_order=True).items():
        yield key, part.drop(*PARTITIONS)


def _partition_path(table: str, agent: object, day: object, name: str) -> str:
    """``<table>/agent=<agent>/day=<day>/<name>``, a null key as Hive's null partition."""
    agent_part = NULL_PARTITION if agent is None else str(agent)
    day_part = NULL_PARTITION if day is None else str(day)
    return f"{table}/agent={agent_part}/day={day_part}/{name}"


def encoded(file: DataFile) -> bytes:
    """The Parquet bytes of ``file``: the same rows give the same bytes, and the metadata
    names the contract's version and the table."""
    buffer = io.BytesIO()
    file.rows.write_parquet(
        buffer,
        compression="zstd",
        statistics=True,
        metadata={VERSION_KEY: VERSION, TABLE_KEY: file.table},
    )
    return buffer.getvalue()


def contract_document(agent_tables: Sequence[AgentTable] = ()) -> dict[str, object]:
    """``dataset.json``: the contract (version, layout, each table's typed columns), the
    agents' own tables (``agent_tables``) after the others."""
    described = {**DESCRIPTIONS, **{table.name: table.description for table in agent_tables}}
    return {
        "generator": "agentcost",
        "dataset_version": VERSION,
        "partitioning": "hive: <table>/agent=<agent>/day=<YYYY-MM-DD, UTC day the session "
        f"started>/<file>.parquet; null keys as {NULL_PARTITION}",
        "tables": {
            name: {
                "description": described[name],
                "columns": [
                    {"name": column, "type": str(dtype)}
                    for column, dtype in {**columns, **PARTITIONS}.items()
                ],
            }
            for name, columns in tables(agent_tables).items()
        },
    }


_CONTRACT_FILE = "dataset.json"


@dataclass
class Changes:
    """What a write did (or, planned, would do): relative paths by kind of change."""

    added: list[str]
    replaced: list[str]
    removed: list[str]
    unchanged: int

    def summary(self) -> str:
        """One line: how many files of each kind."""
        return (
            f"{len(self.added)} added, {len(self.replaced)} replaced, "
            f"{len(self.removed)} removed, {self.unchanged} unchanged"
        )


def write_files(
    directory: Path,
    files: Sequence[DataFile],
    agent_tables: Sequence[AgentTable],
    *,
    plan: bool = False,
    issues_key: str = "",
) -> Changes:
    """Write ``files`` under ``directory`` (see the module docstring), in a dataset whose
    tables are ``TABLES`` and ``agent_tables`` (every agent table the engine knows, whether or
    not these files hold rows of it: ``dataset.json`` lists them all); with ``plan``, only say
    what would change. An older file of one of these sessions in another partition, and an
    issues file of this run (``issues_key``) that this run no longer has, are removed after
    the new files are in place."""
    from analytics.core.errors import cannot_write

    check_target(directory)
    changes = Changes([], [], [], 0)
    try:
        if not plan:
            _put(directory / _CONTRACT_FILE, _contract_bytes(agent_tables))
        existing = _existing(directory, tables(agent_tables))
        wanted = {file.path for file in files}
        for file in files:
            data = encoded(file)
            target = directory / file.path
            if _same(target, data):
                changes.unchanged += 1
                continue
            (changes.replaced if target.exists() else changes.added).append(file.path)
            if not plan:
                _put(target, data)
        names = {file.path.rsplit("/", 1)[1] for file in files}
        issues_name = f"i-{issues_key}.parquet" if issues_key else None
        for path in sorted(existing - wanted):
            name = path.rsplit("/", 1)[1]
            if (name in names and name.startswith("s-")) or name == issues_name:
                changes.removed.append(path)
                if not plan:
                    (directory / path).unlink(missing_ok=True)
    except OSError as err:
        raise cannot_write(directory, err) from None
    return changes


def _contract_bytes(agent_tables: Sequence[AgentTable]) -> bytes:
    return (json.dumps(contract_document(agent_tables), indent=2) + "\n").encode()


def _same(target: Path, data: bytes) -> bool:
    """Whether ``target`` already holds exactly ``data``."""
    try:
        return target.stat().st_size == len(data) and target.read_bytes() == data
    except OSError:
        return False


def _put(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` whole: under a hidden temporary name beside it, then one
    rename (a reader sees the old file or the new one). No ``fsync``: it cost 6 ms a file (of
    about 8 ms per session, measured), and a file a crash left damaged differs from its
    rows' bytes, so the next export of those logs writes it again."""
    if _same(target, data):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _existing(directory: Path, names: Iterable[str]) -> set[str]:
    """The dataset files of the tables ``names`` already under ``directory`` (relative POSIX
    paths)."""
    found: set[str] = set()
    for table in names:
        for root, _, files in os.walk(directory / table):
            relative = Path(root).relative_to(directory).as_posix()
            found.update(
                f"{relative}/{n}" for n in files if n.endswith(".parquet") and not n.startswith(".")
            )
    return found


_SESSION_MARKERS = ("events.jsonl", "workspace.yaml")


def check_target(directory: Path) -> None:
    """Refuse a Copilot session directory (or one inside it) and a directory holding
    anything but a dataset (hidden files aside: another writer's temporary files)."""
    from analytics.core.errors import UsageError

    resolved = directory.resolve()
    for place in (resolved, *resolved.parents):
        if place.name == "session-state" or any(
            (place / marker).is_file() for marker in _SESSION_MARKERS
        ):
            raise UsageError(
                f"{directory} is inside a Copilot session directory ({place}); "
                "export to a directory of your own"
            )
    if not resolved.is_dir():
        if resolved.exists():
            raise UsageError(f"{directory} is a file; name a directory for the dataset")
        return
    visible = {entry.name for entry in resolved.iterdir() if not entry.name.startswith(".")}
    listed = _listed_tables(resolved)
    if visible and not (listed is not None and visible <= {_CONTRACT_FILE, *TABLES, *listed}):
        raise UsageError(
            f"{directory} holds files that are not an agentcost dataset; "
            "choose an empty or new directory"
        )


def _listed_tables(directory: Path) -> list[str] | None:
    """The tables the ``dataset.json`` of an agentcost dataset in ``directory`` lists (the
    agents' own among them); None when ``directory`` has no such file."""
    try:
        document = json.loads((directory / _CONTRACT_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("generator") != "agentcost":
        return None
    listed = document.get("tables")
    return [str(name) for name in listed] if isinstance(listed, dict) else []


def read_table(directory: Path, table: str) -> pl.DataFrame:
    """One table of the dataset under ``directory``, with its partition keys (polars; an
    empty frame of the contract when no file holds it). An agent's own table (one of
    ``TABLES`` it is not) is read with the columns its files have (none: an empty frame)."""
    files = sorted((directory / table).glob("agent=*/day=*/*.parquet"))
    known = TABLES.get(table)
    if known is None:
        if not files:
            return pl.DataFrame()
        return pl.scan_parquet(files, hive_partitioning=True, hive_schema=PARTITIONS).collect()
    contract = {**known, **PARTITIONS}
    if not files:
        return pl.DataFrame(schema=contract)
    return (
        pl.scan_parquet(files, hive_partitioning=True, hive_schema=PARTITIONS)
        .select(pl.col(name).cast(dtype) for name, dtype in contract.items())
        .collect()
    )
