"""The ``agentcost`` command line: parse arguments, call the library, render, exit.

Thin by design: each command is a few lines that call library functions. Library errors
(``AgentcostError``) are turned into one line on stderr and an exit code here, and only here.
Heavy modules are imported inside commands so ``agentcost --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple, NoReturn, TextIO, TypeAlias

import typer
from typer.main import get_command_name

from analytics.core.errors import AgentcostError, StrictModeError, UsageError, cannot_write
from analytics.engine.inputs import agents

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import polars as pl

    from analytics.cache.invocations import Invocation
    from analytics.cache.output import OutputCache, Report
    from analytics.engine.analyze import Analysis, Window
    from analytics.engine.inputs import Found
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
    if ctx.invoked_subcommand is None:
        _home(ctx)


def _home(ctx: typer.Context) -> None:
    """The first screen: spend by period, costliest sessions, model mix (``core.home``)."""
    from datetime import datetime

    from analytics.core.timezones import resolve_zone

    try:
        zone = resolve_zone(None)
        today = datetime.now(zone).date()
        replays = _Replays.of(
            ctx, "home", None, Format.table, None, None, {"today": str(today)}, today_in=str(zone)
        )
        if replays.replayed(None):
            return
        from analytics.core.home import home_screen
        from analytics.render import report

        result, priced_calls, priced_sessions = _priced(
            ctx, None, "github-copilot", None, found=replays.found
        )
        from analytics.render.unpriced import reason_lines, with_reasons

        screen = home_screen(priced_calls, priced_sessions, zone, today)
        layout = _layout(wide=False)
        text = with_reasons(report.home_text(screen, layout), reason_lines(screen.unpriced), layout)
        typer.echo(text)
        _finish(replays, text, _issue_notes(result, False, wide=False), strict_failure=False)
    except AgentcostError as error:
        _fail(error)


if TYPE_CHECKING:
    Agent: TypeAlias = StrEnum
else:
    #: ``--agent``'s choices: the ids of the agents whose logs agentcost reads (the ``agent``
    #: column), made from the registry (typer takes an enum's values as a choice).
    Agent = StrEnum("Agent", [(agent.id, agent.id) for agent in agents.AGENTS])


class Format(StrEnum):
    """Output formats of the analysis commands (parquet needs --output)."""

    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


#: Path arguments and options are ``readable=False``: a file that cannot be read is said so
#: by agentcost (one line, or an issue), not by click's usage box.
PathsArg = Annotated[
    list[Path] | None,
    typer.Argument(
        readable=False,
        help="Session logs or directories of them (a session directory, an events.jsonl, a "
        "Claude Code session file, a Codex rollout) or agents' homes. Default: every agent's "
        f"home that exists: {agents.every_home()}.",
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
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        readable=False,
        help="Write to this file instead of stdout (parquet needs it).",
    ),
]


def bundled_tables() -> str:
    """The bundled rate tables' names (``rates.bundled_rate_tables``), for help texts:
    Copilot's two first, then the vendors', so a new table is named without an edit here."""
    from analytics.core.pricing.rates import bundled_rate_tables

    names = bundled_rate_tables()
    first = [n for n in ("github-copilot", "copilot-premium-requests") if n in names]
    return ", ".join([*first, *(n for n in names if n not in first)])


RatesOpt = Annotated[
    str,
    typer.Option(
        help=f"Rate table: a bundled name ({bundled_tables()}), a TOML file, or BASE+FILE to "
        "override or add models of a table with your own.",
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
WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Tables: every column at its natural width and full session ids, instead of "
        "fitting $COLUMNS or the terminal.",
    ),
]
AgentOpt = Annotated[
    list[Agent] | None,
    typer.Option(
        "--agent",
        metavar="AGENT",
        help=f"Only the sessions of this agent (repeatable): {agents.listed(agents.ids(), 'or')}.",
        show_default=False,
    ),
]
ShowIssuesOpt = Annotated[
    bool,
    typer.Option(
        "--show-issues",
        help="After the output, list the input's problems on stderr (the table of agentcost "
        "issues) instead of only counting them.",
    ),
]


def _fail(error: AgentcostError) -> NoReturn:
    """Print one line on stderr and exit with the error's code."""
    _err(_error_line(error))
    raise typer.Exit(error.exit_code)


def _err(text: str) -> None:
    """A note (or several lines) on stderr, through ``_say``."""
    _say(text, err=True)


def _say(text: str, *, err: bool = False) -> None:
    """A line (or lines) of words on stdout or stderr. On a terminal, they are wrapped at
    its width, so no line is longer than the screen; elsewhere (a pipe, a file, a test)
    each line stays whole, for scripts to read (``render.lines``)."""
    from analytics.render.lines import for_stream

    typer.echo(for_stream(text, sys.stderr if err else sys.stdout), err=err)


def _error_line(error: AgentcostError) -> str:
    return f"agentcost: error: {error}"


def _window(
    since: str | None,
    until: str | None,
    timezone: str | None,
    agent: list[Agent] | None = None,
) -> Window:
    from analytics.core.periods import day_window
    from analytics.core.timezones import resolve_zone
    from analytics.engine.analyze import Window

    agents = tuple(sorted({chosen.value for chosen in agent or []}))
    return Window(*day_window(since, until), resolve_zone(timezone), agents)


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


def _load(
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
        _say_if_nothing_is_cached()
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


#: Cache directories this run has looked at, and why each cannot be written ("" if it can).
_UNCACHED: dict[Path, str] = {}


def _say_if_nothing_is_cached() -> bool:
    """Whether the cache directory cannot be written; the first time, one line on stderr
    says so (stdout, where JSON goes, stays the report alone). The run goes on uncached."""
    from analytics.cache.location import cache_dir, unwritable

    directory = cache_dir()
    if directory not in _UNCACHED:
        _UNCACHED[directory] = reason = unwritable(directory) or ""
        if reason:
            _err(
                f"agentcost: the cache directory {directory} cannot be written ({reason}); "
                "nothing is cached (set AGENTCOST_CACHE_DIR to a writable directory)"
            )
    return bool(_UNCACHED[directory])


def _report_issues(
    result: Analysis, strict: bool, show: bool = False, *, wide: bool = False
) -> None:
    """Issue count on stderr, or with ``show`` (--show-issues) the issues table there (stdout
    stays the report alone); with --strict, any issue fails the run."""
    for note in _issue_notes(result, show, wide=wide):
        _err(note)
    if strict and result.issues.height:
        raise StrictModeError("--strict: the input has issues")


def _issue_notes(result: Analysis, show: bool, *, wide: bool) -> list[str]:
    """What ``_report_issues`` prints on stderr: first a line for each file that is not a
    log or is empty (what was read is not what the reader meant), then the count."""
    from analytics.engine.analyze import issue_summary
    from analytics.engine.inputs import EMPTY

    if not result.issues.height:
        return []
    found = result.found
    files = found.not_logs + [problem for problem in found.problems if problem[1] == EMPTY]
    notes = [f"agentcost: {path}: {what}" for path, what in files]
    if show:
        from analytics.render import report

        return [*notes, report.issues_table(result.issues, _layout(wide, stream=sys.stderr))]
    summary = issue_summary(result.issues)
    them = "it" if result.issues.height == 1 else "them"
    return [*notes, f"agentcost: {summary} in the input; agentcost issues lists {them}"]


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
        replays = _Replays.of(ctx, "analyze", paths, output_format, output, timezone, locals())
        if replays.replayed(output):
            return
        from analytics.cache.repriced import priced
        from analytics.core.pricing.rates import load_rates
        from analytics.engine.analyze import in_session_order
        from analytics.render import report

        window = _window(since, until, timezone, agent)
        table = load_rates(rates)
        result = _load(ctx, paths, window, found=replays.found)
        key = "calls" if calls else "sessions"
        renames = _model_map(model_map)
        frame = priced(result, table, renames, [key])[key]
        if calls:
            frame = in_session_order(frame, result.sessions)
        zone = str(window.zone)

        def as_table(layout: Layout) -> str:
            from analytics.core.pricing.call_costs import unpriced_reasons
            from analytics.render.unpriced import reason_lines, with_reasons

            if calls:
                reasons = reason_lines(unpriced_reasons(frame), renames)
                return with_reasons(report.call_table(frame, zone, layout), reasons, layout)
            reasons = []
            if frame["unpriced_calls"].fill_null(0).sum() > 0:
                # each unpriced call's own reason: the calls, priced only to say why
                priced_calls = priced(result, table, renames, ["calls"])["calls"]
                reasons = reason_lines(unpriced_reasons(priced_calls), renames)
            return report.session_table(frame, zone, layout, reasons)

        text = _emit(
            output_format,
            output,
            frame,
            lambda: report.render_json(key, frame, result.issues),
            as_table,
            wide=wide,
        )
        notes = _issue_notes(result, show_issues, wide=wide)
        _finish(replays, text, notes, strict_failure=strict and result.issues.height > 0)
    except AgentcostError as error:
        _fail(error)


def _finish(
    replays: _Replays, report: Report | None, notes: list[str], *, strict_failure: bool
) -> None:
    """After a command printed ``report``: ``notes`` on stderr, then what it printed stored
    for replay; with ``strict_failure`` (--strict, and the input has issues), the failure."""
    for note in notes:
        _err(note)
    if strict_failure:
        failed = StrictModeError("--strict: the input has issues")
        replays.save(report, [*notes, _error_line(failed)], failed.exit_code)
        raise failed
    replays.save(report, notes, 0)


class _Replays(NamedTuple):
    """Where a command finds its stored output (``analytics.cache.output``): ``key`` is None
    with ``agentcost --no-cache``, for Parquet, or when discovery failed or an input cannot
    be inspected. ``found`` is what discovery found (None if it failed: the command reports
    the failure in its own order)."""

    cache: OutputCache | None
    key: str | None
    found: Found | None
    paths: list[Path]
    use_cache: bool
    #: what the next run of this command line replays it from (``save`` notes it)
    invocation: Invocation | None = None

    @classmethod
    def of(
        cls,
        ctx: typer.Context,
        command: str,
        paths: list[Path] | None,
        output_format: Format,
        output: Path | None,
        timezone: str | None,
        options: Mapping[str, object],
        *,
        today_in: str | None = None,
    ) -> _Replays:
        """``command`` on ``paths``, with its parameters ``options`` (its ``locals()`` on
        entry), keyed by ``fingerprints.output_key`` with the terminals its tables are
        drawn for (``today_in``: the zone whose date ``options`` holds as ``today``)."""
        from analytics.cache.fingerprints import output_key_of, output_shape
        from analytics.cache.invocations import Invocation
        from analytics.cache.output import OutputCache
        from analytics.core.timezones import local_zone
        from analytics.engine.inputs import discover

        named, use_cache = paths or [], bool(ctx.find_root().obj)
        try:
            found = discover(named)
        except AgentcostError:
            return cls(None, None, None, named, use_cache)
        if not use_cache or output_format is Format.parquet:
            return cls(None, None, found, named, use_cache)
        if _say_if_nothing_is_cached():
            return cls(None, None, found, named, use_cache)
        wide = bool(options.get("wide"))
        layouts = [_layout(wide, output)] if output_format is Format.table else []
        if options.get("show_issues"):
            layouts.append(_layout(wide, stream=sys.stderr))
        shape = output_shape(
            options,
            output_format=str(output_format),
            zone=timezone or str(local_zone()),
            layouts=[[layout.width, layout.colour] for layout in layouts],
        )
        key = output_key_of(command, found, shape)
        written = str(output) if output is not None else None
        invocation = Invocation(command, [str(p) for p in named], shape, written, today_in)
        return cls(OutputCache(), key, found, named, use_cache, invocation)

    def replayed(self, output: Path | None) -> bool:
        """Print the stored output, if there is one, as the command printed it: the report
        (to ``output`` or stdout), then stderr; exit with its status. If there is none, the
        command analyses next: the first groups of logs start being read meanwhile
        (``engine.groups.scan_ahead``), while it imports what comes after the scan."""
        stored = self.cache.load(self.key) if self.cache and self.key else None
        if stored is None:
            if self.found is not None:
                from analytics.engine.groups import scan_ahead

                scan_ahead(self.found, self.paths, use_cache=self.use_cache)
            return False
        if stored.report is not None:
            _print(stored.report, output)
        for note in stored.notes:
            _err(note)
        if stored.status:
            raise typer.Exit(stored.status)
        return True

    def save(self, report: Report | None, notes: list[str], status: int) -> None:
        """Store what the command printed (``replayed`` prints it next time)."""
        if self.cache and self.key:
            from analytics.cache import invocations
            from analytics.cache.output import Output

            self.cache.save(self.key, Output(report, tuple(notes), status))
            started = invocations.started()
            if started and self.invocation:
                invocations.Invocations().save(started, self.invocation)


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
        replays = _Replays.of(ctx, "compare", paths, output_format, output, timezone, locals())
        if replays.replayed(output):
            return
        from analytics.core.pricing.compare import compare_tables, load_seller
        from analytics.render import report

        window = _window(since, until, timezone, agent)
        tables = [load_seller(name.strip()) for name in rates.split(",") if name.strip()]
        result = _load(ctx, paths, window, found=replays.found)
        found = compare_tables(
            result.calls, result.sessions, tables, _model_map(model_map), result.log_prices
        )
        names = [t.name for t in tables]
        text = _emit(
            output_format,
            output,
            found.sessions,
            lambda: report.render_sections_json(
                {"sessions": found.sessions, "priced_as": found.priced_as}, result.issues
            ),
            lambda layout: report.comparison_table(found, names, str(window.zone), layout),
            wide=wide,
        )
        notes = _issue_notes(result, show_issues, wide=wide)
        _finish(replays, text, notes, strict_failure=False)
    except AgentcostError as error:
        _fail(error)


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
        replays = _Replays.of(ctx, "issues", paths, output_format, output, None, locals())
        if replays.replayed(output):
            return
        from analytics.render import report

        result = _load(ctx, paths, found=replays.found)
        found = result.issues
        text = _emit(
            output_format,
            output,
            found,
            lambda: report.render_sections_json({}, found),
            lambda layout: report.issues_table(found, layout) if found.height else "no issues",
            wide=wide,
        )
        _finish(replays, text, [], strict_failure=strict and found.height > 0)
    except AgentcostError as error:
        _fail(error)


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

    from analytics.core.pricing.rates import load_rates
    from analytics.engine import watch as live

    try:
        table, renames = load_rates(rates), _model_map(model_map)
        paths = [path] if path else []
        log = live.latest_log(paths)
        newest = None if live.names_a_session(path) else (lambda: live.latest_log(paths))

        def analyse(follow: live.Following) -> live.Figures | None:
            return live.priced_figures(follow, table, renames)

        live.run(log, analyse, Console(highlight=False), newest=newest)
    except KeyboardInterrupt:
        return
    except AgentcostError as error:
        _fail(error)


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
    from analytics.render import report

    try:
        with captures_as_logs(paths) as logs:
            # the Claude Code sessions' items: the reconstruction runs on their content
            result = _load(ctx, logs, agent_items=True)
            summary, compared = validation_summary(result)
            checks = log_checks(result)
        nothing = "no observed per-call tokens in these logs: nothing to validate against"

        def table(layout: Layout) -> str:
            parts = [report.plain_table(summary, layout)] if compared else []
            if checks.height:
                parts.append(report.plain_table(checks, layout))
            return "\n\n".join(parts) or nothing

        _emit(
            output_format,
            output,
            summary,
            lambda: report.render_sections_json(
                {"sessions": summary, "log_checks": checks}, result.issues
            ),
            table,
            wide=wide,
        )
    except AgentcostError as error:
        _fail(error)


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
        _fail(error)


# --- shared by the commands ---


def _priced(
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
    ``agent_items`` as for ``_load``."""
    from analytics.cache.repriced import priced
    from analytics.core.pricing.rates import load_rates

    table = load_rates(rates)
    result = _load(ctx, paths, window, found=found, agent_items=agent_items)
    tables = priced(result, table, _model_map(model_map))
    return result, tables["calls"], tables["sessions"]


def _layout(wide: bool, output: Path | None = None, stream: TextIO | None = None) -> Layout:
    """Where tables go: the width of ``$COLUMNS`` or the terminal (120 when neither says;
    none with ``--wide``), in colour only on a terminal without ``NO_COLOR``. ``stream``
    (default stdout) is where the table is printed: stderr's terminal is asked for its width
    too, so ``--show-issues`` fits it when stdout is a pipe or a file."""
    import shutil

    from analytics.render.text_table import COMPACT_BELOW, Layout

    stream = stream or sys.stdout
    colour = output is None and stream.isatty() and not os.environ.get("NO_COLOR")
    width = shutil.get_terminal_size((COMPACT_BELOW, 24)).columns
    if stream is not sys.stdout and not os.environ.get("COLUMNS"):
        try:
            width = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, OSError, ValueError):  # not a terminal (or no file at all)
            width = COMPACT_BELOW
    return Layout(width=None if wide else width, colour=colour)


def _emit(
    output_format: Format,
    output: Path | None,
    rows: pl.DataFrame,
    as_json: Callable[[], Report],
    as_table: Callable[[Layout], str],
    *,
    wide: bool = False,
) -> Report | None:
    """Print or write one report, and return its text (None for Parquet). csv and parquet hold
    the report's main ``rows``; json and the table are the report's own renderings. A file
    that cannot be written is a usage error."""
    from analytics.render import report

    if output_format is Format.parquet and output is None:
        raise UsageError("--format parquet writes a file; add --output FILE")
    if output_format is Format.parquet and output is not None:
        try:
            rows.write_parquet(output)
        except OSError as err:
            raise cannot_write(output, err) from None
        return None
    renderings: dict[Format, Callable[[], Report]] = {
        Format.json: as_json,
        Format.csv: lambda: report.render_csv(rows),
        Format.table: lambda: as_table(_layout(wide, output)),
    }
    text = renderings[output_format]()
    _print(text, output)
    return text


def _print(text: Report, output: Path | None) -> None:
    """``text`` on stdout, or into the file ``output``, ending with one newline."""
    from analytics.cache.output import ends_line, pieces

    end = "" if ends_line(text) else "\n"
    try:
        if output is None:
            for piece in pieces(text):
                typer.echo(piece, nl=False)
            typer.echo(end, nl=False)
        else:
            with output.open("w", encoding="utf-8") as written:
                for piece in pieces(text):
                    written.write(piece)
                written.write(end)
    except OSError as err:
        if output is None and isinstance(err, BrokenPipeError):
            _reader_left()
        raise cannot_write(output, err) from None


def _reader_left() -> NoReturn:
    """Stdout's reader went away (``agentcost ... | head``): stop without a word, as a
    command killed by SIGPIPE does (status 141), and without a second error when the exit
    flushes what stdout still holds."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(_SIGPIPE_STATUS)


#: The status a shell reports for a command that SIGPIPE ended (128 + 13).
_SIGPIPE_STATUS = 141


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
    from analytics.engine.allocators import tune

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
        _err(_internal_failure_line(failure, argv))
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
