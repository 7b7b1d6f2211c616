"""Resolve the user's timezone: named (``--timezone Europe/Paris``) or the machine's own."""

from __future__ import annotations

import os
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from analytics.errors import UsageError


def resolve_zone(name: str | None) -> ZoneInfo:
    """The named IANA zone, or the local zone (``$TZ``, ``/etc/localtime``), else UTC."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise UsageError(
                f"unknown timezone {name!r}; use an IANA name such as Europe/Paris or UTC"
            ) from None
    return _local_zone()


def _local_zone() -> ZoneInfo:
    configured = os.environ.get("TZ", "").lstrip(":")
    if configured:
        try:
            return ZoneInfo(configured)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    link = Path("/etc/localtime")
    if link.is_symlink():
        target = str(link.resolve())
        if "zoneinfo/" in target:
            try:
                return ZoneInfo(target.split("zoneinfo/", 1)[1])
            except (ZoneInfoNotFoundError, ValueError):
                pass
    return ZoneInfo("UTC")
