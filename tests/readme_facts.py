"""The per-file facts tables of ``../shared/real_logs/<agent>/README.md``, as data.

Each table section names the folder its paths are relative to ("Paths below are relative to
`...`"); each row is a dict from the table's header cells to the row's cells (markdown as
written), with the file's full path. The agent facts tests read their figures from these.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REAL_LOGS

_BASE = re.compile(r"^Paths below are relative to `([^`]+)`")


def cells(row: str) -> list[str]:
    """The cells of a markdown table row."""
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def facts_rows(readme: Path) -> list[tuple[Path, dict[str, str]]]:
    """Every file row of the README's facts tables: (file path, header -> cell)."""
    rows: list[tuple[Path, dict[str, str]]] = []
    base: Path | None = None
    header: list[str] = []
    for text in readme.read_text(encoding="utf-8").splitlines():
        match = _BASE.match(text)
        if match:
            base, header = readme.parent / match.group(1), []
        elif base is not None and text.startswith("| file |"):
            header = cells(text)
        elif base is not None and header and text.startswith("| `"):
            row = dict(zip(header, cells(text), strict=True))
            rows.append((base / row["file"].strip("`"), row))
        elif not text.startswith("|"):
            header = [] if text.startswith("#") else header
    return rows


def empty(cell: str) -> bool:
    """Whether a cell says "none" (an en dash, as the tables write it)."""
    return cell.strip() in {"\u2013", "-", ""}


def number(text: str) -> int:
    """A figure as the tables write it (``1,234``, ``**12**``)."""
    return int(text.replace(",", "").replace("*", "").strip())


def params(agent: str) -> list[object]:
    """pytest parameters, one per table row of ``real_logs/<agent>/README.md``; a single
    skipped one, saying why, where the shared folder is absent."""
    readme = REAL_LOGS / agent / "README.md"
    if not readme.is_file():
        reason = f"real {agent} logs not present at {readme.parent} (the shared/ folder is absent)"
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=reason), id="absent")]
    return [
        pytest.param(path, row, id=str(path.relative_to(readme.parent)))
        for path, row in facts_rows(readme)
    ]
