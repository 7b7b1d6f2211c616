"""agy's database checked against itself: a call's usage is written up to four times (its
step's metadata, the retry entry, the payload copy, and a planner call's ``gen_metadata``
row with its retry entry). The check reads the databases again and compares, call by call,
every copy's counters, and the counted calls' tokens with those of the copy a planner call's
``gen_metadata`` row holds (a background call's step, where it has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from analytics.agents.antigravity import database
from analytics.agents.checks import check_row, total


def log_check(files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame:
    """The ``ANTIGRAVITY copies`` row of ``files`` against ``calls`` (agentcost's calls of
    them: ``api_call_id``, ``input_tokens``, ``output_tokens``)."""
    rows = [
        (u.key or f"{path}#{r.table}:{r.row}:{r.place}", r.table,
         u.uncached + u.cache_read + u.cache_write, u.output,
         [u.uncached, u.cache_read, u.cache_write, u.output, u.thinking])
        for path in files for r in database.read(Path(path)).usage for u in (r.usage,)
    ]  # fmt: skip
    schema: dict[str, pl.DataType] = {
        "key": pl.String(), "table": pl.String(), "input": pl.Int64(), "output": pl.Int64(),
        "counters": pl.List(pl.Int64()),
    }  # fmt: skip
    copies = pl.DataFrame(rows, schema=schema, orient="row")
    per_call = copies.group_by("key", maintain_order=True).agg(
        (pl.col("counters").n_unique() == 1).alias("agree"),
        (pl.col("input") + pl.col("output"))
        .sort_by(pl.col("table") != "gen_metadata")
        .first()
        .alias("checked"),
    )
    return check_row(
        "ANTIGRAVITY copies",
        sessions=calls.select("session_id").n_unique() if "session_id" in calls.columns else 0,
        calls=calls.height,
        usage_lines=copies.height,
        repeated_lines=copies.height - per_call.height,
        agreeing=per_call.filter("agree").height,
        disagreeing=per_call.filter(~pl.col("agree")).height,
        tokens=total(calls, "input_tokens", "output_tokens"),
        checked=total(per_call, "checked"),
        compared="each call's tokens against its gen_metadata copy (a background call's step)",
    )
