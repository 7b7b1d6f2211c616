"""The ``agentcost`` console script: a command line run before on inputs that have not changed
prints its stored output before the command line is even parsed.

Parsing it means importing typer, rich and every command (about 0.1 s, half of a warm run);
replaying a stored output needs none of them. So the invocation is looked up first
(``cache.invocations``): if this command line was run here before, its paths are discovered
again (the only work that grows with the tree: each unchanged file only stat'ed,
``cache.heads``), the output key is worked out from them as
the command would (``fingerprints.output_key_of``), and a stored output under that key is
printed as the command printed it: the report on stdout (or into its ``--output`` file), the
notes on stderr, the exit status. Anything else (a first run, a changed tree, a stored output
that could not be printed here exactly as the command would print it) runs the command line,
which takes the discovery already made (``discover.prime``) rather than walking the tree
twice.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

if TYPE_CHECKING:
    from analytics.cache.output import Report

#: The status a shell reports for a command that SIGPIPE ended (128 + 13).
_SIGPIPE_STATUS = 141


def main() -> NoReturn:
    """Replay the stored output of this command line, or run it (``cli.commands.main``)."""
    from analytics.cache import heads, invocations

    argv = sys.argv[1:]
    key = invocations.begin(argv)
    status = None
    if "--no-cache" not in argv:
        heads.use()  # discovery, here and in the command line, recalls unchanged files
        # the keys of a large tree are hundreds of thousands of objects that hold no cycle:
        # the cyclic collector, which would go over them again and again, waits
        gc.disable()
        status = _replayed(key)
        gc.enable()
    if status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    from analytics.cli import main as run_command_line

    run_command_line()


def _replayed(key: str) -> int | None:
    """Print the output stored for the invocation ``key`` and return its exit status; None
    (nothing printed) when there is none to print exactly as the command would."""
    from analytics.agents.discover import discover, prime
    from analytics.cache.fingerprints import output_key_of
    from analytics.cache.invocations import Invocations
    from analytics.cache.output import OutputCache
    from analytics.core.errors import AgentcostError

    invocation = Invocations().load(key)
    if invocation is None:
        return None
    paths = [Path(path) for path in invocation.paths]
    try:
        found = discover(paths)
    except AgentcostError:  # the command line says what is wrong, in its own words
        return None
    prime(paths, found)
    shape = invocation.shape
    if invocation.today_in is not None:
        shape = {**shape, "today": _today(invocation.today_in)}
    output_key = output_key_of(invocation.command, found, shape)
    stored = OutputCache().load(output_key) if output_key else None
    if stored is None or not _printable(stored.report, stored.notes, invocation.output):
        return None
    if stored.report is not None:
        report_to = Path(invocation.output) if invocation.output is not None else None
        if not _write(stored.report, report_to):
            return None
    from analytics.render.lines import for_stream

    for note in stored.notes:
        sys.stderr.write(for_stream(note, sys.stderr) + "\n")
    return stored.status


def _today(zone: str) -> str:
    """Today's date in ``zone``, as the first screen keys it."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return str(datetime.now(ZoneInfo(zone)).date())


def _printable(report: Report | None, notes: tuple[str, ...], output: str | None) -> bool:
    """Whether the stored output prints here as the command would print it: colour codes
    only where they reach a terminal (click takes them out of what goes to a pipe)."""
    from analytics.cache.output import ESCAPE, escaped

    if report is not None and output is None and escaped(report) and not sys.stdout.isatty():
        return False
    return sys.stderr.isatty() or not any(ESCAPE in note for note in notes)


def _write(report: Report, output: Path | None) -> bool:
    """The report on stdout, or into ``output``, ending with one newline; False when the
    file cannot be written (nothing else is printed: the command line says why). A report
    left in the store (``Stored``) is copied as bytes where the text would be written as
    UTF-8: the same bytes, without decoding hundreds of MB to encode them again."""
    from analytics.cache.output import Stored, ends_line, pieces

    end = "" if ends_line(report) else "\n"
    if output is not None:
        try:
            if isinstance(report, Stored):
                with output.open("wb") as written:
                    report.copy_to(written)
                    written.write(end.encode())
                return True
            with output.open("w", encoding="utf-8") as text:
                for piece in pieces(report):
                    text.write(piece)
                text.write(end)
        except OSError:
            return False
        return True
    try:
        if isinstance(report, Stored) and _writes_utf8(sys.stdout):
            sys.stdout.flush()
            report.copy_to(sys.stdout.buffer)
            sys.stdout.buffer.write(end.encode())
            sys.stdout.buffer.flush()
            return True
        for piece in pieces(report):
            sys.stdout.write(piece)
        sys.stdout.write(end)
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_left()
    return True


def _writes_utf8(stream: TextIO) -> bool:
    """Whether ``stream`` writes text as UTF-8, to a byte buffer that can be written to."""
    import codecs

    try:
        return codecs.lookup(stream.encoding).name == "utf-8" and hasattr(stream, "buffer")
    except (LookupError, TypeError):
        return False


def _reader_left() -> NoReturn:
    """Stdout's reader went away (``agentcost ... | head``): stop without a word, as the
    command line does (status 141)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os._exit(_SIGPIPE_STATUS)
