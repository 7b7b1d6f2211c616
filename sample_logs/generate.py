"""Regenerate ``sample_logs/``: five small, hand-chosen simulated Copilot CLI sessions.

Run from the repository root: ``.venv/bin/python sample_logs/generate.py``. The output is
deterministic (fixed seeds), so re-running it changes nothing unless the simulator changed;
then review the diff and update README.md's figures (this script prints them).

Each scenario is a ``SimulationParams`` with one session and every probability set to 0 or 1,
so the session has exactly the shape its name promises; ``check`` asserts that shape.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from analytics.agents.copilot.simulate import SimulationParams, simulate

HERE = Path(__file__).resolve().parent
MAX_BYTES = 60_000

#: Small fixed parts and texts keep every file human-readable and under MAX_BYTES.
SMALL = SimulationParams(
    sessions=1,
    system_tokens=(1_500, 1_500),
    tool_definitions_tokens=(9_000, 9_000),
    user_message_tokens=(15, 60),
    tool_result_tokens=(20, 300),
    output_tokens=(30, 250),
    tools_per_call=(1, 2),
    subagent_probability=0.0,
    subagent_calls=(2, 2),
    resume_probability=0.0,
    model_switch_probability=0.0,
    autopilot_probability=0.0,
    crash_probability=0.0,
    models=(("claude-sonnet-4.6", 1),),
    days=1,
    timezone="Europe/Berlin",
)

SCENARIOS: dict[str, SimulationParams] = {
    "plain": replace(
        SMALL, seed=101, calls_per_session=(6, 6), calls_per_prompt=(3, 3), start="2026-08-03"
    ),
    "subagent": replace(
        SMALL,
        seed=102,
        calls_per_session=(2, 2),
        calls_per_prompt=(2, 2),
        subagent_probability=1.0,
        start="2026-08-04",
    ),
    "resumed": replace(
        SMALL,
        seed=103,
        calls_per_session=(6, 6),
        calls_per_prompt=(2, 2),
        resume_probability=1.0,
        model_switch_probability=0.5,
        models=(("claude-sonnet-4.6", 1), ("claude-haiku-4.5", 1)),
        start="2026-08-05",
    ),
    "crashed": replace(
        SMALL,
        seed=104,
        calls_per_session=(4, 4),
        calls_per_prompt=(2, 2),
        crash_probability=1.0,
        torn_line_probability=1.0,
        start="2026-08-06",
    ),
    "compaction": replace(
        SMALL,
        seed=105,
        calls_per_session=(6, 6),
        calls_per_prompt=(3, 3),
        compaction_threshold=11_300,
        compaction_summary_tokens=(250, 350),
        start="2026-08-07",
    ),
}


def check(name: str, session: dict[str, Any], size: int) -> None:
    """Fail loudly if a scenario lost the shape it is named for."""
    models = {c["model"] for c in session["calls"]}
    expected = {
        "plain": session["user_messages"] == 2 and session["main_calls"] == 6,
        "subagent": session["subagent_calls"] == 2 and "claude-haiku-4.5" in models,
        "resumed": session["processes"] == 3 and len(models) == 2,
        "crashed": session["crashed"] and session["torn_line"],
        "compaction": session["compaction_calls"] == 1,
    }
    assert expected[name], f"scenario {name} lost its shape; choose another seed"
    assert size < MAX_BYTES, f"scenario {name} is {size} bytes; make it smaller"


def main() -> None:
    """Write the sessions, the store and an indented ground truth; print the figures."""
    for stale in ("session-state", "session-store.db", "ground_truth.json"):
        path = HERE / stale
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        simulate(out, list(SCENARIOS.values()), store=True)
        truth = json.loads((out / "ground_truth.json").read_text())
        shutil.move(out / "session-state", HERE / "session-state")
        shutil.move(out / "session-store.db", HERE / "session-store.db")
    (HERE / "ground_truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    for name, session in zip(SCENARIOS, truth["sessions"], strict=True):
        size = (HERE / session["events_file"]).stat().st_size
        check(name, session, size)
        figures = {k: v for k, v in session.items() if k not in ("calls", "events_file")}
        print(name, size, json.dumps(figures))


if __name__ == "__main__":
    main()
