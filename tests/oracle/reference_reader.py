"""A slow, plain-Python reference reader: the oracle of the native scanner's differential test.

It reads bytes the obvious way (``bytes.split``, ``bytes.decode``, CPython's ``json``) and
applies the format table the scanner uses (``analytics._scanner.copilot_format()``, the
table of ``native/agents/copilot/format.rs``), so a difference between the two is a bug in the
scanner's mechanics (tokenizer, shapes, numbers, strings, lines, sessions), not a second
opinion about the table. The table itself is checked against the previous polars reader by
the output-unchanged comparison. Rules, as the scanner documents them:

* lines split at ``\\n`` (a last line without one counts); a UTF-8 byte order mark
  opening a line is dropped (a warning); bytes that are not UTF-8 are
  replaced (a warning); NUL bytes are removed (a warning); a line of Unicode White_Space only
  is a warning and nothing else; trailing ``\\r`` is dropped;
* JSON is CPython's, except that ``NaN``/``Infinity`` are not JSON and nesting deeper than
  256 levels is an error; duplicate keys: the first counts; lone surrogates read as U+FFFD;
* a wanted field of the wrong shape is dropped with a warning naming it.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from analytics import _scanner

MAX_DEPTH = 256
BOM_IGNORED = "byte order mark (U+FEFF) at the start of the line ignored"
TOTALS_OUT_OF_RANGE = "shutdown modelMetrics has a number beyond a double's range; read as null"
#: Unicode White_Space (what the scanner's blank-line check and Rust's char::is_whitespace use).
WHITE_SPACE = frozenset(
    (*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029)
) | {0x202F, 0x205F, 0x3000}
_FLOAT_TEXT = re.compile(
    r"[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)", re.IGNORECASE
)
_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(Z|[+-][0-9]{2}:[0-9]{2})"
)


@dataclass(frozen=True)
class Num:
    """A JSON number as written."""

    text: str
    is_float: bool


class Obj(list[tuple[str, Any]]):
    """A JSON object as its members in order (duplicates kept; lookups take the first)."""

    def get(self, key: str) -> Any:
        for name, value in self:
            if name == key:
                return value
        return _MISSING


_MISSING = object()


def _clean(text: str) -> str:
    """Lone surrogates (from ``\\ud800`` escapes) replaced by U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _decode(text: str) -> Any:
    return json.JSONDecoder(
        object_pairs_hook=lambda pairs: Obj((_clean(k), v) for k, v in pairs),
        parse_float=lambda t: Num(t, True),
        parse_int=lambda t: Num(t, False),
        parse_constant=lambda t: Num(t, True),
    ).decode(text)


def json_error(text: str) -> str | None:
    """The scanner's syntax error message for ``text``, or None when it is valid."""
    if text.startswith("\ufeff"):
        return "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"
    # NaN/Infinity made invalid in place (same length, so positions hold).
    strict = text.replace("NaN", "xaN").replace("Infinity", "xnfinity")
    error: tuple[str, int] | None = None
    try:
        _decode(strict)
    except json.JSONDecodeError as exc:
        error = (exc.msg, exc.pos)
    except RecursionError:
        error = None
    deep = _too_deep(text, error[1] if error else len(text))
    if deep is not None:
        error = ("Nesting deeper than 256 levels", deep)
    if error is None:
        return None
    return f"{error[0]}: line 1 column {error[1] + 1} (char {error[1]})"


def _too_deep(text: str, stop: int) -> int | None:
    """Position of the first bracket nested deeper than MAX_DEPTH before ``stop``."""
    depth, in_string, escaped = 0, False, False
    for at, char in enumerate(text[:stop]):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            if depth >= MAX_DEPTH:
                return at
            depth += 1
        elif char in "]}":
            depth -= 1
    return None


def _float_display(text: str) -> str:
    """A JSON float as Rust's ``f64`` Display writes it (plain decimal, shortest digits)."""
    value = float(text)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    plain = format(Decimal(repr(value)), "f")
    return plain.rstrip("0").rstrip(".") if "." in plain else plain


def _compact_number(number: Num) -> str | None:
    """A number as polars re-serialises it: 64-bit integers as written, else ryu's layout."""
    if not number.is_float and number.text != "-0" and -(2**63) <= int(number.text) < 2**63:
        return number.text
    value = float(number.text)
    if math.isinf(value):
        return None
    sign = "-" if math.copysign(1, value) < 0 else ""
    if value == 0:
        return f"{sign}0.0"
    digits_tuple = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = int(digits_tuple.exponent) + len(digits) - 1
    n, kk = len(digits), exponent + 1
    if kk - n >= 0 and kk <= 16:
        body = digits + "0" * (kk - n) + ".0"
    elif 0 < kk <= 16:
        body = f"{digits[:kk]}.{digits[kk:]}"
    elif -5 < kk <= 0:
        body = "0." + "0" * -kk + digits
    else:
        tail = f".{digits[1:]}" if n > 1 else ""
        body = f"{digits[0]}{tail}e{'-' if exponent < 0 else '+'}{abs(exponent)}"
    return sign + body


def compact(value: Any, *, nulls: bool = False) -> str | None:
    """Compact JSON of a value: None if a number in it is out of range, or with ``nulls``
    that number written as ``null``."""
    if isinstance(value, Obj):
        parts = []
        for key, item in value:
            text = compact(item, nulls=nulls)
            if text is None:
                return None
            parts.append(f"{json.dumps(key, ensure_ascii=False)}:{text}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        items = [compact(item, nulls=nulls) for item in value]
        return None if None in items else "[" + ",".join(items) + "]"  # type: ignore[arg-type]
    if isinstance(value, Num):
        text = _compact_number(value)
        return "null" if text is None and nulls else text
    if isinstance(value, str):
        return json.dumps(_clean(value), ensure_ascii=False)
    return {True: "true", False: "false", None: "null"}[value]


def text_of(value: Any) -> str | None:
    """A scalar's text: a string, a number as polars prints one, true/false."""
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, Num):
        return _float_display(value.text) if value.is_float else value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    return None


def whole(value: Any) -> int | None:
    text = text_of(value)
    if text is None or not _FLOAT_TEXT.fullmatch(text):
        return None
    number = float(text)
    if not math.isfinite(number) or not -(2.0**63) <= number < 2.0**63:
        return None
    return int(number)


def timestamp(text: str | None) -> int | None:
    """UTC milliseconds of the ISO-8601 form the scanner accepts."""
    match = _TIME.fullmatch(text or "")
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7) or "", match.group(8)
    try:
        days = (date(year, month, day) - date(1970, 1, 1)).days
    except ValueError:
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    offset = 0
    if zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            return None
        offset = (hours * 60 + minutes) * (1 if zone[0] == "+" else -1)
    millis = int((fraction + "00")[:3]) if fraction else 0
    return ((days * 86400 + hour * 3600 + minute * 60 + second) - offset * 60) * 1000 + millis


class Reader:
    """The reference reader of one format table."""

    def __init__(self) -> None:
        fields, self.columns, settings = _scanner.copilot_format()
        self.shapes = dict(fields)
        self.order = [path for path, _ in fields]
        self.settings: dict[str, list[str]] = {}
        self.extras: list[list[str]] = []
        for name, values in settings:
            if name == "extra":
                self.extras.append(values)
            else:
                self.settings[name] = values

    def fit(self, event: Obj) -> tuple[dict[str, Any], list[str]]:
        """The wanted fields present (path -> value) and the dropped ones, in table order."""
        found: dict[str, Any] = {}
        dropped: list[str] = []
        for path in self.order:
            parent, _, name = path.rpartition(".")
            holder = found.get(parent) if parent else event
            if not isinstance(holder, Obj):
                continue
            value = holder.get(name)
            if value is _MISSING:
                continue
            shape = self.shapes[path]
            fits = {
                "scalar": not isinstance(value, Obj | list),
                "struct": isinstance(value, Obj) or value is None,
            }.get(shape, True)
            if fits:
                found[path] = value
            else:
                dropped.append(path)
        return found, dropped

    def read(self, data: bytes, hint: str) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
        """(events as dicts of column values, issues as (line, severity, message))."""
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        rows: list[dict[str, Any]] = []
        issues: list[tuple[Any, ...]] = []
        starts: list[tuple[int, str | None, bool]] = []
        offset = resumes = 0
        for number, whole in enumerate(lines, start=1):
            at = offset
            offset += len(whole) + 1
            raw = whole.removeprefix(codecs.BOM_UTF8)
            if raw != whole:
                issues.append((number, "warning", BOM_IGNORED))
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                issues.append((number, "warning", "line is not valid UTF-8; bad bytes replaced"))
            if "\x00" in text:
                text = text.replace("\x00", "")
                issues.append((number, "warning", "NUL bytes removed (left by a crash)"))
            if all(ord(c) in WHITE_SPACE for c in text):
                issues.append((number, "warning", "blank line ignored"))
                continue
            text = text.rstrip("\r")
            error = json_error(text)
            if error is not None:
                torn = "" if text.rstrip().endswith("}") else " (truncated line?)"
                issues.append((number, "error", f"invalid JSON{torn}: {error}"))
                continue
            event = _decode(text)
            if event is None:
                issues.append((number, "error", "event has no 'type'"))
                continue
            if not isinstance(event, Obj):
                kinds = {list: "list", str: "str", bool: "bool"}
                name = kinds.get(type(event)) or ("float" if event.is_float else "int")
                issues.append((number, "error", f"not a JSON object: {name}"))
                continue
            found, dropped = self.fit(event)
            if dropped:
                issues.append(
                    (number, "warning", f"unexpected shape, ignored: {', '.join(dropped)}")
                )
            kind = text_of(found.get(self.settings["type"][0]))
            if kind is None:
                issues.append((number, "error", "event has no 'type'"))
                continue
            time = timestamp(text_of(found.get(self.settings["time"][0])))
            if time is None:
                issues.append((number, "warning", "timestamp missing or not ISO-8601"))
            start_type, session_field = self.settings["start"]
            if kind == self.settings["resume"][0]:
                resumes += 1
            if kind == start_type:
                event_id = text_of(found.get("id"))
                new = event_id is None or all(row["event_id"] != event_id for row in rows)
                starts.append((len(rows), text_of(found.get(session_field)), event_id, new))
            row = {"source_line": number, "byte_offset": at, "process_index": resumes}
            row.update(self.columns_of(found, kind, time))
            row["_totals"] = self.totals(found, kind)
            if (
                row["_totals"] is not None
                and compact(found.get(self.settings["totals"][1])) is None
            ):
                issues.append((number, "warning", TOTALS_OUT_OF_RANGE))
            rows.append(row)
        # Parts: the first from line 1, then one from each new start after the first. A start
        # repeating an earlier line's id goes back to the part its original began (if that
        # line was a start). Segments: (first row, part), where the part changes.
        began: dict[str | None, int] = {}
        segments = [(0, 0)]
        count = 0
        for row, _, event_id, new in starts:
            if new:
                count += 1
                began.setdefault(event_id, count - 1)
                part: int | None = count - 1
            else:
                part = began.get(event_id)
            if part is not None and part != segments[-1][1]:
                segments.append((row, part))

        def part_of(row: int) -> int:
            return max((first, part) for first, part in segments if first <= row)[1]

        names: dict[int, str | None] = {}
        for row, session, _, _ in starts:
            if names.get(part_of(row)) is None:
                names[part_of(row)] = session
        for index, row in enumerate(rows):
            part = part_of(index)
            name = names.get(part)
            row["session_id"] = (
                name if name is not None else hint if part == 0 else f"{hint}#{part + 1}"
            )
        return rows, issues

    def totals(self, found: dict[str, Any], kind: str) -> str | None:
        totals_type, field = self.settings["totals"]
        value = found.get(field)
        if kind != totals_type or value is None:
            return None
        return _clean(value) if isinstance(value, str) else compact(value, nulls=True)

    def columns_of(self, found: dict[str, Any], kind: str, time: int | None) -> dict[str, Any]:
        def first(paths: list[str]) -> Any:
            return next((found[p] for p in paths if found.get(p) is not None), None)

        def measured(value: Any) -> int | None:
            if value is None:
                return None
            if isinstance(value, str):
                return len(_clean(value).encode())
            text = compact(value)
            return None if text is None else len(text.encode())

        values: dict[str, Any] = {}
        for name, (rule, paths_by_type, limit) in self.columns:
            plain = paths_by_type[0][1]
            typed = {t: p for t, p in paths_by_type[1:]}
            value = first(plain)
            if rule == "text":
                text = text_of(value)
                values[name] = text[:limit] if text is not None and limit else text
            elif rule == "int":
                values[name] = whole(value)
            elif rule == "flag":
                text = text_of(value)
                values[name] = None if text is None else text.encode().lower() == b"true"
            elif rule == "flag_or_false":
                text = text_of(value)
                values[name] = text is not None and text.encode().lower() == b"true"
            elif rule == "time":
                values[name] = time
            elif rule in ("matched", "measured"):
                value = first(typed[kind]) if kind in typed else None
                if rule == "measured":
                    values[name] = measured(value)
                elif isinstance(value, str):
                    values[name] = _clean(value)
                else:
                    values[name] = None if value is None else compact(value)
            else:
                values[name] = self.content_bytes(found, kind, first, measured)
        return values

    def content_bytes(self, found: dict[str, Any], kind: str, first: Any, measured: Any) -> Any:
        def size(value: Any) -> int | None:
            text = text_of(value)
            return None if text is None else len(text.encode())

        base: int | None = None
        if kind in self.settings["text_types"]:
            base = size(first(self.settings["text"]))
        elif kind == self.settings["assistant"][0]:
            base = sum(size(found.get(p)) or 0 for p in self.settings["assistant"][1:])
        for extra_kind, *paths in self.extras:
            if extra_kind == kind:
                extra = measured(first(paths))
                if extra is not None:
                    return (base or 0) + extra
        return base
