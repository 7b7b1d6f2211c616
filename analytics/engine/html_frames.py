"""What the HTML report draws, worked out from an analysis: every call priced beside its
reconstruction, the context items each call carried, and each session's stated fixed part.

The renderer (``render.html_report``) only lays these out; working them out reconstructs
calls (``validate.with_reconstruction``), so it is the engine's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import polars as pl

from analytics.core.attribution import carried_context
from analytics.core.events import stated_fixed_part
from analytics.core.pricing.price import price_calls
from analytics.core.pricing.rates import RateTable
from analytics.engine.analyze import Analysis
from analytics.engine.validate import with_reconstruction


class ReportFrames(NamedTuple):
    """The report's frames: ``priced`` calls (with ``reconstructed_input_tokens``), the items
    they ``carried`` (``attribution.carried_context``) and the sessions' ``fixed`` parts as
    the logs state them (``events.stated_fixed_part``)."""

    priced: pl.DataFrame
    carried: pl.DataFrame
    fixed: pl.DataFrame


def report_frames(
    analysis: Analysis, table: RateTable, model_map: Mapping[str, str] | None = None
) -> ReportFrames:
    """The report's frames of ``analysis`` priced with ``table``, built a group of sessions
    at a time (``Analysis.session_groups``) so memory follows a group."""
    priced, carried, fixed = [], [], []
    for group in analysis.session_groups():
        calls = price_calls(
            with_reconstruction(group), table, model_map=model_map, log_prices=analysis.log_prices
        )
        priced.append(calls)
        carried.append(carried_context(group.events, calls))
        fixed.append(stated_fixed_part(group.events))
    return ReportFrames(
        pl.concat(priced).sort("session_id", "call_index"),
        pl.concat(carried),
        pl.concat(fixed),
    )
