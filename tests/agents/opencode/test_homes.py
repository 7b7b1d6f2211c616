"""Where OpenCode's and Kilo's databases are found with no path named, which files are
theirs (``claims``: an SQLite header and their names), and that an absent home is silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.agents import opencode
from analytics.agents.reader import reader_of
from tests.agents.opencode.projection import create
from tests.agents.opencode.rows import session, step, usage

SQLITE = b"SQLite format 3\x00" + b"\x00" * 84


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tmp HOME with none of the variables naming an OpenCode or Kilo home set."""
    for variable in ("XDG_DATA_HOME", "OPENCODE_DATA_DIR", "KILO_DATA_DIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def database(directory: Path, name: str = "opencode.db", tokens: int = 10) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    connection = create(directory / name)
    step(connection, session(connection, 1000), 1000, usage(tokens, 1))
    connection.commit()
    connection.close()
    return directory / name


@pytest.mark.parametrize(
    ("name", "head", "claimed"),
    [
        ("opencode.db", SQLITE, True),
        ("opencode-beta.db", SQLITE, True),
        ("kilo.db", SQLITE, True),
        ("opencode.db", b"not sqlite", False),
        ("other.db", SQLITE, False),
        ("opencode.db-wal", SQLITE, False),
        ("state.vscdb", SQLITE, False),
    ],
)
def test_claims(name: str, head: bytes, claimed: bool) -> None:
    assert opencode.claims(Path("/x") / name, head) is claimed
    assert opencode.recognizes({"type": "step-finish"}) is False


def test_the_reader_is_the_registry_s() -> None:
    assert reader_of("opencode") is opencode


def test_default_homes(home: Path) -> None:
    database(home / ".local/share/opencode", tokens=10)
    database(home / ".local/share/kilo", "kilo.db", tokens=20)
    database(home / ".local/share/opencode/snapshot/x", tokens=99)  # not a place for databases
    assert opencode.homes() == [home / ".local/share/opencode", home / ".local/share/kilo"]
    calls = opencode.read().calls
    assert sorted(calls["input_tokens"].to_list()) == [10, 20]


def test_xdg_data_home_and_the_data_dir_variables(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database(home / "xdg/opencode", tokens=1)
    database(home / "named", tokens=2)
    database(home / "kilo-home", "kilo.db", tokens=3)
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg"))
    monkeypatch.setenv("OPENCODE_DATA_DIR", str(home / "named"))
    monkeypatch.setenv("KILO_DATA_DIR", str(home / "kilo-home"))
    assert opencode.homes() == [home / "xdg/opencode", home / "named", home / "kilo-home"]
    assert sorted(opencode.read().calls["input_tokens"].to_list()) == [1, 2, 3]


def test_an_absent_home_is_silent(home: Path) -> None:
    assert opencode.homes() == []
    tables = opencode.read()
    assert (tables.calls.height, tables.sessions.height, tables.issues.height) == (0, 0, 0)
