"""Issue 21, item 5: a cache directory that cannot be written is said once, on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from tests.conftest import SAMPLE_LOGS


@pytest.fixture
def unwritable_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory below a file: it cannot be created, even by root."""
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    cache = blocker / "agentcost"
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(cache))
    return cache


def test_an_unwritable_cache_is_said_once_on_stderr(unwritable_cache: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", str(SAMPLE_LOGS), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sessions"]  # JSON on stdout, untouched
    said = [line for line in result.stderr.splitlines() if "cache directory" in line]
    assert said == [
        f"agentcost: the cache directory {unwritable_cache} cannot be written (not a "
        "directory); nothing is cached (set AGENTCOST_CACHE_DIR to a writable directory)"
    ]


def test_the_run_is_the_same_without_a_cache(unwritable_cache: Path) -> None:
    uncached = CliRunner().invoke(app, ["analyze", str(SAMPLE_LOGS), "--format", "json"])
    fresh = CliRunner().invoke(app, ["--no-cache", "analyze", str(SAMPLE_LOGS), "--format", "json"])
    assert uncached.stdout == fresh.stdout
    assert "cache directory" not in fresh.stderr  # --no-cache: no cache to speak of


def test_a_writable_cache_says_nothing() -> None:
    result = CliRunner().invoke(app, ["analyze", str(SAMPLE_LOGS), "--format", "json"])
    assert "cache directory" not in result.stderr
