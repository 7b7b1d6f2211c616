"""What discovery learned from each file's first bytes, kept between runs (``discover.Memo``).

Discovery opens every file under the paths named and reads its head, to tell a log from
other files and which agent wrote it (a Codex log's first line, which carries the whole
system prompt, is read whole and decoded). On a warm run of a large tree that reading was
most of the run. The answers are kept here, one memo per set of targets: each file's under
its path, with its identity on disk (``Seen``: size, ``mtime_ns``, ``ctime_ns``, inode). A
file is stat'ed, and judged again when any of them differs (``ctime`` changes on every write
and cannot be set back, so a file rewritten with its old size and mtime is judged again). A
memo keeps the files the last discovery met, and no other: it is as large as its tree's
listing (about 200 bytes a file: some 35 MB for 170,000 logs). While a discovery runs, a
file's entry holds the ``Seen`` its log keeps anyway: five integers a file would take some
40 MB on a tree of 170,000 logs, and, freed between the logs discovery keeps, stay resident
to the end of the run.

Memos live in agentcost's cache directory, never beside the logs, keyed by the targets
(absolute) and agentcost's code and version (``fingerprints.digest``); the ``KEEP`` most
recently used are kept, within ``BUDGET_BYTES``. The command line uses them unless
``agentcost --no-cache`` (``use``); a library call of ``discover`` keeps nothing.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from analytics.agents.discover import Answer, Seen, remember_heads
from analytics.cache.location import cache_dir, drop_least_recent

#: Bump when a memo changes shape.
FORMAT = 2
#: Memos kept, and the bytes they may take together; the least recently used go first.
KEEP = 16
BUDGET_BYTES = 256 << 20

#: How long ago a file must have last changed to be kept (its clock's tick is coarser than
#: its nanoseconds).
SETTLING_NS = 2_000_000_000

#: What a memo keeps of a file: its ``Seen`` (as plain bytes in the file, which ``marshal``
#: writes), then the index of its answer among the memo's answers (a tree's files share a
#: handful of answers).
Kept = tuple[bytes, int]


def use(enabled: bool = True) -> None:
    """Have every discovery of this process consult and keep a memo (``enabled``), or none."""
    remember_heads(Heads.of if enabled else None)


class Heads:
    """The memo of one discovery: the answers kept by the last discovery of the same
    targets (read once, when opened), and those of this one (written when it closes, if
    they differ)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._answers, self._before = _load(path) if path is not None else ([], {})
        self._now: dict[str, Kept] = {}
        self._numbers = {answer: number for number, answer in enumerate(self._answers)}
        self._changed = False
        self._began = time.time_ns()

    @classmethod
    def of(cls, targets: Sequence[Path]) -> Heads:
        """The memo of a discovery of ``targets`` (under ``cache_dir()``)."""
        from analytics.cache.fingerprints import digest

        named = json.dumps([os.path.abspath(target) for target in targets])
        key = digest("heads", [], named)
        return cls(cache_dir() / f"heads-v{FORMAT}" / key if key else None)

    def recall(self, path: str) -> tuple[Seen, Answer] | None:
        """``discover.Memo.recall``: one stat of ``path`` when the memo holds it."""
        kept = self._before.get(path)
        if kept is None:
            return None
        try:
            seen = Seen.of(os.stat(path))
        except OSError:
            return None
        try:
            stated, number = kept
            if stated != seen:
                return None
            answer = self._answers[number]
        except (TypeError, ValueError, IndexError):  # a damaged entry: judged again
            return None
        self._now[path] = (seen, number)
        return seen, answer

    def note(self, path: str, seen: Seen, answer: Answer) -> None:
        """``discover.Memo.note``: not for a file changed within ``SETTLING_NS`` of this
        discovery's start, which could change again within the same tick of its clock and
        be seen as unchanged next time."""
        _, mtime, ctime, _ = seen.fields()
        if ctime > self._began - SETTLING_NS or mtime > self._began:
            return
        number = self._numbers.setdefault(answer, len(self._answers))
        if number == len(self._answers):
            self._answers.append(answer)
        self._now[path] = (seen, number)
        self._changed = True

    def close(self) -> None:
        """``discover.Memo.close``: the memo written (aside, then renamed into place) when
        this discovery's answers differ from those read, else only marked as used."""
        path, now, answers = self.path, self._now, self._answers
        changed = self._changed or len(now) != len(self._before)
        self._before, self._now = {}, {}
        if path is None:
            return
        if not changed:
            with contextlib.suppress(OSError):
                os.utime(path)  # most recently used: kept longest
            return
        temporary = path.parent / f".{path.name}.{uuid.uuid4().hex}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            entries = {name: (bytes(seen), number) for name, (seen, number) in now.items()}
            temporary.write_bytes(marshal.dumps((FORMAT, answers, entries)))
            temporary.replace(path)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        drop_least_recent(path.parent, KEEP, BUDGET_BYTES)


def _load(path: Path) -> tuple[list[Answer], dict[str, Kept]]:
    """The answers and entries of the memo at ``path``; none when it is missing or damaged
    (its answers are checked here, each entry when it is recalled)."""
    try:
        loaded = marshal.loads(path.read_bytes())
        form, answers, entries = loaded
    except (OSError, ValueError, EOFError, TypeError):
        return [], {}
    if form != FORMAT or not isinstance(answers, list) or not isinstance(entries, dict):
        return [], {}
    if not all(map(_an_answer, answers)):
        return [], {}
    return answers, entries


def _an_answer(answer: object) -> bool:
    """Whether ``answer`` is one discovery gives (``discover.Answer``)."""
    return (
        isinstance(answer, tuple)
        and len(answer) == 3
        and answer[0] in ("log", "claim")
        and all(part is None or isinstance(part, str) for part in answer[1:])
    )
