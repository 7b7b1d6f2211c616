"""The ``agentcost`` command line (``app``; ``main`` is the console script).

``commands`` holds the app and the commands that read one analysis (``analyze``, ``compare``,
``issues``, ``watch``, ``validate``) and ``mcp``, whose server (``mcp_server``, needing the mcp
extra) it imports only when run; what every command shares is in ``options``, ``loading``,
``printing`` and ``replays``; the other
modules are groups of commands: ``budget`` (and ``statusline``), ``spending`` (``report``, the
period reports, ``top``, ``blocks``), ``team`` (``export``, ``spark``), ``tools`` (the
commands that make logs: ``simulate``, ``capture-to-log``) and ``rates``. Each registers its
commands on ``app`` when imported, in the order ``--help`` lists them.
"""

from analytics.cli import budget, rates, spending, team, tools
from analytics.cli.commands import _one_line_summaries, app, main

for _group in (app, budget.budget_app, rates.rates_app):
    _one_line_summaries(_group)

__all__ = ["app", "budget", "main", "rates", "spending", "team", "tools"]
