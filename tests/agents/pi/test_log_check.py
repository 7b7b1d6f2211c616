"""pi's log checked against itself (``analytics/agents/pi/log_check.py``): each call's usage
parts against its ``totalTokens``, each call once across copies; on literal lines, through
``agentcost validate``, and on every real pi file together (its README's totals)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from analytics.agents import pi
from analytics.agents.pi.log_check import log_check
from analytics.cli.commands import app
from tests.agents.pi.test_facts import FOLDER, _summary, usage
from tests.agents.pi.test_rules import HEADER, reply, write


def row(files: list[Path]) -> dict[str, Any]:
    [found] = log_check([str(f) for f in files], None).to_dicts()  # type: ignore[arg-type]
    return found


def test_parts_against_the_total_each_call_once(tmp_path: Path) -> None:
    wrong = reply(2, (10, 2, 0, 0))
    wrong["message"]["usage"]["totalTokens"] = 13  # type: ignore[index]
    lines = [HEADER, reply(1, (100, 20, 30, 4)), wrong, reply(3, (0, 0, 0, 0), "aborted")]
    files = [write(tmp_path / "a" / "s.jsonl", lines), write(tmp_path / "b" / "s.jsonl", lines[:2])]
    found = row(files)
    assert (found["sessions"], found["calls"], found["agree"], found["disagree"]) == (1, 3, 2, 1)
    assert (found["usage_lines"], found["repeated_lines"]) == (4, 1)
    assert (found["tokens"], found["checked_tokens"]) == (166, 167)


def test_validate_prints_the_pi_row(tmp_path: Path) -> None:
    write(tmp_path / "s.jsonl", [HEADER, reply(1, (100, 20, 30, 4))])
    result = CliRunner().invoke(
        app, ["validate", str(tmp_path), "--format", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    [check] = json.loads(result.stdout)["log_checks"]
    assert (check["check"], check["calls"], check["agree"]) == ("PI totals", 1, 1)


def test_every_real_call_states_its_total_twice_alike() -> None:
    summary = _summary()
    calls = int(re.search(r"\*\*([\d,]+) calls\*\*", summary).group(1).replace(",", ""))  # type: ignore[union-attr]
    found = row([f for group in pi.discover([FOLDER]) for f in group])
    assert (found["calls"], found["agree"], found["disagree"]) == (calls, calls, 0)
    assert found["tokens"] == found["checked_tokens"] == usage(summary)[-1]
