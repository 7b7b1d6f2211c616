"""agentcost: facts about LLM calls, tokens and money from AI coding-agent session logs.

The public API, what the notebooks use. Every name is imported on first use, so
``import analytics`` (and ``agentcost --help``) loads no polars. A tour, run as a test::

    >>> import tempfile
    >>> from decimal import Decimal
    >>> from pathlib import Path
    >>> import analytics as ac

Logs to read: a simulated Copilot home, with exact per-call truth beside it (``simulate``,
``SimulationParams``); ``analyze`` reads any agent's logs under the paths (an ``Analysis``:
``calls``, ``sessions``, ``issues``, in the ``CALLS``, ``SESSIONS`` and ``ISSUES`` contracts;
``Window`` keeps the sessions of some days or agents)::

    >>> home = Path(tempfile.mkdtemp()) / ".copilot"
    >>> ac.simulate(home, ac.SimulationParams(seed=3, sessions=2)).sessions
    2
    >>> result = ac.analyze([home])
    >>> isinstance(result, ac.Analysis), result.sessions.height, result.issues.height
    (True, 2, 0)
    >>> list(result.issues.schema) == list(ac.ISSUES)
    True
    >>> set(ac.CALLS) <= set(result.calls.columns), set(ac.SESSIONS) <= set(result.sessions.columns)
    (True, True)
    >>> ac.analyze([home], ac.Window(agents=("codex",))).sessions.height
    0

Rate tables (``bundled_rate_tables``, ``load_rate_table``; ``load_rates`` also reads
``NAME+FILE.toml`` overrides; a ``RateTable`` is plain data)::

    >>> "github-copilot" in ac.bundled_rate_tables()
    True
    >>> table = ac.load_rate_table("github-copilot")
    >>> isinstance(table, ac.RateTable), ac.load_rates("github-copilot").name == table.name
    (True, True)

Pricing has one entry point: ``price_calls`` (any calls, the log's own prices and
bring-your-own-key included, in the ``COSTS`` columns) and ``price_analysis`` (calls and
sessions, beside what the log says it billed: give them ``result.call_view`` and
``result.session_view``, which carry the agents' own bills). ``unpriced_models`` lists what a
table could not price; ``table_totals`` prices the same calls under several tables::

    >>> priced = ac.price_calls(result.call_view, table, log_prices=result.log_prices)
    >>> set(ac.COSTS) <= set(priced.columns), isinstance(priced["cost_usd"].sum(), Decimal)
    (True, True)
    >>> calls, sessions = ac.price_analysis(
    ...     result.call_view, result.session_view, table, {}, result.log_prices
    ... )
    >>> calls["cost_usd"].sum() == priced["cost_usd"].sum()
    True
    >>> ac.unpriced_models(priced).height
    0
    >>> ac.table_totals(result.calls, [table])["rates"].to_list()
    ['github-copilot']

The team dataset: ``export_analysis`` writes one person's priced tables for a ``Who`` (a
file per session of its calls, its session row and its agent's own tables, of the session and
of its calls, when the agent has them), ``read_table`` reads one back, ``duckdb_report``
(``period_query``: its SQL) sums it::

    >>> dataset = home.parent / "dataset"
    >>> who = ac.Who("ana", "laptop")
    >>> ac.export_analysis(dataset, result, calls, sessions, who, [str(home)]).summary()
    '8 added, 0 replaced, 0 removed, 0 unchanged'
    >>> ac.read_table(dataset, "sessions").height
    2
    >>> report = ac.duckdb_report(dataset, period="month", zone="UTC", by="user")
    >>> report.rows["user"].to_list(), "SELECT" in ac.period_query("month", "UTC", "user", "duckdb")
    (['ana'], True)

Charts are pure functions from frames to plotly figures (``plots``)::

    >>> type(ac.plots.cost_per_call(priced.head(3))).__name__
    'Figure'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_HOMES = {
    "analyze": "analytics.engine.analyze",
    "Analysis": "analytics.engine.analyze",
    "Window": "analytics.engine.analyze",
    "price_calls": "analytics.core.pricing.price",
    "price_analysis": "analytics.core.pricing.price",
    "unpriced_models": "analytics.core.pricing.call_costs",
    "table_totals": "analytics.core.pricing.compare",
    "RateTable": "analytics.core.pricing.rates",
    "bundled_rate_tables": "analytics.core.pricing.rates",
    "load_rate_table": "analytics.core.pricing.rates",
    "load_rates": "analytics.core.pricing.rates",
    "CALLS": "analytics.core.schema",
    "SESSIONS": "analytics.core.schema",
    "ISSUES": "analytics.core.schema",
    "COSTS": "analytics.core.schema",
    "Who": "analytics.core.dataset",
    "read_table": "analytics.core.dataset",
    "export_analysis": "analytics.core.export",
    "duckdb_report": "analytics.core.period_sql",
    "period_query": "analytics.core.period_sql",
    "simulate": "analytics.agents.copilot.simulate",
    "SimulationParams": "analytics.agents.copilot.simulate",
}
#: Public modules, by name.
_MODULES = {"plots": "analytics.render.plots"}

__all__ = [
    "CALLS",
    "COSTS",
    "ISSUES",
    "SESSIONS",
    "Analysis",
    "RateTable",
    "SimulationParams",
    "Who",
    "Window",
    "analyze",
    "bundled_rate_tables",
    "duckdb_report",
    "export_analysis",
    "load_rate_table",
    "load_rates",
    "period_query",
    "plots",
    "price_analysis",
    "price_calls",
    "read_table",
    "simulate",
    "table_totals",
    "unpriced_models",
]

if TYPE_CHECKING:
    from analytics.agents.copilot.simulate import SimulationParams, simulate
    from analytics.core.dataset import Who, read_table
    from analytics.core.export import export_analysis
    from analytics.core.period_sql import duckdb_report, period_query
    from analytics.core.pricing.call_costs import unpriced_models
    from analytics.core.pricing.compare import table_totals
    from analytics.core.pricing.price import price_analysis, price_calls
    from analytics.core.pricing.rates import (
        RateTable,
        bundled_rate_tables,
        load_rate_table,
        load_rates,
    )
    from analytics.core.schema import CALLS, COSTS, ISSUES, SESSIONS
    from analytics.engine.analyze import Analysis, Window, analyze
    from analytics.render import plots


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562)."""
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'analytics' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
