"""``benchmarks/claude_corpus.py``: the tree it measures the intervals on."""

from pathlib import Path

from benchmarks.claude_corpus import without_shutdowns


def test_without_shutdowns_drops_only_the_shutdown_lines(tmp_path: Path) -> None:
    log = tmp_path / "tree" / "s1" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"type":"session.start"}\n{"type":"session.shutdown"}\n{"type":"x"}\n')
    out = without_shutdowns(tmp_path / "tree", tmp_path / "bare")
    assert (out / "s1" / "events.jsonl").read_text() == '{"type":"session.start"}\n{"type":"x"}\n'
