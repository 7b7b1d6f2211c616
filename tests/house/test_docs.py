"""Issue 39: a short README and a documentation site (mkdocs.yml, docs/) that stays true.

``make docs`` (run by ``make test``) builds the site with ``mkdocs build --strict``, which fails
on a broken link or anchor and on a page left out of the nav. These tests keep what the build
cannot see: the README stays a front page whose first commands are the two set-up commands;
every page is in the nav; the commands page is written from the CLI (docs/hooks/); every
error message agentcost can raise is on the troubleshooting page; and every shell example of
the docs is one the tour (tests/cli/test_tour.py) can run.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from types import ModuleType

import pytest
import yaml

from tests.conftest import REPO

DOCS = REPO / "docs"
PACKAGE = REPO / "analytics"
#: The errors a command turns into one line on stderr (``core/errors.py``).
ERRORS = {"InputError", "UsageError", "ConfigError", "RateTableError", "StrictModeError"}
#: The shortest literal part of a message that is looked for on the troubleshooting page.
STABLE = 12


def pages() -> list[str]:
    """Every Markdown page of the site, relative to docs/ (the hooks are code, not pages)."""
    return sorted(
        p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "hooks" not in p.parts
    )


def nav_pages(nav: object) -> list[str]:
    """The pages ``mkdocs.yml``'s nav names, at any depth."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    return []


def shell_examples() -> list[tuple[str, list[str]]]:
    """Each ```sh block of the docs, as (page, its commands): comments and blank lines left
    out. The tour runs each block's commands in order, in a scratch directory."""
    found = []
    for page in pages():
        text = (DOCS / page).read_text("utf-8")
        for block in re.findall(r"^```sh\n(.*?)^```$", text, re.M | re.S):
            lines = [line.strip() for line in block.splitlines()]
            found.append((page, [line for line in lines if line and not line.startswith("#")]))
    return found


def _hook() -> ModuleType:
    """docs/hooks/cli_reference.py, the mkdocs hook that writes the commands' reference."""
    spec = importlib.util.spec_from_file_location(
        "cli_reference", DOCS / "hooks" / "cli_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_a_front_page() -> None:
    """At most 300 lines, and its first section is the two set-up commands."""
    lines = (REPO / "README.md").read_text("utf-8").splitlines()
    assert len(lines) <= 300, len(lines)
    first = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert lines[first] == "## Set-up: two commands"
    commands = [line.split()[0:2] for line in lines[first:] if line.startswith("    make ")]
    assert commands[:2] == [["make", "run"], ["make", "test"]]


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text("utf-8"))
    named = nav_pages(config["nav"])
    assert sorted(named) == pages()
    assert len(named) == len(set(named)), "a page is in the nav twice"


def test_the_readme_links_to_pages_that_exist() -> None:
    """The README is not built by mkdocs: its links into docs/ are checked here."""
    readme = (REPO / "README.md").read_text("utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert links
    assert [link for link in links if not (REPO / link).is_file()] == []


def test_the_commands_page_is_written_from_the_cli() -> None:
    """The page holds the hook's marker, and the hook writes every command's own help."""
    hook = _hook()
    assert hook.MARKER in (DOCS / "commands.md").read_text("utf-8")
    reference = hook.reference()
    for path in hook.command_paths():
        name = " ".join(["agentcost", *path])
        assert f"### `{name}`" in reference
        assert f"Usage: {name}" in reference
    assert ["budget", "set"] in hook.command_paths()
    assert "--token-limit" in reference  # an option of one command (blocks)
    assert max(map(len, reference.splitlines())) <= hook.WIDTH


def _literal(node: ast.expr) -> str | None:
    """A message as written in the source, with ``{}`` where a value goes; None when it is
    not a string built in place."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
            for v in node.values
        )
    return None


def raised_messages() -> list[tuple[str, str]]:
    """(where, the longest fixed part) of every error message ``analytics/`` raises whose
    fixed part is at least ``STABLE`` characters (a message built elsewhere is skipped)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            message = _literal(node.args[0]) if name in ERRORS else None
            if message is None:
                continue
            fixed = max(message.split("{}"), key=len).strip()
            if len(fixed) >= STABLE:
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                found.append((where, fixed))
    return found


@pytest.mark.parametrize(("where", "fixed"), raised_messages())
def test_every_error_message_is_on_the_troubleshooting_page(where: str, fixed: str) -> None:
    page = (DOCS / "troubleshooting.md").read_text("utf-8")
    assert fixed in page, f"{where}: {fixed!r} is not in docs/troubleshooting.md"


def test_the_messages_are_found() -> None:
    """The collector finds the messages it is meant to (a refactor that hides them from it
    fails here rather than passing every page)."""
    fixed = [message for _, message in raised_messages()]
    assert ": permission denied; agentcost needs read access" in fixed
    assert "); choose another path" in fixed  # cannot_write
    assert len(fixed) >= 40


def test_every_code_block_is_a_shell_example_or_text() -> None:
    """A fenced block is ```sh (the tour runs it) or ```text (shown, not run: syntax, output,
    a cluster's commands), so no shell example escapes the tour by its fence."""
    for page in pages():
        fences = re.findall(r"^```(\S*)", (DOCS / page).read_text("utf-8"), re.M)
        opening = fences[0::2]
        assert set(opening) <= {"sh", "text"}, (page, opening)


def test_the_shell_examples_are_agentcost_commands() -> None:
    """Every line of a ```sh block is an agentcost command (the tour runs it on the bundled
    sample logs), and there is at least one on the getting-started page."""
    examples = shell_examples()
    assert any(page == "getting-started.md" for page, _ in examples)
    for page, commands in examples:
        assert commands, page
        assert all(line.startswith("agentcost") for line in commands), (page, commands)
