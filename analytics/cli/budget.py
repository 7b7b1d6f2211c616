"""``agentcost budget`` (a monthly allowance: spent, left, projected) and ``agentcost
statusline`` (one line for a prompt)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from analytics.cli import commands as cli
from analytics.core.errors import AgentcostError, InputError, UsageError

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from analytics.core.budget import Budget, BudgetStatus
    from analytics.engine.watch import Watched


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
    paths: cli.PathsArg = None,
    rates: cli.RatesOpt = "github-copilot",
    timezone: cli.ZoneOpt = None,
    agent: cli.AgentOpt = None,
) -> None:
    """Spent, left and the month-end projection of this budget month (the logs under PATHS,
    default the home); exit 1 when over the budget. agentcost budget set saves it."""
    if ctx.invoked_subcommand is not None:
        return
    from analytics.core.budget import load_budget
    from analytics.render.budget_text import budget_lines

    try:
        status = _budget_status(ctx, paths, load_budget(), rates, timezone, agent)
        typer.echo(budget_lines(status))
        if status.over:
            raise typer.Exit(1)
    except AgentcostError as error:
        cli._fail(error)


@budget_app.command("set")
def budget_set(
    credits: Annotated[
        str | None, typer.Option(help="Monthly allowance in AI credits (1 credit = $0.01).")
    ] = None,
    usd: Annotated[str | None, typer.Option(help="Monthly allowance in US dollars.")] = None,
    start_day: Annotated[
        int, typer.Option(help="Day of the month a budget month starts (1-28).")
    ] = 1,
) -> None:
    """Save the monthly allowance in agentcost's config directory ($AGENTCOST_CONFIG_DIR,
    else $XDG_CONFIG_HOME/agentcost or ~/.config/agentcost)."""
    from analytics.core.budget import budget_path, make_budget

    try:
        if (credits is None) == (usd is None):
            raise UsageError("give one of --credits N or --usd N")
        chosen = make_budget(credits or usd, "credits" if credits is not None else "usd", start_day)
        path = budget_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(chosen.to_toml(), encoding="utf-8")
        except OSError as err:
            raise UsageError(
                f"{path}: cannot write ({err.strerror}); check the directory"
            ) from None
        cli._err(f"agentcost: budget saved to {path}")
    except AgentcostError as error:
        cli._fail(error)


@cli.app.command()
def statusline(
    ctx: typer.Context,
    paths: cli.PathsArg = None,
    rates: cli.RatesOpt = "github-copilot",
    timezone: cli.ZoneOpt = None,
    agent: cli.AgentOpt = None,
) -> None:
    """One short line for a shell prompt or tmux: today's cost, the month against the budget
    (if set), and the session being written now (of the logs under PATHS, default the home)."""
    from analytics.core.budget import budget_path, load_budget
    from analytics.engine.watch import latest_log
    from analytics.render.budget_text import statusline as line

    try:
        saved = load_budget() if budget_path().exists() else None
        status = _budget_status(ctx, paths, saved, rates, timezone, agent)
        try:
            active = _active(latest_log(paths or []))
        except InputError:  # no session log yet: nothing is active
            active = None
        typer.echo(line(status, active))
    except AgentcostError as error:
        cli._fail(error)


def _budget_status(
    ctx: typer.Context,
    paths: list[Path] | None,
    saved: Budget | None,
    rates: str,
    timezone: str | None,
    agent: list[cli.Agent] | None,
) -> BudgetStatus:
    """The budget month so far in the logs under ``paths`` (default the home; ``agent``'s
    sessions alone when given), priced with ``rates``."""
    from analytics.core.budget import budget_status
    from analytics.core.timezones import resolve_zone

    zone = resolve_zone(timezone)
    window = cli._window(None, None, timezone, agent)
    _, priced_calls, priced_sessions = cli._priced(ctx, paths, rates, None, window=window)
    return budget_status(priced_calls, priced_sessions, saved, zone, _today(zone))


def _today(zone: ZoneInfo) -> date:
    """Today in ``zone`` (the budget commands' "now"; tests replace it)."""
    from datetime import datetime

    return datetime.now(zone).date()


def _active(watched: Watched) -> str | None:
    """``session 38b50b0c`` when the log was written in the last 10 minutes, else ``None``;
    the session by its own id, whichever agent writes it."""
    import time

    from analytics.engine.watch import session_name

    log = watched.log
    if log.stat is None or time.time() - log.stat.st_mtime > 600:
        return None
    return f"session {session_name(watched)[:8]}"
