"""agentcost against ccusage 20.0.24 on the real Gemini CLI recordings laid out as a home.

``ccusage-20.0.24-session.json`` holds what ``ccusage gemini session --json --offline`` said
of ``../shared/real_logs/gemini-cli`` laid out as Gemini CLI keeps its files (the layout is
``home`` below; ccusage is never run here). Both count the same 50 calls and price them
alike; they differ in what the columns mean, each difference checked to the token:

- ccusage's ``inputTokens`` leave the cache reads out; agentcost's input includes them;
- ccusage's ``outputTokens`` leave the thoughts out (13,374 tokens on these files), though
  its cost and ``totalTokens`` count them; agentcost's output includes them and says how
  many were reasoning;
- a session without a call (``2-14_turn-aborted-by-error``, a mocked 5xx) is no ccusage row;
  agentcost lists it with 0 calls.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from analytics.cli.commands import run
from tests.conftest import REAL_LOGS

FIXTURE = Path(__file__).with_name("ccusage-20.0.24-session.json")


def home(root: Path) -> Path:
    """The real recordings as a Gemini CLI home under ``root``: each session (a recording
    may hold several one after another) in its own chat file, as Gemini CLI writes it."""
    recordings = sorted((REAL_LOGS / "gemini-cli").rglob("transcript.jsonl"))
    if not recordings:
        pytest.skip(
            f"real gemini-cli logs not present at {REAL_LOGS} (the shared/ folder is absent)"
        )
    for n, recording in enumerate(recordings, 1):
        chats = root / ".gemini" / "tmp" / f"cwd-{n}" / "chats"
        chats.mkdir(parents=True)
        out = None
        for raw in recording.read_bytes().splitlines(keepends=True):
            record = json.loads(raw)
            if "projectHash" in record and "type" not in record:
                stamp = record["startTime"][:16].replace(":", "-")
                out = chats / f"session-{stamp}-{record['sessionId'][:8]}.jsonl"
            assert out is not None
            with open(out, "ab") as file:
                file.write(raw)
    return root / ".gemini"


def test_agentcost_and_ccusage_differ_only_in_what_their_columns_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["analyze", str(home(tmp_path)), "-f", "json"])
    ours = {s["session_id"]: s for s in json.loads(capsys.readouterr().out)["sessions"]}
    recorded: dict[str, Any] = json.loads(FIXTURE.read_text())
    theirs = {s["sessionId"]: s for s in recorded["sessions"]}
    assert {sid for sid, s in ours.items() if s["llm_calls"]} == set(theirs)
    assert all(s["llm_calls"] == 0 for sid, s in ours.items() if sid not in theirs)
    for sid, c in theirs.items():
        a = ours[sid]
        assert a["input_tokens"] == c["inputTokens"] + c["cacheReadTokens"], sid
        assert a["cache_read_tokens"] == c["cacheReadTokens"], sid
        assert a["output_tokens"] == c["outputTokens"] + a["reasoning_tokens"], sid
        assert a["input_tokens"] + a["output_tokens"] == c["totalTokens"], sid
        assert a["cache_write_tokens"] is None and c["cacheCreationTokens"] == 0
        assert abs(Decimal(str(a["cost_usd"])) - Decimal(str(c["totalCost"]))) < Decimal("1e-9")
    calls = sum(s["llm_calls"] for s in ours.values())
    thoughts = sum(s["reasoning_tokens"] or 0 for s in ours.values())
    assert (calls, thoughts) == (50, 13_374)
    assert recorded["totals"]["outputTokens"] + thoughts == sum(
        s["output_tokens"] for s in ours.values()
    )
