"""The discovery memo (``analytics/cache/heads.py``): an unchanged file's answer is recalled
without reading it; a file whose size, mtime or ctime differs is judged again; a damaged or
absent memo is no memo; a library call of ``discover`` keeps none."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from analytics.agents import discover as discovery
from analytics.cache import heads
from analytics.cache.heads import Heads
from tests.cli.test_analyze import write_session

#: A Codex rollout's first line (``session_meta``): a log of another agent than Copilot.
CODEX_LINE = (
    '{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta",'
    '"payload":{"id":"0196a000-0000-7000-8000-000000000001","cwd":"/w",'
    '"originator":"codex_cli_rs","cli_version":"0.1.0"}}\n'
)


@pytest.fixture
def memo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Discovery keeps a memo (as the command line has it), of files however recent."""
    monkeypatch.setattr(heads, "SETTLING_NS", 0)
    heads.use()
    yield
    heads.use(False)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files discovery opens to read their head, in order."""
    opened: list[str] = []
    read, read_all = discovery.read_head_seen, discovery.read_heads

    def counted(path: Path | str) -> tuple[bytes | None, discovery.Seen | None]:
        opened.append(str(path))
        return read(path)

    def all_counted(paths: Sequence[str]) -> list[discovery.HeadSeen]:
        opened.extend(paths)
        return read_all(paths)

    monkeypatch.setattr(discovery, "read_head_seen", counted)
    monkeypatch.setattr(discovery, "read_heads", all_counted)
    return opened


def tree(root: Path) -> Path:
    """A Copilot home of two sessions; beside it a Codex log and a text file named like a
    log (``more/``)."""
    write_session(root / "copilot", "s1")
    write_session(root / "copilot", "s2", day="2026-05-02T10:00")
    (root / "more").mkdir()
    (root / "more" / "rollout.jsonl").write_text(CODEX_LINE)
    (root / "more" / "notes.jsonl").write_text("just some text\n")
    return root


def seen(found: discovery.Found) -> tuple[object, ...]:
    """Everything a discovery found, comparable."""
    return (
        [(log.file, log.stat) for log in found.logs],
        [(agent, log.file, log.stat) for agent, log in found.agent_logs],
        found.problems,
        found.not_logs,
    )


def test_an_unchanged_tree_is_found_again_without_reading_a_file(
    tmp_path: Path, memo: None, reads: list[str]
) -> None:
    root = tree(tmp_path / "home")
    first = discovery.discover([root])
    assert len(reads) == 4
    reads.clear()
    again = discovery.discover([root])
    assert reads == []
    assert seen(again) == seen(first)
    assert [agent for agent, _ in again.agent_logs] == ["codex"]
    assert [path for path, _ in again.not_logs] == [str(root / "more" / "notes.jsonl")]


@pytest.mark.parametrize("change", ["appended", "same-size-and-mtime"])
def test_a_changed_file_is_judged_again(
    tmp_path: Path, memo: None, reads: list[str], change: str
) -> None:
    """A file appended to (size and mtime differ), or rewritten with its old size and mtime
    put back (only its ctime differs), is read again: its new answer, never the memo's."""
    root = tree(tmp_path / "home")
    discovery.discover([root])
    notes = root / "more" / "notes.jsonl"
    before = notes.stat()
    if change == "appended":
        notes.write_text("just some text\n" + CODEX_LINE)  # a damaged log of unknown agent
    else:
        notes.write_text(CODEX_LINE[: before.st_size - 1] + "\n")
        os.utime(notes, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert notes.stat().st_size == before.st_size
    reads.clear()
    again = discovery.discover([root])
    assert reads == [str(notes)]
    heads.use(False)
    assert seen(again) == seen(discovery.discover([root]))


def test_a_memo_entry_of_another_size_or_mtime_is_not_used(tmp_path: Path, memo: None) -> None:
    """The memo's own entries are checked against the file: one noted for the file as it
    was (another size, another mtime) is not recalled."""
    root = tree(tmp_path / "home")
    rollout = str(root / "more" / "rollout.jsonl")
    memo_of = Heads.of([root])
    stat = discovery.Seen.of(os.stat(rollout))
    size, mtime, ctime, ino = stat.fields()
    for other in (discovery.Seen(size + 1, mtime, ctime, ino), discovery.Seen(size, 1, ctime, ino)):
        memo_of.note(rollout, other, ("log", None, "copilot"))
        assert memo_of.recall(rollout) is None
    memo_of.note(rollout, stat, ("log", None, "codex"))
    memo_of.close()
    assert Heads.of([root])._before  # kept
    assert Heads.of([root]).recall(rollout) == (stat, ("log", None, "codex"))


@pytest.mark.parametrize("content", [b"", b"garbage", b"\xe9\x00\x01", b")\x00\x00\x00"])
def test_a_damaged_memo_is_no_memo(
    tmp_path: Path, memo: None, reads: list[str], content: bytes
) -> None:
    root = tree(tmp_path / "home")
    first = discovery.discover([root])
    path = Heads.of([root]).path
    assert path is not None and path.exists()
    path.write_bytes(content)
    reads.clear()
    assert seen(discovery.discover([root])) == seen(first)
    assert len(reads) == 4


def test_a_recent_file_is_not_kept(tmp_path: Path, reads: list[str]) -> None:
    """A file changed within the clock's tick of the discovery may change again unseen."""
    heads.use()
    try:
        root = tree(tmp_path / "home")
        discovery.discover([root])
        reads.clear()
        discovery.discover([root])
    finally:
        heads.use(False)
    assert len(reads) == 4


def test_a_library_discovery_keeps_no_memo(tmp_path: Path, reads: list[str]) -> None:
    root = tree(tmp_path / "home")
    discovery.discover([root])
    discovery.discover([root])
    assert len(reads) == 8
    assert not (Path(os.environ["AGENTCOST_CACHE_DIR"]) / f"heads-v{heads.FORMAT}").exists()


def test_heads_are_read_a_part_at_a_time_and_judged_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery reads ``HEADS_AT_ONCE`` heads at a time (all of a 1 GB tree's at once held
    some 700 MB); what it finds does not depend on where the queue is cut."""
    root = tree(tmp_path / "home")
    for n in range(3):
        (root / "more" / f"rollout-{n}.jsonl").write_text(CODEX_LINE)
    whole = discovery.discover([root])
    parts: list[int] = []
    read_all = discovery.read_heads

    def counted(paths: Sequence[str]) -> list[discovery.HeadSeen]:
        parts.append(len(paths))
        return read_all(paths)

    monkeypatch.setattr(discovery, "HEADS_AT_ONCE", 2)
    monkeypatch.setattr(discovery, "read_heads", counted)
    cut = discovery.discover([root])
    assert sum(parts) == 7 and max(parts) == 2
    assert seen(cut) == seen(whole)
    assert [agent for agent, _ in cut.agent_logs] == ["codex"] * 4
