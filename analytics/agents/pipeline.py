"""What the engine's staged pipeline asks of an agent it analyses in groups of sessions.

Most agents state each call's usage in their logs: a reader folds them a call at a time
(``agents.reader``). An agent whose calls must be worked out from the whole log (Copilot's:
the per-call tokens are reconstructed and checked against the session's totals) goes through
the engine's pipeline instead (``engine.group_analysis``): the engine owns the groups of sessions,
the result cache, the previous analysis, the scans begun ahead and the parallelism; the
agent brings what is its own, through a module the registry names (``Agent.pipeline``) and
that is imported only when its logs are analysed:

- ``scan(logs, progress)``: its logs read (natively), in a form only its ``stages`` read,
  and ``session_ids(scanned)``: the sessions the scanned lines name;
- ``stages(scanned, records, keep_events)``: every stage after the scan, to the core's
  tables (``GroupTables``), with the per-call ``records`` kept beside the logs for those
  sessions; ``ordered_events(logs)``: a group's events again, for a result analysed without;
- ``records(found, session_ids)``: those records (rows in ``OBSERVED_USAGE``, and their
  issues), and ``has_records(found)``: whether discovery found any;
- ``start_scans(groups, workers)`` and ``forget_scans()``: scans begun before the stages are
  imported, which ``scan`` takes over for exactly those logs;
- ``follower(log)``: what ``watch`` holds of a growing log (``Follower``), and
  ``captures_as_logs(paths)``: other inputs it reads (an SDK capture) as the logs it writes;
- the tools that make its logs: ``write_capture(capture, out)`` and ``simulator()`` (the
  module of ``agentcost simulate``: its parameters, parsers and ``simulate``);
- ``reconstruction()``: the module of its per-call reconstruction (``call_tokens_and_fit``
  and the session columns it reads, ``SESSION_INPUT``), which ``validate`` runs blind
  against observed calls and the corpus runs on other agents' logs (``engine.corpus``);
- ``event_of_item()``: its own event type of each row's neutral ``item``
  (``analytics.core.items``), for another agent's items handed to its reconstruction
  (``engine.corpus``);
- its own tables, for what only it has (``core.schema.AgentTable``): of its sessions
  (``session_table()``: Copilot's shutdown reconciliation, billed credits and fit
  diagnostics), with ``split_sessions(sessions)``: the sessions its stages give (stored so in
  the result cache) as SESSIONS rows and that table's rows, which views join back by session
  id; and of its calls (``call_table()``: Copilot's bill of each call), whose columns its
  stages' calls keep beside the core's (``Analysis.calls`` leaves them out,
  ``Analysis.call_view`` keeps them).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast

from analytics.core.registry import AGENTS

if TYPE_CHECKING:
    import polars as pl

    from analytics.agents.discover import Found, LogFile
    from analytics.core.schema import AgentTable

Progress = Callable[[int, int], None]
"""Called with (bytes read so far, bytes to read)."""


@dataclass(frozen=True)
class GroupTables:
    """What an agent's stages give for one group of its logs, in the core's contracts:
    CALLS with tokens, SESSIONS, MODEL_METRICS, ISSUES, LOG_PRICES, and EVENTS when kept."""

    calls: pl.DataFrame
    sessions: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame
    log_prices: pl.DataFrame
    events: pl.DataFrame | None


class Follower(Protocol):
    """One growing log read as it grows (``watch``): ``update()`` reads what it gained and
    says whether it changed; ``parsed`` is all read so far (what ``Pipeline.stages`` takes),
    ``found`` the discovery of its session (its per-call records), ``log`` the log."""

    log: LogFile
    found: Found

    def update(self) -> bool: ...

    @property
    def parsed(self) -> Any: ...


class Pipeline(Protocol):
    """An agent's side of the staged pipeline (the module's docstring says each part)."""

    def scan(self, logs: Sequence[LogFile], progress: Progress | None = None) -> Any: ...

    def session_ids(self, scanned: Any) -> list[str]: ...

    def stages(self, scanned: Any, records: pl.DataFrame, keep_events: bool) -> GroupTables: ...

    def ordered_events(self, logs: Sequence[LogFile]) -> pl.DataFrame: ...

    def records(
        self, found: Found, session_ids: tuple[str, ...] | None
    ) -> tuple[pl.DataFrame, pl.DataFrame]: ...

    def has_records(self, found: Found) -> bool: ...

    def start_scans(self, groups: Sequence[Sequence[LogFile]], workers: int) -> None: ...

    def forget_scans(self) -> None: ...

    def follower(self, log: LogFile) -> Follower: ...

    def captures_as_logs(
        self, paths: list[Path] | None
    ) -> AbstractContextManager[list[Path] | None]: ...

    def write_capture(self, capture: Path, out: Path) -> Path: ...

    def simulator(self) -> ModuleType: ...

    def reconstruction(self) -> ModuleType: ...

    def event_of_item(self) -> pl.Expr: ...

    def session_table(self) -> AgentTable: ...

    def call_table(self) -> AgentTable: ...

    def split_sessions(self, sessions: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]: ...


def pipeline() -> Pipeline:
    """The staged pipeline's agent side: the module of the agent the registry names one for."""
    (named,) = [agent.pipeline for agent in AGENTS if agent.pipeline]
    return cast("Pipeline", importlib.import_module(named))


def pipeline_agent() -> str:
    """The id of the agent whose logs go through the staged pipeline."""
    (agent,) = [agent.id for agent in AGENTS if agent.pipeline]
    return agent


def agent_tables() -> list[AgentTable]:
    """Every agent's own table the registry's agents declare (the staged pipeline's agent's),
    for what lists them whether or not its logs were read (the team dataset's contract): of
    sessions, then of calls."""
    agent = pipeline()
    return [agent.session_table(), agent.call_table()]
