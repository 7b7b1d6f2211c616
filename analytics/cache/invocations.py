"""A command line's stored output, found before the command line is even parsed.

``cache.output`` replays what a command printed when nothing it depends on changed, but the
command line has to be parsed first to know the command's options, and parsing it means
importing typer and every command (about 0.1 s, half of a warm run). So the first run of a
command line also notes, under the key of the invocation itself (``invocation_key``: the
words typed, the working directory, the environment, the terminals, the machine's zone), what
its output key was made of besides its inputs (``fingerprints.output_shape``) and which paths
it named. The next run of the same invocation (``analytics.entry``) discovers those paths
again, works out the output key from them and the shape noted, and prints the stored output
if there is one: the same key the command line would compute, so the same output.

A value of the moment in a shape is worked out again, never replayed: the first screen keys
on today's date (``Invocation.today_in``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from analytics import __version__
from analytics.cache.location import cache_dir

#: Bump when the stored note changes shape.
FORMAT = 1
#: Notes kept; the least recently used go first (each is a few hundred bytes).
KEEP = 256
#: Variables that say nothing of what a command prints and change from one prompt to the
#: next (the working directory is keyed itself).
_MOMENTARY = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})

#: The key of this process's command line, noted before anything changed the environment
#: (``begin``); empty when the command line was not started by the console script (a test
#: calling ``cli.commands.run``), whose runs then note nothing.
_STARTED: list[str] = []


def invocation_key(argv: Sequence[str]) -> str:
    """The key of running ``argv`` here and now: the words, the working directory, every
    environment variable but ``_MOMENTARY``, each of stdout's and stderr's terminal size (or
    that it is none), where the machine's zone links to, and agentcost's version."""
    environment = sorted((k, v) for k, v in os.environ.items() if k not in _MOMENTARY)
    terminals = [_terminal(descriptor) for descriptor in (1, 2)]
    try:
        here = os.getcwd()
    except OSError:  # the working directory was deleted
        here = None
    zone = os.path.realpath("/etc/localtime")
    text = json.dumps([__version__, list(argv), here, environment, terminals, zone])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _terminal(descriptor: int) -> list[int] | None:
    """The size of the terminal on ``descriptor``, or None when it is not a terminal."""
    try:
        if not os.isatty(descriptor):
            return None
        size = os.get_terminal_size(descriptor)
    except OSError:
        return None
    return [size.columns, size.lines]


def begin(argv: Sequence[str]) -> str:
    """Note this process's invocation of ``argv`` (``started``); its key."""
    _STARTED[:] = [invocation_key(argv)]
    return _STARTED[0]


def started() -> str | None:
    """The key ``begin`` noted, if the console script started this process."""
    return _STARTED[0] if _STARTED else None


@dataclass(frozen=True)
class Invocation:
    """What one command line computed its output key from, besides its inputs: the command,
    the paths it named (none: every agent's home), its ``output_shape``, the file its
    report went to (None: stdout), and the zone whose date is ``today`` in the shape (None
    when the shape holds no date of the moment)."""

    command: str
    paths: list[str]
    shape: dict[str, object]
    output: str | None = None
    today_in: str | None = None


class Invocations:
    """Noted invocations under ``root`` (default: ``cache_dir()``), one small file each."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_dir()) / f"invocations-v{FORMAT}"

    def load(self, key: str) -> Invocation | None:
        """The invocation noted under ``key``, or None (missing, unreadable, or not one)."""
        try:
            noted = json.loads((self.root / key).read_bytes())
            invocation = Invocation(**noted)
        except (OSError, ValueError, TypeError):
            return None
        fields = (invocation.command, invocation.paths, invocation.shape, invocation.output)
        if not (
            isinstance(fields[0], str)
            and isinstance(fields[1], list)
            and all(isinstance(path, str) for path in fields[1])
            and isinstance(fields[2], dict)
            and isinstance(fields[3], str | None)
            and isinstance(invocation.today_in, str | None)
        ):
            return None
        return invocation

    def save(self, key: str, invocation: Invocation) -> None:
        """Note ``invocation`` under ``key`` (best effort); drop the least recently used."""
        temporary = self.root / f".{key}.{uuid.uuid4().hex}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(asdict(invocation)), encoding="utf-8")
            temporary.replace(self.root / key)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        with contextlib.suppress(OSError):
            noted = sorted(
                (entry for entry in os.scandir(self.root) if not entry.name.startswith(".")),
                key=lambda entry: entry.stat().st_mtime_ns,
                reverse=True,
            )
            for entry in noted[KEEP:]:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
