"""The one error family of agentcost.

Library code raises these; only the command line (``cli/``) turns them into a message on
stderr and an exit code (see ``exit_code``). Every message ends with a hint of what to do next.
"""

from __future__ import annotations

import os
from pathlib import Path


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


def os_reason(error: OSError) -> str:
    """Why a file could not be used, in agentcost's words: the system's reason in lower case
    (``permission denied``), without Python's ``[Errno 13]`` and the path the message
    already names."""
    if error.strerror:
        return error.strerror.lower()
    return str(error) or type(error).__name__


def cannot_write(path: Path | None, error: OSError) -> UsageError:
    """The one wording of a file or directory agentcost cannot write (``--output``, ``--html``,
    an export's DIR, the budget): ``PATH: cannot write (REASON); choose another path``."""
    return UsageError(f"{path}: cannot write ({_why_unwritable(path, error)}); choose another path")


def _why_unwritable(path: Path | None, error: OSError) -> str:
    """Why ``path`` cannot be written: the system's words, else what the path shows (polars'
    errors carry no reason of their own)."""
    if error.strerror:
        return error.strerror.lower()
    if error.errno:
        return os.strerror(error.errno).lower()
    folder = (path or Path(".")).absolute().parent
    if not folder.exists():
        return f"no such directory: {folder}"
    if not folder.is_dir():
        return f"{folder} is not a directory"
    if not os.access(folder, os.W_OK):
        return f"permission denied in {folder}"
    return str(error) or type(error).__name__
