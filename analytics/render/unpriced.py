"""The lines that say why calls have no cost, under the ``analyze`` tables and the first screen.

One line per model and reason (``call_costs.unpriced_reasons``), from each call's own
``unpriced_reason``: a Claude Code call looked up in the vendor tables is never said to be
missing from the Copilot table, and a call of a priced model whose tokens the log lacks says so.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from analytics.core.words import counted
from analytics.render.text_table import Layout, draw


def reason_lines(reasons: pl.DataFrame, renames: Mapping[str, str] | None = None) -> list[str]:
    """``unpriced: MODEL: REASON (N calls)`` for each row of ``reasons`` (model,
    unpriced_reason, calls); a model ``renames`` (``--model-map``) priced under another name
    says which (``gpt-5 (as claude-haiku-4.5)``).

    >>> frame = pl.DataFrame({"model": ["gpt-6-luna"], "calls": [2],
    ...     "unpriced_reason": ["model not in the github-copilot rate table"]})
    >>> reason_lines(frame)
    ['unpriced: gpt-6-luna: model not in the github-copilot rate table (2 calls)']
    """
    lines = []
    for model, reason, calls in reasons.select("model", "unpriced_reason", "calls").iter_rows():
        looked_up = (renames or {}).get(model, model)
        name = model or "unknown model"
        if looked_up != model:
            name = f"{name} (as {looked_up})"
        lines.append(f"unpriced: {name}: {reason or 'unknown'} ({counted(calls, 'call')})")
    return lines


def with_reasons(text: str, lines: list[str], layout: Layout) -> str:
    """``text`` (a drawn table or screen) with ``lines`` below it, wrapped at the width (as
    plain text: a ``[`` in a model name is no markup)."""
    from rich.text import Text

    if not lines:
        return text
    return "\n\n".join([text, "\n".join(draw(layout, Text(line)) for line in lines)])
