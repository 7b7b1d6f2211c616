"""Copilot's event types as the core's neutral item kinds (``analytics.core.items``), and back.

``item_of_event`` gives Copilot's EVENTS rows their ``item`` (the engine's pass keeps the
event type as the log writes it; the core reads only the kind). ``event_of_item`` goes the
other way for another agent's items handed to Copilot's own reconstruction, which reads
event types (``engine.corpus``).
"""

from __future__ import annotations

import polars as pl

from analytics.core import items

#: Each Copilot event type that is an item, and its kind (one event type per kind).
EVENT_ITEMS = {
    "user.message": items.PROMPT,
    "assistant.message": items.REPLY,
    "tool.execution_start": items.TOOL_CALL,
    "tool.execution_complete": items.TOOL_OUTPUT,
    "skill.invoked": items.SKILL,
    "system.message": items.SYSTEM,
    "session.compaction_complete": items.COMPACTION,
    "session.task_complete": items.TASK_COMPLETE,
}


def item_of_event() -> pl.Expr:
    """``item``: the kind of each row's ``event_type`` (null for an event that is none)."""
    return (
        pl.col("event_type")
        .replace_strict(EVENT_ITEMS, default=None, return_dtype=pl.String)
        .alias("item")
    )


def event_of_item() -> pl.Expr:
    """``event_type``: the Copilot event type of each row's ``item`` (null for none)."""
    events = {kind: event for event, kind in EVENT_ITEMS.items()}
    return (
        pl.col("item")
        .replace_strict(events, default=None, return_dtype=pl.String)
        .alias("event_type")
    )
