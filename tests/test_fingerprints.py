"""The digests both caches key on (``analytics/cache/fingerprints.py``): agentcost's code, the
installed polars, and inputs by identity, all found without importing polars."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from analytics.cache import fingerprints
from tests.conftest import REPO


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
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
