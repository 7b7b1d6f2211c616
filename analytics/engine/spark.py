"""The engine inside Spark: many people's logs in, the team dataset (``core.dataset``) out.

``agentcost spark LOGS... --output DIR``, ``python -m analytics.engine.spark LOGS... --output DIR``
or ``spark-submit <this file> LOGS... --output DIR``. Each of ``LOGS`` is one person's logs
(a home such as ``homes/alice``, or ``homes/alice/.copilot``); the ``user`` of its rows is
its own name, leaving out agent directories (``.copilot``, ``session-state``, ...). The paths
must be readable at the same place on the driver and every executor (a local disk in local
mode, a shared mount on a cluster).

How the work is split, and why the result equals ``agentcost export`` run by each person:

1. The driver discovers each person's logs (``agents.discover``) and cuts them into *units*
   that are analysed whole: a Copilot session directory (with its home's token records), a
   directory of flat Copilot logs, all of one person's Claude Code files (a request copied
   between projects counts once within a home), all of one person's Codex files. Units are
   packed into tasks of about ``TASK_BYTES`` of logs, one person per task. Discovery problems
   (a file that is no log, a path with nothing in it) become ``issues`` rows here.
2. Stage 1, in the executors (``mapInArrow``): each task runs ``analytics.analyze`` on its
   units and answers Arrow IPC blobs: calls, sessions, issues and the prices its logs quote.
   A task whose analysis raises gives an ``issues`` row per file instead: a bad log never
   fails the job.
3. Cross-session work: a person's calls are priced with every price that person's logs quote
   (as their own export does), so the quoted prices are gathered per user on the driver (a
   few rows) and shipped with stage 2.
4. Stage 2, in the executors: each task's tables are priced (``price.price_analysis``, the one
   entry point), shaped by ``dataset.dataset_frames`` and written by ``dataset.write_files``:
   the same files, bytes and names as ``export``. A retried task writes the same bytes under
   the same names, so its output is there once.
5. The driver writes each input's issues (its discovery problems and its tasks' issues, a
   few rows) as one file per agent under the key that person's own export uses.

Data moves as Arrow record batches of whole tables (one row per task and table), never as
Python objects per row.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from analytics.agents.discover import COPILOT, Found, discover
from analytics.agents.pipeline import agent_tables
from analytics.core import registry
from analytics.core.dataset import (
    ISSUES,
    Who,
    data_files,
    dataset_frames,
    run_key,
    this_host,
    write_files,
)
from analytics.core.errors import AgentcostError
from analytics.core.schema import joined

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import SparkSession

#: About this many bytes of logs per task (a unit larger than this is one task alone).
TASK_BYTES = 64 * 2**20
#: Path parts that name an agent's home or its log folders, not a person.
_AGENT_DIRS = registry.home_parts()
#: Stage 1's answer: one row per task and table, the table as Arrow IPC.
_BLOBS = "task long, user string, source string, host string, kind string, ipc binary"
#: Stage 2's answer: one row per task, what it wrote.
_WRITTEN = (
    "task long, added long, replaced long, removed long, unchanged long, "
    "calls long, sessions long, issues long"
)


def user_of(path: str) -> str:
    """The person a path of logs belongs to: its last part that is not an agent directory
    (``homes/alice/.copilot`` -> ``alice``)."""
    parts = [part for part in Path(path).parts if part not in ("/", "")]
    people = [part for part in parts if part not in _AGENT_DIRS]
    return people[-1] if people else path


@dataclass(frozen=True)
class Task:
    """A set of units analysed together, on one executor: one person's."""

    task: int
    user: str
    paths: tuple[str, ...]
    source: str  # the input path (one person's logs) the units came from


def plan_tasks(
    inputs: Sequence[str], task_bytes: int = TASK_BYTES
) -> tuple[list[Task], pl.DataFrame]:
    """The tasks of ``inputs`` (each one person's logs) and the discovery problems of each
    (``source``, the input path, then the ``issues`` columns file, line, severity, message)."""
    tasks: list[Task] = []
    problems = []
    for path in inputs:
        user = user_of(path)
        try:
            found = discover([Path(path)])
        except AgentcostError as error:  # nothing readable there: an issue, not a failure
            problems.append((path, path, "error", str(error)))
            continue
        problems += [(path, file, "warning", what) for file, what in found.problems]
        problems += [(path, file, "error", what) for file, what in found.not_logs]
        for paths in _packed(_units(found), task_bytes):
            tasks.append(Task(len(tasks), user, tuple(paths), path))
    issues = pl.DataFrame(
        {
            "source": [p[0] for p in problems],
            "file": [p[1] for p in problems],
            "line": [None] * len(problems),
            "severity": [p[2] for p in problems],
            "message": [p[3] for p in problems],
        },
        schema={
            "source": pl.String(),
            **{name: ISSUES[name] for name in ("file", "line", "severity", "message")},
        },
    )
    return tasks, issues


def _units(found: Found) -> list[tuple[list[str], int]]:
    """The units of one person's logs (see the module docstring): (paths, bytes)."""
    units: dict[str, tuple[list[str], int]] = {}

    def add(key: str, path: str, size: int) -> None:
        paths, total = units.get(key, ([], 0))
        units[key] = ([*paths, path], total + size)

    for log in found.logs:
        session_dir = log.path.name == "events.jsonl"
        key = str(log.path.parent)
        add(f"{COPILOT}:{key}", key if session_dir else str(log.path), _size(log.path))
    for agent, log in found.agent_logs:
        add(agent, str(log.path), _size(log.path))
    return [(sorted(set(paths)), size) for paths, size in units.values()]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _packed(units: list[tuple[list[str], int]], task_bytes: int) -> Iterator[list[str]]:
    """Units packed in order into groups of about ``task_bytes``."""
    group: list[str] = []
    size = 0
    for paths, unit_size in units:
        if group and size + unit_size > task_bytes:
            yield group
            group, size = [], 0
        group += paths
        size += unit_size
    if group:
        yield group


def _ipc(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    return buffer.getvalue()


def _frame(blob: bytes) -> pl.DataFrame:
    return pl.read_ipc(io.BytesIO(blob))


def analyse_task(task: Task) -> dict[str, pl.DataFrame]:
    """Stage 1 of one task: its unpriced calls and sessions, its issues and the prices its
    logs quote. Discovery's own problems are the driver's (a unit's file is a log)."""
    from analytics.engine.analyze import analyze

    paths = [Path(path) for path in task.paths]
    try:
        found = replace(discover(paths), problems=[], not_logs=[])
        result = analyze(paths, keep_events=False, found=found, agent_items=False)
        return {
            "calls": result.call_view,
            "sessions": result.sessions,
            "issues": result.issues,
            "log_prices": result.log_prices,
            "agents": _agents(found),
            **{table.name: rows for table, rows in (*result.agent_tables, *result.call_table_rows)},
        }
    except Exception as error:  # a task never fails the job: its files get an issue each
        message = f"not analysed: {type(error).__name__}: {error}"
        return {
            "issues": pl.DataFrame(
                {
                    "file": list(task.paths),
                    "line": [None] * len(task.paths),
                    "severity": ["error"] * len(task.paths),
                    "message": [message] * len(task.paths),
                },
                schema={name: ISSUES[name] for name in ("file", "line", "severity", "message")},
            )
        }


def _agents(found: Found) -> pl.DataFrame:
    agents = found.agent_of_file()
    return pl.DataFrame({"file": list(agents), "agent": list(agents.values())})


def _stage_one(host: str | None) -> Any:
    """The ``mapInArrow`` function of stage 1: task rows in, blob rows out."""

    def stage(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            tasks = pl.DataFrame(pl.from_arrow(batch))
            for row in tasks.iter_rows(named=True):  # one row per task, not per log row
                task = Task(row["task"], row["user"], tuple(row["paths"]), row["source"])
                tables = analyse_task(task)
                yield (
                    pl.DataFrame(
                        {
                            "task": [task.task] * len(tables),
                            "user": [task.user] * len(tables),
                            "source": [task.source] * len(tables),
                            "host": [host] * len(tables),
                            "kind": list(tables),
                            "ipc": [_ipc(frame) for frame in tables.values()],
                        },
                        schema={
                            "task": pl.Int64(),
                            "user": pl.String(),
                            "source": pl.String(),
                            "host": pl.String(),
                            "kind": pl.String(),
                            "ipc": pl.Binary(),
                        },
                    )
                    .to_arrow()
                    .to_batches()[0]
                )

    return stage


def _stage_two(output: str, rates: str, quoted: dict[str, bytes]) -> Any:
    """The ``mapInArrow`` function of stage 2: a task's blobs in, priced and written."""

    def stage(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        frames = [pl.DataFrame(pl.from_arrow(batch)) for batch in batches]
        if not frames:
            return
        blobs = pl.concat(frames)
        for (task,), rows in blobs.partition_by("task", as_dict=True).items():
            tables = {
                kind: _frame(ipc) for kind, ipc in zip(rows["kind"], rows["ipc"], strict=True)
            }
            who = Who(rows["user"][0], rows["host"][0])
            counts = write_task(Path(output), int(str(task)), who, tables, rates, quoted)
            yield (
                pl.DataFrame([counts], orient="row", schema=_WRITTEN_SCHEMA)
                .to_arrow()
                .to_batches()[0]
            )

    return stage


_WRITTEN_SCHEMA = {name.split()[0]: pl.Int64() for name in _WRITTEN.split(", ")}


def write_task(
    output: Path,
    task: int,
    who: Who,
    tables: dict[str, pl.DataFrame],
    rates: str,
    quoted: dict[str, bytes],
) -> list[int]:
    """Stage 2 of one task: price its tables with its user's quoted prices and write its
    calls and sessions (its issues are written by the driver, a file per input, as that
    person's export writes them); the counts of ``_WRITTEN``."""
    from analytics.core.pricing.price import price_analysis
    from analytics.core.pricing.rates import load_rates

    if "calls" not in tables:  # the task failed: its issues alone
        return [task, 0, 0, 0, 0, 0, 0, 0]
    log_prices = _frame(quoted[str(who.user)]) if str(who.user) in quoted else None
    known = agent_tables()
    own = [(table, tables[table.name]) for table in known if table.name in tables]
    calls, sessions = price_analysis(
        tables["calls"], joined(tables["sessions"], own), load_rates(rates), {}, log_prices
    )
    frames = dataset_frames(calls, sessions, tables["issues"].clear(), who, {}, own)
    changes = write_files(output, data_files(frames, ""), known)
    return [
        task,
        len(changes.added),
        len(changes.replaced),
        len(changes.removed),
        changes.unchanged,
        frames["calls"].height,
        frames["sessions"].height,
        0,
    ]


def _priced_empty(rates: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Priced calls and sessions with no row (the contracts' columns)."""
    from analytics.core.pricing.price import price_analysis
    from analytics.core.pricing.rates import load_rates
    from analytics.core.schema import ANALYSIS_CALLS, ANALYSIS_SESSIONS, empty

    return price_analysis(
        empty(ANALYSIS_CALLS),
        empty(ANALYSIS_SESSIONS),
        load_rates(rates),
    )


def session(master: str | None = None) -> SparkSession:
    """The Spark session: ``master`` if given, else the one ``spark-submit`` set, else
    ``local[2]``. Workers run this interpreter (``PYSPARK_PYTHON``), which has agentcost."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("agentcost")
    if master or not SparkConf().contains("spark.master"):
        builder = builder.master(master or "local[2]")
    spark = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(
    inputs: Sequence[str],
    output: Path,
    *,
    rates: str = "github-copilot",
    master: str | None = None,
    spark: SparkSession | None = None,
    task_bytes: int = TASK_BYTES,
) -> str:
    """Analyse ``inputs`` (each one person's logs) in Spark and write the dataset under
    ``output``; a summary of what was written."""
    from analytics.core.dataset import check_target
    from analytics.core.pricing.rates import load_rates

    check_target(output)
    load_rates(rates)  # a bad --rates is the user's error, before any job starts
    try:
        import pyspark  # noqa: F401
    except ImportError:
        from analytics.core.errors import UsageError

        raise UsageError("agentcost spark needs PySpark: pip install 'agentcost[spark]'") from None
    spark = spark or session(master)
    host = this_host()
    tasks, problems = plan_tasks(inputs, task_bytes)
    written = [0] * 8
    found: list[tuple[str, tuple[str, pl.DataFrame]]] = []
    if tasks:
        frame = spark.createDataFrame(
            [(t.task, t.user, list(t.paths), t.source) for t in tasks],
            "task long, user string, paths array<string>, source string",
        ).repartition(len(tasks), "task")
        blobs = frame.mapInArrow(_stage_one(host), _BLOBS).persist()
        quoted = _quoted(blobs)
        # each task's blobs are in its own partition already (mapInArrow keeps partitions)
        counts = blobs.mapInArrow(_stage_two(str(output), rates, quoted), _WRITTEN)
        for row in counts.collect():  # one small row per task
            written = [a + b for a, b in zip(written, row, strict=True)]
        found = [
            (row["source"], (row["kind"], _frame(row["ipc"])))
            for row in blobs.filter("kind IN ('issues', 'agents')")
            .select("source", "kind", "ipc")
            .collect()  # a few rows per task: the issues and which agent wrote each file
        ]
        blobs.unpersist()
    for source in inputs:  # each input's issues in one file per agent, as its export's
        found_here = [frame for key, frame in found if key == source]
        issues = pl.concat(
            [problems.filter(pl.col("source") == source).drop("source")]
            + [frame for kind, frame in found_here if kind == "issues"]
        )
        agents = pl.concat(
            [frame for kind, frame in found_here if kind == "agents"]
            or [pl.DataFrame(schema={"file": pl.String(), "agent": pl.String()})]
        )
        who = Who(user_of(source), host)
        key = run_key(who, [str(Path(source).resolve())])
        calls, sessions = _priced_empty(rates)
        agent_of = dict(zip(agents["file"], agents["agent"], strict=True))
        frames = dataset_frames(calls, sessions, issues, who, agent_of)
        changes = write_files(output, data_files(frames, key), agent_tables(), issues_key=key)
        written[1] += len(changes.added)
        written[2] += len(changes.replaced)
        written[3] += len(changes.removed)
        written[4] += changes.unchanged
        written[7] += frames["issues"].height
    return (
        f"{len(tasks)} tasks; {written[5]} calls, {written[6]} sessions, {written[7]} issues; "
        f"files: {written[1]} added, {written[2]} replaced, {written[3]} removed, "
        f"{written[4]} unchanged"
    )


def _quoted(blobs: Any) -> dict[str, bytes]:
    """Every price each user's logs quote, as one Arrow IPC table per user."""
    rows = blobs.filter("kind = 'log_prices'").select("user", "ipc").collect()
    by_user: dict[str, list[pl.DataFrame]] = {}
    for row in rows:
        by_user.setdefault(row["user"], []).append(_frame(row["ipc"]))
    return {
        user: _ipc(pl.concat(frames).unique(maintain_order=True))
        for user, frames in by_user.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m analytics.engine.spark LOGS... --output DIR`` (and ``spark-submit``)."""
    parser = argparse.ArgumentParser(
        prog="analytics.engine.spark", description=__doc__.split("\n")[0]
    )
    parser.add_argument("logs", nargs="+", help="one person's logs per path")
    parser.add_argument("--output", required=True, type=Path, help="dataset directory")
    parser.add_argument("--rates", default="github-copilot")
    parser.add_argument("--master", default=None)
    args = parser.parse_args(argv)
    try:
        print(run(args.logs, args.output, rates=args.rates, master=args.master), file=sys.stderr)
    except AgentcostError as error:
        print(f"agentcost: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
