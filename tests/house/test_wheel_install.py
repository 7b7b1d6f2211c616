"""The release files work as the README says: ``make wheel`` (``.ci/build-dist``, run here as it
is) leaves in ``dist/`` an sdist and one wheel built from it; the wheel carries a manylinux
tag that auditwheel confirms, holds every file of the package, and ``pip install
dist/agentcost-*.whl`` in a fresh venv gives a working ``agentcost`` (dependencies come from
the package index, as for a user).

Before, ``make wheel`` built the wheel from the work tree against the build machine's glibc:
on Debian 12 it was manylinux_2_34 (glibc 2.34 symbols), which pip refuses on Ubuntu 20.04,
Debian 11 or RHEL 8; and there was no sdist.

One build for the module (minutes: the engine's crate compiles from the sdist; the
dependencies' artifacts are reused from the repo's ``target/``), one fresh venv."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

from analytics.core.registry import AGENTS
from tests.conftest import REPO, SAMPLE_LOGS

TOOLS = Path(sys.executable).parent
ENGINE = "analytics/_scanner.abi3.so"
PLOTLY_JS = "analytics/render/vendor/plotly-basic.min.js"
#: The data files read at run time: the rate tables, the model equivalences, and plotly.js
#: (embedded in the HTML report) with its licence.
RUNTIME_DATA = (
    "analytics/rate_tables/github-copilot.toml",
    "analytics/rate_tables/anthropic.toml",
    "analytics/core/pricing/model_equivalence.toml",
    PLOTLY_JS,
    "analytics/render/vendor/plotly-LICENSE",
)
#: What would make the fresh venv's agentcost read the repo or a real agent home.
_LEAKS = {"PYTHONPATH", "VIRTUAL_ENV", *(var for agent in AGENTS for var in agent.home_variables)}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (TOOLS / "maturin").exists(), reason="no maturin (make setup)"),
    pytest.mark.skipif(
        find_spec("ziglang") is None or not (TOOLS / "auditwheel").exists(),
        reason="no ziglang or auditwheel: the wheel extra (make test and make wheel install it)",
    ),
    pytest.mark.skipif(shutil.which("cargo") is None, reason="no Rust toolchain"),
    pytest.mark.skipif(shutil.which("git") is None, reason="no git to list the package's files"),
]


@dataclass(frozen=True)
class Dist:
    """What ``.ci/build-dist`` wrote: the sdist and the wheel."""

    sdist: Path
    wheel: Path


def _run(command: list[str], env: Mapping[str, str], cwd: Path) -> str:
    """Runs ``command``; its stdout, or a failure that shows the end of its output."""
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stderr[-4000:]}"
    return done.stdout


def _outside_env(**changes: str) -> dict[str, str]:
    """This process's environment with nothing that points into the repo (PYTHONPATH, the
    test venv) or at an agent's home, plus ``changes``."""
    env = {key: value for key, value in os.environ.items() if key not in _LEAKS}
    return env | changes


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The release files, built by ``make wheel``'s script with the test venv's tools."""
    out = tmp_path_factory.mktemp("dist")
    env = _outside_env(PATH=f"{TOOLS}{os.pathsep}{os.environ['PATH']}")
    _run(["bash", str(REPO / ".ci" / "build-dist"), str(out)], env, REPO)
    files = sorted(path.name for path in out.iterdir())
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == len(wheels) == 1 and len(files) == 2, files
    return Dist(sdists[0], wheels[0])


@pytest.fixture(scope="module")
def agentcost(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``agentcost`` of a fresh venv where the wheel is installed as the README says."""
    fresh = tmp_path_factory.mktemp("venv")
    venv.create(fresh, with_pip=True)
    pip = [str(fresh / "bin" / "python"), "-m", "pip", "install", "--quiet", str(dist.wheel)]
    _run(pip, _outside_env(), fresh)
    return fresh / "bin" / "agentcost"


def _package_files() -> set[str]:
    """The files of the ``analytics`` package that git tracks."""
    listed = _run(["git", "ls-files", "analytics"], os.environ, REPO)
    return set(listed.splitlines())


def test_the_sdist_holds_the_sources_and_no_built_engine(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    tracked = _run(["git", "ls-files", "native"], os.environ, REPO).splitlines()
    needed = {"pyproject.toml", "Cargo.toml", "Cargo.lock", *tracked, *_package_files()}
    assert needed <= names, sorted(needed - names)
    assert not [name for name in names if name.endswith(".so")]


def test_the_wheel_is_manylinux_2_17_and_needs_no_library_outside_the_policy(dist: Dist) -> None:
    arch = platform.machine()
    assert dist.wheel.name.endswith(f".manylinux_2_17_{arch}.whl"), dist.wheel.name
    assert "-cp311-abi3-" in dist.wheel.name  # one wheel for every CPython 3.11+
    shown = _run([str(TOOLS / "auditwheel"), "show", str(dist.wheel)], os.environ, REPO)
    words = " ".join(shown.split())  # auditwheel wraps its lines
    assert f'is consistent with the following platform tag: "manylinux_2_17_{arch}"' in words
    assert "external shared libraries are required" not in words, shown


def test_the_wheel_holds_every_file_of_the_package(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = {name for name in wheel.namelist() if ".dist-info/" not in name}
    assert names == _package_files() | {ENGINE}
    assert set(RUNTIME_DATA) <= names


def test_the_wheel_installs_and_runs_in_a_fresh_venv(agentcost: Path, tmp_path: Path) -> None:
    env = _outside_env(
        HOME=str(tmp_path),
        COPILOT_HOME=str(SAMPLE_LOGS),
        AGENTCOST_CACHE_DIR=str(tmp_path / "cache"),
        COLUMNS="120",
    )
    where = "import analytics._scanner as engine; print(engine.__file__)"
    engine = _run([str(agentcost.with_name("python")), "-c", where], env, tmp_path)
    assert Path(engine.strip()).is_relative_to(agentcost.parent.parent)  # not the repo's

    version = _run([str(agentcost), "--version"], env, tmp_path)
    assert version.startswith("agentcost 0.1.0, engine 0.1.0 release"), version

    first_screen = _run([str(agentcost)], env, tmp_path)
    for label in ("this week", "this month", "all time", "38b50b0c"):
        assert label in first_screen

    analysed = _run([str(agentcost), "analyze", str(SAMPLE_LOGS), "-f", "json"], env, tmp_path)
    assert len(json.loads(analysed)["sessions"]) == 5

    report = tmp_path / "report.html"
    _run([str(agentcost), "report", str(SAMPLE_LOGS), "--html", str(report)], env, tmp_path)
    plotly_header = (REPO / PLOTLY_JS).read_text(encoding="utf-8").splitlines()[1]
    assert plotly_header in report.read_text(encoding="utf-8")  # the installed copy, embedded
