"""The self-contained HTML report: every chart of ``plots.py`` in one offline file.

Pure: an :class:`~analytics.analysis.Analysis` and rate tables in, an HTML string out; only
``cli.py`` writes it. plotly.js is embedded once (with the first chart), so the file opens
without a network. A hidden ``<pre id="js-errors">`` collects any JavaScript error the page
raises, which the browser test reads back.

The report shows, for the session with the most LLM calls, how its context grows call by call
and what each call costs; for all sessions, the context items carried the most, the cost per
day and the cost under every bundled rate table.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import polars as pl

from analytics.analysis import Analysis
from analytics.pricing import price_calls, unpriced_models
from analytics.rates import RateTable
from analytics.schema import CALLS, MONEY, conform
from analytics.tokens import BYTES_PER_TOKEN, add_call_tokens

#: Event types whose text joins the conversation every later call of the agent re-sends.
CONVERSATION_EVENTS = {
    "user.message": "user prompt",
    "assistant.message": "assistant reply",
    "tool.execution_complete": "tool result",
    "skill.invoked": "skill",
}

_ERRORS_CAPTURE = """<pre id="js-errors" hidden></pre>
<script>
(function () {
  var out = document.getElementById("js-errors");
  function note(text) { out.textContent += text + "\\n"; out.hidden = false; }
  window.addEventListener("error", function (e) { note("error: " + e.message); });
  window.addEventListener("unhandledrejection", function (e) { note("rejection: " + e.reason); });
})();
</script>"""

_STYLE = """body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px;
  color: #222; padding: 0 1rem; }
h1 { margin-bottom: 0.2rem; } h2 { margin-top: 2.5rem; }
p.note { color: #555; max-width: 60rem; }
table.facts td { padding: 0.1rem 1rem 0.1rem 0; }
#js-errors { color: #b00; }"""


def compare_rate_tables(calls: pl.DataFrame, tables: Sequence[RateTable]) -> pl.DataFrame:
    """Total cost of the same calls under each table: rates, cost_usd, calls, priced_calls.

    ``calls`` are CALLS + CALL_TOKENS. ``cost_usd`` sums the calls the table could price and is
    null when it priced none (unknown, not $0).
    """
    totals = [
        price_calls(calls, table).select(
            pl.lit(table.name).alias("rates"),
            pl.when(pl.col("cost_usd").count() > 0)
            .then(pl.col("cost_usd").sum())
            .cast(MONEY)
            .alias("cost_usd"),
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("cost_usd").count().cast(pl.Int64).alias("priced_calls"),
        )
        for table in tables
    ]
    return pl.concat(totals) if totals else pl.DataFrame()


def fixed_tokens(events: pl.DataFrame) -> pl.DataFrame:
    """Per session, system prompt + tool definitions in tokens, as the log states them.

    From the first shutdown or compaction that states both (``systemTokens`` +
    ``toolDefinitionsTokens``); null when none does.
    """
    stated = pl.col("system_tokens") + pl.col("tool_definitions_tokens")
    return events.group_by("session_id").agg(stated.drop_nulls().first().alias("fixed_tokens"))


def with_reconstruction(analysis: Analysis) -> pl.DataFrame:
    """``analysis.calls`` plus ``reconstructed_input_tokens``: the tokens the log alone implies.

    Shown beside observed per-call tokens so the reconstruction's error is visible.
    """
    rebuilt, _ = add_call_tokens(
        conform(analysis.calls, CALLS),
        analysis.events,
        analysis.sessions,
        analysis.model_metrics,
        use_observed=False,
    )
    return analysis.calls.join(
        rebuilt.select(
            "session_id",
            "call_index",
            pl.col("input_tokens").alias("reconstructed_input_tokens"),
        ),
        on=["session_id", "call_index"],
        how="left",
    )


def carried_context(events: pl.DataFrame, priced: pl.DataFrame) -> pl.DataFrame:
    """Each conversation item and what re-sending it cost: item, tokens, times_carried, cost_usd.

    An item (a prompt, reply or tool result) is carried by every later call of the same agent
    until a compaction replaces the conversation. Its tokens are its text at
    ``tokens.BYTES_PER_TOKEN``; its cost is its share of each carrying call's input cost
    (uncached + cache read + cache write), in proportion to tokens: an estimate, null when a
    carrying call is unpriced.
    """
    agent = pl.coalesce("agent_id", "parent_tool_call_id", pl.lit("main")).alias("_agent")
    epochs = _compaction_epochs(events)
    input_cost = pl.col("input_cost_usd") + pl.col("cache_read_cost_usd")
    input_cost = input_cost + pl.col("cache_write_cost_usd")
    group = ["session_id", "_agent", "_epoch"]
    per_token = (input_cost / pl.col("input_tokens")).cast(MONEY)
    calls = (
        _in_epochs(
            priced.with_columns(
                pl.when(pl.col("kind") == "subagent")
                .then(pl.coalesce("agent_id", pl.lit("main")))
                .otherwise(pl.lit("main"))
                .alias("_agent")
            ),
            epochs,
        )
        .sort("session_id", "event_seq")
        .with_columns(
            pl.int_range(1, pl.len() + 1).over(group).alias("_n"),
            per_token.fill_null(0).cum_sum().over(group).alias("_rate"),
            per_token.is_null().cum_sum().over(group).alias("_nulls"),
        )
    )
    totals = calls.group_by(group).agg(
        pl.len().alias("_calls"), pl.col("_rate").last(), pl.col("_nulls").last()
    )
    items = _in_epochs(_labelled_items(events).with_columns(agent), epochs)
    joined = items.join_asof(
        calls.select(*group, "event_seq", "_n", "_rate", "_nulls"),
        on="event_seq",
        by=group,
        strategy="backward",
        check_sortedness=False,
    ).join(totals, on=group, how="left", suffix="_all")
    carried = pl.col("_calls").fill_null(0) - pl.col("_n").fill_null(0)
    unpriced_later = pl.col("_nulls_all") > pl.col("_nulls").fill_null(0)
    cost = (pl.col("_rate_all") - pl.col("_rate").fill_null(0)) * pl.col("tokens")
    return joined.select(
        "item",
        "tokens",
        carried.alias("times_carried"),
        pl.when(unpriced_later).then(None).otherwise(cost).cast(MONEY).alias("cost_usd"),
    ).filter(pl.col("times_carried") > 0)


def render_report(
    analysis: Analysis, table: RateTable, tables: Sequence[RateTable], zone: str
) -> str:
    """The report as one HTML document: ``table`` prices the calls, ``tables`` are compared.

    ``zone`` (an IANA name) decides which day a call belongs to.
    """
    from analytics import plots

    calls = with_reconstruction(analysis)
    priced = price_calls(calls, table)
    busiest = _busiest_session(priced)
    session = priced.filter(pl.col("session_id") == busiest)
    fixed = fixed_tokens(analysis.events).filter(pl.col("session_id") == busiest)
    fixed_value = fixed["fixed_tokens"].item() if fixed.height else None
    short = (busiest or "none")[:8]
    figures = [
        (
            "Context growth",
            f"Session {busiest}: input tokens of each call (left axis) and in total (right axis)."
            " Every call re-sends the fixed part and the whole conversation so far, so the"
            " per-call line climbs and the total grows quadratically.",
            plots.context_growth(
                session, fixed_tokens=fixed_value, title=f"Context growth, session {short}"
            ),
        ),
        (
            "Cost per call",
            f"Session {busiest}, priced with {table.name}.",
            plots.cost_per_call(session, title=f"Cost per call, session {short} ({table.name})"),
        ),
        (
            "Top carried context items",
            "Conversation items that later calls re-sent the most (text at"
            f" {BYTES_PER_TOKEN} bytes per token); cost is each item's share of the carrying"
            " calls' input cost, an estimate.",
            plots.carried_items(carried_context(analysis.events, priced)),
        ),
        (
            "Cost per day",
            f"All sessions, priced with {table.name}; days in {zone}.",
            plots.cost_per_day(priced, zone),
        ),
        (
            "Rate tables compared",
            "The same calls under each bundled rate table. A table that does not know a"
            " model leaves its calls unpriced; the label says how many it priced.",
            plots.provider_comparison(compare_rate_tables(calls, tables)),
        ),
    ]
    body = [_facts(analysis, priced, table, zone)]
    for index, (heading, note, figure) in enumerate(figures):
        chart = figure.to_html(
            full_html=False,
            include_plotlyjs=index == 0,
            div_id=f"chart-{index + 1}",
            config={"displaylogo": False, "responsive": True},
        )
        body.append(
            f"<section><h2>{html.escape(heading)}</h2>"
            f'<p class="note">{html.escape(note)}</p>{chart}</section>'
        )
    return _page("agentcost report", "\n".join(body))


def _busiest_session(priced: pl.DataFrame) -> str | None:
    """The session with the most calls (the first id on a tie); None without calls."""
    counts = (
        priced.group_by("session_id").len().sort(["len", "session_id"], descending=[True, False])
    )
    return str(counts["session_id"][0]) if counts.height else None


def _compaction_epochs(events: pl.DataFrame) -> pl.DataFrame:
    """Per session: the event_seq of each compaction and how many came before (inclusive)."""
    return (
        events.filter(pl.col("event_type") == "session.compaction_complete")
        .select("session_id", "event_seq")
        .sort("session_id", "event_seq")
        .with_columns(pl.int_range(1, pl.len() + 1).over("session_id").alias("_epoch"))
    )


def _in_epochs(frame: pl.DataFrame, epochs: pl.DataFrame) -> pl.DataFrame:
    """Add ``_epoch``: compactions before each row (main agent only; sub-agents never compact)."""
    tagged = frame.sort("session_id", "event_seq").join_asof(
        epochs,
        on="event_seq",
        by="session_id",
        strategy="backward",
        check_sortedness=False,
    )
    return tagged.with_columns(
        pl.when(pl.col("_agent") == "main").then(pl.col("_epoch").fill_null(0)).otherwise(0)
    )


def _labelled_items(events: pl.DataFrame) -> pl.DataFrame:
    """Conversation events with text, labelled ``session · kind · event N`` and sized in tokens."""
    tool_names = events.filter(pl.col("event_type") == "tool.execution_start").select(
        "session_id", "tool_call_id", pl.col("tool_name").alias("_tool")
    )
    kind = pl.col("event_type").replace_strict(CONVERSATION_EVENTS, default=None)
    what = (
        pl.when(pl.col("_tool").is_not_null())
        .then(pl.format("{}: {}", kind, pl.col("_tool")))
        .otherwise(kind)
    )
    return (
        events.filter(
            pl.col("event_type").is_in(list(CONVERSATION_EVENTS))
            & pl.col("content_bytes").is_not_null()
        )
        .join(
            tool_names.unique(["session_id", "tool_call_id"]),
            on=["session_id", "tool_call_id"],
            how="left",
        )
        .with_columns(
            pl.format(
                "{} · {} · event {}", pl.col("session_id").str.slice(0, 8), what, "event_seq"
            ).alias("item"),
            ((pl.col("content_bytes") + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN).alias("tokens"),
        )
    )


def _facts(analysis: Analysis, priced: pl.DataFrame, table: RateTable, zone: str) -> str:
    """The header: what was read, how tokens were known, the total and what is unpriced."""
    sources = priced.group_by("token_source").len().sort("token_source", nulls_last=True)
    source_text = ", ".join(
        f"{row['len']} {row['token_source'] or 'unknown'}" for row in sources.iter_rows(named=True)
    )
    priced_calls = priced["cost_usd"].count()
    total = priced["cost_usd"].sum() if priced_calls else None
    unpriced = unpriced_models(priced)
    missing = ", ".join(
        f"{row['model'] or 'unknown model'} ({row['calls']} calls)"
        for row in unpriced.iter_rows(named=True)
    )
    rows: list[tuple[str, Any]] = [
        ("sessions", analysis.sessions.height),
        ("LLM calls", priced.height),
        ("per-call tokens", source_text or "none"),
        ("rate table", f"{table.name} (prices checked {table.checked.isoformat()})"),
        ("cost of the priced calls", "unknown" if total is None else f"${total:,.4f}"),
        (
            "calls without a cost",
            f"{priced.height - priced_calls} (unpriced model or unknown tokens)",
        ),
        ("unpriced models", missing or "none"),
        ("days in", zone),
        ("input issues", analysis.issues.height),
    ]
    cells = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows
    )
    return f'<h1>agentcost report</h1><table class="facts">{cells}</table>'


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body>\n{_ERRORS_CAPTURE}\n{body}\n</body></html>\n"
    )
