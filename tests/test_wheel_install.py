"""The user's install works as the README writes it: ``make wheel`` leaves exactly one wheel
in ``dist/``, and ``pip install dist/agentcost-*.whl`` in a fresh venv gives a working
``agentcost`` (the wheel carries the native engine; dependencies come from the package index,
as for a user). Before, ``target/wheels/`` held the editable stub beside the real wheel and
the README's glob made pip fail with conflicting requirements."""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_LOGS

REPO = Path(__file__).resolve().parent.parent
MATURIN = Path(sys.executable).parent / "maturin"


@pytest.mark.skipif(not MATURIN.exists(), reason="maturin is not installed (make setup)")
@pytest.mark.skipif(shutil.which("cargo") is None, reason="no Rust toolchain to build the wheel")
def test_the_documented_wheel_installs_in_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = [str(MATURIN), "build", "--release", "--quiet", "--out", str(dist)]
    subprocess.run(build, cwd=REPO, check=True, capture_output=True)
    wheels = glob.glob(str(dist / "agentcost-*.whl"))
    assert len(wheels) == 1, wheels
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=True)
    pip = [str(fresh / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, *wheels], check=True, capture_output=True, timeout=900)
    agentcost = str(fresh / "bin" / "agentcost")
    assert (
        "analyze"
        in subprocess.run([agentcost, "--help"], check=True, capture_output=True, text=True).stdout
    )
    analysed = subprocess.run(
        [agentcost, "--no-cache", "analyze", str(SAMPLE_LOGS), "-f", "json"],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert len(json.loads(analysed.stdout)["sessions"]) == 5
