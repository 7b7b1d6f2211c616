"""Native folds started before they are needed, for :func:`analytics.agents.fold` to take.

A cold analysis of a tree of another agent's logs spends the time between discovery and the
fold on one core (the command line's parser, polars, pricing and the cache are imported, and
the tree's key worked out) while the other waits, and then folds on both. ``start`` begins
the fold of groups on a thread of its own as soon as discovery is done (the native fold
releases the GIL and runs on rayon's threads), and ``take`` hands its result to ``fold``
when it asks for exactly those groups of exactly that agent, with or without items: a fold
asked differently is made anew, so what a command prints never depends on whether a fold was
started ahead (on Kimi Code's 1 GB benchmark tree a cold ``analyze`` folds some 0.15 s
sooner). Nothing here imports polars.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from analytics import _scanner

#: A fold's identity: the agent's id, its groups' paths, whether it gathers items.
_Key = tuple[str, tuple[tuple[str, ...], ...], bool]

_started: dict[_Key, Future[Any]] = {}
_lock = threading.Lock()


def start(agent: str, groups: Sequence[Sequence[str]], items: bool) -> None:
    """Begin folding ``groups`` of ``agent``'s files (``_scanner.fold_agent``) for ``take``
    to hand over; a fold of the same groups begun earlier and not taken is dropped."""
    named = [list(group) for group in groups]
    if not named:
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="agentcost-fold-ahead")
    with _lock:
        _started[_key(agent, named, items)] = pool.submit(_scanner.fold_agent, agent, named, items)
    pool.shutdown(wait=False)  # its thread ends with the fold


def take(agent: str, groups: Sequence[Sequence[str]], items: bool) -> Future[Any] | None:
    """The fold ``start`` began of exactly these groups, if any (taken: it is handed once)."""
    if not _started:
        return None
    with _lock:
        return _started.pop(_key(agent, groups, items), None)


def forget() -> None:
    """Drop every fold begun and not taken (a fold already running finishes unread)."""
    with _lock:
        _started.clear()


def _key(agent: str, groups: Sequence[Sequence[str]], items: bool) -> _Key:
    return agent, tuple(tuple(group) for group in groups), items
