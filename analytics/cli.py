"""The ``agentcost`` command line: parse arguments, call the library, render, exit.

Thin by design: each command is a few lines that call library functions. Library errors
(``AgentcostError``) are turned into one line on stderr and an exit code here, and only here.
Heavy modules are imported inside commands so ``agentcost --help`` stays fast.
"""

from __future__ import annotations

import sys
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from analytics.errors import AgentcostError, StrictModeError, UsageError

if TYPE_CHECKING:
    from analytics.analysis import Analysis, Window

app = typer.Typer(
    name="agentcost",
    help="Facts about LLM calls, tokens and money from AI coding-agent session logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def root() -> None:
    """Facts about LLM calls, tokens and money from AI coding-agent session logs."""


class Format(StrEnum):
    """Output formats of the analysis commands."""

    table = "table"
    json = "json"
    csv = "csv"


PathsArg = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Session directories, events.jsonl files, session-state directories or Copilot "
        "homes. Default: $COPILOT_HOME or ~/.copilot.",
        show_default=False,
    ),
]
SinceOpt = Annotated[
    str | None, typer.Option(help="Only sessions starting on or after this day (YYYY-MM-DD).")
]
UntilOpt = Annotated[
    str | None, typer.Option(help="Only sessions starting on or before this day (YYYY-MM-DD).")
]
ZoneOpt = Annotated[
    str | None,
    typer.Option(help="IANA timezone for days and displayed times. Default: the local zone."),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
RatesOpt = Annotated[
    str,
    typer.Option(
        help="Rate table: a bundled name (github-copilot, copilot-premium-requests, anthropic, "
        "openai, google, openrouter, deepseek) or a TOML file.",
    ),
]
ModelMapOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--model-map", help="Price calls of model OLD as model NEW: OLD=NEW (repeatable)."
    ),
]
StrictOpt = Annotated[
    bool, typer.Option(help="Exit with status 1 if any input problem (issue) was found.")
]


def _fail(error: AgentcostError) -> NoReturn:
    """Print one line on stderr and exit with the error's code."""
    typer.echo(f"agentcost: error: {error}", err=True)
    raise typer.Exit(error.exit_code)


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{option} {value!r} is not a date; use YYYY-MM-DD") from None


def _window(since: str | None, until: str | None, timezone: str | None) -> Window:
    from analytics.analysis import Window
    from analytics.timezones import resolve_zone

    return Window(_day(since, "--since"), _day(until, "--until"), resolve_zone(timezone))


def _model_map(pairs: list[str] | None) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for pair in pairs or []:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise UsageError(
                f"--model-map {pair!r}: expected OLD=NEW, e.g. gpt-5=claude-sonnet-4.6"
            )
        mapping[old] = new
    return mapping


def _report_issues(result: Analysis, strict: bool) -> None:
    """Issue count on stderr; with --strict, any issue fails the run."""
    from analytics.analysis import issue_summary

    if result.issues.height:
        typer.echo(
            f"agentcost: {issue_summary(result.issues)} in the input; "
            "see the issues list of --format json",
            err=True,
        )
        if strict:
            raise StrictModeError("--strict: the input has issues")


# --- commands: analyze ---


@app.command()
def analyze(
    paths: PathsArg = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    timezone: ZoneOpt = None,
    output_format: FormatOpt = Format.table,
    calls: Annotated[
        bool, typer.Option("--calls", help="One row per LLM call instead of per session.")
    ] = False,
    rates: RatesOpt = "github-copilot",
    model_map: ModelMapOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Count LLM calls, tokens and cost per session (or per call), checked against the log."""
    from analytics import report
    from analytics.analysis import analyze as run
    from analytics.costs import price_analysis
    from analytics.rates import load_rate_table

    try:
        window = _window(since, until, timezone)
        table = load_rate_table(rates)
        result = run(paths or [], window)
        priced_calls, priced_sessions = price_analysis(
            result.calls, result.sessions, table, _model_map(model_map)
        )
        frame, key = (priced_calls, "calls") if calls else (priced_sessions, "sessions")
        if output_format is Format.json:
            typer.echo(report.render_json(key, frame, result.issues))
        elif output_format is Format.csv:
            typer.echo(report.render_csv(frame), nl=False)
        else:
            zone = str(window.zone)
            render = report.call_table if calls else report.session_table
            typer.echo(render(frame, zone))
        _report_issues(result, strict)
    except AgentcostError as error:
        _fail(error)


# --- commands: compare ---


@app.command()
def compare(
    paths: PathsArg = None,
    rates: Annotated[
        str, typer.Option(help="Comma-separated rate tables (bundled names or TOML files).")
    ] = "github-copilot,anthropic,openai,google,openrouter,deepseek",
    model_map: ModelMapOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    timezone: ZoneOpt = None,
    output_format: FormatOpt = Format.table,
) -> None:
    """Re-price the same sessions under several rate tables and name the cheapest."""
    from analytics import report
    from analytics.analysis import analyze as run
    from analytics.compare import compare_tables
    from analytics.rates import load_rate_table

    try:
        window = _window(since, until, timezone)
        tables = [load_rate_table(name.strip()) for name in rates.split(",") if name.strip()]
        result = run(paths or [], window)
        wide, cheapest = compare_tables(
            result.calls, result.sessions, tables, _model_map(model_map)
        )
        if output_format is Format.json:
            typer.echo(report.render_json("sessions", wide, result.issues))
        elif output_format is Format.csv:
            typer.echo(report.render_csv(wide), nl=False)
        else:
            typer.echo(report.comparison_table(wide, [t.name for t in tables], str(window.zone)))
            verdict = (
                f"cheapest complete table: {cheapest}"
                if cheapest
                else ("no table priced every call; totals are lower bounds")
            )
            typer.echo(verdict)
        _report_issues(result, strict=False)
    except AgentcostError as error:
        _fail(error)


# --- commands: validate ---


@app.command()
def validate(paths: PathsArg = None, output_format: FormatOpt = Format.table) -> None:
    """Measure the per-call token reconstruction against observed per-call records."""
    from analytics import report
    from analytics.analysis import analyze as run
    from analytics.validate import error_summary, reconstruction_errors

    try:
        result = run(paths or [])
        errors = reconstruction_errors(result)
        summary = error_summary(errors)
        if output_format is Format.json:
            typer.echo(report.render_json("sessions", summary, result.issues))
        elif output_format is Format.csv:
            typer.echo(report.render_csv(summary), nl=False)
        elif not errors.height:
            typer.echo("no observed per-call tokens in these logs: nothing to validate against")
        else:
            typer.echo(report.plain_table(summary))
    except AgentcostError as error:
        _fail(error)


# --- commands: simulate ---

# --- commands: reports ---

# --- commands: export ---


def main() -> None:
    """Console-script entry point."""
    sys.exit(app())
