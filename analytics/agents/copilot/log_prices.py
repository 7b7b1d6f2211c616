"""The log's own Copilot prices, read: every ``tokenDetails`` entry as a LOG_PRICES row.

Copilot CLI writes each call's itemised bill beside its tokens: a ``tokenDetails`` list on
``session.usage_record`` lines and compaction usage, and ``token_details_json`` on
session-store rows (schema doc §0b.2, §10)::

    [{"tokenType": "input", "tokenCount": 4, "costPerBatch": 200000000000,
      "batchSize": 1000000, "model": "claude-sonnet-5.5"}, ...]

Each entry is a list price: ``costPerBatch / batchSize`` nano-AIU per token. What the prices
become after CALLS (a rate table pricing the models the bundled table lacks, ``agentcost rates
learn``) is agent-agnostic and lives in ``core.pricing.learned``. Bring-your-own-key calls are
not billed by Copilot, so their entries teach nothing and are skipped.
"""

from __future__ import annotations

import polars as pl

from analytics.core.pricing.learned import TOKEN_TYPES
from analytics.core.schema import LOG_PRICES, conform, empty

_ENTRIES = pl.List(
    pl.Struct(
        {
            "tokenType": pl.String(),
            "costPerBatch": pl.String(),
            "batchSize": pl.Int64(),
            "model": pl.String(),
        }
    )
)


def log_prices(lines: pl.DataFrame, observed: pl.DataFrame) -> pl.DataFrame:
    """Every price the logs quote (``schema.LOG_PRICES``), from their priced lines and
    OBSERVED_USAGE.

    ``lines`` are the log lines whose ``tokenDetails`` is a list, bring-your-own-key lines
    left out (``engine_pass.PRICED_LINES``: the engine's pass finds them), with
    ``token_details``, ``model`` and ``timestamp`` (an entry without its own ``model`` is the
    line's); ``observed`` rows (session-store, OTel) need ``token_details``, ``model`` and
    ``created_at``. Shapes without prices (the ``{"input": {"tokenCount": 15}}`` object of
    1.0.63 shutdowns) give no rows. Decoded as whole columns.

    >>> line = '[{"tokenType": "output", "costPerBatch": 500000000000, "batchSize": 1000000}]'
    >>> rows = pl.DataFrame({"source_file": ["s.db"], "source_line": [1], "session_id": ["a"],
    ...     "model": ["claude-haiku-4.5"], "token_details": [line], "created_at": [None]})
    >>> log_prices(pl.DataFrame(), rows).select("model", "token_type", "cost_per_batch").row(0)
    ('claude-haiku-4.5', 'output', '500000000000')
    """
    frames = []
    if "token_details" in lines.columns and lines.height:
        frames.append(_entries(lines, pl.col("timestamp")))
    if "token_details" in observed.columns and observed.height:
        frames.append(_entries(observed, pl.col("created_at")))
    present = [frame for frame in frames if frame.height]
    return pl.concat(present) if present else empty(LOG_PRICES)


def _entries(frame: pl.DataFrame, when: pl.Expr) -> pl.DataFrame:
    """The priced ``tokenDetails`` entries of ``frame``'s lines, one row each."""
    details = pl.col("token_details")
    listed = frame.filter(details.str.strip_chars_start().str.starts_with("[").fill_null(False))
    picked = listed.select(
        "source_file",
        "source_line",
        "session_id",
        when.alias("timestamp"),
        pl.col("model").alias("line_model"),
        "token_details",
    )
    try:
        decoded = picked.with_columns(details.str.json_decode(_ENTRIES).alias("entry"))
    except pl.exceptions.ComputeError:
        # A list that is not JSON (a torn or hand-edited line) quotes no price: only the
        # lines that decode are read (looked at one by one only when some line does not).
        readable = pl.Series([_decodes(text) for text in picked["token_details"]], dtype=pl.Boolean)
        decoded = picked.filter(readable).with_columns(
            details.str.json_decode(_ENTRIES).alias("entry")
        )
    entry = pl.col("entry")
    rows = (
        decoded.drop("token_details")
        .explode("entry")
        .with_columns(
            pl.coalesce(entry.struct["model"], pl.col("line_model"))
            .str.to_lowercase()
            .alias("model"),
            entry.struct["tokenType"].alias("token_type"),
            entry.struct["costPerBatch"].alias("cost_per_batch"),
            entry.struct["batchSize"].alias("batch_size"),
        )
        .filter(
            pl.col("model").is_not_null()
            & pl.col("token_type").is_in(list(TOKEN_TYPES))
            & pl.col("cost_per_batch").is_not_null()
            & pl.col("batch_size").is_not_null()
        )
    )
    return conform(rows, LOG_PRICES)


def _decodes(text: str | None) -> bool:
    """Whether one ``tokenDetails`` text decodes as a list of entries."""
    try:
        pl.Series([text], dtype=pl.String).str.json_decode(_ENTRIES)
    except pl.exceptions.ComputeError:
        return False
    return True
