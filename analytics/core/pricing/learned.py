"""A rate table learned from the prices the logs quote (LOG_PRICES): reconcile, convert, serve.

``totalNanoAiu = sum(tokenCount x costPerBatch / batchSize)`` and USD = nano-AIU / 1e11, so
each quoted price is ``costPerBatch / (batchSize x 1000)`` AI credits per million tokens, the
unit of the bundled ``github-copilot`` table. New models ship every month; a model that table
does not know yet is priced exactly from these prices (``core.pricing.price``), and
``agentcost rates learn`` prints them as a rate table to keep. The rows come from the agent
that quotes prices (``agents.copilot.log_prices``).

Prices are list prices, the same for every user, so a price seen in one session prices
another session's calls of that model. Where two sightings of one model and token type
disagree (a price change, or a long-context tier the log does not name), the newest is used
and an issue names both. A price that cannot be written exactly as a rate-table price is never
rounded: it is reported and left out.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal, DivisionByZero, Inexact, InvalidOperation, localcontext

import polars as pl

from analytics.core.errors import AgentcostError
from analytics.core.pricing.rates import (
    ModelRate,
    PricePeriod,
    PriceSet,
    RateTable,
    dump_rate_table,
    fits_money,
)
from analytics.core.schema import ISSUES, conform
from analytics.core.words import counted

#: The token types a quoted price names (LOG_PRICES ``token_type``), and the rate-table price
#: key each one fills.
TOKEN_TYPES = {
    "input": "input",
    "cache_read": "cache_read",
    "cache_write": "cache_write_5m",
    "output": "output",
}
#: The name of a table learned from logs.
LEARNED_NAME = "log-rates"
#: What every learned table says it is.
LEARNED_SOURCE = (
    "the Copilot CLI logs' own prices (tokenDetails / token_details_json: costPerBatch nano-AIU "
    "per batchSize tokens; 1e9 nano-AIU = 1 AI credit = $0.01)"
)
_USD_PER_CREDIT = Decimal("0.01")


def learned_prices(prices: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the price in force per model and token type, ISSUES about the prices seen).

    The first frame has ``model``, ``token_type``, ``credits_per_million`` (exact decimal text,
    the rate-table price), ``sightings`` (how many entries quoted it or another price),
    ``prices_seen`` and the provenance of the newest sighting (``source_file``,
    ``source_line``, ``session_id``, ``timestamp``), whose price is the one used. Issues: a
    model and token type quoted at more than one price (a warning at the newest sighting),
    and a price that cannot be written exactly (an error at the line).
    """
    converted = _with_credits(prices)
    usable = converted.filter(pl.col("credits_per_million").is_not_null())
    newest_first = usable.sort(
        "timestamp", "source_file", "source_line", descending=True, nulls_last=True
    )
    keys = ["model", "token_type"]
    learned = (
        newest_first.group_by(keys, maintain_order=True)
        .agg(
            pl.col("credits_per_million").first(),
            pl.len().alias("sightings"),
            pl.col("credits_per_million").n_unique().alias("prices_seen"),
            pl.col("source_file", "source_line", "session_id", "timestamp").first(),
            # The newest sighting of each other price, for the conflict message.
            pl.struct("credits_per_million", "source_file", "source_line", "timestamp")
            .filter(pl.col("credits_per_million") != pl.col("credits_per_million").first())
            .first()
            .alias("older"),
        )
        .sort(keys)
    )
    return learned.drop("older"), _issues(converted, learned)


def _with_credits(prices: pl.DataFrame) -> pl.DataFrame:
    """``prices`` with ``credits_per_million``: exact text, null where it cannot be exact.

    The conversion runs once per distinct (cost per batch, batch size), a handful per tree.
    """
    pairs = prices.select("cost_per_batch", "batch_size").unique()
    credits = [_credits_per_million(c, b) for c, b in pairs.iter_rows()]
    table = pairs.with_columns(pl.Series("credits_per_million", credits, dtype=pl.String()))
    return prices.join(table, on=["cost_per_batch", "batch_size"], how="left", nulls_equal=True)


def _credits_per_million(cost_per_batch: str, batch_size: int) -> str | None:
    """AI credits per million tokens for a nano-AIU price per batch, or None when the price is
    not a finite, non-negative decimal whose dollars per token fit ``schema.MONEY`` exactly.

    >>> _credits_per_million("2500000000", 1000000), _credits_per_million("1", 3)
    ('2.5', None)
    """
    with localcontext(prec=80) as ctx:
        ctx.traps[Inexact] = True
        try:
            per_million = ctx.divide(Decimal(cost_per_batch), Decimal(batch_size) * 1000)
        except (InvalidOperation, Inexact, DivisionByZero):
            return None
        if not per_million.is_finite() or per_million < 0:
            return None
        if not fits_money((per_million * _USD_PER_CREDIT).scaleb(-6)):
            return None
    return format(per_million.normalize(), "f")


def _issues(converted: pl.DataFrame, learned: pl.DataFrame) -> pl.DataFrame:
    """Conflicting prices (warnings) and prices that cannot be exact (errors)."""
    older = pl.col("older")
    conflict = pl.format(
        "the log quotes {} prices for {} {} tokens: {} AI credits per million tokens here "
        "({}), {} at {}:{} ({}); agentcost uses the newest, {}. Hint: a price change or a "
        "long-context tier; pin the price you want with --rates github-copilot+FILE",
        pl.col("prices_seen"),
        pl.col("model"),
        pl.col("token_type"),
        pl.col("credits_per_million"),
        _when(pl.col("timestamp")),
        older.struct["credits_per_million"],
        older.struct["source_file"],
        older.struct["source_line"],
        _when(older.struct["timestamp"]),
        pl.col("credits_per_million"),
    ).alias("message")
    inexact = pl.format(
        "the log's price for {} {} tokens, {} nano-AIU per {} tokens, cannot be written "
        "exactly as a rate-table price; left out, never rounded. Hint: price the model "
        "with --rates github-copilot+FILE",
        "model",
        "token_type",
        "cost_per_batch",
        "batch_size",
    ).alias("message")
    found = [
        learned.filter(pl.col("prices_seen") > 1).select(*_at_line("warning"), conflict),
        converted.filter(pl.col("credits_per_million").is_null()).select(
            *_at_line("error"), inexact
        ),
    ]
    return conform(pl.concat(found), ISSUES)


def _at_line(severity: str) -> list[pl.Expr]:
    """The file, line and severity columns of an issue at a price's line."""
    return [
        pl.col("source_file").alias("file"),
        pl.col("source_line").alias("line"),
        pl.lit(severity).alias("severity"),
    ]


def _when(moment: pl.Expr) -> pl.Expr:
    """A sighting's time as ISO text, or ``time unknown``."""
    return moment.dt.strftime("%Y-%m-%dT%H:%M:%SZ").fill_null("time unknown")


def learned_rate_table(prices: pl.DataFrame) -> RateTable | None:
    """The prices in force (:func:`learned_prices`) as a rate table in AI credits, or None when
    no model has both an input and an output price (a rate table needs both).

    Each model's ``source`` names the log line of its newest sighting; ``checked`` is the day of
    the newest sighting (today when no sighting has a time).
    """
    learned, _ = learned_prices(prices)
    models = tuple(
        model
        for (name,), rows in learned.group_by("model", maintain_order=True)
        if (model := _model_rate(str(name), rows)) is not None
    )
    if not models:
        return None
    newest = learned["timestamp"].max()
    checked = newest.date() if isinstance(newest, datetime) else date.today()
    return RateTable(
        name=LEARNED_NAME,
        unit="ai_credits_per_million_tokens",
        usd_per_unit=_USD_PER_CREDIT,
        currency="USD",
        source=LEARNED_SOURCE,
        checked=checked,
        models=models,
        description="Copilot prices read from the logs' own itemised bills",
    )


def _model_rate(name: str, rows: pl.DataFrame) -> ModelRate | None:
    """One learned model, from its rows of :func:`learned_prices`; None without input+output."""
    by_type = dict(zip(rows["token_type"], rows["credits_per_million"], strict=True))
    values = {TOKEN_TYPES[kind]: Decimal(price) for kind, price in by_type.items()}
    if "input" not in values or "output" not in values:
        return None
    newest = rows.sort("timestamp", descending=True, nulls_last=True).row(0, named=True)
    seen = newest["timestamp"]
    when = seen.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if seen else "time unknown"
    return ModelRate(
        id=name,
        periods=(PricePeriod(prices=PriceSet(**values)),),
        source=(
            f"the log's own prices: {newest['source_file']}:{newest['source_line']} "
            f"(session {newest['session_id']}, {when})"
        ),
    )


def learned_toml(prices: pl.DataFrame) -> str:
    """The prices in force as rate-table TOML (``--rates FILE``, ``--rates github-copilot+FILE``).

    Raises :class:`AgentcostError` when no model has both an input and an output price.
    """
    table = learned_rate_table(prices)
    if table is None:
        raise AgentcostError(
            "these logs quote no complete price (input and output) for any model. Hint: prices "
            "are in session.usage_record lines (Copilot CLI 1.0.94+) and session-store.db rows "
            "(1.0.80+); include the Copilot home or its session-store.db"
        )
    sessions = prices["session_id"].n_unique()
    seen = f"{counted(prices.height, 'price')} seen in {counted(sessions, 'session')}"
    header = f"# `agentcost rates learn`: {seen}.\n"
    return header + dump_rate_table(table)
