"""How far off an estimated call's input may be, as polars computed it before the engine
(``native/agents/copilot/tokens.rs``, ``bounds``) took it over: an 80% interval from the
fit and the priors. The oracle's (``tests/oracle/reference/tokens.py``).

A call's fitted prompt is linear in its session's unknowns (``reconstruct.py``): its fixed
part, once (``_c_fixed``), plus the bytes and items of its conversation times the tokens per
byte or per item of each content kind (``x_*``). The fit returns each unknown's posterior
standard error (``native/agents/copilot/fit.rs``: the diagonal of (XᵀWX + P)⁻¹, so it is the
prior's where the log says nothing about an unknown, and narrower where it does). The call's
standard error is then √(Σ coefficient² · se²) over its unknowns (the unknowns' correlations
left out: with no totals, the only case an interval is shown for a call the log does not pin,
they are the priors', which are independent).

On top of the unknowns, the model itself is off per call (a tokenizer is not a fixed number
of tokens per byte of each kind; a prompt holds parts the log does not show): ``MODEL_SD``,
measured on the real Claude Code corpus (``analytics/engine/corpus.py``) as the spread of the
per-call error once each session's unknowns are pinned by its totals. The interval is the
estimate ± ``Z80`` standard errors, computed in Python from what the fit returns rather than
in the engine because it needs only the regressors and the standard errors, both at hand here.
"""

from __future__ import annotations

import polars as pl

#: The two-sided 80% quantile of the normal distribution.
Z80 = 1.2816
#: Relative per-call error of the content-to-tokens model with the unknowns known.
MODEL_SD = 0.10
#: The regressors, as ``reconstruct.py`` names them, and the unknown each multiplies.
_RATES = ("tool", "prose", "json", "item", "task")


def estimate_sd(x: pl.DataFrame, parameters: pl.DataFrame) -> pl.DataFrame:
    """(session_id, event_seq, ``_estimate_sd``): each call's standard error in tokens.

    ``x`` is the regressors (``_fkey``, ``_c_fixed``, ``x_*``); ``parameters`` the fit's
    unknowns (session_id, param, sd). Null where an unknown's standard error is unknown."""
    se = parameters.select("session_id", "param", "sd")
    fixed = se.rename({"param": "_fkey", "sd": "_se_fixed"})
    rates = se.filter(pl.col("param").is_in(_RATES)).pivot(
        on="param", index="session_id", values="sd"
    )
    rates = rates.with_columns(
        pl.lit(None, pl.Float64).alias(name) for name in _RATES if name not in rates.columns
    ).rename({name: f"_se_{name}" for name in _RATES})
    joined = x.select("session_id", "event_seq", "_fkey", "_c_fixed", *(f"x_{r}" for r in _RATES))
    joined = joined.join(fixed, on=["session_id", "_fkey"], how="left").join(
        rates, on="session_id", how="left"
    )
    terms = [(pl.col("_c_fixed") * pl.col("_se_fixed")) ** 2] + [
        (pl.col(f"x_{r}") * pl.col(f"_se_{r}").fill_null(0.0)) ** 2 for r in _RATES
    ]
    return joined.select(
        "session_id", "event_seq", pl.sum_horizontal(terms).sqrt().alias("_estimate_sd")
    )


def bounds(estimate: str, sd: str, tokens: str, show: pl.Expr) -> list[pl.Expr]:
    """``input_tokens_low`` and ``input_tokens_high`` of the calls where ``show`` holds: the
    call's ``tokens`` ± ``Z80`` times its relative standard error (the fit's ``sd`` over its
    ``estimate``, and ``MODEL_SD``), the low end at 0 at least; null elsewhere."""
    relative = (
        (pl.col(sd) / pl.col(estimate).cast(pl.Float64).clip(lower_bound=1.0)) ** 2 + MODEL_SD**2
    ).sqrt()
    half = pl.col(tokens).cast(pl.Float64) * relative * Z80
    keep = show & pl.col(tokens).is_not_null() & pl.col(sd).is_not_nan()
    return [
        pl.when(keep)
        .then((pl.col(tokens) - half).clip(lower_bound=0.0).round(0).cast(pl.Int64))
        .alias("input_tokens_low"),
        pl.when(keep)
        .then((pl.col(tokens) + half).round(0).cast(pl.Int64))
        .alias("input_tokens_high"),
    ]
