"""Renaming what makes a call or a session unique, per copy of a real log, for the size trees.

A benchmark tree repeats the real logs again and again; each repetition (a *copy*) must hold
calls and sessions of its own, or the readers would rightly count them once. Every rule here
is a function of (value, copy) only, so a value seen twice inside one copy is renamed the same
both times: what the real data relates (a fork's lines sharing their source's ids, a reply
naming its parent) stays related within the copy, and no copy shares an id with another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: A uuid in its usual text form.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
UUID_BYTES = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def uuid_of(value: str, copy: int) -> str:
    """``value`` (a uuid) with its first eight hex digits XORed with ``copy``: one-to-one
    within a copy (no two ids merge) and different in every copy; its length, and so any
    file name or binary record holding it, is unchanged."""
    return f"{int(value[:8], 16) ^ copy:08x}{value[8:]}"


def uuids(text: str, copy: int) -> str:
    """``text`` with every uuid renamed for ``copy``."""
    return UUID.sub(lambda m: uuid_of(m.group(0), copy), text)


def uuid_bytes(data: bytes, copy: int) -> bytes:
    """``uuids`` on bytes (a database file, whose length must not change)."""
    return UUID_BYTES.sub(lambda m: uuid_of(m.group(0).decode(), copy).encode(), data)


def keyed(keys: Iterable[str]) -> re.Pattern[str]:
    """A pattern for the JSON string values of ``keys``, as the agents write them (no space
    after the colon)."""
    return re.compile(r'"(' + "|".join(map(re.escape, keys)) + r')":"([^"\\]*)"')


def suffixed(text: str, pattern: re.Pattern[str], copy: int) -> str:
    """``text`` with the values ``pattern`` (from ``keyed``) finds made ``copy``'s by a
    suffix; values holding a uuid are left to ``uuids`` (a session directory named after one
    must keep matching it)."""

    def rename(m: re.Match[str]) -> str:
        if UUID.search(m.group(2)):
            return m.group(0)
        return f'"{m.group(1)}":"{m.group(2)}-{copy:x}"'

    return pattern.sub(rename, text)


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def same_length(value: bytes, copy: int) -> bytes:
    """``value`` (an opaque id such as a server response id, base64url-like) with its last
    four characters replaced by ``copy`` in base 64: the length stays, so a protobuf record
    holding it stays valid; different in each of 16.7 million copies."""
    digits = "".join(_ALPHABET[(copy >> shift) & 63] for shift in (18, 12, 6, 0))
    return value[:-4] + digits.encode()
