"""Measure the per-call token reconstruction against per-call truth.

Wherever a session has observed per-call tokens (session-store rows, OTel spans, SDK
``assistant.usage``), the calls are reconstructed again as if those records did not exist
(the pipeline's ``reconstruction().call_tokens_and_fit(..., use_observed=False)``: calibrated
to the shutdown totals where the log has them) and compared call by call. The result is the
reconstruction's measured error, per session and overall; the README quotes it.

Claude Code sessions hold every call's true usage and its content, so they are measured too
(``corpus.py``): reconstructed from content with only each session's per-model totals known,
and from content alone (every call estimated, with its 80% interval).
"""

from __future__ import annotations

import polars as pl

from analytics.agents.checks import CHECK_COLUMNS
from analytics.agents.discover import COPILOT
from analytics.agents.pipeline import pipeline
from analytics.agents.reader import log_checks as agent_log_checks
from analytics.core import registry
from analytics.core.schema import CALLS, conform
from analytics.engine.analyze import Analysis
from analytics.engine.corpus import beside_truth, corpus_errors


def reconstruction_errors(result: Analysis) -> pl.DataFrame:
    """One row per observed Copilot call: observed vs reconstructed input tokens and the
    error.

    Sessions are independent, so they are reconstructed a group at a time
    (``Analysis.session_groups``): memory follows a group, not the tree.
    """
    parts = [_errors(group) for group in result.session_groups()]
    return pl.concat(parts).sort("session_id", "call_index")


def content_errors(result: Analysis, agent: str, *, with_totals: bool) -> pl.DataFrame:
    """``corpus.corpus_errors`` of ``agent``'s sessions in ``result`` (an agent whose logs
    hold content and true usage: ``registry.with_content_truth``; a group of sessions at a
    time): with only their per-model totals known, or none."""
    parts = [
        corpus_errors(
            group.calls.filter(pl.col("agent") == agent),
            group.events,
            with_totals=with_totals,
        )
        for group in result.session_groups()
    ]
    return pl.concat(parts).sort("session_id", "call_index")


def validation_summary(result: Analysis) -> tuple[pl.DataFrame, int]:
    """(``error_summary`` of the Copilot calls with observed records (left out where there
    are none but Claude Code calls are measured), then of the Claude Code sessions with their
    per-model totals (``CLAUDE CODE totals``) and without (``CLAUDE CODE no totals``), by
    kind of call; the number of calls compared). Codex calls are not reconstructed: their
    logs hold no content sizes the model reads (``log_checks`` checks them instead)."""
    errors = reconstruction_errors(result)
    corpus = {
        f"{agent.name.upper()} {name}": content_errors(result, agent.id, with_totals=with_totals)
        for agent in registry.with_content_truth()
        for name, with_totals in (("totals", True), ("no totals", False))
    }
    parts = [
        error_summary(found, label, per_session=False)
        for label, found in corpus.items()
        if found.height
    ]
    if errors.height or not parts:  # no Copilot call to measure: no empty Copilot rows
        parts.insert(0, error_summary(errors))
    compared = errors.height + sum(found.height for found in corpus.values())
    return pl.concat(parts, how="vertical_relaxed"), compared


def log_checks(result: Analysis) -> pl.DataFrame:
    """Each agent's logs' own usage checked against itself (``agents.checks``): one row per
    agent whose logs ``result`` read and whose reader has a ``log_check``."""
    rows = [pl.DataFrame(schema=CHECK_COLUMNS)]
    for agent, check in agent_log_checks():
        files = [log.file for found, log in result.found.agent_logs if found == agent.id]
        if files:
            rows.append(check(files, result.calls.filter(pl.col("agent") == agent.id)))
    return pl.concat(rows)


def _errors(result: Analysis) -> pl.DataFrame:
    """``reconstruction_errors`` of whole sessions whose events are at hand."""
    copilot = result.calls.filter(pl.col("agent") == COPILOT)
    blind, _, _ = (
        pipeline()
        .reconstruction()
        .call_tokens_and_fit(
            copilot, result.events, result.session_view, result.model_metrics, use_observed=False
        )
    )
    return _compared(copilot.filter(pl.col("token_source") == "observed"), blind)


def _compared(observed: pl.DataFrame, blind: pl.DataFrame) -> pl.DataFrame:
    """Observed calls beside their blind reconstruction, with the absolute error in percent."""
    truth = observed.select(
        "session_id", "call_index", "kind", "model", pl.col("input_tokens").alias("observed")
    )
    return beside_truth(truth, blind)


def error_summary(
    errors: pl.DataFrame, label: str = "ALL", *, per_session: bool = True
) -> pl.DataFrame:
    """Per session (unless ``per_session`` is false), then overall by kind of call
    (``ALL main``, ``ALL subagent``, ...) and for every call (``ALL``; ``label`` names these
    rows): calls, median, p90 and max error, the share inside the 80% interval."""
    stats = [
        *error_stats(),
        pl.col("observed").sum().alias("observed_input_tokens"),
        pl.col("reconstructed").sum().alias("reconstructed_input_tokens"),
        pl.col("method").unique().sort().str.join(",").alias("methods"),
    ]
    sessions = errors.group_by("session_id").agg(stats).sort("session_id")
    per_kind = (
        errors.group_by(pl.format(f"{label} {{}}", "kind").alias("session_id"))
        .agg(stats)
        .sort("session_id")
    )
    overall = errors.select(pl.lit(label).alias("session_id"), *stats)
    parts = [sessions, per_kind, overall] if per_session else [per_kind, overall]
    return pl.concat(parts, how="vertical_relaxed")


def error_stats() -> list[pl.Expr]:
    """Calls, median, p90 and max absolute error of a group of compared calls, and how many
    carry an 80% interval (``low``, ``high``: the estimated ones) with the share of those
    whose true input falls inside it (an honest interval holds about 80%)."""
    with_interval = pl.col("low").is_not_null()
    inside = (pl.col("observed") >= pl.col("low")) & (pl.col("observed") <= pl.col("high"))
    return [
        pl.len().alias("calls"),
        pl.col("abs_error_pct").median().round(2).alias("median_abs_error_pct"),
        pl.col("abs_error_pct").quantile(0.9, "nearest").round(2).alias("p90_abs_error_pct"),
        pl.col("abs_error_pct").max().round(2).alias("max_abs_error_pct"),
        with_interval.sum().alias("with_interval"),
        pl.when(with_interval.any())
        .then((inside.filter(with_interval).mean() * 100).round(1))
        .alias("inside_interval_pct"),
    ]


def with_reconstruction(analysis: Analysis) -> pl.DataFrame:
    """``analysis.call_view`` plus ``reconstructed_input_tokens``: the tokens the log alone implies.

    Shown beside observed per-call tokens so the reconstruction's error is visible. Copilot
    calls are reconstructed from their log (calibrated to its shutdown); Claude Code calls
    from their content with only the session's per-model totals (``engine.corpus``), since the
    log holds both; Codex calls are not (null).
    """
    rebuilt = []
    copilot = analysis.calls.filter(pl.col("agent") == COPILOT)
    if not copilot.is_empty():
        calls, _, _ = (
            pipeline()
            .reconstruction()
            .call_tokens_and_fit(
                conform(copilot, CALLS),
                analysis.events,
                analysis.session_view,
                analysis.model_metrics,
                use_observed=False,
            )
        )
        rebuilt.append(calls.select("session_id", "call_index", "input_tokens"))
    claude = analysis.calls.filter(
        pl.col("agent").is_in(registry.ids(registry.with_content_truth()))
    )
    if not claude.is_empty():
        compared = corpus_errors(claude, analysis.events, with_totals=True, min_calls=1)
        rebuilt.append(
            compared.select(
                "session_id", "call_index", pl.col("reconstructed").alias("input_tokens")
            )
        )
    if not rebuilt:
        return analysis.call_view.with_columns(
            pl.lit(None, pl.Int64).alias("reconstructed_input_tokens")
        )
    return analysis.call_view.join(
        pl.concat(rebuilt).rename({"input_tokens": "reconstructed_input_tokens"}),
        on=["session_id", "call_index"],
        how="left",
    )
