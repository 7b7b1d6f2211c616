"""Render tables for people (aligned text) and for machines (JSON, CSV).

Pure functions from frames to strings; only the command line (``cli/``) prints. The JSON
shape is a stable contract documented in the README: ``{"sessions": [...], "issues": [...]}`` or
``{"calls": [...], "issues": [...]}``. Times are ISO-8601 UTC (``...Z``) in JSON and CSV and
the user's timezone in the text table; decimals are strings so no digit is lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from analytics.render.text_table import (
    Column,
    Layout,
    counted,
    counted_expr,
    draw,
    render_table,
    shorter_path,
)

if TYPE_CHECKING:
    from analytics.core.home import HomeScreen
    from analytics.core.pricing.compare import Comparison
    from analytics.core.pricing.rates import RateTable

_ISO = "%Y-%m-%dT%H:%M:%S%.3fZ"


def render_json(key: str, frame: pl.DataFrame, issues: pl.DataFrame) -> list[str]:
    """``{key: [...], "issues": [...]}``, one record per line, as the pieces of its text
    (``render_sections_json``)."""
    return render_sections_json({key: frame}, issues)


#: Rows encoded at a time by ``json_rows``: a large frame's intermediate strings are held
#: for a slice of it, never for the whole frame.
_JSON_SLICE = 8192


def json_rows(frame: pl.DataFrame) -> list[str]:
    """Each row as one JSON object, encoded by polars (no Python object per value).

    Times are ISO-8601 UTC, decimals and days strings (no digit lost), tool counts
    ``{tool: calls}``; column order is kept. Encoded a slice of rows at a time.
    """
    if frame.height <= _JSON_SLICE:
        return _encoded(frame)
    return [row for part in frame.iter_slices(_JSON_SLICE) for row in _encoded(part)]


def _encoded(frame: pl.DataFrame) -> list[str]:
    """``json_rows`` of one slice."""
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


def _as_text(frame: pl.DataFrame, fields: Sequence[str]) -> pl.DataFrame:
    """``fields`` of ``frame`` as display strings: integers with thousands separators, money
    with 4 decimals, lists joined; unknown (null) stays null and is drawn as ``-``."""

    def text(name: str, dtype: pl.DataType) -> pl.Expr:
        column = pl.col(name)
        if dtype.is_integer():
            return thousands(column)
        if isinstance(dtype, pl.Decimal):
            return dollars(column)
        if isinstance(dtype, pl.List):
            return column.list.join(", ").replace("", None)
        return column.cast(pl.String)

    schema = frame.schema
    return frame.with_columns(
        text(name, schema[name]).alias(name) for name in dict.fromkeys(fields)
    )


def _table(
    frame: pl.DataFrame,
    columns: Sequence[Column],
    totals: dict[str, str] | None,
    layout: Layout | None,
    notes: Sequence[str] = (),
) -> str:
    """``render_table`` of ``frame`` with each shown field as text."""
    text = _as_text(frame, [c.field for c in columns])
    return render_table(text, columns, totals, layout, notes)


def _short_id(layout: Layout | None) -> pl.Expr:
    """The session id as the layout shows it (cut in the narrower layouts), as ``_id``."""
    length = (layout or Layout()).id_length
    ids = pl.col("session_id")
    return (ids if length is None else ids.str.slice(0, length)).alias("_id")


def _id_and_start(zone: str, time_format: str, layout: Layout | None) -> list[pl.Expr]:
    """The session id as shown (``_id``) and the start time in ``zone`` (``_start``)."""
    return [
        _short_id(layout),
        pl.col("start_time").dt.convert_time_zone(zone).dt.strftime(time_format).alias("_start"),
    ]


def session_table(
    sessions: pl.DataFrame, zone: str, layout: Layout | None = None, notes: Sequence[str] = ()
) -> str:
    """The per-session table of ``agentcost analyze``, times in ``zone``; ``notes`` below it
    (``unpriced_reasons``, say)."""
    local = sessions.with_columns(
        *_id_and_start(zone, "%Y-%m-%d %H:%M", layout),
        pl.format("{}/{}/{}", "main_calls", "subagent_calls", "compaction_calls").alias("_split"),
        _check().alias("_check"),
    )
    mixed = api_equivalent(sessions) or sessions["agent"].n_unique() > 1
    unfinished, unfinished_legend = _final_usage(
        sessions["calls_without_final_usage"],
        Column("NO FINAL USAGE", "calls_without_final_usage", drop=9),
    )
    columns = [
        Column("SESSION", "_id", right=False),
        *([Column("AGENT", "agent", right=False, drop=6)] if mixed else []),
        Column(f"START ({zone})", "_start", right=False, drop=3),
        Column("MODELS", "models", right=False, drop=6),
        Column("CALLS", "llm_calls"),
        Column("MAIN/SUB/COMPACT", "_split", drop=8),
        Column("INTERRUPTED", "interrupted_calls", drop=9),
        *unfinished,
        Column("FAILED", "failed_calls", drop=9),
        Column("SHUTDOWN CHECK", "_check", right=False, drop=5),
        Column("INPUT TOK", "_input", drop=2),
        Column("OUTPUT TOK", "_output", drop=4),
        Column("PER-CALL TOKENS", "_sources", right=False, drop=7),
        Column("COST USD", "_cost"),
        Column("BILLED USD", "billed_usd", drop=1),
        Column("STATUS", "status", right=False, drop=10),
    ]
    local = local.with_columns(
        *_token_value("input_tokens"), *_token_value("output_tokens")
    ).with_columns(
        cost_cell().alias("_cost"),
        _tokens_cell("input_tokens").alias("_input"),
        _tokens_cell("output_tokens").alias("_output"),
        _sources_cell().alias("_sources"),
    )
    totals = {
        "_id": counted(sessions.height, "session"),
        "llm_calls": _count(sessions["llm_calls"].sum()),
        "interrupted_calls": _count(sessions["interrupted_calls"].sum()),
        "calls_without_final_usage": _count(sessions["calls_without_final_usage"].sum()),
        "failed_calls": _count(sessions["failed_calls"].sum()),
        "_input": _tokens_total(local, "input_tokens"),
        "_output": _tokens_total(local, "output_tokens"),
        "_cost": _estimate_mark(
            _money_total(sessions["cost_usd"], sessions["unpriced_calls"].sum()),
            (sessions["token_sources"].struct.field("estimated") > 0).any(),
        ),
        "billed_usd": _money_total(sessions["billed_usd"], 0),
    }
    estimated = (sessions["token_sources"].struct.field("estimated") > 0).any()
    legend = [*notes, *_legend(estimated), *unfinished_legend, *api_equivalent(sessions)]
    return _table(local, columns, totals, layout, legend)


def unpriced_reasons(
    sessions: pl.DataFrame, table: RateTable, renames: Mapping[str, str] | None = None
) -> list[str]:
    """Why each model the sessions left unpriced (``unpriced_models``) has no price in
    ``table``: it is not in the table, or its prices ended before its calls (``no price after
    2025-09-05``) or began after them. ``renames``: the ``--model-map`` the calls were priced
    with (a model is looked up under its new name)."""
    if "unpriced_models" not in sessions.columns:
        return []
    spans = (
        sessions.select("unpriced_models", "start_time")
        .explode("unpriced_models")
        .drop_nulls("unpriced_models")
        .group_by("unpriced_models")
        .agg(pl.col("start_time").min().alias("first"), pl.col("start_time").max().alias("last"))
        .sort("unpriced_models")
    )
    lines = []
    for model, first, last in spans.iter_rows():
        looked_up = (renames or {}).get(model, model)
        name = model if looked_up == model else f"{model} (as {looked_up})"
        rate = table.resolve(looked_up)
        ends = [p.effective_until for p in rate.periods] if rate else []
        starts = [p.effective_from for p in rate.periods] if rate else []
        if rate is None:
            why = f"not in the {table.name} rate table"
        elif first and all(ends) and first >= max(e for e in ends if e):
            why = f"no price after {max(e for e in ends if e):%Y-%m-%d} in {table.name}"
        elif last and all(starts) and last < min(s for s in starts if s):
            why = f"no price before {min(s for s in starts if s):%Y-%m-%d} in {table.name}"
        else:
            why = f"no price in {table.name} at the time of its calls"
        lines.append(f"unpriced: {name}: {why}")
    return lines


def _token_value(column: str) -> list[pl.Expr]:
    """The session's total (its calls' sum), and whether any call in it is estimated."""
    value = pl.col(column)
    estimated = value.is_not_null() & (pl.col("token_sources").struct["estimated"] > 0)
    return [value.alias(f"_{column}"), estimated.fill_null(False).alias(f"_{column}_est")]


def _tokens_cell(column: str) -> pl.Expr:
    """A token figure, ``~`` marking an estimate, ``-`` an unknown."""
    value = pl.col(f"_{column}")
    return (
        pl.when(value.is_null())
        .then(pl.lit("-"))
        .when(pl.col(f"_{column}_est"))
        .then(pl.format("~{}", thousands(value)))
        .otherwise(thousands(value))
    )


def _tokens_total(frame: pl.DataFrame, column: str) -> str:
    """Total of a token column: ``~`` if any part is estimated, and how many are unknown."""
    total = _sum_known(frame[f"_{column}"])
    return f"~{total}" if frame[f"_{column}_est"].any() and total != "-" else total


def thousands(expr: pl.Expr) -> pl.Expr:
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
    return "-" if value is None else f"{Decimal(value):.4f}"


def cost_cell() -> pl.Expr:
    """The cost cell: the amount (``~`` when it prices estimated tokens), marked when some
    calls could not be priced."""
    estimated = pl.col("token_sources").struct["estimated"] > 0
    digits = dollars(pl.col("cost_usd"))
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
    "~ estimated: reconstructed from the log, with no per-call record or matching shutdown"
    " total to pin it (estimate_reason in JSON says why; measured error: agentcost validate,"
    " README)"
)


#: Under a table that counts calls whose log never states their final usage.
NO_FINAL_USAGE_LEGEND = (
    "NO FINAL USAGE: calls whose log never states a final usage record: output may be low"
    " (INTERRUPTED counts the calls the user or the CLI stopped)"
)


def _final_usage(counts: pl.Series, column: Column) -> tuple[list[Column], list[str]]:
    """The NO FINAL USAGE ``column`` and its legend, from each row's count of such calls
    (``counts``; null where the agent's log has no final usage record to miss, as
    Copilot's): the column where any row has a count, the legend where any is above 0."""
    shown = [column] if counts.is_not_null().any() else []
    return shown, [NO_FINAL_USAGE_LEGEND] if (counts.fill_null(0) > 0).any() else []


def _legend(estimated: bool | None) -> list[str]:
    """The note that explains ``~``, under a table that shows one."""
    return [ESTIMATE_LEGEND] if estimated else []


def _estimate_mark(total: str, estimated: bool | None) -> str:
    """``~`` before a total that includes estimated figures."""
    return f"~{total}" if estimated and total != "-" else total


def _money_total(series: pl.Series, unpriced: object) -> str:
    known = series.drop_nulls()
    total = _money(known.sum()) if known.len() else "-"
    return f"{total} (+{unpriced} without a cost)" if unpriced else total


def _check() -> pl.Expr:
    """``ok 5=5`` when counted calls equal the shutdown's requests, else the difference and the
    cause the log shows (``/rewind``, ``lines missing from the log``, ...); with no request
    total, whether the log has usage records or a shutdown's token totals instead."""
    cause = pl.col("calls_delta_reason").str.split(":").list.first()
    return (
        pl.when(pl.col("shutdown_requests").is_null())
        .then(
            pl.when(pl.col("token_totals_source") == "usage_records")
            .then(pl.lit("no shutdown; usage records"))
            # token totals taken from a shutdown whose request count was unreadable
            .when(pl.col("token_totals_source").str.starts_with("shutdown"))
            .then(pl.lit("requests unknown"))
            .otherwise(pl.lit("no shutdown totals"))
        )
        .when(pl.col("calls_agree"))
        .then(pl.format("ok {}={}", "calls_checked", "shutdown_requests"))
        .otherwise(
            pl.format(
                "MISMATCH {} counted vs {} logged: {}", "calls_checked", "shutdown_requests", cause
            )
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


def call_table(calls: pl.DataFrame, zone: str, layout: Layout | None = None) -> str:
    """The per-call table of ``agentcost analyze --calls``."""
    cost = dollars(pl.col("cost_usd"), 6)
    local = calls.with_columns(
        *_id_and_start(zone, "%Y-%m-%d %H:%M:%S", layout),
        ((pl.col("end_time") - pl.col("start_time")).dt.total_milliseconds() / 1000)
        .round(1)
        .cast(pl.String)
        .alias("_seconds"),
        pl.when(pl.col("interrupted")).then(pl.lit("yes")).otherwise(pl.lit("")).alias("_cut"),
        pl.when(~pl.col("final_usage")).then(pl.lit("yes")).otherwise(pl.lit("")).alias("_open"),
        pl.when(pl.col("cost_usd").is_null() & pl.col("priced_model").is_null())
        .then(pl.lit("unpriced"))
        .when(pl.col("cost_usd").is_null())
        .then(pl.lit("unknown tokens"))
        .when(pl.col("token_source") == "estimated")
        .then(pl.format("~{}", cost))
        .otherwise(cost)
        .alias("_cost"),
        _interval_cell(calls),
    )
    unfinished, unfinished_legend = _final_usage(
        calls["final_usage"].not_().cast(pl.Int64),
        Column("NO FINAL USAGE", "_open", right=False, drop=10),
    )
    columns = [
        Column("SESSION", "_id", right=False),
        Column("#", "call_index"),
        Column("KIND", "kind", right=False, drop=4),
        Column("MODEL", "model", right=False, drop=3),
        Column("AGENT", "agent_name", right=False, drop=9),
        Column(f"START ({zone})", "_start", right=False, drop=7),
        Column("SECONDS", "_seconds", drop=8),
        Column("INPUT TOK", "input_tokens"),
        Column("±%", "_spread", drop=5),
        Column("CACHE READ", "cache_read_tokens", drop=5),
        Column("CACHE WRITE", "cache_write_tokens", drop=6),
        Column("OUTPUT TOK", "output_tokens", drop=2),
        Column("TOKENS", "token_source", right=False, drop=1),
        Column("COST USD", "_cost"),
        Column("INTERRUPTED", "_cut", right=False, drop=10),
        *unfinished,
    ]
    totals = {
        "_id": counted(calls.height, "call"),
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
    estimated = (calls["token_source"] == "estimated").any()
    legend = [*_legend(estimated), *unfinished_legend, *api_equivalent(calls)]
    return _table(local, columns, totals, layout, legend)


def _interval_cell(calls: pl.DataFrame) -> pl.Expr:
    """``±N%``: half an estimated call's 80% interval (``input_tokens_low``,
    ``input_tokens_high``) over its input; empty where the log pins the figure."""
    if "input_tokens_low" not in calls.columns:
        return pl.lit("").alias("_spread")
    half = (pl.col("input_tokens_high") - pl.col("input_tokens_low")) / 2
    share = (half / pl.col("input_tokens").clip(lower_bound=1) * 100).round(0).cast(pl.Int64)
    return pl.format("±{}%", share).fill_null("").alias("_spread")


def comparison_table(
    found: Comparison, tables: Sequence[str], zone: str, layout: Layout | None = None
) -> str:
    """Sessions x rate tables: each table's cost, ``~`` where it prices estimated tokens,
    marked where calls were left unpriced; the notes of ``comparison_notes`` below."""
    wide = found.sessions.join(found.estimated_calls, on="session_id", how="left")
    estimated = pl.col("estimated_calls").fill_null(0) > 0

    def cost(name: str) -> pl.Expr:
        amount = dollars(pl.col(name))
        amount = pl.when(estimated & amount.is_not_null()).then("~" + amount).otherwise(amount)
        return (
            pl.when(pl.col(f"{name}_unpriced_calls").fill_null(0) > 0)
            .then(pl.format("{} +{} unpriced", amount.fill_null("-"), f"{name}_unpriced_calls"))
            .otherwise(amount)
            .alias(f"_{name}")
        )

    cells = wide.with_columns(
        _short_id(layout),
        pl.col("start_time").dt.convert_time_zone(zone).dt.strftime("%Y-%m-%d").alias("_day"),
        *(cost(name) for name in tables),
    )
    columns = [
        Column("SESSION", "_id", right=False),
        Column(f"DAY ({zone})", "_day", right=False, drop=2),
        Column("CALLS", "llm_calls", drop=1),
        *(Column(f"{name} USD", f"_{name}") for name in tables),
    ]
    totals = {"_id": "total", "llm_calls": _count(wide["llm_calls"].sum())}
    any_estimated = (wide["estimated_calls"].fill_null(0) > 0).any()
    for name in tables:
        total = _money_total(wide[name], wide[f"{name}_unpriced_calls"].sum())
        totals[f"_{name}"] = _estimate_mark(total, any_estimated)
    notes = comparison_notes(found, layout)
    return _table(cells, columns, totals, layout, [*notes, *_legend(any_estimated)])


def comparison_notes(found: Comparison, layout: Layout | None = None) -> list[str]:
    """Under the comparison: the verdict; per table, which model priced each log model (or
    that the table does not sell it); and where each table's prices come from and when they
    were checked (the sources in full in the wide layout)."""
    verdict = (
        f"cheapest table that priced every call: {found.cheapest}"
        if found.cheapest
        else "no table priced every call; totals are lower bounds"
    )
    priced = found.priced_as.with_columns(pl.col("model").fill_null("unknown model"))
    lines = (
        priced.with_columns(
            pl.when(pl.col("byok") & pl.col("priced_model").is_null())
            .then(
                pl.format(
                    "{} BYOK: your own key, no provider price ({} unpriced)",
                    "model",
                    counted_expr(pl.col("calls"), "call"),
                )
            )
            .when(pl.col("byok"))
            .then(
                pl.format(
                    "{} BYOK: your own key, at {} {} ({})",
                    "model",
                    "seller",
                    "priced_model",
                    counted_expr(pl.col("calls"), "call"),
                )
            )
            .when(pl.col("priced_model").is_null())
            .then(
                pl.format(
                    "{} not sold there ({} unpriced)",
                    "model",
                    counted_expr(pl.col("calls"), "call"),
                )
            )
            .when(
                (pl.col("priced_model") == pl.col("model")) & (pl.col("seller") == pl.col("rates"))
            )
            .then(pl.format("{} ({})", "model", counted_expr(pl.col("calls"), "call")))
            .when(pl.col("seller") == pl.col("rates"))
            .then(
                pl.format(
                    "{} as {} ({})", "model", "priced_model", counted_expr(pl.col("calls"), "call")
                )
            )
            .otherwise(
                pl.format(
                    "{} as {} {} ({})",
                    "model",
                    "seller",
                    "priced_model",
                    counted_expr(pl.col("calls"), "call"),
                )
            )
            .alias("_priced")
        )
        .group_by("rates", maintain_order=True)
        .agg(pl.col("_priced").str.join(", "))
        .select(pl.format("{}: {}", "rates", "_priced"))
        .to_series()
        .to_list()
    )
    sellers = priced.filter(pl.col("seller").is_not_null()).unique("seller", maintain_order=True)
    if (layout or Layout()).wide:
        sources = sellers.select(
            pl.format("{}: prices checked {}, source: {}", "seller", "checked", "source")
        )
        return [verdict, *lines, *sources.to_series().to_list()]
    checked = sellers.select(pl.format("{} {}", "seller", "checked")).to_series().str.join(", ")
    dates = (
        [f"prices checked: {checked.item()} (--wide shows their sources)"] if sellers.height else []
    )
    return [verdict, *lines, *dates]


def plain_table(frame: pl.DataFrame, layout: Layout | None = None) -> str:
    """Every column of a small frame, as a table."""
    columns = [
        Column(name.upper(), name, right=frame.schema[name].is_numeric(), drop=index)
        for index, name in enumerate(frame.columns)
    ]
    return _table(frame, columns, None, layout)


def issues_table(issues: pl.DataFrame, layout: Layout | None = None) -> str:
    """``agentcost issues``: every input problem with its file and line (``-`` for a whole
    file or directory), errors first. A file under the working directory is named relative
    to it, so the message keeps its room on a narrow terminal."""
    here = f"{Path.cwd()}{os.sep}"
    ordered = issues.sort(
        pl.col("severity") != "error", "file", "line", nulls_last=False, maintain_order=True
    ).with_columns(pl.col("file").str.strip_prefix(here))
    columns = [
        Column("FILE", "file", right=False),
        Column("LINE", "line"),
        Column("SEVERITY", "severity", right=False),
        Column("MESSAGE", "message", right=False),
    ]
    return _table(ordered, columns, {"file": counted(issues.height, "issue")}, layout)


def home_text(screen: HomeScreen, layout: Layout | None = None) -> str:
    """The first screen of bare ``agentcost``: spend by period, the costliest sessions and
    the model mix, each headed by the command that gives the detail."""
    periods = screen.periods.with_columns(
        pl.col("since").dt.to_string().fill_null("-").alias("_since"),
        _usd("cost_usd", "unpriced_calls").alias("_cost"),
        pl.when(pl.col("billed_split_calls") > 0)
        .then(pl.format("~{}", dollars(pl.col("billed_usd"))))
        .otherwise(dollars(pl.col("billed_usd")))
        .alias("_billed"),
    )
    spend = _table(
        periods,
        [
            Column(f"SPENT ({screen.zone})", "label", right=False),
            Column("SINCE", "_since", right=False, drop=4),
            Column("CALLS", "calls"),
            Column("COST USD", "_cost"),
            Column("BILLED USD", "_billed", drop=3),
            Column("DETAIL", "command", right=False),
        ],
        None,
        layout,
        ["BILLED USD: the Copilot bill the logs record (~: a session's bill split over days)"],
    )
    sessions = screen.sessions.with_columns(
        *_id_and_start(screen.zone, "%Y-%m-%d", layout),
        cost_cell().alias("_cost"),
    )
    costliest = _table(
        sessions,
        [
            Column("SESSION", "_id", right=False),
            Column("DAY", "_start", right=False, drop=2),
            Column("MODELS", "models", right=False, drop=1),
            Column("CALLS", "llm_calls"),
            Column("COST USD", "_cost"),
        ],
        None,
        layout,
    )
    models = screen.models.with_columns(
        pl.col("model").fill_null("unknown model"),
        pl.format("{}%", pl.col("share_pct").round(1)).alias("_share"),
        _usd("cost_usd", "unpriced_calls").alias("_cost"),
    )
    mix = _table(
        models,
        [
            Column("MODEL", "model", right=False),
            Column("CALLS", "calls"),
            Column("SHARE", "_share", drop=1),
            Column("COST USD", "_cost"),
        ],
        None,
        layout,
    )
    by_agent = _table(
        screen.agents.with_columns(_usd("cost_usd", "unpriced_calls").alias("_cost")),
        [
            Column("AGENT", "agent", right=False),
            Column("SESSIONS", "sessions", drop=1),
            Column("CALLS", "calls"),
            Column("COST USD", "_cost"),
        ],
        None,
        layout,
        api_equivalent(screen.agents),
    )
    parts = [
        spend,
        caption("costliest sessions (detail: agentcost analyze; context: agentcost top)", layout)
        + f"\n{costliest}",
        caption("model mix (detail: agentcost daily --by model)", layout) + f"\n{mix}",
    ]
    if screen.agents.height > 1 or api_equivalent(screen.agents):
        parts.append(
            caption("agents (detail: agentcost daily --by agent)", layout) + f"\n{by_agent}"
        )
    parts.append(
        caption(
            "live view: agentcost watch · budget: agentcost budget · more: agentcost --help",
            layout,
        )
    )
    return "\n\n".join(parts)


#: The note under a table that prices Claude Code or Codex calls.
API_EQUIVALENT = (
    "COST USD of Claude Code and Codex calls is the API-equivalent cost (the vendor's list "
    "prices): on a subscription (Claude Pro/Max, a ChatGPT plan) there is no per-token bill"
)


def api_equivalent(frame: pl.DataFrame) -> list[str]:
    """``[API_EQUIVALENT]`` when ``frame`` (calls, sessions or an agent breakdown) has rows
    of an agent whose users often pay by subscription; else nothing."""
    if "agent" not in frame.columns:
        return []
    return [API_EQUIVALENT] if frame["agent"].is_in(["claude-code", "codex"]).any() else []


def caption(text: str, layout: Layout | None = None) -> str:
    """A line of words above or below a table, wrapped at the layout's width."""
    return draw(layout or Layout(), text)


def _count(value: Any) -> str:
    return "-" if value is None else f"{value:,}"


# --- period reports, context attribution and agent-loop behaviour (agentcost daily/top) ---


def render_sections_json(
    sections: Mapping[str, pl.DataFrame | Sequence[str]], issues: pl.DataFrame, **meta: str
) -> list[str]:
    """``{**meta, section: [...], ..., "issues": [...]}``, one record per line; a section is
    a frame, or its rows already rendered (``json_rows``). Returned as the pieces of the text
    in order (the rows and what stands between them), never joined: a report of tens of MB
    is written a piece at a time (``cache.output.pieces``), and held once.

    Rows are encoded by polars (``json_rows``): a large report renders in a fraction of
    what ``json.dumps`` of Python objects costs.
    """
    fields = [[f"  {json.dumps(name)}: {json.dumps(value)}"] for name, value in meta.items()]
    for name, section in {**sections, "issues": issues}.items():
        rows = json_rows(section) if isinstance(section, pl.DataFrame) else section
        head = f"  {json.dumps(name)}: "
        if not rows:
            fields.append([head, "[]"])
            continue
        field = [head, "[\n    "]
        for row in rows:
            field += [row, ",\n    "]
        field[-1] = "\n  ]"
        fields.append(field)
    pieces = ["{\n"]
    for index, field in enumerate(fields):
        pieces += [",\n", *field] if index else field
    return [*pieces, "\n}"]


def _usd(amount: str, unpriced: str) -> pl.Expr:
    """A money cell: rounded for display, ``+ N unpriced`` when calls were left out, and
    ``unpriced (N calls)`` when none was priced; never a silent $0."""
    value = dollars(pl.col(amount))
    left_out = pl.col(unpriced).fill_null(0)
    return (
        pl.when(left_out == 0)
        .then(value)
        .when(pl.col(amount).is_null())
        .then(pl.format("unpriced ({})", counted_expr(left_out, "call")))
        .otherwise(pl.format("{} + {} unpriced", value, left_out))
    )


def dollars(amount: pl.Expr, places: int = 4) -> pl.Expr:
    """An exact decimal amount shown with ``places`` decimals (rounded half to even, for
    display only)."""
    return amount.round(places).cast(pl.Decimal(38, places)).cast(pl.String)


def _count_cell(column: str) -> pl.Expr:
    """An integer with thousands separators, ``-`` when unknown."""
    return thousands(pl.col(column)).fill_null("-")


_PERIOD_HEADER = {"day": "DAY", "week": "WEEK", "month": "MONTH"}
_TOKEN_HEADERS = {
    "input_tokens": "INPUT TOK",
    "cache_read_tokens": "CACHE READ",
    "cache_write_tokens": "CACHE WRITE",
    "output_tokens": "OUTPUT TOK",
}


def period_table(
    rows: pl.DataFrame, totals: pl.DataFrame, period: str, zone: str, layout: Layout | None = None
) -> str:
    """The table of ``agentcost daily|weekly|monthly``: one row per period (and key), totals.

    ``BILLED USD`` is marked ``~`` where part of a session's bill was split over its calls.
    """
    keys = [c for c in ("user", "agent", "model", "project", "session_id") if c in rows.columns]

    def cells(frame: pl.DataFrame) -> pl.DataFrame:
        billed = dollars(pl.col("billed_usd"))
        return frame.with_columns(
            pl.col("period").fill_null("unknown").alias("_period"),
            *(_count_cell(c).alias(f"_{c}") for c in ["sessions", "calls", *_TOKEN_HEADERS]),
            _usd("cost_usd", "unpriced_calls").alias("_cost"),
            pl.when(pl.col("billed_split_calls") > 0)
            .then(pl.format("~{}", billed))
            .otherwise(billed)
            .fill_null("-")
            .alias("_billed"),
            *((_short_id(layout).alias("session_id"),) if "session_id" in frame.columns else ()),
            *(
                (shorter_path(pl.col("project")).alias("project"),)
                if "project" in frame.columns and not (layout or Layout()).wide
                else ()
            ),
        )

    columns = [
        Column(f"{_PERIOD_HEADER[period]} ({zone})", "_period", right=False),
        *(Column(key.removesuffix("_id").upper(), key, right=False) for key in keys),
        Column("SESSIONS", "_sessions", drop=5),
        Column("CALLS", "_calls"),
        *(
            Column(header, f"_{c}", drop=drop)
            for (c, header), drop in zip(_TOKEN_HEADERS.items(), (2, 4, 3, 1), strict=True)
        ),
        Column("COST USD", "_cost"),
        Column("BILLED USD", "_billed", drop=6),
    ]
    total = cells(totals).row(0, named=True)
    return _table(
        cells(rows), columns, {c.field: str(total.get(c.field) or "") for c in columns}, layout
    )


def attribution_table(frame: pl.DataFrame, by: str, layout: Layout | None = None) -> str:
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
            Column("SOURCE", "source", right=False),
            Column("ITEMS", "_items", drop=3),
            Column("BYTES", "_content_bytes", drop=2),
            Column("TIMES SENT", "_sends", drop=1),
            Column("TOKENS SENT", "_tokens_sent"),
            Column("COST USD", "_cost"),
        ]
    else:
        cells = cells.with_columns(_short_id(layout))
        columns = [
            Column("SESSION", "_id", right=False),
            Column("ITEM", "label", right=False),
            Column("TOKENS", "_tokens_added", drop=2),
            Column("TIMES SENT", "_sends", drop=1),
            Column("TOKENS SENT", "_tokens_sent", drop=3),
            Column("COST USD", "_cost"),
        ]
    return _table(cells, columns, None, layout)


def compaction_table(frame: pl.DataFrame, zone: str, layout: Layout | None = None) -> str:
    """Compaction calls: cost, pre/post tokens and the estimated input tokens saved."""
    cells = frame.with_columns(
        _short_id(layout),
        pl.col("start_time").dt.convert_time_zone(zone).dt.strftime("%Y-%m-%d %H:%M").alias("_at"),
        dollars(pl.col("cost_usd")).fill_null("unpriced"),
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
        Column("SESSION", "_id", right=False),
        Column("#", "call_index"),
        Column(f"AT ({zone})", "_at", right=False, drop=3),
        Column("COST USD", "cost_usd"),
        Column("PRE TOK", "_pre_compaction_tokens", drop=2),
        Column("POST TOK", "_post_compaction_tokens", drop=1),
        Column("LATER CALLS", "_later_calls", drop=4),
        Column("SAVED INPUT TOK (EST.)", "_saved_input_tokens_estimate"),
    ]
    return _table(cells, columns, None, layout)


def behaviour_table(frame: pl.DataFrame, layout: Layout | None = None) -> str:
    """Agent-loop behaviour per session: prompts, calls, nudges, unfinished and cut-off work,
    and apart from the cut-off calls those without a final usage record."""
    cells = frame.with_columns(
        _short_id(layout),
        pl.col("calls_per_user_message").round(1).cast(pl.String).fill_null("-").alias("_ratio"),
        _usd("nudge_cost_usd", "nudge_unpriced_calls").alias("_nudge_cost"),
        _usd("interrupted_cost_usd", "interrupted_unpriced_calls").alias("_cut_cost"),
        pl.when(pl.col("ended_without_task_complete"))
        .then(pl.lit("no"))
        .otherwise(pl.lit("yes"))
        .alias("_done"),
    )
    unfinished, legend = _final_usage(
        frame["calls_without_final_usage"],
        Column("NO FINAL USAGE", "calls_without_final_usage", drop=7),
    )
    columns = [
        Column("SESSION", "_id", right=False),
        Column("PROMPTS", "user_messages", drop=3),
        Column("CALLS", "llm_calls"),
        Column("CALLS/PROMPT", "_ratio", drop=2),
        Column("NUDGES", "autopilot_nudges", drop=5),
        Column("NUDGE CALLS", "nudge_calls", drop=6),
        Column("NUDGE USD", "_nudge_cost", drop=4),
        Column("TASK COMPLETE", "_done", right=False, drop=1),
        Column("INTERRUPTED", "interrupted_calls", drop=7),
        Column("INTERRUPTED USD", "_cut_cost"),
        *unfinished,
    ]
    return _table(cells, columns, None, layout, legend)


# --- 5-hour usage blocks (agentcost blocks) ---


def blocks_table(
    blocks: pl.DataFrame, zone: str, limit: int | None, layout: Layout | None = None
) -> str:
    """The table of ``agentcost blocks``: one row per 5-hour block, oldest first, its start
    in ``zone``; with a token ``limit``, the share of it each block used."""
    local = blocks.with_columns(
        pl.col("block_start")
        .dt.convert_time_zone(zone)
        .dt.strftime("%Y-%m-%d %H:%M")
        .alias("_start"),
        pl.when(pl.col("active")).then(pl.lit("active")).otherwise(pl.lit("")).alias("_state"),
        *(_count_cell(c).alias(f"_{c}") for c in ["calls", "total_tokens", "output_tokens"]),
        _usd("cost_usd", "unpriced_calls").alias("_cost"),
        pl.col("models").list.join(", ").alias("_models"),
        (
            pl.format("{}%", (pl.col("total_tokens") * 100 / limit).round(1))
            if limit
            else pl.lit("")
        ).alias("_share"),
    )
    columns = [
        Column(f"BLOCK START ({zone})", "_start", right=False),
        Column("", "_state", right=False),
        Column("CALLS", "_calls"),
        Column("TOKENS", "_total_tokens"),
        *([Column("OF LIMIT", "_share")] if limit else []),
        Column("OUTPUT TOK", "_output_tokens", drop=2),
        Column("COST USD", "_cost"),
        Column("MODELS", "_models", right=False, drop=1),
    ]
    return _table(local, columns, None, layout)
