"""Context attribution: which pieces of the conversation the input tokens and dollars paid for.

An agent re-sends its whole context on every LLM call: the fixed part (system prompt + tool
definitions) and every item added so far (user messages, its own replies, tool results,
injected skills), until a compaction replaces the items with a summary (which becomes an item
itself). So a 40 kB file read early in a session is paid for again on every later call.

For each call, the fixed part (``fixed_part_tokens``, as the reconstruction fitted it for the
call's agent; else as the log states it; else what the agent's first call sent beyond the
items before it, which is how Claude Code and Codex sessions get theirs, their logs stating
every call's input; else ``events.fixed_part``; capped at the call's input) + the
items carried from before the previous call + the items new since it = the call's
``input_tokens`` exactly: the conversation tokens are split over the items in context in
proportion to their ``content_bytes`` (largest remainder, ``apportion.py``). Each call's input
cost (uncached input + cache reads + cache writes) is then split over its fixed part and items
in proportion to their tokens, in integer units of 1e-18 USD, so what is attributed to a
session's items is exactly the input cost of its priced calls. A call whose whole cost is
unknown (its output tokens are, after a crash) is unpriced in the session's cost, so its
sends are ``unpriced_sends``: no item costs more than its session. Per-call input tokens are
often estimates (``token_source``); the attribution is as good as they are.

The items are the events of the kinds in ``items.CONTEXT_LABELS`` (the core's neutral kinds,
each agent mapping its own records). They are labelled for people, the label after their
kind: ``tool result: view (40.2 kB)``. The tool name comes from the matching
``items.TOOL_CALL`` (by ``tool_call_id``); the events do not keep the arguments, so a label
cannot name the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

import polars as pl

from analytics.core import items as kinds
from analytics.core.apportion import apportion
from analytics.core.events import (
    BYTES_PER_TOKEN,
    DEFAULT_TOOL_DEFINITIONS_TOKENS,
    fixed_part,
    stated_fixed_part,
)
from analytics.core.periods import known_sum
from analytics.core.schema import MONEY, money_lit

_INPUT_COSTS = ["input_cost_usd", "cache_read_cost_usd", "cache_write_cost_usd"]
_UNIT = Decimal(10) ** -18
#: Items that are not conversation: the system prompt and tool definitions of each agent.
FIXED_LABEL = "system prompt + tool definitions"
#: (call, item) pairs attributed at once, about: one row each through the splits below.
PAIRS_AT_ONCE = 500_000


def _agent_of_event() -> pl.Expr:
    return pl.coalesce("agent_id", "parent_tool_call_id", pl.lit("main")).alias("agent")


def _agent_of_call() -> pl.Expr:
    return (
        pl.when(pl.col("kind") == "subagent")
        .then(pl.col("agent_id"))
        .fill_null(pl.lit("main"))
        .alias("agent")
    )


def context_items(events: pl.DataFrame) -> pl.DataFrame:
    """One row per item an agent's context gains: who, when, what kind, how big, a label.

    ``weight`` is what the item's share of a call's conversation tokens is proportional to:
    its bytes, or for a compaction summary its stated post-compaction tokens in bytes (its
    own bytes where the log states none, as Claude Code's and Codex's do not).
    """
    kind = pl.col("item")
    starts = events.filter(kind == kinds.TOOL_CALL).select(
        "session_id", "tool_call_id", pl.col("tool_name").alias("_started_tool")
    )
    items = (
        events.filter(kind.is_in(list(kinds.CONTEXT_LABELS)))
        .join(
            starts.unique(["session_id", "tool_call_id"], keep="first"),
            on=["session_id", "tool_call_id"],
            how="left",
        )
        .with_columns(
            _agent_of_event(),
            kind.replace_strict(kinds.CONTEXT_LABELS).alias("item_kind"),
            pl.when(kind == kinds.TOOL_OUTPUT)
            .then(pl.coalesce("_started_tool", "tool_name", pl.lit("?")))
            .alias("tool"),
            pl.when(kind == kinds.COMPACTION)
            .then(pl.col("post_compaction_tokens") * BYTES_PER_TOKEN)
            .fill_null(pl.col("content_bytes"))
            .fill_null(0)
            .alias("weight"),
        )
    )
    size = _size(pl.col("content_bytes").fill_null(0))
    label = (
        pl.when(kind == kinds.TOOL_OUTPUT)
        .then(pl.format("{}: {} ({})", "item_kind", "tool", size))
        .when((kind == kinds.COMPACTION) & pl.col("post_compaction_tokens").is_not_null())
        .then(pl.format("{} (~{} tokens)", "item_kind", pl.col("post_compaction_tokens")))
        .when((kind == kinds.PROMPT) & pl.col("is_autopilot"))
        .then(pl.format("autopilot nudge ({})", size))
        .otherwise(pl.format("{} ({})", "item_kind", size))
    )
    return items.select(
        "session_id",
        "agent",
        pl.col("event_seq").alias("item_seq"),
        "item_kind",
        "tool",
        "content_bytes",
        "weight",
        label.alias("label"),
    ).sort("session_id", "item_seq")


def _size(bytes_: pl.Expr) -> pl.Expr:
    """``812 B``, ``40.2 kB``, ``1.3 MB``."""
    return (
        pl.when(bytes_ < 1000)
        .then(pl.format("{} B", bytes_))
        .when(bytes_ < 1_000_000)
        .then(pl.format("{} kB", (bytes_ / 1000).round(1)))
        .otherwise(pl.format("{} MB", (bytes_ / 1_000_000).round(1)))
    )


def attribute_context(
    priced_calls: pl.DataFrame, events: pl.DataFrame, *, pairs_at_once: int = PAIRS_AT_ONCE
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per call, per item) attribution of input tokens and input cost.

    Per call: ``fixed_tokens + carried_tokens + new_tokens == input_tokens`` and the same three
    parts of ``input_cost_usd`` (null when the call is unpriced). Per item (the fixed part of
    each agent is an item too, ``item_kind`` ``fixed``): ``tokens_added`` (its tokens in the first
    call that sent it), ``sends`` (calls that carried it), ``tokens_sent``, ``cost_usd`` (null
    when none of those calls is priced) and ``unpriced_sends``. Calls with unknown input
    tokens are left out.

    Sessions are attributed a few at a time (about ``pairs_at_once`` (call, item) pairs, the
    rows this needs), so memory follows the largest session, not the number of sessions.
    """
    parts = [
        _attribute(priced_calls.filter(chosen), events.filter(chosen))
        for chosen in _session_chunks(priced_calls, events, pairs_at_once)
    ]
    # Chunks follow the session order and each comes sorted, so the whole is sorted too.
    return pl.concat([calls for calls, _ in parts]), pl.concat([items for _, items in parts])


def _session_chunks(
    priced_calls: pl.DataFrame, events: pl.DataFrame, pairs_at_once: int
) -> list[pl.Expr]:
    """Filters that split the sessions into runs of about ``pairs_at_once`` (call, item)
    pairs (calls times items of each session: an upper bound). One chunk: no filter."""
    calls = priced_calls.group_by("session_id").agg(pl.len().alias("_calls"))
    items = (
        events.filter(pl.col("item").is_in(list(kinds.CONTEXT_LABELS)))
        .group_by("session_id")
        .agg(pl.len().alias("_items"))
    )
    pairs = pl.col("_calls") * pl.col("_items").fill_null(0)
    chunks = (
        calls.join(items, on="session_id", how="left")
        .sort("session_id")
        .select("session_id", ((pairs.cum_sum() - pairs) // max(pairs_at_once, 1)).alias("_chunk"))
        .group_by("_chunk", maintain_order=True)
        .agg("session_id")
    )
    if chunks.height <= 1:
        return [pl.lit(True)]
    return [pl.col("session_id").is_in(ids.implode()) for ids in chunks["session_id"]]


def _attribute(
    priced_calls: pl.DataFrame, events: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``attribute_context`` for a set of whole sessions."""
    shares = _shares(priced_calls, events)
    per_call = shares.group_by("session_id", "call_seq").agg(
        pl.col("call_index").first(),
        pl.col("agent").first(),
        pl.col("input_tokens").first(),
        *(
            pl.col(column).filter(pl.col("part") == part).sum().alias(f"{part}_{name}")
            for part in ("fixed", "carried", "new")
            for column, name in (("tokens", "tokens"), ("cost_usd", "cost_usd"))
        ),
        pl.col("call_cost_usd").first().alias("input_cost_usd"),
    )
    per_call = per_call.with_columns(
        pl.when(pl.col("input_cost_usd").is_not_null())
        .then(pl.col(f"{part}_cost_usd"))
        .cast(MONEY)
        .alias(f"{part}_cost_usd")
        for part in ("fixed", "carried", "new")
    ).sort("session_id", "call_seq")
    first = pl.col("call_seq") == pl.col("call_seq").min()
    per_item = (
        shares.group_by("session_id", "agent", "item_seq")
        .agg(
            pl.col("item_kind", "tool", "content_bytes", "label").first(),
            pl.col("tokens").filter(first).first().alias("tokens_added"),
            pl.len().cast(pl.Int64).alias("sends"),
            pl.col("tokens").sum().alias("tokens_sent"),
            known_sum("cost_usd").cast(MONEY).alias("cost_usd"),
            pl.col("cost_usd").is_null().sum().cast(pl.Int64).alias("unpriced_sends"),
        )
        .sort("session_id", "agent", "item_seq")
    )
    return per_call, per_item


def _shares(priced_calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """One row per (call, item in its context) plus one per (call, fixed part): tokens, cost."""
    calls = _calls_with_context(priced_calls, events)
    items = context_items(events)
    resets = items.filter(pl.col("item_kind") == kinds.CONTEXT_LABELS[kinds.COMPACTION]).select(
        "session_id", "agent", pl.col("item_seq").alias("_reset_seq")
    )
    calls = calls.sort("call_seq").join_asof(
        resets.sort("_reset_seq"),
        left_on="call_seq",
        right_on="_reset_seq",
        by=["session_id", "agent"],
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
    )
    in_context = (
        calls.join(items, on=["session_id", "agent"])
        .filter(
            (pl.col("item_seq") < pl.col("call_seq"))
            & (pl.col("item_seq") >= pl.col("_reset_seq").fill_null(0))
        )
        .with_columns(
            pl.when(pl.col("item_seq") < pl.col("_previous_seq").fill_null(0))
            .then(pl.lit("carried"))
            .otherwise(pl.lit("new"))
            .alias("part")
        )
    )
    has_items = in_context.select("session_id", "call_seq").unique()
    fixed = (
        calls.join(
            has_items.with_columns(pl.lit(True).alias("_has")),
            on=["session_id", "call_seq"],
            how="left",
        )
        .with_columns(
            pl.lit(0, pl.Int64).alias("item_seq"),
            pl.lit("fixed").alias("item_kind"),
            pl.lit("fixed").alias("part"),
            pl.when(pl.col("agent") == "main")
            .then(pl.lit(FIXED_LABEL))
            .otherwise(pl.lit(f"sub-agent {FIXED_LABEL} + task"))
            .alias("label"),
            pl.when(pl.col("_has"))
            .then(pl.min_horizontal("_fixed", "input_tokens"))
            .otherwise(pl.col("input_tokens"))
            .alias("tokens"),
        )
        .drop("_has")
    )
    conversation = pl.col("input_tokens") - pl.min_horizontal("_fixed", "input_tokens")
    in_context = in_context.with_columns(
        apportion(conversation, pl.col("weight"), ["_call"], "item_seq").alias("tokens")
    )
    parts = pl.concat([fixed, in_context], how="diagonal_relaxed")
    units = apportion(
        pl.col("call_cost_usd").to_physical(), pl.col("tokens"), ["_call"], "item_seq", pl.Int128
    )
    return parts.with_columns(
        (units.cast(pl.Decimal(38, 0)) * money_lit(_UNIT)).cast(MONEY).alias("cost_usd")
    )


def _priced_parts(priced_calls: pl.DataFrame) -> list[str]:
    """The columns that must be known for a call's input cost to be attributed: its input
    parts, and its whole cost where the frame has it. A call whose cost is unknown (its
    output tokens are, say) is unpriced in its session's ``cost_usd``; attributing its input
    parts anyway would let an item cost more than its whole session."""
    return [*_INPUT_COSTS, *(["cost_usd"] if "cost_usd" in priced_calls.columns else [])]


def _calls_with_context(priced_calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Calls with known input: their agent, previous call of that agent, fixed part, cost.

    ``_call`` numbers the calls: the per-call splits group by it, an integer being much
    cheaper to group by than (session id, call) (measured: 0.42 against 0.71 s for 0.5 M rows).
    """
    # The fixed part the reconstruction fitted for each call's agent (``fixed_part_tokens``),
    # else (frames without it) the session's stated or estimated one.
    has_fit = "fixed_part_tokens" in priced_calls.columns
    fitted = pl.col("_fit_fixed") if has_fit else pl.lit(None, pl.Int64)
    calls = (
        priced_calls.filter(pl.col("input_tokens").is_not_null())
        .with_columns(_agent_of_call())
        .sort("session_id", "event_seq")
        .select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_call"),
            "session_id",
            "agent",
            "call_index",
            "input_tokens",
            pl.col("event_seq").alias("call_seq"),
            pl.col("event_seq").shift(1).over("session_id", "agent").alias("_previous_seq"),
            pl.when(pl.all_horizontal(pl.col(c).is_not_null() for c in _priced_parts(priced_calls)))
            .then(pl.sum_horizontal(_INPUT_COSTS))
            .cast(MONEY)
            .alias("call_cost_usd"),
            *([pl.col("fixed_part_tokens").alias("_fit_fixed")] if has_fit else []),
        )
    )
    return (
        calls.join(stated_fixed_part(events), on="session_id", how="left")
        .join(_first_call_fixed(calls, events), on=["session_id", "agent"], how="left")
        .join(fixed_part(events), on="session_id", how="left")
        .with_columns(
            pl.coalesce(
                fitted,
                "fixed_tokens",
                "_first_fixed",
                "_fixed",
                pl.lit(DEFAULT_TOOL_DEFINITIONS_TOKENS),
            ).alias("_fixed")
        )
        .drop("fixed_tokens", "_first_fixed")
    )


def _first_call_fixed(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Per session and agent: the fixed part its first call implies (``_first_fixed``): that
    call's input less the items it carried (their bytes in tokens, rounded up), at least 0.
    The first call sends little beyond the system prompt and tool definitions, so what the
    log states of its input is a better measure of them than a default."""
    first = calls.group_by("session_id", "agent").agg(
        pl.col("call_seq").min().alias("_first_seq"),
        pl.col("input_tokens").sort_by("call_seq").first().alias("_first_input"),
    )
    carried = (
        first.join(context_items(events), on=["session_id", "agent"])
        .filter(pl.col("item_seq") < pl.col("_first_seq"))
        .group_by("session_id", "agent")
        .agg(pl.col("weight").sum().alias("_bytes"))
    )
    tokens = (pl.col("_bytes").fill_null(0) + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN
    return first.join(carried, on=["session_id", "agent"], how="left").select(
        "session_id",
        "agent",
        (pl.col("_first_input") - tokens).clip(lower_bound=0).alias("_first_fixed"),
    )


def top_items(items: pl.DataFrame, limit: int) -> pl.DataFrame:
    """The ``limit`` costliest items of each session (by cost, then tokens sent), the
    costliest session first: the one whose context items cost most in all (its items
    without a cost count 0 there; the session id breaks a tie)."""
    cost = pl.col("cost_usd").fill_null(0)
    rank = (
        pl.struct(cost.neg(), pl.col("tokens_sent").neg(), "item_seq")
        .rank("ordinal")
        .over("session_id")
    )
    return (
        items.with_columns(cost.sum().over("session_id").alias("_session_cost"))
        .filter(rank <= limit)
        .sort(
            ["_session_cost", "session_id", "cost_usd", "tokens_sent"],
            descending=[True, False, True, True],
            nulls_last=True,
        )
        .select(
            "session_id",
            "agent",
            "item_seq",
            "label",
            "tokens_added",
            "sends",
            "tokens_sent",
            "cost_usd",
            "unpriced_sends",
        )
    )


def by_tool(items: pl.DataFrame, limit: int) -> pl.DataFrame:
    """Items summed over all sessions per tool (tool results) or per kind (everything else):
    how many, their bytes, how often they were sent, tokens and cost; the costliest first."""
    key = pl.coalesce(
        pl.when(pl.col("tool").is_not_null()).then(pl.format("{}: {}", "item_kind", "tool")),
        pl.when(pl.col("item_kind") == "fixed").then(pl.lit(FIXED_LABEL)),
        pl.col("item_kind"),
    )
    return (
        items.group_by(key.alias("source"))
        .agg(
            pl.len().cast(pl.Int64).alias("items"),
            known_sum("content_bytes").alias("content_bytes"),
            pl.col("sends").sum().alias("sends"),
            pl.col("tokens_sent").sum().alias("tokens_sent"),
            known_sum("cost_usd").cast(MONEY).alias("cost_usd"),
            pl.col("unpriced_sends").sum().alias("unpriced_sends"),
        )
        .sort(
            ["cost_usd", "tokens_sent", "source"], descending=[True, True, False], nulls_last=True
        )
        .head(limit)
    )


def top_sections(
    priced_calls: pl.DataFrame,
    groups: Iterable[tuple[pl.DataFrame, pl.DataFrame]],
    *,
    tools: bool,
    limit: int,
    behaviour: bool,
) -> dict[str, pl.DataFrame]:
    """What ``agentcost top`` shows: the costliest context items per session (``items``), or
    per tool overall (``tools``), and with ``behaviour`` the compactions and the agent loop.

    ``groups`` gives the sessions a group at a time (their ``session_id`` rows and their
    events), so memory follows a group rather than the tree; ``priced_calls`` are every
    group's calls, priced.
    """
    from analytics.core.behaviour import compaction_savings, loop_behaviour

    items, compactions, loops = [], [], []
    for sessions, events in groups:
        calls = priced_calls.join(sessions.select("session_id"), on="session_id", how="semi")
        items.append(attribute_context(calls, events)[1])
        if behaviour:
            compactions.append(compaction_savings(calls, events))
            loops.append(loop_behaviour(calls, events))
    every_item = pl.concat(items)
    ranked = by_tool(every_item, limit) if tools else top_items(every_item, limit)
    sections = {"tools" if tools else "items": ranked}
    if behaviour:
        sections["compactions"] = pl.concat(compactions).sort("session_id", "call_index")
        sections["behaviour"] = pl.concat(loops).sort("session_id")
    return sections


def carried_context(events: pl.DataFrame, priced: pl.DataFrame) -> pl.DataFrame:
    """The chart's view of context attribution: item, tokens, times_carried, cost_usd.

    One row per conversation item (``attribution.attribute_context``), labelled with its
    session; ``cost_usd`` is its exact share of the input cost of the calls that re-sent it.
    """
    _, items = attribute_context(priced, events)
    return items.filter(pl.col("item_kind") != "fixed").select(
        pl.format("{} · {}", pl.col("session_id").str.slice(0, 8), "label").alias("item"),
        pl.col("tokens_added").alias("tokens"),
        pl.col("sends").alias("times_carried"),
        "cost_usd",
    )
