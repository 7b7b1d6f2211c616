"""Each row's JSON line, kept beside the stored analysis it renders, for the next run.

When one log of a large tree changed, the run prices only that log's sessions again
(``analytics.cache.repriced``), but rendering every priced session as JSON then took longer than the
pricing: 55-80 ms for the 2,648 sessions of the 1 GB benchmark tree, against about 5 ms for
a few. A row's line depends only on its values and its table's columns and dtypes
(``report.json_rows``). So the lines of a rendered table are kept beside its stored analysis,
each under a 128-bit hash of its row (``DataFrame.hash_rows`` with two seeds), in a file
named for the table and a digest of its schema. The next run renders only the rows whose hash
is not kept, and takes the others' lines: a row with any value changed hashes otherwise
(short of a 128-bit collision), so the text is the one a full rendering gives.

Lines are looked for beside the analysis itself (the same analysis shown again, under other
options), then beside the previous analysis of the same paths (``Analysis.previous``: most
of its sessions are unchanged). Both were made by this code (keys and slots hold it), and
hashes are stable within one polars version (keys hold it too). An analysis not stored
(``--no-cache``, a window) is rendered whole.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import polars as pl

from analytics.render.report import json_rows

if TYPE_CHECKING:
    from analytics.engine.analyze import Analysis

#: The seeds of the two 64-bit row hashes that key a line.
SEEDS = (1, 2)
_HASHES = [f"_h{seed}" for seed in SEEDS]
_KEPT = pl.Schema({**dict.fromkeys(_HASHES, pl.UInt64()), "line": pl.String()})


def json_lines(result: Analysis, name: str, frame: pl.DataFrame) -> list[str]:
    """The JSON line of each row of ``frame`` (table ``name`` of ``result``, as shown), in
    order: kept ones reused, the rest rendered, and all kept beside ``result``."""
    if result.stored_as is None:
        return json_rows(frame)
    cache, key = result.stored_as
    stem = f"lines-{name}-{hashlib.sha256(str(frame.schema).encode()).hexdigest()[:16]}"
    hashed = pl.DataFrame(
        [frame.hash_rows(seed).alias(name) for seed, name in zip(SEEDS, _HASHES, strict=True)]
    )
    earlier = [key, *([result.previous[0]] if result.previous else [])]
    for candidate in earlier:
        kept = cache.load_beside(candidate, stem)
        if kept is None or kept.schema != _KEPT:
            continue
        lines = hashed.join(
            kept.unique(_HASHES, keep="first", maintain_order=True),
            on=_HASHES,
            how="left",
            maintain_order="left",
        )["line"]
        missing = lines.is_null()
        if not missing.any() and candidate == key:
            return lines.to_list()  # all kept beside this very analysis
        if missing.any():
            lines = lines.scatter(missing.arg_true(), json_rows(frame.filter(missing)))
        break
    else:
        lines = pl.Series("line", json_rows(frame), pl.String)
    cache.save_beside_later(key, {stem: hashed.with_columns(lines.alias("line"))})
    return lines.to_list()
