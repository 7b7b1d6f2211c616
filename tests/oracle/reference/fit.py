"""The reconstruction as polars ran it before the engine (``native/agents/copilot/fit.rs``) took
it over: the regressors (``regressors``), the constraint rows (``constraints``), and
weighted least squares with priors, per session, in long-form frames (``fit``). Kept as
the engine's oracle (``tests/oracle/test_engine_differential.py``); nothing at run time imports it.
"""

from __future__ import annotations

import polars as pl

from analytics import _scanner
from tests.oracle.reference.intervals import estimate_sd
from tests.oracle.reference.reconstruct import (
    _ITEMS,
    CACHE_TTL_MS,
    CONTEXT_SD,
    DETERMINED,
    FIT,
    LINK_SD,
    RATES,
    SUM_SD,
    stated_fixed_tokens,
    subagent_runs,
)

_X = [f"x_{p}" for p in RATES]
_P = [f"p_{p}" for p in RATES]


def regressors(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Per call, what its prompt is made of: ``_agent``, ``_fkey`` (its fixed part's unknown),
    ``_c_fixed`` (1, or 0 after a compaction that states its size), bytes and items so far per
    content kind (``x_*``), the same for the prefix the next call can read from cache (``p_*``:
    without the newest user messages), ``_offset`` (tokens stated by a compaction),
    ``_prev_seq`` (the previous call of its agent and model, if its cache is still warm) and
    ``_prev_part`` (``prefix``, or ``fixed`` after a compaction: what of that call is still
    cached)."""
    agent = pl.coalesce("agent_id", "parent_tool_call_id", pl.lit("main")).alias("_agent")
    request = (
        pl.col("tool_request_bytes").fill_null(0)
        if "tool_request_bytes" in events.columns
        else pl.lit(0, pl.Int64)
    )
    size = pl.col("content_bytes").fill_null(0)
    kind = pl.col("event_type")
    # a compaction that states no size: the agent goes on from its fixed part and the
    # summary (prose)
    unsized = (kind == "session.compaction_complete") & pl.col("post_compaction_tokens").is_null()
    items = (
        events.filter(kind.is_in([*_ITEMS, "session.compaction_complete"]))
        .select(
            "session_id",
            "event_seq",
            agent,
            (kind == "session.compaction_complete").alias("_reset"),
            pl.when(kind == "tool.execution_complete").then(size).otherwise(0).alias("x_tool"),
            pl.when(kind.is_in(["user.message", "assistant.message", "skill.invoked"]) | unsized)
            .then(size - pl.when(kind == "assistant.message").then(request).otherwise(0))
            .otherwise(0)
            .alias("x_prose"),
            pl.when(kind == "assistant.message").then(request).otherwise(0).alias("x_json"),
            (kind.is_in(list(_ITEMS)) | unsized).cast(pl.Int64).alias("x_item"),
            pl.when(kind == "user.message").then(size).otherwise(0).alias("_user_bytes"),
            (kind == "user.message").cast(pl.Int64).alias("_user_items"),
            pl.col("post_compaction_tokens"),
        )
        .sort("session_id", "event_seq")
        .with_columns(pl.col("_reset").cum_sum().over("session_id", "_agent").alias("_epoch"))
    )
    sums = ["x_tool", "x_prose", "x_json", "x_item", "_user_bytes", "_user_items"]
    items = items.with_columns(
        *(pl.col(c).cum_sum().over("session_id", "_agent", "_epoch") for c in sums),
        pl.col("post_compaction_tokens")
        .forward_fill()
        .over("session_id", "_agent", "_epoch")
        .fill_null(0)
        .alias("_offset"),
        pl.col("post_compaction_tokens")
        .forward_fill()
        .over("session_id", "_agent", "_epoch")
        .alias("_stated"),
    )
    keyed = calls.with_columns(
        pl.when(pl.col("kind") == "subagent")
        .then(pl.col("agent_id"))
        .otherwise(pl.lit("main"))
        .alias("_agent"),
    ).sort("session_id", "event_seq")
    placed = keyed.join_asof(
        items.drop("_reset", "post_compaction_tokens"),
        on="event_seq",
        by=["session_id", "_agent"],
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
    ).with_columns(
        *(pl.col(c).fill_null(0) for c in [*sums, "_offset", "_epoch"]),
    )
    chain = ["session_id", "_agent", "model"]
    ended = pl.coalesce("end_time", "start_time").shift(1).over(chain)
    gap = (pl.col("start_time") - ended).dt.total_milliseconds()
    newest_bytes = pl.col("_user_bytes") - pl.col("_user_bytes").shift(1).over(chain).fill_null(0)
    newest_items = pl.col("_user_items") - pl.col("_user_items").shift(1).over(chain).fill_null(0)
    same_epoch = pl.col("_epoch") == pl.col("_epoch").shift(1).over(chain)
    return placed.with_columns(
        pl.format(
            "fixed:{}|{}",
            pl.when(pl.col("_agent") == "main")
            .then(pl.lit("main"))
            .otherwise(pl.coalesce("agent_name", pl.lit("subagent"))),
            pl.col("model").fill_null("?"),
        ).alias("_fkey"),
        ((pl.col("_epoch") == 0) | pl.col("_stated").is_null()).cast(pl.Int64).alias("_c_fixed"),
        pl.col("x_tool").alias("p_tool"),
        (pl.col("x_prose") - newest_bytes.clip(lower_bound=0)).alias("p_prose"),
        pl.col("x_json").alias("p_json"),
        (pl.col("x_item") - newest_items.clip(lower_bound=0)).alias("p_item"),
        pl.lit(0, pl.Int64).alias("x_task"),
        pl.when(
            (pl.col("_agent") != "main")
            & (pl.col("event_seq") == pl.col("event_seq").min().over("session_id", "_agent"))
            & (pl.col("_user_items") == 0)
        )
        .then(-1)
        .otherwise(0)
        .alias("p_task"),
        pl.when((gap <= CACHE_TTL_MS).fill_null(False))
        .then(pl.col("event_seq").shift(1).over(chain))
        .alias("_prev_seq"),
        # What of the previous prompt is still cached: after a compaction in between, only
        # its fixed part (the summary replaced the conversation after it).
        pl.when(same_epoch.fill_null(True))
        .then(pl.lit("prefix"))
        .otherwise(pl.lit("fixed"))
        .alias("_prev_part"),
    ).drop("_user_bytes", "_user_items", "_epoch", "_stated")


def _coefficients(x: pl.DataFrame) -> pl.DataFrame:
    """Long form: (session_id, event_seq, part, param, value) for the prompt (``prompt``) and
    the cacheable prefix (``prefix``) of each call, and its fixed part alone (``fixed``)."""
    base = ["session_id", "event_seq"]
    fixed = x.select(*base, pl.col("_fkey").alias("param"), pl.col("_c_fixed").cast(pl.Float64))
    parts = []
    for part, cols in (("prompt", _X), ("prefix", _P)):
        parts.append(fixed.rename({"_c_fixed": "value"}).with_columns(pl.lit(part).alias("part")))
        parts.extend(
            x.select(
                *base,
                pl.lit(part).alias("part"),
                pl.lit(name).alias("param"),
                pl.col(col).cast(pl.Float64).alias("value"),
            )
            for name, col in zip(RATES, cols, strict=True)
        )
    parts.append(
        x.select(
            *base,
            pl.lit("fixed").alias("part"),
            pl.col("_fkey").alias("param"),
            pl.lit(1.0).alias("value"),
        )
    )
    return pl.concat(parts, how="diagonal_relaxed").filter(pl.col("value") != 0)


def fit(
    x: pl.DataFrame,
    members: pl.DataFrame,
    targets: pl.DataFrame,
    priors: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Solve each session's unknowns; return (per-call ``_estimate`` and ``_prefix_estimate``
    and ``_fixed``, per-session ``FIT`` columns).

    ``members``: (session_id, row, event_seq, part) — which calls' prompt, prefix or fixed
    part a constraint row sums; ``targets``: (session_id, row, y, sd, at_least: the row only
    bounds the prediction from below); ``priors``:
    (session_id, param, mean, sd) for every unknown of the session.
    """
    coef = _coefficients(x)
    offsets = x.select("session_id", "event_seq", "_offset")
    a = (
        members.join(coef, on=["session_id", "event_seq", "part"])
        .group_by("session_id", "row", "param")
        .agg(pl.col("value").sum())
    )
    offset = (
        members.filter(pl.col("part") != "fixed")
        .join(offsets, on=["session_id", "event_seq"])
        .group_by("session_id", "row")
        .agg(pl.col("_offset").sum().cast(pl.Float64).alias("_off"))
    )
    rows = (
        targets.join(offset, on=["session_id", "row"], how="left")
        .with_columns(
            (pl.col("y") - pl.col("_off").fill_null(0)).alias("_y"),
            (1 / pl.col("sd") ** 2).alias("_w"),
        )
        .join(a.select("session_id", "row").unique(), on=["session_id", "row"], how="semi")
    )
    # Cache reads only bound the prompts from below: a cache miss (another server, an evicted
    # entry) reads less than the previous prompt, never more. So a read row the fit already
    # exceeds is dropped and the fit solved again (an active set; two rounds suffice).
    for _ in range(3):
        solved = _solve(priors, _with_links(_gram(a, rows), priors), _rhs(a, rows))
        theta = solved.select("session_id", "param", "theta")
        predicted = (
            a.join(theta, on=["session_id", "param"])
            .group_by("session_id", "row")
            .agg((pl.col("value") * pl.col("theta")).sum().alias("_pred"))
        )
        slack = rows.join(predicted, on=["session_id", "row"], how="left").filter(
            pl.col("at_least") & (pl.col("_pred").fill_null(0) > pl.col("_y"))
        )
        if not slack.height:
            break
        rows = rows.join(slack.select("session_id", "row"), on=["session_id", "row"], how="anti")
    spread = estimate_sd(x, solved.select("session_id", "param", pl.col("se").alias("sd")))
    estimate = _apply(coef, theta, offsets).join(spread, on=["session_id", "event_seq"], how="left")
    summary = (
        rows.join(predicted, on=["session_id", "row"], how="left")
        .group_by("session_id")
        .agg(
            pl.len().cast(pl.Int64).alias("fit_constraints"),
            (
                (
                    (pl.col("_pred").fill_null(0) - pl.col("_y"))
                    / pl.max_horizontal(pl.col("y").abs(), pl.lit(1.0))
                )
                ** 2
            )
            .mean()
            .sqrt()
            .mul(100)
            .round(2)
            .alias("fit_residual_pct"),
        )
    )
    flags = solved.group_by("session_id").agg(
        pl.col("param").filter(pl.col("determined")).sort().alias("fit_determined"),
        pl.col("param").filter(~pl.col("determined")).sort().alias("fit_from_prior"),
        pl.struct(pl.col("param").alias("name"), pl.col("theta").round(4).alias("value"))
        .sort_by("param")
        .alias("fit_parameters"),
    )
    fit_frame = flags.join(summary, on="session_id", how="left").with_columns(
        pl.col("fit_constraints").fill_null(0)
    )
    return estimate, fit_frame.select("session_id", *FIT)


def _gram(a: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Per session, XᵀWX in long form (session_id, param, q, g)."""
    weighted = a.join(rows.select("session_id", "row", "_w"), on=["session_id", "row"])
    return (
        weighted.join(a.rename({"param": "q", "value": "vq"}), on=["session_id", "row"])
        .group_by("session_id", "param", "q")
        .agg((pl.col("_w") * pl.col("value") * pl.col("vq")).sum().alias("g"))
    )


def _rhs(a: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Per session, XᵀWy in long form (session_id, param, b)."""
    weighted = a.join(rows.select("session_id", "row", "_y", "_w"), on=["session_id", "row"])
    return weighted.group_by("session_id", "param").agg(
        (pl.col("_w") * pl.col("value") * pl.col("_y")).sum().alias("b")
    )


def _apply(coef: pl.DataFrame, theta: pl.DataFrame, offsets: pl.DataFrame) -> pl.DataFrame:
    """Per call: the fitted prompt, prefix and fixed part, in whole tokens."""
    parts = (
        coef.join(theta, on=["session_id", "param"])
        .group_by("session_id", "event_seq", "part")
        .agg((pl.col("value") * pl.col("theta")).sum().alias("_t"))
        .pivot("part", index=["session_id", "event_seq"], values="_t")
    )
    for part in ("prompt", "prefix", "fixed"):
        if part not in parts.columns:
            parts = parts.with_columns(pl.lit(0.0).alias(part))
    off = pl.col("_offset").cast(pl.Float64)
    return offsets.join(parts, on=["session_id", "event_seq"], how="left").select(
        "session_id",
        "event_seq",
        (pl.col("prompt").fill_null(0) + off).round().cast(pl.Int64).alias("_estimate"),
        (pl.col("prefix").fill_null(0) + off).round().cast(pl.Int64).alias("_prefix_estimate"),
        pl.col("fixed").fill_null(0).round().cast(pl.Int64).alias("_fixed"),
    )


def _with_links(gram: pl.DataFrame, priors: pl.DataFrame) -> pl.DataFrame:
    """Add the prior that a session's fixed parts are alike (``LINK_SD``): every agent of a
    session gets the CLI's base prompt and most of its tools, so where the totals cannot tell
    the main agent's fixed part from its sub-agents' (one model for all), they stay close
    rather than each at its own prior; so do the main agent's parts under different models
    (the same text, other tokenizers). A term (θ_k - θ_main)² / LINK_SD² per other key."""
    fixed = priors.filter(pl.col("param").str.starts_with("fixed:"))
    # The anchor: the main agent's key (its first model in name order), else any key.
    anchor = fixed.group_by("session_id").agg(
        pl.col("param")
        .sort_by(~pl.col("param").str.starts_with("fixed:main|"), "param")
        .first()
        .alias("_main")
    )
    pairs = fixed.join(anchor, on="session_id").filter(pl.col("param") != pl.col("_main"))
    w = 1 / LINK_SD**2
    terms = pl.concat(
        [
            pairs.select("session_id", "param", pl.col("param").alias("q"), pl.lit(w).alias("g")),
            pairs.select("session_id", pl.col("_main").alias("param"), pl.col("_main").alias("q"),
                         pl.lit(w).alias("g")),
            pairs.select("session_id", "param", pl.col("_main").alias("q"), pl.lit(-w).alias("g")),
            pairs.select("session_id", pl.col("_main").alias("param"), pl.col("param").alias("q"),
                         pl.lit(-w).alias("g")),
        ]
    )  # fmt: skip
    return (
        pl.concat([gram, terms], how="vertical_relaxed")
        .group_by("session_id", "param", "q")
        .agg(pl.col("g").sum())
    )


def _solve(priors: pl.DataFrame, gram: pl.DataFrame, rhs: pl.DataFrame) -> pl.DataFrame:
    """Per session, θ = (XᵀWX + P)⁻¹ (XᵀWy + Pμ) and its standard errors.

    Each session is one small dense system (a handful of unknowns). polars lays every
    session's matrix out densely, row-major, one after another (a cell's place is its
    session's offset plus row * n + column); the native kernel (``_scanner.solve_systems``:
    Gauss-Jordan with partial pivoting) solves them all and returns each unknown's value and
    variance (the inverse's diagonal), in the same order.
    """
    unknowns = priors.select(
        "session_id",
        "param",
        "mean",
        "sd",
        pl.int_range(pl.len()).over("session_id").alias("_i"),
        pl.len().over("session_id").alias("_n"),
    ).sort("session_id", "_i")
    systems = unknowns.group_by("session_id", maintain_order=True).agg(pl.col("_n").first())
    systems = systems.with_columns(
        (pl.col("_n") ** 2).cum_sum().shift(1, fill_value=0).alias("_cell0"),
    )
    index = unknowns.select("session_id", "param", "_i", "_n")
    cells = (
        gram.join(index, on=["session_id", "param"])
        .join(
            index.select("session_id", pl.col("param").alias("q"), pl.col("_i").alias("_j")),
            on=["session_id", "q"],
        )
        .select("session_id", "_i", "_j", "g")
    )
    diagonal = unknowns.select(
        "session_id", "_i", pl.col("_i").alias("_j"), (1 / pl.col("sd") ** 2).alias("_prior")
    )
    placed = (
        cells.join(diagonal, on=["session_id", "_i", "_j"], how="full", coalesce=True)
        .join(systems, on="session_id")
        .select(
            (pl.col("_cell0") + pl.col("_i") * pl.col("_n") + pl.col("_j")).alias("_at"),
            (pl.col("g").fill_null(0.0) + pl.col("_prior").fill_null(0.0)).alias("_v"),
        )
    )
    size = int(systems["_n"].pow(2).sum())
    matrices = pl.zeros(size, pl.Float64, eager=True).scatter(placed["_at"], placed["_v"])
    vectors = unknowns.join(
        rhs.select("session_id", "param", "b"),
        on=["session_id", "param"],
        how="left",
        maintain_order="left",
    ).select(pl.col("b").fill_null(0.0) + pl.col("mean") / pl.col("sd") ** 2)
    theta, variance = _scanner.solve_systems(
        systems["_n"].to_list(), matrices.to_list(), vectors.to_series().to_list()
    )
    return unknowns.select(
        "session_id",
        "param",
        pl.Series("theta", theta, pl.Float64).clip(lower_bound=0.0),
        (
            pl.Series(variance, dtype=pl.Float64).clip(lower_bound=0.0).sqrt()
            < DETERMINED * pl.col("sd")
        ).alias("determined"),
        pl.Series("se", variance, dtype=pl.Float64).clip(lower_bound=0.0).sqrt(),
    )


def constraints(x: pl.DataFrame, events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(members, targets) of every constraint row of each session (see the module doc).

    ``x`` is ``regressors`` output with the shutdown columns of ``tokens.py``: ``_segment``,
    ``_t_input_tokens``, ``_t_cache_read_tokens``, ``_sum_ok`` (the calls of this model are
    the shutdown's requests), and the observed figures (``token_source``, ``input_tokens``,
    ``cache_read_tokens``, ``output_tokens``).
    """
    member_cols = ["session_id", "row", "event_seq", "part"]
    target_cols = ["session_id", "row", "y", "sd", "at_least"]
    llm = pl.col("kind") != "compaction"
    group = pl.format("{}:{}", pl.col("_segment"), pl.col("model"))
    summed = x.filter(pl.col("_sum_ok") & llm)
    seen = x.filter(
        (pl.col("token_source") == "observed") & llm & pl.col("input_tokens").is_not_null()
    )
    sum_in = _prompt_rows(summed, pl.format("in:{}", group), "_t_input_tokens")
    sum_read = _read_rows(summed, pl.format("read:{}", group), "_t_cache_read_tokens")
    seen_in = _prompt_rows(seen, pl.format("obs:{}", "event_seq"), "input_tokens")
    seen_read = _read_rows(seen, pl.format("obsread:{}", "event_seq"), "cache_read_tokens")
    groups = [
        (pl.concat([sum_in, seen_in, _subagent_totals(x, events)]), SUM_SD, False),
        (pl.concat([sum_read, seen_read]), SUM_SD, True),
        (_stated_fixed(x, events), SUM_SD, False),
        (_compaction_sizes(x, events), CONTEXT_SD, False),
    ]
    members = pl.concat([rows.select(member_cols) for rows, _, _ in groups])
    targets = pl.concat(
        [
            rows.unique(["session_id", "row"]).select(
                "session_id",
                "row",
                pl.col("y").cast(pl.Float64),
                (pl.col("y") * sd + 100).cast(pl.Float64).alias("sd"),
                pl.lit(at_least).alias("at_least"),
            )
            for rows, sd, at_least in groups
        ]
    )
    return members, targets.select(target_cols)


def _prompt_rows(calls: pl.DataFrame, row: pl.Expr, y: str) -> pl.DataFrame:
    """Rows that sum the prompts of ``calls`` (one row per distinct ``row`` value) to ``y``."""
    return calls.select(
        "session_id", row.alias("row"), "event_seq", pl.lit("prompt").alias("part"),
        pl.col(y).alias("y"),
    )  # fmt: skip


def _read_rows(calls: pl.DataFrame, row: pl.Expr, y: str) -> pl.DataFrame:
    """Rows that sum what the warm ``calls`` read (their previous call's cacheable part) to
    ``y``, where ``y`` reports any reads."""
    warm = calls.filter((pl.col(y) > 0) & pl.col("_prev_seq").is_not_null())
    return warm.select(
        "session_id", row.alias("row"), pl.col("_prev_seq").alias("event_seq"),
        pl.col("_prev_part").alias("part"), pl.col(y).alias("y"),
    )  # fmt: skip


def _subagent_totals(x: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """A sub-agent's ``totalTokens`` (input + output of all its calls) minus its outputs: the
    sum of its calls' inputs, where every one of its calls states its output."""
    totals = subagent_runs(events)
    sub = x.filter(pl.col("kind") == "subagent").join(totals, on=["session_id", "_agent"])
    known = pl.col("output_tokens").is_not_null().all().over("session_id", "_agent")
    return (
        sub.filter(known)
        .select(
            "session_id",
            pl.format("agent:{}", "_agent").alias("row"),
            "event_seq",
            pl.lit("prompt").alias("part"),
            (
                pl.col("total_tokens") - pl.col("output_tokens").sum().over("session_id", "_agent")
            ).alias("y"),
        )
        .filter(pl.col("y") > 0)
    )


def _compaction_sizes(x: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """``preCompactionTokens``: the main prompt when a compaction starts."""
    pre = events.filter(
        (pl.col("event_type") == "session.compaction_complete")
        & pl.col("pre_compaction_tokens").is_not_null()
    ).select("source_file", "source_line", "pre_compaction_tokens")
    return (
        x.filter(pl.col("kind") == "compaction")
        .join(pre, on=["source_file", "source_line"])
        .select(
            "session_id",
            pl.format("pre:{}", "event_seq").alias("row"),
            "event_seq",
            pl.lit("prompt").alias("part"),
            pl.col("pre_compaction_tokens").alias("y"),
        )
    )


def _stated_fixed(x: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """``systemTokens + toolDefinitionsTokens`` (a shutdown's or compaction's): the main fixed
    part, tied to the session's first main call."""
    stated = stated_fixed_tokens(events)
    first_main = (
        x.filter(pl.col("kind") == "main").group_by("session_id").agg(pl.col("event_seq").min())
    )
    return first_main.join(stated, on="session_id").select(
        "session_id",
        pl.lit("stated-fixed").alias("row"),
        "event_seq",
        pl.lit("fixed").alias("part"),
        "y",
    )
