"""The one error family of agentcost.

Library code raises these; only the command line (``cli/``) turns them into a message on
stderr and an exit code (see ``exit_code``). Every message ends with a hint of what to do next.
"""

from __future__ import annotations


class AgentcostError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with when this error escapes a command."""

    exit_code = 1


class InputError(AgentcostError):
    """A path the user named does not exist, cannot be read, or holds no session log."""

    exit_code = 2


class UsageError(AgentcostError):
    """An option has a value agentcost cannot use (bad date, unknown timezone, unknown format)."""

    exit_code = 2


class RateTableError(AgentcostError):
    """A rate table is invalid; the message names the file and the key."""

    exit_code = 2


class StrictModeError(AgentcostError):
    """``--strict`` was given and the input produced issues."""

    exit_code = 1


class ConfigError(AgentcostError):
    """agentcost's own configuration file (the budget) is missing or invalid."""

    exit_code = 2
