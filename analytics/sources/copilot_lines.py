"""Decode pieces of Copilot CLI event logs (bytes of whole lines) into tables, in local form.

Every line becomes an event or an error issue (with its line), never an exception. Lines are
held in a polars string column and decoded with one ``str.json_decode`` against a struct of only
the fields agentcost needs, every scalar typed as a string so any JSON scalar fits. Lines that do
not fit (invalid JSON, a torn last line, a field with an unexpected shape) are found by
bisection and handled one by one, so a single bad line costs a few extra decodes, not a slow
path for the whole batch.

*Local* form: line numbers, byte offsets and ``process_index`` count from the start of each
piece, and ``session_id`` is set on ``session.start`` lines only; ``copilot_events.place`` adds
each piece's offsets within its file and gives every line its session. ``analytics.cache``
stores exactly these local tables.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import polars as pl

from analytics.schema import EVENTS, ISSUES, MODEL_METRICS, conform, empty

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
        "totalTokens",
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
        "infoType",
        "errorType",
        "eventsFileSizeBytes",
    )
}
#: ``session.usage_record`` (CLI 1.0.94+): one call's exact usage and bill, under ``data.usage``.
_USAGE_RECORD = pl.Struct(
    {
        **{
            name: S
            for name in (
                "model",
                "inputTokens",
                "outputTokens",
                "cacheReadTokens",
                "cacheWriteTokens",
                "reasoningTokens",
                "initiator",
                "interactionType",
                "isByok",
                "apiCallId",
                "duration",
            )
        },
        "provider": pl.Struct({"id": S}),
        "accounting": pl.Struct({"usageId": S}),
        "copilotUsage": _USAGE,
    }
)
_DATA = pl.Struct(
    {
        **_DATA_FIELDS,
        "context": pl.Struct({"cwd": S, "repository": S, "gitRoot": S}),
        "copilotUsage": _USAGE,
        "compactionTokensUsed": _COMPACTION_TOKENS,
        "usage": _USAGE_RECORD,
    }
)
_LINE = pl.Struct({"type": S, "id": S, "timestamp": S, "agentId": S, "ephemeral": S, "data": _DATA})

_TEXT_LIMIT = 500  # characters of free text (summaries, errors) kept per event


@dataclass(frozen=True)
class Piece:
    """Bytes of one file parsed as a unit: whole lines, or the file's unterminated tail."""

    id: int
    data: bytes


@dataclass(frozen=True)
class PieceInfo:
    """What placing a parsed piece in its file needs.

    ``lines``, ``resumes`` (its ``session.resume`` events) and ``size`` (its bytes) offset the
    line numbers, ``process_index`` and byte offsets of the pieces after it; ``session`` is the
    session id of its first ``session.start``, if any (lines of a file before its first
    ``session.start`` belong to that session, else to the hint).
    """

    id: int
    lines: int
    resumes: int
    session: str | None
    size: int


#: Local form: the contracts plus the piece each row came from; file-level columns
#: (``source_file``, ``session_id``, ``file``) stay null until ``place``.
LOCAL_EVENTS: dict[str, pl.DataType] = {"piece": pl.Int64(), **EVENTS}
LOCAL_MODEL_METRICS: dict[str, pl.DataType] = {"piece": pl.Int64(), **MODEL_METRICS}
LOCAL_ISSUES: dict[str, pl.DataType] = {"piece": pl.Int64(), **ISSUES}


@dataclass(frozen=True)
class LocalTables:
    """Parsed pieces in local form (see the module docstring)."""

    events: pl.DataFrame
    model_metrics: pl.DataFrame
    issues: pl.DataFrame
    infos: tuple[PieceInfo, ...] = ()

    def only(self, pieces: Iterable[int]) -> LocalTables:
        """The rows of ``pieces`` alone (``infos`` unchanged)."""
        keep = pl.col("piece").is_in(pl.Series(list(pieces), dtype=pl.Int64).implode())
        return LocalTables(
            self.events.filter(keep),
            self.model_metrics.filter(keep),
            self.issues.filter(keep),
            self.infos,
        )

    @staticmethod
    def stack(parts: list[LocalTables]) -> LocalTables:
        """All pieces of ``parts`` in one set of contiguous tables; empties ``parts``.

        Each column is copied into one buffer and released from the parts before the next one
        is copied, so stacking needs room for one more column, not a second copy of the tables
        (when the caller holds no other reference to the parts).
        """
        infos = tuple(info for part in parts for info in part.infos)
        frames = {
            name: [getattr(part, name) for part in parts]
            for name in ("events", "model_metrics", "issues")
        }
        parts.clear()
        return LocalTables(
            _stack_releasing(frames.pop("events"), LOCAL_EVENTS),
            _stack_releasing(frames.pop("model_metrics"), LOCAL_MODEL_METRICS),
            _stack_releasing(frames.pop("issues"), LOCAL_ISSUES),
            infos,
        )


def _stack_releasing(frames: list[pl.DataFrame], contract: dict[str, pl.DataType]) -> pl.DataFrame:
    """Concatenate ``frames`` into one single-chunk frame, column by column, emptying the list."""
    if not frames:
        return empty(contract)
    names = frames[0].columns
    held = [dict(zip(frame.columns, frame.get_columns(), strict=True)) for frame in frames]
    frames.clear()
    return pl.DataFrame(
        [pl.concat([columns.pop(name) for columns in held], rechunk=True) for name in names]
    )


LocalIssue = tuple[int, int, str, str]  # (piece, line within the piece, severity, message)


def _local_issues(rows: Sequence[LocalIssue]) -> pl.DataFrame:
    """Local ISSUES table from (piece, line, severity, message) tuples."""
    return issue_table(rows, "piece", LOCAL_ISSUES)


def issue_table(
    rows: Sequence[tuple[Any, int | None, str, str]], where: str, contract: dict[str, pl.DataType]
) -> pl.DataFrame:
    """An issues table from (file or piece, line, severity, message) tuples."""
    if not rows:
        return empty(contract)
    places, lines, severities, messages = zip(*rows, strict=True)
    return conform(
        pl.DataFrame(
            {where: places, "line": lines, "severity": severities, "message": messages},
            schema_overrides={where: contract[where], "line": pl.Int64},
        ),
        contract,
    )


def parse_pieces(pieces: Sequence[Piece]) -> LocalTables:
    """Parse pieces (of any files) together into local tables."""
    lines, counts, issues = _split_lines(pieces)
    decoded, bad = _decode_tolerantly(lines)
    rescued, more_issues = _rescue(lines, bad)
    issues.extend(more_issues)
    rows = (
        pl.concat([decoded, rescued])
        .join(lines.select("row", "piece", "source_line", "byte_offset"), on="row")
        .sort("row")
    )
    events, typed_issues = _to_events(rows)
    events = _add_tool_sizes(events, lines)
    issues.extend(typed_issues)
    metrics, metric_issues = _model_metrics(lines, events)
    issues.extend(metric_issues)
    infos = _piece_infos(pieces, counts, events)
    return LocalTables(conform(events, LOCAL_EVENTS), metrics, _local_issues(issues), infos)


def _piece_infos(
    pieces: Sequence[Piece], counts: Sequence[int], events: pl.DataFrame
) -> tuple[PieceInfo, ...]:
    """Line count, resume count and first session id of each piece."""
    per_piece = events.group_by("piece").agg(
        (pl.col("event_type") == "session.resume").sum().alias("resumes"),
        pl.col("_start_session").drop_nulls().first().alias("session"),
    )
    found = {piece: (resumes, session) for piece, resumes, session in per_piece.iter_rows()}
    return tuple(
        PieceInfo(p.id, n, *found.get(p.id, (0, None)), len(p.data))
        for p, n in zip(pieces, counts, strict=True)
    )


def _split_lines(pieces: Sequence[Piece]) -> tuple[pl.DataFrame, list[int], list[LocalIssue]]:
    """Split pieces into numbered text lines; report NUL bytes, bad UTF-8, blank lines.

    Returns a frame (row, piece, source_line, byte_offset, line) of the lines worth decoding
    (``byte_offset``: the line's first byte within its piece), and each
    piece's line count (an unterminated last line counts). NUL bytes
    (left by a crash) are removed; a line that was only NULs or blank is reported and not
    decoded. Bytes that are not UTF-8 are replaced (U+FFFD) so the rest of the line is still
    analysed, with a warning.
    """
    issues: list[LocalIssue] = []
    parts: list[bytes] = []
    counts: list[int] = []
    for piece in pieces:
        split = piece.data.split(b"\n")
        if split and split[-1] == b"":
            split.pop()
        counts.append(len(split))
        parts.extend(split)
    raw = pl.Series("line", parts, dtype=pl.Binary)
    sizes = raw.bin.size().cast(pl.Int64) + 1
    try:
        text = raw.cast(pl.String)
    except pl.exceptions.PolarsError:  # bytes that are not UTF-8 somewhere: find and fix them
        text = pl.Series("line", _repair_utf8(parts, pieces, counts, issues), dtype=pl.String)
    del raw
    numbering = (
        pl.DataFrame(
            {"piece": [p.id for p in pieces], "n": counts},
            schema={"piece": pl.Int64, "n": pl.Int64},
        )
        .filter(pl.col("n") > 0)
        .select(
            pl.col("piece").repeat_by("n").explode(),
            pl.int_ranges(1, pl.col("n") + 1, dtype=pl.Int64).explode().alias("source_line"),
        )
    )
    frame = numbering.with_columns(
        (sizes.cum_sum() - sizes).alias("byte_offset"),
        text,
        pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
    ).with_columns(pl.col("byte_offset") - pl.col("byte_offset").first().over("piece"))
    has_nul = frame.filter(pl.col("line").str.contains("\x00", literal=True))
    if has_nul.height:
        frame = frame.with_columns(pl.col("line").str.replace_all("\x00", "", literal=True))
        issues.extend(
            (piece, n, "warning", "NUL bytes removed (left by a crash)")
            for piece, n in has_nul.select("piece", "source_line").iter_rows()
        )
    # Regexes, not strip_chars: same whitespace (Unicode White_Space), but no copy of the text.
    blank = frame["line"].str.contains(r"^\s*$")
    if blank.any():
        issues.extend(
            (piece, n, "warning", "blank line ignored")
            for piece, n in frame.filter(blank).select("piece", "source_line").iter_rows()
        )
        frame = frame.filter(~blank)
    if frame["line"].str.ends_with("\r").any():
        frame = frame.with_columns(pl.col("line").str.strip_chars_end("\r"))
    return frame, counts, issues


def _repair_utf8(
    lines: list[bytes], pieces: Sequence[Piece], counts: list[int], issues: list[LocalIssue]
) -> list[str]:
    """Lines as text, bytes that are not UTF-8 replaced (U+FFFD), each such line reported."""
    texts: list[str] = []
    for piece, count in zip(pieces, counts, strict=True):
        first = len(texts)
        for number, line in enumerate(lines[first : first + count], start=1):
            text = line.decode("utf-8", errors="replace")
            if "\ufffd" in text and text.encode() != line:
                issues.append(
                    (piece.id, number, "warning", "line is not valid UTF-8; bad bytes replaced")
                )
            texts.append(text)
    return texts


def _decode_tolerantly(lines: pl.DataFrame) -> tuple[pl.DataFrame, list[int]]:
    """Decode every line that fits ``_LINE``; return them and the ``row`` of those that did not.

    A line that cannot be a JSON object (it does not end with ``}``, and is not ``null``) is
    set aside at once: a torn last line is common and would otherwise cost a bisection.
    """
    text = pl.col("line")
    hopeless = ~text.str.contains(r"\}\s*$|^\s*null\s*$")
    candidates = lines.filter(~hopeless)
    bad = lines.filter(hopeless)["row"].to_list()
    failed: list[int] = []
    decoded = [
        candidates.slice(start, values.len()).select("row").with_columns(values.alias("e"))
        for start, values in _good_ranges(candidates["line"], 0, candidates.height, failed)
    ]
    bad.extend(candidates["row"].gather(failed).to_list())
    if not decoded:
        return pl.DataFrame(schema={"row": pl.Int64, "e": _LINE}), bad
    return pl.concat(decoded), bad


def _good_ranges(
    series: pl.Series, start: int, stop: int, bad: list[int]
) -> Iterator[tuple[int, pl.Series]]:
    """Yield (start, decoded values) of ranges of ``series`` that decode as ``_LINE``; append
    the positions that do not to ``bad``.

    Bisection: a range that fails is split in two until the failing lines are isolated, so k
    bad lines cost O(k log n) decodes of shrinking ranges.
    """
    if start >= stop:
        return
    try:
        values = series.slice(start, stop - start).str.json_decode(_LINE)
    except pl.exceptions.PolarsError:
        if stop - start == 1:
            bad.append(start)
            return
        middle = (start + stop) // 2
        yield from _good_ranges(series, start, middle, bad)
        yield from _good_ranges(series, middle, stop, bad)
        return
    yield start, values


def _rescue(lines: pl.DataFrame, bad: list[int]) -> tuple[pl.DataFrame, list[LocalIssue]]:
    """Handle the lines (by ``row``) that did not decode: report invalid JSON, repair shapes.

    A valid JSON object whose fields have shapes agentcost does not expect keeps its event: the
    odd fields are dropped (with a warning naming them). Anything else is an error issue.
    """
    issues: list[LocalIssue] = []
    repaired: list[tuple[int, str]] = []
    suspects = lines.filter(pl.col("row").is_in(bad)).select("row", "piece", "source_line", "line")
    for row, piece, number, line in suspects.iter_rows():
        try:
            obj = json.loads(line)
        except ValueError as exc:
            torn = " (truncated line?)" if not line.rstrip().endswith("}") else ""
            issues.append((piece, number, "error", f"invalid JSON{torn}: {exc}"))
            continue
        if not isinstance(obj, dict):
            issues.append((piece, number, "error", f"not a JSON object: {type(obj).__name__}"))
            continue
        dropped: list[str] = []
        clean = _fit(obj, _LINE, "", dropped)
        if dropped:
            fields = ", ".join(dropped)
            issues.append((piece, number, "warning", f"unexpected shape, ignored: {fields}"))
        repaired.append((row, json.dumps(clean)))
    frame = pl.DataFrame(
        {"row": [n for n, _ in repaired], "line": [t for _, t in repaired]},
        schema={"row": pl.Int64, "line": pl.String},
    )
    return frame.select("row", pl.col("line").str.json_decode(_LINE).alias("e")), issues


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


def _to_events(rows: pl.DataFrame) -> tuple[pl.DataFrame, list[LocalIssue]]:
    """Flatten decoded lines into local EVENTS; report lines without a type or time.

    Besides the contract's columns the result keeps ``row`` (the line's position in the
    batch) and ``_start_session`` (the ``sessionId`` of a ``session.start``).
    """
    flat = rows.select(
        "row", "piece", "source_line", "byte_offset", pl.col("e").struct.unnest()
    ).unnest("data")
    where = ["piece", "source_line"]
    issues: list[LocalIssue] = [
        (piece, n, "error", "event has no 'type'")
        for piece, n in flat.filter(pl.col("type").is_null()).select(where).iter_rows()
    ]
    flat = flat.filter(pl.col("type").is_not_null())
    flat = flat.with_columns(
        pl.col("timestamp").str.to_datetime(time_zone="UTC", strict=False).alias("_time")
    )
    bad_time = pl.col("_time").is_null()
    issues.extend(
        (piece, n, "warning", "timestamp missing or not ISO-8601")
        for piece, n in flat.filter(bad_time).select(where).iter_rows()
    )
    kind = pl.col("type")
    usage = pl.col("compactionTokensUsed")
    record = pl.col("usage")
    events = flat.select(
        "row",
        "piece",
        "source_line",
        "byte_offset",
        pl.when(kind == "session.start").then("sessionId").alias("_start_session"),
        pl.col("source_line").alias("event_seq"),
        (kind == "session.resume").cum_sum().over("piece").alias("process_index"),
        kind.alias("event_type"),
        pl.col("id").alias("event_id"),
        pl.col("_time").alias("timestamp"),
        pl.col("agentId").alias("agent_id"),
        pl.col("parentToolCallId").alias("parent_tool_call_id"),
        pl.col("turnId").alias("turn_id"),
        pl.col("interactionId").alias("interaction_id"),
        pl.coalesce(
            "model",
            record.struct["model"],
            "newModel",
            "chosenModel",
            "currentModel",
            "selectedModel",
            usage.struct["model"],
        ).alias("model"),
        pl.coalesce("apiCallId", "requestId", record.struct["apiCallId"]).alias("api_call_id"),
        pl.col("toolCallId").alias("tool_call_id"),
        pl.coalesce("toolName", "agentName").alias("tool_name"),
        (pl.col("success").str.to_lowercase() == "true").alias("success"),
        _int(
            pl.coalesce(
                pl.col("outputTokens"),
                record.struct["outputTokens"],
                usage.struct["outputTokens"],
                usage.struct["output"],
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
            pl.coalesce(
                pl.col("inputTokens"),
                record.struct["inputTokens"],
                usage.struct["inputTokens"],
                usage.struct["input"],
            )
        ).alias("input_tokens"),
        _int(
            pl.coalesce(
                pl.col("cacheReadTokens"),
                record.struct["cacheReadTokens"],
                usage.struct["cacheReadTokens"],
                usage.struct["cachedInput"],
            )
        ).alias("cache_read_tokens"),
        _int(
            pl.coalesce(
                pl.col("cacheWriteTokens"),
                record.struct["cacheWriteTokens"],
                usage.struct["cacheWriteTokens"],
            )
        ).alias("cache_write_tokens"),
        _int(pl.coalesce(pl.col("reasoningTokens"), record.struct["reasoningTokens"])).alias(
            "reasoning_tokens"
        ),
        _int(pl.col("totalTokens")).alias("total_tokens"),
        pl.coalesce(
            pl.col("copilotUsage").struct["totalNanoAiu"],
            record.struct["copilotUsage"].struct["totalNanoAiu"],
            usage.struct["copilotUsage"].struct["totalNanoAiu"],
        ).alias("nano_aiu"),
        pl.coalesce("initiator", record.struct["initiator"]).alias("initiator"),
        _int(
            pl.coalesce(pl.col("duration"), record.struct["duration"], usage.struct["duration"])
        ).alias("duration_ms"),
        record.struct["accounting"].struct["usageId"].alias("usage_id"),
        record.struct["interactionType"].alias("interaction_type"),
        (record.struct["isByok"].str.to_lowercase() == "true").alias("is_byok"),
        record.struct["provider"].struct["id"].alias("provider"),
        pl.col("infoType").alias("info_type"),
        pl.col("errorType").alias("error_type"),
        _int(pl.col("eventsFileSizeBytes")).alias("events_file_size_bytes"),
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
    return events.with_columns(
        pl.col("process_index").cast(pl.Int32),
        pl.lit(None, pl.String).alias("source_file"),
        pl.col("_start_session").alias("session_id"),
    ), issues


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


#: Where a line's price list (``tokenDetails``) sits, by event type (see ``_matched``).
_TOKEN_DETAILS = {
    "session.usage_record": ("$.data.usage.copilotUsage.tokenDetails",),
    "session.compaction_complete": ("$.data.compactionTokensUsed.copilotUsage.tokenDetails",),
    "session.shutdown": ("$.data.tokenDetails", "$.data.copilotUsage.tokenDetails"),
}


def _add_tool_sizes(events: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """Add tool results and tool requests to ``content_bytes``; keep price lists as text.

    Their shapes vary by CLI version (a result is a string or ``{content, detailedContent}``;
    only ``content`` is sent to the model), so they are read with JSON paths, and only on the
    lines of the event types that carry them. A value that is not a string is measured (and
    kept) as compact JSON, as ``str.json_path_match`` renders it. ``tool_request_bytes`` is the
    tool-request part of an assistant message (JSON arguments, a kind of content of its own).
    """
    results = _matched(
        events, lines, "tool.execution_complete", "$.data.result.content", "$.data.result"
    ).select("row", _bytes("text").alias("result_bytes"))
    requests = _matched(events, lines, "assistant.message", "$.data.toolRequests").select(
        "row", _bytes("text").alias("tool_request_bytes")
    )
    details = pl.concat(
        [_matched(events, lines, kind, *paths) for kind, paths in _TOKEN_DETAILS.items()]
    ).rename({"text": "token_details"})
    extra = pl.sum_horizontal("result_bytes", "tool_request_bytes")
    return (
        events.join(results, on="row", how="left")
        .join(requests, on="row", how="left")
        .join(details, on="row", how="left")
        .with_columns(
            pl.when(
                pl.col("result_bytes").is_not_null() | pl.col("tool_request_bytes").is_not_null()
            )
            .then(pl.col("content_bytes").fill_null(0) + extra)
            .otherwise(pl.col("content_bytes"))
            .alias("content_bytes")
        )
        .drop("result_bytes")
    )


def _bytes(column: str) -> pl.Expr:
    return pl.col(column).str.len_bytes().cast(pl.Int64)


def _matched(events: pl.DataFrame, lines: pl.DataFrame, kind: str, *paths: str) -> pl.DataFrame:
    """(row, text): the value at the first of ``paths`` present, on the lines of one type."""
    todo = (
        events.filter(pl.col("event_type") == kind)
        .select("row")
        .join(lines.select("row", "line"), on="row")
    )
    found: list[pl.DataFrame] = []
    for path in paths:
        matched = todo.select("row", pl.col("line").str.json_path_match(path).alias("text"))
        found.append(matched.filter(pl.col("text").is_not_null()))
        todo = todo.join(matched.filter(pl.col("text").is_null()), on="row", how="semi")
    return pl.concat(found)


def _model_metrics(
    lines: pl.DataFrame, events: pl.DataFrame
) -> tuple[pl.DataFrame, list[LocalIssue]]:
    """Per-model totals of every ``session.shutdown``, and tool-result/request sizes.

    ``modelMetrics`` is keyed by model name, which no fixed struct can describe, so the few
    shutdown lines are decoded with ``json`` (one per process, never a hot loop).
    """
    shutdowns = events.filter(pl.col("event_type") == "session.shutdown").select(
        "row", "piece", "source_line", "process_index"
    )
    if not shutdowns.height:
        return empty(LOCAL_MODEL_METRICS), []
    raw = shutdowns.join(lines.select("row", "line"), on="row").with_columns(
        pl.col("line").str.json_path_match("$.data.modelMetrics").alias("mm")
    )
    rows: list[dict[str, Any]] = []
    issues: list[LocalIssue] = []
    for piece, line, process, metrics in raw.select(
        "piece", "source_line", "process_index", "mm"
    ).iter_rows():
        if metrics is None:
            continue
        try:
            per_model = json.loads(metrics, parse_float=Decimal)
        except ValueError:
            per_model = None
        if not isinstance(per_model, dict):
            issues.append(
                (piece, line, "warning", "shutdown modelMetrics is not an object; ignored")
            )
            continue
        for model, values in per_model.items():
            if not isinstance(values, dict):
                issues.append((piece, line, "warning", f"modelMetrics[{model!r}] is not an object"))
                continue
            requests = _object(values.get("requests"))
            usage = _object(values.get("usage"))
            rows.append(
                {
                    "piece": piece,
                    "source_line": line,
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
        return empty(LOCAL_MODEL_METRICS), issues
    schema = {k: v for k, v in LOCAL_MODEL_METRICS.items() if k in rows[0]}
    return conform(pl.DataFrame(rows, schema=schema), LOCAL_MODEL_METRICS), issues


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
