"""Protocol Buffers wire format without a schema: a message as its fields, by number.

agy ships no ``.proto`` files, so its blobs are read by field number (the numbers and their
meaning are in ``docs/agents/antigravity.md``). The wire format itself is decoded by the
maintained ``protobuf`` runtime (its C ``upb`` parser): a blob is parsed as the empty message
``google.protobuf.Empty``, which keeps every field as an unknown field, and
``google.protobuf.unknown_fields`` lists them. A blob that is not a valid message raises
:class:`WireError`, which the callers turn into an ISSUES row.
"""

from __future__ import annotations

from google.protobuf import empty_pb2, message, unknown_fields

#: Wire types (``protobuf``'s numbering).
VARINT, FIXED64, BYTES, GROUP, FIXED32 = 0, 1, 2, 3, 5

#: A decoded message: each field number's values in wire order, as (wire type, value: an
#: int, bytes, or for a group its fields).
Message = dict[int, list[tuple[int, object]]]


class WireError(ValueError):
    """A blob that does not decode as a protobuf message."""


def fields(blob: bytes) -> Message:
    """The fields of the message ``blob`` by number (a repeated field's values in order)."""
    holder = empty_pb2.Empty()
    try:
        holder.ParseFromString(blob)
    except message.DecodeError as error:
        raise WireError(str(error) or "not a protobuf message") from None
    found: Message = {}
    for field in unknown_fields.UnknownFieldSet(holder):
        found.setdefault(field.field_number, []).append((field.wire_type, field.data))
    return found


def number(found: Message, field: int) -> int | None:
    """The last varint value of ``field`` (the protobuf rule for a repeated scalar read as
    one), or None when the message does not carry it."""
    values = [v for w, v in found.get(field, ()) if w == VARINT and isinstance(v, int)]
    return values[-1] if values else None


def blobs(found: Message, field: int) -> list[bytes]:
    """Every length-delimited value of ``field`` (a sub-message, string or bytes), in order."""
    return [v for w, v in found.get(field, ()) if w == BYTES and isinstance(v, bytes)]


def blob(found: Message, field: int) -> bytes | None:
    """The last length-delimited value of ``field``, or None."""
    values = blobs(found, field)
    return values[-1] if values else None


def text(found: Message, field: int) -> str | None:
    """The last length-delimited value of ``field`` as UTF-8 text (None when absent, empty,
    or not UTF-8)."""
    value = blob(found, field)
    try:
        return value.decode("utf-8") or None if value is not None else None
    except UnicodeDecodeError:
        return None


def seconds(found: Message, field: int) -> float | None:
    """A ``{1: seconds, 2: nanos}`` timestamp at ``field`` as POSIX seconds, or None."""
    value = blob(found, field)
    if value is None:
        return None
    stamp = fields(value)
    whole = number(stamp, 1)
    return None if whole is None else whole + (number(stamp, 2) or 0) / 1e9
