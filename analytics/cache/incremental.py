"""Bring a stored group of sessions up to date by analysing only the sessions that changed.

A live session appends to one log. Its group of sessions (``pipeline.py``) then misses the
result cache, and re-analysing the whole group costs about as much as the group is large.
But sessions are independent (a session's calls, totals and tokens depend on its own files
and per-call records only), so the group's previous result stays right for every session
none of whose files changed. ``patch`` keeps those rows, analyses the changed files with the
other files of their sessions, and puts the two together, in the order a fresh analysis
gives.

It declines (returns None, and the group is analysed whole) whenever the shortcut could give
another answer than a fresh analysis: a file of the group went away; a re-read file turns
out to hold a session that was kept; the per-call records (session store, OTel) of a kept
session changed; the stored issues include one about another file (a session store's rows,
which cannot be told apart by session); or most of the group would be re-read anyway.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from analytics.agents.discover import LogFile

#: Share of a group's files above which re-reading them is not worth the bookkeeping.
MOST = 0.5

Identity = list[int]
Analyse = Callable[[list[LogFile]], Mapping[str, pl.DataFrame]]


def identities(logs: Sequence[LogFile]) -> dict[str, Identity] | None:
    """Each log's identity as the cache key sees it (size, mtime, ctime, inode), by path;
    None when a log has no stat."""
    found: dict[str, Identity] = {}
    for log in logs:
        if log.stat is None:
            return None
        found[str(log.path)] = _identity(log.stat)
    return found


def session_digests(records: pl.DataFrame) -> dict[str, str]:
    """A digest of each session's per-call records (rows in any order), by session id."""
    if not records.height:
        return {}
    hashed = records.select("session_id", pl.struct(pl.all()).hash(seed=7).alias("_h"))
    per_session = hashed.group_by("session_id").agg(
        pl.col("_h").sort().cast(pl.String).str.join(" ").hash(seed=7).cast(pl.String)
    )
    return dict(per_session.iter_rows())


def patch(
    stale: Mapping[str, pl.DataFrame],
    note: Mapping[str, Any],
    logs: Sequence[LogFile],
    analyse: Analyse,
    digests: Callable[[list[str]], dict[str, str]],
) -> dict[str, pl.DataFrame] | None:
    """The group's tables for ``logs``, from its previous tables ``stale`` (with the note
    they were stored with: ``files``, ``session_records``) and an analysis of the sessions
    whose files changed (``analyse``); None when that shortcut does not apply.
    ``digests(ids)`` gives the current ``session_digests`` of sessions ``ids``."""
    before, now = note.get("files"), identities(logs)
    if not isinstance(before, dict) or now is None or set(before) - set(now):
        return None
    changed = [path for path, identity in now.items() if before.get(path) != identity]
    sessions = stale["sessions"]
    touched = pl.col("source_files").list.eval(pl.element().is_in(changed)).list.any()
    affected = sessions.filter(touched)
    reread = set(changed) | set(affected["source_files"].explode().drop_nulls().to_list())
    if not changed or len(reread) > MOST * len(now):
        return None
    if not stale["issues"]["file"].is_in(pl.Series(list(now), dtype=pl.String).implode()).all():
        return None  # an issue of another file (a session store's row) names no session's log
    kept = sessions.filter(~touched)["session_id"].to_list()
    stored_records = note.get("session_records")
    if not isinstance(stored_records, dict) or digests(kept) != {
        session: digest for session, digest in stored_records.items() if session in set(kept)
    }:
        return None
    fresh = analyse([log for log in logs if str(log.path) in reread])
    if set(fresh["sessions"]["session_id"].to_list()) & set(kept):
        return None
    mine = pl.col("session_id").is_in(pl.Series(kept, dtype=pl.String).implode())
    files = pl.Series(sorted(reread), dtype=pl.String).implode()
    order = {
        "calls": ["session_id", "event_seq"],
        "sessions": ["start_time", "session_id"],
        "model_metrics": ["source_file", "source_line"],
        "log_prices": ["source_file", "source_line"],
    }
    patched = {
        name: pl.concat([stale[name].filter(mine), fresh[name]]).sort(
            by, nulls_last=False, maintain_order=True
        )
        for name, by in order.items()
    }
    patched["issues"] = pl.concat(
        [stale["issues"].filter(~pl.col("file").is_in(files)), fresh["issues"]]
    )
    return patched


def _identity(stat: os.stat_result) -> Identity:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]
