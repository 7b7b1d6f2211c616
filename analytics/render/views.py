"""Render tables for people (aligned text) and for machines (JSON, CSV).

Pure functions from frames to strings; only the command line (``cli/``) prints. The JSON
shape is a stable contract documented in docs/contracts.md: ``{"sessions": [...],
"issues": [...]}`` or ``{"calls": [...], "issues": [...]}``. Times are ISO-8601 UTC
(``...Z``) in JSON and CSV and the user's timezone in the text table; decimals are strings so
no digit is lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from analytics.core import registry as agents
from analytics.core.words import counted, counted_expr
from analytics.render.text_table import (
    Column,
    Layout,
    draw,
    render_table,
    shorter_path,
)

if TYPE_CHECKING:
    from analytics.core.blocks import Burn
    from analytics.core.home import HomeScreen
    from analytics.core.pricing.compare import Comparison
    from analytics.core.pricing.rates import RateTable

_ISO = "%Y-%m-%dT%H:%M:%S%.3fZ"


def render_json(key: str, frame: pl.DataFrame, issues: pl.DataFrame) -> Iterator[str]:
    """``{key: [...], "issues": [...]}``, one record per line, as the pieces of its text
    (``render_sections_json``)."""
    return render_sections_json({key: frame}, issues)


#: Rows encoded at a time by ``json_rows``: a large frame's intermediate strings are held
#: for a slice of it, never for the whole frame. A session's row is about 2 KB of JSON, and
#: a slice's text is made several times over (each column's, the object's, Python's copy):
#: 8,192 rows put the 1 GB pi tree's peak 20-40 MB higher than 2,048 do, for the same time.
_JSON_SLICE = 2048


def json_rows(frame: pl.DataFrame) -> list[str]:
    """Each row as one JSON object, encoded by polars (no Python object per value).

    Times are ISO-8601 UTC, decimals and days strings (no digit lost), tool counts
    ``{tool: calls}``; column order is kept. Encoded a slice of rows at a time.
    """
    return [row for part in _json_slices(frame) for row in part]


def _json_slices(frame: pl.DataFrame) -> Iterator[list[str]]:
    """``json_rows``, a slice of rows at a time (each encoded when it is asked for)."""
    if frame.height <= _JSON_SLICE:
        yield _encoded(frame)
        return
    for part in frame.iter_slices(_JSON_SLICE):
        yield _encoded(part)


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


def render_csv(frame: pl.DataFrame) -> Iterator[str]:
    """CSV with lists joined by ``;``, lists of pairs as ``key=value`` (tool counts as
    ``tool=n``, fit parameters as ``name=value``), struct fields as columns named
    ``struct.field``; in pieces, ``_CSV_SLICE`` rows at a time, each flattened when it is
    asked for (the header with the first). The 1 GB pi tree's 300,000 calls flattened at
    once, and their 180 MB of CSV held whole, took some 280 MB beside the calls."""
    yield _csv(frame.slice(0, _CSV_SLICE), header=True)
    for start in range(_CSV_SLICE, frame.height, _CSV_SLICE):
        yield _csv(frame.slice(start, _CSV_SLICE), header=False)


#: Rows of a CSV report written at a time (``render_csv``).
_CSV_SLICE = 16_384


def _csv(frame: pl.DataFrame, *, header: bool) -> str:
    """``render_csv`` of the rows of ``frame`` (after the header, when ``header``)."""
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
    return flat.write_csv(include_header=header)


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
    (``render.unpriced.reason_lines``, say)."""
    local = sessions.with_columns(
        *_id_and_start(zone, "%Y-%m-%d %H:%M", layout),
        pl.format("{}/{}/{}", "main_calls", "subagent_calls", "compaction_calls").alias("_split"),
        _check().alias("_check"),
    )
    checked = sessions["agent"].is_in(agents.ids(agents.shutdown_checked())).any()
    logged = sessions["logged_cost_usd"].is_not_null().any()
    unfinished, unfinished_legend = _final_usage(
        sessions["calls_without_final_usage"],
        Column("NO FINAL USAGE", "calls_without_final_usage", drop=9),
    )
    columns = [
        Column("SESSION", "_id", right=False),
        *_agent_column(sessions, drop=6),
        Column(f"START ({zone})", "_start", right=False, drop=3),
        Column("MODELS", "models", right=False, drop=6),
        Column("CALLS", "llm_calls"),
        Column("MAIN/SUB/COMPACT", "_split", drop=8),
        Column("INTERRUPTED", "interrupted_calls", drop=9),
        *unfinished,
        Column("FAILED", "failed_calls", drop=9),
        *([Column("SHUTDOWN CHECK", "_check", right=False, drop=5)] if checked else []),
        Column("INPUT TOK", "_input", drop=2),
        Column("OUTPUT TOK", "_output", drop=4),
        Column("PER-CALL TOKENS", "_sources", right=False, drop=7),
        Column("COST USD", "_cost"),
        *([Column("LOGGED USD", "_logged", drop=2)] if logged else []),
        Column("BILLED USD", "billed_usd", drop=1),
        Column("STATUS", "status", right=False, drop=10),
    ]
    local = local.with_columns(
        *_token_value("input_tokens"), *_token_value("output_tokens")
    ).with_columns(
        cost_cell().alias("_cost"),
        dollars(pl.col("logged_cost_usd")).fill_null("-").alias("_logged"),
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
        "_logged": _money_total(sessions["logged_cost_usd"], 0),
    }
    estimated = (sessions["token_sources"].struct.field("estimated") > 0).any()
    idle = int((sessions["llm_calls"].fill_null(0) == 0).sum())
    counts = [
        f"{idle:,} of the {counted(sessions.height, 'session')} made no LLM call (the period "
        "reports and the first screen count sessions with calls)"
    ]
    legend = [
        *notes,
        *_legend(estimated),
        *unfinished_legend,
        *api_equivalent(sessions),
        *(_LOGGED_LEGEND if logged else []),
        *(counts if idle else []),
    ]
    return _table(local, _agent_kept(columns, sessions), totals, layout, legend)


#: What LOGGED USD is, under a table that shows it.
_LOGGED_LEGEND = [
    "LOGGED USD: the agent's own cost estimate as its log states it, beside agentcost's price "
    "(COST USD); not a bill"
]


def _agent_column(frame: pl.DataFrame, drop: int) -> list[Column]:
    """The AGENT column, in a table of rows of several agents or of one whose cost is
    API-equivalent (the note under the table names it); else none."""
    shown = frame["agent"].n_unique() > 1 or api_equivalent(frame)
    return [Column("AGENT", "agent", right=False, drop=drop)] if shown else []


def _agent_kept(columns: Sequence[Column], frame: pl.DataFrame) -> list[Column]:
    """``columns`` ranked for fitting a width: in a table of several agents' rows (``frame``),
    AGENT is the last column left out, and the columns only one agent fills (``_ONE_AGENT``:
    the others' rows show nothing there) go first, in their own order; the rest keep theirs
    between. A table of one agent's rows keeps ``columns`` as they are."""
    if frame["agent"].n_unique() < 2:
        return list(columns)
    last = max(c.drop for c in columns)

    def rank(column: Column) -> int:
        if column.field == "agent":
            return 1
        if column.field in _ONE_AGENT:
            return last + 1 + column.drop
        return column.drop + 1 if column.drop else 0

    return [replace(c, drop=rank(c)) for c in columns]


#: Session columns only Copilot's logs fill: its bill, its shutdown's request count, and the
#: state its session ended in.
_ONE_AGENT = frozenset({"billed_usd", "_check", "status"})


def _token_value(column: str) -> list[pl.Expr]:
    """The session's total (its calls' sum), and whether any call in it is estimated."""
    value = pl.col(column)
    estimated = value.is_not_null() & (pl.col("token_sources").struct["estimated"] > 0)
    return [value.alias(f"_{column}"), estimated.fill_null(False).alias(f"_{column}_est")]


def _tokens_cell(column: str) -> pl.Expr:
    """A token figure, ``~`` marking an estimate, ``-`` an unknown."""
    return _count_cell(f"_{column}", pl.col(f"_{column}_est"))


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
    amount = estimated_mark(dollars(pl.col("cost_usd")), estimated)
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
    total, whether the log has usage records or a shutdown's token totals instead. Empty for
    an agent whose log has no such shutdown (``agents.shutdown_checked``): no check there."""
    cause = pl.col("calls_delta_reason").str.split(":").list.first()
    return (
        pl.when(~pl.col("agent").is_in(agents.ids(agents.shutdown_checked())))
        .then(pl.lit(""))
        .when(pl.col("shutdown_requests").is_null())
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
    estimated = pl.col("token_source") == "estimated"
    local = calls.with_columns(
        *(_count_cell(c, estimated).alias(f"_{c}") for c in _TOKEN_HEADERS),
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
        .otherwise(estimated_mark(cost, estimated))
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
        *_agent_column(calls, drop=6),
        Column("SUB-AGENT", "agent_name", right=False, drop=9),
        Column(f"START ({zone})", "_start", right=False, drop=7),
        Column("SECONDS", "_seconds", drop=8),
        Column("INPUT TOK", "_input_tokens"),
        Column("±%", "_spread", drop=5),
        Column("CACHE READ", "_cache_read_tokens", drop=5),
        Column("CACHE WRITE", "_cache_write_tokens", drop=6),
        Column("OUTPUT TOK", "_output_tokens", drop=2),
        Column("TOKENS", "token_source", right=False, drop=1),
        Column("COST USD", "_cost"),
        Column("INTERRUPTED", "_cut", right=False, drop=10),
        *unfinished,
    ]
    any_estimated = bool((calls["token_source"] == "estimated").any())
    totals = {
        "_id": counted(calls.height, "call"),
        **{
            f"_{column}": _estimate_mark(_sum_known(calls[column]), any_estimated)
            for column in _TOKEN_HEADERS
        },
        "_cost": _estimate_mark(
            _money_total(calls["cost_usd"], calls["cost_usd"].null_count()), any_estimated
        ),
    }
    notes = [*_legend(any_estimated), *unfinished_legend, *api_equivalent(calls)]
    return _table(local, _agent_kept(columns, calls), totals, layout, notes)


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

    def cost(name: str) -> pl.Expr:
        amount = estimated_mark(dollars(pl.col(name)), _has_estimates())
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
            pl.when(pl.col("local"))
            .then(
                pl.format(
                    "{} local: served on the user's own machine, $0 ({})",
                    "model",
                    counted_expr(pl.col("calls"), "call"),
                )
            )
            .when(pl.col("byok") & pl.col("priced_model").is_null())
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


#: ``rates show``'s columns: (header, ``price_list`` column, drop rank); a column no entry
#: of the table sets is left out.
_PRICE_COLUMNS = (
    ("MODEL", "model", 0),
    ("FROM", "effective_from", 1),
    ("UNTIL", "effective_until", 1),
    ("INPUT", "input", 0),
    ("CACHE READ", "cache_read", 2),
    ("CACHE WRITE 5M", "cache_write_5m", 3),
    ("CACHE WRITE 1H", "cache_write_1h", 3),
    ("OUTPUT", "output", 0),
    ("REASONING", "reasoning", 3),
    ("PER REQUEST", "per_request", 0),
    ("MULTIPLIER", "multiplier", 0),
    ("ALSO", "also", 4),
    ("ALIASES", "aliases", 5),
)


def rate_table_text(table: RateTable, prices: pl.DataFrame, layout: Layout | None = None) -> str:
    """``agentcost rates show``: one row per model and price entry of ``table`` (``prices``,
    ``core.pricing.listing.price_list``), then what the table is: its unit, source and the
    day its prices were checked."""
    columns = [
        Column(header, field, right=field not in ("model", "also", "aliases"), drop=drop)
        for header, field, drop in _PRICE_COLUMNS
        if prices[field].is_not_null().any()
    ]
    about = f"{table.name}: {table.description}" if table.description else table.name
    notes = [about, f"prices per million tokens in {_money_unit(table)}; source: {table.source}"]
    notes[-1] += f"; checked {table.checked}"
    entries = counted(prices.height, "price entry", "price entries")
    return _table(prices, columns, {"model": entries}, layout, notes)


def _money_unit(table: RateTable) -> str:
    """What a rate table's prices are counted in: ``USD``, or ``AI credits ($0.01 each)``."""
    if table.unit.startswith("usd_"):
        return table.currency
    return f"AI credits (${table.usd_per_unit} each)"


def plain_table(frame: pl.DataFrame, layout: Layout | None = None) -> str:
    """Every column of a small frame, as a table."""
    columns = [
        Column(name.upper(), name, right=frame.schema[name].is_numeric(), drop=index)
        for index, name in enumerate(frame.columns)
    ]
    return _table(frame, columns, None, layout)


def issues_table(issues: pl.DataFrame, layout: Layout | None = None) -> str:
    """``agentcost issues``: every input problem with its file and line (``-`` for a whole
    file or directory), errors first. Each file is named as ``_shown_file`` shortens it, so
    the message keeps its room on a narrow terminal."""
    ordered = issues.sort(
        pl.col("severity") != "error", "file", "line", nulls_last=False, maintain_order=True
    ).with_columns(_shown_file(pl.col("file"), layout or Layout()).alias("file"))
    columns = [
        Column("FILE", "file", right=False),
        Column("LINE", "line"),
        Column("SEVERITY", "severity", right=False),
        Column("MESSAGE", "message", right=False),
    ]
    return _table(ordered, columns, {"file": counted(issues.height, "issue")}, layout)


def _shown_file(file: pl.Expr, layout: Layout) -> pl.Expr:
    """A file as the issues table names it: relative to the working directory when under it,
    else with the home directory as ``~``; on a terminal of ``width`` columns (not
    ``--wide``), a name longer than a third of it (or than what a wide terminal leaves
    beside a message, ``_BESIDE_FILE``) is cut from the left to its last characters
    (``…18/events.jsonl``): the file's name and its session's end stay."""
    here, home = f"{Path.cwd()}{os.sep}", f"{Path.home()}{os.sep}"
    under_home = file.str.starts_with(home) & ~file.str.starts_with(here)
    named = (
        pl.when(under_home)
        .then(pl.concat_str(pl.lit(f"~{os.sep}"), file.str.strip_prefix(home)))
        .otherwise(file.str.strip_prefix(here))
    )
    if layout.width is None:
        return named
    room = max(_SHORTEST_FILE, layout.width // 3, layout.width - _BESIDE_FILE)
    return (
        pl.when(named.str.len_chars() > room)
        .then(pl.concat_str(pl.lit("…"), named.str.slice(-(room - 1))))
        .otherwise(named)
    )


#: The fewest characters ``_shown_file`` cuts a file's name to, however narrow the terminal.
_SHORTEST_FILE = 20
#: The columns ``_shown_file`` leaves beside the file on a wide terminal: the line, the
#: severity and a message of about 100 characters on one line.
_BESIDE_FILE = 120


def home_text(screen: HomeScreen, layout: Layout | None = None) -> str:
    """The first screen of bare ``agentcost``: spend by period, the costliest sessions and
    the model mix, each headed by the command that gives the detail."""
    periods = screen.periods.with_columns(
        pl.col("since").dt.to_string().fill_null("-").alias("_since"),
        _usd("cost_usd", "unpriced_calls", _has_estimates()).alias("_cost"),
        _billed_cell().alias("_billed"),
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
        [
            "BILLED USD: the Copilot bill the logs record (~: a session's bill split over days)",
            *_legend(bool(screen.periods["estimated_calls"].fill_null(0).gt(0).any())),
        ],
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
        _usd("cost_usd", "unpriced_calls", _has_estimates()).alias("_cost"),
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
        screen.agents.with_columns(
            _usd("cost_usd", "unpriced_calls", _has_estimates()).alias("_cost")
        ),
        [
            Column("AGENT", "agent", right=False),
            Column("SESSIONS", "sessions", drop=1),
            Column("CALLS", "calls"),
            Column("COST USD", "_cost"),
        ],
        None,
        layout,
        [*api_equivalent(screen.agents), *sessions_counted(screen.without_calls)],
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


#: The agents whose COST USD is API-equivalent (``agents.api_equivalent``).
_SUBSCRIBED = agents.api_equivalent()
#: The note under a table that prices their calls (Claude Code or Codex).
API_EQUIVALENT = (
    f"COST USD of {agents.listed([a.short_name for a in _SUBSCRIBED])} calls is the "
    "API-equivalent cost (the vendor's list prices): on a subscription "
    f"({', '.join(a.plans for a in _SUBSCRIBED)}) there is no per-token bill"
)


def api_equivalent(frame: pl.DataFrame) -> list[str]:
    """``[API_EQUIVALENT]`` when ``frame`` (calls, sessions or an agent breakdown) has rows
    of an agent whose users often pay by subscription; else nothing."""
    if "agent" not in frame.columns:
        return []
    return [API_EQUIVALENT] if frame["agent"].is_in(agents.ids(_SUBSCRIBED)).any() else []


def caption(text: str, layout: Layout | None = None) -> str:
    """A line of words above or below a table, wrapped at the layout's width."""
    return draw(layout or Layout(), text)


def _count(value: Any) -> str:
    return "-" if value is None else f"{value:,}"


# --- period reports, context attribution and agent-loop behaviour (agentcost daily/top) ---


def render_sections_json(
    sections: Mapping[str, pl.DataFrame | Sequence[str]], issues: pl.DataFrame, **meta: str
) -> Iterator[str]:
    """``{**meta, section: [...], ..., "issues": [...]}``, one record per line; a section is
    a frame, or its rows already rendered (``json_rows``). Given as the pieces of the text in
    order (the rows and what stands between them), each slice of rows encoded when it is
    written: a report of hundreds of MB (a ``--calls`` of a large tree) is never held whole
    (``cli.printing.print_report`` keeps it only while it is small enough to store).

    Rows are encoded by polars (``json_rows``): a large report renders in a fraction of
    what ``json.dumps`` of Python objects costs.
    """
    yield "{\n"
    between = ""  # before each field but the first
    for name, value in meta.items():
        yield f"{between}  {json.dumps(name)}: {json.dumps(value)}"
        between = ",\n"
    for name, section in {**sections, "issues": issues}.items():
        yield f"{between}  {json.dumps(name)}: "
        between = ",\n"
        slices = _json_slices(section) if isinstance(section, pl.DataFrame) else iter([section])
        opened = False
        for rows in slices:
            for row in rows:
                yield ",\n    " if opened else "[\n    "
                yield row
                opened = True
        yield "\n  ]" if opened else "[]"
    yield "\n}"


def estimated_mark(text: pl.Expr, estimated: pl.Expr | None) -> pl.Expr:
    """``text`` with ``~`` before it where ``estimated`` holds. The one rule for ``~``, in
    every table: a figure (a call's, a session's, a period's or a block's tokens or cost, or
    a bill) that includes an estimated part says so; unknown (null) stays null."""
    if estimated is None:
        return text
    return (
        pl.when(estimated.fill_null(False) & text.is_not_null())
        .then(pl.format("~{}", text))
        .otherwise(text)
    )


def _has_estimates() -> pl.Expr:
    """Whether a row (a period, an agent, a model, a block) sums estimated calls."""
    return pl.col("estimated_calls").fill_null(0) > 0


def _usd(amount: str, unpriced: str, estimated: pl.Expr | None = None) -> pl.Expr:
    """A money cell: rounded for display, ``~`` where ``estimated`` (``estimated_mark``),
    ``+ N unpriced`` when calls were left out, and ``unpriced (N calls)`` when none was
    priced; never a silent $0."""
    value = estimated_mark(dollars(pl.col(amount)), estimated)
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


def _count_cell(column: str, estimated: pl.Expr | None = None) -> pl.Expr:
    """An integer with thousands separators, ``~`` where ``estimated``, ``-`` when unknown."""
    return estimated_mark(thousands(pl.col(column)), estimated).fill_null("-")


_PERIOD_HEADER = {"day": "DAY", "week": "WEEK", "month": "MONTH"}
_TOKEN_HEADERS = {
    "input_tokens": "INPUT TOK",
    "cache_read_tokens": "CACHE READ",
    "cache_write_tokens": "CACHE WRITE",
    "output_tokens": "OUTPUT TOK",
}


def period_table(
    rows: pl.DataFrame,
    totals: pl.DataFrame,
    period: str,
    zone: str,
    layout: Layout | None = None,
    without_calls: int = 0,
) -> str:
    """The table of ``agentcost daily|weekly|monthly``: one row per period (and key), totals.

    ``BILLED USD`` is marked ``~`` where part of a session's bill was split over its calls.
    ``without_calls``: the sessions in the window that made no LLM call, which SESSIONS
    does not count (a note says so).
    """
    keys = [c for c in ("user", "agent", "model", "project", "session_id") if c in rows.columns]

    def cells(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(
            pl.col("period").fill_null("unknown").alias("_period"),
            *(_count_cell(c).alias(f"_{c}") for c in ["sessions", "calls"]),
            *(_count_cell(c, _has_estimates()).alias(f"_{c}") for c in _TOKEN_HEADERS),
            _usd("cost_usd", "unpriced_calls", _has_estimates()).alias("_cost"),
            _billed_cell().fill_null("-").alias("_billed"),
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
    estimated = bool(totals["estimated_calls"].fill_null(0).gt(0).any())
    return _table(
        cells(rows),
        columns,
        {c.field: str(total.get(c.field) or "") for c in columns},
        layout,
        [*_legend(estimated), *sessions_counted(without_calls)],
    )


def _billed_cell() -> pl.Expr:
    """The log's bill, ``~`` where part of a session's bill was split over its calls."""
    return estimated_mark(dollars(pl.col("billed_usd")), pl.col("billed_split_calls") > 0)


def sessions_counted(without_calls: int) -> list[str]:
    """The note under a table whose SESSIONS counts the sessions with an LLM call, when
    ``without_calls`` sessions made none (``agentcost analyze`` lists them)."""
    if not without_calls:
        return []
    return [
        f"SESSIONS counts sessions with an LLM call; {counted(without_calls, 'more session')} "
        "made none (agentcost analyze lists every session)"
    ]


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


def blocks_notes(pace: Burn | None, limit: int | None) -> list[str]:
    """The lines under the blocks table: the active block's pace and where it leads."""
    if pace is None:
        return ["no active block: the last call was 5 hours ago or more"]
    lines = [
        f"active block: {pace.minutes_left:.0f} min left; burn {pace.tokens_per_minute:,.0f} "
        f"tokens/min, ${pace.usd_per_hour:.2f}/h (since the block opened)",
        f"projected by its end at that pace: {pace.projected_total_tokens:,} tokens, "
        f"${pace.projected_cost_usd:.2f} (an estimate)",
    ]
    if limit:
        share = pace.projected_total_tokens * 100 / limit
        verdict = "over" if pace.projected_total_tokens > limit else "within"
        lines.append(f"token limit {limit:,}: projected {share:.0f}% ({verdict} the limit)")
    return lines


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
        _count_cell("calls").alias("_calls"),
        *(
            _count_cell(c, _has_estimates()).alias(f"_{c}")
            for c in ["total_tokens", "output_tokens"]
        ),
        _usd("cost_usd", "unpriced_calls", _has_estimates()).alias("_cost"),
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
    estimated = bool(blocks["estimated_calls"].fill_null(0).gt(0).any())
    return _table(local, columns, None, layout, _legend(estimated))
