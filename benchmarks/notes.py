"""The benchmark reports' hand-written notes, kept when ``make bench`` writes the tables anew.

``benchmarks/README.md`` and ``benchmarks/AGENTS.md`` are each a generated part (the tables,
targets and profile of the last run) followed by notes that people write about each run: what
changed, what was measured and not kept. Everything from ``NOTES`` on is theirs, and a run
rewrites only what comes before it.
"""

from __future__ import annotations

from pathlib import Path

#: The line that ends a report's generated part.
NOTES = "<!-- The notes below are written by hand; make bench keeps them. -->"


def write_keeping_notes(path: Path, generated: str) -> None:
    """Write ``generated`` to ``path``, followed by the notes ``path`` held (from ``NOTES``
    on); a report without notes gets the marker, for the first note to go under."""
    old = path.read_text("utf-8") if path.exists() else ""
    notes = old[old.index(NOTES) :] if NOTES in old else NOTES + "\n"
    path.write_text(generated.rstrip("\n") + "\n\n" + notes, "utf-8")
