"""Read Copilot OpenTelemetry file exports: one ``chat`` span per LLM call, with exact tokens.

Copilot (CLI, VS Code, the shared agent runtime) exports GenAI-semconv traces when the user
sets ``COPILOT_OTEL_ENABLED=true`` with ``COPILOT_OTEL_EXPORTER_TYPE=file`` and
``COPILOT_OTEL_FILE_EXPORTER_PATH`` (readers look in ``~/.copilot/otel/*.jsonl``). Each user
turn is an ``invoke_agent`` span with one ``chat <model>`` child per LLM call and
``execute_tool <name>`` children; a sub-agent is an ``invoke_agent`` under the
``execute_tool`` that launched it. Spans are written when they end, so children come before
parents and the tree is linked after the whole file is read.

Two line shapes are read, in any mix:

* Copilot's file exporter: one span per line, ``{"type": "span", traceId, spanId,
  parentSpanId, name, startTime: [s, ns], endTime, attributes: {...}}`` (the VS Code exporter
  writes the same without ``type`` and with ``resource.attributes``). Metric and log lines
  are other signals and are skipped.
* OTLP JSON, one export request per line (what the OpenTelemetry Collector's file exporter
  writes): ``resourceSpans[].scopeSpans[].spans[]`` with ``attributes: [{key, value:
  {stringValue | intValue | doubleValue | boolValue | arrayValue}}]`` and ``*UnixNano`` times.

Every non-blank line ends up as usage rows, a skipped record of another kind (a non-chat span,
a metric, a log), or an issue with file and line; the reader never raises on content.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import polars as pl

from analytics.agents.copilot.store import (
    OBSERVED,
    IssueRow,
    exact_decimal,
    finish_observed,
    finite_decimal,
    issues_frame,
)
from analytics.core.errors import InputError, os_reason
from analytics.core.schema import TIMESTAMP, empty, with_nulls

#: Token attributes, current name first, then the older or alternative names seen in the wild:
#: ``prompt_tokens``/``completion_tokens`` (GenAI semconv before v1.27, deprecated for
#: ``input_tokens``/``output_tokens``); ``cache_read_input_tokens`` and
#: ``cache_creation_input_tokens`` (deprecated for the dotted ``cache_read.input_tokens`` and
#: ``cache_creation.input_tokens``; Sentry's aliases ``input_tokens.cached`` and
#: ``input_tokens.cache_write``); ``reasoning_tokens`` (VS Code Copilot Chat's own name before
#: semconv had one) and ``output_tokens.reasoning`` (Sentry). Input is read as Copilot writes
#: it, including cache reads and writes; ``finish_observed`` warns on rows that contradict that.
_TOKEN_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "cache_read_tokens": (
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "gen_ai.usage.input_tokens.cached",
    ),
    "cache_write_tokens": (
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
        "gen_ai.usage.input_tokens.cache_write",
    ),
    "reasoning_tokens": (
        "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.usage.reasoning_tokens",
        "gen_ai.usage.output_tokens.reasoning",
    ),
}
#: The model that answered, else the one requested (Copilot requests ``auto``).
_MODEL_ATTRIBUTES = ("gen_ai.response.model", "gen_ai.request.model")
#: The Copilot session id: on every span in CLI exports, else on an ancestor or the resource.
#: The resource's ``session.id`` is not used: VS Code sets it per window, not per session.
_SESSION_ATTRIBUTES = (
    "gen_ai.conversation.id",
    "github.copilot.session_id",
    "copilot_chat.session_id",
)
_NANO_AIU = "github.copilot.nano_aiu"
_INITIATOR = "github.copilot.initiator"
#: ``interaction_id`` and ``turn_id`` are the ids of the matching ``assistant.turn_start``.
_INTERACTION_ID = "github.copilot.interaction_id"
_TURN_ID = "github.copilot.turn_id"
_FINISH_REASONS = "gen_ai.response.finish_reasons"
_TOOL_CALL_ID = "gen_ai.tool.call.id"
_OPERATION = "gen_ai.operation.name"

#: What marks a line as another signal than a span: Copilot CLI's ``"type": "metric"``
#: lines, OTLP metric and log exports, VS Code's metric (``scopeMetrics``) and log
#: (``hrTime``) lines. Any other ``type`` is an issue, not silently skipped.
_OTHER_SIGNAL_TYPES = ("metric",)
_OTHER_SIGNAL_KEYS = ("resourceMetrics", "resourceLogs", "scopeMetrics", "hrTime")
_INT64_LIMIT = 2**63


class _BadRecordError(ValueError):
    """A line that is not JSON, or not shaped like an OpenTelemetry export record."""


@dataclass(frozen=True)
class _Span:
    """The parts of one span the reader uses; ``line`` is its 1-based line in the file."""

    line: int
    trace_id: str | None
    span_id: str | None
    parent_id: str | None
    name: str
    attributes: Mapping[str, object]
    resource: Mapping[str, object]
    start_ns: int | None
    end_ns: int | None

    @property
    def operation(self) -> str:
        """``gen_ai.operation.name``, else the span name's first word (``chat gpt-4o``)."""
        operation = self.attributes.get(_OPERATION)
        return operation if isinstance(operation, str) else self.name.split(" ", 1)[0]


#: Spans by (trace id, span id), for walking from a call up to its agent and session.
_Index = Mapping[tuple[str | None, str], _Span]


def read_otel_export(path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read one OpenTelemetry JSONL export into (``OBSERVED`` rows, ``ISSUES`` rows).

    One row per ``chat`` span: tokens from ``gen_ai.usage.*`` (older names too), the charge
    from ``github.copilot.nano_aiu`` as exact decimal text, ``created_at`` at the span's end
    (when the usage was known), ``seq`` the call's order within its session by that time. A
    sub-agent's call carries, as ``agent_id`` and ``parent_tool_call_id``, the id of the tool
    call that launched the sub-agent, which is the value Copilot's own session store uses.

    Only a path that does not exist raises (``InputError``); anything in the file that
    cannot be used becomes an issue.

    >>> usage, issues = read_otel_export(Path.home() / ".copilot" / "otel" / "traces.jsonl")
    ... # doctest: +SKIP
    """
    file = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise InputError(
            f"{path}: no such file. Hint: Copilot writes OpenTelemetry files only when "
            "COPILOT_OTEL_ENABLED=true and COPILOT_OTEL_FILE_EXPORTER_PATH are set."
        ) from exc
    except OSError as exc:
        return (
            empty(OBSERVED),
            issues_frame([(file, None, "error", f"cannot read the file: {os_reason(exc)}")]),
        )
    spans: list[_Span] = []
    issues: list[IssueRow] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            spans += _spans(_decode(line), number)
        except _BadRecordError as exc:
            issues.append((file, number, "error", f"{exc}; line skipped"))
    calls, call_issues = _calls(spans, file)
    # Spans carry no itemised bill and no turn index (the turn ids match them instead).
    unknown = {"token_details": OBSERVED["token_details"], "turn_index": OBSERVED["turn_index"]}
    usage, checks = finish_observed(
        with_nulls(calls, unknown), ["_order", "source_line", "_position"]
    )
    return usage, pl.concat([issues_frame([*issues, *call_issues]), checks])


def _decode(line: bytes) -> object:
    """Parse one line; floats become ``Decimal`` so nano-AIU never passes through a float."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadRecordError("not UTF-8 text") from exc
    try:
        return json.loads(text, parse_float=Decimal, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise _BadRecordError(f"not valid JSON ({exc})") from exc


def _reject_constant(name: str) -> object:
    """``NaN`` and ``Infinity`` are not JSON; Python's parser accepts them unless told not to."""
    raise ValueError(name)


def _spans(record: object, line: int) -> list[_Span]:
    """The spans of one record; an empty list for metrics and logs, which carry no calls."""
    if not isinstance(record, dict):
        raise _BadRecordError("not a JSON object")
    if "resourceSpans" in record:
        return _otlp_spans(record["resourceSpans"], line)
    kind = record.get("type")
    if kind == "span" or (kind is None and "spanId" in record and "name" in record):
        resource = record.get("resource")
        attributes = resource.get("attributes") if isinstance(resource, dict) else None
        return [_span(record, line, _attributes(attributes), start="startTime", end="endTime")]
    if kind in _OTHER_SIGNAL_TYPES or any(key in record for key in _OTHER_SIGNAL_KEYS):
        return []
    raise _BadRecordError("not an OpenTelemetry span, metric or log record")


def _otlp_spans(resource_spans: object, line: int) -> list[_Span]:
    """Flatten an OTLP ``resourceSpans`` list, keeping each span's resource attributes."""
    spans: list[_Span] = []
    for resource_group in _objects(resource_spans, "resourceSpans"):
        resource = resource_group.get("resource")
        attributes = resource.get("attributes") if isinstance(resource, dict) else None
        resource_attributes = _attributes(attributes)
        scope_groups = resource_group.get(
            "scopeSpans", resource_group.get("instrumentationLibrarySpans")
        )
        for scope_group in _objects(scope_groups, "scopeSpans"):
            spans += [
                _span(
                    span,
                    line,
                    resource_attributes,
                    start="startTimeUnixNano",
                    end="endTimeUnixNano",
                )
                for span in _objects(scope_group.get("spans"), "spans")
            ]
    return spans


def _objects(value: object, what: str) -> list[dict[str, object]]:
    """``value`` as a list of JSON objects; absent is empty, anything else is malformed."""
    if value is None:
        return []
    objects = [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
    if not isinstance(value, list) or len(objects) != len(value):
        raise _BadRecordError(f"{what} is not a list of objects")
    return objects


def _span(
    record: dict[str, object], line: int, resource: Mapping[str, object], *, start: str, end: str
) -> _Span:
    """One span from either shape; ``start``/``end`` name the time fields of that shape."""
    name = record.get("name")
    return _Span(
        line=line,
        trace_id=_text(record.get("traceId")),
        span_id=_text(record.get("spanId")),
        parent_id=_text(record.get("parentSpanId")) or None,
        name=name if isinstance(name, str) else "",
        attributes=_attributes(record.get("attributes")),
        resource=resource,
        start_ns=_nanoseconds(record.get(start)),
        end_ns=_nanoseconds(record.get(end)),
    )


def _attributes(value: object) -> dict[str, object]:
    """Attributes as a dict, from a JSON object or an OTLP ``[{key, value}]`` list."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, list):
        decoded: dict[str, object] = {}
        for item in value:
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                raise _BadRecordError("an attribute is not a {key, value} object")
            decoded[item["key"]] = _otlp_value(item.get("value"))
        return decoded
    raise _BadRecordError("attributes are neither an object nor a list")


def _otlp_value(value: object) -> object:
    """The Python value of an OTLP ``AnyValue`` (``intValue`` may be a string, per proto3)."""
    if not isinstance(value, dict):
        return None
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in value:
            return value[key]
    array = value.get("arrayValue")
    if isinstance(array, dict) and isinstance(array.get("values"), list):
        return [_otlp_value(item) for item in array["values"]]
    return None


def _nanoseconds(value: object) -> int | None:
    """Epoch nanoseconds from ``[seconds, nanoseconds]`` (Copilot) or a number (OTLP)."""
    total: int | None
    if isinstance(value, list) and len(value) == 2:
        seconds, nanos = (_count(part) for part in value)
        if seconds is None or nanos is None:
            return None
        total = seconds * 1_000_000_000 + nanos
    else:
        total = _count(value)
    return total if total is not None and total < _INT64_LIMIT else None


def _count(value: object) -> int | None:
    """A non-negative Int64 from an int, an integral ``Decimal`` or digit text; else None."""
    number = finite_decimal(value)
    if number is None or not 0 <= number < _INT64_LIMIT:
        return None
    return int(number) if number == number.to_integral_value() else None


def _text(value: object) -> str | None:
    """An id as text: strings as they are, integers written out (``turn_id`` may be either)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _first(attributes: Mapping[str, object], names: tuple[str, ...]) -> object:
    """The value of the first of ``names`` present in ``attributes``, else None."""
    return next((attributes[name] for name in names if attributes.get(name) is not None), None)


def _calls(spans: list[_Span], file: str) -> tuple[pl.DataFrame, list[IssueRow]]:
    """One row per ``chat`` span, in file order, with the problems found in them."""
    index = {(span.trace_id, span.span_id): span for span in spans if span.span_id is not None}
    rows: list[dict[str, object]] = []
    issues: list[IssueRow] = []
    for position, span in enumerate(spans):
        if span.operation == "chat":
            row, problems = _call(span, index)
            rows.append({**row, "_position": position})
            issues += [(file, span.line, "warning", f"chat span: {text}") for text in problems]
    schema = {name: OBSERVED.get(name, pl.Int64()) for name in (*_CALL_COLUMNS, "_position")}
    frame = pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.lit(file).alias("source_file"),
        pl.col("agent_id").alias("parent_tool_call_id"),
        (pl.col("_order") // 1_000_000).cast(TIMESTAMP).alias("created_at"),
    )
    return frame, issues


#: The columns ``_call`` fills; ``_order`` is the end (else start) time in epoch nanoseconds.
_CALL_COLUMNS = (
    "source_line",
    "_order",
    "session_id",
    "agent_id",
    "model",
    *_TOKEN_ATTRIBUTES,
    "total_nano_aiu",
    "initiator",
    "interaction_id",
    "turn_id",
    "finish_reason",
)


def _call(span: _Span, index: _Index) -> tuple[dict[str, object], list[str]]:
    """The usage row of one ``chat`` span, and what looks wrong in it (values left null)."""
    attributes = span.attributes
    problems: list[str] = []
    session, tool_call = _lineage(span, index)
    if session is None:
        problems.append("no session id (gen_ai.conversation.id); session unknown")
    if tool_call is not None and attributes.get(_TURN_ID) is None:
        problems.append(
            "sub-agent call without github.copilot.turn_id; CLI 1.0.80 writes one such span "
            "per sub-agent run, which may sum several LLM calls"
        )
    tokens = {column: _first(attributes, names) for column, names in _TOKEN_ATTRIBUTES.items()}
    if all(value is None for value in tokens.values()):
        problems.append("no gen_ai.usage.* token attributes; tokens unknown")
    counts = {column: _count(value) for column, value in tokens.items()}
    problems += [
        f"{column} {tokens[column]!r} is not a token count; left unknown"
        for column, count in counts.items()
        if count is None and tokens[column] is not None
    ]
    nano = attributes.get(_NANO_AIU)
    nano_text = exact_decimal(nano)
    if nano is not None and nano_text is None:
        problems.append(f"{_NANO_AIU} {nano!r} is not a number; left unknown")
    model = _first(attributes, _MODEL_ATTRIBUTES)
    initiator = attributes.get(_INITIATOR)
    finish = attributes.get(_FINISH_REASONS)
    row: dict[str, object] = {
        "source_line": span.line,
        "_order": span.end_ns if span.end_ns is not None else span.start_ns,
        "session_id": session,
        "agent_id": tool_call,
        "model": model if isinstance(model, str) else None,
        **counts,
        "total_nano_aiu": nano_text,
        "initiator": initiator if isinstance(initiator, str) else None,
        "interaction_id": _text(attributes.get(_INTERACTION_ID)),
        "turn_id": _text(attributes.get(_TURN_ID)),
        "finish_reason": _text(finish[0] if isinstance(finish, list) and finish else finish),
    }
    return row, problems


def _lineage(span: _Span, index: _Index) -> tuple[str | None, str | None]:
    """The span's session id and, for a sub-agent's call, the launching tool call's id.

    Above a call, the first ``invoke_agent`` is its agent; an ``execute_tool`` between that
    and the next ``invoke_agent`` is the tool call that started the agent (a main agent has
    none). The session id is the nearest one on the span, its ancestors, or its resource.
    """
    session = _text(_first(span.attributes, _SESSION_ATTRIBUTES))
    tool_call: str | None = None
    agents = 0
    for node in _ancestors(span, index):
        session = session or _text(_first(node.attributes, _SESSION_ATTRIBUTES))
        if node.operation == "invoke_agent":
            agents += 1
        elif node.operation == "execute_tool" and agents == 1 and tool_call is None:
            tool_call = _text(node.attributes.get(_TOOL_CALL_ID))
    return session or _text(_first(span.resource, _SESSION_ATTRIBUTES)), tool_call


def _ancestors(span: _Span, index: _Index) -> Iterator[_Span]:
    """The span's parent, grandparent, ... as far as the file has them (cycles stop it)."""
    seen = {span.span_id}
    while span.parent_id is not None and span.parent_id not in seen:
        parent = index.get((span.trace_id, span.parent_id))
        if parent is None:
            return
        seen.add(parent.span_id)
        yield parent
        span = parent
