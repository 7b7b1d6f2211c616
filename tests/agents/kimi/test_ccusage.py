"""agentcost against ccusage 20.0.24 on the real Kimi Code logs laid out as a Kimi Code home.

``ccusage_sessions.json`` holds what ``ccusage kimi session --json --offline`` said of that
home (recorded; ccusage is never run here). Per session the two agree to the token once
ccusage's ``inputTokens`` (uncached) is read as agentcost's ``input_tokens`` less the cache;
ccusage names the model by its config alias, agentcost by the provider's id the alias ends in.
"""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from analytics.agents import kimi
from analytics.core.pricing.price import price_calls
from analytics.core.pricing.rates import load_rate_table
from tests.conftest import REAL_LOGS

RECORDED = Path(__file__).with_name("ccusage_sessions.json")
EVIDENCE = (
    REAL_LOGS / "kimi" / "jazzyalex__session-bench/artifacts/survival-v1-release/evidence/kimi"
)


def recorded() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(RECORDED.read_text("utf-8"))
    return value


def home_from_real_logs(root: Path) -> Path:
    """A Kimi Code home holding the real sessions as Kimi Code keeps them (each session's
    directory under its ``wd_<slug>_<hash>`` bucket, named by its ``state.json``)."""
    sessions = root / ".kimi-code" / "sessions"
    for state in sorted(EVIDENCE.glob("*/native/session/state.json")):
        facts = json.loads(state.read_text("utf-8"))
        homedir = Path(facts["agents"]["main"]["homedir"])
        bucket = homedir.parents[2].name  # .../sessions/<bucket>/<session>/agents/main
        target = sessions / bucket / facts["id"]
        shutil.copytree(state.parent, target)
    return root / ".kimi-code"


def test_agentcost_equals_ccusage_per_session(tmp_path: Path) -> None:
    if not EVIDENCE.is_dir():
        pytest.skip(f"real kimi logs not present at {EVIDENCE} (the shared/ folder is absent)")
    calls = kimi.read([home_from_real_logs(tmp_path)], items=False).calls
    ours = calls.group_by("session_id").agg(
        (pl.col("input_tokens") - pl.col("cache_read_tokens") - pl.col("cache_write_tokens"))
        .sum()
        .alias("inputTokens"),
        pl.col("output_tokens").sum().alias("outputTokens"),
        pl.col("cache_read_tokens").sum().alias("cacheReadTokens"),
        pl.col("cache_write_tokens").sum().alias("cacheCreationTokens"),
        pl.col("model").unique().alias("models"),
    )
    got = {row["session_id"]: row for row in ours.iter_rows(named=True)}
    answers = recorded()["sessions"]
    assert set(got) == {answer["sessionId"] for answer in answers}
    for answer in answers:
        row = got[answer["sessionId"]]
        for kind in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens"):
            assert row[kind] == answer[kind], (answer["sessionId"], kind)
        aliases = answer["modelsUsed"]
        assert row["models"] == [alias.rsplit("/", 1)[-1] for alias in aliases]


def test_agentcost_prices_each_session_as_ccusage_does(tmp_path: Path) -> None:
    """The provider's id the calls carry is priced by the bundled Moonshot table, to the
    decimal ccusage gives (at LiteLLM's ``moonshot/`` prices, the same rates)."""
    if not EVIDENCE.is_dir():
        pytest.skip(f"real kimi logs not present at {EVIDENCE} (the shared/ folder is absent)")
    calls = kimi.read([home_from_real_logs(tmp_path)], items=False).calls
    priced = price_calls(calls, load_rate_table("moonshotai"))
    costs = dict(priced.group_by("session_id").agg(pl.col("cost_usd").sum()).iter_rows())
    assert costs == {
        answer["sessionId"]: Decimal(str(answer["totalCost"])) for answer in recorded()["sessions"]
    }
