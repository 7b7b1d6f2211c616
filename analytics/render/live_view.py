"""The live view's screen (``agentcost watch``): the session's figures as a small table under
the log's path, with the growth of its input tokens as a sparkline."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from rich.console import RenderableType

    from analytics.engine.live_figures import Figures

_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[int], width: int) -> str:
    """The last ``width`` values as bars from the smallest (``▁``) to the largest (``█``), so
    the growth on top of the fixed part shows; all equal is a flat ``▁`` line.

    >>> sparkline([10_000, 10_500, 11_000, 12_000], 10)
    '▁▃▅█'
    """
    tail = pl.Series(values[-width:] if width > 0 else [], dtype=pl.Int64)
    low, high = tail.min(), tail.max()
    if not isinstance(low, int) or not isinstance(high, int) or high == low:
        return _BARS[0] * tail.len()
    levels = ((tail - low) * (len(_BARS) - 1) / (high - low)).round().cast(pl.Int64)
    return "".join(_BARS[level] for level in levels.to_list())


def view(shown: Figures | None, log: Path, width: int) -> RenderableType:
    """The screen: a small table of figures under the session id."""
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("watching", str(log))
    if shown is None:
        table.add_row("", "waiting for the first call…")
    else:
        mark = "~" if shown.estimated else ""
        unpriced = f" (+{shown.unpriced_calls} without a cost)" if shown.unpriced_calls else ""
        table.add_row("session", shown.session_id)
        table.add_row("calls so far", f"{shown.calls:,}")
        context = "-" if shown.context_tokens is None else f"{mark}{shown.context_tokens:,}"
        table.add_row("context now", f"{context} input tokens")
        table.add_row("cost so far", f"{_usd(shown.cost_usd, mark)}{unpriced}")
        table.add_row("last call", _usd(shown.last_cost_usd, mark, unknown="no cost"))
        span = f"  {shown.growth[0]:,} → {shown.growth[-1]:,}" if shown.growth else ""
        table.add_row("growth", sparkline(shown.growth, max(width - 40, 1)) + span)
    table.add_row("", "q or Ctrl-C quits")
    return table


def _usd(amount: Decimal | None, mark: str, unknown: str = "unpriced") -> str:
    return unknown if amount is None else f"{mark}${amount:,.4f}"
