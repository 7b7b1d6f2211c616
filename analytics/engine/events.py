"""What every stage after the engine's pass says of EVENTS: the key columns each table of
events starts with, and which events are the main agent's.

(The stages that ordered events and dropped repeated lines in polars are the engine's pass
now, ``native/agents/copilot/pass.rs``; they are kept as its oracle in
``tests/reference/events.py``.)
"""

from __future__ import annotations

import polars as pl

#: Every stage's first EVENTS columns: where a row came from and where it sits in its session.
EVENT_KEYS = [
    "source_file",
    "source_line",
    "session_id",
    "event_seq",
    "process_index",
    "event_type",
]

#: An event of the main agent: no sub-agent envelope id, no parent tool call, and (for
#: ``assistant.usage`` in SDK captures, which carry neither) not initiated by a sub-agent.
MAIN_AGENT = (
    pl.col("agent_id").is_null()
    & pl.col("parent_tool_call_id").is_null()
    & (pl.col("initiator") != "sub-agent").fill_null(True)
)
