"""The team dataset: ``agentcost export`` (one person's logs, here) and ``agentcost spark``
(many people's, in Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from analytics.cli import commands as cli
from analytics.cli import loading, options, printing
from analytics.core.errors import AgentcostError

# --- commands: export ---


@cli.app.command()
def export(
    ctx: typer.Context,
    directory: Annotated[
        Path,
        typer.Argument(help="Dataset directory: <table>/agent=A/day=YYYY-MM-DD/*.parquet."),
    ],
    paths: options.PathsArg = None,
    rates: options.RatesOpt = "github-copilot",
    model_map: options.ModelMapOpt = None,
    since: options.SinceOpt = None,
    until: options.UntilOpt = None,
    timezone: options.ZoneOpt = None,
    agent: options.AgentOpt = None,
    user: Annotated[
        str | None,
        typer.Option(help="The user column. Default: user in config.toml, else the login name."),
    ] = None,
    plan: Annotated[
        bool, typer.Option("--plan", help="Say which files would change; write nothing.")
    ] = False,
    strict: options.StrictOpt = False,
    show_issues: options.ShowIssuesOpt = False,
) -> None:
    """Add these logs' calls, sessions and issues to a team dataset (Parquet, by agent and
    UTC day): idempotent, one file per session, safe beside other people's exports."""
    from analytics.core.dataset import Who, check_target, resolve_user, this_host
    from analytics.core.export import export_analysis
    from analytics.engine.inputs import default_targets

    try:
        check_target(directory)
        window = loading.window(since, until, timezone, agent)
        result, priced_calls, priced_sessions = loading.priced(
            ctx, paths, rates, model_map, window=window
        )
        inputs = [str(path.resolve()) for path in (paths or default_targets())]
        who = Who(resolve_user(user), this_host())
        changes = export_analysis(
            directory, result, priced_calls, priced_sessions, who, inputs, plan=plan
        )
        if plan:
            for kind, paths_changed in (
                ("add", changes.added),
                ("replace", changes.replaced),
                ("remove", changes.removed),
            ):
                for path in paths_changed:
                    print(f"{kind} {path}")
        verb = "would change" if plan else "wrote"
        printing.err(f"agentcost: {verb} {directory}: {changes.summary()}")
        printing.report_issues(result, strict, show_issues)
    except AgentcostError as error:
        printing.fail(error)


# The help is rich markup: ``\[`` keeps the extra's brackets, which rich would read as a tag.
@cli.app.command()
def spark(
    paths: Annotated[
        list[Path],
        typer.Argument(
            readable=False,
            help="People's homes or log trees; the user is each path's own name.",
        ),
    ],
    output: Annotated[Path, typer.Option(help="Dataset directory to write.")],
    rates: options.RatesOpt = "github-copilot",
    master: Annotated[
        str | None, typer.Option(help="Spark master (default: spark-submit's, else local[2]).")
    ] = None,
) -> None:
    r"""Run the engine inside Spark over many people's logs and write the team dataset
    (needs the spark extra: pip install 'agentcost\[spark]')."""
    from analytics.engine.spark import run

    try:
        changes = run([str(path) for path in paths], output, rates=rates, master=master)
        printing.err(f"agentcost: wrote {output}: {changes}")
    except AgentcostError as error:
        printing.fail(error)
