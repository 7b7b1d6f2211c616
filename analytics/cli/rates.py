"""``agentcost rates``: the rate tables agentcost prices with."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from analytics.cli import commands as cli
from analytics.cli import loading, options, printing
from analytics.core.errors import AgentcostError
from analytics.core.words import counted

# --- commands: rates ---

rates_app = typer.Typer(help="Rate tables: the prices agentcost uses.", no_args_is_help=True)
cli.app.add_typer(rates_app, name="rates")


@rates_app.command("show")
def rates_show(
    name: Annotated[
        str,
        typer.Argument(
            help=f"A bundled table ({options.bundled_tables()}), a TOML file, or BASE+FILE, as "
            "--rates takes.",
            show_default=False,
        ),
    ],
    output_format: options.FormatOpt = options.Format.table,
    output: options.OutputOpt = None,
    wide: options.WideOpt = False,
) -> None:
    """Print a rate table's prices: each model's token prices per million tokens in the
    table's unit, its per-request charge, and when each price applies."""
    from analytics.core.pricing.listing import price_list
    from analytics.core.pricing.rates import load_rates
    from analytics.core.schema import ISSUES, empty
    from analytics.render import views

    try:
        table = load_rates(name)
        prices = price_list(table)
        printing.emit(
            output_format,
            output,
            prices,
            lambda: views.render_json("prices", prices, empty(ISSUES)),
            lambda layout: views.rate_table_text(table, prices, layout),
            wide=wide,
        )
        _confirm(output, f"the prices of {counted(len(table.models), 'model')} of {table.name}")
    except AgentcostError as error:
        printing.fail(error)


@rates_app.command("learn")
def rates_learn(
    ctx: typer.Context,
    paths: options.PathsArg = None,
    output: options.OutputOpt = None,
    show_issues: options.ShowIssuesOpt = False,
) -> None:
    """Print the Copilot prices the logs themselves quote, as a rate table (TOML) for --rates."""
    from analytics.core.pricing.learned import learned_rate_table, learned_toml

    try:
        result = loading.load(ctx, paths)
        text = learned_toml(result.log_prices)
        if output is None and sys.stdout.isatty():  # the same table, read on a screen
            text = folded_toml(text, printing.layout(wide=False).width or len(text))
        printing.emit(options.Format.table, output, result.log_prices, lambda: text, lambda _: text)
        learned = learned_rate_table(result.log_prices)
        models = counted(len(learned.models) if learned else 0, "model")
        _confirm(
            output, f"the prices of {models}; price with them: --rates github-copilot+{output}"
        )
        printing.report_issues(result, strict=False, show=show_issues)
    except AgentcostError as error:
        printing.fail(error)


def _confirm(output: Path | None, what: str) -> None:
    """Say on stderr what a command wrote to ``--output``; without it, the output went to
    stdout and nothing is said."""
    if output is not None:
        printing.err(f"agentcost: wrote {output}: {what}")


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
