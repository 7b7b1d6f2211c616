"""A command's stored output (``analytics.cache.output``): found before it analyses, printed as
it was printed, and stored after it printed, with what the next run of the same command line
replays it from (``analytics.cache.invocations``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import typer

from analytics.cli import loading, printing
from analytics.cli.options import Format
from analytics.core.errors import AgentcostError, StrictModeError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from analytics.cache.invocations import Invocation
    from analytics.cache.output import OutputCache, Report
    from analytics.engine.inputs import Found


def finish(
    replays: Replays, report: Report | None, notes: list[str], *, strict_failure: bool
) -> None:
    """After a command printed ``report``: ``notes`` on stderr, then what it printed stored
    for replay; with ``strict_failure`` (--strict, and the input has issues), the failure."""
    for note in notes:
        printing.err(note)
    if strict_failure:
        failed = StrictModeError("--strict: the input has issues")
        replays.save(report, [*notes, printing.error_line(failed)], failed.exit_code)
        raise failed
    replays.save(report, notes, 0)


class Replays(NamedTuple):
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
        output_format: Format | None,
        output: Path | None,
        timezone: str | None,
        options: Mapping[str, object],
        *,
        today_in: str | None = None,
        found: Found | None = None,
        early: bool = True,
    ) -> Replays:
        """``command`` on ``paths``, with its parameters ``options`` (its ``locals()`` on
        entry), keyed by ``fingerprints.output_key`` with the terminals its tables are
        drawn for (``today_in``: the zone whose date ``options`` holds as ``today``).
        ``output_format`` None: a command without a format option (an HTML page, a status
        line), which no terminal shapes. ``found``: what discovery already found under
        ``paths``. ``early=False``: the output
        is not replayed before the command line (``analytics.entry``), for a command whose
        ``options`` hold what only it can work out again (the moment it runs)."""
        from analytics.cache.fingerprints import output_key_of, output_shape
        from analytics.cache.invocations import Invocation
        from analytics.cache.output import OutputCache
        from analytics.core.timezones import local_zone
        from analytics.engine.inputs import discover

        named, use_cache = paths or [], bool(ctx.find_root().obj)
        try:
            found = found or discover(named)
        except AgentcostError:
            return cls(None, None, None, named, use_cache)
        if not use_cache or output_format is Format.parquet:
            return cls(None, None, found, named, use_cache)
        if loading.say_if_nothing_is_cached():
            return cls(None, None, found, named, use_cache)
        wide = bool(options.get("wide"))
        layouts = [printing.layout(wide, output)] if output_format is Format.table else []
        if options.get("show_issues"):
            layouts.append(printing.layout(wide, stream=sys.stderr))
        shape = output_shape(
            options,
            output_format=str(output_format),
            zone=timezone or str(local_zone()),
            layouts=[[layout.width, layout.colour] for layout in layouts],
        )
        key = output_key_of(command, found, shape)
        written = str(output) if output is not None else None
        invocation = Invocation(command, [str(p) for p in named], shape, written, today_in)
        return cls(OutputCache(), key, found, named, use_cache, invocation if early else None)

    def replayed(self, output: Path | None, *, agent_items: bool = False) -> bool:
        """Print the stored output, if there is one, as the command printed it: the report
        (to ``output`` or stdout), then stderr; exit with its status. If there is none, the
        command analyses next: the first groups of logs start being read meanwhile
        (``engine.groups.scan_ahead``), and the other agents' logs folded
        (``cache.agent_groups.fold_ahead``; ``agent_items``: as the command loads them), while
        it imports what comes after."""
        stored = self.cache.load(self.key) if self.cache and self.key else None
        if stored is None:
            if self.found is not None:
                from analytics.cache.agent_groups import fold_ahead
                from analytics.engine.groups import scan_ahead

                scan_ahead(self.found, self.paths, use_cache=self.use_cache)
                fold_ahead(self.found, self.paths, items=agent_items, use_cache=self.use_cache)
            return False
        if stored.report is not None:
            printing.print_report(stored.report, output)
        for note in stored.notes:
            printing.err(note)
        if stored.status:
            raise typer.Exit(stored.status)
        return True

    def save(self, report: Report | None, notes: list[str], status: int) -> None:
        """Store what the command printed (``replayed`` prints it next time); a report too
        large to keep (None: ``printing.print_report``) is not stored."""
        if self.cache and self.key and report is not None:
            from analytics.cache import invocations
            from analytics.cache.output import Output

            self.cache.save(self.key, Output(report, tuple(notes), status))
            started = invocations.started()
            if started and self.invocation:
                invocations.Invocations().save(started, self.invocation)
