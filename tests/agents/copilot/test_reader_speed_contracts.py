"""What keeps the reader fast must not change what it reads.

Files are read in blocks split at newlines and many files share a scan batch; with tiny block
and batch sizes (every line cut across blocks, every file a batch of its own) the tables must
equal a whole-file read, line numbers, byte offsets and process indexes included. Also: ``analyze``
never imports plotly, and the progress bar stays silent when it should.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from analytics.agents.copilot import events as copilot_events
from analytics.agents.discover import discover
from analytics.render.progress import Bar, progress_bar
from tests.conftest import SAMPLE_LOGS
from tests.oracle.reference.reader import read_logs


@pytest.mark.parametrize("chunk", [64, 1000, 50_000])
def test_chunked_reads_equal_whole_reads(
    real_logs: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    logs = discover([real_logs, SAMPLE_LOGS]).logs
    whole = read_logs(logs)
    monkeypatch.setattr(copilot_events, "BLOCK_BYTES", chunk)
    monkeypatch.setattr(copilot_events, "BATCH_BYTES", 3 * chunk)
    pieces = read_logs(logs)
    for table in ("events", "model_metrics", "issues"):
        assert getattr(pieces, table).equals(getattr(whole, table)), table


def test_torn_line_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"type":"user.message","data":{"content":"' + b"x" * 500 + b'"}}\n{"ty')
    logs = discover([path]).logs
    whole = read_logs(logs)
    monkeypatch.setattr(copilot_events, "BLOCK_BYTES", 100)
    assert read_logs(logs).issues.equals(whole.issues)
    assert whole.issues["line"].to_list() == [1, 2]  # no timestamp; torn


def test_analyze_does_not_import_plotly() -> None:
    code = (
        "import sys; from pathlib import Path; from analytics.engine.analyze import analyze; "
        f"analyze([Path({str(SAMPLE_LOGS)!r})]); "
        "assert not [m for m in sys.modules if m.startswith('plotly')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_progress_bar_waits_a_second_then_draws_and_erases() -> None:
    stream = io.StringIO()
    Bar(stream, "reading")(5, 10)
    assert stream.getvalue() == ""
    bar = Bar(stream, "reading", delay=0)
    bar(5_000_000, 10_000_000)
    drawn = stream.getvalue()
    assert "reading" in drawn and "50%" in drawn and "5.0/10.0 MB" in drawn
    bar.close()
    assert "\x1b[2K" in stream.getvalue()[len(drawn) :]  # rich erased its line


def test_no_progress_bar_without_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar() as bar:
        assert bar is None
    assert capsys.readouterr().err == ""
