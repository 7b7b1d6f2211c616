"""What each agent writes and where: its homes, its files and how they are read.

``discover`` finds every agent's logs under the paths a user names (and tells each file's
agent); ``copilot/`` is GitHub Copilot CLI's; ``claude_code`` and ``codex`` are the other
agents', folded natively (``native/``); ``contract`` puts their tables in the
core's contracts. Nothing after CALLS imports this package (``tests/house/test_layout.py``): the
commands reach it through ``engine.inputs``.

This module holds what the Claude Code and Codex folds share. Each agent module
(``claude_code``, ``codex``) offers ``homes()`` (the agent's log homes that exist; nothing is
ever written there), ``discover(paths)`` (the groups of files to fold together: a request or
running total copied into several files of a group counts once) and ``read(paths)`` (the
folded :class:`AgentTables`). The tables' columns and dtypes are :func:`call_columns`,
:func:`session_columns`, :func:`issue_columns` and :func:`item_columns`; timestamps are
``pl.Datetime("ms", "UTC")`` and unknown values are null, never 0.

polars and the native module are imported on first use, so importing this package is cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from analytics._scanner import ArrowTable


@dataclass(frozen=True)
class AgentTables:
    """What a fold gives: one row per LLM call, per session, per problem found, and per
    item the sessions' context gains (prompts, replies, tool requests and results,
    compaction summaries; calls and items numbered together in log order, ``event_seq``)."""

    calls: pl.DataFrame
    sessions: pl.DataFrame
    issues: pl.DataFrame
    items: pl.DataFrame


def call_columns() -> dict[str, pl.DataType]:
    """The calls table: provenance, session, call identity, tokens (``input_tokens`` includes
    cache reads and writes; ``output_tokens`` includes reasoning), request counters and the
    call's states (``final_usage``: false where the log never states its final usage, so its
    output is a lower bound; ``interrupted``: the log shows the user or the CLI stopped it),
    who served it where the log says (``provider``) and the cost the agent itself logged
    (``logged_cost_usd``, US dollars as the log's decimal text; null where it logs none)."""
    import polars as pl

    time = pl.Datetime("ms", "UTC")
    return {
        "source_file": pl.String(),
        "source_line": pl.Int64(),
        "agent": pl.String(),
        "session_id": pl.String(),
        "call_index": pl.Int64(),
        "event_seq": pl.Int64(),
        "kind": pl.String(),
        "model": pl.String(),
        "agent_id": pl.String(),
        "agent_name": pl.String(),
        "api_call_id": pl.String(),
        "start_time": time,
        "end_time": time,
        "input_tokens": pl.Int64(),
        "cache_read_tokens": pl.Int64(),
        "cache_write_tokens": pl.Int64(),
        "cache_write_1h_tokens": pl.Int64(),
        "output_tokens": pl.Int64(),
        "reasoning_tokens": pl.Int64(),
        "web_search_requests": pl.Int64(),
        "web_fetch_requests": pl.Int64(),
        "speed": pl.String(),
        "service_tier": pl.String(),
        "final_usage": pl.Boolean(),
        "interrupted": pl.Boolean(),
        "token_source": pl.String(),
        "agent_version": pl.String(),
        "provider": pl.String(),
        "logged_cost_usd": pl.String(),
    }


def session_columns() -> dict[str, pl.DataType]:
    """The sessions table: where and when, the agent's version, the calls by kind and by
    state (without a final usage record; interrupted), and how the session's lines were read
    (``issues``: issues in the session's files)."""
    import polars as pl

    time = pl.Datetime("ms", "UTC")
    return {
        "session_id": pl.String(),
        "agent": pl.String(),
        "source_files": pl.List(pl.String()),
        "start_time": time,
        "end_time": time,
        "cwd": pl.String(),
        "agent_version": pl.String(),
        "parent_session_id": pl.String(),
        "models": pl.List(pl.String()),
        "llm_calls": pl.Int64(),
        "main_calls": pl.Int64(),
        "subagent_calls": pl.Int64(),
        "compaction_calls": pl.Int64(),
        "calls_without_final_usage": pl.Int64(),
        "interrupted_calls": pl.Int64(),
        "lines_read": pl.Int64(),
        "unknown_lines": pl.Int64(),
        "issues": pl.Int64(),
    }


def issue_columns() -> dict[str, pl.DataType]:
    """The issues table (as ``analytics.core.schema.ISSUES``): ``error`` lost data, ``warning``
    kept it but it looks wrong."""
    import polars as pl

    return {
        "file": pl.String(),
        "line": pl.Int64(),
        "severity": pl.String(),
        "message": pl.String(),
    }


def item_columns() -> dict[str, pl.DataType]:
    """The items table: each row's ``item`` is its neutral kind (``analytics.core.items``,
    which the attribution and behaviour read; a ``reply`` with its tool requests' bytes as
    ``tool_request_bytes``, a ``tool_call`` naming a tool); ``content_bytes`` is the item's
    size as the log writes it; ``agent_id`` names a sub-agent's items."""
    import polars as pl

    return {
        "source_file": pl.String(),
        "source_line": pl.Int64(),
        "agent": pl.String(),
        "session_id": pl.String(),
        "event_seq": pl.Int64(),
        "item": pl.String(),
        "event_id": pl.String(),
        "timestamp": pl.Datetime("ms", "UTC"),
        "agent_id": pl.String(),
        "tool_call_id": pl.String(),
        "tool_name": pl.String(),
        "content_bytes": pl.Int64(),
        "tool_request_bytes": pl.Int64(),
    }


#: The column :func:`fold` adds to each table when asked (``grouped``): the index in its
#: ``groups`` of the group a row was folded in.
GROUP = "_group"


def _frame(table: ArrowTable, columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """A native table as a polars frame with exactly ``columns`` (names, order, dtypes), each
    column that holds one value in every row, or none, kept as that value
    (``schema.as_literals``: most of a fold's columns are the agent's constants or what it
    never logs)."""
    import polars as pl

    from analytics.core.schema import as_literals

    if len(table) == 0:
        return pl.DataFrame(schema=columns)
    frame = pl.DataFrame([pl.Series(column).alias(name) for name, column in table.columns()])
    return as_literals(frame.select(pl.col(name).cast(dtype) for name, dtype in columns.items()))


def fold(
    groups: Sequence[Sequence[Path | str]],
    agent: str,
    items: bool = True,
    *,
    grouped: bool = False,
) -> AgentTables:
    """Fold ``groups`` with the native fold of the agent whose id is ``agent`` (groups in
    parallel) into :class:`AgentTables`; without ``items`` the items table is empty (and
    nothing is spent gathering it). ``grouped``: each table ends with :data:`GROUP`, each
    row's group (told by the fold, so a caller folding many groups at once need not match
    every row's path against its groups')."""
    import polars as pl

    from analytics import _scanner
    from analytics.agents import fold_ahead

    named = [[str(path) for path in group] for group in groups]
    started = fold_ahead.take(agent, named, items)  # the same fold, begun after discovery
    calls, sessions, issues, items_table = (
        started.result() if started is not None else _scanner.fold_agent(agent, named, items)
    )
    group = {GROUP: pl.Int64()} if grouped else {}
    return AgentTables(
        calls=_frame(calls, call_columns() | group),
        sessions=_frame(sessions, session_columns() | group),
        issues=_frame(issues, issue_columns() | group),
        items=_frame(items_table, item_columns() | group),
    )


def jsonl_files(root: Path) -> list[Path]:
    """Every ``*.jsonl`` regular file under ``root``, sorted (directory entries' types are
    read from the directory, so a file costs no system call of its own; symbolic links are
    not followed, so a loop cannot trap the walk)."""
    import os

    found: list[Path] = []
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        subdirectories = []
        for entry in listed:
            if entry.is_dir(follow_symlinks=False):
                subdirectories.append(entry.path)
            elif entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
        stack.extend(reversed(subdirectories))
    return found


def keyed(target: Path) -> list[tuple[Path, Path]]:
    """(identity, path) of each ``*.jsonl`` under a directory, or of a named file: the
    identity is the resolved path, worked out once per named directory (the walk follows no
    link), so one file reached through two names is recognised without a call per file."""
    if target.is_dir():
        real = target.resolve()
        return [(real / file.relative_to(target), file) for file in jsonl_files(target)]
    return [(target.resolve(), target)]


def unique(found: list[tuple[Path, Path]]) -> list[Path]:
    """The paths of ``found`` (see :func:`keyed`), each file once, in order."""
    seen: set[Path] = set()
    kept: list[Path] = []
    for identity, path in found:
        if identity not in seen:
            seen.add(identity)
            kept.append(path)
    return kept
