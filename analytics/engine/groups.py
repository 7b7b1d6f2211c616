"""The staged pipeline's logs in groups of sessions, and a cold run's first scans begun early.

``group_analysis.run_stages`` analyses a large tree a group of logs at a time (its docstring says
why); the groups are decided here, from discovery alone. ``scan_ahead`` lets a command start
reading the first groups as soon as it knows it will analyse the whole tree, before it
imports polars and the stages (about 0.1 s of one core). Nothing here imports polars, so the
commands can call it first.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

from analytics.agents.discover import Found, LogFile
from analytics.agents.pipeline import pipeline
from analytics.cache import fingerprints
from analytics.cache.location import results_dir

#: Log bytes analysed together when events need not be kept. Smaller groups hold less at
#: once and the stages' joins and windows cost less than linearly more per group; on the
#: 1 GB benchmark tree 64 MB gave the lowest peak (about 290 MB against 345 MB at 192 MB)
#: and no slower a run, and 32 or 16 MB groups were slower (1.35 and 1.55 s against 1.27 s,
#: medians of 5 alternating cold runs): each group has costs of its own.
GROUP_BYTES = 64 * 2**20
#: Groups analysed at once (see ``stages``); each holds its own events meanwhile.
WORKERS = 2
#: Groups whose scans a cold command begins before it imports the stages (``scan_ahead``),
#: ``WORKERS`` at a time. Two kept both cores reading only until about 0.25 s on the 1 GB
#: benchmark tree, while the command was still importing; four keep them reading until the
#: stages take over (cold 0.97 s against 1.01 s, medians of 7 alternating runs; six gave
#: 0.96 s, with 4 MB more at the peak).
AHEAD = 2 * WORKERS


def groups_of(logs: Sequence[LogFile], group_bytes: int) -> list[list[LogFile]]:
    """Logs in about total / ``group_bytes`` groups, by a hash of their session hint.

    The number of groups is a power of two (at most the number of logs, rounded up), so it
    changes only when the tree doubles or halves, and a log stays in its group as other logs
    grow. No logs at all are one empty group, analysed like any other (to empty tables).
    """
    buckets = log_buckets(logs, group_bytes)
    count = max(buckets.values(), default=0) + 1
    groups: list[list[LogFile]] = [[] for _ in range(count)]
    for log in logs:
        groups[buckets[log.file]].append(log)
    return [group for group in groups if group] or [[]]


def log_buckets(logs: Sequence[LogFile], group_bytes: int) -> dict[str, int]:
    """Each log's group (by its path), over a power-of-two count: by its session hint, in
    runs of session ids (``bucket``) while that spreads the bytes evenly, else by checksum.

    Random session ids (UUID v4, as Copilot's) spread evenly over their leading digits. Ids
    that do not (time-ordered ones, UUID v7: a few months of sessions share their first
    digits) would put most of a tree in one group, whose memory is the run's peak; the test
    is that no group holds more than twice its share plus its largest log."""
    total = sum(size(log) for log in logs)
    count = 1
    while count * group_bytes < total and count < len(logs):
        count *= 2
    runs = {log.file: bucket(log.session_hint, count) for log in logs}
    held = [0] * count
    for log in logs:
        held[runs[log.file]] += size(log)
    largest = max((size(log) for log in logs), default=0)
    if max(held, default=0) <= 2 * total / count + largest:
        return runs
    return {log.file: zlib.crc32(log.session_hint.encode()) % count for log in logs}


def bucket(hint: str, count: int) -> int:
    """The group of a session hint among ``count``: a hint that starts with eight lowercase
    hex digits (a session id, a UUID: Copilot names each session's directory so) by those
    digits, in order; any other by its CRC-32. Session ids are then split into runs, and
    the groups' calls, each group's in session order, come in order when put together
    (``results.in_order``)."""
    head = hint[:8]
    if len(head) == 8 and all(digit in _HEX for digit in head):
        return int(head, 16) * count >> 32
    return zlib.crc32(hint.encode()) % count


_HEX = frozenset("0123456789abcdef")


def largest_first(groups: Sequence[Sequence[LogFile]]) -> list[int]:
    """The order in which groups are analysed: the largest (in bytes) first, ties in their
    own order. Two at a time, the run then ends on small groups, and a core waits less for
    the other's last group."""
    return sorted(range(len(groups)), key=lambda i: -sum(size(log) for log in groups[i]))


def size(log: LogFile) -> int:
    """The log's size as discovery saw it (0 when it could not be inspected)."""
    return log.stat.st_size if log.stat else 0


def first_scans(groups: Sequence[Sequence[LogFile]]) -> list[Sequence[LogFile]]:
    """The groups whose scans ``scan_ahead`` begins: the first ``AHEAD`` that ``run_stages``
    analyses (``largest_first``)."""
    return [groups[i] for i in largest_first(groups)[:AHEAD]]


def scan_ahead(found: Found, paths: Sequence[Path], *, use_cache: bool) -> None:
    """Begin scanning the first groups of ``found`` that ``run_stages`` analyses
    (``first_scans``), when the analysis of ``paths`` will read every group: a tree of
    several groups, with no stored result of these inputs and no earlier result of these
    paths to take unchanged groups from (``use_cache``; ``group_analysis.Previous``). Otherwise any
    scan begun before is dropped and nothing starts.

    On the 1 GB benchmark tree a cold ``analyze`` starts reading about 0.1 s sooner; the
    scans are those the agent's ``Pipeline.scan`` would make, and it takes them over."""
    groups = groups_of(found.logs, GROUP_BYTES)
    if len(groups) < 2 or (use_cache and _stored(found, paths)):
        pipeline().forget_scans()
        return
    pipeline().start_scans(first_scans(groups), WORKERS)


def _stored(found: Found, paths: Sequence[Path]) -> bool:
    """Whether the result cache holds a result the analysis would load, or take groups from."""
    key = fingerprints.tree_key(found)
    if key is None:  # an input cannot be inspected: the analysis is not stored
        return False
    root = results_dir()
    return (root / key).exists() or (root / "slots" / fingerprints.paths_slot(paths)).exists()
