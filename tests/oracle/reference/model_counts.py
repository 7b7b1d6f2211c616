"""Models of the calls a log names none for, from the shutdown's per-model request counts.

Copilot CLIs of March 2026 write sub-agent messages without a model (schema doc §0b.8), and
a `/fleet` session may run its sub-agents on another model than the main agent. The
shutdown still counts each model's requests (``modelMetrics[*].requests.count``). Where the
calls as named do not add up to those counts, the calls whose model is only a guess (the
session's model, ``model_source == "session"`` or ``"shutdown"``, or none at all) get the
assignment that makes every count agree:

- the calls of one kind of sub-agent (``agent_name``) share a model, and so do main calls
  without one: each such *unit* takes one of the models the shutdown names;
- an assignment fits when, for every model, the calls the log names it for plus the units
  given it equal its requests;
- one fit: taken. Several: each kind's documented default decides (``DEFAULT_FAMILIES``;
  any other kind defaults to the main agent's model); a tie the defaults leave open, or no
  fit at all, keeps those calls without a model and names the conflict in an issue, rather
  than forcing one.

Only segments whose per-model counts disagree while their calls add up to the requests are
searched (a segment with calls missing or extra is a lost line or a ``/rewind``, which no
choice of models explains), so a log that names every model costs a join and a filter. The
search is over a handful of units and models per session.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence

import polars as pl

from analytics.core.schema import ISSUES

#: What Copilot's built-in sub-agents run on when the user picks nothing (GitHub's docs on
#: the CLI's custom agents: ``explore`` and ``task`` use a fast model, Claude Haiku 4.5),
#: matched as a prefix of the model id. A kind not named here defaults to the main agent's
#: model (``general-purpose``, ``code-review``, custom agents).
DEFAULT_FAMILIES: Mapping[str, str] = {"explore": "claude-haiku", "task": "claude-haiku"}
#: Assignments tried at most per segment (models ** units); beyond it, the calls stay unknown.
MAX_ASSIGNMENTS = 100_000
#: The calls whose model may be reassigned: guesses, or no model at all.
_GUESSED = pl.col("model_source").is_in(["session", "shutdown"]) | pl.col("model").is_null()
_SEGMENT = ["session_id", "_segment"]


def assign_models(calls: pl.DataFrame, totals: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``calls`` with models assigned from the counts, ISSUES naming each conflict).

    ``calls`` has ``session_id``, ``_segment`` and ``_covered`` (the shutdown total that
    covers each call: ``tokens._segments``), ``kind``, ``agent_name``, ``agent_id``,
    ``model`` and ``model_source``; ``totals`` has ``session_id``, ``_segment``, ``model``,
    ``_t_requests``, ``_t_file`` and ``_t_line`` (the shutdown's line).
    """
    counted = calls.filter(pl.col("_covered") & (pl.col("kind") != "compaction"))
    free = counted.filter(_free())
    needs = totals.filter(pl.col("_t_requests").is_not_null())
    if not free.height or not needs.height:
        return calls, _no_issues()
    compared = (
        counted.group_by(*_SEGMENT, "model")
        .agg(pl.len().alias("_n"))
        .join(
            needs.select(*_SEGMENT, "model", "_t_requests"),
            on=[*_SEGMENT, "model"],
            how="full",
            coalesce=True,
        )
    )
    differ = pl.col("_n").fill_null(0) != pl.col("_t_requests").fill_null(0)
    # Only where the calls add up to the requests: otherwise lines are missing (or a
    # /rewind dropped requests), which no choice of models explains, and the guesses stay.
    same_total = pl.col("_n").sum().over(_SEGMENT) == pl.col("_t_requests").sum().over(_SEGMENT)
    off = compared.filter(
        pl.col("_t_requests").is_not_null().any().over(_SEGMENT)
        & differ.any().over(_SEGMENT)
        & same_total
    ).select(_SEGMENT)
    segments = free.join(off, on=_SEGMENT, how="semi").select(_SEGMENT).unique()
    chosen: list[tuple[object, ...]] = []
    issues: list[tuple[object, ...]] = []
    for session_id, segment in segments.sort(_SEGMENT).iter_rows():
        here = (pl.col("session_id") == session_id) & (pl.col("_segment") == segment)
        need = needs.filter(here)
        named = counted.filter(here & ~_free())
        units = _units(free.filter(here))
        fixed = {str(m): int(n) for m, n in named.group_by("model").len().iter_rows()}
        requests = {str(m): int(n) for m, n in need.select("model", "_t_requests").iter_rows()}
        picked, problem = _solve(units, fixed, requests, _main_model(named))
        models: list[str | None] = [*picked] if picked else [None] * len(units)
        chosen.extend(
            (session_id, segment, kind, name, model)
            for (kind, name, _), model in zip(units, models, strict=True)
        )
        if problem:
            file, line = need.select("_t_file", "_t_line").row(-1)
            issues.append((file, line, "warning", _message(session_id, problem, units, requests)))
    assigned = pl.DataFrame(
        chosen,
        schema={
            "session_id": pl.String(),
            "_segment": calls.schema["_segment"],
            "kind": pl.String(),
            "_unit": pl.String(),
            "_assigned": pl.String(),
        },
        orient="row",
    ).with_columns(pl.lit(True).alias("_searched"))
    searched = pl.col("_searched").fill_null(False)
    keyed = calls.with_columns(
        pl.when(pl.col("_covered") & (pl.col("kind") != "compaction") & _free())
        .then(_unit_name())
        .alias("_unit")
    ).join(assigned, on=[*_SEGMENT, "kind", "_unit"], how="left")
    reassigned = keyed.with_columns(
        pl.when(searched).then(pl.col("_assigned")).otherwise(pl.col("model")).alias("model"),
        pl.when(searched)
        .then(pl.when(pl.col("_assigned").is_not_null()).then(pl.lit("counts")))
        .otherwise(pl.col("model_source"))
        .alias("model_source"),
    ).drop("_unit", "_assigned", "_searched")
    return reassigned, pl.DataFrame(issues, schema=dict(ISSUES), orient="row")


def _free() -> pl.Expr:
    """A call whose model is a guess: a sub-agent's, or a main call's with none."""
    return (pl.col("kind") == "subagent") & _GUESSED | (pl.col("kind") == "main") & pl.col(
        "model"
    ).is_null()


def _unit_name() -> pl.Expr:
    """The unit a free call belongs to: its kind of sub-agent (else its own agent id)."""
    return pl.coalesce("agent_name", "agent_id", pl.lit("main"))


def _units(free: pl.DataFrame) -> list[tuple[str, str, int]]:
    """(kind, unit name, calls) of each unit, in a fixed order."""
    rows = (
        free.with_columns(_unit_name().alias("_unit"))
        .group_by("kind", "_unit")
        .len()
        .sort("kind", "_unit")
        .iter_rows()
    )
    return [(str(kind), str(name), int(n)) for kind, name, n in rows]


def _main_model(named: pl.DataFrame) -> str | None:
    """The model most of the segment's named main calls ran on (ties: the first by name)."""
    mains = named.filter((pl.col("kind") == "main") & pl.col("model").is_not_null())
    if not mains.height:
        return None
    counts = mains.group_by("model").len().sort(["len", "model"], descending=[True, False])
    return str(counts["model"][0])


def _solve(
    units: Sequence[tuple[str, str, int]],
    fixed: Mapping[str, int],
    requests: Mapping[str, int],
    main: str | None,
) -> tuple[list[str] | None, str | None]:
    """(a model per unit, None) when one assignment fits or the defaults pick one; else
    (None, why not)."""
    models = sorted(requests)
    if any(model not in requests for model in fixed):
        return None, "calls the log names a model for are not all in the shutdown's counts"
    if len(models) ** len(units) > MAX_ASSIGNMENTS:
        return None, f"more than {MAX_ASSIGNMENTS:,} assignments to try"
    fits = [
        pick for pick in _assignments(models, len(units)) if _fits(pick, units, fixed, requests)
    ]
    if not fits:
        return None, "no assignment of models to the calls without one fits the shutdown's counts"
    if len(fits) == 1:
        return list(fits[0]), None
    scores = [
        sum(_is_default(u, m, main) for u, m in zip(units, pick, strict=True)) for pick in fits
    ]
    best = max(scores)
    if scores.count(best) > 1:
        return None, (
            f"{len(fits)} assignments of models to the calls without one fit the shutdown's"
            " counts, and the kinds' default models do not decide"
        )
    return list(fits[scores.index(best)]), None


def _assignments(models: Sequence[str], units: int) -> Iterator[tuple[str, ...]]:
    return itertools.product(models, repeat=units)


def _fits(
    pick: Sequence[str],
    units: Sequence[tuple[str, str, int]],
    fixed: Mapping[str, int],
    requests: Mapping[str, int],
) -> bool:
    served = {model: fixed.get(model, 0) for model in requests}
    for model, (_, _, calls) in zip(pick, units, strict=True):
        served[model] += calls
    return served == dict(requests)


def _is_default(unit: tuple[str, str, int], model: str, main: str | None) -> bool:
    """Whether ``model`` is what the unit's kind runs on by default."""
    kind, name, _ = unit
    family = DEFAULT_FAMILIES.get(name.lower()) if kind == "subagent" else None
    if family is not None:
        return model.startswith(family)
    return model == main


def _message(
    session_id: str,
    problem: str,
    units: Sequence[tuple[str, str, int]],
    requests: Mapping[str, int],
) -> str:
    counts = ", ".join(f"{model} {n}" for model, n in sorted(requests.items()))
    without = ", ".join(f"{name} ({n} call{'s' if n != 1 else ''})" for _, name, n in units)
    return (
        f"session {session_id}: {problem} ({counts}; calls without a model: {without});"
        " their models stay unknown"
    )


def _no_issues() -> pl.DataFrame:
    return pl.DataFrame(schema=dict(ISSUES))
