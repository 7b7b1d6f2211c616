"""What the commands print, and how: reports in their format (on stdout or into ``--output``),
tables laid out for the terminal, notes and the input's issues on stderr, and a failure as
one line and an exit code."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

import typer

from analytics.cli.options import Format
from analytics.core.errors import AgentcostError, StrictModeError, UsageError, cannot_write

if TYPE_CHECKING:
    from collections.abc import Callable

    import polars as pl

    from analytics.cache.output import Rendered, Report
    from analytics.engine.analyze import Analysis
    from analytics.render.text_table import Layout


def fail(error: AgentcostError) -> NoReturn:
    """Print one line on stderr and exit with the error's code."""
    err(error_line(error))
    raise typer.Exit(error.exit_code)


def err(text: str) -> None:
    """A note (or several lines) on stderr, through ``say``."""
    say(text, err=True)


def say(text: str, *, err: bool = False) -> None:
    """A line (or lines) of words on stdout or stderr. On a terminal, they are wrapped at
    its width, so no line is longer than the screen; elsewhere (a pipe, a file, a test)
    each line stays whole, for scripts to read (``render.lines``)."""
    from analytics.render.lines import for_stream

    typer.echo(for_stream(text, sys.stderr if err else sys.stdout), err=err)


def error_line(error: AgentcostError) -> str:
    return f"agentcost: error: {error}"


def report_issues(
    result: Analysis, strict: bool, show: bool = False, *, wide: bool = False
) -> None:
    """Issue count on stderr, or with ``show`` (--show-issues) the issues table there (stdout
    stays the report alone); with --strict, any issue fails the run."""
    for note in issue_notes(result, show, wide=wide):
        err(note)
    if strict and result.issues.height:
        raise StrictModeError("--strict: the input has issues")


def issue_notes(result: Analysis, show: bool, *, wide: bool) -> list[str]:
    """What ``report_issues`` prints on stderr: first a line for each file that is not a
    log or is empty (what was read is not what the reader meant), ``NAMED_FILES`` at most
    and then how many more (a tree of recordings beside its logs gave two dozen lines of the
    same words; each file is still an issue, which ``agentcost issues`` lists), then the
    count."""
    from analytics.engine.analyze import issue_summary
    from analytics.engine.inputs import EMPTY

    if not result.issues.height:
        return []
    found = result.found
    files = found.not_logs + [problem for problem in found.problems if problem[1] == EMPTY]
    notes = [f"agentcost: {path}: {what}" for path, what in files[:NAMED_FILES]]
    if len(files) > NAMED_FILES:
        more = len(files) - NAMED_FILES
        notes.append(
            f"agentcost: and {more} more {'file' if more == 1 else 'files'} that "
            f"{'is' if more == 1 else 'are'} not a session log, or empty"
        )
    if show:
        from analytics.render import views

        return [*notes, views.issues_table(result.issues, layout(wide, stream=sys.stderr))]
    summary = issue_summary(result.issues)
    them = "it" if result.issues.height == 1 else "them"
    return [*notes, f"agentcost: {summary} in the input; agentcost issues lists {them}"]


#: The files that are not logs (or are empty) ``issue_notes`` names a line each, at most.
NAMED_FILES = 3


def layout(wide: bool, output: Path | None = None, stream: TextIO | None = None) -> Layout:
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


def emit(
    output_format: Format,
    output: Path | None,
    rows: pl.DataFrame,
    as_json: Callable[[], Rendered],
    as_table: Callable[[Layout], str],
    *,
    wide: bool = False,
) -> Report | None:
    """Print or write one report, and return its text to store (None for Parquet, or for a
    report too large to keep: ``print_report``). csv and parquet hold
    the report's main ``rows``; json and the table are the report's own renderings. A file
    that cannot be written is a usage error."""
    from analytics.render import views

    if output_format is Format.parquet and output is None:
        raise UsageError("--format parquet writes a file; add --output FILE")
    if output_format is Format.parquet and output is not None:
        try:
            rows.write_parquet(output)
        except OSError as err:
            raise cannot_write(output, err) from None
        return None
    renderings: dict[Format, Callable[[], Rendered]] = {
        Format.json: as_json,
        Format.csv: lambda: views.render_csv(rows),
        Format.table: lambda: as_table(layout(wide, output)),
    }
    return print_report(renderings[output_format](), output)


def print_report(text: Rendered, output: Path | None) -> Report | None:
    """``text`` on stdout, or into the file ``output``, ending with one newline; what was
    written, to store (``replays``): ``text`` itself when it was held, else its pieces as
    they came while they stay within ``cache.output.LIMIT_BYTES`` (None past that: a report
    of hundreds of MB is written as it is rendered, and never held). The pieces are kept
    in a ``Spool``: past a few MB, in a temporary file, not in memory."""
    from analytics.cache.output import LIMIT_BYTES, Spool, Stored, pieces

    held = isinstance(text, str | list | Spool | Stored)
    kept: Spool | None = None if held else Spool()
    size, last = 0, ""
    try:
        with contextlib.ExitStack() as stack:
            write: Callable[[str], object] = _echo
            if output is not None:
                write = stack.enter_context(output.open("w", encoding="utf-8")).write
            for piece in pieces(text):
                write(piece)
                last = piece or last
                size += len(piece)
                if kept is not None and size <= LIMIT_BYTES:
                    kept.add(piece)
                elif kept is not None:
                    kept.close()
                    kept = None
            write("" if last.endswith("\n") else "\n")
    except OSError as err:
        if output is None and isinstance(err, BrokenPipeError):
            reader_left()
        raise cannot_write(output, err) from None
    if isinstance(text, str | list | Spool | Stored):
        return text
    return kept


def _echo(piece: str) -> None:
    typer.echo(piece, nl=False)


def reader_left() -> NoReturn:
    """Stdout's reader went away (``agentcost ... | head``): stop without a word, as a
    command killed by SIGPIPE does (status 141), and without a second error when the exit
    flushes what stdout still holds."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(SIGPIPE_STATUS)


#: The status a shell reports for a command that SIGPIPE ended (128 + 13).
SIGPIPE_STATUS = 141
