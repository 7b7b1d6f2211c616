"""``agentcost rates``: the rate tables agentcost prices with."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from analytics.cli.commands import (
    Format,
    OutputOpt,
    PathsArg,
    ShowIssuesOpt,
    _emit,
    _fail,
    _layout,
    _load,
    _report_issues,
    app,
)
from analytics.core.errors import AgentcostError

if TYPE_CHECKING:
    pass


# --- commands: rates ---

rates_app = typer.Typer(help="Rate tables: the prices agentcost uses.", no_args_is_help=True)
app.add_typer(rates_app, name="rates")


@rates_app.command("learn")
def rates_learn(
    ctx: typer.Context,
    paths: PathsArg = None,
    output: OutputOpt = None,
    show_issues: ShowIssuesOpt = False,
) -> None:
    """Print the Copilot prices the logs themselves quote, as a rate table (TOML) for --rates."""
    from analytics.core.pricing.learned import learned_toml

    try:
        result = _load(ctx, paths, keep_events=False)
        text = learned_toml(result.log_prices)
        if output is None and sys.stdout.isatty():  # the same table, read on a screen
            text = folded_toml(text, _layout(wide=False).width or len(text))
        _emit(Format.table, output, result.log_prices, lambda: text, lambda _: text)
        _report_issues(result, strict=False, show=show_issues)
    except AgentcostError as error:
        _fail(error)


def folded_toml(text: str, width: int) -> str:
    """TOML ``text`` with each line of ``key = "string"`` longer than ``width`` written as a
    multi-line string whose lines end in ``\\`` (TOML drops that backslash, the line break
    and the next line's indent): the same value, in lines no longer than ``width``. Lines
    are broken after a blank only (TOML would also drop a blank that began a line)."""
    import re

    lines = []
    for line in text.splitlines():
        found = re.fullmatch(r'(\s*[\w."-]+ = )"(.*)"', line)
        if len(line) <= width or not found:
            lines.append(line)
            continue
        lines.append(f'{found.group(1)}"""\\')
        piece = ""
        for word in re.findall(r"\S+\s*|\s+", found.group(2)):
            if piece and len(piece) + len(word) + 3 > width:
                lines.append(f"  {piece}\\")
                piece = ""
            piece += word
        lines.append(f'  {piece}"""')
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
