"""A large OpenCode database cut into slices of session trees, each folded on its own.

A fold holds every row it reads at once (``fold``); the parts of a 1 GB database (1.4 million
rows) and the frames made of them took most of a gigabyte. A slice's fold is the whole fold's
restricted to its sessions when nothing a fold relates crosses slices:

* a session's sub-agent tree (``session.parent_id``): its calls are numbered as its root's,
  so a slice holds whole trees (a part's session without a ``session`` row is a root);
* a fork's copy: a ``step-finish`` part counts once among those whose message was created at
  the same millisecond (``fold``). The fold checks it after the slices: where two slices hold
  steps of one such stamp, the database is folded at once instead.

The slices hold about ``SLICE_PARTS`` parts each (one tree's more at most), told from the
``session`` rows and the ``part`` table's ``session_id`` index, without reading any JSON.
"""

from __future__ import annotations

import polars as pl

from analytics.agents.opencode.database import (
    _ROOTS,
    Fetch,
    Sessions,
    sessions_of,
)

#: The parts a slice holds (about: whole trees). A slice's parts and messages are read in
#: one query each, so this bounds what a read holds besides the tables folded so far: on the
#: 1 GB bench database the fold's peak was 475 MiB with 131,072, 428 with 65,536 (22 slices,
#: no slower).
SLICE_PARTS = 65_536

#: The parts of each session named by a part (through the ``session_id`` index).
_PARTS = "SELECT session_id, count(*) FROM part GROUP BY session_id"


def plan(fetch: Fetch) -> tuple[list[Sessions], pl.DataFrame]:
    """The slices of the database read through ``fetch`` (each the ids of the sessions of
    whole sub-agent trees, as its rows name them, about ``SLICE_PARTS`` parts: ``_packed``;
    none where a part names no session) and its sessions (``database.sessions_of``)."""
    sessions = sessions_of(fetch)
    parts = fetch(_PARTS, {"session": pl.String(), "parts": pl.Int64()})
    if parts["session"].null_count():  # parts of no session: no slice names them
        return [], sessions
    units = (
        pl.concat([sessions.select("session"), parts.select("session")])
        .unique(maintain_order=True)
        .join(sessions.select("session", "root"), on="session", how="left", maintain_order="left")
        .join(parts, on="session", how="left", maintain_order="left")
        .select(
            "session",
            pl.col("parts").fill_null(0),
            pl.col("root").fill_null(pl.col("session")).alias("unit"),
        )
    )
    return _packed(units), sessions


def _packed(units: pl.DataFrame) -> list[Sessions]:
    """The sessions of ``units`` (``session``, ``parts``, ``unit``) in slices of whole units,
    in the order of the units (their roots' ids: the calls and items of the slices one
    after another are in the order of the whole fold's, by session): a unit joins the slice
    its first part falls in when the parts are cut every ``SLICE_PARTS`` (a slice holds at
    most one unit's parts more)."""
    sizes = units.group_by("unit").agg(pl.col("parts").sum(), pl.col("session")).sort("unit")
    cut = (pl.col("parts").cum_sum() - pl.col("parts")) // SLICE_PARTS
    sliced = sizes.group_by(cut.alias("slice"), maintain_order=True).agg(
        pl.col("session").list.explode(keep_nulls=False, empty_as_null=False)
    )
    return [tuple(sessions) for sessions in sliced["session"]]


#: What changes when a session's rows do (OpenCode sets ``time_updated`` on every write of a
#: row): per session named by a row, with its tree's root, its part and message rows' count,
#: ids (``rowid``) and times, and its ``session`` row's parent and times, read from the
#: columns alone.
_PRINTED = f"""{_ROOTS},
counted AS (
    SELECT session_id, 0 AS kind, count(*) AS n, sum(rowid) AS ids,
           sum(coalesce(time_updated, time_created)) AS times,
           max(coalesce(time_updated, time_created)) AS last
    FROM part GROUP BY session_id
    UNION ALL
    SELECT session_id, 1, count(*), sum(rowid), sum(coalesce(time_updated, time_created)),
           max(coalesce(time_updated, time_created))
    FROM message GROUP BY session_id
    UNION ALL
    SELECT id, 2, rowid, coalesce(parent_id, ''), time_created, time_updated FROM session
)
SELECT coalesce(t.root_id, c.session_id), c.session_id, kind, n, ids, times, last
FROM counted c LEFT JOIN tree t ON t.id = c.session_id
"""


def prints(fetch: Fetch) -> pl.DataFrame:
    """Each session tree's print (``session_id``: its root; ``print``): a hash of what its
    sessions' rows are (``_PRINTED``), which changes when a row of the tree is added,
    removed or written again."""
    text, whole = pl.String(), pl.Int64()
    rows = fetch(
        _PRINTED,
        {"root": text, "session": text, "kind": whole, "n": whole, "ids": text, "times": whole,
         "last": whole},
    )  # fmt: skip
    # a sum of the rows' hashes (each cut to 40 bits: no overflow) is the same in any order
    hashed = pl.struct(rows.columns[1:]).hash(seed=7) // (1 << 24)
    return rows.group_by(pl.col("root").alias("session_id")).agg(
        hashed.cast(whole).sum().alias("print")
    )
