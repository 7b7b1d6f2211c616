"""``benchmarks.agents``: what each tool's output counts, and the table and targets it writes,
including an agent agentcost has no reader for yet (it refuses the tree: no ratio, no target)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.agents import BENCHES, Counted, counted, render, touched_log
from benchmarks.run import Run


@pytest.mark.parametrize(
    ("tool", "output", "expected"),
    [
        ("ccusage pi", b'{"sessions":[{"sessionId":"a"},{"sessionId":"b"}]}', (2, None)),
        ("agentcost pi cold", b'{"sessions":[{"llm_calls":3},{"llm_calls":null}]}', (2, 3)),
        ("agentcost pi cold", b"", (0, 0)),
        ("ccusage pi", b"not json", (0, None)),
    ],
)
def test_counted(tool: str, output: bytes, expected: tuple[int, int | None]) -> None:
    found = counted(tool, output)
    assert (found.sessions, found.calls) == expected


def test_render_gives_a_ratio_only_where_agentcost_found_calls() -> None:
    runs = [
        Run("ccusage pi", 5, 2.0, 1.0, 50.0),
        Run("agentcost pi cold", 5, 3.0, 1.0, 60.0),
        Run("ccusage kimi", 5, 2.0, 1.0, 50.0),
        Run("agentcost kimi cold", 5, 5.0, 1.0, 450.0),
    ]
    counts = {
        "ccusage pi": Counted("ccusage pi", 3, None),
        "agentcost pi cold": Counted("agentcost pi cold", 0, 0),
        "ccusage kimi": Counted("ccusage kimi", 3, None),
        "agentcost kimi cold": Counted("agentcost kimi cold", 3, 14),
    }
    text = render(runs, counts, ["pi", "kimi"])
    assert (
        "| pi 5 MB | agentcost pi cold | 3.00 | 3.00 | 60 | 0 calls, 0 sessions | no reader yet |"
        in text
    )
    assert (
        "| kimi 5 MB | agentcost kimi cold | 5.00 | 5.00 | 450 | 14 calls, 3 sessions | 2.50x |"
        in text
    )
    assert "- pi: agentcost found no call in the tree (no reader yet): not measured" in text
    assert (
        "- kimi: cold 2.50x ccusage (target ≤ 2x: missed), "
        "peak RSS 450 MB (target ≤ 400 MB: missed)" in text
    )


def test_every_new_agent_is_held_to_the_issue_targets() -> None:
    for agent in ("pi", "gemini-cli", "opencode", "kimi", "antigravity"):
        assert (BENCHES[agent].ratio, BENCHES[agent].rss_mb) == (2.0, 400.0)


def test_render_checks_warm_and_touched_against_ccusages_cold_wall() -> None:
    runs = [
        Run("ccusage kimi", 5, 2.0, 1.0, 50.0),
        Run("agentcost kimi cold", 5, 3.0, 1.0, 60.0),
        Run("agentcost kimi warm", 5, 0.8, 1.0, 60.0),
        Run("agentcost kimi touched", 5, 3.2, 1.0, 60.0),
    ]
    counts = {
        "ccusage kimi": Counted("ccusage kimi", 3, None),
        "agentcost kimi cold": Counted("agentcost kimi cold", 3, 9),
    }
    text = render(runs, counts, ["kimi"])
    assert "| kimi 5 MB | agentcost kimi warm | 0.80 | 0.80 | 60 |  | 0.40x |" in text
    assert "- kimi: warm 0.40x ccusage (target ≤ 0.5x: met)" in text
    assert "- kimi: touched 1.60x ccusage (target ≤ 1.5x: missed)" in text


def test_the_touched_log_is_the_agents_first_log(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("b/wire.jsonl", "a-state.json", "c/wire.jsonl"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    assert touched_log(tmp_path, "kimi") == tmp_path / "b" / "wire.jsonl"
