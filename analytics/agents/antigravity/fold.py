"""agy's usage records folded to one call per API request, with sessions and issues.

A call is one identity over every database folded together: the record's response id,
else its provider-assigned message id, else its message id; a record with none is a call
of its own. Its counters come from one of its copies (the largest where copies disagree,
which is reported). Its model is the name a ``gen_metadata`` row of the same identity gives,
else the name the database gives that model enum elsewhere, else the enum's
``MODEL_PLACEHOLDER_M<n>`` (unpriced, never $0). A call on a ``CHECKPOINT`` step (agy's
background conversation summary) is a ``compaction`` call; the others are ``main``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analytics.agents import AgentTables, call_columns, issue_columns, item_columns, session_columns
from analytics.agents.antigravity import records
from analytics.agents.antigravity.database import Conversation
from analytics.core.registry import ANTIGRAVITY

_COUNTERS = ("uncached", "output", "cache_write", "cache_read", "thinking")


def tables(conversations: Sequence[Conversation]) -> AgentTables:
    """The calls, sessions and issues of ``conversations`` (in the order given: a call found
    in several databases belongs to the first); no items (agy's steps are not yet
    attributed)."""
    calls = _calls(_records(conversations))
    issues = _issues(conversations, calls)
    return AgentTables(
        calls=calls.select(pl.col(n).cast(t) for n, t in call_columns().items()),
        sessions=_sessions(conversations, calls, issues),
        issues=issues.select(pl.col(n).cast(t) for n, t in issue_columns().items()),
        items=pl.DataFrame(schema=item_columns()),
    )


def _records(conversations: Sequence[Conversation]) -> pl.DataFrame:
    """Every usage record as a row, in read order."""
    rows = [
        (str(c.path), c.session_id, r.table, r.row, r.place, u.key, u.model, r.name,
         u.uncached, u.output, u.cache_write, u.cache_read, u.thinking, u.provider,
         r.step_type, r.status, r.start, r.end)
        for c in conversations for r in c.usage for u in (r.usage,)
    ]  # fmt: skip
    schema = {
        "source_file": pl.String, "session_id": pl.String, "table": pl.String,
        "row": pl.Int64, "place": pl.String, "key": pl.String, "enum": pl.Int64,
        "name": pl.String, "uncached": pl.Int64, "output": pl.Int64, "cache_write": pl.Int64,
        "cache_read": pl.Int64, "thinking": pl.Int64, "provider_enum": pl.Int64,
        "step_type": pl.Int64, "status": pl.Int64, "start": pl.Float64, "end": pl.Float64,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row").with_row_index("seq")


def _calls(found: pl.DataFrame) -> pl.DataFrame:
    """One row per identity (see the module's doc)."""
    identity = pl.coalesce(pl.col("key"), pl.format("#{}", pl.col("seq")))
    named = (
        found.filter(pl.col("name").is_not_null())
        .group_by("source_file", "enum")
        .agg(pl.col("name").unique())
        .filter(pl.col("name").list.len() == 1)
        .select("source_file", "enum", pl.col("name").list.first().alias("enum_name"))
    )
    time = pl.Datetime("ms", "UTC")
    calls = (
        found.with_columns(identity.alias("identity"))
        .group_by("identity", maintain_order=True)
        .agg(
            pl.col("source_file", "session_id", "row", "key").first(),
            pl.col("enum", "name", "provider_enum").drop_nulls().first(),
            *(pl.col(c).max() for c in _COUNTERS),
            pl.max_horizontal(pl.col(c).n_unique() for c in _COUNTERS).alias("versions"),
            pl.col("start").drop_nulls().first(),
            pl.col("end").max(),
            (pl.col("step_type") == records.CHECKPOINT).any().alias("checkpoint"),
            (pl.col("status") == records.PENDING).any().alias("pending"),
            (pl.col("status") == records.CANCELED).any().alias("canceled"),
        )
        .join(named, on=["source_file", "enum"], how="left", nulls_equal=True)
    )
    placeholder = slot_name(pl.col("enum"))
    provider = pl.col("provider_enum").replace_strict(
        records.PROVIDERS, default=None, return_dtype=pl.String
    )
    calls = calls.with_columns(
        pl.lit(ANTIGRAVITY.id).alias("agent"),
        pl.col("row").alias("source_line"),
        pl.when("checkpoint").then(pl.lit("compaction")).otherwise(pl.lit("main")).alias("kind"),
        pl.coalesce("name", "enum_name", placeholder).alias("model"),
        pl.col("key").alias("api_call_id"),
        (pl.col("start") * 1000).cast(pl.Int64).cast(time).alias("start_time"),
        (pl.col("end") * 1000).cast(pl.Int64).cast(time).alias("end_time"),
        (pl.col("uncached") + pl.col("cache_read") + pl.col("cache_write")).alias("input_tokens"),
        pl.col("cache_read").alias("cache_read_tokens"),
        pl.col("cache_write").alias("cache_write_tokens"),
        pl.lit(0).alias("cache_write_1h_tokens"),
        pl.col("output").alias("output_tokens"),
        pl.col("thinking").alias("reasoning_tokens"),
        (~pl.col("pending")).alias("final_usage"),
        pl.col("canceled").alias("interrupted"),
        pl.lit("observed").alias("token_source"),
        provider.alias("provider"),
    ).sort("session_id", "start_time", "source_file", "row", nulls_last=True, maintain_order=True)
    index = pl.int_range(1, pl.len() + 1).over("session_id")
    calls = calls.with_columns(index.alias("call_index"), index.alias("event_seq"))
    missing = [n for n in call_columns() if n not in calls.columns]
    return calls.with_columns(pl.lit(None).alias(n) for n in missing)


def slot_name(enum: pl.Expr) -> pl.Expr:
    """A model enum's name: ``MODEL_PLACEHOLDER_M<n>`` for 1000 + n (as ``gen_metadata``'s
    ``model_enum`` entry writes it), else ``MODEL_<n>``; null where the record has none."""
    base = records.PLACEHOLDER_BASE
    return (
        pl.when(enum >= base)
        .then(pl.format("MODEL_PLACEHOLDER_M{}", enum - base))
        .otherwise(pl.format("MODEL_{}", enum))
    )


def _issues(conversations: Sequence[Conversation], calls: pl.DataFrame) -> pl.DataFrame:
    """Each database's problems, and a warning per call whose copies disagree."""
    rows = [(str(c.path), p.row, p.severity, p.message) for c in conversations for p in c.problems]
    disagree = calls.filter(pl.col("versions") > 1).select(
        "source_file",
        pl.col("row").alias("line"),
        pl.lit("warning").alias("severity"),
        pl.format("copies of call {} disagree: the largest counters kept", "identity").alias(
            "message"
        ),
    )
    schema = {"file": pl.String, "line": pl.Int64, "severity": pl.String, "message": pl.String}
    found = pl.DataFrame(rows, schema=schema, orient="row")
    return pl.concat([found, disagree.rename({"source_file": "file"})], how="vertical_relaxed")


def _sessions(
    conversations: Sequence[Conversation], calls: pl.DataFrame, issues: pl.DataFrame
) -> pl.DataFrame:
    """One row per conversation id (a conversation copied to two files is one session)."""
    files = pl.DataFrame(
        [(c.session_id, str(c.path), c.cwd, c.rows, c.unknown_steps) for c in conversations],
        schema={"session_id": pl.String, "file": pl.String, "cwd": pl.String,
                "rows": pl.Int64, "unknown": pl.Int64},
        orient="row",
    )  # fmt: skip
    problems = issues.group_by("file").agg(pl.len().alias("problems"))
    per_file = (
        files.join(problems, on="file", how="left")
        .group_by("session_id", maintain_order=True)
        .agg(
            pl.col("file").alias("source_files"),
            pl.col("cwd").drop_nulls().first(),
            pl.col("rows").sum().alias("lines_read"),
            pl.col("unknown").sum().alias("unknown_lines"),
            pl.col("problems").fill_null(0).sum().alias("issues"),
        )
    )
    per_call = calls.group_by("session_id").agg(
        pl.col("start_time").min(),
        pl.col("end_time").max(),
        pl.col("model").unique(maintain_order=True).alias("models"),
        pl.len().alias("llm_calls"),
        (pl.col("kind") == "main").sum().alias("main_calls"),
        (pl.col("kind") == "subagent").sum().alias("subagent_calls"),
        (pl.col("kind") == "compaction").sum().alias("compaction_calls"),
        (~pl.col("final_usage")).sum().alias("calls_without_final_usage"),
        pl.col("interrupted").sum().alias("interrupted_calls"),
    )
    counts = ("llm_calls", "main_calls", "subagent_calls", "compaction_calls",
              "calls_without_final_usage", "interrupted_calls")  # fmt: skip
    sessions = per_file.join(per_call, on="session_id", how="left").with_columns(
        pl.col(counts).fill_null(0),
        pl.col("models").fill_null([]),
        pl.lit(ANTIGRAVITY.id).alias("agent"),
        pl.lit(None).alias("agent_version"),
        pl.lit(None).alias("parent_session_id"),
    )
    return sessions.select(pl.col(n).cast(t) for n, t in session_columns().items())
