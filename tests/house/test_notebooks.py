"""The notebooks run top to bottom without an error, in the venv's own kernel, and use only
the public API (``analytics.__all__``)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

import analytics
from tests.conftest import REAL_LOGS, REPO, SAMPLE_LOGS

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120


def test_the_four_notebooks_are_there() -> None:
    assert [nb.stem for nb in NOTEBOOKS] == [
        "cost_curves",
        "provider_comparison",
        "team_month",
        "what_if",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_uses_only_the_public_api(path: Path) -> None:
    """Every import of agentcost is ``from analytics import NAME`` with NAME in ``__all__``:
    a notebook is what a user writes, so it shows the API a user has."""
    imported = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analytics"):
                imported += [(node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                imported += [(a.name, "") for a in node.names if a.name.startswith("analytics")]
    assert imported, path.name
    assert [i for i in imported if i[0] != "analytics" or i[1] not in analytics.__all__] == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path) -> None:
    if not any(SAMPLE_LOGS.rglob("*.jsonl")) and not REAL_LOGS.is_dir():
        pytest.skip("neither sample_logs/ nor ../shared/real_logs holds session logs")
    spec = KernelSpecManager().get_kernel_spec("python3")
    # jupyter_client runs a kernel spec's "python" as sys.executable: the venv's interpreter.
    assert spec.argv[0] in {"python", "python3", sys.executable}, spec.argv
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    errors = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert errors == []
