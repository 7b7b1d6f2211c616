"""Find Copilot session logs under the paths a user names.

Accepted: a session directory (``<id>/events.jsonl``), an events file, a legacy flat
``<sessionId>.jsonl``, a ``session-state`` directory, a Copilot home (a directory holding
``session-state/``), or any directory tree of those. Inside a ``session-state`` directory each
sub-directory is one session, whose log is its ``events.jsonl`` alone. With no path, the
Copilot home is ``$COPILOT_HOME`` or ``~/.copilot``. A Copilot home also yields its per-call
token records: ``session-store.db`` and OpenTelemetry exports under ``otel/``.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import operator
import os
import stat
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from analytics.core import registry
from analytics.core.errors import InputError
from analytics.core.registry import AGENTS, every_home, listed

_EVENTS = "events.jsonl"
_MAX_DEPTH = 32
_NOTHING_HERE = (
    "no session log here (no Copilot events.jsonl or <sessionId>.jsonl, no log of "
    f"{listed([a.short_name for a in AGENTS if a is not registry.COPILOT], 'or')}); "
    "name a session directory or file, or an agent's home"
)


class Seen(bytes):
    """What discovery saw of a file on disk, and all the caches key on: its size, and the
    times and inode that change when it is written. Kept instead of the whole
    ``os.stat_result``, packed in 32 bytes (a tree of 170,000 logs holds one each: as a tuple
    of four ints it took some 220 bytes a file, this takes 72); the fields keep
    ``os.stat_result``'s names, so either answers the same questions."""

    __slots__ = ()

    def __new__(cls, st_size: int, st_mtime_ns: int, st_ctime_ns: int, st_ino: int) -> Seen:
        return super().__new__(cls, _SEEN.pack(st_size, st_mtime_ns, st_ctime_ns, st_ino))

    @classmethod
    def of(cls, stat: os.stat_result) -> Seen:
        """The parts of ``stat`` that are kept."""
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)

    def __getnewargs__(self) -> tuple[int, int, int, int]:  # type: ignore[override]
        return self.fields()

    def __repr__(self) -> str:
        size, mtime, ctime, ino = self.fields()
        return f"Seen(st_size={size}, st_mtime_ns={mtime}, st_ctime_ns={ctime}, st_ino={ino})"

    __str__ = __repr__

    def fields(self) -> tuple[int, int, int, int]:
        """(``st_size``, ``st_mtime_ns``, ``st_ctime_ns``, ``st_ino``)."""
        size, mtime, ctime, ino = _SEEN.unpack(self)
        return size, mtime, ctime, ino

    @property
    def st_size(self) -> int:
        """The size in bytes."""
        return self.fields()[0]

    @property
    def st_mtime_ns(self) -> int:
        """The modification time in nanoseconds since the epoch."""
        return self.fields()[1]

    @property
    def st_ctime_ns(self) -> int:
        """The status change time in nanoseconds since the epoch."""
        return self.fields()[2]

    @property
    def st_ino(self) -> int:
        """The inode number."""
        return self.fields()[3]

    @property
    def st_mtime(self) -> float:
        """The modification time in seconds since the epoch."""
        return self.st_mtime_ns / 1e9


#: ``Seen``'s layout: size, mtime and ctime (signed, as ``os.stat`` gives them), inode.
_SEEN = struct.Struct("<qqqQ")


@dataclass(frozen=True, slots=True)
class LogFile:
    """One events file and the session id to use if the file does not name its session.

    ``file`` is the path as discovery spelled it (``path`` makes it a ``Path`` when asked:
    a tree of 170,000 logs would hold 130 MB of ``Path`` objects), ``real_path`` the file's
    resolved path (often the same string) and ``stat`` what discovery saw of it (both set by
    ``discover``): one file reached by two spellings is one log, and caches key on both.
    ``hint`` is the session id to use (``session_hint``), or None for the file's own
    (``own_hint``): discovery gives every log its own, so a tree's logs hold no second
    string each for it.
    """

    file: str
    hint: str | None = None
    real_path: str = ""
    stat: Seen | None = None

    @property
    def path(self) -> Path:
        """The path as discovery spelled it."""
        return Path(self.file)

    @property
    def session_hint(self) -> str:
        """The session id to use if the file does not name its session: ``hint``, else
        the file's own (``own_hint``)."""
        return own_hint(self.file) if self.hint is None else self.hint


def own_hint(file: str) -> str:
    """The session a log's path names: its directory's name for a session directory's
    ``events.jsonl``, else its name without its suffix (``Path.stem``)."""
    name = os.path.basename(file)
    if name == _EVENTS:
        return os.path.basename(os.path.dirname(file))
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


@dataclass(frozen=True)
class Found:
    """Everything discovered: event logs, session stores, OTel exports, and problems."""

    logs: list[LogFile] = field(default_factory=list)
    stores: list[Path] = field(default_factory=list)
    otel: list[Path] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    #: Files set aside because they are not session logs (``sniff``): (path, what it is).
    not_logs: list[tuple[str, str]] = field(default_factory=list)
    #: Logs of the other agents (``agent_of``): Claude Code and Codex files, read by
    #: ``analytics.agents`` rather than the Copilot pipeline. (agent, log) pairs.
    agent_logs: list[tuple[str, LogFile]] = field(default_factory=list)

    def agent_of_file(self) -> dict[str, str]:
        """The agent of each file read (logs, session stores, OTel exports), by path: what
        the team dataset files an issue of that file under."""
        agents = {log.file: COPILOT for log in self.logs}
        agents.update({str(path): COPILOT for path in (*self.stores, *self.otel)})
        agents.update({log.file: agent for agent, log in self.agent_logs})
        return agents


def copilot_home() -> Path:
    """``$COPILOT_HOME`` or ``~/.copilot`` (``registry.COPILOT``)."""
    (home,) = registry.COPILOT.homes()
    return home


def discover(paths: Sequence[Path]) -> Found:
    """Resolve user paths to log files. A path that does not exist raises ``InputError``.

    A named path that holds no log at all is a problem (reported, not fatal), so a mistyped
    directory never reads as "0 sessions" without a word. A file that is not a log at all
    (``sniff``) is set aside in ``not_logs``; when nothing else was found, that is an
    ``InputError`` naming what the file looks like. Directories are listed with
    ``os.scandir`` and only named paths and symlinks are resolved (other entries extend their
    resolved parent), so a tree of thousands of sessions costs about one syscall per session.
    The walk makes objects that hold no cycle, hundreds of thousands of them in a big tree:
    the cyclic collector, which would go over them again and again, waits till it ends.
    """
    primed = _PRIMED.pop(_named(paths), None)
    if primed is not None:
        return primed
    with _collector_paused():
        return _discover(paths)


#: A discovery made before the command line was parsed (``analytics.entry``), by the paths
#: it was made of: the command's own ``discover`` of those paths takes it (once), instead of
#: walking the tree again.
_PRIMED: dict[tuple[str, ...], Found] = {}


def prime(paths: Sequence[Path], found: Found) -> None:
    """Have the next ``discover(paths)`` give ``found``: what discovering them gave just now."""
    _PRIMED.clear()
    _PRIMED[_named(paths)] = found


def _named(paths: Sequence[Path]) -> tuple[str, ...]:
    return tuple(map(str, paths))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the block runs (as it was after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: An answer discovery worked out from a file's first bytes (``_Walk._judged``): its kind,
#: what the file is if not a log, and its agent: ``("log", what, agent)`` for a JSON-lines
#: file, ``("claim", None, agent)`` for a file offered to the readers (agent None: none
#: claims it).
Answer = tuple[str, str | None, str | None]
#: A file's first bytes (None: it could not be read) and what is seen of it on disk
#: (``read_head_seen``).
HeadSeen = tuple[bytes | None, Seen | None]
#: A question discovery asks of a file (``_judge_log``, ``_judge_claim``), from its head
#: when read already: what it is seen as, the answer, and whether that may be kept.
Judge = Callable[[str, HeadSeen | None], tuple[Seen | None, Answer, bool]]
#: The kind of what a walk puts off that is a problem to note, not a file to judge.
_PROBLEM = "problem"


class Memo(Protocol):
    """The answers an earlier discovery worked out from each file's first bytes, kept by
    the file's identity on disk (``cache.heads``): an unchanged file is stat'ed, not opened
    and read again (on a tree of thousands of logs that reading was most of a warm run)."""

    def recall(self, path: str) -> tuple[Seen, Answer] | None:
        """What ``path`` was seen as and the answer noted for it, if it is unchanged."""

    def note(self, path: str, seen: Seen, answer: Answer) -> None:
        """Keep ``answer`` for ``path`` as ``seen`` (or as recalled) for the next discovery."""

    def close(self) -> None:
        """Keep what was noted (only the files this discovery met), best effort."""


#: What opens the memo of a discovery of some targets (``remember_heads``); none by
#: default: a library call keeps nothing on disk.
_MEMO: list[Callable[[Sequence[Path]], Memo]] = []


def remember_heads(memo: Callable[[Sequence[Path]], Memo] | None) -> None:
    """Have each discovery from now on use the memo ``memo(targets)`` opens (None: none)."""
    _MEMO[:] = [memo] if memo is not None else []


def _discover(paths: Sequence[Path]) -> Found:
    """``discover``, the collector left to its caller."""
    targets = list(paths) or default_targets()
    memo = _MEMO[0](targets) if _MEMO else None
    try:
        return _walk(targets, _Walk(memo), named=bool(paths))
    finally:
        if memo is not None:
            memo.close()


def _walk(targets: list[Path], walk: _Walk, *, named: bool) -> Found:
    """The logs under ``targets`` (``named`` by the user, else every agent's home)."""
    for target in targets:
        if not target.exists():
            where = _dangling(target) or "no such file or directory"
            raise InputError(
                f"{target}: {where}; name a session directory or log file, "
                f"or an agent's home ({listed([a.short_name for a in AGENTS], 'or')})"
            )
        if not os.access(target, os.R_OK):
            raise InputError(f"{target}: permission denied; agentcost needs read access")
        found = walk.found
        before = (len(found.logs), len(found.agent_logs), len(found.problems), len(found.not_logs))
        walk.named(target)
        after = (len(found.logs), len(found.agent_logs), len(found.problems), len(found.not_logs))
        if after == before:
            found.problems.append((str(target), _NOTHING_HERE))
    if not walk.found.logs and not walk.found.agent_logs:
        _nothing_to_read(walk.found, named=named)
    unique = {log.real_path: log for log in walk.found.logs}
    walk.found.logs[:] = sorted(unique.values(), key=lambda log: log.file)
    others = {log.real_path: (agent, log) for agent, log in walk.found.agent_logs}
    walk.found.agent_logs[:] = sorted(others.values(), key=lambda pair: pair[1].file)
    return walk.found


def _nothing_to_read(found: Found, *, named: bool) -> None:
    """Raise ``InputError`` when discovery found no log: the first file that is not one
    (``sniff``), else, under paths the user named, the first problem (a directory without
    a log, a dangling symlink), each with how many more there are. An agent's home found by
    default with no session yet (a fresh install) is not an error: it has 0 sessions."""
    if found.not_logs:
        first, more, noun = found.not_logs[0], len(found.not_logs) - 1, "file"
    elif named and found.problems:
        first, more, noun = found.problems[0], len(found.problems) - 1, "problem"
    else:
        return
    path, what = first
    also = f" (and {more} more {_plural(more, noun)} like it)" if more else ""
    raise InputError(f"{path}: {what}{also}")


def _dangling(path: Path | str) -> str | None:
    """What a symlink whose target does not exist is, in words; None for any other path."""
    try:
        target = os.readlink(path)
    except OSError:
        return None
    if os.path.exists(path):
        return None
    return f"a symlink to {target}, which does not exist"


def default_targets() -> list[Path]:
    """Every agent home that exists: the Copilot home, and each other agent's log
    directories (``Reader.homes``)."""
    from analytics.agents.reader import readers

    home = copilot_home()
    targets = [home] if home.is_dir() else []
    targets += [directory for _, reader in readers() for directory in reader.homes()]
    if not targets:
        raise InputError(
            f"no agent home found ({every_home()}); set "
            f"{listed([v for a in AGENTS for v in a.home_variables], 'or')}, or name a path "
            "(try: agentcost analyze sample_logs)"
        )
    return targets


class _Walk:
    """One discovery: what was found so far, the Copilot homes already looked at, and the
    memo of earlier answers it consults (``Memo``)."""

    def __init__(self, memo: Memo | None = None) -> None:
        self.found = Found()
        self._homes: set[str] = set()
        self._memo = memo
        #: what the walk of a tree put off (``_put_off``); None outside a walk
        self._queue: list[tuple[str, str, str]] | None = None
        #: the memo's answers, and the heads read, of the files of a walk being judged
        self._known: dict[str, tuple[Seen, Answer]] = {}
        self._heads: dict[str, tuple[bytes | None, Seen | None]] = {}

    def named(self, target: Path) -> None:
        """Add the logs under a path the user named (a file or a directory)."""
        real = Path(os.path.realpath(target))
        offered = target.name.endswith(_OFFERED)
        if target.is_file() and offered and self._claimed(str(target), str(real)):
            return
        if target.is_file():
            session = target.name == _EVENTS
            self._log(str(target), str(real))
            self._home_of(real.parent if session else real)
            # A Claude Code session file's sub-agents live beside it, in <session>/subagents/
            subagents = target.with_suffix("") / "subagents"
            if not session and subagents.is_dir():
                self._tree(subagents, real.with_suffix("") / "subagents")
            return
        if (target / _EVENTS).is_file():
            self._log(str(target / _EVENTS), str(real / _EVENTS))
            self._home_of(real)
            return
        self._tree(target, real)

    def _tree(self, target: Path, real: Path) -> None:
        """Add the logs of a directory tree (``real`` is ``target`` resolved): the tree is
        walked first, then its files are judged in the order met, their heads read together,
        in parallel (``_judge_all``): on a home of thousands of session folders those reads
        were a third of discovering it, on one core."""
        self._queue = []
        try:
            self._directory(target, real, depth=0)
        finally:
            queue, self._queue = self._queue, None
        self._judge_all(queue)

    def _judge_all(self, queue: list[tuple[str, str, str]]) -> None:
        """Do what the walk put off, in its order: each file judged (``_log`` or
        ``_claimed``) from its head (or the memo's answer), each problem noted. The heads of
        the files the memo holds no answer for are read together (``read_heads``),
        ``HEADS_AT_ONCE`` files at a time: the 170,000 heads of the 1 GB pi tree read at
        once held some 700 MB."""
        try:
            for start in range(0, len(queue), HEADS_AT_ONCE):
                self._judge_part(queue[start : start + HEADS_AT_ONCE])
        finally:
            self._known, self._heads = {}, {}

    def _judge_part(self, part: list[tuple[str, str, str]]) -> None:
        """``_judge_all`` of one part of the queue, its heads read first."""
        memo = self._memo
        wanted: list[str] = []
        self._known = {}
        for kind, path, _ in part:
            if kind == _PROBLEM:
                continue
            recalled = memo.recall(path) if memo is not None else None
            if recalled is not None and recalled[1][0] == kind:
                self._known[path] = recalled
            else:
                wanted.append(path)
        self._heads = dict(zip(wanted, read_heads(wanted), strict=True)) if wanted else {}
        for kind, path, other in part:
            self._judge(kind, path, other)

    def _put_off(self, kind: str, path: str, other: str) -> None:
        """A file to judge (``kind`` ``log`` or ``claim``; ``other``: its resolved path) or a
        problem (``_PROBLEM``; ``other``: its message), put off till the walk ends
        (``_tree``), or done now outside a walk."""
        if self._queue is not None:
            self._queue.append((kind, path, other))
        else:
            self._judge(kind, path, other)

    def _judge(self, kind: str, path: str, other: str) -> None:
        """Do one thing ``_put_off`` names: judge the file, or note the problem."""
        if kind == _PROBLEM:
            self.found.problems.append((path, other))
        elif kind == "log":
            self._log(path, other)
        else:
            self._claimed(path, other)

    def _directory(
        self,
        target: Path | str,
        real: Path | str,
        depth: int,
        listed: list[os.DirEntry[str]] | None = None,
    ) -> None:
        """Add the logs of a directory tree (``real`` is ``target`` resolved; ``listed``: its
        entries, when its parent listed them already). Strings, not Paths, inside: a tree of
        thousands of directories (a Claude Code home) would spend more on pathlib than on the
        system calls."""
        if depth >= _MAX_DEPTH:
            return
        here, resolved = str(target), str(real)
        try:
            entries = listed if listed is not None else _entries(here)
        except OSError as exc:
            if not self._copilot_home(here, resolved, depth, None):
                self._put_off(_PROBLEM, here, f"cannot list directory: {exc.strerror}")
            return
        # what the listing shows is not asked of the file system again (a home of 14,000
        # session folders costs two system calls fewer each)
        named = {entry.name: entry for entry in entries}
        if self._copilot_home(here, resolved, depth, named):
            return
        in_state = os.path.basename(here) == "session-state"
        same = here == resolved
        sessions_here = False
        for entry in entries:
            linked = entry.is_symlink()
            if linked:
                real_child = os.path.realpath(entry.path)
            else:  # one string for both spellings where they agree: a log holds both
                real_child = entry.path if same else f"{resolved}/{entry.name}"
            if entry.is_file():
                if entry.name.endswith(".jsonl") and entry.name != ".jsonl":
                    self._put_off("log", entry.path, real_child)
                elif entry.name.endswith(_OFFERED):
                    self._put_off("claim", entry.path, real_child)
            elif entry.is_dir() and entry.name != "otel":
                # the folder is listed once, for both questions: is it a session folder (an
                # events.jsonl in it), and else what it holds (a home of 14,000 folders
                # saves a system call each)
                try:
                    children: list[os.DirEntry[str]] | None = _entries(entry.path)
                except OSError:
                    children = None
                if (
                    any(c.name == _EVENTS and c.is_file() for c in children)
                    if children is not None
                    else _regular_file(os.path.join(entry.path, _EVENTS))
                ):
                    events = os.path.join(entry.path, _EVENTS)
                    self._put_off("log", events, f"{real_child}/{_EVENTS}")
                    if linked:
                        self._home_of(real_child)
                    sessions_here = True
                    continue
                if in_state:
                    # A session directory's log is its events.jsonl alone: what lies deeper
                    # (files/, checkpoints/, snapshots) is the session's work, and can hold
                    # .jsonl files of the user's own.
                    self._put_off(_PROBLEM, entry.path, "session directory has no events.jsonl")
                    continue
                self._directory(entry.path, real_child, depth + 1, children)
            elif linked and (dangling := _dangling(entry.path)):
                self._put_off(_PROBLEM, entry.path, dangling)
        if sessions_here:
            self._home_of(os.path.join(resolved, "session"))
        store = named.get("session-store.db")
        if not in_state and store is not None and store.is_file():
            self._token_records(here)

    def _copilot_home(
        self, here: str, resolved: str, depth: int, named: dict[str, os.DirEntry[str]] | None
    ) -> bool:
        """Walk ``here`` as a Copilot home, if it holds ``session-state/`` (its listing's
        entries by name, ``named``; None: it could not be listed, so the folder is looked
        for); whether it does."""
        if named is None:
            home = os.path.isdir(os.path.join(here, "session-state"))
        else:
            entry = named.get("session-state")
            home = entry is not None and entry.is_dir()
        if not home:
            return False
        self._token_records(here)
        state = os.path.join(here, "session-state")
        self._directory(state, os.path.join(resolved, "session-state"), depth + 1)
        return True

    def _log(self, path: str, real: str) -> None:
        """Add a JSON-lines file (``path`` as spelled, ``real`` resolved; its session hint its
        own, ``own_hint``) as the log of the agent that wrote it, or set it aside with what
        it is."""
        seen, answer = self._judged(path, _judge_log)
        _, what, agent = answer
        if what == EMPTY:
            self.found.problems.append((path, EMPTY))
        elif what is not None:
            self.found.not_logs.append((path, what))
            return
        log = LogFile(path, None, real, seen)
        if agent == COPILOT:
            self.found.logs.append(log)
        elif agent is None:
            self.found.not_logs.append((path, _NO_AGENT))
        else:
            self.found.agent_logs.append((agent, log))

    def _claimed(self, path: str, real: str) -> bool:
        """Add a file that is not JSON lines (a ``.json`` chat, an SQLite database) as the log
        of the first agent whose reader ``claims`` it; whether one did. A file no reader
        claims is passed over: a tree holds many such files that are no log at all."""
        seen, (_, _, agent) = self._judged(path, _judge_claim)
        if agent is None:
            return False
        self.found.agent_logs.append((agent, LogFile(path, None, real, seen)))
        return True

    def _judged(self, path: str, judge: Judge) -> tuple[Seen | None, Answer]:
        """What ``path`` is seen as and ``judge``'s answer for it: the memo's, when it holds
        one for the file unchanged (of the same kind), else ``judge``'s, noted when it may be
        kept (the file could be read). In a walk's judging (``_judge_all``) the memo was
        asked already, and the head read."""
        known = self._known.pop(path, None)
        if known is not None:
            return known
        memo = self._memo
        read = self._heads.pop(path, None)
        if memo is None or read is not None:
            seen, answer, keep = judge(path, read)
        else:
            kind = "log" if judge is _judge_log else "claim"
            recalled = memo.recall(path)
            if recalled is not None and recalled[1][0] == kind:
                return recalled
            seen, answer, keep = judge(path, None)
        if memo is None:
            return seen, answer
        if keep and seen is not None:
            memo.note(path, seen, answer)
        return seen, answer

    def _home_of(self, session: Path | str) -> None:
        """A session inside a Copilot home gets that home's token records (``session`` is
        resolved)."""
        state = os.path.dirname(session)
        if os.path.basename(state) == "session-state":
            self._token_records(os.path.dirname(state))

    def _token_records(self, where: Path | str) -> None:
        """Per-call token records kept beside the session logs in a Copilot home (once)."""
        if str(where) in self._homes:
            return
        self._homes.add(str(where))
        home, found = Path(where), self.found
        store = home / "session-store.db"
        if store.is_file() and not _listed(store, found.stores):
            found.stores.append(store)
        otel = home / "otel"
        if otel.is_dir():
            found.otel.extend(p for p in sorted(otel.glob("*.jsonl")) if not _listed(p, found.otel))


def _judge_log(path: str, read: HeadSeen | None) -> tuple[Seen | None, Answer, bool]:
    """``_Walk._log``'s question of a JSON-lines file, from one read of its head (``read``,
    when read already): what it is if not a log (``sniff``), else its agent (``agent_of``;
    Copilot for an empty file); and whether the answer may be kept (the file could be
    read)."""
    head, seen = read if read is not None else read_head_seen(path)  # one read, both questions
    what = sniff(path, head)
    agent = agent_of(path, head) if what is None else COPILOT
    return seen, ("log", what, agent), head is not None


def _judge_claim(path: str, read: HeadSeen | None) -> tuple[Seen | None, Answer, bool]:
    """``_Walk._claimed``'s question of a file offered to the readers (its head and status
    ``read``, when read already): the agent whose reader claims it (None: none does, or it
    cannot be read), and whether that may be kept."""
    from analytics.agents.reader import readers

    head, seen = read if read is not None else read_head_seen(path)
    if head is None:
        return seen, ("claim", None, None), False
    named = Path(path)
    for agent, reader in readers():
        if named.name.endswith(agent.suffixes) and reader.claims(named, head):
            return seen, ("claim", None, agent.id), True
    return seen, ("claim", None, None), True


def _entries(path: str) -> list[os.DirEntry[str]]:
    """The entries of the directory ``path``, by name (``OSError`` when it cannot be listed)."""
    with os.scandir(path) as listing:
        return sorted(listing, key=_NAME)


#: An entry's name, the key directory listings are sorted by.
_NAME = operator.attrgetter("name")


def _regular_file(path: str) -> bool:
    """Whether ``path`` is a regular file (symlinks followed)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _listed(path: Path, paths: list[Path]) -> bool:
    """Whether ``path`` is already in ``paths`` (however either was spelled)."""
    return any(path.resolve() == known.resolve() for known in paths)


#: The endings of file names, other than ``.jsonl``, that some agent's reader may claim
#: (``registry.Agent.suffixes``): the walk offers such files to the readers.
_OFFERED = tuple(sorted({s for a in AGENTS if a.reader for s in a.suffixes} - {".jsonl"}))

#: Bytes ``sniff`` reads from the start of a file: enough for a line or several.
SNIFF_BYTES = 4096
#: Files whose heads ``_judge_all`` reads together (at most 8 MB of heads held).
HEADS_AT_ONCE = 2048
#: The largest file ``sniff`` reads whole to tell a JSON document (an SDK capture) apart.
_DOCUMENT_BYTES = 256 * 2**20
#: ``sniff``'s word for a file of 0 bytes (a problem, not a reason to set the file aside).
EMPTY = "the log is empty (0 bytes): no events in it yet"
_NAME_A_LOG = "name an events.jsonl file, a session directory or a Copilot home"


def read_head(path: Path | str) -> bytes | None:
    """The first ``SNIFF_BYTES`` of ``path`` (all of a shorter file); None when it cannot be
    read. Plain system calls: no buffered file object for one read (a fifth less time over
    thousands of logs)."""
    return read_head_seen(path)[0]


def read_head_seen(path: Path | str) -> tuple[bytes | None, Seen | None]:
    """``read_head``, and what is seen of the file on disk, from the one open: a status of
    the open file costs less than a second walk of its path (a third of discovering a tree
    of 170,000 logs was spent on that walk). A file that cannot be opened is seen by its
    path, if it can be; None when not."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        try:
            return None, Seen.of(os.stat(path))
        except OSError:
            return None, None
    try:
        status = os.fstat(descriptor)
        seen = Seen.of(status)
        # a regular file's size says where it ends: a short file (a session's state.json)
        # is read in one call, not a second to find its end
        ends = status.st_size if stat.S_ISREG(status.st_mode) and status.st_size else None
        head = b""
        while len(head) < SNIFF_BYTES:  # a read may return less before the end
            more = os.read(descriptor, SNIFF_BYTES - len(head))
            if not more:
                break
            head += more
            if ends is not None and len(head) >= ends:
                break
        return head, seen
    except OSError:
        return None, None
    finally:
        os.close(descriptor)


def read_heads(paths: Sequence[str]) -> list[HeadSeen]:
    """``read_head_seen`` of each of ``paths``, in their order, the files read together on
    the native engine's threads with the GIL released (``_scanner.read_heads``: the same
    bytes and the same status, from one open of each)."""
    from analytics import _scanner

    read = _scanner.read_heads(list(paths), SNIFF_BYTES)
    return [(head, None if seen is None else Seen(*seen)) for head, seen in read]


def sniff(path: Path | str, head: bytes | None = None) -> str | None:
    """What a file is when it is not a session log, from its first bytes; None for a log.

    A log is JSON lines: one event object per line. Its first ``SNIFF_BYTES`` are read (a
    byte order mark, NUL bytes left by a crash and blank lines are read past, as the scanner
    does): a line that opens a JSON object (``{"``) makes it a log, whatever else is damaged,
    so the scanner reports its lines; a ``.json`` file is looked at further, as it may be an
    SDK capture written on one line. Otherwise the file is one JSON document (an SDK
    capture, which ``capture-to-log`` converts, or another), binary data, or text; the
    answer says so and what to run instead. A file of 0 bytes is ``EMPTY``. A file that
    cannot be read is left to the scanner, which reports why. Costs one read of a few kB
    per log (about 20 µs); ``head``: those bytes, when already read (``read_head``)."""
    head = head if head is not None else read_head(path)
    if head is None:
        return None
    if not head:
        return EMPTY
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n\x00")
    if text.startswith(b'{"'):
        if os.path.splitext(path)[1] != ".json":
            return None
        first, *rest = text.split(b"\n", 1)
        return _capture_line(first) if rest or len(head) < SNIFF_BYTES else _document(path)
    lines = text.split(b"\n")
    if not text or any(line.lstrip(b" \t\r\x00").startswith(b'{"') for line in lines):
        return None  # blank lines only, or a damaged first line: the scanner reports them
    if text[:1] in (b"{", b"["):
        return _document(path)
    try:
        head.decode("utf-8")
        binary = b"\x00" in head
    except UnicodeDecodeError as error:
        binary = error.start < len(head) - 3  # not only a character cut by the read's end
    if binary:
        return f"binary data, not a session log (JSON lines); {_NAME_A_LOG}"
    return f"text, not a session log (JSON lines, one event per line); {_NAME_A_LOG}"


#: Copilot's id, as the ``agent`` column names it: its logs go through the engine's own
#: pipeline, every other agent's through its reader.
COPILOT = registry.COPILOT.id
_NO_AGENT = (
    "JSON lines, but not the session log of an agent agentcost reads "
    f"({', '.join(a.name for a in AGENTS)}); {_NAME_A_LOG}"
)


def agent_of(path: Path | str, head: bytes | None = None) -> str | None:
    """Which agent wrote a log, from its first line that decodes as a JSON object: Copilot
    (an event with a dotted ``type``, or with ``data`` and no type), another agent (the
    first reader whose ``recognizes`` takes it, in the registry's order), else None. A file
    none of whose first lines decodes is left to the Copilot scanner, which reports each
    line (a damaged log is a log). A line is read whole up to ``_FIRST_LINE_BYTES`` (a
    Codex ``session_meta`` carries the whole system prompt).

    ``head``: the file's first bytes, already read (``read_head``); the file is opened
    again only when the line that decides goes past them (one open per log saves about a
    fifth of discovering a tree of thousands of sessions)."""
    if head is not None:
        whole = len(head) < SNIFF_BYTES  # the file ends inside ``head``
        decided, agent = _agent_in(_lines_in(head, whole=whole))
        if decided or whole or head.count(b"\n") >= _LINES_TRIED:
            return agent
    try:
        with open(path, "rb") as file:
            # read no further than the line that decides
            read = (file.readline(_FIRST_LINE_BYTES) for _ in range(_LINES_TRIED))
            return _agent_in(itertools.takewhile(bool, read))[1]
    except OSError:
        return COPILOT


def _lines_in(head: bytes, *, whole: bool) -> Iterator[bytes]:
    """The first ``_LINES_TRIED`` lines of ``head`` as ``readline`` gives them, one at a time
    (the first usually decides): each with its newline, and, when ``head`` is the ``whole``
    file, a last line without one."""
    start = 0
    for _ in range(_LINES_TRIED):
        end = head.find(b"\n", start) + 1
        if not end:
            if whole and start < len(head):
                yield head[start:]
            return
        yield head[start:end]
        start = end


def _agent_in(lines: Iterable[bytes]) -> tuple[bool, str | None]:
    """``agent_of`` from a file's first ``lines``: (whether one decided, the agent);
    Copilot when none decodes as an object."""
    from analytics.agents.reader import readers

    for raw in lines:
        value = _object(raw)
        if value is None:
            continue
        kind = value.get("type")
        if isinstance(kind, str) and "." in kind:
            return True, COPILOT
        for agent, reader in readers():
            if ".jsonl" in agent.suffixes and reader.recognizes(value):
                return True, agent.id
        # every Copilot event type is dotted; an event whose type is lost but whose data is
        # there is a damaged Copilot line, while an undotted type is another tool's record
        # (pi's ``{"type": "response", "data": ...}`` stats)
        return True, COPILOT if "data" in value and not isinstance(kind, str) else None
    return False, COPILOT


def copilot_session_id(log: LogFile) -> str | None:
    """The ``sessionId`` a Copilot log's ``session.start`` (its first line) names, if any: a
    copied or renamed session directory is still named as Copilot names it."""
    try:
        with open(log.path, "rb") as file:
            first = json.loads(file.readline(_FIRST_LINE_BYTES))
        named = first["data"]["sessionId"] if first.get("type") == "session.start" else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        named = None
    return named if isinstance(named, str) and named else None


def _object(raw: bytes) -> dict[str, object] | None:
    """A log line decoded, if it is a JSON object (a byte order mark and NULs read past)."""
    line = raw.removeprefix(b"\xef\xbb\xbf").strip(b" \t\r\n\x00")
    if not line.startswith(b"{"):
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


#: What ``agent_of`` reads: the first lines of a file, each up to this many bytes.
_LINES_TRIED = 8
_FIRST_LINE_BYTES = 4 * 2**20


def _capture_line(line: bytes) -> str | None:
    """A whole first line: an SDK capture written on one line, or a log's event (None)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return _what_document(value)


def _document(path: Path | str) -> str | None:
    """A file whose text opens a JSON value without being JSON lines: what the value is, or
    None when the file is no JSON document (a damaged log, left to the scanner)."""
    try:
        if os.stat(path).st_size > _DOCUMENT_BYTES:
            return None
        with open(path, "rb") as file:
            value = json.loads(file.read())
    except (OSError, ValueError, RecursionError):
        return None
    return _what_document(value) or (
        f"one JSON document, not a session log (JSON lines, one event per line); {_NAME_A_LOG}"
    )


def _what_document(value: object) -> str | None:
    """An SDK capture (``sdk_capture.captured_events``), or None."""
    from analytics.agents.copilot.sdk_capture import captured_events

    if captured_events(value) is not None:
        return (
            "an SDK capture, not a session log; convert it with agentcost capture-to-log "
            "FILE OUT, or measure it with agentcost validate FILE"
        )
    return None


def _plural(count: int, noun: str) -> str:
    """``noun`` for ``count`` of it (``1 file``, ``2 files``)."""
    return noun if count == 1 else f"{noun}s"
