"""Read one Copilot CLI ``events.jsonl`` (or legacy ``<sessionId>.jsonl``) into tables.

Returns the EVENTS, MODEL_METRICS and ISSUES tables of ``schema.py``. The reader is tolerant:
every line becomes an event or an error issue (with file and line), never an exception.

How it stays fast: the file is split into a polars string column and decoded with one
``str.json_decode`` against a struct of only the fields agentcost needs, every scalar typed as a
string so any JSON scalar fits. Lines that do not fit (invalid JSON, a torn last line, a field
with an unexpected shape) are found by bisection and handled one by one, so a single bad line
costs a few extra decodes, not a slow path for the whole file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from analytics.schema import EVENTS, ISSUES, MODEL_METRICS, conform, empty
from analytics.sources.copilot_event_types import KNOWN_EVENT_TYPES

S = pl.String()

#: Shapes of the token blocks Copilot writes (compaction, assistant.usage, shutdown).
_USAGE = pl.Struct({"totalNanoAiu": S})
_COMPACTION_TOKENS = pl.Struct(
    {
        "inputTokens": S,
        "outputTokens": S,
        "cacheReadTokens": S,
        "cacheWriteTokens": S,
        "model": S,
        "duration": S,
        "copilotUsage": _USAGE,
        # before CLI 1.0.36
        "input": S,
        "output": S,
        "cachedInput": S,
    }
)

#: The fields decoded from each line. Scalars are strings (any JSON scalar decodes as one) and
#: are cast afterwards, so a number written as a string, or an int as a float, never fails.
_DATA_FIELDS: dict[str, pl.DataType] = {
    name: S
    for name in (
        "sessionId",
        "copilotVersion",
        "selectedModel",
        "newModel",
        "chosenModel",
        "currentModel",
        "turnId",
        "interactionId",
        "model",
        "apiCallId",
        "requestId",
        "parentToolCallId",
        "outputTokens",
        "inputTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
        "reasoningTokens",
        "initiator",
        "duration",
        "content",
        "transformedContent",
        "reasoningText",
        "isAutopilotContinuation",
        "toolCallId",
        "toolName",
        "success",
        "agentName",
        "message",
        "reason",
        "summary",
        "shutdownType",
        "errorReason",
        "totalNanoAiu",
        "totalPremiumRequests",
        "totalApiDurationMs",
        "currentTokens",
        "systemTokens",
        "conversationTokens",
        "toolDefinitionsTokens",
        "preCompactionTokens",
        "postCompactionTokens",
        "chunkIndex",
    )
}
_DATA = pl.Struct(
    {
        **_DATA_FIELDS,
        "context": pl.Struct({"cwd": S, "repository": S, "gitRoot": S}),
        "copilotUsage": _USAGE,
        "compactionTokensUsed": _COMPACTION_TOKENS,
    }
)
_LINE = pl.Struct({"type": S, "id": S, "timestamp": S, "agentId": S, "ephemeral": S, "data": _DATA})

_TEXT_LIMIT = 500  # characters of free text (summaries, errors) kept per event


@dataclass(frozen=True)
class ParsedLog:
    """What one log file yields: its events, its shutdown per-model totals, its problems."""

    events: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame


def read_events(path: Path, session_hint: str) -> ParsedLog:
    """Parse one Copilot events file.

    ``session_hint`` names the session when the file has no ``session.start`` (a crash before
    the first line was flushed, or an excerpt): the session directory name or the file stem.
    An unreadable file yields one error issue and no events.
    """
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return ParsedLog(
            empty(EVENTS), empty(MODEL_METRICS), _issues([(file, None, "error", str(exc))])
        )
    lines, issues = _split_lines(raw, file)
    decoded, bad = _decode_tolerantly(lines)
    rescued, more_issues = _rescue(lines, bad, file)
    issues.extend(more_issues)
    rows = pl.concat([decoded, rescued]).sort("source_line")
    events, typed_issues = _to_events(rows, file, session_hint)
    events = _add_tool_sizes(events, lines)
    issues.extend(typed_issues)
    metrics, metric_issues = _model_metrics(lines, events)
    issues.extend(metric_issues)
    return ParsedLog(events, metrics, _issues(issues))


IssueRow = tuple[str, int | None, str, str]


def _issues(rows: list[IssueRow]) -> pl.DataFrame:
    """ISSUES table from (file, line, severity, message) tuples."""
    if not rows:
        return empty(ISSUES)
    files, lines, severities, messages = zip(*rows, strict=True)
    return conform(
        pl.DataFrame(
            {"file": files, "line": lines, "severity": severities, "message": messages},
            schema_overrides={"line": pl.Int64},
        ),
        ISSUES,
    )


def _split_lines(raw: bytes, file: str) -> tuple[pl.DataFrame, list[IssueRow]]:
    """Split raw bytes into numbered text lines; report NUL bytes, bad UTF-8, blank lines.

    Returns a frame (source_line, line) of the lines worth decoding. NUL bytes (left by a crash)
    are removed; a line that was only NULs or blank is reported and not decoded. Bytes that are
    not UTF-8 are replaced (U+FFFD) so the rest of the line is still analysed, with a warning.
    """
    issues: list[IssueRow] = []
    parts = raw.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    binary = pl.Series("raw", parts, dtype=pl.Binary)
    text = binary.cast(pl.String, strict=False)
    bad_utf8 = text.is_null() & binary.is_not_null()
    if bad_utf8.any():
        fixed = [parts[i].decode("utf-8", errors="replace") for i in bad_utf8.arg_true().to_list()]
        text = text.scatter(bad_utf8.arg_true(), fixed)
        issues.extend(
            (file, i + 1, "warning", "line is not valid UTF-8; bad bytes replaced")
            for i in bad_utf8.arg_true().to_list()
        )
    frame = pl.DataFrame({"source_line": pl.int_range(1, len(parts) + 1, eager=True), "line": text})
    frame = frame.with_columns(pl.col("source_line").cast(pl.Int64))
    has_nul = frame.filter(pl.col("line").str.contains("\x00", literal=True))
    if has_nul.height:
        frame = frame.with_columns(pl.col("line").str.replace_all("\x00", "", literal=True))
        issues.extend(
            (file, n, "warning", "NUL bytes removed (left by a crash)")
            for n in has_nul["source_line"].to_list()
        )
    blank = frame["line"].str.strip_chars().str.len_bytes() == 0
    issues.extend(
        (file, n, "warning", "blank line ignored")
        for n in frame.filter(blank)["source_line"].to_list()
    )
    return frame.filter(~blank).with_columns(pl.col("line").str.strip_chars_end("\r")), issues


def _decode_tolerantly(lines: pl.DataFrame) -> tuple[pl.DataFrame, list[int]]:
    """Decode every line that fits ``_LINE``; return them and the row positions that did not."""
    decoded: list[pl.DataFrame] = []
    bad: list[int] = []
    for start, stop in _good_ranges(lines["line"], 0, lines.height, bad):
        chunk = lines.slice(start, stop - start)
        decoded.append(
            chunk.select("source_line", pl.col("line").str.json_decode(_LINE).alias("e"))
        )
    if not decoded:
        return pl.DataFrame(schema={"source_line": pl.Int64, "e": _LINE}), bad
    return pl.concat(decoded), bad


def _good_ranges(
    series: pl.Series, start: int, stop: int, bad: list[int]
) -> Iterator[tuple[int, int]]:
    """Yield ranges of ``series`` that decode as ``_LINE``; append undecodable positions to bad.

    Bisection: a range that fails is split in two until the failing lines are isolated, so k
    bad lines cost O(k log n) decodes of shrinking ranges.
    """
    if start >= stop:
        return
    try:
        series.slice(start, stop - start).str.json_decode(_LINE)
    except pl.exceptions.PolarsError:
        if stop - start == 1:
            bad.append(start)
            return
        middle = (start + stop) // 2
        yield from _good_ranges(series, start, middle, bad)
        yield from _good_ranges(series, middle, stop, bad)
        return
    yield start, stop


def _rescue(lines: pl.DataFrame, bad: list[int], file: str) -> tuple[pl.DataFrame, list[IssueRow]]:
    """Handle the lines bisection isolated: report invalid JSON, repair unexpected shapes.

    A valid JSON object whose fields have shapes agentcost does not expect keeps its event: the
    odd fields are dropped (with a warning naming them). Anything else is an error issue.
    """
    issues: list[IssueRow] = []
    repaired: list[tuple[int, str]] = []
    for position in bad:
        number = int(lines["source_line"][position])
        line = str(lines["line"][position])
        try:
            obj = json.loads(line)
        except ValueError as exc:
            torn = " (truncated line?)" if not line.rstrip().endswith("}") else ""
            issues.append((file, number, "error", f"invalid JSON{torn}: {exc}"))
            continue
        if not isinstance(obj, dict):
            issues.append((file, number, "error", f"not a JSON object: {type(obj).__name__}"))
            continue
        dropped: list[str] = []
        clean = _fit(obj, _LINE, "", dropped)
        if dropped:
            fields = ", ".join(dropped)
            issues.append((file, number, "warning", f"unexpected shape, ignored: {fields}"))
        repaired.append((number, json.dumps(clean)))
    frame = pl.DataFrame(
        {"source_line": [n for n, _ in repaired], "line": [t for _, t in repaired]},
        schema={"source_line": pl.Int64, "line": pl.String},
    )
    return frame.select("source_line", pl.col("line").str.json_decode(_LINE).alias("e")), issues


def _fit(
    value: dict[str, Any], dtype: pl.Struct, prefix: str, dropped: list[str]
) -> dict[str, Any]:
    """Keep the fields of ``value`` that match ``dtype``'s shape; name the others in dropped."""
    kept: dict[str, Any] = {}
    for field in dtype.fields:
        if field.name not in value:
            continue
        item = value[field.name]
        if isinstance(field.dtype, pl.Struct):
            if isinstance(item, dict):
                kept[field.name] = _fit(item, field.dtype, f"{prefix}{field.name}.", dropped)
                continue
            if item is None:
                continue
        elif not isinstance(item, dict | list):
            kept[field.name] = item
            continue
        dropped.append(prefix + field.name)
    return kept


def _int(expr: pl.Expr) -> pl.Expr:
    """A decoded scalar as an integer (``"12"``, ``12`` and ``12.0`` all give 12)."""
    return expr.cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)


def _to_events(
    rows: pl.DataFrame, file: str, session_hint: str
) -> tuple[pl.DataFrame, list[IssueRow]]:
    """Flatten decoded lines into the EVENTS contract; report lines without a type."""
    flat = rows.select("source_line", pl.col("e").struct.unnest()).unnest("data")
    issues: list[IssueRow] = [
        (file, n, "error", "event has no 'type'")
        for n in flat.filter(pl.col("type").is_null())["source_line"].to_list()
    ]
    flat = flat.filter(pl.col("type").is_not_null())
    unknown = (
        flat.filter(~pl.col("type").is_in(list(KNOWN_EVENT_TYPES)))
        .group_by("type")
        .agg(pl.col("source_line").min(), pl.len())
        .sort("source_line")
    )
    issues.extend(
        (file, first, "warning", f"unknown event type {kind!r} ({count} lines) kept, not analysed")
        for kind, first, count in unknown.iter_rows()
    )
    bad_time = flat.filter(pl.col("timestamp").is_not_null()).select(
        "source_line", pl.col("timestamp").str.to_datetime(time_zone="UTC", strict=False).alias("t")
    )
    issues.extend(
        (file, n, "warning", "timestamp missing or not ISO-8601")
        for n in flat.filter(pl.col("timestamp").is_null())["source_line"].to_list()
        + bad_time.filter(pl.col("t").is_null())["source_line"].to_list()
    )
    kind = pl.col("type")
    session_id = flat.filter(kind == "session.start")["sessionId"].drop_nulls()
    usage = pl.col("compactionTokensUsed")
    events = flat.select(
        pl.lit(file).alias("source_file"),
        "source_line",
        pl.lit(session_id[0] if session_id.len() else session_hint).alias("session_id"),
        pl.col("source_line").alias("event_seq"),
        (kind == "session.resume").cum_sum().alias("process_index"),
        kind.alias("event_type"),
        pl.col("id").alias("event_id"),
        pl.col("timestamp").str.to_datetime(time_zone="UTC", strict=False).alias("timestamp"),
        pl.col("agentId").alias("agent_id"),
        pl.col("parentToolCallId").alias("parent_tool_call_id"),
        pl.col("turnId").alias("turn_id"),
        pl.col("interactionId").alias("interaction_id"),
        pl.coalesce(
            "model",
            "newModel",
            "chosenModel",
            "currentModel",
            "selectedModel",
            usage.struct["model"],
        ).alias("model"),
        pl.coalesce("apiCallId", "requestId").alias("api_call_id"),
        pl.col("toolCallId").alias("tool_call_id"),
        pl.coalesce("toolName", "agentName").alias("tool_name"),
        (pl.col("success").str.to_lowercase() == "true").alias("success"),
        _int(
            pl.coalesce(
                pl.col("outputTokens"), usage.struct["outputTokens"], usage.struct["output"]
            )
        ).alias("output_tokens"),
        _content_bytes(kind).alias("content_bytes"),
        (pl.col("isAutopilotContinuation").str.to_lowercase() == "true")
        .fill_null(False)
        .alias("is_autopilot"),
        pl.coalesce("summary", "message", "reason", "errorReason", "shutdownType")
        .str.slice(0, _TEXT_LIMIT)
        .alias("text"),
        _int(
            pl.coalesce(pl.col("inputTokens"), usage.struct["inputTokens"], usage.struct["input"])
        ).alias("input_tokens"),
        _int(
            pl.coalesce(
                pl.col("cacheReadTokens"),
                usage.struct["cacheReadTokens"],
                usage.struct["cachedInput"],
            )
        ).alias("cache_read_tokens"),
        _int(pl.coalesce(pl.col("cacheWriteTokens"), usage.struct["cacheWriteTokens"])).alias(
            "cache_write_tokens"
        ),
        _int(pl.col("reasoningTokens")).alias("reasoning_tokens"),
        pl.coalesce(
            pl.col("copilotUsage").struct["totalNanoAiu"],
            usage.struct["copilotUsage"].struct["totalNanoAiu"],
        ).alias("nano_aiu"),
        pl.col("initiator"),
        _int(pl.coalesce(pl.col("duration"), usage.struct["duration"])).alias("duration_ms"),
        *(
            _int(pl.col(src)).alias(dst)
            for src, dst in (
                ("currentTokens", "current_tokens"),
                ("systemTokens", "system_tokens"),
                ("conversationTokens", "conversation_tokens"),
                ("toolDefinitionsTokens", "tool_definitions_tokens"),
                ("preCompactionTokens", "pre_compaction_tokens"),
                ("postCompactionTokens", "post_compaction_tokens"),
                ("totalApiDurationMs", "total_api_duration_ms"),
            )
        ),
        pl.col("context").struct["cwd"].alias("cwd"),
        pl.coalesce(
            pl.col("context").struct["repository"], pl.col("context").struct["gitRoot"]
        ).alias("repository"),
        pl.col("copilotVersion").alias("copilot_version"),
        pl.col("shutdownType").alias("status_detail"),
        pl.col("totalNanoAiu").alias("total_nano_aiu"),
        pl.col("totalPremiumRequests").alias("total_premium_requests"),
    )
    return conform(events, EVENTS), issues


def _content_bytes(kind: pl.Expr) -> pl.Expr:
    """Bytes of text this event adds to the conversation the model re-reads on every call.

    Tool results and tool requests are measured later, from the raw line (their shapes vary);
    here: user, system and assistant text and injected skill content.
    """
    text = pl.coalesce("transformedContent", "content").str.len_bytes()
    reasoning = pl.col("reasoningText").str.len_bytes().fill_null(0)
    return (
        pl.when(kind.is_in(["user.message", "system.message", "skill.invoked"]))
        .then(text)
        .when(kind == "assistant.message")
        .then(pl.col("content").str.len_bytes().fill_null(0) + reasoning)
        .otherwise(None)
        .cast(pl.Int64)
    )


def _add_tool_sizes(events: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """Add tool results and tool requests to ``content_bytes``.

    Their shapes vary by CLI version (a result is a string or ``{content, detailedContent}``;
    only ``content`` is sent to the model), so they are read with JSON paths, and only on the
    lines of those two event types.
    """
    kinds = ["tool.execution_complete", "assistant.message"]
    sized = (
        events.filter(pl.col("event_type").is_in(kinds))
        .select("source_line", "event_type")
        .join(lines, on="source_line")
        .select(
            "source_line",
            pl.when(pl.col("event_type") == "tool.execution_complete")
            .then(
                pl.coalesce(
                    pl.col("line").str.json_path_match("$.data.result.content"),
                    pl.col("line").str.json_path_match("$.data.result"),
                ).str.len_bytes()
            )
            .otherwise(pl.col("line").str.json_path_match("$.data.toolRequests").str.len_bytes())
            .cast(pl.Int64)
            .alias("extra_bytes"),
        )
    )
    return (
        events.join(sized, on="source_line", how="left")
        .with_columns(
            pl.when(pl.col("extra_bytes").is_not_null())
            .then(pl.col("content_bytes").fill_null(0) + pl.col("extra_bytes"))
            .otherwise(pl.col("content_bytes"))
            .alias("content_bytes")
        )
        .drop("extra_bytes")
    )


def _model_metrics(
    lines: pl.DataFrame, events: pl.DataFrame
) -> tuple[pl.DataFrame, list[IssueRow]]:
    """Per-model totals of every ``session.shutdown``, and tool-result/request sizes.

    ``modelMetrics`` is keyed by model name, which no fixed struct can describe, so the few
    shutdown lines are decoded with ``json`` (one per process, never a hot loop).
    """
    shutdowns = events.filter(pl.col("event_type") == "session.shutdown").select(
        "source_file", "source_line", "session_id", "process_index"
    )
    if not shutdowns.height:
        return empty(MODEL_METRICS), []
    raw = shutdowns.join(lines, on="source_line").with_columns(
        pl.col("line").str.json_path_match("$.data.modelMetrics").alias("mm")
    )
    rows: list[dict[str, Any]] = []
    issues: list[IssueRow] = []
    for file, line, session, process, metrics in raw.select(
        "source_file", "source_line", "session_id", "process_index", "mm"
    ).iter_rows():
        if metrics is None:
            continue
        try:
            per_model = json.loads(metrics, parse_float=Decimal)
        except ValueError:
            per_model = None
        if not isinstance(per_model, dict):
            issues.append(
                (file, line, "warning", "shutdown modelMetrics is not an object; ignored")
            )
            continue
        for model, values in per_model.items():
            if not isinstance(values, dict):
                issues.append((file, line, "warning", f"modelMetrics[{model!r}] is not an object"))
                continue
            requests = _object(values.get("requests"))
            usage = _object(values.get("usage"))
            rows.append(
                {
                    "source_file": file,
                    "source_line": line,
                    "session_id": session,
                    "process_index": process,
                    "model": model,
                    "requests_count": _whole(requests.get("count")),
                    "requests_cost": _text(requests.get("cost")),
                    "input_tokens": _whole(usage.get("inputTokens")),
                    "output_tokens": _whole(usage.get("outputTokens")),
                    "cache_read_tokens": _whole(usage.get("cacheReadTokens")),
                    "cache_write_tokens": _whole(usage.get("cacheWriteTokens")),
                    "reasoning_tokens": _whole(usage.get("reasoningTokens")),
                    "total_nano_aiu": _text(values.get("totalNanoAiu")),
                }
            )
    if not rows:
        return empty(MODEL_METRICS), issues
    return conform(pl.DataFrame(rows, schema=dict(MODEL_METRICS)), MODEL_METRICS), issues


def _object(value: object) -> dict[str, Any]:
    """A JSON object, or an empty one when the value is anything else."""
    return value if isinstance(value, dict) else {}


def _whole(value: object) -> int | None:
    """A JSON number as an int, or None when absent or not a whole number."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        return None
    return int(value) if value == int(value) else None


def _text(value: object) -> str | None:
    """A JSON number as its exact decimal text (``305426000.0`` -> ``"305426000"``), or None.

    Numbers arrive as ``int`` or ``Decimal`` (never float), so no digit is lost.
    """
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        return None
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return str(int(value))
    return str(value)
