"""Finding session logs (``agents/discover.discover``) in the layouts Copilot writes.

Each test builds a small directory tree in ``tmp_path``: session directories
(``<id>/events.jsonl``), legacy flat ``<id>.jsonl`` files, ``session-state`` directories, Copilot
homes (with ``session-store.db`` and ``otel/``), and checks which logs are found, which session
id each one would get if it does not name its own, and what is reported as a problem.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.agents.discover import (
    SNIFF_BYTES,
    Found,
    LogFile,
    Seen,
    agent_of,
    copilot_home,
    discover,
    own_hint,
    read_head,
)
from analytics.core.errors import InputError

LOG = '{"type":"session.start","data":{},"timestamp":"2026-05-01T10:00:00.000Z"}\n'


def touch(path: Path, text: str = LOG) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def logs(found: Found, root: Path) -> list[tuple[str, str]]:
    return [(str(log.path.relative_to(root)), log.session_hint) for log in found.logs]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A Copilot home: two session dirs, a legacy flat log, a session dir without its log
    (but with a .jsonl file among its own files), records."""
    root = tmp_path / ".copilot"
    touch(root / "session-state" / "aaa" / "events.jsonl")
    touch(root / "session-state" / "aaa" / "workspace.yaml", "id: aaa\n")
    touch(root / "session-state" / "bbb" / "events.jsonl")
    touch(root / "session-state" / "ccc.jsonl")
    (root / "session-state" / "ddd" / "checkpoints").mkdir(parents=True)
    # a session's own files can be JSON Lines too (a user's data, or a log it copied): not logs
    touch(root / "session-state" / "ddd" / "files" / "data.jsonl")
    touch(root / "session-store.db", "")
    touch(root / "otel" / "run.jsonl", "{}\n")
    return root


def test_copilot_home(home: Path) -> None:
    found = discover([home])
    assert logs(found, home) == [
        ("session-state/aaa/events.jsonl", "aaa"),
        ("session-state/bbb/events.jsonl", "bbb"),
        ("session-state/ccc.jsonl", "ccc"),
    ]
    assert found.stores == [home / "session-store.db"]
    assert found.otel == [home / "otel" / "run.jsonl"]
    assert found.problems == [
        (str(home / "session-state" / "ddd"), "session directory has no events.jsonl")
    ]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("session-state", ["aaa", "bbb", "ccc"]),
        ("session-state/aaa", ["aaa"]),
        ("session-state/aaa/events.jsonl", ["aaa"]),
        ("session-state/ccc.jsonl", ["ccc"]),
    ],
)
def test_narrower_targets(home: Path, target: str, expected: list[str]) -> None:
    """A session named inside a Copilot home still gets the home's per-call token records."""
    found = discover([home / target])
    assert [log.session_hint for log in found.logs] == expected
    assert found.stores == [home / "session-store.db"]
    assert found.otel == [home / "otel" / "run.jsonl"]


def test_a_session_outside_a_copilot_home_has_no_token_records(tmp_path: Path) -> None:
    touch(tmp_path / "loose" / "events.jsonl")
    found = discover([tmp_path / "loose"])
    assert found.stores == [] and found.otel == []


def test_a_log_named_twice_is_found_once(home: Path) -> None:
    found = discover(
        [home, home / "session-state" / "aaa", home / "session-state" / "aaa" / "events.jsonl"]
    )
    assert [log.session_hint for log in found.logs] == ["aaa", "bbb", "ccc"]


def test_any_tree_of_session_directories(tmp_path: Path) -> None:
    touch(tmp_path / "backup" / "2026" / "x1" / "events.jsonl")
    touch(tmp_path / "backup" / "notes" / "y2.jsonl")
    found = discover([tmp_path / "backup"])
    assert logs(found, tmp_path) == [
        ("backup/2026/x1/events.jsonl", "x1"),
        ("backup/notes/y2.jsonl", "y2"),
    ]
    assert found.problems == []


@pytest.mark.parametrize("layout", ["empty", "unrelated-files", "empty-session-state"])
def test_a_directory_without_logs_is_a_problem_not_silence(tmp_path: Path, layout: str) -> None:
    target = tmp_path / "target"
    target.mkdir()
    if layout == "unrelated-files":
        touch(target / "notes.txt", "hello\n")
        touch(target / "sub" / "workspace.yaml", "id: x\n")
    if layout == "empty-session-state":
        (target / "session-state").mkdir()
    log = touch(tmp_path / "other" / "s1" / "events.jsonl")
    found = discover([log.parent, target])
    assert [found_log.path for found_log in found.logs] == [log]
    assert [path for path, _ in found.problems] == [str(target)]
    assert found.problems[0][1].startswith("no session log here")
    with pytest.raises(InputError, match="no session log here") as alone:  # nothing to read
        discover([target])
    assert alone.value.exit_code == 2


def test_missing_path_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory") as raised:
        discover([tmp_path / "nope"])
    assert raised.value.exit_code == 2


def test_path_inside_a_file_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        discover([touch(tmp_path / "events.jsonl") / "sub"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a chmod 000 directory")
def test_unreadable_path_raises_input_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    touch(locked / "events.jsonl")
    locked.chmod(0)
    try:
        with pytest.raises(InputError, match="permission denied"):
            discover([locked])
    finally:
        locked.chmod(0o755)


def test_default_is_copilot_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(home))
    assert copilot_home() == home
    assert [log.session_hint for log in discover([]).logs] == ["aaa", "bbb", "ccc"]


def test_missing_default_home_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    with pytest.raises(InputError, match=r"no agent home found .*COPILOT_HOME"):
        discover([])


def test_each_log_goes_to_the_agent_that_wrote_it(tmp_path: Path) -> None:
    """A Codex rollout and a Claude Code session file are told apart from a Copilot log by
    their first line, and a directory holding only them is no 'no log here' problem."""
    codex = tmp_path / "codex" / "rollout-2026-05-01T10-00-00-abc.jsonl"
    codex.parent.mkdir()
    codex.write_text(
        '{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{"id":"abc"}}\n'
    )
    claude = tmp_path / "claude" / "s1.jsonl"
    claude.parent.mkdir()
    claude.write_text('{"type":"permission-mode","permissionMode":"default","sessionId":"s1"}\n')
    found = discover([tmp_path / "codex", tmp_path / "claude"])
    assert [(agent, log.path.name) for agent, log in found.agent_logs] == [
        ("claude-code", "s1.jsonl"),
        ("codex", codex.name),
    ]
    assert found.logs == [] and found.problems == [] and found.not_logs == []


def test_a_named_claude_code_session_brings_its_sub_agents(tmp_path: Path) -> None:
    """Naming a session file finds its ``<session>/subagents/`` files too, so they are read
    (and key the caches) with it."""
    line = '{"type":"user","sessionId":"s1","uuid":"u1"}\n'
    session = tmp_path / "s1.jsonl"
    session.write_text(line)
    agent = tmp_path / "s1" / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_text(line)
    found = discover([session])
    assert sorted(log.path.name for _, log in found.agent_logs) == ["agent-a1.jsonl", "s1.jsonl"]


_FIRST_LINES = [
    b'{"type":"session.start","data":{"sessionId":"s"}}',
    b'{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{"id":"abc"}}',
    b'{"type":"user","sessionId":"s1","uuid":"u1"}',
    b'{"type":"permission-mode","permissionMode":"default","sessionId":"s1"}',
    b'{"data":{}}',
    b'{"other":1}',
    b"not json",
    b'{"broken',
    b"",
    b"\x00\x00",
]


@settings(max_examples=300)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(_FIRST_LINES), st.integers(0, 6000)), min_size=0, max_size=10
    ),
    newline_at_end=st.booleans(),
)
def test_agent_of_reads_the_same_from_the_head_as_from_the_file(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[tuple[bytes, int]],
    newline_at_end: bool,
) -> None:
    """Discovery reads a log's first bytes once (``read_head``) for both ``sniff`` and
    ``agent_of``: a deciding line longer than those bytes, or past them, is read from the
    file, so the agent is the one a read of the file alone gives."""
    # padding makes lines longer than the head (a Codex session_meta holds a whole prompt)
    text = b"\n".join(
        line[:-1] + b',"pad":"' + b"x" * pad + b'"}' if line.endswith(b"}") else line + b"x" * pad
        for line, pad in lines
    )
    path = tmp_path_factory.mktemp("head") / "log.jsonl"
    path.write_bytes(text + (b"\n" if newline_at_end else b""))
    head = read_head(path)
    assert head == path.read_bytes()[:SNIFF_BYTES]
    assert agent_of(path, head) == agent_of(path)


@pytest.mark.parametrize(
    ("first_line", "agent"),
    [
        (b'{"type":"session.start","data":{"sessionId":"s"}}', "copilot"),
        (b'{"data":{"sessionId":"s"}}', "copilot"),  # a Copilot event that lost its type
        # pi's session-bench stats answer: an undotted type is no Copilot event
        (
            b'{"id":"session-bench-stats-1","type":"response","command":"get_session_stats",'
            b'"success":true,"data":{"sessionId":"af940a24","tokens":{"input":6939}}}',
            None,
        ),
    ],
)
def test_only_a_dotted_type_or_untyped_data_is_a_copilot_event(
    tmp_path: Path, first_line: bytes, agent: str | None
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(first_line + b"\n")
    assert agent_of(path) == agent


def test_seen_keeps_what_the_caches_key_on_packed() -> None:
    """``Seen``: the four fields ``os.stat`` gives (an inode past 2**63 too), equal by value,
    copied and pickled whole, 72 bytes of data and header instead of a tuple of ints."""
    import copy
    import pickle
    import sys

    seen = Seen(st_size=12, st_mtime_ns=1_700_000_000_123_456_789, st_ctime_ns=-5, st_ino=2**64 - 1)
    assert (seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns, seen.st_ino) == (
        12,
        1_700_000_000_123_456_789,
        -5,
        2**64 - 1,
    )
    assert seen.st_mtime == pytest.approx(1_700_000_000.123456789)
    assert seen == Seen(12, 1_700_000_000_123_456_789, -5, 2**64 - 1) != Seen(13, 0, 0, 0)
    assert copy.copy(seen) == seen == pickle.loads(pickle.dumps(seen))
    assert type(pickle.loads(pickle.dumps(seen))) is Seen
    assert (
        repr(seen)
        == f"Seen(st_size=12, st_mtime_ns={seen.st_mtime_ns}, st_ctime_ns=-5, st_ino={2**64 - 1})"
    )
    stat = os.stat(__file__)
    assert Seen.of(stat).st_mtime_ns == stat.st_mtime_ns
    assert sys.getsizeof(seen) < 100


@pytest.mark.parametrize(
    ("file", "hint"),
    [
        ("/h/session-state/abc/events.jsonl", "abc"),
        ("events.jsonl", ""),
        ("/h/x/flat-id.jsonl", "flat-id"),
        ("/h/x/a.b.jsonl", "a.b"),
        ("/h/x/.jsonl", ".jsonl"),
        ("/h/x/chat.json", "chat"),
        ("rel/opencode.db", "opencode"),
        ("/h/x/noext", "noext"),
    ],
)
def test_a_logs_own_hint_is_what_its_path_names(file: str, hint: str) -> None:
    """``own_hint``: what discovery gave each log as its session hint (``Path.stem``, or a
    session directory's name for its ``events.jsonl``), without storing it; a hint given
    is kept."""
    path = Path(file)
    assert own_hint(file) == (path.parent.name if path.name == "events.jsonl" else path.stem)
    assert own_hint(file) == hint
    assert LogFile(file).session_hint == hint
    assert LogFile(file, "given").session_hint == "given"
