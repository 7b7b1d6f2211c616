"""The ``agentcost`` command line (``app``; ``main`` is the console script).

``commands`` holds the commands that read logs (through the engine) and render what the core
computes; ``tools`` the commands that make logs (simulated trees, SDK captures).
"""

from analytics.cli import tools
from analytics.cli.commands import app, main

__all__ = ["app", "main", "tools"]
