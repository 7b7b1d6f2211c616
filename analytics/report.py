"""Render tables for people (aligned text) and for machines (JSON, CSV).

Pure functions from frames to strings; only ``cli.py`` prints. The JSON shape is a stable
contract documented in the README: ``{"sessions": [...], "issues": [...]}`` or
``{"calls": [...], "issues": [...]}``. Times are ISO-8601 UTC (``...Z``) in JSON and CSV and
the user's timezone in the text table; decimals are strings so no digit is lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import polars as pl

_ISO = "%Y-%m-%dT%H:%M:%S%.3fZ"


def render_json(key: str, frame: pl.DataFrame, issues: pl.DataFrame) -> str:
    """``{key: [...], "issues": [...]}``, one record per line."""
    return render_sections_json({key: frame}, issues)


def _json_rows(frame: pl.DataFrame) -> list[str]:
    """Each row as one JSON object, encoded by polars (no Python object per value).

    Times are ISO-8601 UTC, decimals and days strings (no digit lost), tool counts
    ``{tool: calls}``; column order is kept.
    """
    ready = frame.with_columns(
        *(
            pl.col(name).dt.convert_time_zone("UTC").dt.strftime(_ISO)
            for name, dtype in frame.schema.items()
            if isinstance(dtype, pl.Datetime) and dtype.time_zone
        ),
        pl.col(pl.Date).dt.to_string(),
        pl.col(pl.Decimal).cast(pl.String),
    )
    parts: list[pl.Expr] = []
    plain: list[str] = []

    def close_plain() -> None:
        if plain:
            encoded = pl.struct(plain).struct.json_encode()
            parts.append(encoded.str.strip_prefix("{").str.strip_suffix("}"))
            plain.clear()

    for name in ready.columns:
        if name == "tool_calls":
            close_plain()
            parts.append(pl.lit('"tool_calls":') + _tool_counts(pl.col(name)))
        else:
            plain.append(name)
    close_plain()
    if not parts:
        return ["{}"] * frame.height
    rows = pl.concat_str([pl.lit("{"), pl.concat_str(parts, separator=","), pl.lit("}")])
    return ready.select(rows.alias("json"))["json"].to_list()


def _tool_counts(column: pl.Expr) -> pl.Expr:
    """A list of {tool, calls} structs as the JSON object ``{"tool": calls, ...}``."""
    name = pl.struct(pl.element().struct["tool"].alias("t")).struct.json_encode()
    entry = pl.format(
        "{}:{}",
        name.str.slice(5).str.strip_suffix("}"),  # '{"t":"bash"}' -> '"bash"'
        pl.element().struct["calls"].cast(pl.String).fill_null("null"),
    )
    return (pl.lit("{") + column.list.eval(entry).list.join(",") + pl.lit("}")).fill_null("null")


def render_csv(frame: pl.DataFrame) -> str:
    """CSV with lists joined by ``;``, lists of pairs as ``key=value`` (tool counts as
    ``tool=n``, fit parameters as ``name=value``), struct fields as columns named
    ``struct.field``."""
    structs = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Struct)]
    frame = frame.with_columns(
        pl.col(name).struct.unnest().name.prefix(f"{name}.") for name in structs
    ).drop(structs)
    flat = frame.with_columns(
        pl.col(name)
        .list.eval(
            pl.format("{}={}", *(pl.element().struct[f.name] for f in dtype.inner.fields[:2]))
            if isinstance(dtype.inner, pl.Struct)
            else pl.element().cast(pl.String)
        )
        .list.join(";")
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.List)
    )
    temporal = [name for name, dtype in flat.schema.items() if isinstance(dtype, pl.Datetime)]
    flat = flat.with_columns(pl.col(name).dt.strftime(_ISO) for name in temporal)
    return flat.write_csv()


@dataclass(frozen=True)
class Column:
    """One column of a text table: header, how to format a value, right-aligned or not."""

    header: str
    field: str
    format: Callable[[Any], str]
    right: bool = True


def _count(value: Any) -> str:
    return "-" if value is None else f"{value:,}"


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def _models(value: Any) -> str:
    return ", ".join(value) if value else "-"


def render_table(
    frame: pl.DataFrame, columns: Sequence[Column], totals: dict[str, str] | None
) -> str:
    """Aligned plain text, one row per frame row, with an optional totals row."""
    header = [c.header for c in columns]
    rows = [[c.format(row[c.field]) for c in columns] for row in frame.iter_rows(named=True)]
    if totals is not None:
        rows.append([totals.get(c.field, "") for c in columns])
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if col.right else cell.ljust(width)
            for cell, width, col in zip(cells, widths, columns, strict=True)
        ).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out.extend(line(row) for row in rows[: len(rows) - (totals is not None)])
    if totals is not None:
        out.append(line(["-" * w for w in widths]))
        out.append(line(rows[-1]))
    return "\n".join(out)


def _id_and_start(zone: str, time_format: str) -> list[pl.Expr]:
    """A short session id (``_id``) and the start time in ``zone`` (``_start``)."""
    return [
        pl.col("session_id").str.slice(0, 12).alias("_id"),
        pl.col("start_time").dt.convert_time_zone(zone).dt.strftime(time_format).alias("_start"),
    ]


def session_table(sessions: pl.DataFrame, zone: str) -> str:
    """The per-session table of ``agentcost analyze``, times in ``zone``."""
    local = sessions.with_columns(
        *_id_and_start(zone, "%Y-%m-%d %H:%M"),
        pl.format("{}/{}/{}", "main_calls", "subagent_calls", "compaction_calls").alias("_split"),
        _check().alias("_check"),
    )
    columns = [
        Column("SESSION", "_id", _text, right=False),
        Column(f"START ({zone})", "_start", _text, right=False),
        Column("MODELS", "models", _models, right=False),
        Column("CALLS", "llm_calls", _count),
        Column("MAIN/SUB/COMPACT", "_split", _text),
        Column("INTERRUPTED", "interrupted_calls", _count),
        Column("SHUTDOWN CHECK", "_check", _text, right=False),
        Column("INPUT TOK", "_input", _text),
        Column("OUTPUT TOK", "_output", _text),
        Column("PER-CALL TOKENS", "_sources", _text, right=False),
        Column("COST USD", "_cost", _text),
        Column("BILLED USD", "billed_usd", _money),
        Column("STATUS", "status", _text, right=False),
    ]
    local = local.with_columns(
        *_token_value("input_tokens"), *_token_value("output_tokens")
    ).with_columns(
        _cost_cell().alias("_cost"),
        _tokens_cell("input_tokens").alias("_input"),
        _tokens_cell("output_tokens").alias("_output"),
        _sources_cell().alias("_sources"),
    )
    totals = {
        "_id": f"{sessions.height} sessions",
        "llm_calls": _count(sessions["llm_calls"].sum()),
        "interrupted_calls": _count(sessions["interrupted_calls"].sum()),
        "_input": _tokens_total(local, "input_tokens"),
        "_output": _tokens_total(local, "output_tokens"),
        "_cost": _estimate_mark(
            _money_total(sessions["cost_usd"], sessions["unpriced_calls"].sum()),
            (sessions["token_sources"].struct.field("estimated") > 0).any(),
        ),
        "billed_usd": _money_total(sessions["billed_usd"], 0),
    }
    estimated = (sessions["token_sources"].struct.field("estimated") > 0).any()
    return render_table(local, columns, totals) + _legend(estimated)


def _token_value(column: str) -> list[pl.Expr]:
    """The log's session total, else the sum of per-call figures; and whether it is estimated."""
    calls = pl.col(f"calls_{column}")
    value = pl.coalesce(pl.col(column), calls)
    estimated = (
        pl.col(column).is_null()
        & calls.is_not_null()
        & (pl.col("token_sources").struct["estimated"] > 0)
    )
    return [value.alias(f"_{column}"), estimated.fill_null(False).alias(f"_{column}_est")]


def _tokens_cell(column: str) -> pl.Expr:
    """A token figure, ``~`` marking an estimate, ``-`` an unknown."""
    value = pl.col(f"_{column}")
    return (
        pl.when(value.is_null())
        .then(pl.lit("-"))
        .when(pl.col(f"_{column}_est"))
        .then(pl.format("~{}", _thousands(value)))
        .otherwise(_thousands(value))
    )


def _tokens_total(frame: pl.DataFrame, column: str) -> str:
    """Total of a token column: ``~`` if any part is estimated, and how many are unknown."""
    total = _sum_known(frame[f"_{column}"])
    return f"~{total}" if frame[f"_{column}_est"].any() and total != "-" else total


def _thousands(expr: pl.Expr) -> pl.Expr:
    """An integer with thousands separators (1234567 -> "1,234,567")."""
    digits = expr.cast(pl.String)
    return (
        digits.str.reverse().str.replace_all(r"(\d{3})", "$1,").str.reverse().str.strip_prefix(",")
    )


def _sources_cell() -> pl.Expr:
    """How the calls' tokens are known: ``5 obs``, ``3 cal``, ``45 est``."""
    sources = pl.col("token_sources")
    parts = [
        pl.when(sources.struct[name] > 0).then(pl.format("{} " + short, sources.struct[name]))
        for name, short in (("observed", "obs"), ("calibrated", "cal"), ("estimated", "est"))
    ]
    return pl.concat_str(parts, separator=" ", ignore_nulls=True)


def _money(value: Any) -> str:
    """Dollars rounded for display only (the data keeps every digit)."""
    return "-" if value is None else f"{Decimal(value):,.4f}"


def _cost_cell() -> pl.Expr:
    """The cost cell: the amount (``~`` when it prices estimated tokens), marked when some
    calls could not be priced."""
    estimated = pl.col("token_sources").struct["estimated"] > 0
    digits = pl.col("cost_usd").cast(pl.Float64).round(4).cast(pl.String)
    amount = pl.when(estimated).then(pl.format("~{}", digits)).otherwise(digits)
    return (
        pl.when(pl.col("unpriced_calls").fill_null(0) == 0)
        .then(amount)
        .when(pl.col("cost_usd").is_null() & (pl.col("unpriced_models").list.len() > 0))
        .then(pl.format("unpriced ({})", pl.col("unpriced_models").list.join(",")))
        .when(pl.col("cost_usd").is_null())
        .then(pl.lit("unknown tokens"))
        .otherwise(pl.format("{} + {} unpriced", amount, pl.col("unpriced_calls")))
    )


ESTIMATE_LEGEND = (
    "~ estimated: reconstructed from the log with no per-call record or shutdown total to"
    " calibrate to (measured error: agentcost validate, README)"
)


def _legend(estimated: bool | None) -> str:
    """The line that explains ``~``, under a table that shows one."""
    return f"\n{ESTIMATE_LEGEND}" if estimated else ""


def _estimate_mark(total: str, estimated: bool | None) -> str:
    """``~`` before a total that includes estimated figures."""
    return f"~{total}" if estimated and total != "-" else total


def _money_total(series: pl.Series, unpriced: object) -> str:
    known = series.drop_nulls()
    total = _money(known.sum()) if known.len() else "-"
    return f"{total} (+{unpriced} calls without a cost)" if unpriced else total


def _check() -> pl.Expr:
    """``ok 5=5`` when counted calls equal the shutdown's requests, else the difference."""
    return (
        pl.when(pl.col("shutdown_requests").is_null())
        .then(pl.lit("no shutdown totals"))
        .when(pl.col("calls_agree"))
        .then(pl.format("ok {}={}", "calls_checked", "shutdown_requests"))
        .otherwise(
            pl.format("MISMATCH {} counted vs {} logged", "calls_checked", "shutdown_requests")
        )
    )


def _sum_known(series: pl.Series) -> str:
    """A column total that says when some rows are unknown (null) instead of hiding them."""
    known = series.drop_nulls()
    if not known.len():
        return "-"
    total = f"{known.sum():,}"
    missing = series.null_count()
    return f"{total} (+{missing} unknown)" if missing else total


def call_table(calls: pl.DataFrame, zone: str) -> str:
    """The per-call table of ``agentcost analyze --calls``."""
    local = calls.with_columns(
        *_id_and_start(zone, "%Y-%m-%d %H:%M:%S"),
        ((pl.col("end_time") - pl.col("start_time")).dt.total_milliseconds() / 1000)
        .round(1)
        .cast(pl.String)
        .alias("_seconds"),
        pl.when(pl.col("interrupted")).then(pl.lit("yes")).otherwise(pl.lit("")).alias("_cut"),
        pl.when(pl.col("cost_usd").is_null() & pl.col("priced_model").is_null())
        .then(pl.lit("unpriced"))
        .when(pl.col("cost_usd").is_null())
        .then(pl.lit("unknown tokens"))
        .when(pl.col("token_source") == "estimated")
        .then(pl.format("~{}", pl.col("cost_usd").cast(pl.Float64).round(6)))
        .otherwise(pl.col("cost_usd").cast(pl.Float64).round(6).cast(pl.String))
        .alias("_cost"),
    )
    columns = [
        Column("SESSION", "_id", _text, right=False),
        Column("#", "call_index", _count),
        Column("KIND", "kind", _text, right=False),
        Column("MODEL", "model", _text, right=False),
        Column("AGENT", "agent_name", _text, right=False),
        Column(f"START ({zone})", "_start", _text, right=False),
        Column("SECONDS", "_seconds", _text),
        Column("INPUT TOK", "input_tokens", _count),
        Column("CACHE READ", "cache_read_tokens", _count),
        Column("CACHE WRITE", "cache_write_tokens", _count),
        Column("OUTPUT TOK", "output_tokens", _count),
        Column("TOKENS", "token_source", _text, right=False),
        Column("COST USD", "_cost", _text),
        Column("INTERRUPTED", "_cut", _text, right=False),
    ]
    totals = {
        "_id": f"{calls.height} calls",
        **{
            column: _sum_known(calls[column])
            for column in ("input_tokens", "cache_read_tokens", "cache_write_tokens")
        },
        "output_tokens": _sum_known(calls["output_tokens"]),
        "_cost": _estimate_mark(
            _money_total(calls["cost_usd"], calls["cost_usd"].null_count()),
            (calls["token_source"] == "estimated").any(),
        ),
    }
    return render_table(local, columns, totals) + _legend(
        (calls["token_source"] == "estimated").any()
    )


def comparison_table(wide: pl.DataFrame, tables: Sequence[str], zone: str) -> str:
    """Sessions x rate tables: each table's cost, marked where calls were left unpriced."""
    cells = wide.with_columns(
        pl.col("session_id").str.slice(0, 12).alias("_id"),
        pl.col("start_time").dt.convert_time_zone(zone).dt.strftime("%Y-%m-%d").alias("_day"),
        *(
            pl.when(pl.col(f"{name}_unpriced_calls").fill_null(0) > 0)
            .then(
                pl.format(
                    "{} +{} unpriced",
                    pl.col(name).cast(pl.Float64).round(4).cast(pl.String).fill_null("-"),
                    pl.col(f"{name}_unpriced_calls"),
                )
            )
            .otherwise(pl.col(name).cast(pl.Float64).round(4).cast(pl.String))
            .alias(f"_{name}")
            for name in tables
        ),
    )
    columns = [
        Column("SESSION", "_id", _text, right=False),
        Column(f"DAY ({zone})", "_day", _text, right=False),
        Column("CALLS", "llm_calls", _count),
        *(Column(f"{name} USD", f"_{name}", _text) for name in tables),
    ]
    totals = {"_id": "total", "llm_calls": _count(wide["llm_calls"].sum())}
    for name in tables:
        totals[f"_{name}"] = _money_total(wide[name], wide[f"{name}_unpriced_calls"].sum())
    return render_table(cells, columns, totals)


def plain_table(frame: pl.DataFrame) -> str:
    """Every column of a small frame, as aligned text."""
    columns = [Column(name.upper(), name, _text, right=False) for name in frame.columns]
    return render_table(frame, columns, None)


# --- period reports, context attribution and agent-loop behaviour (agentcost daily/top) ---


def render_sections_json(
    sections: dict[str, pl.DataFrame], issues: pl.DataFrame, **meta: str
) -> str:
    """``{**meta, section: [...], ..., "issues": [...]}``, one record per line.

    Rows are encoded by polars (``_json_rows``): a large report renders in a fraction of
    what ``json.dumps`` of Python objects costs.
    """
    fields = [f"  {json.dumps(name)}: {json.dumps(value)}" for name, value in meta.items()]
    for name, frame in {**sections, "issues": issues}.items():
        rows = _json_rows(frame)
        body = "[\n    " + ",\n    ".join(rows) + "\n  ]" if rows else "[]"
        fields.append(f"  {json.dumps(name)}: {body}")
    return "{\n" + ",\n".join(fields) + "\n}"


def _usd(amount: str, unpriced: str) -> pl.Expr:
    """A money cell: rounded for display, ``+ N unpriced`` when calls were left out, and
    ``unpriced (N calls)`` when none was priced; never a silent $0."""
    value = _dollars(pl.col(amount))
    left_out = pl.col(unpriced).fill_null(0)
    return (
        pl.when(left_out == 0)
        .then(value)
        .when(pl.col(amount).is_null())
        .then(pl.format("unpriced ({} calls)", left_out))
        .otherwise(pl.format("{} + {} unpriced", value, left_out))
    )


def _dollars(amount: pl.Expr) -> pl.Expr:
    """An exact decimal amount shown with 4 decimals (rounded half to even, for display only)."""
    return amount.round(4).cast(pl.Decimal(38, 4)).cast(pl.String)


def _count_cell(column: str) -> pl.Expr:
    """An integer with thousands separators, ``-`` when unknown."""
    return _thousands(pl.col(column)).fill_null("-")


_PERIOD_HEADER = {"day": "DAY", "week": "WEEK", "month": "MONTH"}
_TOKEN_HEADERS = {
    "input_tokens": "INPUT TOK",
    "cache_read_tokens": "CACHE READ",
    "cache_write_tokens": "CACHE WRITE",
    "output_tokens": "OUTPUT TOK",
}


def period_table(rows: pl.DataFrame, totals: pl.DataFrame, period: str, zone: str) -> str:
    """The table of ``agentcost daily|weekly|monthly``: one row per period (and key), totals.

    ``BILLED USD`` is marked ``~`` where part of a session's bill was split over its calls.
    """
    keys = [c for c in ("model", "project", "session_id") if c in rows.columns]

    def cells(frame: pl.DataFrame) -> pl.DataFrame:
        billed = _dollars(pl.col("billed_usd"))
        return frame.with_columns(
            pl.col("period").fill_null("unknown").alias("_period"),
            *(_count_cell(c).alias(f"_{c}") for c in ["sessions", "calls", *_TOKEN_HEADERS]),
            _usd("cost_usd", "unpriced_calls").alias("_cost"),
            pl.when(pl.col("billed_split_calls") > 0)
            .then(pl.format("~{}", billed))
            .otherwise(billed)
            .fill_null("-")
            .alias("_billed"),
        )

    columns = [
        Column(f"{_PERIOD_HEADER[period]} ({zone})", "_period", _text, right=False),
        *(Column(key.removesuffix("_id").upper(), key, _text, right=False) for key in keys),
        Column("SESSIONS", "_sessions", _text),
        Column("CALLS", "_calls", _text),
        *(Column(header, f"_{c}", _text) for c, header in _TOKEN_HEADERS.items()),
        Column("COST USD", "_cost", _text),
        Column("BILLED USD", "_billed", _text),
    ]
    total = cells(totals).row(0, named=True)
    return render_table(
        cells(rows), columns, {c.field: str(total.get(c.field, "")) for c in columns}
    )


def attribution_table(frame: pl.DataFrame, by: str) -> str:
    """``agentcost top``: the costliest context items per session, or per tool."""
    cells = frame.with_columns(
        *(
            _count_cell(c).alias(f"_{c}")
            for c in ("tokens_added", "sends", "tokens_sent", "content_bytes", "items")
            if c in frame.columns
        ),
        _usd("cost_usd", "unpriced_sends").alias("_cost"),
    )
    if by == "tool":
        columns = [
            Column("SOURCE", "source", _text, right=False),
            Column("ITEMS", "_items", _text),
            Column("BYTES", "_content_bytes", _text),
            Column("TIMES SENT", "_sends", _text),
            Column("TOKENS SENT", "_tokens_sent", _text),
            Column("COST USD", "_cost", _text),
        ]
    else:
        cells = cells.with_columns(pl.col("session_id").str.slice(0, 12).alias("_id"))
        columns = [
            Column("SESSION", "_id", _text, right=False),
            Column("ITEM", "label", _text, right=False),
            Column("TOKENS", "_tokens_added", _text),
            Column("TIMES SENT", "_sends", _text),
            Column("TOKENS SENT", "_tokens_sent", _text),
            Column("COST USD", "_cost", _text),
        ]
    return render_table(cells, columns, None)


def compaction_table(frame: pl.DataFrame, zone: str) -> str:
    """Compaction calls: cost, pre/post tokens and the estimated input tokens saved."""
    cells = frame.with_columns(
        pl.col("session_id").str.slice(0, 12).alias("_id"),
        pl.col("start_time").dt.convert_time_zone(zone).dt.strftime("%Y-%m-%d %H:%M").alias("_at"),
        _dollars(pl.col("cost_usd")).fill_null("unpriced"),
        *(
            _count_cell(c).alias(f"_{c}")
            for c in (
                "pre_compaction_tokens",
                "post_compaction_tokens",
                "later_calls",
                "saved_input_tokens_estimate",
            )
        ),
    )
    columns = [
        Column("SESSION", "_id", _text, right=False),
        Column("#", "call_index", _count),
        Column(f"AT ({zone})", "_at", _text, right=False),
        Column("COST USD", "cost_usd", _text),
        Column("PRE TOK", "_pre_compaction_tokens", _text),
        Column("POST TOK", "_post_compaction_tokens", _text),
        Column("LATER CALLS", "_later_calls", _text),
        Column("SAVED INPUT TOK (EST.)", "_saved_input_tokens_estimate", _text),
    ]
    return render_table(cells, columns, None)


def behaviour_table(frame: pl.DataFrame) -> str:
    """Agent-loop behaviour per session: prompts, calls, nudges, unfinished and cut-off work."""
    cells = frame.with_columns(
        pl.col("session_id").str.slice(0, 12).alias("_id"),
        pl.col("calls_per_user_message").round(1).cast(pl.String).fill_null("-").alias("_ratio"),
        _usd("nudge_cost_usd", "nudge_unpriced_calls").alias("_nudge_cost"),
        _usd("interrupted_cost_usd", "interrupted_unpriced_calls").alias("_cut_cost"),
        pl.when(pl.col("ended_without_task_complete"))
        .then(pl.lit("no"))
        .otherwise(pl.lit("yes"))
        .alias("_done"),
    )
    columns = [
        Column("SESSION", "_id", _text, right=False),
        Column("PROMPTS", "user_messages", _count),
        Column("CALLS", "llm_calls", _count),
        Column("CALLS/PROMPT", "_ratio", _text),
        Column("NUDGES", "autopilot_nudges", _count),
        Column("NUDGE CALLS", "nudge_calls", _count),
        Column("NUDGE USD", "_nudge_cost", _text),
        Column("TASK COMPLETE", "_done", _text, right=False),
        Column("INTERRUPTED", "interrupted_calls", _count),
        Column("INTERRUPTED USD", "_cut_cost", _text),
    ]
    return render_table(cells, columns, None)
