"""OpenCode's log checked against itself: each LLM step's usage is written twice, on its
``step-finish`` part (what agentcost counts) and on its assistant message (``tokens``, which
OpenCode overwrites with each step's, so it holds the message's last step). The check reads
the stores again and compares every counted call that is its message's last step with its
message's tokens, in all five counts (input, output, reasoning, cache read and write)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import polars as pl

from analytics.agents.checks import check_row, total
from analytics.agents.opencode import database, legacy

_COUNTS = ("input", "output", "reasoning", "cache.read", "cache.write")

#: Every ``step-finish`` part with its message's tokens, and whether it is the message's
#: last step (the one whose tokens the message keeps).
STEP_COLUMNS = {
    "line": (pl.Int64(), "p.rowid"),
    "part": (pl.String(), "p.id"),
    "last": (
        pl.Int64(),
        "row_number() OVER (PARTITION BY p.message_id ORDER BY p.time_created DESC, p.id DESC)",
    ),
    **{
        f"{side}.{name}": (pl.Int64(), f"{alias}.data ->> '$.tokens.{name}'")
        for side, alias in (("part", "p"), ("message", "m"))
        for name in _COUNTS
    },
}
STEPS = f"""{database.select(STEP_COLUMNS)}
FROM (SELECT rowid, id, message_id, time_created, data FROM part WHERE json_valid(data)) p
JOIN (SELECT id, data FROM message WHERE json_valid(data)) m ON m.id = p.message_id
WHERE p.data ->> '$.type' = 'step-finish'
"""


def steps_of(fetch: database.Fetch) -> pl.DataFrame:
    """The ``step-finish`` parts of a store (read through ``fetch``), with their messages'
    tokens."""
    return fetch(STEPS, database.schema(STEP_COLUMNS))


def read_steps(files: Sequence[Path]) -> pl.DataFrame:
    """The ``step-finish`` parts of the databases and legacy records ``files``, each with
    where the fold read it (``file``; ``line``, the row in a database, null for a record):
    files that cannot be read are left out (the fold reported them)."""
    frames = [pl.DataFrame(schema={**database.schema(STEP_COLUMNS), "file": pl.String()})]
    for path in files:
        if not legacy.claims(path):
            try:
                found = database.opened(path, steps_of)
            except database.UnreadableError:
                continue
            frames.append(found.with_columns(pl.lit(str(path)).alias("file")))
    records = [path for path in files if legacy.claims(path)]
    if records:
        connection, listed, _ = legacy.load(records)
        with closing(connection):
            found = steps_of(database.fetcher(connection))
        names = pl.Series([str(path) for path in listed], dtype=pl.String)
        frames.append(
            found.with_columns(
                names.gather(found["line"] - 1).alias("file"), pl.lit(None, pl.Int64).alias("line")
            )
        )
    return pl.concat(frames)


def check(steps: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """The ``OPENCODE steps`` row: ``steps`` (``read_steps``) against ``calls`` (the calls
    agentcost counted from them, found by where they were read). A counted call that is its
    message's last step agrees when its part's five counts equal its message's; ``tokens``
    is those calls' input plus output as agentcost counted them, ``checked_tokens`` their
    messages' five counts summed."""
    counted = steps.join(
        calls.select(
            pl.col("source_file").alias("file"),
            pl.col("source_line").alias("line"),
            "session_id",
            "input_tokens",
            "output_tokens",
        ),
        on=["file", "line"],
        how="inner",
        nulls_equal=True,
    )
    compared = counted.filter(pl.col("last") == 1)
    agrees = pl.all_horizontal(
        pl.col(f"part.{name}").eq_missing(pl.col(f"message.{name}")) for name in _COUNTS
    )
    checked = compared.with_columns(
        pl.sum_horizontal(*(pl.col(f"message.{name}") for name in _COUNTS)).alias("message")
    )
    return check_row(
        "OPENCODE steps",
        sessions=counted["session_id"].n_unique(),
        calls=counted.height,
        usage_lines=steps.height,
        repeated_lines=steps.height - counted.height,
        agreeing=compared.filter(agrees).height,
        disagreeing=compared.filter(~agrees).height,
        tokens=total(compared, "input_tokens", "output_tokens"),
        checked=total(checked, "message"),
        compared="each call's step-finish tokens against its assistant message's",
    )


def log_check(files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame:
    """The ``OPENCODE steps`` row of the stores ``files`` and the calls counted from them."""
    return check(read_steps([Path(file) for file in files]), calls)
