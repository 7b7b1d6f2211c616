"""The ``agentcost`` command line (``app``; ``main`` is the console script)."""

from analytics.cli.commands import app, main

__all__ = ["app", "main"]
