"""The one error family of agentcost.

Library code raises these; only the command line (``cli/``) turns them into a message on
stderr and an exit code (see ``exit_code``). Every message ends with a hint of what to do next.
"""

from __future__ import annotations


class AgentcostError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with when this error escapes a command:
    1 when the run failed on its own terms (``--strict`` and the input has issues)."""

    exit_code = 1


class _CannotUseError(AgentcostError):
    """Something the user gave (a path, an option, a table, the config) cannot be used: exit
    code 2, as for a command line that cannot be parsed."""

    exit_code = 2


class InputError(_CannotUseError):
    """A path the user named does not exist, cannot be read, or holds no session log."""


class UsageError(_CannotUseError):
    """An option has a value agentcost cannot use (bad date, unknown timezone, unknown format)."""


class RateTableError(_CannotUseError):
    """A rate table is invalid; the message names the file and the key."""


class ConfigError(_CannotUseError):
    """agentcost's own configuration file (the budget) is missing or invalid."""


class StrictModeError(AgentcostError):
    """``--strict`` was given and the input produced issues (exit code 1)."""
