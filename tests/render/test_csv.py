"""``render_csv``: lists, pairs, structs and times flattened into plain CSV, in pieces of
``_CSV_SLICE`` rows whose text is the text of all the rows at once."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from analytics.render import views


def frame() -> pl.DataFrame:
    at = dt.datetime(2026, 5, 1, 12, 0, 0, 123000, tzinfo=dt.UTC)
    return pl.DataFrame(
        {
            "session_id": ["a", "b", "c"],
            "models": [["m1", "m2"], [], None],
            "tool_calls": [[{"tool": "bash", "calls": 2}], [], [{"tool": "edit", "calls": 1}]],
            "fit": [{"x": 1, "y": "u"}, {"x": None, "y": "v"}, None],
            "start_time": [at, None, at + dt.timedelta(seconds=1)],
        }
    )


def test_flattened_as_plain_csv() -> None:
    text = "".join(views.render_csv(frame()))
    assert text == (
        "session_id,models,tool_calls,start_time,fit.x,fit.y\n"
        "a,m1;m2,bash=2,2026-05-01T12:00:00.123Z,1,u\n"
        'b,"","",,,v\n'  # an empty list is an empty text, an unknown one nothing
        "c,,edit=1,2026-05-01T12:00:01.123Z,,\n"
    )


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_pieces_are_the_whole_text(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    whole = "".join(views.render_csv(frame()))
    monkeypatch.setattr(views, "_CSV_SLICE", rows)
    pieces = list(views.render_csv(frame()))
    assert len(pieces) == -(-3 // rows)
    assert "".join(pieces) == whole


def test_no_rows_is_the_header() -> None:
    assert "".join(views.render_csv(frame().clear())) == (
        "session_id,models,tool_calls,start_time,fit.x,fit.y\n"
    )
