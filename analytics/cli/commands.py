"""The ``agentcost`` command line: the app, its first screen, and the commands that read one
analysis (``analyze``, ``compare``, ``issues``, ``watch``, ``validate``, ``mcp``); ``main`` and
``run`` run it.

Thin by design: each command is a few lines that call library functions, with what every
command shares in modules of their own: its options (``options``), the analysis it reads
(``loading``), what it prints and how (``printing``: library errors, ``AgentcostError``, become
one line on stderr and an exit code there, and only there) and its stored output
(``replays``). Heavy modules are imported inside commands so ``agentcost --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from typer.main import get_command_name

from analytics.cache import heads
from analytics.cli import loading, printing
from analytics.cli.options import (
    AgentOpt,
    Format,
    FormatOpt,
    ModelMapOpt,
    OutputOpt,
    PathsArg,
    RatesOpt,
    ShowIssuesOpt,
    SinceOpt,
    StrictOpt,
    UntilOpt,
    WideOpt,
    ZoneOpt,
)
from analytics.cli.replays import Replays, finish
from analytics.core.errors import AgentcostError, UsageError
from analytics.engine.inputs import agents

if TYPE_CHECKING:
    from collections.abc import Sequence

    from analytics.render.text_table import Layout

app = typer.Typer(
    name="agentcost",
    help="Facts about LLM calls, tokens and money from AI coding-agent session logs.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(asked: bool) -> None:
    """``agentcost --version``: the installed distribution's version and the native
    engine's build (``analytics._scanner.BUILD``), then exit. Imports neither polars nor a
    command, so it answers at once."""
    if not asked:
        return
    from importlib.metadata import PackageNotFoundError, version

    from analytics import _scanner

    try:
        installed = version("agentcost")
    except PackageNotFoundError:
        installed = "(not installed)"
    engine = getattr(_scanner, "BUILD", "of unknown build (older than --version)")
    typer.echo(f"agentcost {installed}, engine {engine}")
    raise typer.Exit()


def _root_help() -> str:
    """``agentcost --help``'s text, naming every agent's home (``agents.every_home``)."""
    return (
        "Facts about LLM calls, tokens and money from AI coding-agent session logs "
        f"({agents.listed([a.name for a in agents.AGENTS])}).\n\n"
        "Without a command: what was spent today, this week and this month in every agent's "
        f"home that exists ({agents.every_home()}), the costliest sessions and the model mix."
    )


@app.callback(help=_root_help())
def root(
    ctx: typer.Context,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Analyse every log again instead of reusing the result cache "
            "($AGENTCOST_CACHE_DIR, else ~/.cache/agentcost).",
        ),
    ] = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print agentcost's version and its native engine's build, and exit.",
        ),
    ] = False,
) -> None:
    ctx.obj = not no_cache
    heads.use(ctx.obj)  # discovery recalls what it read of unchanged files
    if ctx.invoked_subcommand is None:
        _home(ctx)


def _home(ctx: typer.Context) -> None:
    """The first screen: spend by period, costliest sessions, model mix (``core.home``)."""
    from datetime import datetime

    from analytics.core.timezones import resolve_zone

    try:
        zone = resolve_zone(None)
        today = datetime.now(zone).date()
        replays = Replays.of(
            ctx, "home", None, Format.table, None, None, {"today": str(today)}, today_in=str(zone)
        )
        if replays.replayed(None):
            return
        from analytics.core.home import home_screen
        from analytics.render import views

        result, priced_calls, priced_sessions = loading.priced(
            ctx, None, "github-copilot", None, found=replays.found
        )
        from analytics.render.unpriced import reason_lines, with_reasons

        screen = home_screen(priced_calls, priced_sessions, zone, today)
        layout = printing.layout(wide=False)
        text = with_reasons(views.home_text(screen, layout), reason_lines(screen.unpriced), layout)
        typer.echo(text)
        finish(replays, text, printing.issue_notes(result, False, wide=False), strict_failure=False)
    except AgentcostError as error:
        printing.fail(error)


# --- commands: analyze ---


@app.command()
def analyze(
    ctx: typer.Context,
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
    agent: AgentOpt = None,
    output: OutputOpt = None,
    strict: StrictOpt = False,
    wide: WideOpt = False,
    show_issues: ShowIssuesOpt = False,
) -> None:
    """Count LLM calls, tokens and cost per session (or per call), checked against the log."""
    try:
        replays = Replays.of(ctx, "analyze", paths, output_format, output, timezone, locals())
        if replays.replayed(output):
            return
        from analytics.cache.priced_tables import priced_tables
        from analytics.core.pricing.rates import load_rates
        from analytics.engine.analyze import in_session_order
        from analytics.render import views

        window = loading.window(since, until, timezone, agent)
        table = load_rates(rates)
        result = loading.load(ctx, paths, window, found=replays.found)
        key = "calls" if calls else "sessions"
        renames = loading.model_renames(model_map)
        frame = priced_tables(result, table, renames, [key])[key]
        if calls:
            frame = in_session_order(frame, result.sessions)
        zone = str(window.zone)

        def as_table(layout: Layout) -> str:
            from analytics.core.pricing.call_costs import unpriced_reasons
            from analytics.render.unpriced import reason_lines, with_reasons

            if calls:
                reasons = reason_lines(unpriced_reasons(frame), renames)
                return with_reasons(views.call_table(frame, zone, layout), reasons, layout)
            reasons = []
            if frame["unpriced_calls"].fill_null(0).sum() > 0:
                # each unpriced call's own reason: the calls, priced only to say why
                priced_calls = priced_tables(result, table, renames, ["calls"])["calls"]
                reasons = reason_lines(unpriced_reasons(priced_calls), renames)
            return views.session_table(frame, zone, layout, reasons)

        text = printing.emit(
            output_format,
            output,
            frame,
            lambda: views.render_json(key, frame, result.issues),
            as_table,
            wide=wide,
        )
        notes = printing.issue_notes(result, show_issues, wide=wide)
        finish(replays, text, notes, strict_failure=strict and result.issues.height > 0)
    except AgentcostError as error:
        printing.fail(error)


# --- commands: compare ---


@app.command()
def compare(
    ctx: typer.Context,
    paths: PathsArg = None,
    rates: Annotated[
        str,
        typer.Option(
            help="Comma-separated sellers: rate tables (bundled names or TOML files) or vendor "
            "(each model at its vendor's own API). Models are priced under each table's own "
            "name for them (the model-equivalence map).",
        ),
    ] = "github-copilot,vendor,openrouter",
    model_map: ModelMapOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    timezone: ZoneOpt = None,
    agent: AgentOpt = None,
    output_format: FormatOpt = Format.table,
    output: OutputOpt = None,
    wide: WideOpt = False,
    show_issues: ShowIssuesOpt = False,
) -> None:
    """Price the same calls at each seller of their model (Copilot, the vendor, OpenRouter)
    and name the cheapest."""
    try:
        replays = Replays.of(ctx, "compare", paths, output_format, output, timezone, locals())
        if replays.replayed(output):
            return
        from analytics.core.pricing.compare import compare_tables, load_seller
        from analytics.render import views

        window = loading.window(since, until, timezone, agent)
        tables = [load_seller(name.strip()) for name in rates.split(",") if name.strip()]
        result = loading.load(ctx, paths, window, found=replays.found)
        found = compare_tables(
            result.call_view,
            result.session_view,
            tables,
            loading.model_renames(model_map),
            result.log_prices,
        )
        names = [t.name for t in tables]
        text = printing.emit(
            output_format,
            output,
            found.sessions,
            lambda: views.render_sections_json(
                {"sessions": found.sessions, "priced_as": found.priced_as}, result.issues
            ),
            lambda layout: views.comparison_table(found, names, str(window.zone), layout),
            wide=wide,
        )
        notes = printing.issue_notes(result, show_issues, wide=wide)
        finish(replays, text, notes, strict_failure=False)
    except AgentcostError as error:
        printing.fail(error)


# --- commands: issues ---


@app.command()
def issues(
    ctx: typer.Context,
    paths: PathsArg = None,
    output_format: FormatOpt = Format.table,
    output: OutputOpt = None,
    strict: StrictOpt = False,
    wide: WideOpt = False,
) -> None:
    """List the input's problems (file, line, severity, message): lines agentcost could not
    use, or kept but finds suspect."""
    try:
        replays = Replays.of(ctx, "issues", paths, output_format, output, None, locals())
        if replays.replayed(output):
            return
        from analytics.render import views

        result = loading.load(ctx, paths, found=replays.found)
        found = result.issues
        text = printing.emit(
            output_format,
            output,
            found,
            lambda: views.render_sections_json({}, found),
            lambda layout: views.issues_table(found, layout) if found.height else "no issues",
            wide=wide,
        )
        finish(replays, text, [], strict_failure=strict and found.height > 0)
    except AgentcostError as error:
        printing.fail(error)


# --- commands: watch ---


@app.command()
def watch(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Argument(
            readable=False,
            help="A session directory or log (Copilot events.jsonl, Claude Code session file, "
            "Codex rollout), or a tree to take the most recently written log from. Default: "
            "every agent's home.",
            show_default=False,
        ),
    ] = None,
    rates: RatesOpt = "github-copilot",
    model_map: ModelMapOpt = None,
) -> None:
    """Live view of the active session: calls, context size, cost so far, last call's cost
    and the growth curve, updated as its log grows. q or Ctrl-C quits."""
    from rich.console import Console

    from analytics.cli.live import run
    from analytics.core.pricing.rates import load_rates
    from analytics.engine.following import Following
    from analytics.engine.live_figures import Figures, priced_figures
    from analytics.engine.live_session import latest_log, names_a_session

    try:
        table, renames = load_rates(rates), loading.model_renames(model_map)
        paths = [path] if path else []
        log = latest_log(paths)
        newest = None if names_a_session(path) else (lambda: latest_log(paths))

        def analyse(follow: Following) -> Figures | None:
            return priced_figures(follow, table, renames)

        run(log, analyse, Console(highlight=False), newest=newest)
    except KeyboardInterrupt:
        return
    except AgentcostError as error:
        printing.fail(error)


# --- commands: validate ---


@app.command()
def validate(
    ctx: typer.Context,
    paths: PathsArg = None,
    output_format: FormatOpt = Format.table,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """Measure the per-call token reconstruction against observed per-call records, and
    check the Claude Code and Codex logs' usage against what each log says twice."""
    from analytics.engine.inputs import captures_as_logs
    from analytics.engine.validate import log_checks, validation_summary
    from analytics.render import views

    try:
        with captures_as_logs(paths) as logs:
            # the Claude Code sessions' items: the reconstruction runs on their content
            result = loading.load(ctx, logs, agent_items=True)
            summary, compared = validation_summary(result)
            checks = log_checks(result)
        nothing = "no observed per-call tokens in these logs: nothing to validate against"

        def table(layout: Layout) -> str:
            parts = [views.plain_table(summary, layout)] if compared else []
            if checks.height:
                parts.append(views.plain_table(checks, layout))
            return "\n\n".join(parts) or nothing

        printing.emit(
            output_format,
            output,
            summary,
            lambda: views.render_sections_json(
                {"sessions": summary, "log_checks": checks}, result.issues
            ),
            table,
            wide=wide,
        )
    except AgentcostError as error:
        printing.fail(error)


# --- commands: mcp ---


#: What ``agentcost mcp`` says when the SDK is not installed.
MCP_EXTRA = "agentcost mcp needs the mcp extra: pip install 'agentcost[mcp]'"


# The help is rich markup: ``\[`` keeps the extra's brackets, which rich would read as a tag.
@app.command()
def mcp(ctx: typer.Context) -> None:
    r"""Serve agentcost's figures to an agent over the Model Context Protocol (stdio): spend,
    session_cost, top_items, blocks and budget (needs the mcp extra: pip install
    'agentcost\[mcp]')."""
    try:
        try:
            from analytics.cli.mcp_server import serve
        except ModuleNotFoundError as missing:
            if (missing.name or "").partition(".")[0] == "analytics":
                raise  # agentcost's own module: a bug, not a missing extra
            raise UsageError(MCP_EXTRA) from None
        serve(use_cache=bool(ctx.find_root().obj))
    except AgentcostError as error:
        printing.fail(error)


# --- shared by the commands ---


def _one_line_summaries(group: typer.Typer) -> None:
    """Each command's summary in ``--help`` (its docstring's first paragraph) as one line
    of words, so rich wraps it evenly at the terminal's width instead of keeping the
    docstring's own line breaks."""
    for info in group.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback else None) or ""
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.split("\n\n")[0].split())


def _only_the_command_named(first: Sequence[str]) -> None:
    """Leave on ``app`` only the command or group of commands the command line names
    first, when it names one (not an option, not a typo): typer builds a click command of
    every one registered on each run (~13 ms for all, 1 ms for one), and a run needs one.
    Its help, errors and behaviour are those it has beside the others."""
    if not first or first[0].startswith("-"):  # an option first (--help, --no-cache)
        return
    commands = [
        info
        for info in app.registered_commands
        if info.callback and [info.name or get_command_name(info.callback.__name__)] == first
    ]
    groups = [info for info in app.registered_groups if [info.name] == first]
    if commands or groups:
        app.registered_commands, app.registered_groups = commands, groups


#: The exit code of a failure inside agentcost or a library it runs: a bug, never the input's.
INTERNAL_FAILURE = 3


def main() -> NoReturn:
    """Console-script entry point: :func:`run` the command line, then leave.

    Leaves with ``os._exit`` once output is flushed: tearing down the interpreter after polars
    has been loaded costs ~0.15 s (measured), a tenth of a warm run. Every file agentcost
    writes is closed by then (the result cache's background write is waited for). Before any
    command runs, the allocators are told to return freed memory (``allocators.tune``).
    """
    from analytics.core.allocators import tune

    tune()
    _only_the_command_named(sys.argv[1:2])
    code = run(sys.argv[1:])
    if "analytics.cache.results" in sys.modules:  # a result still being written is finished
        sys.modules["analytics.cache.results"].flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run(argv: Sequence[str]) -> int:
    """Run the command line ``argv`` (without the program's name) and return its exit code.

    A failure the input did not cause (a bug: an exception no command expects, or a panic of
    polars or the native engine, which reaches Python as a ``BaseException``) is one line on
    stderr and exit code 3 (``INTERNAL_FAILURE``), never a traceback; ``AGENTCOST_DEBUG=1``
    shows the traceback too. Ctrl-C leaves with 130, as a shell expects.
    """
    try:
        app(args=list(argv), prog_name="agentcost")
    except SystemExit as leaving:
        if isinstance(leaving.code, str):
            print(leaving.code, file=sys.stderr)
            return 1
        return leaving.code if isinstance(leaving.code, int) else int(leaving.code is not None)
    except KeyboardInterrupt:
        return 130
    except BaseException as failure:  # a panic is a BaseException, not an Exception
        printing.err(_internal_failure_line(failure, argv))
        return INTERNAL_FAILURE
    return 0


def _internal_failure_line(failure: BaseException, argv: Sequence[str]) -> str:
    """The one line of a failure inside agentcost: the command and its inputs as given, what
    failed, and what to do."""
    import shlex

    if os.environ.get("AGENTCOST_DEBUG"):
        import traceback

        traceback.print_exception(failure)
    words = str(failure).strip().splitlines()
    what = f"{type(failure).__name__}: {words[0]}" if words else type(failure).__name__
    return (
        f"agentcost: internal error in `{shlex.join(['agentcost', *argv])}`: {what}. "
        "This is a bug in agentcost or a library it runs, not a problem of the logs: please "
        "report it with this line (AGENTCOST_DEBUG=1 shows the traceback)."
    )
