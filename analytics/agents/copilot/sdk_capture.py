"""Turn an SDK capture into the ``events.jsonl`` the CLI would have written, plus per-call truth.

An SDK capture is a JSON document whose ``events`` (or ``allEvents``) array holds every
event an SDK client received live from a real Copilot CLI, ephemeral ones included (real:
``../shared/real_logs/darthmolen-sdk-captures/``). Its ``assistant.usage`` events are each
call's true usage, and they come with the real message and tool-result content: the only real
per-call truth beside real content. The CLI writes only the persisted events to disk (schema
doc §3), so a capture becomes an on-disk log by

- dropping the ephemeral events (``EPHEMERAL``, and any event flagged ``ephemeral``);
- giving every line the on-disk envelope (``type, data, id, timestamp, parentId``; ids are
  derived from the capture's bytes, so the same capture always gives the same file);
- starting with a ``session.start`` if the capture has none;
- ending with the ``session.shutdown`` the CLI writes: per model, the sums of the calls'
  ``assistant.usage`` (requests, premium cost, input, output, cache read and write, reasoning,
  nano-AIU where given).

``Capture.usage`` keeps the truth, one row per ``assistant.usage`` in order, as
``session-store.db`` would have held it (``agent_id`` = the sub-agent's spawning tool call).
``agentcost capture-to-log`` writes both (``simulate.write_capture_tree``); ``agentcost
validate CAPTURE.json`` converts in memory and measures the reconstruction against the truth.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analytics.core.errors import InputError

JSON = dict[str, Any]

#: Event types the CLI streams to clients but never writes to ``events.jsonl`` (schema doc §3).
EPHEMERAL: frozenset[str] = frozenset(
    {
        "assistant.usage",
        "session.usage_info",
        "session.idle",
        "assistant.idle",
        "assistant.message_start",
        "assistant.message_delta",
        "assistant.reasoning_delta",
        "assistant.streaming_delta",
        "assistant.tool_call_delta",
        "assistant.intent",
        "assistant.server_tool_progress",
        "model.call_failure",
        "model.call_start",
        "assistant.turn_retry",
        "model.call_finished",
        "tool.execution_partial_result",
        "tool.execution_progress",
        "hook.progress",
        "pending_messages.modified",
        "session.title_changed",
        "session.todos_changed",
        "session.snapshot_rewind",
        "session.tools_updated",
        "session.background_tasks_changed",
        "session.skills_loaded",
        "session.custom_agents_updated",
        "session.mcp_servers_loaded",
        "session.mcp_server_status_changed",
        "session.extensions_loaded",
        "session.custom_notification",
        "commands.changed",
        "capabilities.changed",
        "ui.ephemeral_query",
        "mcp_app.tool_call_complete",
    }
)
#: Families of ephemeral types (schema doc §3), matched by prefix.
EPHEMERAL_PREFIXES: tuple[str, ...] = (
    "session.managed_settings_",
    "user_input.",
    "elicitation.",
    "sampling.",
    "mcp.",
    "command.",
    "auto_mode_switch.",
    "session_limits_exhausted.",
    "exit_plan_mode.",
    "factory.",
)
_USAGE_SUMS = {
    "inputTokens": "inputTokens",
    "outputTokens": "outputTokens",
    "cacheReadTokens": "cacheReadTokens",
    "cacheWriteTokens": "cacheWriteTokens",
    "reasoningTokens": "reasoningTokens",
}


@dataclass(frozen=True)
class Capture:
    """A capture as the on-disk log (``lines``, JSON text without newlines) and its truth."""

    session_id: str
    lines: tuple[str, ...]
    #: One dict per call, in order: ``agent_id`` (None for the main agent), ``model``,
    #: ``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
    #: ``reasoning_tokens``, ``total_nano_aiu``, ``request_multiplier``, ``duration_ms``,
    #: ``initiator``, ``created_at``.
    usage: tuple[JSON, ...]

    def text(self) -> str:
        """The ``events.jsonl`` file's text."""
        return "".join(line + "\n" for line in self.lines)


def is_capture(path: Path) -> bool:
    """Whether ``path`` names an SDK capture: a ``.json`` file (logs are ``.jsonl``)."""
    return path.suffix == ".json" and path.is_file()


def read_capture(path: Path) -> Capture:
    """Read an SDK capture file; raise ``InputError`` if it is not one, or cannot be read
    (missing, a directory, no permission), in one line that says what to name instead."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        reason = "a directory" if path.is_dir() else (error.strerror or "unreadable").lower()
        raise InputError(
            f"{path}: {reason}; name an SDK capture file (JSON with an 'events' array)"
        ) from None
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: not JSON ({error}); pass an SDK capture document") from error
    events = captured_events(document)
    if events is None:
        raise InputError(f"{path}: no 'events' or 'allEvents' array; pass an SDK capture document")
    return convert(events, hashlib.sha256(raw).hexdigest())


#: The keys an SDK capture keeps its events under, in the order they are looked for: the
#: darthmolen spikes wrote ``events`` (spike-05, spike-07b) or ``allEvents`` (spike-01,
#: spike-07-first-run, beside a ``eventSequence`` of types and times only).
EVENT_KEYS = ("events", "allEvents")


def captured_events(document: object) -> list[Any] | None:
    """The events array of an SDK capture (a JSON object without an event ``type``, with
    one of ``EVENT_KEYS``), or None when ``document`` is not one."""
    if not isinstance(document, dict) or "type" in document:
        return None
    arrays = (document.get(key) for key in EVENT_KEYS)
    return next((array for array in arrays if isinstance(array, list)), None)


def convert(events: Sequence[Mapping[str, Any]], digest: str) -> Capture:
    """The on-disk log and truth of captured ``events``; ``digest`` seeds ids and the session id."""
    session_id = str(uuid.UUID(digest[:32], version=4))
    kept = [dict(e) for e in events if isinstance(e, Mapping) and not _ephemeral(e)]
    usage = [
        dict(e["data"])
        for e in events
        if isinstance(e, Mapping) and e.get("type") == "assistant.usage" and e.get("data")
    ]
    times = [str(e["timestamp"]) for e in events if isinstance(e, Mapping) and e.get("timestamp")]
    first = times[0] if times else "1970-01-01T00:00:00.000Z"
    last = times[-1] if times else first
    if not any(e.get("type") == "session.start" for e in kept):
        kept.insert(0, _start(session_id, first, usage))
    kept.append(_shutdown(usage, last, first))
    lines: list[str] = []
    parent: str | None = None
    for n, event in enumerate(kept):
        event_id = event.get("id") or str(uuid.UUID(_hex(digest, n), version=4))
        line: JSON = {
            "type": event.get("type"),
            "data": event.get("data") or {},
            "id": event_id,
            "timestamp": event.get("timestamp") or last,
            "parentId": parent,
        }
        if event.get("agentId"):
            line["agentId"] = event["agentId"]
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
        parent = str(event_id)
    truth = tuple(_truth(u, t) for u, t in zip(usage, _usage_times(events), strict=True))
    return Capture(session_id, tuple(lines), truth)


def _ephemeral(event: Mapping[str, Any]) -> bool:
    kind = str(event.get("type", ""))
    return bool(event.get("ephemeral")) or kind in EPHEMERAL or kind.startswith(EPHEMERAL_PREFIXES)


def _hex(digest: str, n: int) -> str:
    return hashlib.sha256(f"{digest}:{n}".encode()).hexdigest()[:32]


def _usage_times(events: Sequence[Mapping[str, Any]]) -> list[str | None]:
    return [
        e.get("timestamp")
        for e in events
        if isinstance(e, Mapping) and e.get("type") == "assistant.usage" and e.get("data")
    ]


def _start(session_id: str, first: str, usage: Sequence[JSON]) -> JSON:
    """The ``session.start`` the CLI writes first (its version is not in the capture)."""
    main = [u.get("model") for u in usage if u.get("initiator") != "sub-agent"]
    data: JSON = {
        "sessionId": session_id,
        "version": 1,
        "producer": "copilot-agent",
        "startTime": first,
    }
    if main and main[0]:
        data["selectedModel"] = main[0]
    return {"type": "session.start", "data": data, "timestamp": first}


def _shutdown(usage: Sequence[JSON], last: str, first: str) -> JSON:
    """The shutdown the CLI writes: per-model sums of its calls' ``assistant.usage``."""
    metrics: dict[str, JSON] = {}
    for u in usage:
        model = str(u.get("model"))
        entry = metrics.setdefault(
            model, {"requests": {"count": 0, "cost": 0}, "usage": dict.fromkeys(_USAGE_SUMS, 0)}
        )
        entry["requests"]["count"] += 1
        entry["requests"]["cost"] += u.get("cost") or 0
        for key in _USAGE_SUMS:
            entry["usage"][key] += int(u.get(key) or 0)
        nano = (u.get("copilotUsage") or {}).get("totalNanoAiu")
        if nano is not None:
            entry["totalNanoAiu"] = entry.get("totalNanoAiu", 0) + int(nano)
    for entry in metrics.values():
        entry["requests"]["cost"] = round(entry["requests"]["cost"], 6)
    data: JSON = {
        "shutdownType": "routine",
        "totalPremiumRequests": round(sum(m["requests"]["cost"] for m in metrics.values()), 6),
        "totalApiDurationMs": sum(int(u.get("duration") or 0) for u in usage),
        "sessionStartTime": first,
        "modelMetrics": metrics,
    }
    nanos = [m["totalNanoAiu"] for m in metrics.values() if "totalNanoAiu" in m]
    if nanos:
        data["totalNanoAiu"] = sum(nanos)
    main = [u.get("model") for u in usage if u.get("initiator") != "sub-agent"]
    if main:
        data["currentModel"] = main[-1]
    return {"type": "session.shutdown", "data": data, "timestamp": last}


def _truth(u: JSON, timestamp: str | None) -> JSON:
    """One call's usage as a ``session-store.db`` row would hold it."""
    sub = u.get("initiator") == "sub-agent" or u.get("parentToolCallId") is not None
    nano = (u.get("copilotUsage") or {}).get("totalNanoAiu")
    return {
        "agent_id": (u.get("parentToolCallId") or "sub-agent") if sub else None,
        "model": u.get("model"),
        "input_tokens": u.get("inputTokens"),
        "output_tokens": u.get("outputTokens"),
        "cache_read_tokens": u.get("cacheReadTokens"),
        "cache_write_tokens": u.get("cacheWriteTokens"),
        "reasoning_tokens": u.get("reasoningTokens"),
        "total_nano_aiu": None if nano is None else int(nano),
        "request_multiplier": u.get("cost"),
        "duration_ms": u.get("duration"),
        "initiator": u.get("initiator"),
        "created_at": timestamp,
    }
