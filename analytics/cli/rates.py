"""``agentcost rates``: the rate tables agentcost prices with."""

from __future__ import annotations

import sys

import typer

from analytics.cli import commands as cli
from analytics.core.errors import AgentcostError

# --- commands: rates ---

rates_app = typer.Typer(help="Rate tables: the prices agentcost uses.", no_args_is_help=True)
cli.app.add_typer(rates_app, name="rates")


@rates_app.command("learn")
def rates_learn(
    ctx: typer.Context,
    paths: cli.PathsArg = None,
    output: cli.OutputOpt = None,
    show_issues: cli.ShowIssuesOpt = False,
) -> None:
    """Print the Copilot prices the logs themselves quote, as a rate table (TOML) for --rates."""
    from analytics.core.pricing.learned import learned_toml

    try:
        result = cli._load(ctx, paths)
        text = learned_toml(result.log_prices)
        if output is None and sys.stdout.isatty():  # the same table, read on a screen
            text = folded_toml(text, cli._layout(wide=False).width or len(text))
        cli._emit(cli.Format.table, output, result.log_prices, lambda: text, lambda _: text)
        cli._report_issues(result, strict=False, show=show_issues)
    except AgentcostError as error:
        cli._fail(error)


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
