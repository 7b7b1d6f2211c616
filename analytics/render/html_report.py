"""The self-contained HTML report: every chart of ``plots.py`` in one offline file.

Pure: an :class:`~analytics.engine.analyze.Analysis` and rate tables in, an HTML string out;
only ``agentcost report --html`` writes it. plotly.js is embedded once (with the first chart),
so the file opens without a network. A hidden ``<pre id="js-errors">`` collects any
JavaScript error the page raises, which the browser test reads back.

The report opens on the session with the most LLM calls: how its context grows call by call
and what each call costs. A selector, a click on a row of the sessions table, or
``#session=<id>`` in the address redraws those two charts for any other session: each
session's figures are embedded as plain plotly.js specs (``plots.*_spec``) in a JSON script
element, so the file stays one offline page. A click on a heading sorts the table;
``#sort=N`` (``#sort=Nd``: descending) does so on opening, for a link to share. For all
sessions: the context items carried the most, the cost per day and the cost under every
bundled rate table.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from analytics.core.attribution import attribute_context
from analytics.core.pricing.call_costs import AGENT_COSTS, unpriced_models
from analytics.core.pricing.compare import table_totals
from analytics.core.pricing.price import price_analysis, price_calls
from analytics.core.pricing.rates import RateTable
from analytics.core.schema import COSTS
from analytics.engine.analyze import Analysis
from analytics.engine.tokens import stated_fixed_part
from analytics.engine.validate import with_reconstruction
from analytics.render.text_table import counted, counted_expr

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
#js-errors { color: #b00; }
.picker { margin: 0.5rem 0 1rem; } .picker select { font-size: 1rem; max-width: 100%; }
.scroll { max-height: 24rem; overflow: auto; border: 1px solid #ddd; }
table.sessions { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
table.sessions th, table.sessions td { padding: 0.25rem 0.6rem; text-align: left;
  white-space: nowrap; border-bottom: 1px solid #eee; }
table.sessions th { position: sticky; top: 0; background: #f6f6f6; cursor: pointer;
  user-select: none; }
table.sessions th[aria-sort="ascending"]::after { content: " \\25B2"; }
table.sessions th[aria-sort="descending"]::after { content: " \\25BC"; }
table.sessions td.num, table.sessions th.num { text-align: right; }
table.sessions td:nth-child(3) { white-space: normal; }
table.sessions tbody tr { cursor: pointer; }
table.sessions tbody tr:hover { background: #f3f7ff; }
table.sessions tbody tr.chosen { background: #dde8ff; }
@media (max-width: 640px) {
  body { margin: 1rem auto; padding: 0 0.75rem; }
  h2 { margin-top: 1.8rem; }
  .picker select { display: block; width: 100%; }
  table.sessions thead { display: none; }
  table.sessions, table.sessions tbody, table.sessions tr, table.sessions td { display: block; }
  table.sessions tr { border-bottom: 1px solid #ccc; padding: 0.3rem 0.4rem; }
  table.sessions td, table.sessions td.num { display: flex; justify-content: space-between;
    gap: 1rem; border: 0; padding: 0.05rem 0; white-space: normal; text-align: right; }
  table.sessions td::before { content: attr(data-label); color: #555; text-align: left; }
}"""

#: At most this many sessions (those with the most calls) can be picked in one report, so a
#: tree of thousands of sessions still gives a file a browser opens quickly.
MAX_SELECTABLE = 500

_SELECTOR_SCRIPT = """<script>
(function () {
  var charts = JSON.parse(document.getElementById("session-charts").textContent);
  var select = document.getElementById("session-select");
  var table = document.getElementById("sessions");
  var body = table.tBodies[0];
  var config = {displaylogo: false, responsive: true};
  function draw(id, spec) {
    var chart = document.getElementById(id);
    var layout = Object.assign({}, spec.layout, {template: chart.layout.template});
    Plotly.react(chart, spec.data, layout, config);
    chart.setAttribute("data-session", select.value);
  }
  function show() {
    var chosen = charts[select.value];
    if (!chosen) { return; }
    draw("chart-1", chosen.growth);
    draw("chart-2", chosen.cost);
    Array.prototype.forEach.call(body.rows, function (row) {
      row.classList.toggle("chosen", row.getAttribute("data-session") === select.value);
    });
  }
  function pick(id) {
    if (!charts[id]) { return; }
    select.value = id;
    select.dispatchEvent(new Event("change"));
  }
  select.addEventListener("change", show);
  body.addEventListener("click", function (event) {
    var row = event.target.closest("tr");
    if (row) { pick(row.getAttribute("data-session")); }
  });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
    th.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      var numeric = th.classList.contains("num");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-value");
        var y = b.cells[column].getAttribute("data-value");
        if (x === y) { return 0; }
        if (x === "") { return 1; }
        if (y === "") { return -1; }
        var order = numeric ? parseFloat(x) - parseFloat(y) : (x < y ? -1 : 1);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
        other.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    });
  });
  var wanted = /session=([^&]+)/.exec(window.location.hash);
  if (wanted) { pick(decodeURIComponent(wanted[1])); } else { show(); }
  var order = /sort=(\\d+)(d?)/.exec(window.location.hash);
  var heading = order && table.tHead.rows[0].cells[Number(order[1])];
  if (heading) { heading.click(); if (order[2]) { heading.click(); } }
})();
</script>"""


def _by_groups(
    analysis: Analysis, table: RateTable, model_map: Mapping[str, str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(priced calls with their reconstruction, carried items, stated fixed parts), built a
    group of sessions at a time (``Analysis.session_groups``) so memory follows a group."""
    priced, carried, fixed = [], [], []
    for group in analysis.session_groups():
        calls = price_calls(
            with_reconstruction(group), table, model_map=model_map, log_prices=analysis.log_prices
        )
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


def _fixed_parts(priced: pl.DataFrame, stated: pl.DataFrame) -> dict[str, int]:
    """Per session, the fixed part to shade: as the log states it, else as the reconstruction
    fitted it for the main agent (its first call's ``fixed_part_tokens``)."""
    fitted = (
        priced.filter((pl.col("kind") == "main") & pl.col("fixed_part_tokens").is_not_null())
        .sort("session_id", "call_index")
        .group_by("session_id")
        .agg(pl.col("fixed_part_tokens").first().alias("_fitted"))
    )
    both = fitted.join(stated, on="session_id", how="full", coalesce=True).select(
        "session_id", pl.coalesce("fixed_tokens", "_fitted")
    )
    return {sid: value for sid, value in both.iter_rows() if value is not None}


def render_report(
    analysis: Analysis,
    table: RateTable,
    tables: Sequence[RateTable],
    zone: str,
    model_map: Mapping[str, str] | None = None,
) -> str:
    """The report as one HTML document: ``table`` prices the calls (their models renamed by
    ``model_map`` first), ``tables`` are compared.

    ``zone`` (an IANA name) decides which day a call belongs to.
    """
    from analytics.render import plots

    priced, carried, fixed_parts = _by_groups(analysis, table, model_map or {})
    calls = priced.drop([*COSTS, *AGENT_COSTS, "billed_usd"], strict=False)  # as before pricing
    chosen = _selectable(priced)
    busiest = chosen[0] if chosen else None
    fixed = _fixed_parts(priced, fixed_parts)
    specs = _session_specs(priced, chosen, fixed, table.name)
    first = priced.filter(pl.col("session_id") == pl.lit(busiest, pl.String))
    short = (busiest or "none")[:8]
    figures = [
        (
            "Context growth",
            "Input tokens of each call of the chosen session (left axis) and in total (right"
            " axis). Every call re-sends the fixed part and the whole conversation so far, so the"
            " per-call line climbs and the total grows quadratically.",
            plots.context_growth(
                first,
                fixed_tokens=fixed.get(busiest or ""),
                title=f"Context growth, session {short}",
            ),
        ),
        (
            "Cost per call",
            f"The chosen session's calls, priced with {table.name}.",
            plots.cost_per_call(first, title=f"Cost per call, session {short}"),
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
            "The same calls under each bundled rate table, each model under the table's own"
            " name for it (the model-equivalence map of agentcost compare). A table that does"
            " not sell a model leaves its calls unpriced; the axis says how many it priced.",
            plots.provider_comparison(table_totals(calls, tables)),
        ),
    ]
    _, sessions = price_analysis(
        analysis.calls, analysis.sessions, table, log_prices=analysis.log_prices
    )
    body = [_facts(analysis, priced, table, zone), _picker(sessions, chosen, zone, table.name)]
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
    payload = json.dumps(specs, separators=(",", ":")).replace("</", "<\\/")
    body.append(f'<script type="application/json" id="session-charts">{payload}</script>')
    body.append(_SELECTOR_SCRIPT)
    return _page("agentcost report", "\n".join(body))


def _selectable(priced: pl.DataFrame) -> list[str]:
    """The sessions the reader can pick: most calls first (the first id on a tie), at most
    ``MAX_SELECTABLE``."""
    counts = (
        priced.group_by("session_id").len().sort(["len", "session_id"], descending=[True, False])
    )
    return counts["session_id"].head(MAX_SELECTABLE).to_list()


def _session_specs(
    priced: pl.DataFrame, chosen: Sequence[str], fixed: dict[str, int], rates: str
) -> dict[str, dict[str, Any]]:
    """The two per-session charts of every chosen session, as plain plotly.js specs."""
    from analytics.render import plots

    by_session = priced.filter(pl.col("session_id").is_in(list(chosen))).partition_by(
        "session_id", as_dict=True
    )
    specs = {}
    for session_id in chosen:
        calls, short = by_session[(session_id,)], session_id[:8]
        specs[session_id] = {
            "growth": plots.context_growth_spec(
                calls, fixed_tokens=fixed.get(session_id), title=f"Context growth, session {short}"
            ),
            "cost": plots.cost_per_call_spec(calls, title=f"Cost per call, session {short}"),
        }
    return specs


def _escaped(column: str, unknown: str = "") -> pl.Expr:
    """A column as HTML text (``&``, ``<``, ``>``, ``"`` escaped); null as ``unknown``."""
    text = pl.col(column).cast(pl.String).fill_null(unknown)
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;")):
        text = text.str.replace_all(char, entity, literal=True)
    return text


_NUM = ' class="num"'
#: The sessions table: (heading, numeric, shown column, sort-value column) of ``_picker``.
_SESSION_CELLS = [
    ("session", False, "_short", "session_id"),
    ("start", False, "_start", "_start"),
    ("models", False, "_models", "_models"),
    ("calls", True, "llm_calls", "llm_calls"),
    ("input tokens", True, "_input", "_input_value"),
    ("cost USD", True, "_cost", "_cost_value"),
    ("billed USD", True, "_billed", "_billed"),
    ("status", False, "status", "status"),
]


def _picker(sessions: pl.DataFrame, chosen: Sequence[str], zone: str, rates: str) -> str:
    """The session selector and the sortable sessions table (the chosen sessions, busiest
    first), with a note of the sessions left out. On a phone (the page's ``@media`` rule)
    the table's rows stack, each cell led by its heading (``data-label``), so calls and cost
    are never off the screen."""
    from analytics.render.report import cost_cell, dollars, thousands

    tokens = pl.coalesce("input_tokens", "calls_input_tokens")
    rows = (
        sessions.join(
            pl.DataFrame(
                {"session_id": list(chosen)}, schema={"session_id": pl.String}
            ).with_row_index("_order"),
            on="session_id",
        )
        .sort("_order")
        .with_columns(
            pl.col("start_time")
            .dt.convert_time_zone(zone)
            .dt.strftime("%Y-%m-%d %H:%M")
            .alias("_start"),
            pl.col("models").list.join(", ").alias("_models"),
            cost_cell().alias("_cost"),
            pl.col("cost_usd").cast(pl.String).alias("_cost_value"),
            dollars(pl.col("billed_usd")).alias("_billed"),
            tokens.alias("_input_value"),
            thousands(tokens).alias("_input"),
            pl.col("session_id").str.slice(0, 8).alias("_short"),
        )
    )
    headings = {"start": f"start ({zone})", "cost USD": f"cost USD ({rates})"}
    labels = [headings.get(name, name) for name, _, _, _ in _SESSION_CELLS]
    head = "".join(
        f'<th{_NUM if numeric else ""} scope="col">{html.escape(label)}</th>'
        for (_, numeric, _, _), label in zip(_SESSION_CELLS, labels, strict=True)
    )
    options = rows.select(
        pl.format(
            '<option value="{}">{} · {} · {} · {}</option>',
            *(_escaped(c) for c in ("session_id", "_short", "_start")),
            counted_expr(pl.col("llm_calls"), "call"),
            _escaped("_cost"),
        )
    )
    with_calls = sessions.filter(pl.col("llm_calls") > 0).height
    left_out = [
        *(
            [f"The {len(chosen)} sessions with the most calls of {with_calls} are listed."]
            if len(chosen) < with_calls
            else []
        ),
        *(
            [f"Sessions without LLM calls: {sessions.height - with_calls} (not listed)."]
            if sessions.height > with_calls
            else []
        ),
    ]
    return (
        '<section><h2>Sessions</h2><p class="note">Pick a session for the context-growth and'
        " cost-per-call charts below, here or by clicking its row; click a heading to sort."
        f"{html.escape(''.join(' ' + note for note in left_out))}</p>"
        '<div class="picker"><label for="session-select">session </label>'
        f'<select id="session-select">{_joined(options)}</select></div>'
        f'<div class="scroll"><table class="sessions" id="sessions"><thead><tr>{head}</tr>'
        f"</thead><tbody>{_joined(rows.select(_session_row(labels)))}</tbody></table></div>"
        "</section>"
    )


def _session_row(labels: Sequence[str]) -> pl.Expr:
    """One ``<tr>`` of the sessions table: each cell shows its text and sorts by its value,
    and names its column (``labels``: the headings) for the stacked layout of a phone; the
    session cell shows the full id on hover."""
    parts: list[pl.Expr] = [pl.lit('<tr data-session="'), _escaped("session_id"), pl.lit('">')]
    for (name, numeric, shown, value), label in zip(_SESSION_CELLS, labels, strict=True):
        full = [pl.lit('" title="'), _escaped("session_id")] if name == "session" else []
        parts += [
            pl.lit(f'<td{_NUM if numeric else ""} data-value="'),
            _escaped(value),
            *full,
            pl.lit(f'" data-label="{html.escape(label)}">'),
            _escaped(shown, "-"),
            pl.lit("</td>"),
        ]
    return pl.concat_str([*parts, pl.lit("</tr>")])


def _joined(lines: pl.DataFrame) -> str:
    """The one column of ``lines``, one line each."""
    return str(lines.to_series().str.join("\n").item())


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
        f"{row['model'] or 'unknown model'} ({counted(row['calls'], 'call')})"
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
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body>\n{_ERRORS_CAPTURE}\n{body}\n</body></html>\n"
    )
