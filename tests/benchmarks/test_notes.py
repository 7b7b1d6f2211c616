"""``make bench`` rewrites its reports' tables and keeps the notes written under them."""

from __future__ import annotations

from pathlib import Path

from benchmarks.notes import NOTES, write_keeping_notes
from tests.conftest import REPO


def test_a_run_rewrites_the_tables_and_keeps_the_notes(tmp_path: Path) -> None:
    report = tmp_path / "README.md"
    write_keeping_notes(report, "# Bench\n\n| a |\n")
    assert report.read_text() == f"# Bench\n\n| a |\n\n{NOTES}\n"
    report.write_text(report.read_text() + "\n## Notes on the first run\n\nwhat changed\n")
    write_keeping_notes(report, "# Bench\n\n| b |\n")
    text = report.read_text()
    assert text.startswith("# Bench\n\n| b |\n\n" + NOTES)
    assert text.endswith("## Notes on the first run\n\nwhat changed\n")
    assert "| a |" not in text


def test_both_reports_carry_the_marker() -> None:
    """The reports in the repository: their notes stand under the marker, so a run keeps them."""
    here = REPO / "benchmarks"
    for name in ("README.md", "AGENTS.md"):
        text = (here / name).read_text("utf-8")
        assert text.count(NOTES) == 1
        assert "## Notes on this run" in text.split(NOTES)[1] or "UTC run" in text.split(NOTES)[1]
