"""The core's vocabulary of conversation items: what attribution and behaviour read of a log.

Every agent writes its own records (Copilot's ``user.message``, Claude Code's ``user`` lines
with ``tool_result`` blocks, Codex's ``function_call_output``, ...). Each agent maps its
records to these neutral kinds in its own folder (the native folds under
``native/agents/<agent>/``, which write the ``item`` column of their items; Copilot's event
types in ``analytics/agents/copilot/items.py``), so the core never names an agent's record
type. Every row of EVENTS (and of a fold's items) has its kind in ``item``; a row that is
none of these (a call, a shutdown, ...) has none.

The kinds:

* ``PROMPT``: a message given to the model as the user's turn. A person's prompt, or, with
  ``is_autopilot``, a continuation nudge the agent sent itself (Copilot's autopilot).
* ``REPLY``: the model's own output kept in context: text, reasoning and tool requests
  (their bytes are also ``tool_request_bytes``).
* ``TOOL_CALL``: names the tool of a call (``tool_call_id``, ``tool_name``); adds nothing to
  the context, it only names the ``TOOL_OUTPUT`` of the same call.
* ``TOOL_OUTPUT``: a tool's result (a file read, a command's output, ...) returned to the
  model.
* ``SKILL``: instructions of a skill injected into the context.
* ``SYSTEM``: system prompt or instructions text (part of a session's fixed part).
* ``COMPACTION``: a compaction's summary, which replaces the items before it.
* ``TASK_COMPLETE``: the agent says its task is done; adds nothing to the context.
"""

from __future__ import annotations

PROMPT = "prompt"
REPLY = "reply"
TOOL_CALL = "tool_call"
TOOL_OUTPUT = "tool_output"
SKILL = "skill"
SYSTEM = "system"
COMPACTION = "compaction"
TASK_COMPLETE = "task_complete"

#: Every kind, in the order above.
KINDS = (PROMPT, REPLY, TOOL_CALL, TOOL_OUTPUT, SKILL, SYSTEM, COMPACTION, TASK_COMPLETE)

#: The kinds that are items of the conversation re-sent on every call, with the label a view
#: shows for each (``tool result: view (40.2 kB)``, ``user message (812 B)``).
CONTEXT_LABELS = {
    PROMPT: "user message",
    REPLY: "assistant message",
    TOOL_OUTPUT: "tool result",
    SKILL: "skill",
    COMPACTION: "compaction summary",
}
