"""The usage records of one conversation database: every ``ModelUsageStats`` agy wrote.

agy writes one call's usage up to four times (``docs/agents/antigravity.md``): in its step's
``metadata`` (field 9, every call, background ones included), again in that step's
``retry_infos`` (metadata 28 -> 2, one entry per attempt), in the step's ``step_payload``
(field 5, a copy of ``metadata``: read only where it differs), and for planner calls in
``gen_metadata.data`` (1 -> 4, and its retry entries 1 -> 17 -> 2). This module turns each into a
:class:`Record`; ``fold`` keeps one call per identity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analytics.agents.antigravity import wire

#: ``ModelUsageStats`` fields: 1 model enum, 2 uncached input, 3 output (thinking included),
#: 4 cache write, 5 cache read, 6 API provider enum, 7 message id, 8 a key/value pair (the
#: session id), 9 thinking output, 10 visible output, 11 response id, 12 provider's message id.
USAGE_FIELDS = frozenset(range(1, 13))
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


def usage(blob: bytes) -> Usage:
    """The ``ModelUsageStats`` encoded in ``blob`` (raises :class:`wire.WireError`)."""
    found = wire.fields(blob)
    key = wire.text(found, 11) or wire.text(found, 12) or wire.text(found, 7)
    thinking, visible = wire.number(found, 9), wire.number(found, 10)
    return Usage(
        key=key,
        model=wire.number(found, 1),
        uncached=wire.number(found, 2) or 0,
        output=wire.number(found, 3) or 0,
        cache_write=wire.number(found, 4) or 0,
        cache_read=wire.number(found, 5) or 0,
        thinking=None if thinking is None and visible is None else thinking or 0,
        provider=wire.number(found, 6),
        unknown=tuple(sorted(found.keys() - USAGE_FIELDS)),
    )


def model_id(enum: int | None) -> str | None:
    """The enum's name: ``MODEL_PLACEHOLDER_M<n>`` for 1000 + n, else ``MODEL_<n>``."""
    if enum is None:
        return None
    return (
        f"MODEL_PLACEHOLDER_M{enum - PLACEHOLDER_BASE}"
        if enum >= PLACEHOLDER_BASE
        else f"MODEL_{enum}"
    )


_LABEL_NOISE = re.compile(r"[()]")


def model_name(label: str) -> str:
    """A display label as a model id: lower case, without parentheses, words joined by
    dashes (``Gemini 3.1 Pro (High)`` is ``gemini-3.1-pro-high``, the spelling ccusage and
    the rate tables' patterns use)."""
    return "-".join(_LABEL_NOISE.sub(" ", label).lower().split())


def step_records(
    row: int, step_type: int, status: int, metadata: bytes, payload: bytes | None
) -> list[Record]:
    """The usage records of one ``steps`` row: its ``metadata``'s, and those of the copy in
    ``payload`` (field 5) when it is given (the caller passes it only where it is not
    ``metadata`` itself)."""
    found = wire.fields(metadata)
    start, end = wire.seconds(found, 1), wire.seconds(found, 8)

    def records(within: wire.Message, where: str) -> list[Record]:
        blobs = [(f"{where}9", b) for b in wire.blobs(within, 9)]
        for retry in wire.blobs(within, 28):
            blobs += [(f"{where}28>2", b) for b in wire.blobs(wire.fields(retry), 2)]
        return [
            Record(usage(b), "steps", row, place, step_type, status, start, end, None)
            for place, b in blobs
        ]

    kept = records(found, "metadata>")
    if payload is not None:
        for copy in wire.blobs(wire.fields(payload), 5):
            kept += records(wire.fields(copy), "step_payload>5>")
    return kept


def gen_records(row: int, data: bytes) -> list[Record]:
    """The usage records of one ``gen_metadata`` row (1 -> 4 and 1 -> 17 -> 2), named by the
    row's display label (1 -> 21) or response model (1 -> 19) as :func:`model_name`."""
    kept: list[Record] = []
    for meta in wire.blobs(wire.fields(data), 1):
        found = wire.fields(meta)
        label = wire.text(found, 21) or wire.text(found, 19)
        name = model_name(label) if label else None
        timing = wire.blob(found, 9)
        start = wire.seconds(wire.fields(timing), 4) if timing is not None else None
        blobs = [("data>1>4", b) for b in wire.blobs(found, 4)]
        for retry in wire.blobs(found, 17):
            blobs += [("data>1>17>2", b) for b in wire.blobs(wire.fields(retry), 2)]
        kept += [
            Record(usage(b), "gen_metadata", row, place, None, None, start, None, name)
            for place, b in blobs
        ]
    return kept
