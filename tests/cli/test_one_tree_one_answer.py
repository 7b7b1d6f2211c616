"""One tree, one answer: every command that reads logs gives the same output for the same
tree however it is named (absolute, relative, through a symlink), cold or warm, in any order.

A user once read a home by its absolute path with the bare ``agentcost``, then ran
``agentcost report home --html``: the caches, keyed by the first spelling, made the report
crash, ``top`` print a header alone and ``export`` write 0 rows. Each command here runs in its
own process, as a user runs it, over one cache directory per order; outputs are compared with
each spelling of the tree replaced by ``<tree>``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REAL_LOGS, SAMPLE_LOGS

AGENTCOST = str(Path(sys.executable).parent / "agentcost")
#: Commands and the files they write (None: stdout is the output).
COMMANDS: list[tuple[list[str], str | None]] = [
    ([], None),  # the bare first screen, the tree as COPILOT_HOME
    (["analyze", "{tree}", "-f", "json"], None),
    (["analyze", "{tree}", "--calls", "-f", "json"], None),
    (["daily", "{tree}", "--by", "agent", "-f", "json"], None),
    (["top", "{tree}", "-f", "json"], None),
    (["compare", "{tree}", "-f", "json"], None),
    (["issues", "{tree}", "-f", "json"], None),
    (["report", "{tree}", "--html", "{out}/report.html"], "report.html"),
]
#: The agents' real logs mixed into the tree, where ../shared is present.
MIXED = [
    "claude-code/marot__spotter/test/fixtures/transcripts/short.jsonl",
    "codex/madshn__localpush/src-tauri/tests/fixtures/codex/2026-02-23/raw/sessions/"
    "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree of sample logs, with a Claude Code and a Codex log where the real logs are."""
    root = tmp_path_factory.mktemp("one") / "tree-under-test"
    shutil.copytree(SAMPLE_LOGS, root / "copilot")
    for relative in MIXED:
        source = REAL_LOGS / relative
        if source.is_file():
            target = root / relative.split("/", 1)[0] / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    (root.parent / "link-to-tree").symlink_to(root, target_is_directory=True)
    return root


def outputs(tree: Path, spelling: str, cache: Path, out: Path) -> list[str]:
    """Every command's output for the tree named ``spelling`` (run from the tree's parent)."""
    env = os.environ | {"AGENTCOST_CACHE_DIR": str(cache), "COLUMNS": "120", "TZ": "UTC"}
    env |= {"COPILOT_HOME": spelling, "HOME": str(out), "CODEX_HOME": str(out / "none")}
    env.pop("CLAUDE_CONFIG_DIR", None)
    texts = []
    for command, written in COMMANDS:
        args = [a.format(tree=spelling, out=out) for a in command]
        run = subprocess.run(
            [AGENTCOST, *args],
            check=False,
            cwd=tree.parent,
            env=env,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, (args, run.stderr)
        text = (out / written).read_text() if written else run.stdout
        for name in (str(tree), str(tree.parent / "link-to-tree"), spelling):
            text = text.replace(name, "<tree>")
        texts.append(text)
    return texts


@pytest.mark.parametrize(
    "order",
    [("absolute", "relative", "link"), ("link", "absolute", "relative")],
    ids=["abs-rel-link", "link-abs-rel"],
)
def test_every_spelling_gives_one_answer(
    tree: Path, tmp_path: Path, order: tuple[str, ...]
) -> None:
    spellings = {"absolute": str(tree), "relative": tree.name, "link": "link-to-tree"}
    cache = tmp_path / "cache"
    first = None
    for name in order:
        for warmth in ("cold", "warm"):  # cold the first time a spelling is read after another
            out = tmp_path / f"{name}-{warmth}"
            out.mkdir()
            got = outputs(tree, spellings[name], cache, out)
            if first is None:
                first = got
                continue
            for (command, _), want, have in zip(COMMANDS, first, got, strict=True):
                assert have == want, (name, warmth, command)
