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
from analytics.attribution import attribute_context
from analytics.compare import table_totals
from analytics.pricing import price_calls, unpriced_models
from analytics.rates import RateTable
from analytics.schema import CALLS, COSTS, conform
from analytics.tokens import add_call_tokens, stated_fixed_part

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


def _by_groups(
    analysis: Analysis, table: RateTable
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(priced calls with their reconstruction, carried items, stated fixed parts), built a
    group of sessions at a time (``Analysis.session_groups``) so memory follows a group."""
    priced, carried, fixed = [], [], []
    for group in analysis.session_groups():
        calls = price_calls(with_reconstruction(group), table)
        priced.append(calls)
        carried.append(carried_context(group.events, calls))
        fixed.append(stated_fixed_part(group.events))
    return (
        pl.concat(priced).sort("session_id", "call_index"),
        pl.concat(carried),
        pl.concat(fixed),
    )


def carried_context(events: pl.DataFrame, priced: pl.DataFrame) -> pl.DataFrame:
    """The chart's view of context attribution: item, tokens, times_carried, cost_usd.

    One row per conversation item (``attribution.attribute_context``), labelled with its
    session; ``cost_usd`` is its exact share of the input cost of the calls that re-sent it.
    """
    _, items = attribute_context(priced, events)
    return items.filter(pl.col("item_kind") != "fixed").select(
        pl.format("{} · {}", pl.col("session_id").str.slice(0, 8), "label").alias("item"),
        pl.col("tokens_added").alias("tokens"),
        pl.col("sends").alias("times_carried"),
        "cost_usd",
    )


def render_report(
    analysis: Analysis, table: RateTable, tables: Sequence[RateTable], zone: str
) -> str:
    """The report as one HTML document: ``table`` prices the calls, ``tables`` are compared.

    ``zone`` (an IANA name) decides which day a call belongs to.
    """
    from analytics import plots

    priced, carried, fixed_parts = _by_groups(analysis, table)
    calls = priced.drop(list(COSTS))
    busiest = _busiest_session(priced)
    session = priced.filter(pl.col("session_id") == busiest)
    fixed = fixed_parts.filter(pl.col("session_id") == busiest)
    # The fixed part as the log states it, else as the reconstruction fitted it (main agent).
    fitted: list[int] = (
        session.filter(pl.col("kind") == "main")["fixed_part_tokens"].drop_nulls().to_list()
    )
    fixed_value = (fixed["fixed_tokens"].item() if fixed.height else None) or (
        fitted[0] if fitted else None
    )
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
            "Conversation items that later calls re-sent the most; cost is each item's exact"
            " share of the input cost of the calls that carried it (agentcost top).",
            plots.carried_items(carried),
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
            plots.provider_comparison(table_totals(calls, tables)),
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
