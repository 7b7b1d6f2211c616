"""The period reports as SQL over the team dataset: DuckDB and Spark SQL, where the data is.

``agentcost daily|weekly|monthly`` sums priced calls per period of the user's time zone
(``analytics.core.periods``). Over the dataset (``analytics.core.dataset``) the same report is one
query on the ``calls`` table, whose rows already carry everything a period needs: the call's
``start_time`` (UTC), its ``cost_usd``, its share of the log's bill (``bill_share_usd``,
``bill_share_split``), its ``project``, ``user`` and (a Hive key) ``agent``. So the query is a
plain ``GROUP BY``, and gives the rows ``period_report`` gives on the logs:

* ``period``: the local date of ``start_time`` in ``zone`` as ``2026-08-03``, the ISO week
  ``2026-W32`` or the month ``2026-08``; ``period_start`` its first day. A call without a
  start time has a null period (and is left out by a window).
* ``sessions`` distinct sessions, ``calls`` rows, token sums, ``unknown_token_calls``,
  ``estimated_calls``;
  money sums are exact ``DECIMAL(38, 18)``; a sum is null when the group has rows but none
  is known (unknown is not zero), zero over no rows.

``period_query(period, zone, by, dialect)`` is the query, for ``duckdb`` or ``spark``, over a
relation named ``calls``, with ``{since}``/``{until}`` bound as parameters (DuckDB) or
inlined as date literals (Spark). ``totals_query`` is the one-row total. Use them as they
are, e.g. in DuckDB::

    CREATE VIEW calls AS SELECT * FROM read_parquet('DIR/calls/*/*/*.parquet',
        hive_partitioning = true, hive_types = {'agent': VARCHAR, 'day': DATE});

or in Spark: ``spark.read.parquet("DIR/calls").createOrReplaceTempView("calls")`` with the
session time zone set to UTC. ``duckdb_report`` and ``spark_report`` run them and return the
same ``PeriodReport`` as ``periods.period_report``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

import polars as pl

from analytics.core.periods import TOKEN_COLUMNS, Period, PeriodReport
from analytics.core.schema import MONEY

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Dialect = Literal["duckdb", "spark"]
#: Breakdowns over the dataset: ``periods.Breakdown`` and the person.
Breakdown = Literal["user", "agent", "model", "project", "session"]
_KEY = {
    "user": "user",
    "agent": "agent",
    "model": "model",
    "project": "project",
    "session": "session_id",
}


def _local_day(dialect: Dialect, zone: str) -> str:
    """The local date of ``start_time`` in ``zone`` (a quoted IANA name, checked by the caller)."""
    if dialect == "duckdb":
        return f"CAST(timezone('{zone}', start_time) AS DATE)"
    return f"to_date(from_utc_timestamp(start_time, '{zone}'))"


def _label(dialect: Dialect, period: Period) -> str:
    """The period's name of the local date ``d``."""
    if period == "week":
        if dialect == "duckdb":
            return "CAST(isoyear(d) AS VARCHAR) || '-W' || lpad(CAST(week(d) AS VARCHAR), 2, '0')"
        return (
            "concat(CAST(extract(YEAROFWEEK FROM d) AS STRING), '-W', "
            "lpad(CAST(weekofyear(d) AS STRING), 2, '0'))"
        )
    if dialect == "duckdb":
        return "strftime(d, '%Y-%m-%d')" if period == "day" else "strftime(d, '%Y-%m')"
    return "date_format(d, 'yyyy-MM-dd')" if period == "day" else "date_format(d, 'yyyy-MM')"


def _start(period: Period) -> str:
    """The first day of the period of ``d`` (the same words in both dialects)."""
    return "d" if period == "day" else f"CAST(date_trunc('{period}', d) AS DATE)"


def _known_sum(column: str, money: bool = False) -> str:
    """``periods.known_sum``: null when there are rows but none known; zero over no rows."""
    kind = "DECIMAL(38, 18)" if money else "BIGINT"
    return (
        f"CAST(CASE WHEN count({column}) > 0 OR count(*) = 0 "
        f"THEN coalesce(sum({column}), 0) END AS {kind})"
    )


def _aggregates() -> str:
    return ",\n    ".join(
        [
            "CAST(count(DISTINCT session_id) AS BIGINT) AS sessions",
            "CAST(count(*) AS BIGINT) AS calls",
            *(f"{_known_sum(c)} AS {c}" for c in TOKEN_COLUMNS),
            "CAST(count(*) - count(input_tokens) AS BIGINT) AS unknown_token_calls",
            "CAST(coalesce(sum(CASE WHEN token_source = 'estimated' THEN 1 ELSE 0 END), 0)"
            " AS BIGINT) AS estimated_calls",
            f"{_known_sum('cost_usd', money=True)} AS cost_usd",
            "CAST(count(*) - count(cost_usd) AS BIGINT) AS unpriced_calls",
            f"{_known_sum('bill_share_usd', money=True)} AS billed_usd",
            "CAST(coalesce(sum(CASE WHEN bill_share_split THEN 1 ELSE 0 END), 0) AS BIGINT)"
            " AS billed_split_calls",
        ]
    )


def _windowed(
    dialect: Dialect, zone: str, period: Period, since: date | None, until: date | None
) -> str:
    """The calls with their local date ``d``, period and period start, in the window."""
    where = []
    if since is not None:
        where.append("d >= " + ("$since" if dialect == "duckdb" else f"DATE '{since.isoformat()}'"))
    if until is not None:
        where.append("d <= " + ("$until" if dialect == "duckdb" else f"DATE '{until.isoformat()}'"))
    return (
        f"SELECT *, {_label(dialect, period)} AS period, {_start(period)} AS period_start\n"
        f"  FROM (SELECT *, {_local_day(dialect, zone)} AS d FROM calls) AS local_calls\n"
        + (f"  WHERE {' AND '.join(where)}\n" if where else "")
    )


def period_query(
    period: Period,
    zone: str,
    by: Breakdown | None = None,
    dialect: Dialect = "duckdb",
    since: date | None = None,
    until: date | None = None,
) -> str:
    """One row per period (and ``by`` key) of the ``calls`` relation, as ``period_report``."""
    keys = ["period", "period_start"] + ([_KEY[by]] if by else [])
    order = ", ".join(f"{k} ASC NULLS LAST" for k in keys)
    return (
        f"SELECT '{zone}' AS timezone, {', '.join(keys)},\n    {_aggregates()}\n"
        f"FROM ({_windowed(dialect, zone, period, since, until)}) AS periods\n"
        f"GROUP BY {', '.join(keys)}\nORDER BY {order}"
    )


def totals_query(
    period: Period,
    zone: str,
    dialect: Dialect = "duckdb",
    since: date | None = None,
    until: date | None = None,
) -> str:
    """The one-row total of ``period_query`` (``period`` is ``total``)."""
    return (
        f"SELECT '{zone}' AS timezone, 'total' AS period,\n    {_aggregates()}\n"
        f"FROM ({_windowed(dialect, zone, period, since, until)}) AS periods"
    )


def _checked_zone(zone: str) -> str:
    """``zone`` if it is an IANA name (it is put into SQL text)."""
    from zoneinfo import ZoneInfo

    ZoneInfo(zone)  # raises for an unknown name
    if "'" in zone:
        raise ValueError(f"not a time zone: {zone!r}")
    return zone


#: The columns and types of a report's rows (``period_report``'s), by breakdown.
def _schema(by: Breakdown | None, totals: bool) -> dict[str, pl.DataType]:
    head: dict[str, pl.DataType] = {"timezone": pl.String(), "period": pl.String()}
    if not totals:
        head["period_start"] = pl.Date()
        if by:
            head[_KEY[by]] = pl.String()
    counts = {name: pl.Int64() for name in ("sessions", "calls", *TOKEN_COLUMNS)}
    return {
        **head,
        **counts,
        "unknown_token_calls": pl.Int64(),
        "estimated_calls": pl.Int64(),
        "cost_usd": MONEY,
        "unpriced_calls": pl.Int64(),
        "billed_usd": MONEY,
        "billed_split_calls": pl.Int64(),
    }


class Window(TypedDict, total=False):
    """A report's rows and days: a row per ``by`` key within each period (none: one row per
    period), over the calls starting ``since``..``until`` (inclusive; none: unbounded)."""

    by: Breakdown | None
    since: date | None
    until: date | None


def duckdb_report(
    directory: Path, *, period: Period, zone: str, **window: Unpack[Window]
) -> PeriodReport:
    """The period report of the dataset under ``directory``, computed by DuckDB reading the
    Parquet in place."""
    import duckdb

    zone = _checked_zone(zone)
    parameters: dict[str, Any] = {
        name: day for name in ("since", "until") if (day := window.get(name)) is not None
    }
    with duckdb.connect() as connection:
        connection.execute("SET TimeZone = 'UTC'")
        connection.execute(f"CREATE VIEW calls AS {_duckdb_calls(directory)}")

        def rows_of(sql: str) -> list[tuple[Any, ...]]:
            used = {k: v for k, v in parameters.items() if f"${k}" in sql}
            return connection.execute(sql, used).fetchall()

        return _report(rows_of, "duckdb", period, zone, window)


def _report(
    rows_of: Callable[[str], list[tuple[Any, ...]]],
    dialect: Dialect,
    period: Period,
    zone: str,
    window: Window,
) -> PeriodReport:
    """The report from an engine's answers (``rows_of``: a query's rows, as tuples) to
    ``period_query`` and ``totals_query``, typed as ``period_report``'s."""
    by, since, until = window.get("by"), window.get("since"), window.get("until")
    rows = rows_of(period_query(period, zone, by, dialect, since, until))
    totals = rows_of(totals_query(period, zone, dialect, since, until))
    return PeriodReport(
        rows=pl.DataFrame(rows, schema=_schema(by, totals=False), orient="row"),
        totals=pl.DataFrame(totals, schema=_schema(by, totals=True), orient="row"),
        zone=zone,
    )


def _duckdb_calls(directory: Path) -> str:
    """The dataset's calls as a DuckDB relation (an empty one when there are none)."""
    files = sorted((directory / "calls").glob("agent=*/day=*/*.parquet"))
    if not files:
        columns = ", ".join(
            f"CAST(NULL AS {kind}) AS {name}"
            for name, kind in (
                ("agent", "VARCHAR"),
                ("user", "VARCHAR"),
                ("model", "VARCHAR"),
                ("project", "VARCHAR"),
                ("session_id", "VARCHAR"),
                ("start_time", "TIMESTAMPTZ"),
                *((c, "BIGINT") for c in TOKEN_COLUMNS),
                ("cost_usd", "DECIMAL(38, 18)"),
                ("bill_share_usd", "DECIMAL(38, 18)"),
                ("bill_share_split", "BOOLEAN"),
            )
        )
        return f"SELECT {columns} WHERE false"
    pattern = str(directory / "calls" / "*" / "*" / "*.parquet").replace("'", "''")
    return (
        f"SELECT * FROM read_parquet('{pattern}', hive_partitioning = true, "
        "hive_types = {'agent': VARCHAR, 'day': DATE})"
    )


def spark_report(
    spark: SparkSession, directory: str, *, period: Period, zone: str, **window: Unpack[Window]
) -> PeriodReport:
    """The period report of the dataset at ``directory`` (any path Spark reads), computed by
    Spark SQL (the session's time zone must be UTC, as ``analytics.engine.spark.session`` sets)."""
    zone = _checked_zone(zone)
    spark.read.parquet(f"{directory}/calls").createOrReplaceTempView("calls")

    def rows_of(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in spark.sql(sql).collect()]  # one row per period

    return _report(rows_of, "spark", period, zone, window)


def dataset_issues(directory: Path) -> pl.DataFrame:
    """The dataset's issues (file, line, severity, message), as ``agentcost`` shows them."""
    from analytics.core.dataset import read_table

    return (
        read_table(directory, "issues")
        .select("file", "line", "severity", "message")
        .unique()
        .sort("file", "line", "severity", "message", nulls_last=False)
    )
