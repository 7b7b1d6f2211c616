"""Table contracts: the column names and polars dtypes every stage promises to return.

Data flows one way (see the README): sources -> EVENTS (+ ISSUES, MODEL_METRICS) -> CALLS ->
CALLS with tokens -> PRICED -> reports. Each stage ends with ``conform(frame, CONTRACT)`` so a
downstream stage can rely on names, order and dtypes. Column names carry their unit
(``*_tokens``, ``*_ms``, ``*_usd``, ``*_nano_aiu``). Unknown is null, never zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

import polars as pl

#: Timestamps are UTC inside agentcost; rendering converts to the user's timezone.
TIMESTAMP = pl.Datetime("ms", "UTC")

#: Money: exact decimals. 38 digits with 18 after the point hold any realistic bill exactly
#: (a price of $0.015 per million tokens is 1.5e-8 dollars per token).
MONEY = pl.Decimal(38, 18)

#: Provenance travels with every row so any number can be traced back to a log line.
PROVENANCE: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "source_line": pl.Int64(),
}

#: The token counts a usage record states (a shutdown's per-model metrics, a per-call
#: record), as Copilot counts them: input includes cache reads and writes.
USAGE_TOKENS: dict[str, pl.DataType] = {
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "cache_read_tokens": pl.Int64(),
    "cache_write_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
}

#: One row per log line that could be used. ``process_index`` is 0 for the process that wrote
#: ``session.start`` and grows by one at each ``session.resume``. ``content_bytes`` is the size of
#: the text this event adds to the model's context (user/system/assistant text, tool requests,
#: tool results), null for events that add nothing.
EVENTS: dict[str, pl.DataType] = {
    **PROVENANCE,
    "session_id": pl.String(),
    "event_seq": pl.Int64(),  # order within the session, across all of its files
    "process_index": pl.Int32(),
    "event_type": pl.String(),  # the agent's own record type (Copilot's event types)
    "item": pl.String(),  # its neutral kind (``core.items``), null for none
    "event_id": pl.String(),
    "timestamp": TIMESTAMP,
    "agent_id": pl.String(),
    "parent_tool_call_id": pl.String(),
    "turn_id": pl.String(),
    "interaction_id": pl.String(),
    "model": pl.String(),
    "api_call_id": pl.String(),
    "tool_call_id": pl.String(),
    "tool_name": pl.String(),
    "success": pl.Boolean(),
    "output_tokens": pl.Int64(),
    "content_bytes": pl.Int64(),
    "is_autopilot": pl.Boolean(),
    "text": pl.String(),
    # assistant.usage (SDK captures only: ephemeral, never in events.jsonl) and compaction calls
    "input_tokens": pl.Int64(),
    "cache_read_tokens": pl.Int64(),
    "cache_write_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
    "total_tokens": pl.Int64(),  # subagent.completed/failed: input + output of the whole run
    "nano_aiu": pl.String(),
    "initiator": pl.String(),
    "duration_ms": pl.Int64(),
    # context snapshots (session.shutdown, session.compaction_*)
    "current_tokens": pl.Int64(),
    "system_tokens": pl.Int64(),
    "conversation_tokens": pl.Int64(),
    "tool_definitions_tokens": pl.Int64(),
    "pre_compaction_tokens": pl.Int64(),
    "post_compaction_tokens": pl.Int64(),
    # session metadata (session.start / session.resume / session.shutdown)
    "cwd": pl.String(),
    "repository": pl.String(),
    "copilot_version": pl.String(),
    "status_detail": pl.String(),
    "total_nano_aiu": pl.String(),
    "total_premium_requests": pl.String(),
    "total_api_duration_ms": pl.Int64(),
    # session.usage_record (CLI 1.0.94+): the call's own usage and bill
    "usage_id": pl.String(),  # accounting.usageId: the record's de-duplication key
    "interaction_type": pl.String(),  # conversation-agent | conversation-subagent | ...
    "is_byok": pl.Boolean(),  # bring your own key: not billed by Copilot
    "provider": pl.String(),
    "token_details": pl.String(),  # the line's price list (tokenDetails) as compact JSON
    # session.info / session.error
    "info_type": pl.String(),  # "rewind" marks a /rewind
    "error_type": pl.String(),  # rate_limit, quota, ...
    # sizes
    "tool_request_bytes": pl.Int64(),  # the tool-request (JSON) part of content_bytes
    "events_file_size_bytes": pl.Int64(),  # the file's size the CLI saw when writing the line
    "byte_offset": pl.Int64(),  # the line's first byte in its file (repeats not counted)
}

#: Per-model totals from each ``session.shutdown`` line (``modelMetrics``). Counters are as the
#: log wrote them: cumulative or per process depending on the CLI version (see ``sessions.py``).
MODEL_METRICS: dict[str, pl.DataType] = {
    **PROVENANCE,
    "session_id": pl.String(),
    "process_index": pl.Int32(),
    "model": pl.String(),
    "requests_count": pl.Int64(),
    "requests_cost": pl.String(),
    **USAGE_TOKENS,
    "total_nano_aiu": pl.String(),
}

#: Everything that could not be used, or that looks wrong. Nothing is dropped silently.
ISSUES: dict[str, pl.DataType] = {
    "file": pl.String(),
    "line": pl.Int64(),
    "severity": pl.String(),  # "error" (data lost) or "warning" (data kept, but suspect)
    "message": pl.String(),
}

#: One row per LLM call. ``kind`` is ``main`` (an ``assistant.turn_start``), ``subagent`` (a
#: sub-agent ``assistant.message`` or ``assistant.usage``) or ``compaction``.
CALLS: dict[str, pl.DataType] = {
    **PROVENANCE,
    "session_id": pl.String(),
    "event_seq": pl.Int64(),  # the call's first event, in the session's event order
    "call_index": pl.Int64(),
    "kind": pl.String(),
    "model": pl.String(),
    # where the model comes from: ``log`` (the call's own lines or its sub-agent's),
    # ``session`` (the session's selected model, for a call the log names none for),
    # ``shutdown`` (the only model the shutdown names), ``counts`` (the assignment that makes
    # the calls counted per model equal the shutdown's requests); null: no model
    "model_source": pl.String(),
    "agent_id": pl.String(),
    "agent_name": pl.String(),
    "parent_tool_call_id": pl.String(),
    "interaction_id": pl.String(),
    "process_index": pl.Int32(),
    "start_time": TIMESTAMP,
    "end_time": TIMESTAMP,
    # the log shows the call was stopped before it finished (Copilot: its turn never closed;
    # Claude Code: the user's "[Request interrupted by user]"); not "no final usage record"
    "interrupted": pl.Boolean(),
    "user_initiated": pl.Boolean(),  # the first call after a user prompt (a premium request)
    "output_tokens": pl.Int64(),
}

#: What every agent's calls carry beside CALLS + CALL_TOKENS (null for a Copilot call, whose
#: log states none of it). ``agent`` names the agent that wrote the log (``copilot``,
#: ``claude-code``, ``codex``); ``cache_write_1h_tokens`` is the part of
#: ``cache_write_tokens`` written for an hour (null: the log gives no split, and pricing says
#: which rate it assumed); ``final_usage`` is false where the log never states the request's
#: final usage record (its output is a lower bound), a state apart from ``interrupted`` (the
#: log shows the user or the CLI stopped the call).
AGENT_CALLS: dict[str, pl.DataType] = {
    "agent": pl.String(),
    "agent_version": pl.String(),
    "cache_write_1h_tokens": pl.Int64(),
    "web_search_requests": pl.Int64(),
    "web_fetch_requests": pl.Int64(),
    "speed": pl.String(),
    "service_tier": pl.String(),
    "final_usage": pl.Boolean(),
    # who served the call where the log names it (a local provider bills nothing)
    "provider": pl.String(),
    # the call's cost as the agent logged it (pi, OpenCode): shown beside the price, not used
    "logged_cost_usd": MONEY,
}

#: What every agent's sessions carry beside SESSIONS: the agent, its version, the session a
#: fork was made from, and the calls whose log never states a final usage record (their
#: output is a lower bound; counted apart from ``interrupted_calls``).
AGENT_SESSIONS: dict[str, pl.DataType] = {
    "agent": pl.String(),
    "agent_version": pl.String(),
    "parent_session_id": pl.String(),
    "calls_without_final_usage": pl.Int64(),
    # the sum of its calls' logged costs (the agent's own estimate); null: none logged
    "logged_cost_usd": MONEY,
}

#: One row per session, whatever agent wrote it: only what every agent's sessions can have
#: (the columns only one agent's logs give are that agent's own table, ``AgentTable``).
#: Some are filled by one agent so far but mean the same for any: ``repository``,
#: ``user_messages``, ``tool_calls``, ``tool_calls_total``, ``status`` and
#: ``status_detail`` (null where the agent's fold does not read them yet).
SESSIONS: dict[str, pl.DataType] = {
    "session_id": pl.String(),
    "source_files": pl.List(pl.String()),
    "start_time": TIMESTAMP,
    "end_time": TIMESTAMP,
    "cwd": pl.String(),
    "repository": pl.String(),
    "models": pl.List(pl.String()),
    # the processes that wrote the session: Copilot's grows by one at each resume; an agent
    # whose log is one process's (or does not say) has 1
    "processes": pl.Int64(),
    # the end-of-session records whose totals the log states (Copilot's session.shutdown
    # lines kept); 0 for an agent whose logs write none
    "shutdowns": pl.Int64(),
    "llm_calls": pl.Int64(),
    "main_calls": pl.Int64(),
    "subagent_calls": pl.Int64(),
    "compaction_calls": pl.Int64(),
    "interrupted_calls": pl.Int64(),
    # turns whose model call failed: not requests, not in llm_calls (0 where the log shows none)
    "failed_calls": pl.Int64(),
    # rewinds (Copilot's /rewind; 0 where the agent has none or the log does not say)
    "rewinds": pl.Int64(),
    # bring your own key: the provider bills, not the agent's vendor (false for an agent
    # billed by its vendor alone)
    "byok": pl.Boolean(),
    "user_messages": pl.Int64(),
    "tool_calls": pl.List(pl.Struct({"tool": pl.String(), "calls": pl.Int64()})),
    "tool_calls_total": pl.Int64(),
    "wall_time_ms": pl.Int64(),  # summed over processes: time between resumes is not counted
    "status": pl.String(),  # complete | idle | error | interrupted
    "status_detail": pl.String(),
    # the session's tokens: the sums of its calls' (compactions and every process included),
    # so that sessions, calls and periods agree to the token; null where no call has a figure
    "input_tokens": pl.Int64(),  # includes cache reads and writes
    "output_tokens": pl.Int64(),
    "cache_read_tokens": pl.Int64(),
    "cache_write_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
}


@dataclass(frozen=True)
class AgentTable:
    """What only one agent's sessions or calls have, in a table of its own: ``columns`` (its
    ``key`` first: ``session_id`` for one row per session of that agent, ``session_id`` and
    ``event_seq`` for one row per call), set beside SESSIONS or CALLS by that key where a view
    needs them (``joined``, ``Analysis.call_view``). ``after`` places each of its columns in a
    view: the view's column it follows (another of its own, or one of the core's), so that
    the views list them where the agent's readers expect them; ``name`` and ``description``
    are its table's in the team dataset (``core.dataset``). An agent declares its own
    (``agents.pipeline``)."""

    name: str
    description: str
    columns: Mapping[str, pl.DataType]
    after: Mapping[str, str]
    key: tuple[str, ...] = ("session_id",)

    @property
    def of_calls(self) -> bool:
        """Whether its rows are calls (else sessions)."""
        return "event_seq" in self.key

    def contract(self, core: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
        """The view's contract: ``core`` (CALLS' or SESSIONS') with this table's columns in
        their places."""
        merged = combine(core, self.columns)
        return {name: merged[name] for name in self.view_order(list(core))}

    def view_order(self, columns: Sequence[str]) -> list[str]:
        """``columns`` (a view's, without this table's) with this table's placed in them."""
        placed: dict[str, list[str]] = {}
        for name, anchor in self.after.items():
            placed.setdefault(anchor, []).append(name)
        order: list[str] = []

        def put(name: str) -> None:
            order.append(name)
            for follower in placed.get(name, []):
                put(follower)

        for name in columns:
            put(name)
        return order


def joined(
    sessions: pl.DataFrame, tables: Sequence[tuple[AgentTable, pl.DataFrame]]
) -> pl.DataFrame:
    """``sessions`` with each agent session table's columns joined by session id (null for
    the sessions of the other agents), placed as the tables say (``AgentTable.after``): the
    view the reports, the JSON output and the export read; tables of calls are left out. The
    sessions' own columns are not copied (``beside``: a join would gather all of them again,
    some 80 MB for the 170,000 sessions of a 1 GB tree, held as long as the view), unless a
    table names a session twice, where the join's rows are kept."""
    for table, rows in tables:
        if table.of_calls:
            continue
        order = table.view_order(sessions.columns)
        if rows["session_id"].is_unique().all():
            sessions = beside(sessions, rows, "session_id").select(order)
        else:
            sessions = sessions.join(
                rows, on="session_id", how="left", maintain_order="left"
            ).select(order)
    return sessions


#: Per-call token columns added by ``tokens.py``. ``input_tokens`` includes cache reads and
#: writes (as Copilot counts it); uncached input = input - cache_read - cache_write.
#: ``token_source`` is ``observed`` (a per-call record), ``calibrated`` (reconstructed, then scaled
#: to the log's exact totals) or ``estimated`` (reconstructed, no ground truth to scale to).
CALL_TOKENS: dict[str, pl.DataType] = {
    "input_tokens": pl.Int64(),
    "cache_read_tokens": pl.Int64(),
    "cache_write_tokens": pl.Int64(),
    "reasoning_tokens": pl.Int64(),
    "token_source": pl.String(),
    # why an ``estimated`` call's tokens are estimated (no shutdown totals, after the last
    # shutdown, counts that differ from the shutdown's, ...); null for the others
    "estimate_reason": pl.String(),
    "is_byok": pl.Boolean(),  # bring your own key: the provider bills this call, not Copilot
    # the agent's fixed part (system prompt + tool definitions) within input_tokens, as the
    # reconstruction fitted it (capped at the call's input); the rest is conversation
    "fixed_part_tokens": pl.Int64(),
    # an ``estimated`` call's 80% interval for input_tokens, from the fit's standard errors
    # and the priors (``intervals.py``); null where the log pins the figure (observed,
    # calibrated) or where there is no estimate
    "input_tokens_low": pl.Int64(),
    "input_tokens_high": pl.Int64(),
}

#: Exact per-call usage read from a persisted per-call record (session-store.db rows,
#: OpenTelemetry ``chat`` spans, ``assistant.usage`` in SDK captures).
OBSERVED_USAGE: dict[str, pl.DataType] = {
    **PROVENANCE,
    "session_id": pl.String(),
    "seq": pl.Int64(),  # order of the call within its session in that source
    "agent_id": pl.String(),
    "parent_tool_call_id": pl.String(),
    "model": pl.String(),
    **USAGE_TOKENS,
    "total_nano_aiu": pl.String(),
    "initiator": pl.String(),
    "created_at": TIMESTAMP,
    "token_details": pl.String(),  # the record's itemised bill, raw JSON (see LOG_PRICES)
}

#: One row per price the log itself quotes: an entry of a ``tokenDetails`` list
#: (``session.usage_record``, compaction usage; ``token_details_json`` of store rows) that has
#: ``costPerBatch`` and ``batchSize``. ``cost_per_batch`` is nano-AIU per ``batch_size`` tokens,
#: as exact decimal text; ``token_type`` is input | cache_read | cache_write | output. Copilot
#: bills ``totalNanoAiu = sum(tokenCount x costPerBatch / batchSize)`` (``pricing.learned``).
LOG_PRICES: dict[str, pl.DataType] = {
    **PROVENANCE,
    "session_id": pl.String(),
    "timestamp": TIMESTAMP,
    "model": pl.String(),
    "token_type": pl.String(),
    "cost_per_batch": pl.String(),
    "batch_size": pl.Int64(),
}

#: Cost columns added by ``call_costs.py`` (exact decimals; null when the model is unpriced).
#: ``cost_source`` says which prices gave the cost: ``rates`` (the table), ``log_rates`` (the
#: log's own Copilot prices, for a model the table lacks), ``byok_provider`` (a bring-your-own-
#: key call at its provider's list price), ``vendor_api`` (an agent not billed in AI credits, at
#: its vendor's list price) or ``local`` (served by a local provider: exactly 0); null when
#: unpriced. ``price_from`` names them: the table, the log line the price was read from, or the
#: local provider.
COSTS: dict[str, pl.DataType] = {
    "rates": pl.String(),
    "priced_model": pl.String(),
    "input_cost_usd": MONEY,
    "cache_read_cost_usd": MONEY,
    "cache_write_cost_usd": MONEY,
    "output_cost_usd": MONEY,
    "request_cost_usd": MONEY,
    "cost_usd": MONEY,
    "cost_source": pl.String(),
    "price_from": pl.String(),
}


def empty(contract: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with the contract's columns, for stages that found nothing.

    Built once per contract (contracts are constants, never changed) and handed out as a
    clone: the engine's pass asks for several per group of sessions, and building one
    costs a quarter of a millisecond."""
    held = _EMPTY.get(id(contract))
    if held is None or held[0] is not contract:
        if len(_EMPTY) >= _EMPTY_HELD:
            _EMPTY.clear()
        held = _EMPTY[id(contract)] = (contract, pl.DataFrame(schema=dict(contract)))
    return held[1].clone()


def stacked(frames: Sequence[pl.DataFrame], contract: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Frames of one contract, one after another (``empty`` when none has a row)."""
    present = [frame for frame in frames if frame.height]
    return pl.concat(present) if present else empty(contract)


def beside(frame: pl.DataFrame, per_key: pl.DataFrame, key: str) -> pl.DataFrame:
    """``frame.join(per_key, on=key, how="left")``, row for row in ``frame``'s order, for a
    ``per_key`` with one row per ``key``: its other columns are set beside ``frame``'s own,
    which are not copied (a join gathers every column of a wide table again; for the 170,000
    sessions of a 1 GB tree, some 110 MB). A null key matches nothing, as in the join."""
    rows = frame.select(key).join(
        per_key.select(key).with_row_index(_AT), on=key, how="left", maintain_order="left"
    )[_AT]
    return frame.hstack(per_key.drop(key).select(pl.all().gather(rows)).get_columns())


#: ``beside``'s column of row numbers.
_AT = "__at"


def in_row_order(frame: pl.DataFrame, rows: pl.Series) -> pl.DataFrame:
    """``frame.gather(rows)``, without the copy where ``rows`` are a few runs of consecutive
    rows (at most ``_RUNS``): those are set one after another as slices, which share
    ``frame``'s memory. A table that is mostly what it was (a live session's tree: the rows
    of the sessions folded again moved, every other row in place) is then reordered for
    nothing, where a gather copies every column (some 240 MB on the 1 GB pi tree)."""
    if rows.is_empty():
        return frame.clear()
    starts = (rows.diff() != 1).fill_null(True).arg_true()  # where a run of rows begins
    if len(starts) > _RUNS:
        return frame.select(pl.all().gather(rows))
    ends = [*starts.to_list()[1:], len(rows)]
    firsts = rows.gather(starts).to_list()
    runs = zip(firsts, starts.to_list(), ends, strict=True)
    return pl.concat([frame.slice(first, end - start) for first, start, end in runs], rechunk=False)


#: ``in_row_order`` sets at most this many runs of rows as slices (more: it gathers).
_RUNS = 64


def as_literals(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each column (not a list or a struct) whose rows are all null, or all
    one value, made of that value as a literal: polars keeps such a column as the value and
    a length, where a column of text holds a 16-byte view a row and one of numbers 8 bytes.
    An agent's folded calls and sessions carry many (its id, ``observed``, what it never
    logs: a sub-agent's name, the speed, the 1-hour cache writes): some 60 MB of the 1 GB pi
    tree's 300,000 calls and 170,000 sessions, 110 MB of Gemini CLI's. The values are the
    same; only their memory differs."""
    same: list[pl.Expr] = []
    for series in frame.iter_columns():
        if isinstance(series.dtype, pl.List | pl.Struct | pl.Object) or series.is_empty():
            continue
        if series.null_count() == series.len():
            same.append(pl.lit(None, series.dtype).alias(series.name))
        elif series.null_count() == 0 and series.min() == series.max():
            same.append(pl.lit(series[0], series.dtype).alias(series.name))
    return frame.with_columns(same) if same else frame


#: ``empty``'s frames by contract (the contract held too, so its id stays its own).
_EMPTY: dict[int, tuple[Mapping[str, pl.DataType], pl.DataFrame]] = {}
_EMPTY_HELD = 64


def conform(frame: pl.DataFrame, contract: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Return ``frame`` with exactly the contract's columns, in order, with its dtypes.

    Extra columns are dropped. A missing column is a stage's bug, not a null column: it
    raises ``ValueError`` naming it, so it fails here rather than as wrong figures later. A
    column whose dtype differs is cast strictly, for the same reason.
    """
    names = list(contract)
    have = frame.schema
    missing = [name for name in names if name not in have]
    if missing:
        raise ValueError(f"columns missing from a {len(contract)}-column table: {missing}")
    if _same_types([have[name] for name in names], list(contract.values())):
        # the engine's tables mostly: no cast to build, at most an order to set
        return frame if frame.columns == names else frame.select(names)
    return frame.select(pl.col(name).cast(dtype) for name, dtype in contract.items())


def _same_types(have: list[pl.DataType], want: list[pl.DataType]) -> bool:
    """Whether a frame's dtypes are exactly the contract's. A dtype class in a contract
    (``pl.Datetime`` rather than ``pl.Datetime("ms", "UTC")``) compares equal to any of its
    instances, so such a contract always takes the cast."""
    return all(isinstance(dtype, pl.DataType) for dtype in want) and have == want


def padded(frame: pl.DataFrame, contract: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``conform`` for frames written by hand (tests, fixtures): the contract's columns the
    frame does not name are added as nulls."""
    absent = {name: dtype for name, dtype in contract.items() if name not in frame.columns}
    return conform(with_nulls(frame, absent), contract)


def with_nulls(frame: pl.DataFrame, columns: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``frame`` with ``columns`` added as nulls of their dtypes: figures a later stage fills
    (or that stay unknown), said so where the table is made rather than left to ``conform``."""
    return frame.with_columns(pl.lit(None, dtype).alias(name) for name, dtype in columns.items())


def money_text(amount: Decimal | None) -> str | None:
    """``amount`` as the decimal text polars casts to ``MONEY`` (the same value, rounded as a
    ``Decimal`` object would be).

    Money enters polars as text, never as ``Decimal`` objects: polars imports numpy to read
    one (~0.04 s, and numpy's BLAS threads spin a core a moment), on every command that
    prices.
    """
    return None if amount is None else format(amount, "f")


def money_lit(amount: Decimal | int) -> pl.Expr:
    """A ``MONEY`` literal of ``amount`` (see ``money_text``)."""
    return pl.lit(money_text(Decimal(amount)), pl.String()).cast(MONEY)


def combine(*contracts: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """Concatenate contracts, for stages that add columns to an earlier table."""
    merged: dict[str, pl.DataType] = {}
    for contract in contracts:
        merged.update(contract)
    return merged


#: Every agent's calls as an analysis gives them (``engine.analyze``): CALLS with their tokens
#: and the columns every agent's rows add.
ANALYSIS_CALLS: dict[str, pl.DataType] = combine(CALLS, CALL_TOKENS, AGENT_CALLS)
#: Every agent's sessions as an analysis gives them: SESSIONS and what every agent adds.
ANALYSIS_SESSIONS: dict[str, pl.DataType] = combine(SESSIONS, AGENT_SESSIONS)
