"""Every cache key, and only here: what decides a stored result, as one digest of
agentcost's code, the libraries that shape its tables and text (polars, rich), and each input
by its identity on disk.

The result cache (``cache/results.py``) keys a whole analysis by ``tree_key``, a group of
sessions by ``group_key``, the latest analysis of some paths by ``paths_slot``, and the
tables a rate table priced an analysis to by ``prices_key`` (``cache/priced_tables.py``); the
output cache (``cache/output.py``) keys a command's printed output by ``output_key``. Nothing
here imports polars or rich, so a warm command can find its stored output before paying
polars' import (about 0.2 s, more than the rest of a warm run).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from analytics import __version__
from analytics.agents.discover import Found, LogFile, Seen

if TYPE_CHECKING:
    from analytics.core.pricing.rates import RateTable

#: An input: its path, and what discovery saw of it (None: stat it now).
Input = tuple[str, Seen | os.stat_result | None]

_PACKAGE = Path(__file__).resolve().parents[1]
#: What in the package decides a result: its Python, the native scanner, the bundled tables.
_CODE = frozenset({".py", ".so", ".pyd", ".toml"})


#: A command's parameters that ``output_key`` keys in their own way, or not at all (``ctx``).
KEYED_APART = frozenset({"ctx", "paths", "output", "output_format", "timezone"})


def output_key(
    command: str,
    found: Found,
    parameters: Mapping[str, object],
    *,
    output_format: str,
    zone: str,
    layouts: Sequence[object] = (),
) -> str | None:
    """The key of what ``command`` prints when run on ``found``; None when an input cannot be
    inspected: ``output_key_of`` the command's ``output_shape``."""
    shape = output_shape(parameters, output_format=output_format, zone=zone, layouts=layouts)
    return output_key_of(command, found, shape)


def output_shape(
    parameters: Mapping[str, object],
    *,
    output_format: str,
    zone: str,
    layouts: Sequence[object] = (),
) -> dict[str, object]:
    """Everything but its inputs that shapes what a command prints, as JSON values (what a
    replay without the command line keeps: ``cache.invocations``). ``parameters``: the
    command's (its ``locals()`` on entry), all keyed as they are, so an option added later is
    keyed without a word, except ``KEYED_APART``: the format, the ``zone`` the output is shown
    in (named, or the machine's), the output file (only through ``layouts``), and the
    spellings of the logs (keyed by ``output_key_of``). ``layouts``: the width and colour of
    each terminal a table is drawn for."""
    shapes = {name: value for name, value in parameters.items() if name not in KEYED_APART}
    shape = {**shapes, "format": output_format, "zone": zone, "layouts": list(layouts)}
    loaded: dict[str, object] = json.loads(json.dumps(shape, sort_keys=True, default=str))
    return loaded


def output_key_of(command: str, found: Found, shape: Mapping[str, object]) -> str | None:
    """The key of what ``command`` of ``shape`` (``output_shape``) prints when run on
    ``found``: the inputs' identity (``tree_key``), the logs as discovery spelled them, and
    the identity of a file a ``rates`` option names, since its text decides the prices (the
    output names the logs as they were spelled: a tree named through a link is named so); None
    when an input cannot be inspected."""
    tree = tree_key(found)
    if tree is None:
        return None
    everything = dict(shape)
    if "rates" in shape:
        everything["rate_files"] = file_options(str(shape["rates"]))
    extra = json.dumps([command, everything], sort_keys=True, default=str)
    # each spelling hashed as it comes: one JSON text of a 1 GB tree's 170,000 paths, and
    # its copies, took some 110 MB; its length first says where it ends, whatever it holds
    logs = (log.file for log in (*found.logs, *(log for _, log in found.agent_logs)))
    spelled = (f"log {len(path)} {path}\n" for path in logs)
    return digest("output", [], f"{tree} {extra}\n", spelled)


def file_options(spec: str) -> list[object]:
    """The identity of each file an option naming files (``--rates A+B``, ``--rates A,B``)
    may refer to: its path and stat, or that it is not a file."""
    seen: list[object] = []
    for part in [spec, *re.split(r"[+,]", spec), *(p.strip() for p in spec.split(","))]:
        path = os.path.abspath(part)
        try:
            stat = os.stat(path)
        except OSError:
            seen.append([path, None])
            continue
        seen.append([path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino])
    return seen


def group_key(logs: Sequence[LogFile]) -> str | None:
    """The key of one group of logs analysed by the pipeline: each log by its resolved path
    and identity on disk; None when one cannot be inspected."""
    return digest("group", [(log.real_path or log.file, log.stat) for log in logs], "")


def paths_slot(paths: Sequence[Path]) -> str:
    """The name under which the latest whole analysis of ``paths`` is noted (resolved, so
    every spelling of a tree shares it), under this code."""
    named = json.dumps(sorted(str(path.resolve()) for path in paths))
    return digest("slot", [], named) or "none"


def prices_key(table: RateTable, model_map: Mapping[str, str]) -> str:
    """A digest of everything besides the analysis that decides its priced tables: every
    price of ``table`` (its full ``repr``: periods, tiers, windows, sources) and the map."""
    text = repr(table) + json.dumps(sorted(model_map.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def without_items(key: str) -> str:
    """The key, beside the analysis stored under ``key``, of the tables priced when the other
    agents' calls were folded without their context items (and so numbered otherwise)."""
    return f"{key}-no-items"


def tree_key(found: Found) -> str | None:
    """The digest of everything an analysis of ``found`` reads: each log file (by resolved
    path), session store (with its ``-wal``) and OTel export, and the problems discovery
    reported (files set aside as not logs included); None when an input cannot be
    inspected. A command's output key and the result cache's key both start from it, so it
    is worked out once per discovery (the last one's is kept: ``found`` is not changed once
    discovered)."""
    if _LAST and _LAST[0][0] is found:
        return _LAST[0][1]
    logs = [*found.logs, *(log for _, log in found.agent_logs)]
    inputs: list[Input] = [(log.real_path or log.file, log.stat) for log in logs]
    for store in found.stores:
        inputs += [(str(store), None), (f"{store}-wal", None)]
    inputs += [(str(export), None) for export in found.otel]
    key = digest("tree", inputs, json.dumps([found.problems, found.not_logs]))
    _LAST[:] = [(found, key)]
    return key


#: The last discovery ``tree_key`` worked on, and its key.
_LAST: list[tuple[Found, str | None]] = []


def digest(kind: str, inputs: list[Input], extra: str, more: Iterable[str] = ()) -> str | None:
    """SHA-256 over agentcost's code, ``LIBRARIES``, ``inputs``, ``extra`` and the lines
    ``more``; None when an input cannot be inspected. An input is identified by size,
    ``mtime_ns``, ``ctime_ns`` and inode: ``ctime`` changes on every write and cannot be set
    back, so a file rewritten with its old size and mtime still changes the digest. An absent
    input counts as absent. Hashed a line at a time: a tree of 170,000 logs is never one
    text."""
    hashed = hashlib.sha256(f"{kind} {__version__} {_libraries()}\n".encode())
    lines = _Lines(hashed)
    for line in _code():
        lines.add(line)
    for path, seen in inputs:
        if isinstance(seen, Seen):  # its four fields unpacked at once, not one at a time
            size, mtime, ctime, ino = seen.fields()
            lines.add(f"input {path} {size} {mtime} {ctime} {ino}\n")
            continue
        try:
            stat = seen or os.stat(path)
        except FileNotFoundError:
            lines.add(f"absent {path}\n")
            continue
        except OSError:
            return None
        seen_as = f"{stat.st_size} {stat.st_mtime_ns} {stat.st_ctime_ns} {stat.st_ino}"
        lines.add(f"input {path} {seen_as}\n")
    lines.add(extra)
    for line in more:
        lines.add(line)
    lines.flush()
    return hashed.hexdigest()


class _Lines:
    """Lines hashed a batch of ``BATCH`` at a time: one update per line was a tenth of a
    warm run of 200,000 logs, one text of them all would be tens of MB."""

    BATCH = 4096

    def __init__(self, hashed: hashlib._Hash) -> None:
        self._hashed, self._batch = hashed, list[str]()

    def add(self, line: str) -> None:
        """Hash ``line`` after those added before."""
        self._batch.append(line)
        if len(self._batch) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        """Hash the lines added and not yet hashed."""
        self._hashed.update("".join(self._batch).encode("utf-8", "surrogateescape"))
        self._batch.clear()


@functools.cache
def _code() -> tuple[str, ...]:
    """One line per file of the ``analytics`` package that decides a result (``_CODE``): its
    size and mtime."""
    lines = []
    for code in sorted(p for p in _PACKAGE.rglob("*") if p.suffix in _CODE):
        stat = code.stat()
        lines.append(f"code {code.relative_to(_PACKAGE)} {stat.st_size} {stat.st_mtime_ns}\n")
    return tuple(lines)


#: The installed libraries whose code shapes what agentcost stores or prints: polars (every
#: table) and rich (the text tables).
LIBRARIES = ("polars", "rich")


@functools.cache
def _libraries() -> str:
    """The installed ``LIBRARIES``, without importing them: the name and mtime of each entry
    of their installation folders that belongs to one (the package, polars' native runtime,
    their ``*.dist-info``, whose names carry the versions). Installing another version, or
    the same one again, changes it."""
    entries = []
    folders = {folder for library in LIBRARIES if (folder := _folder(library))}
    for folder in sorted(folders):
        with os.scandir(folder) as listing:
            for entry in listing:
                name = entry.name.lstrip("_").lower()
                if name.startswith(LIBRARIES):
                    entries.append(f"{entry.name}@{entry.stat().st_mtime_ns}")
    return "libraries " + " ".join(sorted(entries))


def _folder(library: str) -> str | None:
    """The folder ``library`` is installed in (found without importing it), or None."""
    spec = importlib.util.find_spec(library)
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).parent)
