"""``benchmarks.real_home``: the home it lays out of the real logs, and its table's ratios and
targets."""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_home import lay_out, render


def test_the_home_holds_every_agents_logs_where_each_agent_keeps_them(
    real_logs: Path, tmp_path: Path
) -> None:
    files = lay_out(tmp_path / "home")
    assert all(count > 0 for count in files.values()), files
    assert set(files) == {"claude-code", "codex", "copilot"}
    copilot = sorted((tmp_path / "home" / ".copilot" / "session-state").glob("*/events.jsonl"))
    assert len(copilot) == files["copilot"]
    assert list((tmp_path / "home" / ".claude" / "projects").rglob("*.jsonl"))
    assert list((tmp_path / "home" / ".codex" / "sessions").rglob("rollout-*.jsonl"))


def test_render_compares_each_command_with_ccusages_work_and_its_target() -> None:
    walls = {
        "ccusage (claude + codex + copilot session)": [0.2, 0.1, 0.3],
        "analyze, cold": [0.5, 0.4, 0.9],
        "statusline, warm": [0.3, 0.25, 0.2],
    }
    text = render(walls, {"claude-code": 1, "codex": 2, "copilot": 3}, 3)
    assert "| analyze, cold | 0.500 | 0.50, 0.40, 0.90 | 2.50x | ≤ 4x: met |" in text
    assert "| statusline, warm | 0.250 | 0.30, 0.25, 0.20 | 1.25x | ≤ 1x: missed |" in text
    assert "1 claude-code, 2 codex, 3 copilot files" in text
