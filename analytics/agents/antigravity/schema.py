"""The parts of agy's protobuf messages this reader uses, declared by field number.

agy ships no ``.proto`` files. The field numbers and meanings below were read off the real
database and agree with the names ccusage took from the descriptors in agy's binary
(``docs/agents/antigravity.md``). They are declared here as a proto2 schema built at import
time, so the maintained ``protobuf`` runtime (its C ``upb`` parser) does the wire format:
parsing a blob touches every byte in C and makes Python objects only for the fields named
here. Every other field stays an unknown field, unparsed; in a ``Usage`` one is reported
(``unknown``). A blob that is not a protobuf message raises :class:`DecodeError`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message,
    message_factory,
    unknown_fields,
)

DecodeError = message.DecodeError

_F = descriptor_pb2.FieldDescriptorProto
_NUMBER, _BYTES, _MESSAGE = _F.TYPE_UINT64, _F.TYPE_BYTES, _F.TYPE_MESSAGE
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

#: Each message: (field name, number, type, label, message type of a sub-message).
MESSAGES: dict[str, list[tuple[str, int, int, int, str]]] = {
    # {1: seconds, 2: nanos}.
    "Timestamp": [("seconds", 1, _NUMBER, _ONE, ""), ("nanos", 2, _NUMBER, _ONE, "")],
    # ModelUsageStats (ccusage's names): 1 model enum (1000 + n = MODEL_PLACEHOLDER_M<n>),
    # 2 uncached input, 3 output (thinking included), 4 cache write, 5 cache read, 6 API
    # provider enum, 7 message id, 8 a {key, value} pair (the session id), 9 thinking and
    # 10 visible output (the parts of 3), 11 the server's response id, 12 provider's id.
    "Usage": [
        ("model", 1, _NUMBER, _ONE, ""),
        ("input_tokens", 2, _NUMBER, _ONE, ""),
        ("output_tokens", 3, _NUMBER, _ONE, ""),
        ("cache_write_tokens", 4, _NUMBER, _ONE, ""),
        ("cache_read_tokens", 5, _NUMBER, _ONE, ""),
        ("provider", 6, _NUMBER, _ONE, ""),
        ("message_id", 7, _BYTES, _ONE, ""),
        ("session", 8, _BYTES, _MANY, ""),
        ("thinking_output_tokens", 9, _NUMBER, _ONE, ""),
        ("response_output_tokens", 10, _NUMBER, _ONE, ""),
        ("response_id", 11, _BYTES, _ONE, ""),
        ("provider_message_id", 12, _BYTES, _ONE, ""),
    ],
    # A retry_infos entry: 2 the attempt's usage.
    "Retry": [("usage", 2, _MESSAGE, _ONE, "Usage")],
    # steps.metadata (CortexStepMetadata): 1 created, 8 completed, 9 usage, 28 retry_infos.
    "StepMetadata": [
        ("created", 1, _MESSAGE, _ONE, "Timestamp"),
        ("completed", 8, _MESSAGE, _ONE, "Timestamp"),
        ("usage", 9, _MESSAGE, _MANY, "Usage"),
        ("retries", 28, _MESSAGE, _MANY, "Retry"),
    ],
    # steps.step_payload: 5 a copy of the step's metadata.
    "StepPayload": [("metadata", 5, _MESSAGE, _MANY, "StepMetadata")],
    # gen_metadata.data 1 (ChatModelMetadata): 3 model enum, 4 usage, 9 -> 4 time, 17 retry
    # entries, 19 response model, 21 display label.
    "Timing": [("started", 4, _MESSAGE, _ONE, "Timestamp")],
    "Generation": [
        ("model", 3, _NUMBER, _ONE, ""),
        ("usage", 4, _MESSAGE, _MANY, "Usage"),
        ("timing", 9, _MESSAGE, _ONE, "Timing"),
        ("retries", 17, _MESSAGE, _MANY, "Retry"),
        ("response_model", 19, _BYTES, _ONE, ""),
        ("label", 21, _BYTES, _ONE, ""),
    ],
    "GenMetadata": [("generation", 1, _MESSAGE, _MANY, "Generation")],
    # trajectory_metadata_blob.data: 1 -> 1 the workspace's file:// URI.
    "Workspace": [("uri", 1, _BYTES, _ONE, "")],
    "TrajectoryMetadata": [("workspace", 1, _MESSAGE, _MANY, "Workspace")],
}


def _classes() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(
        name="agentcost/antigravity_by_number.proto",
        package="agentcost.antigravity",
        syntax="proto2",
    )
    for name, declared in MESSAGES.items():
        described = file.message_type.add(name=name)
        for field, number, kind, label, type_name in declared:
            added = described.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                added.type_name = f".agentcost.antigravity.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.{name}"))
        for name in MESSAGES
    }


_CLASSES = _classes()
StepMetadata = _CLASSES["StepMetadata"]
StepPayload = _CLASSES["StepPayload"]
GenMetadata = _CLASSES["GenMetadata"]
TrajectoryMetadata = _CLASSES["TrajectoryMetadata"]


def unknown(parsed: Any) -> set[int]:
    """The numbers of the fields of ``parsed`` that its declaration does not name (or that
    came with another wire type than declared)."""
    return {field.field_number for field in unknown_fields.UnknownFieldSet(parsed)}


def text(value: bytes) -> str | None:
    """A string field's bytes as text (None when empty; bytes that are not UTF-8 replaced)."""
    return value.decode("utf-8", errors="replace") or None


def seconds(stamp: Any) -> float:
    """A parsed ``Timestamp`` as POSIX seconds."""
    return float(stamp.seconds) + float(stamp.nanos) / 1e9
