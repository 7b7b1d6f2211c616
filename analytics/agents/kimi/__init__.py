"""Kimi Code (Moonshot's coding CLI) wire logs: which files they are, where, and the fold.

Homes (``registry.KIMI``): ``$KIMI_CODE_HOME`` (default ``~/.kimi-code``), whose
``sessions/<workDirKey>/<sessionId>/agents/<agentId>/wire.jsonl`` are Kimi Code's logs, and
the legacy kimi-cli's ``$KIMI_SHARE_DIR`` (default ``~/.kimi``), whose
``sessions/<md5(cwd)>/<uuid>/wire.jsonl`` are its logs. Each variable overrides its own home
only. What each file of a home is:

* ``wire.jsonl``: the log (one call per ``usage.record``; kimi-cli: per ``StatusUpdate`` with
  ``token_usage``). Read.
* kimi-cli's ``context.jsonl`` (and its rotated ``context_<n>.jsonl``): the conversation as
  sent to the model, opened by a ``_checkpoint``/``_system_prompt`` record; no per-call usage.
  Claimed, its lines counted and skipped, so naming a kimi-cli home reports no stray file.
* ``state.json``: the session's ``id`` and ``cwd``, read by the fold beside each wire (not
  offered by discovery: not JSON lines).
* ``session_index.jsonl`` (top of a Kimi Code home: ``{sessionId, sessionDir, workDir}``): no
  calls. Claimed and skipped unread (:func:`skipped`), so naming a home reports no stray file.
* kimi-cli's ``user-history/<md5>.jsonl`` (typed prompts: a bare ``{content}`` record is no
  sign of Kimi, and claiming it would take other tools' files) and Kimi Code's
  ``server/events/<sessionId>.jsonl`` (the web server's own journal, no calls): not claimed;
  discovery reports them as not a log of an agent agentcost reads.

Under ``sessions/`` (what is read when no path is named) the only JSON-lines files are the
wires and the context files.

All files named together are one group: a call copied into another file (a resumed session's
earlier copy, a ``/fork``) counts once. The counting rules are in
``native/agents/kimi/mod.rs``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from analytics.agents import AgentTables, fold, keyed, unique
from analytics.core.registry import KIMI

#: The first record of a kimi-cli ``context.jsonl``: its bookkeeping roles.
CONTEXT_ROLES = frozenset({"_checkpoint", "_system_prompt", "_usage"})
#: The keys of a Kimi Code ``session_index.jsonl`` entry.
INDEX_KEYS = frozenset({"sessionId", "sessionDir", "workDir"})
#: The file of a Kimi Code home that is claimed but holds no call.
INDEX_FILE = "session_index.jsonl"


def recognizes(line: dict[str, object]) -> bool:
    """Whether a decoded first record is a Kimi wire's or a kimi-cli context file's: the
    ``{"type": "metadata", "protocol_version"}`` header both CLIs write, a kimi-cli record
    (``{timestamp, message: {type, payload}}``: the oldest wires have no header), a
    ``context.jsonl`` bookkeeping record (``role`` ``_checkpoint``, ``_system_prompt``,
    ``_usage``), or a ``session_index.jsonl`` entry (skipped unread)."""
    kind = line.get("type")
    if kind == "metadata":
        return isinstance(line.get("protocol_version"), str)
    if kind is not None:
        return False
    message = line.get("message")
    if isinstance(message, dict):
        return (
            isinstance(message.get("type"), str)
            and isinstance(message.get("payload"), dict)
            and isinstance(line.get("timestamp"), int | float)
        )
    return line.keys() >= INDEX_KEYS or line.get("role") in CONTEXT_ROLES


def claims(path: Path, head: bytes) -> bool:
    """Kimi writes its logs as JSON lines only: no other file is one (``state.json`` is read
    beside its wire by the fold)."""
    return False


def homes() -> list[Path]:
    """The ``sessions`` directories that exist of the Kimi Code home (``$KIMI_CODE_HOME`` or
    ``~/.kimi-code``) and of the kimi-cli home (``$KIMI_SHARE_DIR`` or ``~/.kimi``): each
    variable replaces its own default only. Nothing is created or written."""
    found: list[Path] = []
    for variable, default in zip(KIMI.home_variables, KIMI.default_homes, strict=True):
        home = Path(os.environ.get(variable, "").strip() or default).expanduser()
        sessions = home / "sessions"
        if sessions.is_dir() and sessions.resolve() not in {d.resolve() for d in found}:
            found.append(sessions)
    return found


def discover(paths: Sequence[Path]) -> list[list[Path]]:
    """One group of the Kimi files under ``paths``: a home's ``sessions/`` (a directory
    holding one), any other directory's ``wire.jsonl`` and ``context*.jsonl`` files, and named
    files as they are."""
    found: list[tuple[Path, Path]] = []
    for target in paths:
        if not target.is_dir():
            found += keyed(target)
            continue
        root = target / "sessions" if (target / "sessions").is_dir() else target
        found += [pair for pair in keyed(root) if _session_file(pair[1])]
    group = unique(found)
    return [group] if group else []


def _session_file(path: Path) -> bool:
    """A session's wire, or a kimi-cli context file."""
    return path.name == "wire.jsonl" or path.name.startswith("context")


def read(paths: Sequence[Path] | None = None, *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues of the wires under ``paths`` (default: the homes), and
    their context items unless ``items`` is false."""
    return fold(discover(homes() if paths is None else paths), KIMI.id, items)


def skipped(path: Path) -> bool:
    """A claimed file that holds no call and is not read: a Kimi Code session index."""
    return path.name == INDEX_FILE


def read_files(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions and issues (and items) of exactly ``files``, folded as one group
    (less those :func:`skipped`)."""
    return fold([[path for path in files if not skipped(path)]], KIMI.id, items)
