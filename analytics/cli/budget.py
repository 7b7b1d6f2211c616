"""``agentcost budget`` (a monthly allowance: spent, left, projected) and ``agentcost
statusline`` (one line for a prompt)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from analytics.cli import commands as cli
from analytics.cli import loading, options, printing
from analytics.cli.replays import Replays, finish
from analytics.core.errors import (
    AgentcostError,
    ConfigError,
    InputError,
    UsageError,
    cannot_write,
)

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from analytics.core.budget import Budget, BudgetStatus, Unit
    from analytics.engine.inputs import Found
    from analytics.engine.live_session import Watched


class _PathsOrCommandGroup(TyperGroup):
    """A group whose own callback also takes PATHS: a first word that names a subcommand
    (``budget set ...``) runs it; otherwise the arguments are the group's own, options and
    paths in any order (``budget sample_logs --timezone UTC``), as for any command. Without
    this the PATHS argument would take ``set`` and its options, or options after a path, as
    paths."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: typer's click Context
        if not (args and args[0] in self.commands):
            ctx.allow_interspersed_args = True  # no subcommand: nothing to stop at
            return super().parse_args(ctx, args)
        own = self.params
        self.params = [param for param in own if param.name != "paths"]
        try:  # parsed without PATHS, the first word is the subcommand, as in any group
            return super().parse_args(ctx, args)
        finally:
            self.params = own

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        # A subcommand's usage line reads ``agentcost budget set [OPTIONS]``, without PATHS.
        return params if ctx.command is self else [p for p in params if p.name != "paths"]


budget_app = typer.Typer(
    cls=_PathsOrCommandGroup,
    help="A monthly allowance in AI credits or USD: spent, left, and the month-end projection.",
    invoke_without_command=True,
    add_completion=False,
)
cli.app.add_typer(budget_app, name="budget")


@budget_app.callback()
def budget(
    ctx: typer.Context,
    paths: options.PathsArg = None,
    rates: options.RatesOpt = "github-copilot",
    timezone: options.ZoneOpt = None,
    agent: options.AgentOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="The figures as JSON, each saying what it is.")
    ] = False,
) -> None:
    """Spent, left and the month-end projection of this budget month, of the agents the
    budget counts (the logs under PATHS, default the home); exit 1 when over the budget.
    agentcost budget set saves it."""
    if ctx.invoked_subcommand is not None:
        return
    from analytics.core.budget import load_budget
    from analytics.render.budget_text import budget_json, budget_lines

    try:
        status = _budget_status(ctx, paths, load_budget(), rates, timezone, agent)
        typer.echo(budget_json(status) if as_json else budget_lines(status))
        if status.over:
            raise typer.Exit(1)
    except AgentcostError as error:
        printing.fail(error)


_COUNTED_HELP = (
    "An agent whose calls a --usd budget counts (repeatable; default all). A --credits "
    "budget counts Copilot's: AI credits pay for nothing else."
)


@budget_app.command("set")
def budget_set(
    credits: Annotated[
        str | None, typer.Option(help="Monthly allowance in AI credits (1 credit = $0.01).")
    ] = None,
    usd: Annotated[str | None, typer.Option(help="Monthly allowance in US dollars.")] = None,
    start_day: Annotated[
        int, typer.Option(help="Day of the month a budget month starts (1-28).")
    ] = 1,
    agent: Annotated[
        list[options.Agent] | None,
        typer.Option("--agent", metavar="AGENT", help=_COUNTED_HELP, show_default=False),
    ] = None,
) -> None:
    """Save the monthly allowance in agentcost's config directory ($AGENTCOST_CONFIG_DIR,
    else $XDG_CONFIG_HOME/agentcost or ~/.config/agentcost)."""
    from analytics.core.budget import budget_path, make_budget

    try:
        if (credits is None) == (usd is None):
            raise UsageError("give one of --credits N or --usd N")
        agents = tuple(chosen.value for chosen in agent or [])
        unit: Unit = "credits" if credits is not None else "usd"
        try:
            chosen = make_budget(credits or usd, unit, start_day, agents)
        except ConfigError as err:  # the user's options, not a file: a usage error
            raise UsageError(str(err)) from None
        path = budget_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(chosen.to_toml(), encoding="utf-8")
        except OSError as err:
            raise cannot_write(path, err) from None
        printing.err(f"agentcost: budget saved to {path} (counts {', '.join(chosen.agents)})")
    except AgentcostError as error:
        printing.fail(error)


@cli.app.command()
def statusline(
    ctx: typer.Context,
    paths: options.PathsArg = None,
    rates: options.RatesOpt = "github-copilot",
    timezone: options.ZoneOpt = None,
    agent: options.AgentOpt = None,
) -> None:
    """One short line for a shell prompt or tmux: whose calls it counts, today's cost, the
    month against the budget (if set), and the session being written now (of the logs under
    PATHS, default the home; of --agent's sessions alone when given)."""
    parameters = dict(locals())
    from analytics.core.budget import saved_budget
    from analytics.core.timezones import resolve_zone
    from analytics.engine.inputs import discover

    try:
        found = discover(paths or [])  # once, for the month's calls and the live session
        budget, live = saved_budget(), _live(found, paths, agent)
        # what the line shows besides the logs: the budget, the day, the session written in
        # the last minutes (so the line is not replayed before the command line, which
        # cannot tell that moment)
        moment = {
            "budget": repr(budget),
            "today": str(_today(resolve_zone(timezone))),
            "live": live.log.file if live else None,
        }
        replays = Replays.of(
            ctx,
            "statusline",
            paths,
            None,  # no format option: no terminal shapes the line
            None,
            timezone,
            {**parameters, **moment},
            found=found,
            early=False,
        )
        if replays.replayed(None):
            return
        from analytics.render.budget_text import statusline as line

        status = _budget_status(ctx, paths, budget, rates, timezone, agent, found)
        text = line(status, _active(live, status.agents) if live else None)
        typer.echo(text)
        finish(replays, text, [], strict_failure=False)
    except AgentcostError as error:
        printing.fail(error)


#: A session log written this recently (seconds) is the session being written now.
LIVE_SECONDS = 600


def _live(
    found: Found, paths: list[Path] | None, agent: list[options.Agent] | None
) -> Watched | None:
    """The newest session log under ``paths`` (of ``agent``'s sessions when given), if it
    was written in the last ``LIVE_SECONDS``: the session the line names."""
    import time

    from analytics.engine.live_session import latest_log

    try:
        watched = latest_log(paths or [], tuple(chosen.value for chosen in agent or []), found)
    except InputError:  # no session log yet: nothing is active
        return None
    stat = watched.log.stat
    return watched if stat is not None and time.time() - stat.st_mtime <= LIVE_SECONDS else None


def _budget_status(
    ctx: typer.Context,
    paths: list[Path] | None,
    saved: Budget | None,
    rates: str,
    timezone: str | None,
    agent: list[options.Agent] | None,
    found: Found | None = None,
) -> BudgetStatus:
    """The budget month so far in the logs under ``paths`` (default the home; ``agent``'s
    sessions alone when given), priced with ``rates``; a usage error where ``agent`` leaves
    out every agent the budget counts. ``found``: what discovery already found there."""
    from analytics.core.budget import AGENTS, budget_status
    from analytics.core.timezones import resolve_zone

    zone = resolve_zone(timezone)
    window = loading.window(None, None, timezone, agent)
    _, priced_calls, priced_sessions = loading.priced(
        ctx, paths, rates, None, found=found, window=window
    )
    read = window.agents or AGENTS
    if saved is not None and not set(saved.agents) & set(read):
        raise UsageError(
            f"the budget counts {', '.join(saved.agents)}'s calls; --agent "
            f"{' --agent '.join(read)} reads none of them"
        )
    return budget_status(priced_calls, priced_sessions, saved, zone, _today(zone), read)


def _today(zone: ZoneInfo) -> date:
    """Today in ``zone`` (the budget commands' "now"; tests replace it)."""
    from datetime import datetime

    return datetime.now(zone).date()


def _active(watched: Watched, counted: tuple[str, ...]) -> str:
    """``session 38b50b0c``: the live session (``_live``) by its own id, and by its agent
    (``Claude Code session 5fcdc211``) unless it is the one agent whose calls the line
    counts (``counted``)."""
    from analytics.core.registry import by_id
    from analytics.engine.following import session_name

    whose = "" if counted == (watched.agent,) else f"{by_id(watched.agent).short_name} "
    return f"{whose}session {session_name(watched)[:8]}"
