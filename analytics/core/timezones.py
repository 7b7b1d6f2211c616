"""Resolve the user's timezone: named (``--timezone Europe/Paris``) or the machine's own."""

from __future__ import annotations

import os
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from analytics.core.errors import UsageError


def resolve_zone(name: str | None) -> ZoneInfo:
    """The named IANA zone, or the local zone (``$TZ``, ``/etc/localtime``), else UTC.

    A name must also be one polars can convert to (it rejects a few of the system database's
    entries, such as ``Factory``), since every grouping by day happens in polars.
    """
    if name:
        import polars as pl  # here: the local zone is found without it (``local_zone``)

        try:
            zone = ZoneInfo(name)
            pl.select(pl.lit(None, pl.Datetime("ms", "UTC")).dt.convert_time_zone(name))
        except (ZoneInfoNotFoundError, ValueError, pl.exceptions.PolarsError):
            raise UsageError(
                f"unknown timezone {name!r}; use an IANA name such as Europe/Paris or UTC"
            ) from None
        return zone
    return local_zone()


def local_zone() -> ZoneInfo:
    """The machine's zone: ``$TZ``, else where ``/etc/localtime`` links to, else UTC."""
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
