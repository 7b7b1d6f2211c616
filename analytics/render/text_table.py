"""Text tables that fit the terminal, drawn by rich.

A table is a list of :class:`Column` over the rows of a frame whose cells are already strings
(``report.py`` formats them with polars). :func:`render_table` fits the table to a
:class:`Layout`: while the table is wider than the layout, the column with the highest
``drop`` rank goes (the most important columns have rank 0 and are never dropped), and a
note under the table names what was left out; a column of text counts at most
``WRAP_WIDTH`` wide, since whatever does not fit is wrapped by rich inside its cells, so no
line is longer than the width and one long cell never costs a column. ``Layout(width=None)``
(``--wide``) keeps every column at its natural width. Numbers are right-aligned; totals are
the table's footer. Colour only when the layout asks for it (a terminal, no ``NO_COLOR``).
A long table (``LONG_TABLE`` rows) that fits has its rows padded by polars at the widths rich
gives the columns, with the same result: rich costs about 0.2 ms a cell.

>>> import polars as pl
>>> frame = pl.DataFrame({"name": ["a", "b"], "n": ["1", "22"]})
>>> print(render_table(frame, [Column("NAME", "name", right=False), Column("N", "n")],
...     {"name": "total", "n": "23"}, Layout(width=40)))
NAME    N
─────────
a       1
b      22
─────────
total  23
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analytics.core.words import counted

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console, RenderableType

#: Below this width a table takes its compact layout (see ``Layout.compact``).
COMPACT_BELOW = 120
#: Width of a line with no limit (``--wide``): longer than any table agentcost draws.
_UNLIMITED = 100_000


@dataclass(frozen=True)
class Layout:
    """Where a table is drawn: ``width`` columns (``None``: no limit, ``--wide``), in colour
    or not."""

    width: int | None = COMPACT_BELOW
    colour: bool = False

    @property
    def wide(self) -> bool:
        """Everything, at its natural width, session ids in full."""
        return self.width is None

    @property
    def compact(self) -> bool:
        """A narrow terminal: shorter session ids, fewer columns."""
        return self.width is not None and self.width < COMPACT_BELOW

    @property
    def id_length(self) -> int | None:
        """Characters of a session id to show (``None``: all of them, ``--wide``): the
        8-character prefix people recognise (Copilot's own short form), never a cut inside
        the id's next group."""
        return None if self.width is None else 8


@dataclass(frozen=True)
class Column:
    """One column: header, the frame column holding its (string) cells, alignment, and its
    ``drop`` rank: 0 is always shown; when the table is too wide the highest rank goes first."""

    header: str
    field: str
    right: bool = True
    drop: int = 0


def shorter_path(path: pl.Expr) -> pl.Expr:
    """A path of more than two parts cut from the left to its last two, as shells show the
    working directory (``/home/ana/src/repo/sub`` is ``…/repo/sub``); other text is kept."""
    return path.str.replace(r"^(?:[A-Za-z]:)?[/\\](?:[^/\\]+[/\\])+([^/\\]+[/\\][^/\\]+)$", "…/$1")


def console(layout: Layout) -> Console:
    """A rich console that draws into a string at the layout's width and colour."""
    from rich.console import Console

    return Console(
        file=io.StringIO(),
        width=layout.width or _UNLIMITED,
        force_terminal=layout.colour,
        color_system="standard" if layout.colour else None,
        no_color=not layout.colour,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
        force_jupyter=False,
        force_interactive=False,
    )


def draw(layout: Layout, *parts: RenderableType) -> str:
    """``parts`` one below the other as text (long lines wrapped at the width), each line
    without trailing blanks."""
    out = console(layout)
    for part in parts:
        out.print(part, overflow="fold", crop=False, soft_wrap=layout.wide)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in text.splitlines())


def render_table(
    frame: pl.DataFrame,
    columns: Sequence[Column],
    totals: Mapping[str, str] | None = None,
    layout: Layout | None = None,
    notes: Sequence[str] = (),
) -> str:
    """The rows of ``frame`` (string cells) as a table fitted to ``layout``, with an optional
    totals row (``totals``: cell text by field) and ``notes`` below it (wrapped)."""
    import polars as pl

    layout = layout or Layout()
    fields = list(dict.fromkeys(c.field for c in columns))
    cells = frame.select(pl.col(field).fill_null("-") for field in fields)
    longest = cells.select(pl.all().str.len_chars().max().fill_null(0)).row(0, named=True)
    widest = {
        c.field: max(len(c.header), len((totals or {}).get(c.field, "")), int(longest[c.field]))
        for c in columns
    }
    shown = _fit(columns, widest, layout)
    hidden = [c.header for c in columns if c not in shown]
    if hidden:
        left_out = (
            f"{counted(len(hidden), 'column')} left out to fit {layout.width} (--wide shows all)"
        )
        notes = [*notes, f"{left_out}: {', '.join(hidden)}"]
    natural = sum(widest[c.field] for c in shown) + 2 * (len(shown) - 1)
    if frame.height > LONG_TABLE and natural <= (layout.width or natural) and _plain(cells):
        return _long_table(cells, shown, widest, totals, layout, notes)
    rows = cells.select(c.field for c in shown).rows()
    return draw(layout, _table(shown, rows, totals, layout), *notes)


#: Above this many rows, the rows are laid out by polars at the widths rich chose (see
#: ``_long_table``): rich spends about 0.2 ms a cell, 10 s on a 5,000-session tree.
LONG_TABLE = 200


def _plain(cells: pl.DataFrame) -> bool:
    """Whether every cell is ASCII: one character, one terminal column, as polars pads."""
    import polars as pl

    return not cells.select(pl.any_horizontal(pl.all().str.contains(r"[^\x00-\x7f]").any())).item()


def _long_table(
    cells: pl.DataFrame,
    shown: Sequence[Column],
    widths: Mapping[str, int],
    totals: Mapping[str, str] | None,
    layout: Layout,
    notes: Sequence[str],
) -> str:
    """A long table that fits without wrapping: rich draws its header, rules and totals at
    the columns' natural widths (what it would choose itself), and the rows are those widths'
    padded cells, two blanks apart, made by polars over whole columns."""
    import polars as pl

    frame = draw(layout, _table(shown, [], totals, layout, widths)).splitlines()
    padded = [
        pl.col(c.field).str.pad_start(widths[c.field])
        if c.right
        else pl.col(c.field).str.pad_end(widths[c.field])
        for c in shown
    ]
    body = cells.select(pl.concat_str(padded, separator="  ").str.strip_chars_end())
    lines = [*frame[:2], *body.to_series().to_list(), *frame[2:]]
    return "\n".join([*lines, draw(layout, *notes)] if notes else lines)


#: Columns of text (left-aligned) may wrap their cells down to this width (or their
#: header's) before a column is left out: one long cell never costs another column.
WRAP_WIDTH = 24


def _fit(columns: Sequence[Column], widest: Mapping[str, int], layout: Layout) -> list[Column]:
    """The columns to show: all of them, less the highest ``drop`` ranks while the table is
    wider than the layout. Numbers count at their longest text (``widest``); text at most at
    ``WRAP_WIDTH`` (or its header), as rich wraps longer cells inside their column."""
    shown = list(columns)
    if layout.width is None:
        return shown

    def needs(column: Column) -> int:
        width = widest[column.field]
        return width if column.right else min(width, max(WRAP_WIDTH, len(column.header)))

    def natural(chosen: Sequence[Column]) -> int:
        return sum(needs(c) for c in chosen) + 2 * (len(chosen) - 1)

    while natural(shown) > layout.width:
        candidates = [c for c in shown if c.drop > 0]
        if not candidates:
            break
        shown.remove(max(reversed(candidates), key=lambda c: c.drop))
    return shown


def _table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | None]],
    totals: Mapping[str, str] | None,
    layout: Layout,
    widths: Mapping[str, int] | None = None,
) -> RenderableType:
    """A rich table of ``rows``; ``widths`` sets each column's width (``_long_table``)."""
    from rich import box
    from rich.table import Table

    table = Table(
        box=box.SIMPLE_HEAD if totals is None else box.SIMPLE,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        show_footer=totals is not None,
        header_style="bold" if layout.colour else "",
        footer_style="bold" if layout.colour else "",
        expand=False,
    )
    for column in columns:
        table.add_column(
            column.header,
            footer=(totals or {}).get(column.field, ""),
            justify="right" if column.right else "left",
            overflow="fold",
            no_wrap=layout.wide,
            min_width=widths[column.field] if widths else None,
        )
    for row in rows:
        table.add_row(*(_cell(value, layout) for value in row))
    return table


def _cell(value: str | None, layout: Layout) -> RenderableType:
    """A cell's text; in colour, problems stand out (unpriced, mismatches)."""
    from rich.text import Text

    text = "-" if value is None else value
    if not layout.colour:
        return text
    style = "red" if "MISMATCH" in text else "yellow" if "unpriced" in text else ""
    return Text(text, style=style)
