"""The agents' own tools: ``agentcost simulate`` and ``agentcost capture-to-log``.

They make logs rather than read them: simulated Copilot CLI session trees with exact
per-call truth, and an SDK capture written as the log the CLI would have written. They are
the staged pipeline's agent's own tools (``agents.pipeline``: ``write_capture``,
``simulator``), reached, as every agent is, through the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from analytics.cli.commands import app
from analytics.cli.printing import fail, say
from analytics.core.errors import AgentcostError


@app.command("capture-to-log")
def capture_to_log(
    capture: Annotated[
        Path,
        typer.Argument(readable=False, help="An SDK capture: JSON with an 'events' array."),
    ],
    out: Annotated[Path, typer.Argument(help="Directory to write the Copilot home into.")],
) -> None:
    """Write an SDK capture as the events.jsonl the CLI would have written (ephemeral events
    dropped, the shutdown added) and a session-store.db with each call's true usage."""
    from analytics.agents.pipeline import pipeline

    try:
        written = pipeline().write_capture(capture, out)
        say(f"agentcost: wrote {written / 'events.jsonl'} and {out / 'session-store.db'}")
    except AgentcostError as error:
        fail(error)


@app.command()
def simulate(
    out: Annotated[Path, typer.Argument(help="Directory to write session-state/ and truth into.")],
    seed: Annotated[int, typer.Option(help="Random seed: same seed, identical files.")] = 0,
    sessions: Annotated[
        int | None, typer.Option(help="Number of sessions. Default: 10 unless --size-mb.")
    ] = None,
    size_mb: Annotated[
        float | None,
        typer.Option("--size-mb", help="Generate sessions until session-state/ has this many MB."),
    ] = None,
    store: Annotated[
        bool, typer.Option("--store/--no-store", help="Also write session-store.db (call rows).")
    ] = False,
    calls: Annotated[str, typer.Option(help="Main LLM calls per session, LOW-HIGH.")] = "4-40",
    model: Annotated[
        list[str] | None,
        typer.Option(help="Main model and its share, NAME=SHARE (repeatable). Default: a mix."),
    ] = None,
    subagent_probability: Annotated[
        float, typer.Option(help="Chance that a tool-using main call spawns a sub-agent.")
    ] = 0.08,
    resume_probability: Annotated[
        float, typer.Option(help="Chance that a later prompt starts a new process (a resume).")
    ] = 0.1,
    crash_probability: Annotated[
        float, typer.Option(help="Chance that a session's last process crashes mid-call.")
    ] = 0.05,
    compaction_threshold: Annotated[
        int, typer.Option(help="Prompt tokens at which the context is compacted.")
    ] = 120_000,
    start: Annotated[str, typer.Option(help="First day, YYYY-MM-DD.")] = "2026-08-03",
    timezone: Annotated[str, typer.Option(help="IANA timezone of the simulated user.")] = "UTC",
) -> None:
    """Write simulated Copilot CLI session logs with exact per-call ground truth."""
    from analytics.agents.pipeline import pipeline
    from analytics.core.words import counted

    sim = pipeline().simulator()

    try:
        params = sim.SimulationParams(
            seed=seed,
            sessions=sessions if sessions is not None or size_mb is not None else 10,
            target_size_mb=size_mb,
            calls_per_session=sim.parse_range(calls, "--calls"),
            models=sim.parse_model_shares(model) if model else sim.SimulationParams.models,
            subagent_probability=subagent_probability,
            resume_probability=resume_probability,
            crash_probability=crash_probability,
            compaction_threshold=compaction_threshold,
            start=start,
            timezone=timezone,
        )
        summary = sim.simulate(out, params, store=store)
    except AgentcostError as error:
        fail(error)
    megabytes = summary.bytes_written / 1e6
    say(
        f"wrote {counted(summary.sessions, 'session')}, {counted(summary.llm_calls, 'LLM call')}, "
        f"{megabytes:.1f} MB "
        f"to {out} in {summary.seconds:.1f} s ({megabytes / max(summary.seconds, 1e-9):.0f} MB/s)"
    )
