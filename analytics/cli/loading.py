"""The analysis a command reads: the logs under its paths analysed (with the caches, unless
``agentcost --no-cache``, and a progress bar on a terminal), in its window of days and
agents, priced under its rate table and model map."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from analytics.cli import printing
from analytics.cli.options import Agent
from analytics.core.errors import UsageError

if TYPE_CHECKING:
    import polars as pl

    from analytics.engine.analyze import Analysis, Window
    from analytics.engine.inputs import Found


def window(
    since: str | None,
    until: str | None,
    timezone: str | None,
    agent: list[Agent] | None = None,
) -> Window:
    """The sessions a command reads: the days from ``since`` to ``until`` (YYYY-MM-DD, either
    open) in ``timezone`` (default: the machine's), of the agents chosen (all when none)."""
    from analytics.core.periods import day_window
    from analytics.core.timezones import resolve_zone
    from analytics.engine.analyze import Window

    agents = tuple(sorted({chosen.value for chosen in agent or []}))
    return Window(*day_window(since, until), resolve_zone(timezone), agents)


def model_renames(pairs: list[str] | None) -> dict[str, str]:
    """``--model-map``'s OLD=NEW pairs as a mapping; a pair of another shape is a usage error."""
    mapping: dict[str, str] = {}
    for pair in pairs or []:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise UsageError(
                f"--model-map {pair!r}: expected OLD=NEW, e.g. gpt-5=claude-sonnet-4.6"
            )
        mapping[old] = new
    return mapping


def load(
    ctx: typer.Context,
    paths: list[Path] | None,
    window: Window | None = None,
    *,
    found: Found | None = None,
    agent_items: bool = False,
) -> Analysis:
    """Run the analysis with the caches (unless ``agentcost --no-cache``) and a progress bar
    on a terminal. The analysis keeps no ``events``, so a large tree is analysed in groups,
    with flat memory; a command that needs them has them read again (``Analysis.events``, or
    a group at a time through ``session_groups``, as ``top`` does). ``found``: what
    discovery already found under ``paths``. Only commands that attribute context (``top``,
    the report) read the Claude Code and Codex sessions' items: ``agent_items``."""
    from analytics.engine.analyze import analyze as run
    from analytics.render.progress import progress_bar

    use_cache = bool(ctx.find_root().obj)
    if use_cache:
        say_if_nothing_is_cached()
    with progress_bar() as bar:
        return run(
            paths or [],
            window,
            use_cache=use_cache,
            progress=bar,
            keep_events=False,
            found=found,
            agent_items=agent_items,
        )


def priced(
    ctx: typer.Context,
    paths: list[Path] | None,
    rates: str,
    model_map: list[str] | None,
    *,
    found: Found | None = None,
    window: Window | None = None,
    agent_items: bool = False,
) -> tuple[Analysis, pl.DataFrame, pl.DataFrame]:
    """Analyse ``paths`` (the sessions in ``window``) and price them: (analysis, priced
    calls, sessions with costs). ``found``: what discovery already found under ``paths``;
    ``agent_items`` as for ``load``."""
    from analytics.cache.priced_tables import priced_tables
    from analytics.core.pricing.rates import load_rates

    table = load_rates(rates)
    result = load(ctx, paths, window, found=found, agent_items=agent_items)
    tables = priced_tables(result, table, model_renames(model_map))
    return result, tables["calls"], tables["sessions"]


#: Cache directories this run has looked at, and why each cannot be written ("" if it can).
_UNCACHED: dict[Path, str] = {}


def say_if_nothing_is_cached() -> bool:
    """Whether the cache directory cannot be written; the first time, one line on stderr
    says so (stdout, where JSON goes, stays the report alone). The run goes on uncached."""
    from analytics.cache.location import cache_dir, unwritable

    directory = cache_dir()
    if directory not in _UNCACHED:
        _UNCACHED[directory] = reason = unwritable(directory) or ""
        if reason:
            printing.err(
                f"agentcost: the cache directory {directory} cannot be written ({reason}); "
                "nothing is cached (set AGENTCOST_CACHE_DIR to a writable directory)"
            )
    return bool(_UNCACHED[directory])
