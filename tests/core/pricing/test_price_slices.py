"""Pricing a large table of calls a slice at a time (``price.PRICED_AT_ONCE``) gives the rows
pricing them at once gives: each call is priced by its own row."""

from __future__ import annotations

import pytest
from polars.testing import assert_frame_equal

from analytics.core.pricing import price
from analytics.core.pricing.rates import load_rates
from analytics.engine.analyze import analyze
from tests.conftest import SAMPLE_LOGS


def test_calls_priced_in_slices_are_the_calls_priced_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    analysis = analyze([SAMPLE_LOGS])
    calls = analysis.calls
    table = load_rates("github-copilot")
    whole = price.price_calls(calls, table)
    monkeypatch.setattr(price, "PRICED_AT_ONCE", 3)
    assert calls.height > 3
    sliced = price.price_calls(calls, table)
    assert_frame_equal(sliced, whole)
    assert sliced.n_chunks("all") == [1] * sliced.width  # a sort would copy chunks whole
    assert_frame_equal(
        price.price_sessions(sliced, analysis.sessions, table),
        price.price_sessions(whole, analysis.sessions, table),
    )


@pytest.mark.parametrize("at_once", [3, 1 << 16])
def test_sessions_priced_without_the_calls_are_those_of_price_analysis(
    monkeypatch: pytest.MonkeyPatch, at_once: int
) -> None:
    """``priced_sessions`` (only the columns the sums read kept, a slice at a time or all at
    once) gives ``price_analysis``'s sessions, under Copilot's table and a vendor's."""
    analysis = analyze([SAMPLE_LOGS])
    calls, sessions = analysis.call_view, analysis.session_view
    for name in ("github-copilot", "anthropic"):
        table = load_rates(name)
        _, expected = price.price_analysis(calls, sessions, table, log_prices=analysis.log_prices)
        monkeypatch.setattr(price, "PRICED_AT_ONCE", at_once)
        got = price.priced_sessions(calls, sessions, table, log_prices=analysis.log_prices)
        monkeypatch.undo()
        assert_frame_equal(got, expected)
