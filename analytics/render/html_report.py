"""The self-contained HTML report: every chart of ``plots.py`` in one offline file.

Pure: an :class:`~analytics.engine.analyze.Analysis` and rate tables in, an HTML string out;
only ``agentcost report --html`` writes it. plotly.js (its basic bundle, ``vendor/``) is
in the page once, and every chart is drawn by one script from one JSON block
(``report-data``): the plotly template, each chart's plain spec, and for each session its two
charts, the hover rows of its calls and what its layouts do not share with the others', so
no data is copied per chart. A hidden ``<pre id="js-errors">`` collects any JavaScript error
the page raises, which the browser test reads back.

The header says what was read, the cost and why each unpriced call has none; a table gives
each agent's totals. The report opens on the session with the most LLM calls: how its
context grows call by call and what each call costs. A selector, a click on a row of the
sessions table, or ``#session=<id>`` in the address redraws those two charts for any other
session. A click on a heading sorts the table; ``#sort=N`` (``#sort=Nd``: descending) does
so on opening, for a link to share. For all sessions: the context items carried the most,
the cost per day (by agent, or by model on demand) and the cost under every bundled rate
table.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from analytics.core.pricing.call_costs import AGENT_COSTS
from analytics.core.pricing.compare import table_totals
from analytics.core.pricing.price import price_sessions
from analytics.core.pricing.rates import RateTable
from analytics.core.schema import COSTS
from analytics.core.words import counted_expr

if TYPE_CHECKING:
    from analytics.engine.analyze import Analysis
    from analytics.engine.html_frames import ReportFrames

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
table.sessions td:nth-child(4) { white-space: normal; }
table.agents { border-collapse: collapse; font-size: 0.9rem; }
table.agents th, table.agents td { padding: 0.25rem 0.6rem; border-bottom: 1px solid #eee;
  text-align: right; }
table.agents th:first-child, table.agents td:first-child { text-align: left;
  white-space: nowrap; }
table.agents tbody tr:last-child td { font-weight: 600; border-top: 1px solid #999; }
table.sessions tbody tr { cursor: pointer; }
table.sessions tbody tr:hover { background: #f3f7ff; }
table.sessions tbody tr.chosen { background: #dde8ff; }
@media (max-width: 640px) {
  body { margin: 1rem auto; padding: 0 0.75rem; }
  h2 { margin-top: 1.8rem; }
  .picker select { display: block; width: 100%; }
  table.agents th, table.agents td { padding: 0.2rem 0.25rem; }
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

#: The page's one script after plotly.js: draws every chart from the ``report-data`` block
#: (the plotly template once, each chart's spec, each session's hover rows once) and wires the
#: session selector, the table's rows and headings and the cost-per-day view. A chart's
#: legend (below it) takes as many rows as the width needs, and the chart grows by as much:
#: drawn first with a row (``ROW`` px) for each entry, it then takes its height plus the
#: legend's, so its plot area keeps its size on a phone as on a desk.
_DRAW_SCRIPT = """<script>
(function () {
  var report = JSON.parse(document.getElementById("report-data").textContent);
  var ROW = 24;
  var select = document.getElementById("session-select");
  var table = document.getElementById("sessions");
  var body = table.tBodies[0];
  var config = {displaylogo: false, responsive: true};
  var drawn = {};
  var NONE = {calls: {}, growth: {data: [], layout: {}}, cost: {data: [], layout: {}}};
  function traces(spec, rows) {
    return spec.data.map(function (trace) {
      if (trace.style === undefined) { return trace; }
      var full = Object.assign({}, report.styles[trace.style], trace);
      delete full.style;
      if (full.customdata === "@call") {
        full.customdata = full.x.map(function (x) { return rows[x]; });
        full.hovertemplate = full.hovertemplate.replace("@call", report.call_hover);
      }
      return full;
    });
  }
  function merged(common, own) {
    var out = Object.assign({}, common);
    Object.keys(own).forEach(function (key) {
      var a = common[key], b = own[key];
      var both = [a, b].every(function (v) {
        return v && typeof v === "object" && !Array.isArray(v);
      });
      out[key] = both ? merged(a, b) : b;
    });
    return out;
  }
  function draw(id, spec, rows) {
    var chart = document.getElementById(id);
    var entries = spec.data.filter(function (trace) { return trace.showlegend !== false; });
    var height = spec.layout.height;
    var layout = Object.assign({}, spec.layout, {
      template: report.template, height: height + ROW * entries.length
    });
    drawn[id] = [spec, rows];
    return Plotly.react(chart, traces(spec, rows || {}), layout, config).then(function () {
      var legend = chart.querySelector(".legend");
      var used = legend ? Math.ceil(legend.getBoundingClientRect().height) : 0;
      return Plotly.relayout(chart, {height: height + used});
    });
  }
  function show() {
    var chosen = report.sessions[select.value] || NONE;
    ["growth", "cost"].forEach(function (kind, index) {
      var layout = merged(report.layouts[kind], chosen[kind].layout);
      draw("chart-" + (index + 1), {data: chosen[kind].data, layout: layout}, chosen.calls);
    });
    ["chart-1", "chart-2"].forEach(function (id) {
      document.getElementById(id).setAttribute("data-session", select.value);
    });
    Array.prototype.forEach.call(body.rows, function (row) {
      row.classList.toggle("chosen", row.getAttribute("data-session") === select.value);
    });
  }
  function pick(id) {
    if (!report.sessions[id]) { return; }
    select.value = id;
    select.dispatchEvent(new Event("change"));
  }
  Object.keys(report.charts).forEach(function (id) { draw(id, report.charts[id]); });
  Array.prototype.forEach.call(document.querySelectorAll("select[data-chart]"), function (view) {
    var id = view.getAttribute("data-chart");
    function redraw() { draw(id, report.views[id][view.value]); }
    view.addEventListener("change", redraw);
    redraw();
  });
  var resizing;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      Object.keys(drawn).forEach(function (id) { draw(id, drawn[id][0], drawn[id][1]); });
    }, 200);
  });
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

#: plotly.js's basic bundle (scatter and bar traces, every axis, legend and annotation the
#: charts use): 1.2 MB where the full bundle plotly.py ships is 4.8 MB. Its version is the
#: plotly.js of the plotly package (a test checks); ``vendor/README.md`` says how to update it.
PLOTLY_JS = Path(__file__).with_name("vendor") / "plotly-basic.min.js"


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
    frames: ReportFrames,
    table: RateTable,
    tables: Sequence[RateTable],
    zone: str,
) -> str:
    """The report as one HTML document: ``frames`` (``engine.html_frames``: the calls
    priced by ``table``, their models renamed by the model map first, with the context they
    carried; the sessions' costs are their sums), ``tables`` compared.

    ``zone`` (an IANA name) decides which day a call belongs to. plotly.js is in the page
    once; every chart is drawn from one JSON block (:func:`_report_data`).
    """
    priced, carried, fixed_parts = frames
    calls = priced.drop([*COSTS, *AGENT_COSTS, "billed_usd"], strict=False)  # as before pricing
    chosen = _selectable(priced)
    sessions = price_sessions(priced, analysis.session_view, table)  # the calls priced once
    data = _report_data(
        priced, carried, calls, chosen, _fixed_parts(priced, fixed_parts), tables, zone
    )
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    sections = [
        _facts(analysis, priced, table, zone),
        _agents(priced, sessions, table.name),
        _picker(sessions, chosen, zone, table.name),
        *(
            _chart_section(f"chart-{index}", heading, note.format(rates=table.name, zone=zone))
            for index, (heading, note) in enumerate(_CHARTS, start=1)
        ),
        f"<script>{PLOTLY_JS.read_text('utf-8')}</script>",
        f'<script type="application/json" id="report-data">{payload}</script>',
        _DRAW_SCRIPT,
    ]
    return _page("agentcost report", "\n".join(sections))


#: The charts in page order: (heading, note; ``{rates}`` and ``{zone}`` filled in).
_CHARTS = (
    (
        "Context growth",
        "Input tokens of each call of the chosen session (left axis) and in total (right"
        " axis). Every call re-sends the fixed part and the whole conversation so far, so the"
        " per-call line climbs and the total grows quadratically.",
    ),
    ("Cost per call", "The chosen session's calls, priced with {rates}."),
    (
        "Top carried context items",
        "Conversation items that later calls re-sent the most; cost is each item's exact"
        " share of the input cost of the calls that carried it (agentcost top).",
    ),
    ("Cost per day", "All sessions, priced with {rates}; days in {zone}."),
    (
        "Rate tables compared",
        "The same calls under each bundled rate table, each model under the table's own"
        " name for it (the model-equivalence map of agentcost compare). A table that does"
        " not sell a model leaves its calls unpriced; the axis says how many it priced.",
    ),
)
#: Charts drawn one of several ways, the reader's choice: chart id -> the views' names, the
#: first drawn on opening.
_VIEWS = {"chart-4": ("agent", "model")}


def _chart_section(chart: str, heading: str, note: str) -> str:
    """A chart's section: heading, note, the view picker where it has views, its empty div."""
    views = _VIEWS.get(chart, ())
    picker = (
        f'<div class="picker"><label for="{chart}-view">stack by </label>'
        f'<select id="{chart}-view" data-chart="{chart}">'
        + "".join(f'<option value="{view}">{view}</option>' for view in views)
        + "</select></div>"
        if views
        else ""
    )
    return (
        f'<section><h2>{html.escape(heading)}</h2><p class="note">{html.escape(note)}</p>'
        f'{picker}<div id="{chart}" class="plotly-graph-div"></div></section>'
    )


def _report_data(
    priced: pl.DataFrame,
    carried: pl.DataFrame,
    calls: pl.DataFrame,
    chosen: Sequence[str],
    fixed: dict[str, int],
    tables: Sequence[RateTable],
    zone: str,
) -> dict[str, Any]:
    """What the page draws, as JSON: plotly's template once (``template``), the charts of all
    sessions (``charts``; ``views`` for those drawn one of several ways) and each chosen
    session's two charts with its calls' hover rows once (``sessions``)."""
    from analytics.render import plots

    return {
        "template": plots.template(),
        "charts": {
            "chart-3": plots.spec(plots.carried_items(carried)),
            "chart-5": plots.spec(plots.provider_comparison(table_totals(calls, tables))),
        },
        "views": {
            "chart-4": {
                view: plots.cost_per_day_spec(priced, zone, by=view) for view in _VIEWS["chart-4"]
            }
        },
        "call_hover": plots.CALL_HOVER,
        **_session_specs(priced, chosen, fixed),
    }


def _selectable(priced: pl.DataFrame) -> list[str]:
    """The sessions the reader can pick: most calls first (the first id on a tie), at most
    ``MAX_SELECTABLE``."""
    counts = (
        priced.group_by("session_id").len().sort(["len", "session_id"], descending=[True, False])
    )
    return counts["session_id"].head(MAX_SELECTABLE).to_list()


def _session_specs(
    priced: pl.DataFrame, chosen: Sequence[str], fixed: dict[str, int]
) -> dict[str, Any]:
    """The two charts of every chosen session, as plain plotly.js specs (``sessions``), with
    what is the same across sessions once: the parts of their layouts that all share
    (``layouts``; each session's layouts hold the rest) and the styles of their traces
    (``styles``; each trace holds its data and its style's index); and the hover rows of each
    session's calls once (its ``calls``)."""
    from analytics.render import plots

    by_session = priced.filter(pl.col("session_id").is_in(list(chosen))).partition_by(
        "session_id", as_dict=True
    )
    specs: dict[str, dict[str, Any]] = {}
    for session_id in chosen:
        calls, short = by_session[(session_id,)], session_id[:8]
        growth = plots.context_growth_spec(
            calls, fixed_tokens=fixed.get(session_id), title=f"Context growth, session {short}"
        )
        cost = plots.cost_per_call_spec(calls, title=f"Cost per call, session {short}")
        specs[session_id] = {
            "calls": plots.hover_by_call(growth, cost),
            "growth": growth,
            "cost": cost,
        }
    none = priced.clear()  # no session: the charts' empty layouts, drawn with no data
    layouts = (
        {kind: _common([spec[kind]["layout"] for spec in specs.values()]) for kind in _KINDS}
        if specs
        else {
            "growth": plots.context_growth_spec(none)["layout"],
            "cost": plots.cost_per_call_spec(none)["layout"],
        }
    )
    styles: dict[str, int] = {}
    for spec in specs.values():
        for kind, common in layouts.items():
            spec[kind]["layout"] = _without(spec[kind]["layout"], common)
            spec[kind]["data"] = [_styled(trace, styles) for trace in spec[kind]["data"]]
    return {
        "layouts": layouts,
        "styles": [json.loads(style) for style in styles],
        "sessions": specs,
    }


#: A trace's data: what it keeps when its style (the rest of it) is shared (``_styled``).
_TRACE_DATA = ("x", "y", "customdata")


def _styled(trace: dict[str, Any], styles: dict[str, int]) -> dict[str, Any]:
    """A trace as its data and ``style``: the index of the rest of it (type, name, colours,
    hover text) in ``styles``, where each style is once for every session. Adds to
    ``styles``."""
    style = json.dumps(
        {key: value for key, value in trace.items() if key not in _TRACE_DATA}, sort_keys=True
    )
    data = {key: trace[key] for key in _TRACE_DATA if key in trace}
    return {"style": styles.setdefault(style, len(styles)), **data}


#: The two charts of each session, in page order (``chart-1``, ``chart-2``).
_KINDS = ("growth", "cost")


def _common(specs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The entries that every one of ``specs`` (one or more) has, with the same value (nested
    objects entry by entry; a list is one value). The page merges them back (``merged``)."""
    common = {}
    for key, value in specs[0].items():
        values = [spec.get(key, _ABSENT) for spec in specs]
        if all(isinstance(v, dict) for v in values):
            shared = _common(values)
            if shared:
                common[key] = shared
        elif all(v == value for v in values):
            common[key] = value
    return common


_ABSENT = object()


def _without(spec: dict[str, Any], common: dict[str, Any]) -> dict[str, Any]:
    """``spec`` less the entries of ``common`` (its :func:`_common` with others)."""
    rest = {}
    for key, value in spec.items():
        if key not in common:
            rest[key] = value
        elif isinstance(value, dict):
            own = _without(value, common[key])
            if own:
                rest[key] = own
    return rest


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
    ("agent", False, "agent", "agent"),
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
    from analytics.render.views import cost_cell, dollars, thousands

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
    rows: list[tuple[str, Any]] = [
        ("sessions", analysis.sessions.height),
        ("LLM calls", priced.height),
        ("per-call tokens", source_text or "none"),
        ("rate table", f"{table.name} (prices checked {table.checked.isoformat()})"),
        ("cost of the priced calls", "unknown" if total is None else f"${total:,.4f}"),
        ("calls without a cost", priced.height - priced_calls),
        *(("why unpriced", reason) for reason in unpriced_reasons(priced)),
        ("days in", zone),
        ("input issues", analysis.issues.height),
    ]
    cells = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows
    )
    return f'<h1>agentcost report</h1><table class="facts">{cells}</table>'


def unpriced_reasons(priced: pl.DataFrame) -> list[str]:
    """Why the calls without a cost have none, one line a reason (the priced calls'
    ``unpriced_reason``, as ``call_costs.unpriced_reasons`` counts them), most calls first,
    with its models and their calls:
    ``output_tokens unknown: gpt-5-mini (26 calls), claude-haiku-4.5 (19 calls)``."""
    from analytics.core.pricing.call_costs import unpriced_reasons as by_model_and_reason

    lines = (
        by_model_and_reason(priced)
        .sort(["calls", "model"], descending=[True, False], nulls_last=True)
        .group_by("unpriced_reason", maintain_order=True)
        .agg(
            pl.col("calls").sum().alias("total"),
            pl.format(
                "{} ({})",
                pl.col("model").fill_null("unknown model"),
                counted_expr(pl.col("calls"), "call"),
            )
            .str.join(", ")
            .alias("models"),
        )
        .sort(["total", "unpriced_reason"], descending=[True, False])
    )
    return [f"{reason}: {models}" for reason, _, models in lines.iter_rows()]


def _agents(priced: pl.DataFrame, sessions: pl.DataFrame, rates: str) -> str:
    """The totals of each agent that wrote the logs (and of all of them): sessions, LLM calls,
    the cost of its priced calls, and its calls without a cost; a cost is unknown where none
    of its calls has one, never $0."""
    from analytics.render.views import dollars

    per_agent = (
        priced.group_by("agent")
        .agg(
            pl.len().alias("calls"),
            pl.col("cost_usd").sum().alias("cost"),
            pl.col("cost_usd").count().alias("priced"),
        )
        .join(sessions.group_by("agent").len("sessions"), on="agent", how="full", coalesce=True)
        .with_columns(pl.col("calls", "priced").fill_null(0))
        .sort("agent", nulls_last=True)
    )
    every = per_agent.select(
        pl.lit("all agents").alias("agent"), pl.sum("calls", "cost", "priced", "sessions")
    )
    rows = pl.concat([per_agent, every], how="vertical_relaxed").select(
        _escaped("agent", "unknown agent"),
        pl.col("sessions").fill_null(0).cast(pl.String),
        pl.col("calls").cast(pl.String),
        pl.when(pl.col("priced") > 0).then(dollars(pl.col("cost"))).otherwise(pl.lit("unknown")),
        (pl.col("calls") - pl.col("priced")).cast(pl.String).alias("unpriced"),
    )
    head = "".join(
        f"<th{_NUM if numeric else ''}>{html.escape(name)}</th>"
        for name, numeric in (
            ("agent", False),
            ("sessions", True),
            ("calls", True),
            ("cost USD", True),
            ("unpriced", True),
        )
    )
    body = "".join(
        "<tr><td>" + '</td><td class="num">'.join(row) + "</td></tr>" for row in rows.iter_rows()
    )
    return (
        '<section><h2>Agents</h2><p class="note">Each agent that wrote the logs, and all of'
        f" them (the last row): its sessions, its LLM calls, their cost with {html.escape(rates)}"
        " (of the priced calls) and its calls without a cost (unpriced).</p>"
        f'<table class="agents" id="agents"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></section>"
    )


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body>\n{_ERRORS_CAPTURE}\n{body}\n</body></html>\n"
    )
