"""Shared test fixtures: hypothesis profiles and the location of the shared real logs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = REPO / "sample_logs"
REAL_LOGS = REPO.parent / "shared" / "real_logs"
#: The tests' fixed data: rate tables, ccusage's answers, and the reviewed snapshots.
FIXTURES = REPO / "tests" / "fixtures"
SNAPSHOTS = REPO / "tests" / "snapshots"


def python_run(
    script: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``script`` run by a fresh interpreter from the checkout (with ``env`` for its
    environment, else this one's), its stdout and stderr captured as text: what a process
    imports, or which allocator options it starts with, seen from outside. A failing script
    fails the test."""
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )


def python_prints(script: str, env: Mapping[str, str] | None = None) -> str:
    """What ``script`` prints on stdout (stripped), run as ``python_run`` runs it."""
    return python_run(script, env).stdout.strip()


@pytest.fixture
def real_logs() -> Path:
    """``../shared/real_logs``; tests that need it skip, saying why, where it is absent."""
    if not REAL_LOGS.is_dir():
        pytest.skip(f"real Copilot logs not present at {REAL_LOGS} (the shared/ folder is absent)")
    return REAL_LOGS


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test parses into its own cache directory, never the user's ~/.cache."""
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(tmp_path_factory.mktemp("agentcost-cache")))


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of ``sample_logs`` that a test may change, with its cache in ``tmp_path/cache``."""
    monkeypatch.setenv("AGENTCOST_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, copy)
    return copy
