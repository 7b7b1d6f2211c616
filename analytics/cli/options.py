"""The options and arguments the commands share, and the formats they print in: one spelling
of each, with its help text (written from the registry and the bundled rate tables, so a new
agent or table is named without an edit here)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeAlias

import typer

from analytics.engine.inputs import agents

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
