"""``analytics.cache.rendered_rows``: the JSON lines of a shown table are kept beside its stored
analysis and reused for rows that hash the same; the text is always what a full rendering
gives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from analytics.cache import rendered_rows
from analytics.cache import results as result_cache
from analytics.cache.rendered_rows import json_lines
from analytics.cache.repriced import priced
from analytics.core.pricing.rates import load_rates
from analytics.engine.analyze import Window, analyze
from analytics.render.report import json_rows


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of rows each call of ``json_rows`` rendered."""
    counts: list[int] = []

    def counting(frame: pl.DataFrame) -> list[str]:
        counts.append(frame.height)
        return json_rows(frame)

    monkeypatch.setattr(rendered_rows, "json_rows", counting)
    return counts


def shown(name: str = "sessions", rates: str = "github-copilot") -> tuple[list[str], list[str]]:
    """(lines from ``json_lines``, lines of a full rendering) of a cached analysis."""
    result = analyze([Path(os.environ["_LOGS"])], use_cache=True, keep_events=False)
    frame = priced(result, load_rates(rates), {}, [name])[name]
    got = json_lines(result, name, frame)
    result_cache.flush()
    return got, json_rows(frame)


def test_lines_are_kept_and_reused_for_the_same_analysis(
    logs: Path, rendered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_LOGS", str(logs))
    for name in ("sessions", "calls"):
        rendered.clear()
        first, want = shown(name)
        assert first == want and rendered == [len(want)]
        again, want = shown(name)
        assert again == want and rendered == [len(want)]  # nothing rendered the second time


def test_a_changed_session_is_rendered_again_and_only_it(
    logs: Path, rendered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One log grows: its session's line is rendered; every other comes from the previous
    analysis's kept lines; all equal a full rendering."""
    monkeypatch.setenv("_LOGS", str(logs))
    shown()
    log = min(logs.rglob("events.jsonl"))
    user = next(
        json.loads(line) for line in log.read_text().splitlines() if '"user.message"' in line
    )
    with log.open("a") as grown:  # one more prompt (a new event id: not a repeated line)
        grown.write(json.dumps(user | {"id": "one-more-prompt"}) + "\n")
    rendered.clear()
    got, want = shown()
    assert got == want
    assert rendered == [1]


def test_other_prices_render_the_rows_they_change(
    logs: Path, rendered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row whose values differ (another rate table) never takes a kept line."""
    monkeypatch.setenv("_LOGS", str(logs))
    shown(rates="github-copilot")
    rendered.clear()
    got, want = shown(rates="anthropic")
    assert got == want and rendered == [len(want)]


def test_a_damaged_or_foreign_kept_file_is_ignored(
    logs: Path, tmp_path: Path, rendered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_LOGS", str(logs))
    shown()
    kept = sorted((tmp_path / "cache").rglob(f"lines-sessions-*{result_cache.SUFFIX}"))
    assert len(kept) == 1
    kept[0].write_bytes(b"not a table")
    rendered.clear()
    got, want = shown()
    assert got == want and rendered == [len(want)]
    pl.DataFrame({"_h1": [1], "line": ["x"]}).write_ipc(kept[0])  # another shape
    rendered.clear()
    got, want = shown()
    assert got == want and rendered == [len(want)]


def test_an_analysis_not_stored_is_rendered_whole(
    logs: Path, tmp_path: Path, rendered: list[int]
) -> None:
    table = load_rates("github-copilot")
    for result in (
        analyze([logs], use_cache=False, keep_events=False),
        analyze([logs], Window(since=None, until=None), use_cache=True, keep_events=False).only(
            pl.Series(["none"])
        ),
    ):
        frame = priced(result, table, {}, ["sessions"])["sessions"]
        assert json_lines(result, "sessions", frame) == json_rows(frame)
    result_cache.flush()
    assert not list((tmp_path / "cache").rglob("lines-*"))


def test_rows_that_hash_the_same_share_one_line(logs: Path, rendered: list[int]) -> None:
    """Two equal rows (their line too) keep one line between them, and both get it."""
    result = analyze([logs], use_cache=True, keep_events=False)
    frame = priced(result, load_rates("github-copilot"), {}, ["sessions"])["sessions"]
    twice = pl.concat([frame.head(1), frame.head(1)])
    json_lines(result, "twice", twice)
    result_cache.flush()
    rendered.clear()
    assert json_lines(result, "twice", twice) == json_rows(twice) and rendered == []
