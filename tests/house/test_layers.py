"""The house's layers, checked on what is loaded and on the source.

The packages form one order, each importing only those before it at run time:
``core`` (contracts, words, the agents' registry) < ``agents`` (each agent's files and
fold) < ``cache`` (what is kept between runs, keyed on the agents' files) < ``engine``
(the agent-neutral entry point, which consults the caches) < ``render`` < ``cli``. Imports
made only for type checking are left out: they load nothing. (The issue that asked for
this order put ``cache`` above ``engine``; the entry point consults the caches and no cache
module needs the engine, so measured, the caches sit below it.)

An agent is a plug-in: no module outside ``agents/`` imports an agent's own package or
spells an agent's id (the registry, ``core/registry.py``, is the one place that lists
them), and importing every core and render module loads no module of ``agents/``,
``cache/``, ``engine/`` or ``cli/``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from analytics.core import registry

PACKAGE = Path(__file__).resolve().parents[2] / "analytics"
#: The packages in their order: each may import those before it.
ORDER = ("core", "agents", "cache", "engine", "render", "cli")


def modules(*packages: str) -> Iterator[Path]:
    """Every module of ``packages`` (all when none are named)."""
    for package in packages or ORDER:
        yield from sorted((PACKAGE / package).rglob("*.py"))


def name_of(path: Path) -> str:
    """The dotted name of a module of the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(source: str) -> list[str]:
    """The ``analytics`` modules ``source`` imports at run time (at the top or inside a
    function; not under ``if TYPE_CHECKING:``), each as ``analytics.<package>...``.

    >>> runtime_imports("from analytics.core import schema\\nimport polars")
    ['analytics.core.schema']
    >>> runtime_imports("from typing import TYPE_CHECKING\\nif TYPE_CHECKING:\\n"
    ...                 "    from analytics.engine.analyze import Analysis")
    []
    """
    tree = ast.parse(source)
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("analytics.")]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "analytics":
                found += [f"analytics.{a.name}" for a in node.names]
            elif node.module.startswith("analytics."):
                found += [f"{node.module}.{a.name}" for a in node.names]
    return found


def test_importing_core_and_render_loads_no_agent_engine_cache_or_cli_module() -> None:
    """In a fresh interpreter, every core and render module imported: nothing of the layers
    above them is loaded (so neither is any agent's reader)."""
    names = [name_of(p) for p in modules("core", "render")]
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout.split()
    above = [m for m in loaded if m.split(".")[:2][-1] in ("agents", "cache", "engine", "cli")]
    assert [m for m in above if m.startswith("analytics.")] == []
    assert len(names) > 30  # the check has something to import


def test_each_package_imports_only_those_before_it() -> None:
    crossings = []
    for path in modules():
        mine = path.relative_to(PACKAGE).parts[0]
        for imported in runtime_imports(path.read_text("utf-8")):
            theirs = imported.split(".")[1]
            if theirs in ORDER and ORDER.index(theirs) > ORDER.index(mine):
                crossings.append(f"{path.relative_to(PACKAGE)} imports {imported}")
    assert crossings == []


def agent_packages() -> set[str]:
    """The agents' own packages: each reader's, and Copilot's."""
    readers = {agent.reader for agent in registry.AGENTS if agent.reader}
    return readers | {"analytics.agents.copilot"}


def every_import(source: str) -> list[str]:
    """Every module ``source`` imports, for type checking too (``from m import x``: ``m``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    return found


def test_no_module_outside_agents_imports_an_agent_package() -> None:
    """The engine, the caches, the renderers and the command line reach every agent through
    the registry (``agents.reader`` for the readers, ``agents.pipeline`` for the staged
    pipeline's agent), never by importing its package."""
    owned = agent_packages()
    importers = {
        path.relative_to(PACKAGE).as_posix()
        for path in modules(*(p for p in ORDER if p != "agents"))
        if any(
            name == package or name.startswith(package + ".")
            for name in every_import(path.read_text("utf-8"))
            for package in owned
        )
    }
    assert importers == set()


def test_no_agent_id_is_spelled_outside_agents_and_the_registry() -> None:
    """An agent's id (``claude-code``) or package name (``claude_code``) as a string
    constant, docstrings aside, anywhere but ``agents/`` and ``core/registry.py``."""
    spelled = set(registry.ids()) | {p.rsplit(".", 1)[1] for p in agent_packages()}
    found = []
    for path in PACKAGE.rglob("*.py"):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith("agents/") or where == "core/registry.py":
            continue
        tree = ast.parse(path.read_text("utf-8"))
        documented = {
            id(node.body[0].value)  # type: ignore[attr-defined]
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
            and ast.get_docstring(node, clean=False) is not None
        }
        found += [
            f"{where}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and node.value in spelled
            and id(node) not in documented
        ]
    assert found == []
