"""The usage records of one conversation database: every ``ModelUsageStats`` agy wrote.

agy writes one call's usage up to four times (``docs/agents/antigravity.md``): in its step's
``metadata`` (field 9, every call, background ones included), again in that step's
``retry_infos`` (metadata 28 -> 2, one entry per attempt), in the step's ``step_payload``
(field 5, a copy of ``metadata``: read only where it differs), and for planner calls in
``gen_metadata.data`` (1 -> 4, and its retry entries 1 -> 17 -> 2). This module turns each into a
:class:`Record`; ``fold`` keeps one call per identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analytics.agents.antigravity import schema

#: Steps' ``step_type`` of a background conversation summary (``CHECKPOINT``).
CHECKPOINT = 23
#: Steps' ``status`` values that say the call did not finish: pending, canceled.
PENDING, CANCELED = 1, 6
#: Model enums from 1000 on are placeholders: 1000 + n is ``MODEL_PLACEHOLDER_M<n>``.
PLACEHOLDER_BASE = 1000
#: The API provider enum (field 6), as ccusage's adapter names it; others are left unnamed.
PROVIDERS = {24: "google", 3: "google-vertex"}


@dataclass(frozen=True, slots=True)
class Usage:
    """One ``ModelUsageStats``: its identity (response id, else the provider's message id,
    else the message id; None when it has none), its model enum and counters (absent
    counters are 0, proto3's default; the thinking split is None when neither part is
    written), and the field numbers it carries that are not ``ModelUsageStats``'s."""

    key: str | None
    model: int | None
    uncached: int
    output: int
    cache_write: int
    cache_read: int
    thinking: int | None
    provider: int | None
    unknown: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Record:
    """A usage record and where it was found: ``table`` and ``row`` (``steps.idx`` or
    ``gen_metadata.idx``), ``place`` (the field path), the step's type and status (None for
    ``gen_metadata``), its start and end (POSIX seconds), and the model name the row gives
    (``gen_metadata``'s display label, else its response model)."""

    usage: Usage
    table: str
    row: int
    place: str
    step_type: int | None
    status: int | None
    start: float | None
    end: float | None
    name: str | None


def usage(parsed: Any) -> Usage:
    """A parsed ``ModelUsageStats`` (``schema.MESSAGES["Usage"]``) as a :class:`Usage`."""
    key = (
        schema.text(parsed.response_id)
        or schema.text(parsed.provider_message_id)
        or schema.text(parsed.message_id)
    )
    split = parsed.HasField("thinking_output_tokens") or parsed.HasField("response_output_tokens")
    return Usage(
        key=key,
        model=parsed.model if parsed.HasField("model") else None,
        uncached=parsed.input_tokens,
        output=parsed.output_tokens,
        cache_write=parsed.cache_write_tokens,
        cache_read=parsed.cache_read_tokens,
        thinking=parsed.thinking_output_tokens if split else None,
        provider=parsed.provider if parsed.HasField("provider") else None,
        unknown=tuple(sorted(schema.unknown(parsed))),
    )


def step_records(
    row: int, step_type: int, status: int, metadata: bytes, payload: bytes | None
) -> list[Record]:
    """The usage records of one ``steps`` row: its ``metadata``'s, and those of the copy in
    ``payload`` (field 5) when it is given (the caller passes it only where it is not
    ``metadata`` itself). Raises ``schema.DecodeError`` on a blob that does not decode."""

    def records(step: Any, where: str) -> list[Record]:
        start = schema.seconds(step.created) if step.HasField("created") else None
        end = schema.seconds(step.completed) if step.HasField("completed") else None
        found = [(f"{where}9", u) for u in step.usage]
        found += [(f"{where}28>2", r.usage) for r in step.retries if r.HasField("usage")]
        return [
            Record(usage(u), "steps", row, place, step_type, status, start, end, None)
            for place, u in found
        ]

    parsed = schema.StepMetadata.FromString(metadata)
    kept = records(parsed, "metadata>")
    if payload is not None:
        for copy in schema.StepPayload.FromString(payload).metadata:
            kept += records(copy, "step_payload>5>")
    return kept


def gen_records(row: int, data: bytes) -> list[Record]:
    """The usage records of one ``gen_metadata`` row (1 -> 4 and 1 -> 17 -> 2), named by the
    row's display label (1 -> 21: ``Gemini 3.1 Pro (High)``, the name the rate tables know)
    or else its response model (1 -> 19: ``gemini-pro-default``, an agy-internal name)."""
    kept: list[Record] = []
    for generation in schema.GenMetadata.FromString(data).generation:
        name = schema.text(generation.label) or schema.text(generation.response_model)
        timing = generation.timing
        started = timing.HasField("started") and generation.HasField("timing")
        start = schema.seconds(timing.started) if started else None
        found = [("data>1>4", u) for u in generation.usage]
        found += [("data>1>17>2", r.usage) for r in generation.retries if r.HasField("usage")]
        kept += [
            Record(usage(u), "gen_metadata", row, place, None, None, start, None, name)
            for place, u in found
        ]
    return kept
