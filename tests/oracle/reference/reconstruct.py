"""The reconstruction's constants and per-session inputs as polars built them before the engine
(``native/agents/copilot/tokens.rs``) took the token stage over; the oracle's (see
``tests/oracle/reference/fit.py``). Each call's prompt tokens, reconstructed as a fit to every
constraint the log carries.

The agent-loop model: call k of an agent sends a fixed part (system prompt + tool
definitions, one unknown per kind of agent and model: ``fixed:main|<model>``,
``fixed:<sub-agent name>|<model>``) plus everything the agent's conversation holds before the
call, converted at an unknown tokens-per-byte ratio per kind of content (``tool``: tool
results, i.e. code and command output; ``prose``: user, assistant and skill text; ``json``:
tool-call arguments) and an unknown number of tokens per item (``item``: the framing of each
message). After a compaction the agent restarts from the stated post-compaction size; where
the compaction states none (Claude Code, Codex), from its fixed part and the summary (prose).

Every call's prompt is linear in those unknowns, and so is every figure the log states about
them (schema doc §0b.10), so the unknowns are solved per session by weighted least squares
against (``_constraints``):

- Σ input and Σ cache read per model of each shutdown segment, where the calls counted equal
  the shutdown's requests. With prompt caching, call k reads what call k-1 sent, except the
  newest user messages, which the CLI re-sends in another form (real captures: the call after
  a prompt reads only the part before it); so Σ input and Σ cache read pin down the fixed
  part and the growth separately.
- each observed call's input and cache read (other calls of a session with partial records);
- ``subagent.completed.totalTokens`` minus the sub-agent's outputs (its calls' Σ input);
- ``preCompactionTokens`` (the prompt at a compaction) and ``systemTokens +
  toolDefinitionsTokens`` (the main fixed part), as looser context-size figures: in real
  captures ``currentTokens`` runs 12-15% below the billed input of the same call, so they
  are weighted at 10%, the sums at 2%. ``usage_checkpoint`` bills are money, not tokens
  (they would need the prices), and are not used.

Where the constraints leave an unknown free, a documented prior (``PRIORS``) decides; after
the fit, an unknown whose standard error is under half its prior's counts as determined by
the log (``fit_determined``), the others as from the prior (``fit_from_prior``).
``fit_residual_pct`` is the root mean square of the constraints' relative misfit. The fit is
an estimate: ``tokens.py`` then apportions the shutdown's exact totals over the calls in
proportion to it (``calibrated``) or keeps it as it is (``estimated``).
"""

from __future__ import annotations

import polars as pl

from analytics.agents.copilot.tables import PASS_SESSIONS

#: Content kinds and the item count: the unknowns shared by every agent of a session, with
#: their prior (mean, standard deviation) in tokens per byte (per item for ``item``). Code
#: and command output tokenize at about 2.5-3 bytes per token and English prose at about 4
#: with the Claude and GPT tokenizers (schema doc §0b.9); JSON arguments fall between.
PRIORS: dict[str, tuple[float, float]] = {
    "tool": (0.36, 0.12),
    "prose": (0.25, 0.08),
    "json": (0.30, 0.10),
    "item": (8.0, 8.0),
    # tokens of a sub-agent's task prompt: part of its first prompt that, like a user
    # message, the next call does not read back from cache (the log holds it only inside
    # the parent's tool request)
    "task": (800.0, 800.0),
}
#: Prior of the main agent's fixed part, in tokens: where the log has the system message,
#: its text at 4 bytes a token plus ``TOOL_DEFINITIONS_PRIOR`` (the middle of the values real
#: 1.0.49-1.0.91 logs state, 8,395-13,097); else the middle of the 8k-40k seen in real logs.
MAIN_FIXED_PRIOR = (20_000.0, 12_000.0)
TOOL_DEFINITIONS_PRIOR = 11_000
SYSTEM_FIXED_SD = 6_000.0
#: Prior of a sub-agent's fixed part (its own, smaller prompt and tools: 5k-26k in real logs).
SUB_FIXED_PRIOR = (12_000.0, 10_000.0)
#: How far a sub-agent's fixed part is expected to be from the main agent's. This and
#: ``SUM_SD``, ``CONTEXT_SD``, ``DETERMINED`` are the fit's constants: the engine's
#: ``native/agents/copilot/fit.rs`` uses the same values (its oracle in ``tests/reference`` reads
#: them from here, so the differential test fails if the two part).
LINK_SD = 8_000.0
#: Relative standard error of a constraint: exact sums and observed calls, context sizes.
SUM_SD, CONTEXT_SD = 0.02, 0.10
#: Prompt cache lifetime for the read/write split (Anthropic's default: 5 minutes).
CACHE_TTL_MS = 5 * 60 * 1000
#: An unknown is "determined" when the log narrows its standard error below this share of
#: its prior's.
DETERMINED = 0.5

RATES = tuple(PRIORS)
_ITEMS = {
    "user.message": "prose",
    "assistant.message": "prose",
    "tool.execution_complete": "tool",
    "skill.invoked": "prose",
}

#: Per-session fit figures: the ``fit_*`` columns of Copilot's sessions.
FIT: dict[str, pl.DataType] = {k: v for k, v in PASS_SESSIONS.items() if k.startswith("fit_")}


def subagent_runs(events: pl.DataFrame) -> pl.DataFrame:
    """Each sub-agent's ``totalTokens`` (input + output of all its calls): (session_id,
    _agent, total_tokens), keyed by its agent id and by its task's tool call id (the last
    line wins)."""
    runs = events.filter(
        pl.col("event_type").is_in(["subagent.completed", "subagent.failed"])
        & pl.col("total_tokens").is_not_null()
    )
    return (
        pl.concat(
            [
                runs.select("session_id", pl.col(key).alias("_agent"), "total_tokens")
                for key in ("agent_id", "tool_call_id")
            ]
        )
        .drop_nulls("_agent")
        .unique(["session_id", "_agent"], keep="last")
    )


def stated_fixed_tokens(events: pl.DataFrame) -> pl.DataFrame:
    """``systemTokens + toolDefinitionsTokens`` (a shutdown's or compaction's, the first that
    gives both): the main fixed part as the log states it, (session_id, y)."""
    return (
        events.filter(
            pl.col("system_tokens").is_not_null() & pl.col("tool_definitions_tokens").is_not_null()
        )
        .group_by("session_id")
        .agg((pl.col("system_tokens") + pl.col("tool_definitions_tokens")).first().alias("y"))
    )


def priors_for(x: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """(session_id, param, mean, sd): every unknown of each session and its prior."""
    system = (
        events.filter((pl.col("event_type") == "system.message") & pl.col("agent_id").is_null())
        .group_by("session_id")
        .agg(pl.col("content_bytes").first().alias("_system_bytes"))
    )
    keys = x.select("session_id", "_fkey", (pl.col("_agent") == "main").alias("_main")).unique(
        ["session_id", "_fkey"]
    )
    main_mean, main_sd = MAIN_FIXED_PRIOR
    sub_mean, sub_sd = SUB_FIXED_PRIOR
    fixed = keys.join(system, on="session_id", how="left").select(
        "session_id",
        pl.col("_fkey").alias("param"),
        pl.when(~pl.col("_main"))
        .then(sub_mean)
        .when(pl.col("_system_bytes").is_not_null())
        .then((pl.col("_system_bytes") + 3) // 4 + TOOL_DEFINITIONS_PRIOR)
        .otherwise(main_mean)
        .cast(pl.Float64)
        .alias("mean"),
        pl.when(~pl.col("_main"))
        .then(sub_sd)
        .when(pl.col("_system_bytes").is_not_null())
        .then(SYSTEM_FIXED_SD)
        .otherwise(main_sd)
        .alias("sd"),
    )
    sessions = x.select("session_id").unique()
    rates = pl.DataFrame(
        {
            "param": list(PRIORS),
            "mean": [m for m, _ in PRIORS.values()],
            "sd": [s for _, s in PRIORS.values()],
        }
    )
    return pl.concat([fixed, sessions.join(rates, how="cross")], how="vertical_relaxed")
