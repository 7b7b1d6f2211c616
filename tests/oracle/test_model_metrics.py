"""The scanner decodes a shutdown's ``modelMetrics`` (``native/agents/copilot/model_metrics.rs``) as
the reference decoder does (``tests/oracle/reference/model_metrics.py``, the Python reader it
replaced), row for row and warning for warning: on literal lines, and on hypothesis-generated
ones with numbers of every form, repeated keys, odd names, wrong shapes, and the whole field
given as a string of JSON. A number no 64-bit counter or double holds is reported with its
file and line, never a crash, and the other figures of the line are still read; a shutdown
with a model's count unknown keeps its token totals but has no request total to check the
calls against.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.cli import app
from tests.oracle.test_scanner_differential import assert_same, native

EXAMPLES = int(os.environ.get("AGENTCOST_DIFFERENTIAL_EXAMPLES", "10000")) // 5


def _shutdown(metrics: str) -> str:
    return (
        '{"type":"session.shutdown","timestamp":"2026-05-01T10:00:00Z",'
        f'"data":{{"shutdownType":"routine","modelMetrics":{metrics}}}}}'
    )


def _decoded(tmp_path: Path, metrics: str) -> tuple[list[dict[str, object]], list[object]]:
    path = tmp_path / "events.jsonl"
    path.write_text(_shutdown(metrics) + "\n", encoding="utf-8")
    assert_same(path)
    rows, warnings = native(path, "hint")[2]
    return rows, warnings


def test_figures_as_exact_whole_numbers_and_decimals(tmp_path: Path) -> None:
    rows, warnings = _decoded(
        tmp_path,
        '{"gpt-5":{"requests":{"count":3.0,"cost":1.50},"usage":{"inputTokens":1e3,'
        '"outputTokens":7,"cacheReadTokens":"9","reasoningTokens":2.5},'
        '"totalNanoAiu":305426000.0}}',
    )
    assert warnings == []
    assert rows == [
        {
            "source_line": 1,
            "model": "gpt-5",
            "requests_count": 3,
            "requests_cost": "1.5",  # compact JSON, as the scanner keeps it
            "input_tokens": 1000,
            "output_tokens": 7,
            "cache_read_tokens": None,  # a string is not a count
            "cache_write_tokens": None,
            "reasoning_tokens": None,  # nor is a fraction
            "total_nano_aiu": "305426000",
        }
    ]


def test_json_in_a_string_keeps_its_digits(tmp_path: Path) -> None:
    text = '{"m": {"requests": {"cost": 1.50, "count": 2}}, "m": {"requests": {"count": 4}}}'
    rows, warnings = _decoded(tmp_path, json.dumps(text))
    assert warnings == []
    assert [(r["model"], r["requests_count"], r["requests_cost"]) for r in rows] == [
        ("m", 4, None)  # a repeated key: its last value
    ]


def test_an_empty_object_is_zero_requests(tmp_path: Path) -> None:
    rows, _ = _decoded(tmp_path, "{}")
    assert [(r["model"], r["requests_count"], r["reasoning_tokens"]) for r in rows] == [
        (None, 0, None)
    ]


def test_numbers_out_of_range_are_reported_not_fatal(tmp_path: Path) -> None:
    rows, warnings = _decoded(
        tmp_path,
        '{"a":{"requests":{"count":1e30,"cost":1e999},"usage":{"inputTokens":5}},'
        '"b":{"requests":{"count":99999999999999999999}},"c":[1]}',
    )
    assert [(r["model"], r["requests_count"], r["input_tokens"]) for r in rows] == [
        ("a", None, 5),
        ("b", None, None),
    ]
    assert [message for _, message in warnings] == [
        'modelMetrics["a"] count is a whole number beyond 64 bits; left out',
        'modelMetrics["b"] count is a whole number beyond 64 bits; left out',
        'modelMetrics["c"] is not an object',
    ]


def test_negative_counts_are_left_out_with_a_warning(tmp_path: Path) -> None:
    rows, warnings = _decoded(
        tmp_path,
        '{"a":{"requests":{"count":-3,"cost":-1},"usage":{"inputTokens":-0,"outputTokens":-7.0}}}',
    )
    assert [(r["requests_count"], r["input_tokens"], r["output_tokens"]) for r in rows] == [
        (None, 0, None)
    ]
    # money is not a count: its text is kept as written
    assert rows[0]["requests_cost"] == "-1"
    assert [message for _, message in warnings] == [
        'modelMetrics["a"] count is negative; left out',
        'modelMetrics["a"] outputTokens is negative; left out',
    ]


def _session_with_shutdown(tmp_path: Path, metrics: str) -> Path:
    """A session ``s1`` of a start and a shutdown with ``metrics``; its log's path."""
    session = tmp_path / "s1"
    session.mkdir()
    start = json.dumps(
        {
            "type": "session.start",
            "timestamp": "2026-05-01T09:00:00Z",
            "data": {"sessionId": "s1", "copilotVersion": "0.0.400"},
        }
    )
    log = session / "events.jsonl"
    log.write_text("\n".join([start, _shutdown(metrics)]) + "\n", encoding="utf-8")
    return log


_UNREADABLE_COUNT = '{"gpt-5":{"requests":{"count":1e30},"usage":{"outputTokens":7}}}'


def test_a_bad_shutdown_is_a_warning_with_file_and_line_in_the_command(tmp_path: Path) -> None:
    log = _session_with_shutdown(tmp_path, _UNREADABLE_COUNT)
    session = log.parent
    result = CliRunner().invoke(
        app, ["--no-cache", "analyze", str(tmp_path), "--format", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    row = report["sessions"][0]
    # the shutdown's token totals are taken; its request total is unknown, so the calls are
    # not checked against it
    assert (row["logged_output_tokens"], row["token_totals_source"]) == (7, "shutdown")
    assert (row["shutdown_requests"], row["calls_agree"]) == (None, None)
    assert [(i["file"], i["line"], i["severity"]) for i in report["issues"]] == [
        (str(session / "events.jsonl"), 2, "warning")
    ]
    assert "beyond 64 bits" in report["issues"][0]["message"]


def test_the_table_says_requests_unknown_not_no_shutdown_totals(tmp_path: Path) -> None:
    # the shutdown's token totals are there; only its request count is not
    _session_with_shutdown(tmp_path, _UNREADABLE_COUNT)
    result = CliRunner().invoke(app, ["--no-cache", "analyze", str(tmp_path)])
    assert result.exit_code == 0
    assert "requests unknown" in result.stdout
    assert "no shutdown totals" not in result.stdout


_NUMBERS = st.one_of(
    st.sampled_from(
        [
            "0",
            "-0",
            "-0.0",
            "0e999",
            "5.0",
            "1.50",
            "1e3",
            "1E-7",
            "1e-6",
            "1.2345e-5",
            "12.55e1",
            "1e19",
            "-9223372036854775808",
            "9223372036854775807",
            "9223372036854775808",
            "123456789012345678901234567890",
            "1.0e400",
            "1e399",
            "1e-400",
            "2.5e+300",
            "NaN",
            "-Infinity",
        ]
    ),
    st.integers(-(2**80), 2**80).map(str),
    st.integers(2**62, 2**64).map(lambda n: str(n * (-1) ** n)),  # around the 64-bit edge
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.decimals(allow_nan=False, allow_infinity=False, places=None).map(str),
)
_SCALARS = st.one_of(
    _NUMBERS, st.sampled_from(['"12"', "true", "false", "null", "[]", '{"count":1}'])
)
_NAMES = st.text(
    st.characters(exclude_categories=("Cs",)), max_size=6
)  # lone surrogates are not names a log can hold
_FIELDS = {
    "requests": ("count", "cost"),
    "usage": (
        "inputTokens",
        "outputTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
        "reasoningTokens",
    ),
}


def _members(pairs: list[tuple[str, str]], space: str) -> str:
    return "{" + f",{space}".join(f"{json.dumps(k)}:{space}{v}" for k, v in pairs) + "}"


@st.composite
def _model(draw: st.DrawFn, space: str) -> str:
    """One model's value: mostly the shape logs write, with fields left out, repeated or
    odd, and sometimes not an object at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(_SCALARS)
    pairs = []
    for where, keys in _FIELDS.items():
        if draw(st.booleans()):
            chosen = draw(st.lists(st.sampled_from(keys), max_size=len(keys) + 1))
            inner = [(key, draw(_SCALARS)) for key in chosen]
            pairs.append((where, _members(inner, space)))
    if draw(st.booleans()):
        pairs.append(("totalNanoAiu", draw(_SCALARS)))
    if draw(st.integers(0, 4)) == 0:
        pairs.append((draw(st.sampled_from(["requests", "usage", "x"])), draw(_SCALARS)))
    return _members(draw(st.permutations(pairs)), space)


@st.composite
def _model_metrics(draw: st.DrawFn) -> str:
    space = draw(st.sampled_from(["", " ", "\n "]))
    names = draw(st.lists(_NAMES, max_size=4))
    text = _members([(name, draw(_model(space))) for name in names], space)
    if draw(st.integers(0, 9)) == 0:
        text = draw(_SCALARS)
    return json.dumps(text) if draw(st.integers(0, 4)) == 0 else text


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(metrics=_model_metrics())
def test_generated_model_metrics_decode_as_the_reference(tmp_path: Path, metrics: str) -> None:
    _decoded(tmp_path, metrics)
