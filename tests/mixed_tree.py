"""A tree of every agent's logs for the HTML report's tests, written from literal lines: the
Copilot sessions of ``sample_logs/``, a long Claude Code session over a month of days whose
calls use more models than the charts' palette has colours (``plots.PALETTE``), and a Codex
session.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from analytics.render.plots import PALETTE
from tests.conftest import SAMPLE_LOGS

#: Calls of the Claude Code session, and how many models they use (more than the palette).
CLAUDE_CALLS = 600
CLAUDE_MODELS = [f"claude-opus-4-{n}" for n in (5, 6)] + [
    f"claude-test-model-{n:02d}" for n in range(len(PALETTE) + 3)
]


def claude_session(session: str = "cc-long") -> list[dict[str, Any]]:
    """A Claude Code session of ``CLAUDE_CALLS`` calls, one a turn: a prompt, then a reply
    whose cache read grows by the last call's writes; a call every 70 minutes (a month)."""
    lines: list[dict[str, Any]] = []
    read = 0
    for n in range(CLAUDE_CALLS):
        minutes = 70 * n
        stamp = f"2026-05-{1 + minutes // 1440:02d}T{minutes % 1440 // 60:02d}:{minutes % 60:02d}"
        write = 400 + 37 * (n % 11)
        lines += [
            {"type": "user", "uuid": f"u{n}", "sessionId": session,
             "timestamp": f"{stamp}:00Z", "message": {"role": "user", "content": f"step {n}"}},
            {"type": "assistant", "uuid": f"a{n}", "sessionId": session, "requestId": f"r{n}",
             "timestamp": f"{stamp}:05Z",
             "message": {"id": f"m{n}", "model": CLAUDE_MODELS[n % len(CLAUDE_MODELS)],
                         "stop_reason": "end_turn",
                         "content": [{"type": "text", "text": f"done {n}"}],
                         "usage": {"input_tokens": 5, "cache_creation_input_tokens": write,
                                   "cache_read_input_tokens": read, "output_tokens": 30}}},
        ]  # fmt: skip
        read += write + 5
    return lines


def _usage(total: tuple[int, int, int], last: tuple[int, int, int]) -> dict[str, object]:
    def record(u: tuple[int, int, int]) -> dict[str, int]:
        return {"input_tokens": u[0], "cached_input_tokens": u[1], "output_tokens": u[2],
                "reasoning_output_tokens": 0, "total_tokens": u[0] + u[2]}  # fmt: skip

    return {"type": "token_count", "info": {"total_token_usage": record(total),
                                            "last_token_usage": record(last)}}  # fmt: skip


#: A Codex session of two calls (a tool call, its output, a reply).
CODEX: list[dict[str, Any]] = [
    {"timestamp": "2026-05-01T11:00:00.000Z", "type": "session_meta",
     "payload": {"id": "cx-1", "timestamp": "2026-05-01T11:00:00.000Z", "cwd": "/w",
                 "cli_version": "0.130.0"}},
    {"timestamp": "2026-05-01T11:00:00.100Z", "type": "turn_context",
     "payload": {"cwd": "/w", "model": "gpt-5.5"}},
    {"timestamp": "2026-05-01T11:00:01.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "list the files"}]}},
    {"timestamp": "2026-05-01T11:00:02.000Z", "type": "response_item",
     "payload": {"type": "function_call", "name": "exec_command",
                 "arguments": "{\"cmd\":\"ls\"}", "call_id": "c1"}},
    {"timestamp": "2026-05-01T11:00:02.000Z", "type": "event_msg",
     "payload": _usage((12000, 0, 30), (12000, 0, 30))},
    {"timestamp": "2026-05-01T11:00:03.000Z", "type": "response_item",
     "payload": {"type": "function_call_output", "call_id": "c1", "output": "a.py\n" * 900}},
    {"timestamp": "2026-05-01T11:00:05.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "done"}]}},
    {"timestamp": "2026-05-01T11:00:05.000Z", "type": "event_msg",
     "payload": _usage((25200, 11900, 40), (13200, 11900, 10))},
]  # fmt: skip


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def write_mixed_tree(root: Path) -> Path:
    """The tree under ``root``: ``copilot/`` (sample_logs' sessions), a Claude Code project and
    a Codex home. Returns ``root``."""
    shutil.copytree(SAMPLE_LOGS / "session-state", root / "copilot" / "session-state")
    _write(root / "claude" / "projects" / "-w" / "cc-long.jsonl", claude_session())
    _write(root / "codex" / "sessions" / "2026" / "05" / "01" / "rollout-x-cx-1.jsonl", CODEX)
    return root
