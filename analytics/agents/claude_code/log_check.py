"""Claude Code's log checked against itself: Claude Code streams a request as several assistant
lines sharing ``message.id`` (and ``requestId``), each with a ``message.usage``; the
request's final usage is on its last line, and resumes copy lines into other files. The
check reads every assistant line again (here, in polars, apart from the native fold), keys
each by its request, and compares every call agentcost counts with its request's last line:
the same request counted once, with the final usage rather than a streamed copy's partial
one or a sum over the copies.

The rules are those of ``docs/claude-code-codex-formats.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analytics.agents.checks import check_row, count, field, read_lines, total

_CLAUDE_USAGE = {
    "input": "input_tokens",
    "cache_write": "cache_creation_input_tokens",
    "cache_read": "cache_read_input_tokens",
    "output": "output_tokens",
}


def check(lines: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
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
            field("$.type").alias("type"),
            field("$.sessionId").alias("session"),
            field("$.message.model").alias("model"),
            pl.concat_str(
                field("$.message.id"), field("$.requestId").fill_null(""), separator="\x1f"
            ).alias("request"),
            *(
                count(f"$.message.usage.{name}").alias(short)
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
    return check_row(
        "CLAUDE CODE usage",
        sessions=per_request["session"].n_unique() if per_request.height else 0,
        calls=calls.height,
        usage_lines=usage.height,
        repeated_lines=usage.height - final.height,
        agreeing=per_request.filter(agrees).height,
        disagreeing=per_request.filter(~agrees).height + unmatched,
        tokens=total(calls, "input_tokens", "output_tokens"),
        checked=total(final, "sent", "output"),
        compared="each call (input with cache, and output) against its request's last line",
    )


def log_check(files: Sequence[str], calls: pl.DataFrame) -> pl.DataFrame:
    """The ``CLAUDE CODE usage`` row of ``files`` (the Claude Code logs read) against
    ``calls`` (the calls agentcost counted from them)."""
    return check(read_lines(files, '"usage"'), calls)
