"""The ``agentcost`` command line: parse arguments, call the library, render, exit.

Thin by design: each command is a few lines that call library functions. Library errors
(``AgentcostError``) are turned into one line on stderr and an exit code here, and only here.
Heavy modules are imported inside commands so ``agentcost --help`` stays fast.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="agentcost",
    help="Facts about LLM calls, tokens and money from AI coding-agent session logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# --- commands: analyze ---

# --- commands: compare ---

# --- commands: validate ---

# --- commands: simulate ---

# --- commands: reports ---

# --- commands: export ---


def main() -> None:
    """Console-script entry point."""
    app()
