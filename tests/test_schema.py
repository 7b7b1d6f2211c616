"""Table contracts (``schema.py``): conformance is strict, padding is explicit."""

from __future__ import annotations

import polars as pl
import pytest

from analytics.core.schema import ISSUES, conform, padded, with_nulls


def test_conform_names_a_missing_column_instead_of_inventing_it() -> None:
    frame = pl.DataFrame({"file": ["a"], "line": [1], "severity": ["error"]})
    with pytest.raises(ValueError, match=r"\['message'\]"):
        conform(frame, ISSUES)


def test_conform_orders_casts_and_drops_extra_columns() -> None:
    frame = pl.DataFrame(
        {"message": ["m"], "extra": [0], "severity": ["warning"], "line": [3], "file": ["a"]}
    )
    out = conform(frame, ISSUES)
    assert out.columns == list(ISSUES)
    assert out.schema == pl.Schema(ISSUES)


def test_padding_and_stated_nulls_are_explicit() -> None:
    out = padded(pl.DataFrame({"file": ["a"]}), ISSUES)
    assert out.row(0) == ("a", None, None, None)
    stated = with_nulls(pl.DataFrame({"file": ["a"]}), {"line": pl.Int64()})
    assert stated.schema["line"] == pl.Int64()
    assert stated["line"].null_count() == 1
