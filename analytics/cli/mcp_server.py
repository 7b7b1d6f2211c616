"""``agentcost mcp``: a Model Context Protocol server over stdio, so an agent can ask what its
work costs and act on it.

Tools: ``spend`` (a period's totals, as ``daily``/``weekly``/``monthly --format json``),
``session_cost`` (one session, or the one being written now, and the budget left),
``top_items`` (a session's costliest context items, as ``top``), ``blocks`` (Claude's 5-hour
blocks, as ``blocks``) and ``budget`` (as ``budget --json``). Each calls the library
functions its command calls, so the two never disagree, and answers JSON text: a one-line
``summary`` and the figures, money as exact decimal strings. An argument agentcost cannot use
(an ``AgentcostError``) is a tool error carrying its message; stdout carries the protocol
alone (the SDK's stdio transport keeps the process's own stdout for it, and sends anything
else written there to stderr).

Needs the ``mcp`` extra (the official Python SDK); ``agentcost mcp`` says so when it is
missing.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec

import polars as pl
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from analytics.cli.options import bundled_tables
from analytics.core.errors import AgentcostError, UsageError
from analytics.core.registry import AGENTS, ids, listed

if TYPE_CHECKING:
    from analytics.engine.analyze import Analysis, Window

#: Arguments every tool takes.
Paths = Annotated[
    list[str] | None,
    Field(
        description="Session logs or directories of them, or agents' homes. Default: every "
        f"agent's home that exists ({listed([a.short_name for a in AGENTS])})."
    ),
]
Rates = Annotated[
    str,
    Field(description=f"Rate table: {bundled_tables()}, or a TOML file (as agentcost's --rates)."),
]
Zone = Annotated[
    str | None,
    Field(description="IANA timezone of the days (e.g. Europe/Paris). Default: the local zone."),
]
SessionId = Annotated[
    str | None,
    Field(
        description="A session id, or its first characters. Default: the session being "
        "written now (the most recently written log)."
    ),
]
Day = Annotated[str | None, Field(description="A day, YYYY-MM-DD.")]
#: An agent's id (the ``agent`` column), one of the registry's.
AgentId = Annotated[str, Field(json_schema_extra={"enum": ids()})]

#: One tool call at a time: the analysis and its caches are not shared between threads.
_ONE_AT_A_TIME = threading.Lock()
_P = ParamSpec("_P")


def serve(*, use_cache: bool = True) -> None:
    """Answer MCP requests on stdin/stdout until stdin closes (``use_cache``: reuse the result
    cache, as every command does unless ``agentcost --no-cache``)."""
    server(use_cache=use_cache).run("stdio")


def server(*, use_cache: bool = True) -> MCPServer:
    """The MCP server and its tools."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("agentcost")
    except PackageNotFoundError:
        installed = "0"
    mcp = MCPServer(
        "agentcost",
        version=installed,
        instructions="What AI coding-agent sessions cost "
        f"({listed([a.short_name for a in AGENTS])}), read from their logs: spend per period, "
        "a session's cost, what fills its context, Claude's 5-hour blocks and the monthly "
        "budget. Money is exact decimal strings in USD.",
        log_level="WARNING",
    )
    tools = _Tools(use_cache)
    for tool in (tools.spend, tools.session_cost, tools.top_items, tools.blocks, tools.budget):
        mcp.add_tool(_answered(tool), structured_output=False)
    return mcp


def _answered(tool: Callable[_P, str]) -> Callable[_P, str]:
    """``tool`` run one call at a time, an ``AgentcostError`` given back as a tool error
    with its message (what to change, in agentcost's words), never as a traceback."""

    @functools.wraps(tool)
    def answer(*args: _P.args, **kwargs: _P.kwargs) -> str:
        with _ONE_AT_A_TIME:
            try:
                return tool(*args, **kwargs)
            except AgentcostError as error:
                raise ToolError(str(error)) from None

    return answer


class _Tools:
    """The tools; each method's docstring is its description for the agent."""

    def __init__(self, use_cache: bool) -> None:
        self.use_cache = use_cache

    def spend(
        self,
        period: Annotated[
            Literal["today", "week", "month"] | None,
            Field(
                description="today, this ISO week or this calendar month (to today). Default: "
                "all time, or the since-until window."
            ),
        ] = None,
        since: Day = None,
        until: Day = None,
        by: Annotated[
            Literal["agent", "model", "project", "session"] | None,
            Field(description="Break each period down by this."),
        ] = None,
        per: Annotated[
            Literal["day", "week", "month"] | None,
            Field(
                description="Rows per day, ISO week or month. Default: day with a period or "
                "window, month for all time."
            ),
        ] = None,
        agent: Annotated[
            list[AgentId] | None, Field(description="Only these agents' sessions.")
        ] = None,
        paths: Paths = None,
        rates: Rates = "github-copilot",
        timezone: Zone = None,
    ) -> str:
        """What was spent: calls, tokens and cost per period (the figures of agentcost
        daily/weekly/monthly --format json) and their total, by agent, model, project or
        session if asked."""
        from analytics.core.periods import (
            day_window,
            period_report,
            period_start,
            sessions_without_calls,
        )

        if period and (since or until):
            raise UsageError("give period or since/until, not both")
        window = _window(timezone, agent)
        zone = window.zone
        assert zone is not None
        start, end = day_window(since, until, ("since", "until"))
        if period:
            end = _today(window)
            start = period_start("day" if period == "today" else period, end)
        rows_per = per or ("day" if start or end else "month")
        result, calls, sessions = self._priced(paths, rates, window)
        report = period_report(
            calls, sessions, period=rows_per, zone=zone, by=by, since=start, until=end
        )
        totals = _rows(report.totals)[0]
        when = _when(period, start, end)
        summary = f"{when}: {_spent(totals)} over {_calls(totals)} ({report.zone})"
        return _answer(
            summary,
            timezone=report.zone,
            since=str(start) if start else None,
            until=str(end) if end else None,
            per=rows_per,
            periods=_rows(report.rows),
            totals=totals,
            sessions_without_calls=sessions_without_calls(sessions, zone, start, end),
            issues=_issues(result),
        )

    def session_cost(
        self,
        session_id: SessionId = None,
        paths: Paths = None,
        rates: Rates = "github-copilot",
        timezone: Zone = None,
    ) -> str:
        """One session's calls, tokens and cost so far (a row of agentcost analyze --format
        json), whether its tokens are estimated, and the monthly budget left when one is
        set."""
        from analytics.core.budget import budget_status, saved_budget
        from analytics.core.words import counted

        window = _window(timezone)
        result, calls, sessions = self._priced(paths, rates, window)
        row = _session_row(sessions, session_id, paths)
        estimated = bool((row["token_sources"] or {}).get("estimated"))
        saved = saved_budget()
        budget = None
        if saved is not None:
            assert window.zone is not None
            status = budget_status(calls, sessions, saved, window.zone, _today(window))
            budget = {
                "left_usd": _money(status.left_usd),
                "spent_usd": _money(status.spent_usd),
                "allowance_usd": _money(saved.usd),
                "agents": list(status.agents),
                "over": status.over,
            }
        tokens = sum(row[f"{kind}_tokens"] or 0 for kind in ("input", "output"))
        summary = (
            f"session {row['session_id'][:8]} ({row['agent']}): "
            f"{counted(row['llm_calls'] or 0, 'call')}, {tokens:,} tokens, "
            f"{_spent(row, estimated=estimated)}"
        )
        if budget is not None:
            summary += f"; budget left {_usd(Decimal(str(budget['left_usd'])))} this month"
        return _answer(
            summary,
            session=row,
            estimated=estimated,
            cost_is="estimated" if estimated else "exact",
            budget=budget,
            issues=_issues(result),
        )

    def top_items(
        self,
        session_id: SessionId = None,
        limit: Annotated[int, Field(ge=1, description="How many items.")] = 10,
        paths: Paths = None,
        rates: Rates = "github-copilot",
    ) -> str:
        """What is eating a session's context: its costliest context items (prompts, tool
        results, instructions), each with the tokens it added, how often it was re-sent and
        what that cost (the rows of agentcost top --format json)."""
        from analytics.core.attribution import top_sections

        result, calls, sessions = self._priced(paths, rates, None, agent_items=True)
        row = _session_row(sessions, session_id, paths)
        mine = result.only(pl.Series([row["session_id"]]))
        groups = ((group.sessions, group.events) for group in mine.session_groups())
        items = top_sections(calls, groups, tools=False, limit=limit, behaviour=False)["items"]
        ranked = _rows(items)
        summary = f"session {row['session_id'][:8]}: no context item found"
        if ranked:
            first = ranked[0]
            summary = (
                f"session {row['session_id'][:8]}: costliest context item {first['label']!r}, "
                f"sent {first['sends']:,} times, {first['tokens_sent']:,} tokens, "
                f"{_spent(first, unpriced='unpriced_sends')}"
            )
        return _answer(summary, session_id=row["session_id"], items=ranked)

    def blocks(
        self,
        token_limit: Annotated[
            str | None,
            Field(
                description="Tokens a block may use: a number, or max (the most a past block used)."
            ),
        ] = None,
        active_only: Annotated[bool, Field(description="Only the active block.")] = False,
        since: Day = None,
        until: Day = None,
        paths: Paths = None,
        rates: Rates = "github-copilot",
        timezone: Zone = None,
    ) -> str:
        """Claude's 5-hour usage blocks (the windows its plans meter): tokens and
        API-equivalent cost per block, and the active block's burn rate and projection (the
        figures of agentcost blocks --format json)."""
        from analytics.core.blocks import blocks_view, pace_row
        from analytics.core.periods import day_window
        from analytics.engine.inputs import agents
        from analytics.render.views import blocks_notes

        window = _window(timezone, [chosen.id for chosen in agents.with_blocks()])
        start, end = day_window(since, until, ("since", "until"))
        _, calls, _ = self._priced(paths, rates, window)
        zone = str(window.zone)
        view = blocks_view(
            calls,
            datetime.now(UTC),
            zone,
            start,
            end,
            token_limit=token_limit,
            active_only=active_only,
            limit_name="token_limit",
        )
        summary = f"{view.shown.height:,} blocks; " + "; ".join(blocks_notes(view.pace, view.limit))
        return _answer(
            summary,
            timezone=zone,
            blocks=_rows(view.shown),
            active=_rows(pace_row(view.pace, view.limit)),
        )

    def budget(
        self,
        paths: Paths = None,
        rates: Rates = "github-copilot",
        timezone: Zone = None,
    ) -> str:
        """This budget month: spent, left and the month-end projection against the saved
        monthly budget (agentcost budget --json); without one, the month's spend."""
        from analytics.core.budget import budget_status, saved_budget
        from analytics.render.budget_text import budget_json, statusline

        window = _window(timezone)
        assert window.zone is not None
        saved = saved_budget()
        _, calls, sessions = self._priced(paths, rates, window)
        status = budget_status(calls, sessions, saved, window.zone, _today(window))
        summary = statusline(status, None)
        if saved is None:
            summary += " (no budget set: agentcost budget set --usd N sets one)"
        elif status.over:
            summary += " (over the budget)"
        return _answer(summary, **json.loads(budget_json(status)))

    def _priced(
        self,
        paths: list[str] | None,
        rates: str,
        window: Window | None,
        *,
        agent_items: bool = False,
    ) -> tuple[Analysis, pl.DataFrame, pl.DataFrame]:
        """The logs under ``paths`` analysed (the sessions in ``window``) and priced under
        ``rates``, as every command does: (analysis, priced calls, priced sessions)."""
        from analytics.cache.priced_tables import priced_tables
        from analytics.core.pricing.rates import load_rates
        from analytics.engine.analyze import analyze

        table = load_rates(rates)
        result = analyze(
            [Path(path) for path in paths or []],
            window,
            use_cache=self.use_cache,
            keep_events=False,
            agent_items=agent_items,
        )
        tables = priced_tables(result, table, {})
        return result, tables["calls"], tables["sessions"]


def _window(timezone: str | None, agents: Sequence[str] | None = None) -> Window:
    """Every session of ``agents`` (all when None), days in ``timezone``."""
    from analytics.core.timezones import resolve_zone
    from analytics.engine.analyze import Window

    unknown = sorted(set(agents or []) - set(ids()))
    if unknown:
        raise UsageError(f"unknown agent {', '.join(unknown)}; the agents are {', '.join(ids())}")
    return Window(None, None, resolve_zone(timezone), tuple(sorted(set(agents or []))))


def _today(window: Window) -> date:
    """Today in the window's zone."""
    return datetime.now(window.zone).date()


def _session_row(
    sessions: pl.DataFrame, session_id: str | None, paths: list[str] | None
) -> dict[str, Any]:
    """The priced session ``session_id`` names (its id, or the only one it starts), or the
    one being written now, as a JSON row; a usage error when there is no such session or
    several."""
    from analytics.engine.following import session_name
    from analytics.engine.live_session import latest_log

    wanted = session_id or session_name(latest_log([Path(path) for path in paths or []]))
    found = sessions.filter(pl.col("session_id") == wanted)
    if not found.height:
        found = sessions.filter(pl.col("session_id").str.starts_with(wanted))
    where = ", ".join(paths or []) or "the agents' homes"
    if not found.height:
        raise UsageError(
            f"no session {wanted!r} in the logs under {where}; session_id takes a session's "
            "id or its first characters (spend with by=session lists them)"
        )
    if found.height > 1:
        some = ", ".join(found["session_id"].head(3).to_list())
        raise UsageError(
            f"session_id {wanted!r} starts {found.height} sessions' ids ({some}, ...); give "
            "more of it"
        )
    return _rows(found)[0]


def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows as JSON objects, encoded as every report encodes them (``json_rows``: times
    ISO-8601 UTC, money exact decimal strings)."""
    from analytics.render.views import json_rows

    return [json.loads(row) for row in json_rows(frame)]


def _answer(summary: str, **figures: Any) -> str:
    """A tool's answer: JSON text of the one-line ``summary`` and the figures."""
    return json.dumps({"summary": summary, **figures}, indent=2, ensure_ascii=False)


def _issues(result: Analysis) -> str | None:
    """The input's problems in a few words (``agentcost issues`` lists them), None with none."""
    from analytics.engine.analyze import issue_summary

    return issue_summary(result.issues) if result.issues.height else None


def _money(amount: Decimal | None) -> str | None:
    """An exact amount as a decimal string (None: unknown)."""
    return None if amount is None else format(amount.normalize(), "f")


def _usd(amount: Decimal) -> str:
    """Dollars to the cent, for a summary (the figures beside it are exact)."""
    return f"${amount.quantize(Decimal('0.01'), ROUND_HALF_EVEN):,}"


def _spent(
    row: dict[str, Any], *, estimated: bool | None = None, unpriced: str = "unpriced_calls"
) -> str:
    """A row's cost in words: ``$1.23``, ``~$1.23`` when estimated, the calls left without a
    cost, or ``unpriced`` when none has one."""
    left_out = int(row.get(unpriced) or 0)
    if row.get("cost_usd") is None:
        return f"unpriced ({left_out:,} without a price)" if left_out else "$0.00"
    mark = "~" if (row.get("estimated_calls") if estimated is None else estimated) else ""
    text = f"{mark}{_usd(Decimal(row['cost_usd']))}"
    return f"{text} + {left_out:,} unpriced" if left_out else text


def _calls(row: dict[str, Any]) -> str:
    """``12 calls in 3 sessions``."""
    from analytics.core.words import counted

    return f"{counted(row['calls'] or 0, 'call')} in {counted(row['sessions'] or 0, 'session')}"


def _when(period: str | None, start: date | None, end: date | None) -> str:
    """The window in words: ``today``, ``this week (from 2026-08-03)``, ``all time``."""
    if period == "today":
        return "today"
    if period:
        return f"this {period} (from {start})"
    if start or end:
        return f"from {start or 'the start'} to {end or 'now'}"
    return "all time"
