"""Every cache key (``analytics/cache/fingerprints.py``): agentcost's code, the installed
polars, inputs by identity and, for a command's output, every option that shapes it, all
found without importing polars."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from analytics.agents.discover import discover
from analytics.cache import fingerprints
from tests.cli.test_analyze import write_session
from tests.conftest import python_prints


def test_the_key_follows_the_scanner_and_the_bundled_tables() -> None:
    """A rebuilt native scanner or an edited bundled rate table changes the key, as Python
    code does: each decides a result."""
    kinds = {line.split()[1].rsplit(".", 1)[-1] for line in fingerprints._code()}
    assert {"py", "toml"} <= kinds
    assert any(".so" in line or ".pyd" in line for line in fingerprints._code())


def test_the_installed_libraries_are_named_with_their_versions() -> None:
    from importlib.metadata import version

    identity = fingerprints._libraries()
    for library in fingerprints.LIBRARIES:
        assert f"{library}-{version(library)}.dist-info@" in identity
        assert f" {library}@" in identity  # the package folder itself


def test_an_input_counts_by_identity_and_absence(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text("a")
    first = fingerprints.digest("tree", [(str(log), None)], "")
    assert first == fingerprints.digest("tree", [(str(log), None)], "")
    assert first != fingerprints.digest("group", [(str(log), None)], "")
    assert first != fingerprints.digest("tree", [(str(log), None)], "extra")
    stat = log.stat()
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime, new ctime
    assert fingerprints.digest("tree", [(str(log), None)], "") != first
    absent = fingerprints.digest("tree", [(str(tmp_path / "gone"), None)], "")
    assert absent is not None and absent != first


def test_fingerprints_never_import_polars_or_rich() -> None:
    script = (
        "import sys\n"
        "from analytics.cache import fingerprints\n"
        "fingerprints.digest('tree', [], '')\n"
        "print('polars' in sys.modules or 'rich' in sys.modules)\n"
    )
    assert python_prints(script) == "False"


def test_the_output_key_follows_inputs_and_options(tmp_path: Path) -> None:
    log = write_session(tmp_path / "home", "s1") / "events.jsonl"

    def key(command: str = "analyze", fmt: str = "json", **options: object) -> str | None:
        found = discover([tmp_path / "home"])
        return fingerprints.output_key(command, found, options, output_format=fmt, zone="UTC")

    first = key()
    assert first == key()
    assert first != key(fmt="csv") != key(calls=True)
    assert key("issues") != first
    assert key(ctx="ignored", output="ignored") == first  # keyed apart, or not at all
    found = discover([tmp_path / "home"])
    keyed = functools.partial(fingerprints.output_key, "analyze", found, {}, output_format="json")
    assert keyed(zone="UTC", layouts=[[80, False]]) != keyed(zone="UTC", layouts=[[120, False]])
    assert keyed(zone="UTC") != keyed(zone="Europe/Paris")
    os.utime(log, ns=(1, 1))
    touched = key()
    assert touched != first
    with log.open("a") as appended:
        appended.write("\n")
    assert key() not in {first, touched}


def test_a_named_rate_file_is_part_of_the_output_key(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    assert [str(mine), None] in fingerprints.file_options(f"github-copilot+{mine}")
    mine.write_text("a")
    before = fingerprints.file_options(f"github-copilot+{mine}")
    mine.write_text("bb")
    assert fingerprints.file_options(f"github-copilot+{mine}") != before
    assert fingerprints.file_options("github-copilot") == fingerprints.file_options(
        "github-copilot"
    )


def test_a_group_key_follows_its_files(tmp_path: Path) -> None:
    first_log = write_session(tmp_path / "home", "s1") / "events.jsonl"
    write_session(tmp_path / "home", "s2")
    logs = discover([tmp_path / "home"]).logs
    both = fingerprints.group_key(logs)
    assert both == fingerprints.group_key(discover([tmp_path / "home"]).logs)
    assert fingerprints.group_key(logs[:1]) != both
    os.utime(first_log, ns=(1, 1))
    assert fingerprints.group_key(discover([tmp_path / "home"]).logs) != both


def test_every_spelling_of_a_tree_shares_its_slot(tmp_path: Path) -> None:
    write_session(tmp_path / "home", "s1")
    (tmp_path / "link").symlink_to(tmp_path / "home", target_is_directory=True)
    slot = fingerprints.paths_slot([tmp_path / "home"])
    assert fingerprints.paths_slot([tmp_path / "link"]) == slot
    assert fingerprints.paths_slot([tmp_path / "home" / ".." / "home"]) == slot
    assert fingerprints.paths_slot([tmp_path / "home" / "s1"]) != slot
