"""Per-call token readers: Copilot's session-store.db and OpenTelemetry file exports."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.agents.copilot import store as copilot_store
from analytics.agents.copilot.otel import read_otel_export
from analytics.agents.copilot.store import OBSERVED, exact_decimal, read_session_store
from analytics.core.errors import InputError
from analytics.core.schema import ISSUES

SESSION = "11111111-2222-4333-8444-555555555555"
USAGE_SQL = Path("aiusage-core-session-store-1.0.80") / "usage.sql"
#: Rows written before the checkpoint, so they are in the main file; the rest are in the WAL.
CHECKPOINTED = 5

# ---------------------------------------------------------------------------------------------
# session-store.db


def _insert_statements(sql: str) -> tuple[list[str], list[str]]:
    """The column list of the INSERTs in ``usage.sql`` and the INSERT statements themselves."""
    columns = re.search(r"INSERT INTO assistant_usage_events \(([^)]*)\)", sql)
    assert columns is not None
    inserts = [line for line in sql.splitlines() if line.startswith("INSERT INTO")]
    return [name.strip() for name in columns.group(1).split(",")], inserts


def _create_usage_table(db: sqlite3.Connection, columns: list[str]) -> None:
    typed = ["id INTEGER PRIMARY KEY" if name == "id" else name for name in columns]
    db.execute(f"CREATE TABLE assistant_usage_events ({', '.join(typed)})")


@pytest.fixture
def live_store(real_logs: Path, tmp_path: Path) -> Iterator[Path]:
    """usage.sql as a WAL-mode store that Copilot still holds open: most rows only in -wal."""
    columns, inserts = _insert_statements((real_logs / USAGE_SQL).read_text())
    store = tmp_path / "copilot" / "session-store.db"
    store.parent.mkdir()
    with closing(sqlite3.connect(store)) as writer:
        writer.execute("PRAGMA journal_mode = WAL")
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("CREATE TABLE schema_version (version INTEGER)")
        writer.execute("INSERT INTO schema_version VALUES (8)")
        _create_usage_table(writer, columns)
        for statement in inserts[:CHECKPOINTED]:
            writer.execute(statement)
        writer.commit()
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for statement in inserts[CHECKPOINTED:]:
            writer.execute(statement)
        writer.commit()
        yield store


def _listing(directory: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.iterdir()}


def test_store_reads_every_row_including_the_wal_without_touching_the_directory(
    live_store: Path, real_logs: Path, tmp_path: Path
) -> None:
    main_only = tmp_path / "main-only.db"
    shutil.copyfile(live_store, main_only)
    with closing(sqlite3.connect(main_only)) as db:
        (in_main_file,) = db.execute("SELECT COUNT(*) FROM assistant_usage_events").fetchone()
    assert in_main_file == CHECKPOINTED  # the other 40 rows exist only in the -wal
    before = _listing(live_store.parent)
    assert {"session-store.db-wal", "session-store.db-shm"} <= before.keys()

    usage, issues = read_session_store(live_store)

    assert _listing(live_store.parent) == before
    assert issues.is_empty()
    assert usage.schema == pl.Schema(OBSERVED)
    assert usage.height == 45
    assert usage["agent_id"].null_count() == 40
    sub_agents = usage.filter(pl.col("agent_id").is_not_null())
    assert sub_agents["agent_id"].to_list() == sub_agents["parent_tool_call_id"].to_list()
    assert usage["seq"].to_list() == list(range(45))
    assert usage["total_nano_aiu"].cast(pl.Int64).sum() == 18_913_170_000
    assert set(usage["source_file"]) == {str(live_store)}

    with closing(sqlite3.connect(":memory:")) as expected_db:
        columns, inserts = _insert_statements((real_logs / USAGE_SQL).read_text())
        _create_usage_table(expected_db, columns)
        for statement in inserts:
            expected_db.execute(statement)
        expected = pl.DataFrame(
            expected_db.execute(
                "SELECT id, session_id, model, input_tokens, output_tokens, cache_read_tokens,"
                " cache_write_tokens, reasoning_tokens, total_nano_aiu, initiator, turn_index,"
                " finish_reason, created_at FROM assistant_usage_events ORDER BY id"
            ).fetchall(),
            orient="row",
            schema=[
                "source_line",
                "session_id",
                "model",
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "reasoning_tokens",
                "total_nano_aiu",
                "initiator",
                "turn_index",
                "finish_reason",
                "created_at",
            ],
        ).with_columns(
            pl.col("total_nano_aiu").cast(pl.String),
            pl.col("created_at").str.to_datetime(time_unit="ms", time_zone="UTC"),
        )
    assert usage.select(expected.columns).equals(expected)


def test_store_rows_match_the_first_logged_call(live_store: Path) -> None:
    usage, _ = read_session_store(live_store)
    first = usage.row(0, named=True)
    assert first == {
        "source_file": str(live_store),
        "source_line": 1,
        "session_id": SESSION,
        "seq": 0,
        "agent_id": None,
        "parent_tool_call_id": None,
        "model": "claude-haiku-4.5",
        "input_tokens": 19335,
        "output_tokens": 114,
        "cache_read_tokens": 8888,
        "cache_write_tokens": 10437,
        "reasoning_tokens": 53,
        "total_nano_aiu": "1451505000",
        "initiator": "user",
        "created_at": datetime(2026, 8, 15, 8, 59, 22, 190000, tzinfo=UTC),
        "token_details": (
            '[{"batchSize":1000000,"costPerBatch":100000000000,"tokenCount":10,'
            '"tokenType":"input"},{"batchSize":1000000,"costPerBatch":10000000000,'
            '"tokenCount":8888,"tokenType":"cache_read"},{"batchSize":1000000,'
            '"costPerBatch":125000000000,"tokenCount":10437,"tokenType":"cache_write"},'
            '{"batchSize":1000000,"costPerBatch":500000000000,"tokenCount":114,'
            '"tokenType":"output"}]'
        ),
        "turn_index": 0,
        "interaction_id": None,
        "turn_id": None,
        "finish_reason": "tool_calls",
    }


@pytest.mark.parametrize(("session_ids", "rows"), [(None, 45), ({SESSION}, 45), ({"other"}, 0)])
def test_store_session_filter(live_store: Path, session_ids: set[str] | None, rows: int) -> None:
    usage, issues = read_session_store(live_store, session_ids)
    assert (usage.height, issues.height) == (rows, 0)


def _synthetic_store(path: Path, schema: str, rows: str = "", version: int | None = 8) -> Path:
    with closing(sqlite3.connect(path)) as db:
        if version is not None:
            db.execute("CREATE TABLE schema_version (version INTEGER)")
            db.execute("INSERT INTO schema_version VALUES (?)", (version,))
        if schema:
            db.execute(schema)
        if rows:
            db.execute(rows)
        db.commit()
    return path


FULL = (
    "CREATE TABLE assistant_usage_events (id INTEGER PRIMARY KEY, session_id TEXT, turn_index,"
    " agent_id, parent_tool_call_id, model, input_tokens, output_tokens, cache_read_tokens,"
    " cache_write_tokens, reasoning_tokens, total_nano_aiu, initiator, finish_reason, created_at,"
    " token_details_json)"
)
OLD = (
    "CREATE TABLE assistant_usage_events (id INTEGER PRIMARY KEY, session_id TEXT, model,"
    " input_tokens, output_tokens, created_at)"
)


@pytest.mark.parametrize(
    ("schema", "rows", "version", "expected_rows", "messages"),
    [
        pytest.param("", "", 8, 0, [("warning", "no table assistant_usage_events")], id="no-table"),
        pytest.param(
            OLD,
            "INSERT INTO assistant_usage_events VALUES (1, 's', 'm', 10, 2, '2026-01-01 10:00:00')",
            5,
            1,
            [("warning", "schema_version 5"), ("warning", "lacks columns agent_id")],
            id="old-schema",
        ),
        pytest.param(
            "CREATE TABLE assistant_usage_events (id INTEGER PRIMARY KEY, model)",
            "INSERT INTO assistant_usage_events VALUES (1, 'm')",
            None,
            0,
            [("warning", "no schema_version"), ("error", "no session_id column")],
            id="no-session-column",
        ),
        pytest.param(
            FULL,
            "INSERT INTO assistant_usage_events VALUES (7, 's', 0, NULL, NULL, 'm', 1.5, 2, 0,"
            " 0, 0, 'lots', 'user', 'stop', 'yesterday', NULL)",
            8,
            1,
            [
                ("warning", "input_tokens '1.5' is not a valid value"),
                ("warning", "total_nano_aiu 'lots' is not a valid value"),
                ("warning", "created_at 'yesterday' is not a valid value"),
            ],
            id="bad-values",
        ),
        pytest.param(
            FULL,
            "INSERT INTO assistant_usage_events VALUES (7, 's', 0, NULL, NULL, 'm', 10, 2, 20,"
            " 0, 5, 12.5, 'user', 'stop', '2026-01-01T10:00:00Z', NULL)",
            8,
            1,
            [
                ("warning", "input_tokens is less than cache_read_tokens + cache_write_tokens"),
                ("warning", "output_tokens is less than reasoning_tokens"),
            ],
            id="inconsistent-counts",
        ),
    ],
)
def test_store_schema_variations_become_issues(
    tmp_path: Path,
    schema: str,
    rows: str,
    version: int | None,
    expected_rows: int,
    messages: list[tuple[str, str]],
) -> None:
    store = _synthetic_store(tmp_path / "session-store.db", schema, rows, version)
    usage, issues = read_session_store(store)
    assert usage.schema == pl.Schema(OBSERVED)
    assert issues.schema == pl.Schema(ISSUES)
    assert usage.height == expected_rows
    assert issues.height == len(messages)
    for (severity, message), issue in zip(messages, issues.iter_rows(named=True), strict=True):
        assert issue["file"] == str(store)
        assert (issue["severity"], message in issue["message"]) == (severity, True)


def test_store_parses_both_timestamp_forms_and_exact_nano(tmp_path: Path) -> None:
    store = _synthetic_store(
        tmp_path / "s.db",
        FULL,
        "INSERT INTO assistant_usage_events VALUES (1, 's', 0, NULL, NULL, 'm', 10, 2, 0, 0,"
        " 0, 12.5, 'user', 'stop', '2026-01-01 10:00:00', NULL),"
        " (2, 's', 0, NULL, NULL, 'm', 10, 2, 0, 0, 0, 100.0, 'agent', 'stop',"
        " '2026-01-01T11:00:00.250+01:00', NULL)",
    )
    usage, issues = read_session_store(store)
    assert issues.is_empty()
    assert usage["total_nano_aiu"].to_list() == ["12.5", "100"]
    assert usage["created_at"].to_list() == [
        datetime(2026, 1, 1, 10, tzinfo=UTC),
        datetime(2026, 1, 1, 10, 0, 0, 250000, tzinfo=UTC),
    ]


def test_store_corrupt_file_is_an_issue_naming_it(tmp_path: Path) -> None:
    store = tmp_path / "session-store.db"
    store.write_bytes(b"this is not an SQLite database " * 200)
    usage, issues = read_session_store(store)
    assert usage.is_empty()
    assert issues.select("file", "severity").row(0) == (str(store), "error")
    assert "cannot read the session store" in issues["message"][0]


def test_store_missing_file_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"session-store\.db: not a file"):
        read_session_store(tmp_path / "session-store.db")


def test_store_changing_while_copied_still_reads_and_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _synthetic_store(
        tmp_path / "s.db",
        FULL,
        "INSERT INTO assistant_usage_events VALUES (1, 's', 0, NULL, NULL, 'm', 10, 2, 0, 0,"
        " 0, 5, 'user', 'stop', '2026-01-01 10:00:00', NULL)",
    )
    ticks = itertools.count()
    monkeypatch.setattr(copilot_store, "_fingerprint", lambda _path: next(ticks))
    usage, issues = read_session_store(store)
    assert usage.height == 1
    assert issues["message"].str.contains("changed while it was copied").to_list() == [True]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1451505000, "1451505000"),
        ("1451505000", "1451505000"),
        (Decimal("1451505000.0"), "1451505000"),
        (Decimal("0.50"), "0.5"),
        (Decimal("-0.0"), "0"),
        ("1.0e+20", "100000000000000000000"),
        (Decimal("1e40"), None),
        ("NaN", None),
        ("sNaN", None),
        ("abc", None),
        (True, None),
        (1.5, None),
        (None, None),
    ],
)
def test_exact_decimal(value: object, text: str | None) -> None:
    assert exact_decimal(value) == text


# ---------------------------------------------------------------------------------------------
# OpenTelemetry exports

#: Lines of Copilot CLI 1.0.80's file export (RandomCodeSpace/aiusage-core
#: adapter/copilot/testdata/otel.jsonl), trimmed to the attributes the reader uses: a user
#: turn with one call, and a task sub-agent's call under the tool call that launched it.
MAIN_CHAT = (
    '{"type":"span","traceId":"trace0001","spanId":"span0003","name":"chat auto","kind":2,'
    '"startTime":[1786784359,106000000],"endTime":[1786784362,288000000],"attributes":{'
    '"gen_ai.operation.name":"chat","gen_ai.request.model":"auto",'
    f'"gen_ai.conversation.id":"{SESSION}","gen_ai.response.finish_reasons":["stop"],'
    '"gen_ai.usage.input_tokens":19335,"gen_ai.usage.output_tokens":114,'
    '"gen_ai.usage.cache_read.input_tokens":8888,"gen_ai.usage.cache_creation.input_tokens":10437,'
    '"gen_ai.usage.reasoning.output_tokens":53,"gen_ai.response.model":"claude-haiku-4.5",'
    '"github.copilot.cost":0.33,"github.copilot.initiator":"user",'
    '"github.copilot.nano_aiu":1451505000.0,"github.copilot.turn_id":"0",'
    '"github.copilot.interaction_id":"int0001"},"status":{"code":0},"parentSpanId":"span0002"}'
)
MAIN_AGENT = (
    '{"type":"span","traceId":"trace0001","spanId":"span0002","name":"invoke_agent","kind":0,'
    '"startTime":[1786784359,44000000],"endTime":[1786784364,878000000],"attributes":{'
    f'"gen_ai.operation.name":"invoke_agent","gen_ai.conversation.id":"{SESSION}",'
    '"gen_ai.agent.id":"github.copilot.default","gen_ai.usage.input_tokens":38828,'
    '"github.copilot.nano_aiu":1699605000.0,"github.copilot.turn_count":2}}'
)
SUB_AGENT_CHAT = (
    '{"type":"span","traceId":"trace0011","spanId":"span0096","name":"chat gpt-5-mini","kind":2,'
    '"startTime":[1786813600,942000000],"endTime":[1786816881,385854498],"attributes":{'
    '"gen_ai.operation.name":"chat","gen_ai.request.model":"gpt-5-mini",'
    f'"gen_ai.conversation.id":"{SESSION}","gen_ai.response.model":"gpt-5-mini",'
    '"gen_ai.response.finish_reasons":["error"],"gen_ai.usage.input_tokens":12112,'
    '"gen_ai.usage.output_tokens":1141,"gen_ai.usage.cache_read.input_tokens":11776,'
    '"gen_ai.usage.reasoning.output_tokens":960},"status":{"code":2},"parentSpanId":"span0097"}'
)
SUB_AGENT = (
    '{"type":"span","traceId":"trace0011","spanId":"span0097","name":"invoke_agent task",'
    '"startTime":[1786813600,942000000],"endTime":[1786816881,385927768],"attributes":{'
    '"gen_ai.operation.name":"invoke_agent","gen_ai.agent.id":"builtin:task"},'
    '"parentSpanId":"span0068"}'
)
TASK_TOOL = (
    '{"type":"span","traceId":"trace0011","spanId":"span0068","name":"execute_tool task",'
    '"startTime":[1786813600,817000000],"endTime":[1786813601,24000000],"attributes":{'
    '"gen_ai.operation.name":"execute_tool","gen_ai.tool.name":"task",'
    '"gen_ai.tool.call.id":"call_0024"},"parentSpanId":"span0063"}'
)
TURN_AGENT = (
    '{"type":"span","traceId":"trace0011","spanId":"span0063","name":"invoke_agent",'
    '"startTime":[1786813565,509000000],"endTime":[1786816881,389927866],"attributes":{'
    f'"gen_ai.operation.name":"invoke_agent","gen_ai.conversation.id":"{SESSION}"}}}}'
)
METRIC = (
    '{"type":"metric","name":"github.copilot.tool.call.count","unit":"{call}","dataPoints":[{'
    '"attributes":{"gen_ai.tool.name":"view","success":true},"value":1}]}'
)
#: The whole of aiusage-core's otel-1.0.82.jsonl (CLI 1.0.82, no parent, no cache write).
CLI_1_0_82 = (
    '{"type":"span","traceId":"11111111111111111111111111111111","spanId":"2222222222222222",'
    '"name":"chat auto","startTime":[1788188107,432000000],"endTime":[1788188110,168000000],'
    '"attributes":{"gen_ai.operation.name":"chat","gen_ai.provider.name":"github",'
    '"gen_ai.request.model":"auto","gen_ai.response.model":"mai-code-1.1-flash",'
    '"gen_ai.response.id":"response-sanitized",'
    f'"gen_ai.conversation.id":"{SESSION}",'
    '"gen_ai.usage.cache_read.input_tokens":5888,"gen_ai.usage.input_tokens":15987,'
    '"gen_ai.usage.output_tokens":77,"gen_ai.usage.reasoning.output_tokens":64,'
    '"github.copilot.nano_aiu":222996000}}'
)


def _export(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "otel.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_otel_reads_main_and_sub_agent_calls(tmp_path: Path) -> None:
    export = _export(
        tmp_path, SUB_AGENT_CHAT, MAIN_CHAT, METRIC, MAIN_AGENT, "", TASK_TOOL, SUB_AGENT
    )
    usage, issues = read_otel_export(export)
    assert usage.schema == pl.Schema(OBSERVED)
    assert usage.select(
        "source_line", "seq", "agent_id", "parent_tool_call_id", "model", "input_tokens"
    ).rows() == [
        (2, 0, None, None, "claude-haiku-4.5", 19335),
        (1, 1, "call_0024", "call_0024", "gpt-5-mini", 12112),
    ]
    main = usage.row(0, named=True)
    assert main == {
        "source_file": str(export),
        "source_line": 2,
        "session_id": SESSION,
        "seq": 0,
        "agent_id": None,
        "parent_tool_call_id": None,
        "model": "claude-haiku-4.5",
        "input_tokens": 19335,
        "output_tokens": 114,
        "cache_read_tokens": 8888,
        "cache_write_tokens": 10437,
        "reasoning_tokens": 53,
        "total_nano_aiu": "1451505000",
        "initiator": "user",
        "created_at": datetime(2026, 8, 15, 8, 59, 22, 288000, tzinfo=UTC),
        "token_details": None,
        "turn_index": None,
        "interaction_id": "int0001",
        "turn_id": "0",
        "finish_reason": "stop",
    }
    sub = usage.row(1, named=True)
    assert (sub["total_nano_aiu"], sub["cache_write_tokens"], sub["finish_reason"]) == (
        None,
        None,
        "error",
    )
    assert issues.rows() == [
        (
            str(export),
            1,
            "warning",
            "chat span: sub-agent call without github.copilot.turn_id; CLI 1.0.80 writes one "
            "such span per sub-agent run, which may sum several LLM calls",
        )
    ]


def test_otel_matches_the_session_store_row_for_the_same_call(
    live_store: Path, tmp_path: Path
) -> None:
    stored, _ = read_session_store(live_store)
    exported, _ = read_otel_export(_export(tmp_path, MAIN_CHAT))
    same = [
        "session_id",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "total_nano_aiu",
        "initiator",
    ]
    assert exported.select(same).row(0) == stored.select(same).row(0)


def test_otel_cli_1_0_82_line(tmp_path: Path) -> None:
    usage, issues = read_otel_export(_export(tmp_path, CLI_1_0_82))
    assert issues.is_empty()
    assert usage.select(
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "total_nano_aiu",
    ).row(0) == ("mai-code-1.1-flash", 15987, 77, 5888, None, 64, "222996000")


def test_otel_older_attribute_names_in_the_vscode_line_shape(tmp_path: Path) -> None:
    line = json.dumps(  # VS Code Copilot Chat's exporter writes spans without "type"
        {
            "resource": {"attributes": {"service.name": "copilot-chat", "session.id": "window"}},
            "spanId": "a",
            "name": "chat gpt-4o",
            "startTime": [1786784359, 0],
            "attributes": {
                "gen_ai.request.model": "gpt-4o",
                "copilot_chat.session_id": "s1",
                "gen_ai.usage.prompt_tokens": 1500,
                "gen_ai.usage.completion_tokens": 250,
                "gen_ai.usage.cache_read_input_tokens": 1000,
                "gen_ai.usage.cache_creation_input_tokens": 400,
                "gen_ai.usage.reasoning_tokens": 100,
            },
        }
    )
    usage, issues = read_otel_export(_export(tmp_path, line))
    assert issues.is_empty()
    assert usage.select(
        "session_id",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "created_at",
    ).row(0) == (
        "s1",
        "gpt-4o",
        1500,
        250,
        1000,
        400,
        100,
        datetime(2026, 8, 15, 8, 59, 19, tzinfo=UTC),
    )


def _kv(key: str, value: dict[str, object]) -> dict[str, object]:
    return {"key": key, "value": value}


OTLP = json.dumps(
    {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [_kv("github.copilot.session_id", {"stringValue": "s2"})]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "github.copilot"},
                        "spans": [
                            {
                                "traceId": "t",
                                "spanId": "c2",
                                "parentSpanId": "agent",
                                "name": "chat",
                                "startTimeUnixNano": "1786784370000000000",
                                "endTimeUnixNano": "1786784371000000000",
                                "attributes": [
                                    _kv("gen_ai.operation.name", {"stringValue": "chat"}),
                                    _kv("gen_ai.response.model", {"stringValue": "gpt-5-mini"}),
                                    _kv("gen_ai.usage.input_tokens", {"intValue": "2000"}),
                                    _kv("gen_ai.usage.output_tokens", {"intValue": 40}),
                                    _kv(
                                        "gen_ai.usage.cache_read_input_tokens",
                                        {"intValue": "1900"},
                                    ),
                                    _kv("github.copilot.nano_aiu", {"doubleValue": 250000000.0}),
                                    _kv("github.copilot.turn_id", {"intValue": "1"}),
                                    _kv(
                                        "gen_ai.response.finish_reasons",
                                        {"arrayValue": {"values": [{"stringValue": "stop"}]}},
                                    ),
                                ],
                            },
                            {
                                "traceId": "t",
                                "spanId": "c1",
                                "parentSpanId": "agent",
                                "name": "chat",
                                "startTimeUnixNano": 1786784360000000000,
                                "endTimeUnixNano": 1786784361000000000,
                                "attributes": [
                                    _kv("gen_ai.operation.name", {"stringValue": "chat"}),
                                    _kv("gen_ai.usage.input_tokens", {"intValue": "1000"}),
                                    _kv("github.copilot.nano_aiu", {"doubleValue": 0.5}),
                                ],
                            },
                            {"traceId": "t", "spanId": "agent", "name": "invoke_agent"},
                        ],
                    }
                ],
            }
        ]
    }
)


def test_otel_reads_otlp_json_lines(tmp_path: Path) -> None:
    usage, issues = read_otel_export(_export(tmp_path, OTLP))
    assert issues.is_empty()
    assert usage.select(
        "seq",
        "session_id",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "total_nano_aiu",
        "turn_id",
        "finish_reason",
    ).rows() == [
        (0, "s2", None, 1000, None, None, "0.5", None, None),
        (1, "s2", "gpt-5-mini", 2000, 40, 1900, "250000000", "1", "stop"),
    ]
    assert usage["source_line"].to_list() == [1, 1]


def test_otel_bad_lines_and_values_become_issues(tmp_path: Path) -> None:
    redacted = MAIN_CHAT.replace(
        '"gen_ai.usage.output_tokens":114', '"gen_ai.usage.output_tokens":"[REDACTED]"'
    )
    export = _export(
        tmp_path,
        '{"type":"span","traceId":"t"',  # torn last write
        "[1, 2]",
        '{"hello": "world"}',
        redacted,
        '{"type":"span","name":"chat x","attributes":[1]}',
        "\x00\x00",
    )
    usage, issues = read_otel_export(export)
    assert usage["source_line"].to_list() == [4]
    assert usage["output_tokens"].to_list() == [None]
    assert [(line, severity) for line, severity in issues.select("line", "severity").rows()] == [
        (1, "error"),
        (2, "error"),
        (3, "error"),
        (5, "error"),
        (6, "error"),
        (4, "warning"),
    ]
    assert "'[REDACTED]' is not a token count" in issues.filter(pl.col("line") == 4)["message"][0]


def test_otel_missing_file_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="COPILOT_OTEL"):
        read_otel_export(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------------------------------------
# Property: every line is a usage row, a skipped non-chat record, or an issue.

ATTRIBUTE_NAMES = [
    "gen_ai.operation.name",
    "gen_ai.conversation.id",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "github.copilot.nano_aiu",
    "github.copilot.turn_id",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.call.id",
]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
SPAN_LIKE = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["span", "metric", None]),
        "spanId": st.sampled_from(["a", "b", "c"]),
        "parentSpanId": st.sampled_from(["a", "b", "c", None]),
        "name": st.sampled_from(["chat m", "invoke_agent", "execute_tool task", "chat"]),
        "startTime": st.one_of(JSON_VALUES, st.tuples(st.integers(), st.integers())),
        "attributes": st.one_of(
            st.dictionaries(st.sampled_from(ATTRIBUTE_NAMES), JSON_VALUES, max_size=5),
            JSON_VALUES,
        ),
    }
)
OTLP_LIKE = st.one_of(
    st.builds(
        lambda spans: {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]},
        st.one_of(st.lists(SPAN_LIKE, max_size=3), JSON_VALUES),
    ),
    st.builds(lambda groups: {"resourceSpans": groups}, JSON_VALUES),
)
LINES = st.one_of(
    st.binary(max_size=60),
    st.one_of(JSON_VALUES, SPAN_LIKE, OTLP_LIKE).map(lambda value: json.dumps(value).encode()),
)


def _is_chat_free_record(line: bytes) -> bool:
    """A line the reader may skip: a metric or log record, or spans none of which is a chat."""
    record = json.loads(line)
    if not isinstance(record, dict):
        return False
    if record.get("type") == "metric" or {"resourceMetrics", "scopeMetrics", "hrTime"} & set(
        record
    ):
        return True
    if "resourceSpans" in record:
        spans = [
            span
            for group in record["resourceSpans"] or []
            for scope in group.get("scopeSpans") or []
            for span in scope.get("spans") or []
        ]
    elif record.get("type") == "span" or {"spanId", "name"} <= set(record):
        spans = [record]
    else:
        return False
    return not any(_operation(span) == "chat" for span in spans)


def _operation(span: dict[str, object]) -> str:
    attributes = span.get("attributes")
    operation = attributes.get("gen_ai.operation.name") if isinstance(attributes, dict) else None
    name = span.get("name")
    if isinstance(operation, str):
        return operation
    return name.split(" ", 1)[0] if isinstance(name, str) else ""


@given(st.one_of(st.binary(max_size=2000), st.lists(LINES, max_size=8).map(b"\n".join)))
def test_otel_every_line_is_a_row_a_skipped_record_or_an_issue(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "export.jsonl"
        path.write_bytes(content)
        usage, issues = read_otel_export(path)
    assert usage.schema == pl.Schema(OBSERVED)
    assert issues.schema == pl.Schema(ISSUES)
    accounted = set(usage["source_line"]) | set(issues["line"].drop_nulls())
    for number, line in enumerate(content.split(b"\n"), start=1):
        if line.strip() and number not in accounted:
            assert _is_chat_free_record(line), line
