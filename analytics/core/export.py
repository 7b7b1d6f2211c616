"""``agentcost export DIR``: one person's logs, analysed and priced here, written into the team
dataset (``analytics.core.dataset``: the contract, the layout and how files are written).

``export_analysis`` is the whole of it: the priced tables of one analysis, with the ``user``
and ``host`` they belong to, become one file per session and table, written beside whatever
other people's exports already put in ``DIR``. Running it again on the same logs changes no
file; a session that grew replaces only its own files; ``plan`` says what would change and
writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from analytics.core.dataset import Changes, Who, data_files, dataset_frames, run_key, write_files

if TYPE_CHECKING:
    from analytics.engine.analyze import Analysis


def export_analysis(
    directory: Path,
    result: Analysis,
    priced_calls: pl.DataFrame,
    priced_sessions: pl.DataFrame,
    who: Who,
    inputs: Sequence[str],
    *,
    plan: bool = False,
) -> Changes:
    """Write (or, with ``plan``, plan) the dataset files of one priced analysis of
    ``inputs`` (the paths it read) under ``directory``."""
    own = (*result.agent_tables, *result.call_table_rows)  # of sessions, then of calls
    frames = dataset_frames(
        priced_calls,
        priced_sessions,
        result.issues,
        who,
        result.found.agent_of_file(),
        own,
    )
    key = run_key(who, inputs)
    known = [table for table, _ in own]
    return write_files(directory, data_files(frames, key), known, plan=plan, issues_key=key)
