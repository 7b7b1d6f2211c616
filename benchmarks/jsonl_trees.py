"""pi, Gemini CLI and Kimi Code size trees: the real sessions copied again and again, each copy
laid out as the agent keeps its files in its home and renamed by ``benchmarks.copy_ids``.

Each ``build_*`` writes under ``home`` (the user's home of the tree: ``HOME`` for the agent
and for ccusage) whole copies of every real session until ``limit`` bytes are written, and
returns the bytes written. The real files are recorder transcripts (several sessions in one
file, the same session recorded twice); a home holds one file per session, so the sessions are
split at their headers and put where the agent writes them:

- pi: ``.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl`` (``<cwd>`` without its leading ``/``,
  ``/ \\ :`` made ``-``; ``<ts>`` the header's timestamp with ``:`` and ``.`` made ``-``). A session
  recorded again in the same copy is written as pi's ``/fork`` writes one: a new session id
  and stamp, ``parentSession`` naming the first file, the entries byte for byte (same entry
  ids and ``responseId``: the copy's calls count once);
- Gemini CLI: ``.gemini/tmp/<projectHash>/chats/session-<startTime minute>-<id[:8]>.jsonl``;
- Kimi Code: ``.kimi-code/sessions/<workDirKey>/<sessionId>/`` holding ``state.json`` and
  ``agents/<agent>/wire.jsonl``, and a ``session_index.jsonl`` line per session. Kimi's calls
  carry no id (they are keyed by agent, stamp, model and usage), so each copy's stamps are
  moved ``copy`` seconds later.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks import copy_ids

#: The values that tie a pi entry to a call, a branch or a session.
PI_KEYS = copy_ids.keyed(
    ("id", "parentId", "responseId", "firstKeptEntryId", "activeLeafId", "leafId", "toolCallId")
)
#: Gemini CLI message and tool-call ids (some are not uuids: the session context's).
GEMINI_KEYS = copy_ids.keyed(("id",))
#: Kimi Code ids that are not uuids (provider response ids, tool calls, queue items).
KIMI_KEYS = copy_ids.keyed(("messageId", "toolCallId", "queueItemId", "promptId", "id"))
_KIMI_TIMES = re.compile(r'"(time|created_at|createdAt|updatedAt)":(\d{13})\b')
#: A fork's session id: derived from the renamed source id, so unique per copy.
_FORKS = uuid.UUID("6f1c9a52-51a4-4b5e-9d0e-8a41e2b7c3d1")


def _jsonl_sessions(
    files: list[Path], is_header: Callable[[dict[str, object]], bool]
) -> list[tuple[dict[str, object], str]]:
    """Every session of ``files`` (header, text from it to the next header): a recorder file
    may hold several, one after another."""
    sessions: list[tuple[dict[str, object], str]] = []
    for path in files:
        header: dict[str, object] | None = None
        lines: list[str] = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            record = _object(line)
            if record is not None and is_header(record):
                if header is not None:
                    sessions.append((header, "".join(lines)))
                header, lines = record, []
            if header is not None:
                lines.append(line if line.endswith("\n") else line + "\n")
        if header is not None:
            sessions.append((header, "".join(lines)))
    return sessions


def _object(line: str) -> dict[str, object] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _copies(limit: int, write_copy: Callable[[int], int]) -> int:
    """Write whole copies 0, 1, ... until ``limit`` bytes are written; the bytes written."""
    written, copy = 0, 0
    while written < limit:
        written += write_copy(copy)
        copy += 1
    return written


def _write(path: Path, text: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    path.write_bytes(data)
    return len(data)


# pi -------------------------------------------------------------------------------------


def pi_sessions(source: Path) -> list[tuple[dict[str, object], str]]:
    """The pi sessions of the real files (only files that open with a ``session`` header:
    the recorder's observer output is not pi's)."""
    files = [p for p in sorted(source.rglob("*.jsonl")) if _opens_pi_session(p)]
    return _jsonl_sessions(files, lambda r: r.get("type") == "session")


def _opens_pi_session(path: Path) -> bool:
    with path.open(encoding="utf-8", errors="replace") as handle:
        first = _object(handle.readline())
    return first is not None and first.get("type") == "session"


def pi_project(cwd: str) -> str:
    """pi's session folder name for a working directory."""
    return "--" + re.sub(r"[/\\:]", "-", cwd.removeprefix("/")) + "--"


def pi_file(header: dict[str, object]) -> str:
    """pi's session file name for a header."""
    stamp = str(header["timestamp"]).replace(":", "-").replace(".", "-")
    return f"{stamp}_{header['id']}.jsonl"


def build_pi(home: Path, limit: int, source: Path) -> int:
    """pi's tree under ``home`` (see the module's doc)."""
    sessions = pi_sessions(source)
    root = home / ".pi" / "agent" / "sessions"

    def write_copy(copy: int) -> int:
        written, seen = 0, dict[str, Path]()
        for _, real in sessions:
            text = copy_ids.suffixed(copy_ids.uuids(real, copy), PI_KEYS, copy)
            first, body = text.split("\n", 1)
            renamed = json.loads(first)
            if renamed["id"] in seen:
                first = _pi_fork_header(renamed, body, seen[renamed["id"]], len(seen))
                renamed = json.loads(first)
            path = root / pi_project(str(renamed["cwd"])) / pi_file(renamed)
            seen.setdefault(str(renamed["id"]), path)
            written += _write(path, first + "\n" + body)
        return written

    return _copies(limit, write_copy)


def _pi_fork_header(header: dict[str, object], body: str, parent: Path, index: int) -> str:
    """The header pi's ``/fork`` writes for a copy of ``parent``'s entries: a new id, the
    moment after the last copied entry, ``parentSession``."""
    stamps = re.findall(r'"timestamp":"([^"]+)"', body) or [str(header["timestamp"])]
    after = dt.datetime.fromisoformat(stamps[-1]) + dt.timedelta(milliseconds=1)
    fork = {
        "type": "session",
        "version": header.get("version", 3),
        "id": str(uuid.uuid5(_FORKS, f"{header['id']}/{index}")),
        "timestamp": after.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "cwd": header["cwd"],
        "parentSession": str(parent),
    }
    return json.dumps(fork, separators=(",", ":"))


# Gemini CLI ------------------------------------------------------------------------------


def gemini_sessions(source: Path) -> list[tuple[dict[str, object], str]]:
    """The Gemini CLI sessions of the real recordings (a header: ``sessionId`` and
    ``projectHash`` on a line that is not a message)."""
    files = sorted(source.rglob("*.jsonl"))
    return _jsonl_sessions(
        files, lambda r: "sessionId" in r and "projectHash" in r and "type" not in r
    )


def gemini_file(header: dict[str, object]) -> str:
    """Gemini CLI's chat file name for a header (the start minute, UTC; the id's first 8)."""
    minute = str(header["startTime"])[:16].replace(":", "-")
    return f"session-{minute}-{str(header['sessionId'])[:8]}.jsonl"


def build_gemini(home: Path, limit: int, source: Path) -> int:
    """Gemini CLI's tree under ``home`` (see the module's doc)."""
    sessions = gemini_sessions(source)
    root = home / ".gemini" / "tmp"

    def write_copy(copy: int) -> int:
        written = 0
        for _, real in _longest(sessions, "sessionId"):
            text = copy_ids.suffixed(copy_ids.uuids(real, copy), GEMINI_KEYS, copy)
            header = json.loads(text.split("\n", 1)[0])
            path = root / str(header["projectHash"]) / "chats" / gemini_file(header)
            written += _write(path, text)
        return written

    return _copies(limit, write_copy)


def _longest(
    sessions: list[tuple[dict[str, object], str]], key: str
) -> Iterator[tuple[dict[str, object], str]]:
    """Each session once, its longest recording (a session's file only grows)."""
    best: dict[object, tuple[dict[str, object], str]] = {}
    for header, text in sessions:
        if header[key] not in best or len(text) > len(best[header[key]][1]):
            best[header[key]] = (header, text)
    return iter(best.values())


# Kimi Code -------------------------------------------------------------------------------


def kimi_sessions(source: Path) -> list[tuple[str, dict[str, str]]]:
    """Each real Kimi Code session directory: its ``state.json`` text and its wires (by path
    under the session directory, ``agents/<agent>/wire.jsonl``)."""
    sessions = []
    for state in sorted(source.rglob("state.json")):
        folder = state.parent
        wires = {
            str(wire.relative_to(folder)): wire.read_text(encoding="utf-8", errors="replace")
            for wire in sorted(folder.glob("agents/*/wire.jsonl"))
        }
        if wires:
            sessions.append((state.read_text(encoding="utf-8"), wires))
    return sessions


def kimi_workdir_key(state: dict[str, object]) -> str:
    """The session's ``<workDirKey>``: the folder above it in the ``homedir`` Kimi Code
    recorded, else Kimi Code's rule from ``cwd`` (``wd_<slug>_<sha256(cwd)[:12]>``)."""
    agents = state.get("agents")
    main = agents.get("main") if isinstance(agents, dict) else None
    homedir = main.get("homedir") if isinstance(main, dict) else None
    parts = Path(str(homedir)).parts if homedir else ()
    if "sessions" in parts and parts.index("sessions") + 1 < len(parts):
        return parts[parts.index("sessions") + 1]
    cwd = str(state.get("cwd", ""))
    slug = re.sub(r"[^a-z0-9._-]+", "-", Path(cwd).name.lower()).strip("-")[:40] or "workspace"
    return f"wd_{slug}_{hashlib.sha256(cwd.encode()).hexdigest()[:12]}"


def _kimi_renamed(text: str, copy: int) -> str:
    text = copy_ids.suffixed(copy_ids.uuids(text, copy), KIMI_KEYS, copy)
    return _KIMI_TIMES.sub(lambda m: f'"{m.group(1)}":{int(m.group(2)) + copy * 1000}', text)


def build_kimi(home: Path, limit: int, source: Path) -> int:
    """Kimi Code's tree under ``home`` (see the module's doc)."""
    sessions = kimi_sessions(source)
    root = home / ".kimi-code"
    root.mkdir(parents=True, exist_ok=True)
    index = (root / "session_index.jsonl").open("w", encoding="utf-8")

    def write_copy(copy: int) -> int:
        written = 0
        for real_state, wires in sessions:
            state_text = _kimi_renamed(real_state, copy)
            state = json.loads(state_text)
            folder = root / "sessions" / kimi_workdir_key(state) / str(state["id"])
            written += _write(folder / "state.json", state_text)
            for relative, wire in wires.items():
                written += _write(folder / relative, _kimi_renamed(wire, copy))
            entry = {"sessionId": state["id"], "sessionDir": str(folder), "workDir": state["cwd"]}
            index.write(json.dumps(entry, separators=(",", ":")) + "\n")
        return written

    with index:
        return _copies(limit, write_copy)
