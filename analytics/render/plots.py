"""Charts: pure functions from polars frames to plotly figures.

The only module that imports plotly, so ``import analytics`` and the text commands stay fast.
Each builder takes the frames of the pipeline (``schema.CALLS`` + ``CALL_TOKENS`` + ``COSTS``,
or a small summary frame documented on the function) and returns a ``plotly`` Figure; nothing
here reads files or prints. Money arrives as exact decimals and becomes float only here, for
drawing; labels show four decimals, six below a cent (``$0.0123``, ``$0.000412``). An unknown
token count or cost stays unknown: it is left out of a line or bar and named "unknown" or
"unpriced" in the hover text, never drawn as zero.

>>> import polars as pl
>>> calls = pl.DataFrame({"call_index": [1, 2], "kind": ["main", "main"],
...     "model": ["m", "m"], "input_tokens": [2000, 3500], "token_source": ["observed"] * 2})
>>> [trace["name"] for trace in context_growth(calls).to_dict()["data"]]
['input tokens of the call, main agent (observed)', 'input tokens sent so far']
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
import polars as pl

#: Cost parts of ``schema.COSTS`` drawn as the stacked bars of :func:`cost_per_call`.
COST_PARTS: dict[str, str] = {
    "input_cost_usd": "uncached input",
    "cache_read_cost_usd": "cache read",
    "cache_write_cost_usd": "cache write",
    "output_cost_usd": "output",
    "request_cost_usd": "per-request charge",
}

_TEMPLATE = "plotly_white"
#: Pixel height of the per-session charts: stated, so redrawing one for another session in a
#: responsive page keeps its size instead of taking the container's.
_HEIGHT = 480
#: Legends below the plot area, clear of the x-axis title.
_LEGEND = {
    "orientation": "h",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "x": 0,
    "maxheight": 2000,
}
#: Small fixed margins: every axis has ``automargin``, so plotly widens a margin exactly as
#: far as its labels need, and a phone's narrow chart keeps its width for the data. The top
#: one holds plotly's toolbar (about 30 px) above the title.
_MARGIN = {"l": 10, "r": 10, "t": 72, "b": 10}
#: Chart titles are short (the report's headings say the rest) and set a little smaller
#: than plotly's default, so they fit a phone's width.
_TITLE_FONT = {"size": 15}


def _title(text: str) -> dict[str, Any]:
    """A chart title at the left, just above the plot area: below the toolbar plotly shows
    at the top right (always, on a touch screen), so the two never overlap."""
    return {
        "text": text,
        "font": _TITLE_FONT,
        "x": 0,
        "xref": "paper",
        "xanchor": "left",
        "y": 1,
        "yref": "paper",
        "yanchor": "bottom",
        "pad": {"b": 12},
        "automargin": True,
    }


#: Call details shown on hover, in this order (``customdata`` columns).
CALL_HOVER = (
    "<b>call %{customdata[0]}</b> · %{customdata[1]} · %{customdata[2]}<br>"
    "input %{customdata[3]} tokens (cache read %{customdata[4]}, write %{customdata[5]})<br>"
    "output %{customdata[6]} tokens · tokens %{customdata[7]}<br>"
    "cost %{customdata[8]}"
)


def context_growth(
    calls: pl.DataFrame, *, fixed_tokens: int | None = None, title: str = ""
) -> go.Figure:
    """Input tokens of each call of one session, one series per kind of agent, and the
    running total sent so far.

    ``calls`` are one session's calls with ``call_index``, ``kind``, ``model``,
    ``input_tokens`` and ``token_source`` (``agent_name``, ``fixed_part_tokens``, cost and
    cache columns are used when present). Each kind of agent (the main agent, each named
    sub-agent, compactions) is its own series, with its own fixed part (system prompt + tool
    definitions, which every call of that agent re-sends however short its conversation is)
    drawn as pale bars under its calls: a sub-agent's small prompt is never drawn against the
    main agent's fixed part. ``fixed_tokens`` is the main agent's fixed part as the log states
    it; otherwise each call's ``fixed_part_tokens`` (the reconstruction's fit) is drawn. An
    optional ``reconstructed_input_tokens`` column (the same calls reconstructed from the log
    alone) is drawn as a dotted line beside each agent's observed calls, wherever both exist,
    to show the reconstruction's error.
    """
    return _styled(context_growth_spec(calls, fixed_tokens=fixed_tokens, title=title))


#: Series colours, all different: plotly's ten defaults, then ten darker ones that differ
#: from them. A chart takes them in order, one per series, so no colour repeats within it;
#: a chart with more series than this folds the smallest into one "other" series
#: (:func:`fold`), drawn in the last colour.
PALETTE = (
    "#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a",
    "#19d3f3", "#ff6692", "#b6e880", "#ff97ff", "#fecb52",
    "#222a2a", "#b68100", "#750d86", "#1ca71c", "#862a16",
    "#778aae", "#0d2a63", "#6c7c32", "#b2828d", "#00a08b",
)  # fmt: skip


def fold(series: list[str], noun: str) -> dict[str, str]:
    """Each of ``series`` (in drawing order: the costliest, or the first seen, first) to the
    series it is drawn as: itself while they fit the palette, else the first
    ``len(PALETTE) - 1`` themselves and the rest one series ``other N nouns`` (the palette's
    last colour). So a chart never repeats a colour, however many series it has.

    >>> fold(["a", "b"], "model")
    {'a': 'a', 'b': 'b'}
    >>> names = [f"m{n}" for n in range(len(PALETTE) + 2)]
    >>> sorted(set(fold(names, "model").values()) - set(names))
    ['other 3 models']
    """
    if len(series) <= len(PALETTE):
        return {name: name for name in series}
    kept = len(PALETTE) - 1
    other = f"other {len(series) - kept} {noun}s"
    return {name: name if n < kept else other for n, name in enumerate(series)}


def agent_of(calls: pl.DataFrame) -> pl.Series:
    """Each call's kind of agent, as the charts name it: ``main agent``, ``sub-agent NAME``
    (``sub-agent`` when unnamed) or ``compaction``."""
    name = (
        pl.col("agent_name") if "agent_name" in calls.columns else pl.lit(None, pl.String)
    ).fill_null("")
    return calls.select(
        pl.when(pl.col("kind") == "main")
        .then(pl.lit("main agent"))
        .when(pl.col("kind") == "compaction")
        .then(pl.lit("compaction"))
        .otherwise(pl.format("sub-agent {}", name).str.strip_chars_end(" "))
        .alias("agent")
    ).to_series()


def context_growth_spec(
    calls: pl.DataFrame, *, fixed_tokens: int | None = None, title: str = ""
) -> dict[str, Any]:
    """:func:`context_growth` as a plain plotly.js figure (``data`` and ``layout``, no
    template): what the HTML report's session selector draws, built without plotly's
    per-property validation (about 40 ms a figure)."""
    frame = calls.sort("call_index")
    frame = frame.with_columns(agent_of(frame))
    hover = _call_customdata(frame)
    if "fixed_part_tokens" not in frame.columns:
        frame = frame.with_columns(fixed_part_tokens=pl.lit(None, pl.Int64))
    if fixed_tokens is not None:
        main = pl.col("agent") == "main agent"
        frame = frame.with_columns(
            fixed_part_tokens=pl.when(main).then(fixed_tokens).otherwise("fixed_part_tokens")
        )
    drawn = fold(frame["agent"].unique(maintain_order=True).to_list(), "sub-agent")
    frame = frame.with_columns(pl.col("agent").replace_strict(drawn))
    of_call = frame["agent"].to_list()
    agents = list(dict.fromkeys(of_call))  # in the order of their first call
    x = frame["call_index"].to_list()
    data: list[dict[str, Any]] = []
    for agent, color in zip(agents, PALETTE, strict=False):
        own = frame.filter(pl.col("agent") == agent)
        sources = own["token_source"].drop_nulls().unique().sort().to_list()
        fixed = own["fixed_part_tokens"]
        if fixed.drop_nulls().len():
            sizes = fixed.drop_nulls().unique().sort()
            size = f"{sizes[0]:,}" if sizes.len() == 1 else f"{sizes[0]:,}-{sizes[-1]:,}"
            data.append(
                {
                    "type": "bar",
                    "x": own["call_index"].to_list(),
                    "y": fixed.to_list(),
                    "name": f"fixed part, {agent}: {size} tokens",
                    "marker": {"color": color, "opacity": 0.18},
                    "hovertemplate": f"call %{{x}}: fixed part of the {agent}, "
                    "%{y:,} tokens (system prompt + tool definitions)<extra></extra>",
                }
            )
        data.append(
            {
                "type": "scatter",
                "x": own["call_index"].to_list(),
                "y": own["input_tokens"].to_list(),
                "name": f"input tokens of the call, {agent} ({', '.join(sources) or 'unknown'})",
                "mode": "lines+markers",
                "line": {"color": color},
                "customdata": [hover[n] for n, name in enumerate(of_call) if name == agent],
                "hovertemplate": CALL_HOVER + "<extra></extra>",
            }
        )
    if "reconstructed_input_tokens" in frame.columns:
        data += _reconstructed_line(frame, agents)
    data.append(
        {
            "type": "scatter",
            "x": x,
            "y": frame["input_tokens"].cum_sum().to_list(),
            "name": "input tokens sent so far",
            "mode": "lines",
            "line": {"color": "rgba(90, 90, 90, 0.7)", "width": 1.5},
            "yaxis": "y2",
            "hovertemplate": "after call %{x}: %{y:,} input tokens in total<extra></extra>",
        }
    )
    layout: dict[str, Any] = {
        "title": _title(title or "Context growth"),
        "xaxis": _call_axis(frame.height),
        "yaxis": {
            "title": {"text": "input tokens of the call"},
            "rangemode": "tozero",
            "automargin": True,
        },
        "yaxis2": {
            "title": {"text": "sent so far"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
            "automargin": True,
        },
        "margin": _MARGIN,
        "barmode": "overlay",
        "bargap": 0.15,
        "legend": _LEGEND,
        "height": _HEIGHT,
    }
    return {"data": data, "layout": layout}


def _reconstructed_line(frame: pl.DataFrame, agents: list[str]) -> list[dict[str, Any]]:
    """The reconstruction beside the observed calls, one dotted line per kind of agent (each
    beside its observed line, a gap between agents), where both figures exist; none else."""
    both = frame.filter(
        (pl.col("token_source") == "observed") & pl.col("reconstructed_input_tokens").is_not_null()
    )
    if both.is_empty():
        return []
    x: list[int | None] = []
    y: list[int | None] = []
    for agent in agents:
        own = both.filter(pl.col("agent") == agent)
        if own.height:
            x += [*own["call_index"].to_list(), None]
            y += [*own["reconstructed_input_tokens"].to_list(), None]
    return [
        {
            "type": "scatter",
            "x": x,
            "y": y,
            "name": "reconstructed from the log alone",
            "mode": "lines+markers",
            "connectgaps": False,
            "line": {"color": "rgba(60, 60, 60, 0.8)", "dash": "dot", "width": 1.5},
            "marker": {"symbol": "circle-open", "color": "rgba(60, 60, 60, 0.8)"},
            "hovertemplate": "call %{x}: %{y:,} input tokens reconstructed<extra></extra>",
        }
    ]


def cost_per_call(calls: pl.DataFrame, *, title: str = "") -> go.Figure:
    """Cost of each call of one session, stacked by what it pays for.

    ``calls`` are priced calls (``schema.COSTS`` columns). Parts: uncached input, cache read,
    cache write, output, and the per-request charge when the table has one. A call whose cost
    is unknown (unpriced model, unknown tokens) has no bar and says so on hover.
    """
    return _styled(cost_per_call_spec(calls, title=title))


def cost_per_call_spec(calls: pl.DataFrame, *, title: str = "") -> dict[str, Any]:
    """:func:`cost_per_call` as a plain plotly.js figure (see :func:`context_growth_spec`)."""
    frame = calls.sort("call_index")
    hover = _call_customdata(frame)
    data = []
    for (column, label), color in zip(COST_PARTS.items(), PALETTE, strict=False):
        values = _usd(frame[column])
        if column == "request_cost_usd" and not any(values):
            continue
        data.append(
            {
                "type": "bar",
                "x": frame["call_index"].to_list(),
                "y": values,
                "name": label,
                "marker": {"color": color},
                "customdata": hover,
                "hovertemplate": f"{label}: $%{{y:.4f}}<br>" + CALL_HOVER + "<extra></extra>",
            }
        )
    layout = {
        "barmode": "stack",
        "title": _title(title or "Cost per call, by part"),
        "xaxis": _call_axis(frame.height),
        "yaxis": {"title": {"text": "cost (USD)"}, "tickprefix": "$", "automargin": True},
        "margin": _MARGIN,
        "legend": _LEGEND,
        "height": _HEIGHT,
    }
    return {"data": data, "layout": layout}


def _call_axis(calls: int) -> dict[str, Any]:
    """The x axis of per-call charts: whole call numbers only (about 20 ticks at most), from
    the first call to the last."""
    axis: dict[str, Any] = {
        "title": {"text": "LLM call (index in the session)"},
        "tick0": 1,
        "dtick": max(1, -(-calls // 20)),
        "zeroline": False,
        "automargin": True,
    }
    if calls:
        axis["range"] = [0.5, calls + 0.5]
    return axis


def _styled(spec: dict[str, Any]) -> go.Figure:
    """A figure from a plain spec, in agentcost's template."""
    fig = go.Figure(spec)
    fig.update_layout(template=_TEMPLATE)
    return fig


def template() -> dict[str, Any]:
    """agentcost's plotly template as plain JSON: a page holds it once, for all its charts."""
    plain: dict[str, Any] = json.loads(go.Figure(layout={"template": _TEMPLATE}).to_json())
    return plain["layout"]["template"]  # type: ignore[no-any-return]


def spec(fig: go.Figure) -> dict[str, Any]:
    """A figure as a plain plotly.js spec (``data``, ``layout``) without its template (see
    :func:`template`)."""
    plain: dict[str, Any] = json.loads(fig.to_json())
    plain["layout"].pop("template", None)
    return plain


#: What a trace's ``customdata`` and ``hovertemplate`` say in place of the per-call hover
#: rows and text (``CALL_HOVER``) that :func:`hover_by_call` took out.
BY_CALL = "@call"


def hover_by_call(*specs: dict[str, Any]) -> dict[int, Sequence[object]]:
    """The per-call hover rows of one session's ``specs``, each call's once, by call index.

    Every trace that carried them (with ``CALL_HOVER`` in its hover text) says
    :data:`BY_CALL` in its ``customdata`` and in its hover text instead; the page puts back,
    for each point, the row of the call at its x, and ``CALL_HOVER``. Changes ``specs``.
    """
    rows: dict[int, Sequence[object]] = {}
    for figure in specs:
        for trace in figure["data"]:
            if CALL_HOVER in trace.get("hovertemplate", "") and trace["customdata"]:
                rows.update(zip(trace["x"], trace["customdata"], strict=True))
                trace["customdata"] = BY_CALL
                trace["hovertemplate"] = trace["hovertemplate"].replace(CALL_HOVER, BY_CALL)
    return rows


def carried_items(items: pl.DataFrame, *, top: int = 15, title: str = "") -> go.Figure:
    """The context items carried the most: horizontal bars of tokens x times carried.

    ``items`` has ``item`` (a label), ``tokens`` (the item's size), ``times_carried`` (how many
    later calls re-sent it) and ``cost_usd`` (its share of those calls' input cost; null when
    unpriced). The ``top`` items by carried tokens are drawn, the largest at the top, each
    labelled with the item (cut to ``_LABEL_CHARS``; the hover has it whole) and its cost
    (``_labelled_bars``).
    """
    frame = (
        items.with_columns((pl.col("tokens") * pl.col("times_carried")).alias("carried_tokens"))
        .sort("carried_tokens", descending=True, nulls_last=True)
        .head(top)
        .reverse()
    )
    costs = _money_text(frame["cost_usd"])
    names = frame["item"].to_list()
    fig = _labelled_bars(
        frame["carried_tokens"].to_list(),
        [f"{_cut(name, _LABEL_CHARS)} · {cost}" for name, cost in zip(names, costs, strict=True)],
        customdata=list(
            zip(
                names,
                frame["tokens"].to_list(),
                frame["times_carried"].to_list(),
                costs,
                strict=True,
            )
        ),
        hovertemplate=(
            "<b>%{customdata[0]}</b><br>%{customdata[1]:,} tokens, carried by "
            "%{customdata[2]} calls<br>= %{x:,} input tokens · cost %{customdata[3]}"
            "<extra></extra>"
        ),
    )
    fig.update_layout(
        title=_title(title or f"Top {top} carried context items"),
        xaxis={"title": {"text": "tokens re-sent (size x times carried)"}, "automargin": True},
    )
    return fig


#: Characters of an item's label drawn in the carried-items chart (the hover has them all):
#: about two thirds of a phone's width at the chart's label size.
_LABEL_CHARS = 36


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ``…`` marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _labelled_bars(values: Sequence[Any], labels: Sequence[str], **bar: Any) -> go.Figure:
    """Horizontal pale bars, the first at the bottom, each with its ``labels`` entry written
    over it at the plot's left edge: no margin of labels beside the bars, so on a phone they
    keep the chart's width, and no label falls outside the plot. ``bar``: more of the bar
    trace's properties (hover)."""
    rows = list(range(len(values)))
    fig = go.Figure(
        go.Bar(
            x=list(values),
            y=rows,
            orientation="h",
            marker={"color": "rgba(99, 110, 250, 0.3)"},
            **bar,
        )
    )
    fig.update_layout(
        yaxis={"showticklabels": False, "range": [-0.6, len(rows) - 0.4], "automargin": True},
        annotations=[
            {
                "text": label,
                "xref": "paper",
                "x": 0,
                "xanchor": "left",
                "xshift": 4,
                "yref": "y",
                "y": row,
                "showarrow": False,
                "font": {"size": 11, "color": "#222"},
            }
            for row, label in zip(rows, labels, strict=True)
        ],
        margin=_MARGIN,
        height=max(320, 26 * len(rows) + 150),
        bargap=0.25,
        template=_TEMPLATE,
    )
    return fig


#: A day in milliseconds, the unit of bar widths on a date axis.
_DAY_MS = 86_400_000


def cost_per_day(
    calls: pl.DataFrame, zone: str, *, by: str = "model", title: str = ""
) -> go.Figure:
    """Cost per calendar day in ``zone``, stacked by ``by`` (a column of ``calls``: ``model``,
    or ``agent`` for the agent that wrote the log).

    ``calls`` are priced calls with ``start_time``; unpriced calls add nothing to a bar and are
    counted in the hover text instead. Calls without a start time have no day and are left out.
    Each series has its own colour (:data:`PALETTE`), the costliest first; past the palette's
    size the cheapest are one ``other`` series (:func:`fold`). The x axis spans every bar.
    """
    return _styled(cost_per_day_spec(calls, zone, by=by, title=title))


def cost_per_day_spec(
    calls: pl.DataFrame, zone: str, *, by: str = "model", title: str = ""
) -> dict[str, Any]:
    """:func:`cost_per_day` as a plain plotly.js figure (see :func:`context_growth_spec`)."""
    dated = calls.filter(pl.col("start_time").is_not_null()).with_columns(
        pl.col("start_time").dt.convert_time_zone(zone).dt.date().alias("day"),
        pl.col(by).cast(pl.String).fill_null(f"unknown {by}").alias("series"),
    )
    ranked = (
        dated.group_by("series")
        .agg(pl.col("cost_usd").sum(), pl.len())
        .sort(["cost_usd", "len", "series"], descending=[True, True, False], nulls_last=True)
    )
    drawn = fold(ranked["series"].to_list(), by)
    daily = (
        dated.with_columns(pl.col("series").replace_strict(drawn, return_dtype=pl.String))
        .group_by("day", "series")
        .agg(
            pl.when(pl.col("cost_usd").count() > 0)
            .then(pl.col("cost_usd").sum())
            .alias("cost_usd"),
            pl.len().alias("calls"),
            pl.col("cost_usd").null_count().alias("unpriced_calls"),
        )
        .sort("day")
    )
    data = []
    for series, color in zip(dict.fromkeys(drawn.values()), PALETTE, strict=False):
        group = daily.filter(pl.col("series") == series)
        data.append(
            {
                "type": "bar",
                "x": group["day"].dt.to_string().to_list(),
                "y": _usd(group["cost_usd"]),
                "name": series,
                "marker": {"color": color},
                "width": _DAY_MS * 0.8,  # in ms on a date axis: a day's bar, however far apart
                "customdata": group.select("calls", "unpriced_calls").rows(),
                "hovertemplate": (
                    f"<b>{html.escape(series)}</b> · %{{x|%Y-%m-%d}}<br>$%{{y:.4f}} for "
                    "%{customdata[0]} calls (%{customdata[1]} unpriced)<extra></extra>"
                ),
            }
        )
    xaxis: dict[str, Any] = {
        "title": {"text": f"day ({zone})"},
        "type": "date",
        "tickformat": "%Y-%m-%d",
        "nticks": 8,
        "automargin": True,
    }
    if daily.height:  # half a day beyond the first and last days: no bar is cut
        noon = pl.Series([daily["day"].min(), daily["day"].max()]).cast(pl.Datetime("ms"))
        edges = noon + pl.Series([-_DAY_MS // 2, _DAY_MS // 2]).cast(pl.Duration("ms"))
        xaxis["range"] = edges.dt.strftime("%Y-%m-%d %H:%M").to_list()
    layout = {
        "barmode": "stack",
        "title": _title(title or f"Cost per day, by {by}"),
        "xaxis": xaxis,
        "yaxis": {"title": {"text": "cost (USD)"}, "tickprefix": "$", "automargin": True},
        "legend": {**_LEGEND, "traceorder": "normal"},  # the costliest first
        "margin": _MARGIN,
        "height": _HEIGHT,
    }
    return {"data": data, "layout": layout}


def provider_comparison(totals: pl.DataFrame, *, title: str = "") -> go.Figure:
    """The same calls priced under several rate tables: one bar per table.

    ``totals`` has ``rates`` (table name), ``cost_usd`` (the priced calls' total; null when no
    call was priced), ``calls`` and ``priced_calls``. Each table's label says how many calls
    it could price beside its cost, so a cheap bar that covers few calls is not mistaken for
    a cheap provider; a table that priced none has no bar and says ``unpriced``.
    """
    frame = totals.sort("rates", descending=True)  # the first name alphabetically on top
    labels = [
        f"{name} · {cost} · {priced}/{calls} calls priced"
        for name, cost, priced, calls in zip(
            frame["rates"].to_list(),
            _money_text(frame["cost_usd"]),
            frame["priced_calls"].to_list(),
            frame["calls"].to_list(),
            strict=True,
        )
    ]
    fig = _labelled_bars(
        _usd(frame["cost_usd"]),
        labels,
        customdata=labels,
        hovertemplate="<b>%{customdata}</b><extra></extra>",
    )
    fig.update_layout(
        title=_title(title or "Each rate table"),
        xaxis={
            "title": {"text": "cost of the priced calls"},
            "tickprefix": "$",
            "rangemode": "tozero",
            "automargin": True,
        },
    )
    return fig


def _usd(money: pl.Series) -> list[float | None]:
    """Exact decimals as floats, for drawing only; null stays null."""
    return money.cast(pl.Float64).to_list()


def _money_text(money: pl.Series) -> list[str]:
    """Dollar amounts for labels (``$0.0123``, ``$0.000412``), ``unpriced`` where unknown."""
    return [
        "unpriced" if value is None else f"${value:,.{4 if abs(value) >= 0.01 else 6}f}"
        for value in money.cast(pl.Float64).to_list()
    ]


def _count_text(counts: pl.Series) -> list[str]:
    """Token counts with thousands separators, ``unknown`` where null."""
    return ["unknown" if value is None else f"{value:,}" for value in counts.to_list()]


def _call_customdata(frame: pl.DataFrame) -> list[Sequence[object]]:
    """Per-call hover fields in ``CALL_HOVER`` order; missing columns read as unknown."""

    def column(name: str) -> pl.Series:
        if name in frame.columns:
            return frame[name]
        return pl.Series(name, [None] * frame.height, dtype=pl.Int64)

    cost = _cost_text(frame) if "cost_usd" in frame.columns else None
    fields = [
        frame["call_index"].to_list(),
        frame["kind"].to_list(),
        ["unknown model" if m is None else m for m in frame["model"].to_list()],
        _count_text(column("input_tokens")),
        _count_text(column("cache_read_tokens")),
        _count_text(column("cache_write_tokens")),
        _count_text(column("output_tokens")),
        ["unknown" if s is None else s for s in column("token_source").cast(pl.String).to_list()],
        cost if cost is not None else ["not priced here"] * frame.height,
    ]
    return [list(row) for row in zip(*fields, strict=True)]


def _cost_text(frame: pl.DataFrame) -> list[str]:
    """Each call's cost as its hover says it; an unpriced call's with its reason
    (``unpriced_reason``, where the frame has it): ``unpriced: model not in the rate table``."""
    money = pl.Series(_money_text(frame["cost_usd"]), dtype=pl.String)
    if "unpriced_reason" not in frame.columns:
        return money.to_list()
    reason = pl.col("unpriced_reason")
    return (
        frame.select(
            pl.when(reason.is_not_null()).then(pl.format("unpriced: {}", reason)).otherwise(money)
        )
        .to_series()
        .to_list()
    )
