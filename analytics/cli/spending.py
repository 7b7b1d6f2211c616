"""The reports of what was spent: ``report`` (HTML), ``daily``, ``weekly``, ``monthly``,
``top`` (where the input money goes) and ``blocks`` (5-hour usage blocks)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from analytics.cli import commands as cli
from analytics.cli import loading, options, printing
from analytics.cli.replays import Replays, finish
from analytics.core.errors import AgentcostError, UsageError
from analytics.engine.inputs import agents

if TYPE_CHECKING:
    from collections.abc import Callable

    import polars as pl

    from analytics.cache.output import Report
    from analytics.core.periods import Breakdown, Period, PeriodReport
    from analytics.render.text_table import Layout


@cli.app.command()
def report(
    ctx: typer.Context,
    html_file: Annotated[
        Path, typer.Option("--html", help="Write the report to this HTML file (works offline).")
    ],
    paths: options.PathsArg = None,
    rates: Annotated[
        str, typer.Option(help="Rate table for the cost charts (as --rates of analyze).")
    ] = "github-copilot",
    model_map: options.ModelMapOpt = None,
    since: options.SinceOpt = None,
    until: options.UntilOpt = None,
    timezone: options.ZoneOpt = None,
    agent: options.AgentOpt = None,
    strict: options.StrictOpt = False,
    show_issues: options.ShowIssuesOpt = False,
) -> None:
    """Write one self-contained HTML file of charts: context growth, costs, rate tables."""
    try:
        # the page is stored and replayed as a report is
        replays = Replays.of(ctx, "report", paths, None, html_file, timezone, locals())
        if replays.replayed(html_file, agent_items=True):
            return
        from analytics.core.pricing.rates import bundled_rate_tables, load_rates
        from analytics.engine.html_frames import report_frames
        from analytics.render.html_report import render_report

        window = loading.window(since, until, timezone, agent)
        result = loading.load(ctx, paths, window, agent_items=True, found=replays.found)
        tables = [load_rates(name) for name in bundled_rate_tables()]
        table, model_map_ = load_rates(rates), loading.model_renames(model_map)
        frames = report_frames(result, table, model_map_)
        page = render_report(result, frames, table, tables, str(window.zone))
        stored = printing.print_report(page, html_file)
        notes = [
            f"agentcost: wrote {html_file} ({len(page.encode()) // 1024:,} KiB)",
            *printing.issue_notes(result, show_issues, wide=False),
        ]
        finish(replays, stored, notes, strict_failure=strict and result.issues.height > 0)
    except AgentcostError as error:
        printing.fail(error)


class By(StrEnum):
    """Breakdowns of the period reports."""

    model = "model"
    project = "project"
    session = "session"
    agent = "agent"
    user = "user"  # a team dataset's (--dataset): a person's own logs are one user's


class TopBy(StrEnum):
    """What ``agentcost top`` ranks: single context items per session, or tools overall."""

    item = "item"
    tool = "tool"


def _period_command(period: Period, noun: str) -> Callable[..., None]:
    """The ``daily``/``weekly``/``monthly`` command for one period length."""

    def command(
        ctx: typer.Context,
        paths: options.PathsArg = None,
        by: Annotated[By | None, typer.Option(help="Break each period down by this.")] = None,
        since: options.SinceOpt = None,
        until: options.UntilOpt = None,
        timezone: options.ZoneOpt = None,
        rates: options.RatesOpt = "github-copilot",
        model_map: options.ModelMapOpt = None,
        agent: options.AgentOpt = None,
        output_format: options.FormatOpt = options.Format.table,
        output: options.OutputOpt = None,
        strict: options.StrictOpt = False,
        wide: options.WideOpt = False,
        show_issues: options.ShowIssuesOpt = False,
        dataset: DatasetOpt = None,
    ) -> None:
        try:
            if dataset is not None:
                if paths or agent or model_map or rates != "github-copilot":
                    raise UsageError(
                        "--dataset reads a dataset priced when it was written: "
                        "name no PATH, --agent, --rates or --model-map with it"
                    )
                _dataset_period(period, dataset, by, since, until, timezone, output_format, output)
                return
            replays = Replays.of(ctx, period, paths, output_format, output, timezone, locals())
            if replays.replayed(output):
                return
            from analytics.core.periods import day_window, period_report, sessions_without_calls
            from analytics.core.timezones import resolve_zone

            zone = resolve_zone(timezone)
            start, end = day_window(since, until)
            window = loading.window(None, None, timezone, agent)
            result, priced_calls, priced_sessions = loading.priced(
                ctx, paths, rates, model_map, found=replays.found, window=window
            )
            if by is By.user:
                raise UsageError("--by user reads a team dataset: add --dataset DIR")
            breakdown = _BREAKDOWN[by] if by else None
            rep = period_report(
                priced_calls,
                priced_sessions,
                period=period,
                zone=zone,
                by=breakdown,
                since=start,
                until=end,
            )
            idle = sessions_without_calls(priced_sessions, zone, start, end)
            text = _emit_periods(
                rep, result.issues, period, output_format, output, wide=wide, without_calls=idle
            )
            notes = printing.issue_notes(result, show_issues, wide=wide)
            finish(replays, text, notes, strict_failure=strict and result.issues.height > 0)
        except AgentcostError as error:
            printing.fail(error)

    command.__doc__ = (
        f"Calls, tokens and cost per {noun} (in --timezone), across all sessions found."
    )
    return command


_BREAKDOWN: dict[By, Breakdown] = {
    By.model: "model",
    By.project: "project",
    By.session: "session",
    By.agent: "agent",
}
DatasetOpt = Annotated[
    Path | None,
    typer.Option(help="Read a team dataset (agentcost export/spark) through DuckDB, not logs."),
]


def _dataset_period(
    period: Period,
    dataset: Path,
    by: By | None,
    since: str | None,
    until: str | None,
    timezone: str | None,
    output_format: options.Format,
    output: Path | None,
) -> None:
    """A period report of a team dataset, by DuckDB SQL (``analytics.core.period_sql``): the
    output the same logs give."""
    from analytics.core.period_sql import dataset_issues, duckdb_report
    from analytics.core.periods import day_window
    from analytics.core.timezones import resolve_zone

    if not (dataset / "dataset.json").is_file():
        raise UsageError(f"{dataset}: no agentcost dataset here (no dataset.json)")
    start, end = day_window(since, until)
    zone = str(resolve_zone(timezone))
    rep = duckdb_report(
        dataset, period=period, zone=zone, by=by.value if by else None, since=start, until=end
    )
    _emit_periods(rep, dataset_issues(dataset), period, output_format, output, wide=False)


def _emit_periods(
    rep: PeriodReport,
    issues: pl.DataFrame,
    period: Period,
    output_format: options.Format,
    output: Path | None,
    *,
    wide: bool,
    without_calls: int = 0,
) -> Report | None:
    """Print or write a period report, whether the logs or a team dataset gave it (one
    rendering for both, so the two read alike): ``printing.emit``'s text. ``without_calls``:
    the sessions of the window with no LLM call (``views.period_table``)."""
    from analytics.render import views

    return printing.emit(
        output_format,
        output,
        rep.rows,
        lambda: views.render_sections_json(
            {"periods": rep.rows, "totals": rep.totals}, issues, timezone=rep.zone
        ),
        lambda layout: views.period_table(
            rep.rows, rep.totals, period, rep.zone, layout, without_calls
        ),
        wide=wide,
    )


cli.app.command("daily")(_period_command("day", "day"))
cli.app.command("weekly")(_period_command("week", "ISO week"))
cli.app.command("monthly")(_period_command("month", "month"))


@cli.app.command()
def top(
    ctx: typer.Context,
    paths: options.PathsArg = None,
    limit: Annotated[int, typer.Option(min=1, help="Rows per session (or tools) to show.")] = 10,
    by: Annotated[
        TopBy, typer.Option(help="item: costliest items per session; tool: per tool overall.")
    ] = TopBy.item,
    behaviour: Annotated[
        bool, typer.Option(help="Also show compactions and agent-loop behaviour.")
    ] = True,
    since: options.SinceOpt = None,
    until: options.UntilOpt = None,
    timezone: options.ZoneOpt = None,
    agent: options.AgentOpt = None,
    rates: options.RatesOpt = "github-copilot",
    model_map: options.ModelMapOpt = None,
    output_format: options.FormatOpt = options.Format.table,
    output: options.OutputOpt = None,
    strict: options.StrictOpt = False,
    wide: options.WideOpt = False,
    show_issues: options.ShowIssuesOpt = False,
) -> None:
    """Where the input money goes: context items re-sent on every call, and what they cost."""
    try:
        replays = Replays.of(ctx, "top", paths, output_format, output, timezone, locals())
        if replays.replayed(output, agent_items=True):
            return
        from analytics.core.attribution import top_sections
        from analytics.render import views

        window = loading.window(since, until, timezone, agent)
        zone = str(window.zone)
        result, priced_calls, _ = loading.priced(
            ctx, paths, rates, model_map, found=replays.found, window=window, agent_items=True
        )
        sections = top_sections(
            priced_calls,
            ((group.sessions, group.events) for group in result.session_groups()),
            tools=by is TopBy.tool,
            limit=limit,
            behaviour=behaviour,
        )
        ranked = sections["tools" if by is TopBy.tool else "items"]

        def as_table(layout: Layout) -> str:
            text = views.attribution_table(ranked, by.value, layout)
            if behaviour:
                saved = "compactions (saved tokens: (pre - post) x later calls, an estimate)"
                text += f"\n\n{views.caption(saved, layout)}\n"
                text += views.compaction_table(sections["compactions"], zone, layout)
                text += "\n\nagent loop\n" + views.behaviour_table(sections["behaviour"], layout)
            return text

        text = printing.emit(
            output_format,
            output,
            ranked,
            lambda: views.render_sections_json(sections, result.issues, timezone=zone),
            as_table,
            wide=wide,
        )
        notes = printing.issue_notes(result, show_issues, wide=wide)
        finish(replays, text, notes, strict_failure=strict and result.issues.height > 0)
    except AgentcostError as error:
        printing.fail(error)


# --- commands: blocks ---


def _blocks_agents() -> str:
    """The agents whose plans meter 5-hour windows, in words (``--agent``'s default)."""
    return agents.listed([f"{a.id} ({a.plans})" for a in agents.with_blocks()])


@cli.app.command()
def blocks(
    ctx: typer.Context,
    paths: options.PathsArg = None,
    agent: Annotated[
        list[options.Agent] | None,
        typer.Option(
            "--agent",
            metavar="AGENT",
            help="Whose calls fill the blocks (repeatable). Default: the agents whose plans "
            f"meter 5-hour windows: {_blocks_agents()}.",
            show_default=False,
        ),
    ] = None,
    token_limit: Annotated[
        str | None,
        typer.Option(
            help="Tokens a block may use: a number, or max (the most a past block used). "
            "Shows each block's share and whether the active one is on course to pass it.",
        ),
    ] = None,
    active: Annotated[
        bool, typer.Option("--active", help="Only the active block, with its burn rate.")
    ] = False,
    since: Annotated[
        str | None, typer.Option(help="Only blocks starting on or after this day (YYYY-MM-DD).")
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(help="Only blocks starting on or before this day (YYYY-MM-DD)."),
    ] = None,
    timezone: options.ZoneOpt = None,
    rates: options.RatesOpt = "github-copilot",
    model_map: options.ModelMapOpt = None,
    output_format: options.FormatOpt = options.Format.table,
    output: options.OutputOpt = None,
    wide: options.WideOpt = False,
    show_issues: options.ShowIssuesOpt = False,
) -> None:
    """5-hour usage blocks (the windows Claude's plans meter): tokens and API-equivalent
    cost per block, and the active block's burn rate and projection."""
    try:
        from dataclasses import replace
        from datetime import UTC, datetime

        from analytics.core.blocks import blocks_view, pace_row
        from analytics.render import views

        metered = [options.Agent(chosen.id) for chosen in agents.with_blocks()]
        days = loading.window(since, until, timezone, agent or metered)
        window = replace(days, since=None, until=None)  # every call makes the blocks
        result, priced_calls, _ = loading.priced(ctx, paths, rates, model_map, window=window)
        zone = str(window.zone)
        view = blocks_view(
            priced_calls,
            datetime.now(UTC),
            zone,
            days.since,
            days.until,
            token_limit=token_limit,
            active_only=active,
        )
        table, pace, limit = view.shown, view.pace, view.limit
        notes = views.blocks_notes(pace, limit)
        printing.emit(
            output_format,
            output,
            table,
            lambda: views.render_sections_json(
                {"blocks": table, "active": pace_row(pace, limit)}, result.issues, timezone=zone
            ),
            lambda layout: (
                "\n".join([views.blocks_table(table, zone, limit, layout), *notes])
                if table.height
                else "no 5-hour block starts on these days (--since/--until)"
                if view.every.height
                else "no calls in these logs for a 5-hour block"
            ),
            wide=wide,
        )
        printing.report_issues(result, False, show_issues)
    except AgentcostError as error:
        printing.fail(error)
