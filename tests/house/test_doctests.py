"""Every docstring example in the package runs and says what it shows (``doctest``), and the
public API (``analytics.__all__``) is lazy and shown by example, name by name."""

from __future__ import annotations

import doctest
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import analytics

PACKAGE = Path(analytics.__file__).parent
MODULES = sorted(
    ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py")
    if ">>> " in p.read_text("utf-8")
)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name: str) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(importlib.import_module(name), optionflags=flags)
    assert result.failed == 0, name


def test_there_are_examples() -> None:
    assert len(MODULES) > 10 and "analytics" in MODULES


def test_the_api_is_shown_name_by_name() -> None:
    """Each public name appears in an example of the package's docstring, as ``ac.NAME``."""
    examples = "\n".join(
        line
        for line in (analytics.__doc__ or "").splitlines()
        if line.lstrip()[:4] in {">>> ", "... "}
    )
    shown = set(re.findall(r"\bac\.(\w+)", examples))
    assert set(analytics.__all__) - shown == set()


def test_every_public_name_resolves() -> None:
    for name in analytics.__all__:
        assert getattr(analytics, name) is not None, name
    with pytest.raises(AttributeError):
        _ = analytics.price  # type: ignore[attr-defined]


def test_importing_the_api_loads_nothing_heavy() -> None:
    code = "import sys, analytics; print(sorted({'polars', 'plotly', 'duckdb'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
