"""``analytics.cache.priced_tables``: an analysis's priced tables are kept beside its stored
result and loaded while the analysis and the prices are unchanged; anything else prices afresh."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from analytics.cache import results as result_cache
from analytics.cache.fingerprints import prices_key
from analytics.cache.priced_tables import PRICED, priced_tables
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rates
from analytics.engine.analyze import Analysis, Window, analyze


def fresh(result: Analysis, table_name: str = "github-copilot") -> dict[str, pl.DataFrame]:
    calls, sessions = price_analysis(
        result.call_view, result.session_view, load_rates(table_name), {}, result.log_prices
    )
    return {"calls": calls, "sessions": sessions}


def kept_files(tmp_path: Path) -> list[Path]:
    result_cache.flush()
    return sorted((tmp_path / "cache").rglob(f"priced-*{result_cache.SUFFIX}"))


def assert_equal(got: dict[str, pl.DataFrame], want: dict[str, pl.DataFrame]) -> None:
    assert set(got) == set(want)
    for name, frame in want.items():
        assert got[name].equals(frame), name


def test_a_stored_analysis_keeps_its_priced_tables_and_loads_them(
    logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_rates("github-copilot")
    first = analyze([logs], use_cache=True, keep_events=False)
    assert first.stored_as is not None
    assert_equal(priced_tables(first, table, {}), fresh(first))
    assert len(kept_files(tmp_path)) == len(PRICED)

    second = analyze([logs], use_cache=True, keep_events=False)
    calls: list[int] = []
    monkeypatch.setattr(
        "analytics.cache.priced_tables._priced", lambda *a, **k: calls.append(1) or {}
    )
    assert_equal(
        priced_tables(second, table, {}, ["sessions"]), {"sessions": fresh(first)["sessions"]}
    )
    assert_equal(priced_tables(second, table, {}), fresh(first))
    assert calls == []  # loaded, not priced again


def test_only_the_tables_asked_for_are_kept(logs: Path, tmp_path: Path) -> None:
    table = load_rates("github-copilot")
    result = analyze([logs], use_cache=True, keep_events=False)
    assert_equal(
        priced_tables(result, table, {}, ["sessions"]), {"sessions": fresh(result)["sessions"]}
    )
    assert [path.name.rsplit("-", 1)[-1] for path in kept_files(tmp_path)] == [
        f"sessions{result_cache.SUFFIX}"
    ]
    again = analyze([logs], use_cache=True, keep_events=False)
    assert_equal(priced_tables(again, table, {}), fresh(result))  # calls were not kept: priced anew
    assert len(kept_files(tmp_path)) == len(PRICED)


def test_other_prices_or_a_model_map_price_afresh(logs: Path, tmp_path: Path) -> None:
    result = analyze([logs], use_cache=True, keep_events=False)
    copilot, anthropic = load_rates("github-copilot"), load_rates("anthropic")
    priced_tables(result, copilot, {})
    assert_equal(priced_tables(result, anthropic, {}), fresh(result, "anthropic"))
    mapped = priced_tables(result, copilot, {"claude-sonnet-4.5": "claude-haiku-4.5"})
    calls, sessions = price_analysis(
        result.call_view,
        result.session_view,
        copilot,
        {"claude-sonnet-4.5": "claude-haiku-4.5"},
        result.log_prices,
    )
    assert_equal(mapped, {"calls": calls, "sessions": sessions})
    assert len(kept_files(tmp_path)) == 3 * len(PRICED)
    assert len({prices_key(copilot, {}), prices_key(anthropic, {})}) == 2


def test_a_windowed_analysis_is_priced_afresh_and_keeps_nothing(logs: Path, tmp_path: Path) -> None:
    windowed = analyze([logs], Window(until=date(2000, 1, 1)), use_cache=True)
    assert windowed.stored_as is None and windowed.sessions.height == 0
    assert_equal(priced_tables(windowed, load_rates("github-copilot"), {}), fresh(windowed))
    assert kept_files(tmp_path) == []


def test_a_damaged_priced_table_is_priced_again(logs: Path, tmp_path: Path) -> None:
    table = load_rates("github-copilot")
    result = analyze([logs], use_cache=True, keep_events=False)
    priced_tables(result, table, {})
    for kept in kept_files(tmp_path):
        kept.write_bytes(b"not a table")
    again = analyze([logs], use_cache=True, keep_events=False)
    assert_equal(priced_tables(again, table, {}), fresh(result))


#: Real Copilot logs with bring-your-own-key calls, the log's own prices, and plain bills.
ONE_ENTRY_LOGS = (
    "lantern-byok-1.0.78",
    "modelog-1.0.94-usage-record",
    "qiaolei81-session-demo",
    "token-killer-1.0.63",
)


def test_per_call_costs_sum_to_the_sessions_table_on_real_logs(real_logs: Path) -> None:
    """Pricing has one entry point: the per-call costs that the HTML report's charts and the
    notebooks show (``price.price_calls``, and the report's own per-group pricing), summed per
    session, are the sessions table's costs, BYOK and log-priced calls included. The Copilot
    table prices every model these logs quote, so it is also tried without those models, which
    the log's own prices then price."""
    from analytics.core.pricing.price import price_calls
    from analytics.engine.html_frames import report_frames

    copilot = load_rates("github-copilot")
    seen: set[str] = set()
    for name in ONE_ENTRY_LOGS:
        if not (real_logs / name).exists():
            continue
        result = analyze([real_logs / name], keep_events=True)
        quoted = set(result.log_prices["model"]) if result.log_prices is not None else set()
        lacking = dataclasses.replace(
            copilot, models=tuple(m for m in copilot.models if not quoted & set(m.names))
        )
        for table in (copilot, lacking):
            _, sessions = price_analysis(
                result.call_view, result.session_view, table, {}, result.log_prices
            )
            calls = price_calls(result.call_view, table, log_prices=result.log_prices)
            want = dict(zip(sessions["session_id"], sessions["cost_usd"], strict=True))
            for priced_calls in (calls, report_frames(result, table).priced):
                sums = priced_calls.group_by("session_id").agg(
                    pl.when(pl.col("cost_usd").is_not_null().any()).then(pl.col("cost_usd").sum())
                )
                got = dict(zip(sums["session_id"], sums["cost_usd"], strict=True))
                assert got == {sid: want[sid] for sid in got}, name
            seen |= set(calls["cost_source"].drop_nulls())
            seen |= {"byok"} if calls["is_byok"].any() else set()
    if not seen:
        pytest.skip("none of the real logs with BYOK or log-priced calls is present")
    assert {"byok", "log_rates"} <= seen
