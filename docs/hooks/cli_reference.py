"""mkdocs hook: the commands page's reference, written from the CLI itself at build time.

``docs/commands.md`` holds the marker ``<!-- cli-reference -->``; this hook replaces it with
the help of every command and sub-command, as ``agentcost COMMAND --help`` prints it, so the
page cannot go stale: a new command or option is on the page the next time it is built
(``make docs``, ``make test``). The help is rendered at a fixed width, without colour.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The marker of ``docs/commands.md`` that the reference replaces.
MARKER = "<!-- cli-reference -->"
#: The width the help is drawn at: what a code block of the site shows without scrolling
#: (material's content column, about 72 monospace characters on a desktop screen).
WIDTH = 72

# The checkout the site is built from, ahead of any installed copy of agentcost.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def command_paths() -> list[list[str]]:
    """Every command of ``agentcost`` as the words that name it (``[]`` is the app itself,
    ``["budget", "set"]`` a sub-command), in the order ``--help`` lists them."""
    import typer

    from analytics.cli import app

    def walk(command: Any, path: list[str]) -> Iterator[list[str]]:
        yield path
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def help_text(path: list[str]) -> str:
    """What ``agentcost PATH --help`` prints at ``WIDTH`` columns, without trailing spaces."""
    from analytics.cli.commands import run

    printed = io.StringIO()
    saved = {name: os.environ.get(name) for name in ("COLUMNS", "NO_COLOR", "TERM")}
    os.environ.update(COLUMNS=str(WIDTH), NO_COLOR="1", TERM="dumb")
    try:
        with contextlib.redirect_stdout(printed):
            run([*path, "--help"])
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return "\n".join(line.rstrip() for line in printed.getvalue().strip("\n").splitlines())


def reference() -> str:
    """The reference: a section per command, its help in a text block."""
    sections = []
    for path in command_paths():
        name = " ".join(["agentcost", *path])
        sections.append(f"### `{name}`\n\n```text\n{help_text(path)}\n```\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """mkdocs' hook: put the reference in place of ``MARKER`` on the page that holds it."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
