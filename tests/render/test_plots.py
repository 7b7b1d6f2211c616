"""Chart builders: figures checked through ``fig.to_dict()`` on literal frames."""

from __future__ import annotations

import itertools
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.core.schema import CALL_TOKENS, CALLS, COSTS, MONEY, combine, padded
from analytics.render import plots

PRICED = combine(CALLS, CALL_TOKENS, COSTS)


def priced(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Priced calls (CALLS + CALL_TOKENS + COSTS) from partial rows; the rest is null."""
    return padded(pl.DataFrame(rows, infer_schema_length=None), PRICED)


def usd(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


SESSION = priced(
    [
        {
            "session_id": "s",
            "call_index": i,
            "kind": kind,
            "model": "claude-sonnet-4.6",
            "input_tokens": inp,
            "cache_read_tokens": read,
            "cache_write_tokens": inp - read,
            "output_tokens": 100,
            "token_source": "observed",
            "input_cost_usd": usd("0.001"),
            "cache_read_cost_usd": usd(cr),
            "cache_write_cost_usd": usd("0.002"),
            "output_cost_usd": usd("0.0015"),
            "request_cost_usd": usd("0"),
            "cost_usd": usd(total),
            "start_time": datetime(2026, 5, 1, 12, i, tzinfo=UTC),
        }
        for i, kind, inp, read, cr, total in [
            (1, "main", 3500, 0, "0", "0.0045"),
            (2, "main", 5000, 3500, "0.00105", "0.00555"),
            (3, "subagent", 6500, 5000, None, None),
        ]
    ]
)


def trace(fig: Any, name: str) -> dict[str, Any]:
    return next(t for t in fig.to_dict()["data"] if t.get("name") == name)


def test_context_growth_draws_per_call_and_running_total() -> None:
    fig = plots.context_growth(SESSION.reverse(), fixed_tokens=2000, title="growth")
    main = trace(fig, "input tokens of the call, main agent (observed)")
    assert (list(main["x"]), list(main["y"])) == ([1, 2], [3500, 5000])
    sub = trace(fig, "input tokens of the call, sub-agent (observed)")
    assert (list(sub["x"]), list(sub["y"])) == ([3], [6500])
    assert list(trace(fig, "input tokens sent so far")["y"]) == [3500, 8500, 15000]
    layout = fig.to_dict()["layout"]
    assert layout["title"]["text"] == "growth"
    assert layout["xaxis"]["title"]["text"] == "LLM call (index in the session)"
    shade = trace(fig, "fixed part, main agent: 2,000 tokens")
    assert (list(shade["x"]), list(shade["y"])) == ([1, 2], [2000, 2000])
    assert not layout.get("shapes")  # no band across every agent's calls


def test_context_growth_hover_names_the_call() -> None:
    per_call = trace(
        plots.context_growth(SESSION), "input tokens of the call, main agent (observed)"
    )
    assert list(per_call["customdata"][0]) == [
        1,
        "main",
        "claude-sonnet-4.6",
        "3,500",
        "0",
        "3,500",
        "100",
        "observed",
        "$0.004500",
    ]
    sub = trace(plots.context_growth(SESSION), "input tokens of the call, sub-agent (observed)")
    assert sub["customdata"][0][-1] == "unpriced"
    assert "call %{customdata[0]}" in per_call["hovertemplate"]


@pytest.mark.parametrize(
    ("source", "drawn"),
    [("observed", True), ("calibrated", False)],
)
def test_reconstruction_is_drawn_only_beside_observed_tokens(source: str, drawn: bool) -> None:
    calls = SESSION.with_columns(
        pl.lit(source).alias("token_source"),
        pl.Series("reconstructed_input_tokens", [3000, 4800, None]),
    )
    names = [t["name"] for t in plots.context_growth(calls).to_dict()["data"]]
    assert ("reconstructed from the log alone" in names) is drawn
    assert not plots.context_growth(calls).to_dict()["layout"].get("shapes")


def test_unknown_tokens_stay_gaps_not_zeros() -> None:
    calls = SESSION.with_columns(
        pl.Series("input_tokens", [3500, None, 6500]), pl.lit(None, pl.String).alias("token_source")
    )
    fig = plots.context_growth(calls)
    per_call = trace(fig, "input tokens of the call, main agent (unknown)")
    assert list(per_call["y"]) == [3500, None]
    assert per_call["customdata"][1][3] == "unknown"


def test_cost_per_call_stacks_the_four_parts() -> None:
    fig = plots.cost_per_call(SESSION)
    data = fig.to_dict()["data"]
    assert [t["name"] for t in data] == ["uncached input", "cache read", "cache write", "output"]
    assert list(trace(fig, "cache read")["y"]) == [0.0, 0.00105, None]
    assert fig.to_dict()["layout"]["barmode"] == "stack"
    assert fig.to_dict()["layout"]["yaxis"]["title"]["text"] == "cost (USD)"
    assert "cost %{customdata[8]}" in data[0]["hovertemplate"]


def test_cost_per_call_shows_a_request_charge_when_there_is_one() -> None:
    calls = SESSION.with_columns(pl.lit(Decimal("0.04"), MONEY).alias("request_cost_usd"))
    assert list(trace(plots.cost_per_call(calls), "per-request charge")["y"]) == [0.04] * 3


ITEMS = pl.DataFrame(
    {
        "item": ["a", "b", "c", "d"],
        "tokens": [100, 5000, 10, 300],
        "times_carried": [10, 1, 3, 2],
        "cost_usd": [Decimal("0.0123"), None, Decimal("0.00001"), Decimal("0.5")],
    },
    schema_overrides={"cost_usd": MONEY},
)


def test_carried_items_keeps_the_top_by_carried_tokens_largest_on_top() -> None:
    figure = plots.carried_items(ITEMS, top=3).to_dict()
    bar = figure["data"][0]
    assert list(bar["x"]) == [600, 1000, 5000]  # plotly draws the last row at the top
    assert bar["orientation"] == "h"
    labels = [(note["y"], note["text"]) for note in figure["layout"]["annotations"]]
    assert labels == [(0, "d · $0.5000"), (1, "a · $0.0123"), (2, "b · unpriced")]


def test_cost_per_day_uses_the_timezone_and_keeps_unpriced_days_unknown() -> None:
    calls = priced(
        [
            {"model": "m", "start_time": datetime(2026, 5, 1, 22, 30, tzinfo=UTC), "cost_usd": a}
            for a in (Decimal("0.25"), Decimal("0.5"), None)
        ]
        + [{"model": "n", "start_time": datetime(2026, 5, 1, 12, tzinfo=UTC), "cost_usd": None}]
    )
    fig = plots.cost_per_day(calls, "Europe/Paris")
    m, n = trace(fig, "m"), trace(fig, "n")
    assert [str(day) for day in m["x"]] == ["2026-05-02"]
    assert list(m["y"]) == [0.75]
    assert [list(row) for row in m["customdata"]] == [[3, 1]]
    assert list(n["y"]) == [None]
    assert fig.to_dict()["layout"]["xaxis"]["title"]["text"] == "day (Europe/Paris)"


def test_provider_comparison_labels_how_much_each_table_priced() -> None:
    totals = pl.DataFrame(
        {
            "rates": ["openai", "anthropic"],
            "cost_usd": [None, Decimal("2.5")],
            "calls": [4, 4],
            "priced_calls": [0, 3],
        },
        schema_overrides={"cost_usd": MONEY},
    )
    figure = plots.provider_comparison(totals).to_dict()
    assert list(figure["data"][0]["x"]) == [None, 2.5]  # openai at the bottom, no bar
    labels = [note["text"] for note in figure["layout"]["annotations"]]
    assert labels == [
        "openai · unpriced · 0/4 calls priced",
        "anthropic · $2.5000 · 3/4 calls priced",
    ]


def test_builders_accept_empty_frames() -> None:
    empty = priced([])
    for fig in (
        plots.context_growth(empty),
        plots.cost_per_call(empty),
        plots.cost_per_day(empty, "UTC"),
        plots.carried_items(ITEMS.clear()),
    ):
        assert fig.to_dict()["layout"]["title"]["text"]


@settings(max_examples=15)  # building a figure takes ~0.1 s: keep the file fast
@given(st.lists(st.integers(min_value=0, max_value=10**7), min_size=1, max_size=30))
def test_running_total_is_the_sum_of_the_calls(inputs: list[int]) -> None:
    calls = pl.DataFrame(
        {
            "call_index": range(1, len(inputs) + 1),
            "kind": "main",
            "model": "m",
            "input_tokens": inputs,
            "token_source": "estimated",
        }
    )
    total = trace(plots.context_growth(calls), "input tokens sent so far")["y"]
    assert list(total)[-1] == sum(inputs)
    assert all(b >= a for a, b in itertools.pairwise(total))


def test_plotly_is_imported_only_by_plots() -> None:
    code = (
        "import sys, analytics, analytics.cli.commands, analytics.render.html_report; "
        "assert 'plotly' not in sys.modules, 'plotly imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def drawn_colours(spec: dict[str, Any]) -> list[str]:
    """The colour of each series of a chart as drawn: a bar's colour with its opacity (a pale
    fixed-part bar is not its agent's line), a line's colour."""
    colours = []
    for series in spec["data"]:
        if series["type"] == "bar":
            marker = series.get("marker", {})
            colours.append(f"{marker.get('color')}/{marker.get('opacity', 1)}")
        else:
            colours.append(str(series.get("line", {}).get("color")))
    return colours


def days_of_models(models: int) -> pl.DataFrame:
    """Priced calls of ``models`` models over three days, the n-th model costing n cents a call;
    every third model's calls on the first day unpriced."""
    return priced(
        [
            {
                "model": f"model-{n:02d}",
                "start_time": datetime(2026, 5, day, 12, tzinfo=UTC),
                "cost_usd": None if n % 3 == 0 and day == 1 else Decimal(n) / 100,
            }
            for n in range(1, models + 1)
            for day in (1, 2, 3)
        ]
    )


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1, max_value=len(plots.PALETTE) + 8))
def test_cost_per_day_never_repeats_a_colour(models: int) -> None:
    """Up to the palette's size each model is a series of its own colour; beyond it, the
    cheapest are one ``other`` series in the last colour, and the bars still add up."""
    calls = days_of_models(models)
    spec = plots.cost_per_day_spec(calls, "UTC")
    colours = drawn_colours(spec)
    assert len(set(colours)) == len(colours) == min(models, len(plots.PALETTE))
    names = [series["name"] for series in spec["data"]]
    folded = models - len(plots.PALETTE) + 1
    assert (f"other {folded} models" in names) is (models > len(plots.PALETTE))
    drawn = sum(y for series in spec["data"] for y in series["y"] if y is not None)
    assert drawn == pytest.approx(float(calls["cost_usd"].sum()))
    costliest = (
        calls.group_by("model")
        .agg(pl.col("cost_usd").sum())
        .sort(["cost_usd", "model"], descending=[True, False])
    )
    assert names[0] == costliest["model"][0]  # the costliest first


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=1, max_value=len(plots.PALETTE) + 5))
def test_context_growth_gives_each_agent_its_own_colour(agents: int) -> None:
    """The main agent and each named sub-agent: its own colour, past the palette too."""
    calls = priced(
        [
            {
                "call_index": n + 1,
                "kind": "main" if n == 0 else "subagent",
                "agent_name": None if n == 0 else f"helper-{n}",
                "model": "m",
                "input_tokens": 1000 + n,
                "token_source": "observed",
            }
            for n in range(agents)
        ]
    )
    spec = plots.context_growth_spec(calls)
    colours = drawn_colours(spec)
    assert len(set(colours)) == len(colours)


def test_cost_per_day_stacks_by_agent_and_spans_every_bar() -> None:
    calls = days_of_models(2).with_columns(
        pl.Series("agent", ["codex", "claude-code"] * 3, dtype=pl.String)
    )
    spec = plots.cost_per_day_spec(calls, "UTC", by="agent")
    assert [series["name"] for series in spec["data"]] == ["claude-code", "codex"]
    assert spec["layout"]["title"]["text"] == "Cost per day, by agent"
    width = spec["data"][0]["width"]
    assert width == 0.8 * 86_400_000  # a day's bar, in ms on the date axis
    # the axis runs half a day beyond the first and last days: each bar is inside it
    assert spec["layout"]["xaxis"]["range"] == ["2026-04-30 12:00", "2026-05-03 12:00"]


def test_hover_rows_are_kept_once_per_call() -> None:
    growth = plots.context_growth_spec(SESSION)
    cost = plots.cost_per_call_spec(SESSION)
    rows = plots.hover_by_call(growth, cost)
    assert sorted(rows) == [1, 2, 3]
    assert rows[3][-1] == "unpriced"
    carried = [t for t in growth["data"] + cost["data"] if t.get("customdata") == plots.BY_CALL]
    assert len(carried) == 2 + 4  # each agent's line, each cost part
    assert all(plots.BY_CALL in t["hovertemplate"] for t in carried)
    assert all(plots.CALL_HOVER not in t.get("hovertemplate", "") for t in growth["data"])


def test_an_unpriced_calls_hover_says_why() -> None:
    calls = SESSION.with_columns(
        pl.Series("unpriced_reason", [None, None, "model not in the rate table"])
    )
    rows = plots.hover_by_call(plots.cost_per_call_spec(calls))
    assert [rows[n][-1] for n in (1, 3)] == ["$0.004500", "unpriced: model not in the rate table"]
