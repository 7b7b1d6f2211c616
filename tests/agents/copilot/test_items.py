"""Copilot's event types as the core's neutral item kinds (``agents.copilot.items``)."""

from __future__ import annotations

import polars as pl

from analytics.agents.copilot.items import EVENT_ITEMS, event_of_item, item_of_event
from analytics.core import items as kinds
from analytics.engine.analyze import analyze
from tests.conftest import SAMPLE_LOGS


def test_each_item_event_is_its_kind_and_the_rest_none() -> None:
    events = pl.DataFrame(
        {
            "event_type": [
                "user.message",
                "assistant.message",
                "tool.execution_start",
                "tool.execution_complete",
                "skill.invoked",
                "system.message",
                "session.compaction_complete",
                "session.task_complete",
                "assistant.turn_start",
                "session.shutdown",
                None,
            ]
        }
    )
    assert events.select(item_of_event())["item"].to_list() == [
        kinds.PROMPT,
        kinds.REPLY,
        kinds.TOOL_CALL,
        kinds.TOOL_OUTPUT,
        kinds.SKILL,
        kinds.SYSTEM,
        kinds.COMPACTION,
        kinds.TASK_COMPLETE,
        None,
        None,
        None,
    ]


def test_every_kind_is_one_event_type_and_back() -> None:
    assert sorted(EVENT_ITEMS.values()) == sorted(kinds.KINDS)
    items = pl.DataFrame({"item": [*kinds.KINDS, None]})
    back = items.select(event_of_item()).select(item_of_event())
    assert back["item"].to_list() == [*kinds.KINDS, None]


def test_the_pass_gives_copilot_events_their_kinds() -> None:
    events = analyze([SAMPLE_LOGS]).events
    expected = events.select(item_of_event())["item"]
    assert events["item"].equals(expected)
    assert set(events["item"].drop_nulls()) >= {kinds.PROMPT, kinds.REPLY, kinds.TOOL_OUTPUT}
