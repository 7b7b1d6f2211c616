"""The reference of the scanner's decoding of ``modelMetrics`` (``native/agents/
copilot/model_metrics.rs``): the Python reader it replaced, with ``json`` and exact decimals. The
scanner differential test holds the two equal on every shutdown line it reads.

The text is a shutdown line's ``modelMetrics`` as the scanner keeps it: compact JSON, or a
string's text (a string that holds JSON is read as that JSON).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

#: The longest whole number kept as text (its digits); a longer one is left out.
LONGEST_TEXT = 400
#: The counters of an empty ``modelMetrics`` (``{}``): zero, not unknown.
ZERO_WHEN_EMPTY = (
    "requests_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
#: (row column, where in a model's object, key) of the whole-number counters, in order.
COUNTERS = (
    ("requests_count", "requests", "count"),
    ("input_tokens", "usage", "inputTokens"),
    ("output_tokens", "usage", "outputTokens"),
    ("cache_read_tokens", "usage", "cacheReadTokens"),
    ("cache_write_tokens", "usage", "cacheWriteTokens"),
    ("reasoning_tokens", "usage", "reasoningTokens"),
)
#: (row column, where, key) of the money figures, kept as exact text; "" is the model's own.
MONEY = (("requests_cost", "requests", "cost"), ("total_nano_aiu", "", "totalNanoAiu"))


def decode(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The MODEL_METRICS rows of one shutdown line (model and figures only), and its warnings."""
    try:
        per_model = json.loads(text, parse_float=Decimal)
    except ValueError:
        per_model = None
    if not isinstance(per_model, dict):
        return [], ["shutdown modelMetrics is not an object; ignored"]
    if not per_model:  # no model was billed in this process (0 requests)
        row: dict[str, Any] = {name: None for name, _, _ in (*COUNTERS, *MONEY)}
        return [{"model": None, **row, **dict.fromkeys(ZERO_WHEN_EMPTY, 0)}], []
    rows, warnings = [], []
    for model, values in per_model.items():
        name = json.dumps(model, ensure_ascii=False)
        if not isinstance(values, dict):
            warnings.append(f"modelMetrics[{name}] is not an object")
            continue
        row = {"model": model}
        for column, where, key in COUNTERS:
            value = _object(values.get(where)).get(key)
            row[column] = _whole(value)
            if row[column] is None and _integral(value):
                warnings.append(
                    f"modelMetrics[{name}] {key} is a whole number beyond 64 bits; left out"
                )
            elif row[column] is not None and row[column] < 0:
                row[column] = None
                warnings.append(f"modelMetrics[{name}] {key} is negative; left out")
        for column, where, key in MONEY:
            value = (_object(values.get(where)) if where else values).get(key)
            row[column] = _text(value)
            if row[column] is None and _number(value):
                warnings.append(f"modelMetrics[{name}] {key} is too long a number; left out")
        rows.append(row)
    return rows, warnings


def _object(value: object) -> dict[str, Any]:
    """A JSON object, or an empty one when the value is anything else."""
    return value if isinstance(value, dict) else {}


def _number(value: object) -> bool:
    """Whether ``value`` is a JSON number (an ``int`` or a ``Decimal``: never a float)."""
    return not isinstance(value, bool) and isinstance(value, int | Decimal)


def _integral(value: object) -> bool:
    """Whether ``value`` is a JSON number that is a whole number."""
    if not _number(value):
        return False
    return not isinstance(value, Decimal) or value == value.to_integral_value()


def _digits(value: int | Decimal) -> int:
    """How many digits the whole number ``value`` has."""
    if not value:
        return 1
    if isinstance(value, int):
        return len(str(abs(value)))
    return value.adjusted() + 1


def _whole(value: object) -> int | None:
    """A whole JSON number in 64 bits as an int, else None."""
    if not _integral(value):
        return None
    assert isinstance(value, int | Decimal)
    if _digits(value) > 19:
        return None
    whole = int(value)
    return whole if -(2**63) <= whole < 2**63 else None


def _text(value: object) -> str | None:
    """A JSON number as its exact decimal text (``305426000.0`` -> ``"305426000"``), or None
    (not a number, or a whole number of more than ``LONGEST_TEXT`` digits)."""
    if not _number(value):
        return None
    assert isinstance(value, int | Decimal)
    if _integral(value):
        return str(int(value)) if _digits(value) <= LONGEST_TEXT else None
    return str(value)
