"""What a Claude Code or Codex log carries to check its own usage against, checked.

These two agents' logs hold no second, independent record of a call's tokens the way a
Copilot session store or SDK capture does, but each says the same thing twice:

- **Claude Code** streams a request as several assistant lines sharing ``message.id`` (and
  ``requestId``), each with a ``message.usage``; the request's final usage is on its last
  line, and resumes copy lines into other files. The check reads every assistant line again
  (here, in polars, apart from the native fold), keys each by its request, and compares every
  call agentcost counts with its request's last line: the same request counted once, with
  the final usage rather than a streamed copy's partial one or a sum over the copies.
- **Codex** writes ``token_count`` events with a running total (``total_token_usage``) and the
  turn's own usage (``last_token_usage``). The check reads them again and compares each
  increment of the running total with the turn's ``last_token_usage``, and each session's
  final total with the sum of its turns'.

One row per agent present (``CHECK_COLUMNS``); ``agentcost validate`` prints them under the
reconstruction's errors. The rules are those of ``docs/claude-code-codex-formats.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

#: The columns of a check row: what was checked, how many sessions and calls, the calls
#: whose two records agree and disagree, the lines carrying usage and those of them that
#: repeat a counted one (streamed copies, a total written again), and the tokens on either
#: side (``tokens_compared`` says which).
CHECK_COLUMNS: dict[str, pl.DataType] = {
    "check": pl.String(),
    "sessions": pl.Int64(),
    "calls": pl.Int64(),
    "agree": pl.Int64(),
    "disagree": pl.Int64(),
    "usage_lines": pl.Int64(),
    "repeated_lines": pl.Int64(),
    "tokens": pl.Int64(),
    "checked_tokens": pl.Int64(),
    "tokens_compared": pl.String(),
}

_CLAUDE_USAGE = {
    "input": "input_tokens",
    "cache_write": "cache_creation_input_tokens",
    "cache_read": "cache_read_input_tokens",
    "output": "output_tokens",
}
_CODEX_USAGE = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


def read_lines(files: Sequence[str], *markers: str) -> pl.DataFrame:
    """Every line of ``files`` holding one of ``markers`` (a cheap filter before JSON is read):
    ``file`` (its index in ``files``: the order the fold reads them in), ``line`` (1-based,
    as the fold numbers them), ``path`` and ``text``. Lines that are not JSON are kept; the
    checks find no fields in them."""
    frames = [
        pl.DataFrame({"text": Path(path).read_text("utf-8", errors="replace").split("\n")})
        .with_row_index("line", offset=1)
        .filter(pl.col("text").str.contains_any(list(markers)))
        .select(
            pl.lit(index, pl.Int64).alias("file"),
            pl.col("line").cast(pl.Int64),
            pl.lit(path).alias("path"),
            "text",
        )
        for index, path in enumerate(files)
    ]
    schema = {"file": pl.Int64(), "line": pl.Int64(), "path": pl.String(), "text": pl.String()}
    return pl.concat([pl.DataFrame(schema=schema), *frames])


def _field(path: str) -> pl.Expr:
    """The value at JSON ``path`` of each line's ``text`` (null where absent or not JSON)."""
    return pl.col("text").str.json_path_match(path)


def _count(path: str) -> pl.Expr:
    """The whole number at JSON ``path`` of each line's ``text`` (null where absent)."""
    return _field(path).cast(pl.Int64, strict=False)


def claude_code_check(lines: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """The ``CLAUDE CODE usage`` row: ``lines`` (``read_lines`` of the Claude Code files)
    against ``calls`` (the calls agentcost counted from them: ``source_file``,
    ``source_line``, ``input_tokens`` with cache reads and writes, ``output_tokens``).

    A request is keyed by (``message.id``, ``requestId``), by ``message.id`` alone where the
    line has no ``requestId``; ``<synthetic>`` replies are no request. A call agrees when it
    is the one call of its request and holds the usage of the request's last line (the
    files in the fold's order). Every request without a call, and every call that is not its
    request's only one, disagrees."""
    usage = (
        lines.with_columns(
            _field("$.type").alias("type"),
            _field("$.sessionId").alias("session"),
            _field("$.message.model").alias("model"),
            pl.concat_str(
                _field("$.message.id"), _field("$.requestId").fill_null(""), separator="\x1f"
            ).alias("request"),
            *(
                _count(f"$.message.usage.{name}").alias(short)
                for short, name in _CLAUDE_USAGE.items()
            ),
        )
        .filter(
            (pl.col("type") == "assistant")
            & (pl.col("model").fill_null("") != "<synthetic>")
            & pl.col("request").is_not_null()
            & pl.col("input").is_not_null()
        )
        .with_columns(
            (
                pl.col("input")
                + pl.col("cache_write").fill_null(0)
                + pl.col("cache_read").fill_null(0)
            ).alias("sent")
        )
    )
    final = usage.sort("file", "line").group_by("request").agg(pl.all().last())
    counted = calls.select(
        pl.col("source_file").alias("path"),
        pl.col("source_line").alias("line"),
        pl.col("input_tokens").alias("call_input"),
        pl.col("output_tokens").alias("call_output"),
    ).join(usage.select("path", "line", "request"), on=["path", "line"], how="left")
    per_request = final.join(
        counted.group_by("request").agg(
            pl.len().alias("n_calls"),
            pl.col("call_input").first(),
            pl.col("call_output").first(),
        ),
        on="request",
        how="left",
    )
    agrees = (
        (pl.col("n_calls") == 1)
        & (pl.col("call_input") == pl.col("sent"))
        & (pl.col("call_output") == pl.col("output"))
    ).fill_null(False)
    unmatched = counted.filter(pl.col("request").is_null()).height
    return _row(
        "CLAUDE CODE usage",
        sessions=per_request["session"].n_unique() if per_request.height else 0,
        calls=calls.height,
        usage_lines=usage.height,
        repeated_lines=usage.height - final.height,
        agreeing=per_request.filter(agrees).height,
        disagreeing=per_request.filter(~agrees).height + unmatched,
        tokens=_total(calls, "input_tokens", "output_tokens"),
        checked=_total(final, "sent", "output"),
        compared="each call (input with cache, and output) against its request's last line",
    )


def codex_check(lines: pl.DataFrame) -> pl.DataFrame:
    """The ``CODEX totals`` row: ``lines`` (``read_lines`` of the rollouts: their
    ``session_meta`` and ``token_count`` lines at least, in order).

    A ``session_meta`` starts a session (one right after another is a fork's copy of its
    parent's header and starts none; a header repeating the id goes on with it); lines
    before any header belong to the session the file name gives. In each session, a
    ``token_count`` whose ``total_token_usage`` was not seen before is a call (a total
    written again, or copied into another file, is not), in the files' order. A call agrees
    when the increase of the running total over the session's previous total equals its
    ``last_token_usage`` in all five counts; ``tokens`` is each session's last total,
    ``checked_tokens`` the sum of its turns' ``last_token_usage``."""
    read = lines.with_columns(
        _field("$.type").alias("type"),
        _field("$.payload.type").alias("event"),
        _field("$.payload.id").alias("meta_id"),
        *(
            _count(f"$.payload.info.{record}.{name}").alias(f"{record}.{name}")
            for record in ("total_token_usage", "last_token_usage")
            for name in _CODEX_USAGE
        ),
    ).sort("file", "line")
    header = (pl.col("type") == "session_meta") & pl.col("meta_id").is_not_null()
    copied_header = (
        header
        & header.shift(1).over("file").fill_null(False)
        & (pl.col("line") == pl.col("line").shift(1).over("file") + 1)
    )
    from_name = pl.col("path").str.extract(r"([0-9a-fA-F-]{36})\.jsonl$").fill_null(pl.col("path"))
    sessions = read.with_columns(
        pl.when(header & ~copied_header)
        .then(pl.col("meta_id"))
        .forward_fill()
        .over("file")
        .fill_null(from_name)
        .alias("session")
    )
    totals = [f"total_token_usage.{name}" for name in _CODEX_USAGE]
    turns = (
        sessions.filter(
            (pl.col("type") == "event_msg")
            & (pl.col("event") == "token_count")
            & pl.col("total_token_usage.total_tokens").is_not_null()
        )
        .unique(["session", *totals], keep="first", maintain_order=True)
        .with_columns(
            (pl.col(total) - pl.col(total).shift(1).over("session").fill_null(0)).alias(
                f"step.{name}"
            )
            for total, name in zip(totals, _CODEX_USAGE, strict=True)
        )
    )
    agrees = pl.all_horizontal(
        pl.col(f"step.{name}").eq_missing(pl.col(f"last_token_usage.{name}"))
        for name in _CODEX_USAGE
    )
    last_totals = turns.group_by("session").agg(pl.col("total_token_usage.total_tokens").last())
    counted_lines = sessions.filter(
        (pl.col("event") == "token_count") & pl.col("total_token_usage.total_tokens").is_not_null()
    ).height
    return _row(
        "CODEX totals",
        sessions=last_totals.height,
        calls=turns.height,
        usage_lines=counted_lines,
        repeated_lines=counted_lines - turns.height,
        agreeing=turns.filter(agrees).height,
        disagreeing=turns.filter(~agrees).height,
        tokens=_total(last_totals, "total_token_usage.total_tokens"),
        checked=_total(turns, "last_token_usage.total_tokens"),
        compared="each session's last total_token_usage against its turns' last_token_usage",
    )


def _total(frame: pl.DataFrame, *columns: str) -> int | None:
    """The sum of ``columns`` over ``frame``; null (unknown) where a value is missing."""
    if frame.is_empty():
        return 0
    summed = frame.select(
        pl.sum_horizontal(*columns).sum().alias("total"),
        pl.any_horizontal(pl.col(c).is_null().any() for c in columns).alias("missing"),
    )
    total, missing = summed.row(0)
    return None if missing else int(total)


def _row(
    check: str,
    *,
    sessions: int,
    calls: int,
    usage_lines: int,
    repeated_lines: int,
    agreeing: int,
    disagreeing: int,
    tokens: int | None,
    checked: int | None,
    compared: str,
) -> pl.DataFrame:
    """One check row, in ``CHECK_COLUMNS``."""
    values = [check, sessions, calls, agreeing, disagreeing, usage_lines, repeated_lines]
    values += [tokens, checked, compared]
    return pl.DataFrame([dict(zip(CHECK_COLUMNS, values, strict=True))], schema=CHECK_COLUMNS)
