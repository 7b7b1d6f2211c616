"""The house's rules, checked on the source.

The flow is agents -> engine -> core -> render -> cli (docs/adding-an-agent.md, "The house").
What comes after CALLS (the core, the renderers and the commands that read logs) sees only
the contract tables; it never learns how an agent writes its logs. So no module under ``core/``,
``render/`` or ``cli/`` imports ``analytics.agents`` or anything under it: not at the top,
not inside a function, not for type checking. The commands reach the agents' files through
the engine (``engine.inputs``). The one exception is ``cli/tools.py``: ``simulate`` and
``capture-to-log`` make logs, before CALLS. And pricing has one entry point.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "analytics"
#: The native engine's crate (Rust).
CRATE = PACKAGE.parent / "native"
#: The packages whose modules come after CALLS.
AFTER_CALLS = ("core", "render", "cli")
#: Modules under those packages that come before CALLS, and why.
BEFORE_CALLS = {"cli/tools.py": "simulate and capture-to-log write logs"}
#: The packages of the flow, and what else may sit at the top of ``analytics/``.
PACKAGES = {"agents", "engine", "core", "render", "cli", "cache", "rate_tables"}
#: ``entry.py`` is the console script: it replays a stored output before the command line is
#: imported, so it cannot live in ``cli/``, whose package imports typer and every command.
TOP_LEVEL = {"__init__.py", "_scanner.pyi", "entry.py"}


def agent_imports(source: str) -> list[str]:
    """The agent modules ``source`` imports (absolute imports; the package has no relative
    ones), each as the line's module name.

    >>> agent_imports("from analytics.agents.copilot import events\\nimport polars")
    ['analytics.agents.copilot']
    >>> agent_imports("from analytics import agents\\nfrom analytics.core import schema")
    ['analytics.agents']
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module == "analytics":
                names = [f"analytics.{alias.name}" for alias in node.names]
        else:
            continue
        found += [name for name in names if name.split(".")[:2] == ["analytics", "agents"]]
    return found


def after_calls() -> list[Path]:
    """Every module after CALLS."""
    modules = [p for package in AFTER_CALLS for p in sorted((PACKAGE / package).rglob("*.py"))]
    return [p for p in modules if p.relative_to(PACKAGE).as_posix() not in BEFORE_CALLS]


@pytest.mark.parametrize("module", after_calls(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_nothing_after_calls_imports_an_agent_module(module: Path) -> None:
    assert agent_imports(module.read_text("utf-8")) == []


def test_the_rule_sees_every_kind_of_import() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from analytics.agents.discover import Found\n"
        "def f():\n"
        "    import analytics.agents.codex\n"
        "    from analytics.agents import claude_code\n"
    )
    assert agent_imports(source) == [
        "analytics.agents.discover",
        "analytics.agents.codex",
        "analytics.agents",
    ]


def test_the_exceptions_exist() -> None:
    assert all((PACKAGE / path).is_file() for path in BEFORE_CALLS)
    assert len(after_calls()) > 20  # the rule has something to check


def _holds_source(directory: Path) -> bool:
    """Whether a directory holds anything but byte code (a deleted package leaves that)."""
    return any(p.suffix != ".pyc" and p.is_file() for p in directory.rglob("*"))


def test_every_module_lives_in_a_package_of_the_flow() -> None:
    """No flat module creeps back beside the packages."""
    top = {p.name for p in PACKAGE.iterdir() if p.is_file() or _holds_source(p)}
    extension = {name for name in top if name.startswith("_scanner.") and name != "_scanner.pyi"}
    assert top - extension == PACKAGES | TOP_LEVEL


def test_pricing_has_one_entry_point() -> None:
    """Every view prices through ``core.pricing.price`` (``price_calls``, ``price_analysis``):
    only it applies one table's prices (``call_costs.price_by_table``), so the log's own
    prices and bring-your-own-key calls are priced alike everywhere."""
    callers = sorted(
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, ast.Name | ast.Attribute)
            and (getattr(node, "id", None) or getattr(node, "attr", None)) == "price_by_table"
            for node in ast.walk(ast.parse(p.read_text("utf-8")))
        )
    )
    assert callers == ["core/pricing/price.py"]


def test_the_docs_show_every_package() -> None:
    """The docs' tree of the house (docs/adding-an-agent.md) names each package of
    ``analytics/`` (sub-packages included) and nothing else, so the map stays true as the
    layout changes."""
    page = (PACKAGE.parent / "docs" / "adding-an-agent.md").read_text("utf-8")
    house = page.split("## The house", 1)[1].split("How the data flows", 1)[0]
    shown = set(re.findall(r"^ {6}( *)([a-z_]+)/ ", house, re.M))
    named = {len(indent) // 2 * "  " + name for indent, name in shown}
    packages = {
        (len(p.relative_to(PACKAGE).parts) - 1) * "  " + p.name
        for p in PACKAGE.rglob("*")
        if p.is_dir() and _holds_source(p) and p.name != "__pycache__"
    }
    assert named == packages


def crate_module(path: Path, root: Path) -> tuple[str, ...]:
    """The module path of a source file of the crate at ``root`` (``read/json.rs`` ->
    ``("read", "json")``; a folder's ``mod.rs`` is the folder; ``lib.rs`` the crate)."""
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] in ("mod", "lib") else parts


def crate_uses(path: Path, root: Path, modules: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """The modules of the crate that a source file names (``crate::a::b``, ``super::c``), each
    as the longest module path the name starts with; its own ancestors left out (a module may
    use what the folder holding it defines)."""
    me = crate_module(path, root)
    here = me if path.stem in ("mod", "lib") else me[:-1]  # the folder ``super`` is beside
    used = set()
    for kind, rest in re.findall(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)", path.read_text()):
        names = tuple(rest.split("::")[1:])
        full = names if kind == "crate" else here[:-1] + names
        longest = next((full[:n] for n in range(len(full), 0, -1) if full[:n] in modules), None)
        if longest is not None and longest != me[: len(longest)]:
            used.add(longest)
    return used


def crate_circles(root: Path) -> list[str]:
    """The modules of the crate at ``root`` that reach themselves through the modules they
    use."""
    files = sorted(root.rglob("*.rs"))
    modules = {crate_module(f, root) for f in files}
    graph = {crate_module(f, root): crate_uses(f, root, modules) for f in files}

    def reaches(start: tuple[str, ...], goal: tuple[str, ...]) -> bool:
        seen: set[tuple[str, ...]] = set()
        todo = list(graph.get(start, ()))
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    return sorted("::".join(m) for m in graph if reaches(m, m))


def test_the_crate_has_no_module_circle() -> None:
    """No two modules of the crate use each other, directly or through others (a child's
    use of its folder's items aside): read -> fold -> agents -> python."""
    assert crate_circles(CRATE) == []


def test_the_circle_rule_sees_a_circle(tmp_path: Path) -> None:
    """A tokenizer and a format that use each other (as ``json.rs`` and ``format.rs`` did)
    are a circle; a child using its folder's items is not."""
    (tmp_path / "read").mkdir()
    (tmp_path / "lib.rs").write_text("pub mod read;\n")
    (tmp_path / "read" / "mod.rs").write_text("pub mod format;\npub mod json;\nfn shared() {}\n")
    (tmp_path / "read" / "json.rs").write_text("use super::shared;\n")
    (tmp_path / "read" / "format.rs").write_text("use crate::read::json::Kind;\n")
    assert crate_circles(tmp_path) == []
    (tmp_path / "read" / "json.rs").write_text("fn f() { crate::read::format::unescape(); }\n")
    assert crate_circles(tmp_path) == ["read::format", "read::json"]


def test_only_the_binding_knows_python_and_arrow() -> None:
    """PyO3 and Arrow appear under ``native/python/`` only: everything else builds and is
    tested without Python."""
    outside = sorted(
        str(f.relative_to(CRATE))
        for f in CRATE.rglob("*.rs")
        if f.relative_to(CRATE).parts[0] != "python"
        and re.search(r"\b(pyo3|arrow_array|arrow_buffer|arrow_schema|arrow_data)::", f.read_text())
    )
    assert outside == []
