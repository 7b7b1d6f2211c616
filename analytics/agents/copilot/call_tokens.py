"""Copilot's reconstruction: CALLS -> CALLS with per-call tokens, from the best source
available for each call.

1. ``observed``: a per-call record. In the log itself: ``assistant.usage`` (SDK captures) and
   ``compactionTokensUsed``; beside it: ``session-store.db`` rows and OpenTelemetry spans
   (``OBSERVED_USAGE``), matched to calls in order within each session, main calls to main
   rows and sub-agent calls to sub-agent rows.
2. ``calibrated``: reconstructed from the log with the agent-loop growth model, then scaled so
   the calls of each model add up exactly to the shutdown's per-model totals.
3. ``estimated``: reconstructed, with no total to scale to (no shutdown: a crash, or calls
   after the last shutdown).

The reconstruction fits each session's unknowns (the fixed part of each kind of agent and
model, tokens per byte of tool output, prose and tool arguments, tokens per item) to every
constraint the log carries: the shutdown's Σ input and Σ cache read per model, observed calls,
sub-agent totals, compaction and context sizes. Calibration then apportions the shutdown's
exact totals over the calls in proportion to the fitted prompts. Cache reads and writes follow
prompt caching: a call within the cache TTL of the previous call of the same model and agent
reads what that call left cacheable and writes the new part; the split is apportioned to the
shutdown's cache totals, exactly. Token arithmetic is integer.

The native engine runs the whole stage, one session at a time and in parallel
(``native/agents/copilot/tokens.rs``, with ``fit.rs`` and ``calibrate.rs``); this module
hands it the frames as Arrow streams and takes back the columns it sets. The polars stage it
replaced is the oracle in ``tests/oracle/reference/tokens.py``. The engine's pass runs it
on its folds (``engine_pass``); ``validate`` and the corpus of other agents' logs measure
it through the pipeline contract (``Pipeline.reconstruction``).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from analytics import _scanner
from analytics.agents.copilot.tables import PASS_CALLS
from analytics.core.schema import (
    CALLS,
    ISSUES,
    MODEL_METRICS,
    OBSERVED_USAGE,
    conform,
    empty,
)

#: The EVENTS columns the stage reads (the engine's pass gathers only these for it,
#: ``agents.copilot.engine_pass.pass_group``).
TOKEN_COLUMNS = _scanner.copilot_token_columns()
#: The session columns the stage sets: the calls' sums, their models and the fit.
SESSION_TOKENS = [
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "models",
    "fit_constraints",
    "fit_residual_pct",
    "fit_determined",
    "fit_from_prior",
    "fit_parameters",
]
#: What the stage hands the engine of the calls and sessions: of the sessions, what the
#: shutdown says (the columns of Copilot's own session table, ``agents.copilot.tables``).
_CALL_INPUT = list(CALLS)
SESSION_INPUT: dict[str, pl.DataType] = {
    "session_id": pl.String(),
    "shutdown_mode": pl.String(),
    "shutdown_requests": pl.Int64(),
    "token_totals_source": pl.String(),
    "byok": pl.Boolean(),
    "llm_calls": pl.Int64(),
}


def call_tokens_and_fit(
    calls: pl.DataFrame,
    events: pl.DataFrame,
    sessions: pl.DataFrame,
    model_metrics: pl.DataFrame,
    observed: pl.DataFrame | None = None,
    *,
    use_observed: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(Copilot's calls with their tokens, ``PASS_CALLS``, in session and event order; ISSUES;
    the sessions' figures). ``observed`` is an OBSERVED_USAGE frame.
    ``use_observed=False`` ignores every per-call record and reconstructs all calls: what
    ``agentcost validate`` compares against the records to measure the reconstruction's error.

    The sessions' figures (session_id and ``SESSION_TOKENS``, one row per session) go to
    SESSIONS with ``with_call_totals``. The engine's pass runs the same stage on its folds
    (``agents.copilot.engine_pass.pass_group`` with ``usage``); this runs it on tables, for
    ``validate``, the corpus and the report's blind reconstruction.
    """
    narrow = events.select([c for c in TOKEN_COLUMNS if c in events.columns])
    records = conform(observed if observed is not None else empty(OBSERVED_USAGE), OBSERVED_USAGE)
    # the engine gives the calls of each session in turn, sessions by id, calls by event
    ordered = calls.sort("session_id", "event_seq", maintain_order=True)
    figures, totals, issues = _scanner.copilot_tokens(
        narrow.rechunk().__arrow_c_stream__(),
        ordered.select(_CALL_INPUT).rechunk().__arrow_c_stream__(),
        sessions.select(list(SESSION_INPUT)).rechunk().__arrow_c_stream__(),
        conform(model_metrics, MODEL_METRICS).rechunk().__arrow_c_stream__(),
        records.rechunk().__arrow_c_stream__(),
        use_observed=use_observed,
    )
    return (
        with_tokens(ordered, figures),
        conform(pl.DataFrame(issues), ISSUES),
        pl.DataFrame(totals),
    )


def with_tokens(calls: pl.DataFrame, figures: _scanner.ArrowTable) -> pl.DataFrame:
    """Copilot's calls (``PASS_CALLS``: CALLS + CALL_TOKENS and the bill of each): ``calls``
    with the columns the engine's token stage set, aligned with its rows."""
    return conform(calls.with_columns(pl.DataFrame(figures).get_columns()), PASS_CALLS)


def with_call_totals(
    sessions: pl.DataFrame, totals: pl.DataFrame, contract: Mapping[str, pl.DataType]
) -> pl.DataFrame:
    """``sessions`` (in ``contract``: the pipeline's, with the agent's own columns) with the
    figures of ``call_tokens_and_fit``: the sums of their calls' tokens, their models as the
    calls now name them, and the fit.

    A session's tokens are its calls' sums, compaction calls and every process included,
    so that ``analyze``, ``--calls`` and the period reports agree to the token; the log's own
    totals stay beside them as the check they are (``logged_*``). A session without calls
    sent nothing (0); one whose calls give no figure at all is unknown (null).

    ``totals`` with a row per session in the sessions' own order (as the engine's pass gives
    them, ``agents.copilot.engine_pass.pass_group``) are set beside the rows; others are joined.
    """
    kept = sessions.drop(SESSION_TOKENS, strict=False)
    if totals["session_id"].equals(sessions["session_id"]):
        return conform(kept.hstack(totals.drop("session_id").get_columns()), contract)
    joined = kept.join(totals, on="session_id", how="left", maintain_order="left")
    return conform(joined, contract)
