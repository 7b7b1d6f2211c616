"""Find Copilot session logs under the paths a user names.

Accepted: a session directory (``<id>/events.jsonl``), an events file, a legacy flat
``<sessionId>.jsonl``, a ``session-state`` directory, a Copilot home (a directory holding
``session-state/``), or any directory tree of those. With no path, the Copilot home is
``$COPILOT_HOME`` or ``~/.copilot``. A Copilot home also yields its per-call token records:
``session-store.db`` and OpenTelemetry exports under ``otel/``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analytics.errors import InputError

_EVENTS = "events.jsonl"
_MAX_DEPTH = 6
_NOTHING_HERE = (
    "no Copilot session log here (no events.jsonl or <sessionId>.jsonl); name a session "
    "directory, a session-state directory or a Copilot home"
)


@dataclass(frozen=True)
class LogFile:
    """One events file and the session id to use if the file does not name its session."""

    path: Path
    session_hint: str


@dataclass(frozen=True)
class Found:
    """Everything discovered: event logs, session stores, OTel exports, and problems."""

    logs: list[LogFile] = field(default_factory=list)
    stores: list[Path] = field(default_factory=list)
    otel: list[Path] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, message)


def copilot_home() -> Path:
    """``$COPILOT_HOME`` or ``~/.copilot``."""
    configured = os.environ.get("COPILOT_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".copilot"


def discover(paths: Sequence[Path]) -> Found:
    """Resolve user paths to log files. A path that does not exist raises ``InputError``.

    A named path that holds no log at all is a problem (reported, not fatal), so a mistyped
    directory never reads as "0 sessions" without a word.
    """
    found = Found()
    targets = list(paths) or [_default_target()]
    for target in targets:
        if not target.exists():
            raise InputError(
                f"{target}: no such file or directory; name a session directory, an "
                "events.jsonl file, a session-state directory or a Copilot home"
            )
        if not os.access(target, os.R_OK):
            raise InputError(f"{target}: permission denied; agentcost needs read access")
        before = (len(found.logs), len(found.problems))
        _collect(target, found, depth=0)
        if (len(found.logs), len(found.problems)) == before:
            found.problems.append((str(target), _NOTHING_HERE))
    unique = {log.path.resolve(): log for log in found.logs}
    found.logs[:] = sorted(unique.values(), key=lambda log: str(log.path))
    return found


def _default_target() -> Path:
    home = copilot_home()
    if not (home / "session-state").is_dir() and not home.is_dir():
        raise InputError(
            f"no Copilot home at {home}; set COPILOT_HOME or name a path "
            "(try: agentcost analyze sample_logs)"
        )
    return home


def _collect(target: Path, found: Found, depth: int) -> None:
    """Add the logs under ``target`` (a file or a directory) to ``found``."""
    if target.is_file():
        hint = target.parent.name if target.name == _EVENTS else target.stem
        found.logs.append(LogFile(target, hint))
        _add_home_of(target.parent if target.name == _EVENTS else target, found)
        return
    if (target / _EVENTS).is_file():
        found.logs.append(LogFile(target / _EVENTS, target.name))
        _add_home_of(target, found)
        return
    if depth >= _MAX_DEPTH:
        return
    if (target / "session-state").is_dir():
        _add_token_records(target, found)
        _collect(target / "session-state", found, depth + 1)
        return
    try:
        children = sorted(target.iterdir())
    except OSError as exc:
        found.problems.append((str(target), f"cannot list directory: {exc.strerror}"))
        return
    for child in children:
        if child.is_file() and child.suffix == ".jsonl":
            found.logs.append(LogFile(child, child.stem))
        elif child.is_dir() and child.name != "otel":
            before = len(found.logs)
            _collect(child, found, depth + 1)
            if len(found.logs) == before and target.name == "session-state":
                found.problems.append((str(child), "session directory has no events.jsonl"))
    if (target / "session-store.db").is_file() and target.name != "session-state":
        _add_token_records(target, found)


def _add_home_of(session: Path, found: Found) -> None:
    """A single session named inside a Copilot home still gets that home's token records."""
    state = session.resolve().parent
    if state.name == "session-state":
        _add_token_records(state.parent, found)


def _add_token_records(home: Path, found: Found) -> None:
    """Per-call token records kept beside the session logs in a Copilot home."""
    store = home / "session-store.db"
    if store.is_file() and not _listed(store, found.stores):
        found.stores.append(store)
    otel = home / "otel"
    if otel.is_dir():
        found.otel.extend(p for p in sorted(otel.glob("*.jsonl")) if not _listed(p, found.otel))


def _listed(path: Path, paths: list[Path]) -> bool:
    """Whether ``path`` is already in ``paths`` (however either was spelled)."""
    return any(path.resolve() == known.resolve() for known in paths)
