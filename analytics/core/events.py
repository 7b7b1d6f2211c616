"""What every stage after the engine's pass says of EVENTS: which events are the main
agent's, and a session's fixed part (system prompt and tool definitions) as the events state
or imply it.

(The stages that ordered events and dropped repeated lines in polars are the engine's pass
now, ``native/agents/copilot/pass.rs``; they are kept as its oracle in
``tests/oracle/reference/events.py``.)
"""

from __future__ import annotations

import polars as pl

from analytics.core import items as kinds

#: An event of the main agent: no sub-agent envelope id, no parent tool call, and (for
#: ``assistant.usage`` in SDK captures, which carry neither) not initiated by a sub-agent.
MAIN_AGENT = (
    pl.col("agent_id").is_null()
    & pl.col("parent_tool_call_id").is_null()
    & (pl.col("initiator") != "sub-agent").fill_null(True)
)

#: Bytes of UTF-8 text per token for reconstruction (a common average for English and code).
BYTES_PER_TOKEN = 4
#: Tool definitions, in tokens, when no shutdown or compaction states them (the middle of the
#: values real Copilot CLI 1.0.49-1.0.91 logs state; the engine's prior,
#: ``TOOL_DEFINITIONS_PRIOR``).
DEFAULT_TOOL_DEFINITIONS_TOKENS = 11_000
#: A session's fixed part as the log states it (see ``stated_fixed_part``).
_STATED_FIXED = (pl.col("system_tokens") + pl.col("tool_definitions_tokens")).drop_nulls().first()


def stated_fixed_part(events: pl.DataFrame) -> pl.DataFrame:
    """Per session: system prompt + tool definitions in tokens (``fixed_tokens``), as the log
    states them (the first shutdown or compaction giving both); null where none does."""
    return events.group_by("session_id").agg(_STATED_FIXED.alias("fixed_tokens"))


def fixed_part(events: pl.DataFrame) -> pl.DataFrame:
    """Per session: system prompt + tool definitions, in tokens (``_fixed``).

    As the log states them (``stated_fixed_part``); else the first main system message
    converted to tokens plus a default for tool definitions.
    """
    system_text = (pl.col("item") == kinds.SYSTEM) & pl.col("agent_id").is_null()
    estimated = (
        pl.col("content_bytes").filter(system_text).first() + BYTES_PER_TOKEN - 1
    ) // BYTES_PER_TOKEN + DEFAULT_TOOL_DEFINITIONS_TOKENS
    return events.group_by("session_id").agg(pl.coalesce(_STATED_FIXED, estimated).alias("_fixed"))
