"""Simulate GitHub Copilot CLI session-state trees from the agent-loop model, with exact truth.

Why: agentcost reconstructs per-call tokens from ``events.jsonl`` files that never carry per-call
input tokens. To measure how well it does (and how fast), we need logs whose every call is known.
``simulate`` writes ``<out>/session-state/<id>/events.jsonl`` (+ ``workspace.yaml``) in the shape
of real CLI 1.0.80 logs (compact JSON, ``type, data, id, timestamp, parentId[, agentId]``, UUID
ids, a ``parentId`` chain), ``<out>/ground_truth.json`` with every call's tokens and, on request,
``<out>/session-store.db`` with the ``assistant_usage_events`` rows the CLI would have stored.

The token model (all integers):

* Each session draws what a real tokenizer and CLI would decide, and ``ground_truth.json``
  records it (``drawn``); the reconstruction is told none of it: a fixed part (system prompt +
  tool definitions, ``system_tokens`` + ``tool_definitions_tokens``: 8k-40k), tokens per 1,000
  bytes for each kind of content (``tool``: tool results, i.e. code and command output;
  ``prose``: user, assistant and system text; ``json``: tool-call arguments) and the framing
  tokens of each message (``item_tokens``). Text is ASCII, so bytes = characters; sizes are
  drawn in nominal tokens of ``BYTES_PER_TOKEN`` bytes.
* Per event the context text is: ``user.message`` ``data.content`` (prose);
  ``assistant.message`` ``data.content`` (prose) plus, for each tool request, its ``arguments``
  as compact JSON (``separators=(",", ":")``, json); ``tool.execution_complete``
  ``data.result.content`` (tool; ``detailedContent`` is display-only); an event adds
  ``text_tokens(bytes, rate)`` + ``item_tokens``. ``session.compaction_complete``
  ``data.summaryContent`` replaces the conversation with the summary's drawn token count.
  Events with an envelope ``agentId`` belong to that sub-agent's context.
* A main call's prompt (``input_tokens``, cache-inclusive) = system tokens (the
  ``system.message``, written at the prose rate) + tool-definition tokens (not in the log;
  reported at compaction and shutdown) + the context tokens of every main-agent event since
  the session start, or since the last compaction. A sub-agent call's prompt is the same with
  the sub-agent's own system message, tool definitions, prompt (its ``user.message``) and
  events.
* ``output_tokens`` = the tokens of the call's ``assistant.message`` (prose + json) + reasoning
  tokens (reasoning is billed as output but never written, never re-read).
* Prompt caching per (agent, model) chain: within ``cache_ttl_seconds`` of the chain's previous
  call, Anthropic-style models read the prefix the previous call cached and write the rest but a
  short uncached tail (the newest user messages are not cached for the next call: the CLI
  re-sends them in another form, as real SDK captures show); OpenAI-style models read the
  previous prompt rounded down to 128 tokens and write nothing. A compaction call reads the
  main chain's cache and writes nothing; after it only the fixed part (system + tools) is
  still a cached prefix.
* nano-AIU per call = Σ tokens x per-token price (``ModelSpec``); USD = nano-AIU / 1e11.
  ``session.shutdown`` is cumulative across processes; compaction calls are in ``totalNanoAiu``
  but not in ``modelMetrics``, as in real logs.

Output is byte-identical for a seed, and memory stays bounded: lines are streamed to disk and only
the current session's per-call records are held.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import shutil
import sqlite3
import time
from array import array
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import IO, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from analytics.agents.copilot.sdk_capture import Capture
from analytics.core.errors import UsageError

BYTES_PER_TOKEN = 4
"""Bytes per nominal token when drawing text sizes (``user_message_tokens`` and the like)."""

MB = 1_000_000
"""``target_size_mb`` counts decimal megabytes of the ``session-state/`` tree."""

Range = tuple[int, int]
JSON = dict[str, Any]


def text_tokens(text_bytes: int, tokens_per_kb: int) -> int:
    """Tokens of ``text_bytes`` of context text at ``tokens_per_kb`` tokens per 1,000 bytes,
    rounded up.

    >>> text_tokens(0, 300), text_tokens(1, 300), text_tokens(1000, 300), text_tokens(1001, 300)
    (0, 1, 300, 301)
    """
    return -(-text_bytes * tokens_per_kb // 1000)


@dataclass(frozen=True)
class ModelSpec:
    """What the simulator needs to know about a model: prices, caching style, id formats.

    Prices are nano-AIU per token (per-1M-token USD price x 1e5); ``multiplier`` is the premium
    request multiplier charged per user prompt.
    """

    name: str
    input_nano: int
    cache_read_nano: int
    cache_write_nano: int
    output_nano: int
    multiplier: float
    api_endpoint: str
    openai_cache: bool
    reasoning: bool
    tool_call_prefix: str
    tool_call_chars: int


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "claude-sonnet-4.6", 300_000, 30_000, 375_000, 1_500_000, 1.0,
            "/v1/messages", False, False, "toolu_vrtx_01", 22,
        ),
        ModelSpec(
            "claude-haiku-4.5", 100_000, 10_000, 125_000, 500_000, 0.33,
            "/v1/messages", False, False, "toolu_bdrk_01", 22,
        ),
        # Prices from the real CLI 1.0.80 rows (token_details_json): $0.25 / $0.025 / 0 / $2.
        ModelSpec(
            "gpt-5-mini", 25_000, 2_500, 0, 200_000, 0.0,
            "/responses", True, True, "call_", 24,
        ),
    )
}  # fmt: skip


@dataclass(frozen=True)
class SimulationParams:
    """Parameters of one simulated population of sessions. Ranges are inclusive ``(low, high)``.

    Exactly one of ``sessions`` and ``target_size_mb`` is set: with a target, sessions are generated
    until the ``session-state/`` tree reaches it (the last session is kept only if that lands
    closer to the target). Probabilities are per session unless noted.
    """

    seed: int = 0
    sessions: int | None = 10
    target_size_mb: float | None = None
    calls_per_session: Range = (4, 40)
    calls_per_prompt: Range = (1, 8)
    system_tokens: Range = (3_000, 22_000)
    tool_definitions_tokens: Range = (5_000, 18_000)
    # tokens per 1,000 bytes, drawn per session and kind of content: code and command output
    # (tool results), prose (user, assistant, system and summary text), JSON tool arguments
    tool_tokens_per_kb: Range = (260, 420)
    prose_tokens_per_kb: Range = (210, 300)
    json_tokens_per_kb: Range = (240, 380)
    item_tokens: Range = (2, 24)  # framing per message (role, ids, tool-result wrapper)
    user_message_tokens: Range = (10, 400)
    tool_result_tokens: Range = (20, 3_000)
    output_tokens: Range = (40, 1_500)
    tools_per_call: Range = (1, 3)
    subagent_probability: float = 0.08  # per main call that uses tools
    subagent_calls: Range = (2, 8)
    subagent_model: str = "claude-haiku-4.5"
    subagent_system_tokens: Range = (2_500, 4_000)
    subagent_tool_definitions_tokens: Range = (3_000, 6_000)
    resume_probability: float = 0.1  # per user prompt after the first: a new process
    model_switch_probability: float = 0.3  # per resume
    autopilot_probability: float = 0.1  # per prompt: nudge + task_complete
    compaction_threshold: int = 120_000  # prompt tokens that trigger a compaction
    compaction_summary_tokens: Range = (800, 3_000)
    crash_probability: float = 0.05
    torn_line_probability: float = 0.5  # per crash: a torn last line (+ maybe NUL bytes)
    models: tuple[tuple[str, int], ...] = (
        ("claude-sonnet-4.6", 70),
        ("gpt-5-mini", 20),
        ("claude-haiku-4.5", 10),
    )
    start: str = "2026-08-03"
    days: int = 28
    timezone: str = "UTC"
    copilot_version: str = "1.0.80"
    cache_ttl_seconds: int = 300

    def __post_init__(self) -> None:
        """Reject values the generator cannot use, naming the parameter."""
        if (self.sessions is None) == (self.target_size_mb is None):
            raise UsageError("give either a number of sessions or a target size; not both")
        if self.sessions is not None and self.sessions < 1:
            raise UsageError(
                f"sessions must be at least 1, got {self.sessions}; use a positive count"
            )
        if self.target_size_mb is not None and not self.target_size_mb > 0:
            raise UsageError(f"target size must be positive, got {self.target_size_mb} MB")
        for name, value in asdict(self).items():
            _check_field(name, value)
        if self.calls_per_prompt[0] < 1 or self.subagent_calls[0] < 1 or self.days < 1:
            raise UsageError("calls_per_prompt, subagent_calls and days start at 1; raise them")
        unknown = [m for m, _ in self.models if m not in MODELS] + [
            m for m in [self.subagent_model] if m not in MODELS
        ]
        if unknown or not self.models or any(share <= 0 for _, share in self.models):
            raise UsageError(
                f"models need positive shares and known names, got {self.models}; "
                f"known: {', '.join(MODELS)}"
            )
        _parse_start(self.start)
        _zone(self.timezone)


def _check_field(name: str, value: object) -> None:
    """Ranges must be ``0 <= low <= high``; fields ending in ``probability`` lie in [0, 1]."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        low, high = value
        if not 0 <= low <= high:
            raise UsageError(f"{name} must be a range low-high with 0 <= low <= high, got {value}")
    if name.endswith("probability") and not 0.0 <= float(str(value)) <= 1.0:
        raise UsageError(f"{name} must lie between 0 and 1, got {value}")


def _parse_start(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"start must be a date like 2026-08-03, got {text!r}") from None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(
            f"unknown timezone {name!r}; use an IANA name like Europe/Berlin"
        ) from None


def parse_range(text: str, name: str) -> Range:
    """Parse ``"4-40"`` (or ``"7"``) into an inclusive range, for command-line options.

    >>> parse_range("4-40", "calls"), parse_range("7", "calls")
    ((4, 40), (7, 7))
    """
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise UsageError(f"{name} must look like 4-40 or 7, got {text!r}") from None


def parse_model_shares(items: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """Parse ``["claude-sonnet-4.6=70", "gpt-5-mini=30"]``; a bare name gets share 1.

    >>> parse_model_shares(["gpt-5-mini=3", "claude-haiku-4.5"])
    (('gpt-5-mini', 3), ('claude-haiku-4.5', 1))
    """
    shares = []
    for item in items:
        model, _, share = item.partition("=")
        try:
            shares.append((model, int(share or 1)))
        except ValueError:
            raise UsageError(f"--model takes NAME=SHARE like gpt-5-mini=30, got {item!r}") from None
    return tuple(shares)


@dataclass(frozen=True)
class SimulationSummary:
    """What ``simulate`` wrote: counts, the size of ``session-state/`` and the time it took."""

    sessions: int
    llm_calls: int
    bytes_written: int
    seconds: float


# ----------------------------------------------------------------------------------------------
# Text: slices of two fixed corpora, so every size is exact and the text still reads naturally.

_PROSE_SOURCE = (
    "the request handler returns a cached session token when the user retries the call and "
    "parser reads each line of the log file then groups events by turn so that totals match "
    "config loader validates every key before the service starts and reports missing values "
    "test suite covers the edge cases for empty input large batches and slow network replies "
    "migration adds an index on the created column which keeps the nightly report fast enough "
    "worker pulls jobs from the queue retries failures with backoff and records the duration"
)
_WORDS = tuple(_PROSE_SOURCE.split(" "))
_IDENTS = (
    "session", "payload", "result", "config", "events", "tokens", "handler", "records", "cache",
    "parser", "total", "batch", "client", "response", "options", "schema", "frame", "usage",
)  # fmt: skip
_MODULES = ("api", "core", "billing", "ingest", "reports", "auth", "storage", "cli", "utils")
_REPOS = (
    "acme/payments-api", "acme/web-frontend", "octo-org/data-pipeline", "octo-org/infra-tools",
    "lab/ml-trainer", "lab/notebook-service",
)  # fmt: skip
_BRANCHES = ("main", "develop", "feature/usage-report", "fix/retry-backoff", "chore/deps")
_ASKS = (
    "Fix the failing test in", "Add input validation to", "Refactor the error handling in",
    "Explain how caching works in", "Write unit tests for", "Investigate why retries loop in",
    "Speed up the slow query in", "Document the public functions of",
)  # fmt: skip
_COMMANDS = (
    "python -m pytest -q", "git status --short", "ruff check .", "git diff --stat",
    "npm test -- --silent", "ls -la src", "python -m mypy src", "cargo build --quiet",
)  # fmt: skip
_NUDGE = (
    "You have not marked the task as complete. If the work is done, call the task_complete "
    "tool with a short summary of what you did; otherwise continue working on the task."
)
_SYSTEM_HEAD = (
    "You are the GitHub Copilot CLI, a terminal assistant built by GitHub. You help the user "
    "with software engineering tasks in their repository. "
)
_EXPLORE_DESCRIPTION = (
    "Fast codebase exploration and answering questions. Uses code intelligence, grep and glob "
    "tools to locate code, and returns a concise answer."
)
_CORPUS_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class _Text:
    """A string together with its JSON literal, escaped once however often it is written.

    Large texts (tool results, file contents) appear in two events each; JSON-escaping them on
    every write would cost more than everything else together.
    """

    raw: str
    literal: str  # the JSON string literal, quotes included

    def __len__(self) -> int:
        return len(self.raw)

    def __add__(self, other: _Text) -> _Text:
        return _Text(self.raw + other.raw, self.literal[:-1] + other.literal[1:])


def _text(raw: str) -> _Text:
    return _Text(raw, _dumps(raw))


@dataclass(frozen=True, slots=True)
class _Json:
    """A value already encoded as compact JSON (tool arguments, written twice and measured)."""

    literal: str

    def __len__(self) -> int:
        return len(self.literal)


def _lines(text: object) -> int:
    return text.raw.count("\n") if isinstance(text, _Text) else 0


@dataclass(frozen=True)
class _Corpus:
    """A long text, its JSON-escaped form and where each character starts in that form."""

    raw: str
    escaped: str
    offsets: array[int]
    boundary: str

    @classmethod
    def of(cls, raw: str, boundary: str) -> _Corpus:
        escaped = _dumps(raw)[1:-1]
        widths = (2 if ch in '\n"\\' else 1 for ch in raw)  # the corpora hold no other escapes
        offsets = array("q", itertools.accumulate(widths, initial=0))
        return cls(raw, escaped, offsets, boundary)

    def take(self, size: int, rng: random.Random) -> _Text:
        """Exactly ``size`` characters from a random place, starting after a ``boundary``."""
        size = min(max(size, 0), len(self.raw) - 256)
        start = rng.randrange(len(self.raw) - size - 255)
        aligned = self.raw.find(self.boundary, start, start + 255 - len(self.boundary))
        start = start if aligned < 0 else aligned + len(self.boundary)
        end = start + size
        escaped = self.escaped[self.offsets[start] : self.offsets[end]]
        return _Text(self.raw[start:end], f'"{escaped}"')


@functools.cache
def _corpora() -> tuple[_Corpus, _Corpus]:
    """A prose corpus (no quotes, backslashes or newlines) and a code corpus, fixed forever."""
    rng = random.Random(20260803)
    sentences: list[str] = []
    size = 0
    while size < _CORPUS_BYTES:
        words = rng.choices(_WORDS, k=rng.randint(6, 18))
        sentences.append(" ".join(words).capitalize() + ". ")
        size += len(sentences[-1])
    lines: list[str] = []
    size = 0
    while size < _CORPUS_BYTES:
        lines.append(_code_line(rng))
        size += len(lines[-1])
    return _Corpus.of("".join(sentences), ". "), _Corpus.of("".join(lines), "\n")


def _code_line(rng: random.Random) -> str:
    a, b, c = rng.choices(_IDENTS, k=3)
    indent = " " * 4 * rng.randint(0, 3)
    templates = (
        f"def {a}_{b}({c}, {a}=None):",
        f"{a} = {b}.get_{c}({a}, limit={rng.randint(1, 500)})",
        f"if {a} is None or not {b}:",
        f"for {a} in {b}.{c}s:",
        f"return {{'{a}': {b}, '{c}': len({c})}}",
        f'raise ValueError(f"bad {a}: {{{b}!r}}")',
        f"# {' '.join(rng.choices(_WORDS, k=rng.randint(3, 9)))}",
        f"{a}.append({b}[{rng.randint(0, 9)}])",
    )
    return indent + rng.choice(templates) + "\n"


def _prose(size: int, rng: random.Random) -> _Text:
    return _corpora()[0].take(size, rng)


def _code(size: int, rng: random.Random) -> _Text:
    return _corpora()[1].take(size, rng)


def _skewed(rng: random.Random, bounds: Range) -> int:
    """A draw from ``bounds``, log-uniform (many small values, a long tail) when ``low > 0``."""
    low, high = bounds
    return int(low * (high / low) ** rng.random()) if low else rng.randint(low, high)


def _padded(head: str, size: int, rng: random.Random) -> _Text:
    """``head`` followed by prose so the whole is exactly ``size`` characters (or ``head``)."""
    return _text(head) + _prose(size - len(head), rng)


# ----------------------------------------------------------------------------------------------
# Ids, times, JSON


def _uuid(rng: random.Random) -> str:
    h = rng.randbytes(16).hex()
    variant = "89ab"[int(h[16], 16) & 3]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"


_BASE62 = bytes(range(256)).translate(
    bytes.maketrans(
        bytes(range(256)),
        (b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" * 5)[:256],
    )
)


def _token_id(prefix: str, chars: int, rng: random.Random) -> str:
    return prefix + rng.randbytes(chars).translate(_BASE62).decode("ascii")


def _request_id(rng: random.Random) -> str:
    bits = rng.getrandbits
    return f"{bits(16):04X}:{bits(24):06X}:{bits(28):07X}:{bits(28):07X}:{bits(32):08X}"


def _iso(ms: int) -> str:
    """Epoch milliseconds as the CLI writes them: ``2026-05-26T16:14:36.213Z``."""
    sec, milli = divmod(ms, 1000)
    return f"{_iso_second(sec)}.{milli:03d}Z"


@functools.lru_cache(maxsize=1024)
def _iso_second(sec: int) -> str:
    t = time.gmtime(sec)
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    )


_dumps = json.JSONEncoder(separators=(",", ":")).encode


class _Encoder:
    """Compact JSON, as the CLI writes it, with each ``_Text``/``_Json`` spliced in pre-encoded.

    The C encoder hands every such value to ``_mark``, which returns a numbered marker string;
    the markers are then replaced by the literals.
    """

    def __init__(self) -> None:
        self._literals: list[str] = []
        self._encoder = json.JSONEncoder(separators=(",", ":"), default=self._mark)

    def _mark(self, value: object) -> str:
        if not isinstance(value, _Text | _Json):
            raise TypeError(f"cannot write {type(value).__name__} as JSON")
        self._literals.append(value.literal)
        return f"@@{len(self._literals) - 1}@@"

    def __call__(self, value: object) -> str:
        encoded = self._encoder.encode(value)
        for index, literal in enumerate(self._literals):
            encoded = encoded.replace(f'"@@{index}@@"', literal, 1)
        self._literals.clear()
        return encoded


_encode = _Encoder()


def _js_number(value: float) -> float | int:
    """Floats as JavaScript prints them: ``1`` not ``1.0``, ``0.66`` as is."""
    return int(value) if value.is_integer() else value


# ----------------------------------------------------------------------------------------------
# Per-call truth and running totals


@dataclass(frozen=True)
class _Call:
    """One LLM call as it really happened (the ground truth and the session-store row)."""

    kind: str  # main | subagent | compaction
    model: str
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    reasoning_tokens: int
    nano_aiu: int
    process: int
    interrupted: bool
    turn_index: int
    task_call_id: str | None
    initiator: str
    finish_reason: str
    duration_ms: int
    ttft_ms: float
    itl_ms: float
    end_ms: int

    def truth(self) -> JSON:
        """The ground-truth record of this call."""
        return {
            "kind": self.kind,
            "model": self.model,
            **_counted(self),
            "process": self.process,
            "interrupted": self.interrupted,
        }

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens


#: What a call's (or a model's) ground truth counts, in the order ``ground_truth.json`` has.
_COUNTED = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "nano_aiu",
)


def _counted(record: _Call | _ModelTotals) -> JSON:
    """The counts of a call or of a model's totals, as ground truth."""
    return {name: getattr(record, name) for name in _COUNTED}


@dataclass
class _ModelTotals:
    """Cumulative per-model counters, as ``session.shutdown`` ``modelMetrics`` reports them."""

    requests: int = 0
    cost: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    nano_aiu: int = 0

    def add(self, call: _Call) -> None:
        self.requests += 1
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        self.cache_read_tokens += call.cache_read_tokens
        self.cache_write_tokens += call.cache_write_tokens
        self.reasoning_tokens += call.reasoning_tokens
        self.nano_aiu += call.nano_aiu

    def token_details(self) -> JSON:
        uncached = self.input_tokens - self.cache_read_tokens - self.cache_write_tokens
        return {
            "input": {"tokenCount": uncached},
            "cache_read": {"tokenCount": self.cache_read_tokens},
            "cache_write": {"tokenCount": self.cache_write_tokens},
            "output": {"tokenCount": self.output_tokens},
        }

    def metrics(self) -> JSON:
        """This model's ``modelMetrics`` entry."""
        return {
            "requests": {"count": self.requests, "cost": _js_number(self.cost)},
            "usage": {
                "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens,
                "cacheReadTokens": self.cache_read_tokens,
                "cacheWriteTokens": self.cache_write_tokens,
                "reasoningTokens": self.reasoning_tokens,
            },
            "totalNanoAiu": self.nano_aiu,
            "tokenDetails": self.token_details(),
        }

    def truth(self) -> JSON:
        """This model's ground-truth totals."""
        return {"requests": self.requests, **_counted(self)}


@dataclass
class _CacheChain:
    """The prompt cache of one (agent, model): how many prefix tokens are cached, and when."""

    prefix: int = 0
    last_ms: int = -(10**15)


@dataclass(frozen=True)
class _Usage:
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def _cache_usage(
    spec: ModelSpec,
    prompt: int,
    chain: _CacheChain,
    now_ms: int,
    ttl_ms: int,
    tail: int,
    fresh: int = 0,
) -> _Usage:
    """Split ``prompt`` into cache read / write / uncached and advance ``chain``.

    ``tail`` is the short uncached suffix after the last cache breakpoint (Anthropic style).
    ``fresh`` is the newest user messages at the prompt's end: the CLI sends them in another
    form later (with the reminders it adds removed), so the next call cannot read them back,
    as real SDK captures show.
    """
    warm = now_ms - chain.last_ms <= ttl_ms
    cached = min(chain.prefix, prompt) if warm else 0
    if spec.openai_cache:
        read, write = cached // 128 * 128, 0
        chain.prefix = prompt - fresh
    else:
        read = cached
        write = prompt - read - min(tail, prompt - read)
        chain.prefix = max(read + write - fresh, 0)
    chain.last_ms = now_ms
    return _Usage(prompt, read, write)


def _nano(spec: ModelSpec, usage: _Usage, output: int) -> int:
    uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
    return (
        uncached * spec.input_nano
        + usage.cache_read_tokens * spec.cache_read_nano
        + usage.cache_write_tokens * spec.cache_write_nano
        + output * spec.output_nano
    )


# ----------------------------------------------------------------------------------------------
# Writing one events.jsonl


class _EventLog:
    """Appends events to one ``events.jsonl``: the envelope, the ``parentId`` chain, counts."""

    def __init__(self, path: Path, rng: random.Random) -> None:
        self._file: IO[str] = path.open("w", encoding="ascii", newline="\n", buffering=1 << 20)
        self._rng = rng
        self.parent: str | None = None
        self.count = 0
        self.bytes = 0

    def _line(self, kind: str, data: JSON, ms: int, agent_id: str | None) -> tuple[str, str]:
        # The envelope is formatted directly (ids, types and times need no escaping): the
        # same bytes as encoding the whole event, for a fraction of the cost.
        event_id = _uuid(self._rng)
        parent = "null" if self.parent is None else f'"{self.parent}"'
        agent = "" if agent_id is None else f',"agentId":"{agent_id}"'
        line = (
            f'{{"type":"{kind}","data":{_encode(data)},"id":"{event_id}",'
            f'"timestamp":"{_iso(ms)}","parentId":{parent}{agent}}}'
        )
        return event_id, line

    def emit(self, kind: str, data: JSON, ms: int, agent_id: str | None = None) -> None:
        """Write one event line."""
        event_id, line = self._line(kind, data, ms, agent_id)
        self._file.write(line + "\n")
        self.bytes += len(line) + 1
        self.count += 1
        self.parent = event_id

    def tear(self, kind: str, data: JSON, ms: int, nul_bytes: int) -> None:
        """Write the first part of an event line, no newline, then NULs: a crash mid-write."""
        _, line = self._line(kind, data, ms, None)
        torn = line[: self._rng.randint(len(line) // 5, len(line) * 4 // 5)] + "\0" * nul_bytes
        self._file.write(torn)
        self.bytes += len(torn)

    def close(self) -> None:
        self._file.close()


# ----------------------------------------------------------------------------------------------
# One session


@dataclass(frozen=True)
class _ToolUse:
    """A tool request the model made, with the result text it will get back."""

    call_id: str
    name: str
    arguments: JSON
    arguments_json: _Json
    result: _Text
    path: str | None = None

    def request(self) -> JSON:
        return {
            "toolCallId": self.call_id,
            "name": self.name,
            "arguments": self.arguments_json,
            "type": "function",
        }


@dataclass
class _Agent:
    """The context of one agent (main, or a sub-agent) in context tokens."""

    fixed_system: int
    fixed_tools: int
    conversation: int = 0
    messages: int = 0
    agent_id: str | None = None
    task_call_id: str | None = None
    fresh: int = 0  # tokens of user messages since the agent's last call (not cached by it)

    @property
    def prompt(self) -> int:
        return self.fixed_system + self.fixed_tools + self.conversation

    def add(self, tokens: int, *, user: bool = False) -> None:
        self.conversation += tokens
        self.messages += 1
        if user:
            self.fresh += tokens


@dataclass
class _Outcome:
    """What a finished session hands back: its truth, store rows and ``workspace.yaml`` size."""

    truth: JSON
    calls: list[_Call]
    crashed_process: int | None
    bytes: int


@dataclass
class _Turn:
    """The user turn (prompt) being worked on."""

    index: int
    interaction_id: str
    turn_id: int = 0


class _Session:
    """Generates one session, event by event, keeping exact token state and cumulative totals.

    A class because streaming generation is a state machine; every value it hands out
    (``_Call``, ``_Outcome``) is immutable or plain data.
    """

    def __init__(self, p: SimulationParams, rng: random.Random, directory: Path) -> None:
        self.p = p
        self.rng = rng
        self.session_id = _uuid(rng)
        self.directory = directory / self.session_id
        self.directory.mkdir(parents=True)
        self.log = _EventLog(self.directory / "events.jsonl", rng)
        self.model = self._pick_model()
        self.repository = rng.choice(_REPOS)
        self.branch = rng.choice(_BRANCHES)
        self.clock = self._start_ms()
        self.start_ms = self.clock
        self.process = 0
        self.rates = {
            "tool": self._int(*p.tool_tokens_per_kb),
            "prose": self._int(*p.prose_tokens_per_kb),
            "json": self._int(*p.json_tokens_per_kb),
        }
        self.item_tokens = self._int(*p.item_tokens)
        # every explore sub-agent of a session gets the same system prompt and tools
        self.explore_fixed = (
            self._int(*p.subagent_system_tokens),
            self._int(*p.subagent_tool_definitions_tokens),
        )
        self.main = _Agent(self._int(*p.system_tokens), self._int(*p.tool_definitions_tokens))
        self.system_text = _padded(_SYSTEM_HEAD, self._bytes_of(self.main.fixed_system), rng)
        self.chains: dict[tuple[str | None, str], _CacheChain] = {}
        self.totals: dict[str, _ModelTotals] = {}
        self.calls: list[_Call] = []
        self.total_nano = 0
        self.premium = 0.0
        self.api_ms = 0
        self.files: dict[str, None] = {}
        self.lines_added = 0
        self.lines_removed = 0
        self.user_messages = 0
        self.compactions = 0
        self.crashed = False
        self.torn = False
        self.summary = ""
        self.agent_ids: dict[str, str] = {}  # task tool-call id -> the sub-agent's envelope agentId

    # -- plan ----------------------------------------------------------------------------------

    def _pick_model(self, exclude: str | None = None) -> str:
        choices = [(m, s) for m, s in self.p.models if m != exclude] or list(self.p.models)
        names = [m for m, _ in choices]
        return self.rng.choices(names, weights=[share for _, share in choices])[0]

    def _start_ms(self) -> int:
        day = _parse_start(self.p.start) + timedelta(days=self.rng.randrange(self.p.days))
        local = datetime(day.year, day.month, day.day, tzinfo=_zone(self.p.timezone))
        seconds = self._int(8 * 3600, 20 * 3600)
        return int((local + timedelta(seconds=seconds)).timestamp()) * 1000 + self.rng.randrange(
            1000
        )

    def _prompt_plan(self) -> list[int]:
        """Main calls per user prompt, summing to a draw from ``calls_per_session``."""
        remaining = self._int(*self.p.calls_per_session) or 1
        plan = []
        while remaining > 0:
            calls = min(remaining, self._int(*self.p.calls_per_prompt))
            plan.append(calls)
            remaining -= calls
        return plan

    def _tokens(self, kind: str, text_bytes: int) -> int:
        """Tokens of ``text_bytes`` of one kind of content at this session's drawn rate."""
        return text_tokens(text_bytes, self.rates[kind])

    def _bytes_of(self, prose_tokens: int) -> int:
        """Bytes of prose that make ``prose_tokens`` tokens (for system prompts)."""
        return prose_tokens * 1000 // self.rates["prose"]

    def _add(self, agent: _Agent, kind: str, text_bytes: int, *, user: bool = False) -> None:
        """Add one message of ``text_bytes`` to ``agent``'s context, with its framing."""
        agent.add(self._tokens(kind, text_bytes) + self.item_tokens, user=user)

    def _int(self, low: int, high: int) -> int:
        """A uniform integer in [low, high]; ``random.randint`` is several times slower."""
        return low + int(self.rng.random() * (high - low + 1))

    def _tick(self, low: int, high: int) -> int:
        self.clock += self._int(low, high)
        return self.clock

    # -- the session -----------------------------------------------------------------------------

    def run(self) -> _Outcome:
        """Write the whole session; return its truth."""
        plan = self._prompt_plan()
        crash = self.rng.random() < self.p.crash_probability
        self._start()
        for index, calls in enumerate(plan):
            if index and self.rng.random() < self.p.resume_probability:
                self._shutdown()
                self._resume()
            last = index == len(plan) - 1
            self._prompt(index, calls, crash_at_end=crash and last)
            if self.crashed:
                break
        if not self.crashed:
            self._shutdown()
        self.log.close()
        return self._outcome()

    def _context(self) -> JSON:
        cwd = "/home/dev/src/" + self.repository.split("/")[1]
        return {"cwd": cwd, "gitRoot": cwd, "repository": self.repository, "branch": self.branch}

    def _start(self) -> None:
        self.start_ms = self.clock - self._int(5, 40)
        self.log.emit(
            "session.start",
            {
                "sessionId": self.session_id,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": self.p.copilot_version,
                "startTime": _iso(self.start_ms),
                "selectedModel": self.model,
                "context": self._context(),
                "alreadyInUse": False,
                "remoteSteerable": False,
            },
            self.clock,
        )
        self._model_change(None)

    def _model_change(self, previous: str | None) -> None:
        data: JSON = {"newModel": self.model, "reasoningEffort": None, "contextTier": None}
        if previous is not None:
            data = {"previousModel": previous, **data}
        self.log.emit("session.model_change", data, self._tick(800, 4000))
        self.log.emit(
            "system.message", {"role": "system", "content": self.system_text}, self._tick(300, 1500)
        )

    def _resume(self) -> None:
        self.process += 1
        self._tick(3_600_000, 20 * 3_600_000)
        previous = self.model
        if self.rng.random() < self.p.model_switch_probability:
            self.model = self._pick_model(exclude=previous)
        self.log.emit(
            "session.resume",
            {
                "resumeTime": _iso(self.clock),
                "eventCount": self.log.count,
                "selectedModel": self.model,
                "context": self._context(),
                "alreadyInUse": False,
                "remoteSteerable": False,
                "eventsFileSizeBytes": self.log.bytes,
            },
            self.clock,
        )
        self._model_change(previous if previous != self.model else None)

    def _prompt(self, index: int, calls: int, crash_at_end: bool) -> None:
        """One user prompt: the message, its agent loop, maybe an autopilot nudge, a checkpoint."""
        if index:
            self._tick(5_000, 900_000)  # the user reads, thinks, types
        turn = self._user_message(index, self._ask(), autopilot=False)
        for k in range(calls):
            final = k == calls - 1
            self._main_call(turn, final=final, interrupt=crash_at_end and final)
            if self.crashed:
                return
        if self.rng.random() < self.p.autopilot_probability:
            nudge = self._user_message(index, _text(_NUDGE), autopilot=True)
            self._main_call(nudge, final=True, interrupt=False, task_complete=True)
        self._checkpoint()

    def _ask(self) -> _Text:
        head = f"{self.rng.choice(_ASKS)} {self._path()}. "
        size = _skewed(self.rng, self.p.user_message_tokens) * BYTES_PER_TOKEN
        return _padded(head, size, self.rng)

    def _path(self) -> str:
        module = self.rng.choice(_MODULES)
        return f"src/{module}/{self.rng.choice(_IDENTS)}_{module}.py"

    def _user_message(self, index: int, content: _Text, autopilot: bool) -> _Turn:
        turn = _Turn(index, _uuid(self.rng))
        data: JSON = {"content": content, "interactionId": turn.interaction_id}
        if autopilot:
            data["isAutopilotContinuation"] = True
        else:
            self.user_messages += 1
            self.summary = self.summary or content.raw[:60].rstrip(" .")
        self.log.emit("user.message", data, self._tick(5, 60))
        self._add(self.main, "prose", len(content), user=True)
        return turn

    # -- calls -----------------------------------------------------------------------------------

    def _main_call(
        self, turn: _Turn, final: bool, interrupt: bool, task_complete: bool = False
    ) -> None:
        """One main-agent LLM call: turn_start, message, tools, turn_end (or a crash)."""
        if self.main.prompt >= self.p.compaction_threshold and self.main.conversation:
            self._compact()
        turn_id = str(turn.turn_id)
        turn.turn_id += 1
        self.log.emit(
            "assistant.turn_start",
            {"turnId": turn_id, "interactionId": turn.interaction_id, "model": self.model},
            self._tick(1, 400),
        )
        first = turn_id == "0" and not task_complete
        if first:
            self._charge_premium()
        if interrupt:
            self._interrupt(turn)
            return
        allow_task = not final and self.rng.random() < self.p.subagent_probability
        uses = self._tool_uses(self.model, final, allow_task, task_complete)
        content = self._content(uses, final)
        call = self._call(
            "main", self.model, self.main, content, uses, turn.index, "user" if first else "agent"
        )
        self._message(call, content, uses, turn, turn_id)
        self._run_tools(uses, turn, turn_id, self.main)
        self.log.emit("assistant.turn_end", {"turnId": turn_id}, self._tick(1, 60))

    def _charge_premium(self) -> None:
        multiplier = MODELS[self.model].multiplier
        self.premium += multiplier
        self.totals.setdefault(self.model, _ModelTotals()).cost += multiplier

    def _interrupt(self, turn: _Turn) -> None:
        """The process dies while the call is in flight: no message, no turn_end, no shutdown."""
        spec = MODELS[self.model]
        usage = self._usage(spec, self.main)
        self.calls.append(
            _Call(
                "main", self.model, usage.input_tokens, usage.cache_read_tokens,
                usage.cache_write_tokens, 0, 0, 0, self.process, True, turn.index, None,
                "user" if turn.turn_id == 1 else "agent", "", 0, 0.0, 0.0, self.clock,
            )
        )  # fmt: skip
        self.crashed = True
        if self.rng.random() < self.p.torn_line_probability:
            self.torn = True
            data = {
                "messageId": _uuid(self.rng),
                "model": self.model,
                "content": _prose(400, self.rng),
            }
            nuls = self.rng.choice((0, self._int(1, 4096)))
            self.log.tear("assistant.message", data, self._tick(2000, 9000), nuls)

    def _usage(self, spec: ModelSpec, agent: _Agent) -> _Usage:
        chain = self.chains.setdefault((agent.agent_id, spec.name), _CacheChain())
        ttl_ms = self.p.cache_ttl_seconds * 1000
        usage = _cache_usage(
            spec, agent.prompt, chain, self.clock, ttl_ms, self._int(1, 12), agent.fresh
        )
        agent.fresh = 0
        return usage

    def _call(
        self,
        kind: str,
        model: str,
        agent: _Agent,
        content: _Text,
        uses: list[_ToolUse],
        turn_index: int,
        initiator: str,
    ) -> _Call:
        """Account one completed call whose message is ``content`` + ``uses``; advance the clock."""
        spec = MODELS[model]
        arguments = sum(len(u.arguments_json) for u in uses)
        visible = self._tokens("prose", len(content)) + self._tokens("json", arguments)
        reasoning = self._int(0, visible) if spec.reasoning else 0
        usage = self._usage(spec, agent)
        output = visible + reasoning
        ttft = 400 + usage.input_tokens / 40 + self.rng.random() * 1500
        itl = 5 + self.rng.random() * 20
        duration = int(ttft + output * itl)
        call = _Call(
            kind, model, usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
            output, reasoning, _nano(spec, usage, output), self.process, False, turn_index,
            agent.task_call_id, initiator, "tool_calls" if uses else "stop", duration,
            round(ttft, 6), round(itl, 6), self._tick(duration, duration),
        )  # fmt: skip
        self.calls.append(call)
        self.totals.setdefault(model, _ModelTotals()).add(call)
        self.total_nano += call.nano_aiu
        self.api_ms += duration
        agent.add(visible + self.item_tokens)
        return call

    def _message(
        self, call: _Call, content: _Text, uses: list[_ToolUse], turn: _Turn, turn_id: str | None
    ) -> None:
        data: JSON = {
            "messageId": _uuid(self.rng),
            "model": call.model,
            "content": content,
            "toolRequests": [u.request() for u in uses],
            "interactionId": turn.interaction_id,
        }
        if turn_id is not None:
            data["turnId"] = turn_id
        data["outputTokens"] = call.output_tokens
        data["requestId"] = _request_id(self.rng)
        data["apiCallId"] = _uuid(self.rng)
        agent_id = None
        if call.task_call_id is not None:
            data = {"parentToolCallId": call.task_call_id, **data}
            agent_id = self.agent_ids[call.task_call_id]
        self.log.emit("assistant.message", data, call.end_ms, agent_id)

    # -- message content -------------------------------------------------------------------------

    def _content(self, uses: list[_ToolUse], final: bool) -> _Text:
        """The assistant text: the whole answer when final, else short or no commentary."""
        budget = _skewed(self.rng, self.p.output_tokens) * BYTES_PER_TOKEN
        if final and not uses:
            return _padded("Done. ", budget, self.rng)
        spent = sum(len(u.arguments_json) for u in uses)
        if self.rng.random() < 0.5:
            return _text("")
        return _prose(min(max(budget - spent, 40), 600), self.rng)

    def _tool_uses(
        self, model: str, final: bool, allow_task: bool, task_complete: bool = False
    ) -> list[_ToolUse]:
        """The tool requests of a call: none when final, ``task_complete`` for a nudge."""
        spec = MODELS[model]
        if task_complete:
            summary = _prose(self._int(40, 400), self.rng)
            return [
                self._use(
                    spec, "task_complete", {"summary": summary}, _text("Task marked complete.")
                )
            ]
        if final:
            return []
        count = self._int(*self.p.tools_per_call)
        uses = [self._random_use(spec) for _ in range(count)]
        if allow_task:
            uses.append(self._task_use(spec))
        return uses

    def _use(
        self, spec: ModelSpec, name: str, arguments: JSON, result: _Text, path: str | None = None
    ) -> _ToolUse:
        call_id = _token_id(spec.tool_call_prefix, spec.tool_call_chars, self.rng)
        return _ToolUse(call_id, name, arguments, _Json(_encode(arguments)), result, path)

    def _result_text(self) -> _Text:
        return _code(_skewed(self.rng, self.p.tool_result_tokens) * BYTES_PER_TOKEN, self.rng)

    def _random_use(self, spec: ModelSpec) -> _ToolUse:
        rng = self.rng
        path = self._path()
        kind = rng.choices(
            ("view", "bash", "grep", "edit", "create"), weights=(30, 25, 15, 20, 10)
        )[0]
        if kind == "view":
            return self._use(spec, "view", {"path": path}, self._result_text())
        if kind == "bash":
            arguments = {"command": rng.choice(_COMMANDS), "description": _prose(40, rng)}
            return self._use(spec, "bash", arguments, self._result_text())
        if kind == "grep":
            arguments = {"pattern": rng.choice(_IDENTS), "path": path.rsplit("/", 1)[0]}
            return self._use(spec, "grep", arguments, self._result_text())
        budget = _skewed(rng, self.p.output_tokens) * BYTES_PER_TOKEN
        if kind == "edit":
            old, new = _code(budget // 3, rng), _code(budget * 2 // 3, rng)
            arguments = {"path": path, "old_str": old, "new_str": new}
            return self._use(
                spec, "edit", arguments, _text(f"File {path} updated with changes."), path
            )
        arguments = {"path": path, "file_text": _code(budget, rng)}
        return self._use(spec, "create", arguments, _text(f"Created file {path}."), path)

    def _task_use(self, spec: ModelSpec) -> _ToolUse:
        prompt = _padded(f"In {self._path()}, find ", self._int(200, 1200), self.rng)
        arguments = {
            "name": f"explore-{self.rng.choice(_IDENTS)}",
            "agent_type": "explore",
            "description": _prose(40, self.rng),
            "mode": "sync",
            "prompt": prompt,
        }
        return self._use(spec, "task", arguments, _text(""))

    # -- tools and sub-agents --------------------------------------------------------------------

    def _run_tools(
        self, uses: list[_ToolUse], turn: _Turn, turn_id: str | None, agent: _Agent
    ) -> None:
        """All tool starts, then each completion (a ``task`` runs its sub-agent in between)."""
        agent_id = agent.agent_id
        model = self.p.subagent_model if agent_id else self.model
        for use in uses:
            data = self._tool_data(use.call_id, agent, turn_id)
            data |= {"toolName": use.name, "arguments": use.arguments_json}
            self.log.emit("tool.execution_start", data, self._tick(1, 3), agent_id)
        for use in uses:
            result = self._subagent(use, turn) if use.name == "task" else use.result
            self._record_change(use)
            data = self._tool_data(use.call_id, agent, turn_id)
            data |= {"model": model, "interactionId": turn.interaction_id}
            if turn_id is not None:
                data["turnId"] = turn_id
            data |= {"success": True, "result": {"content": result, "detailedContent": result}}
            self.log.emit("tool.execution_complete", data, self._tick(5, 3000), agent_id)
            self._add(agent, "tool", len(result))
            if use.name == "task_complete":
                summary = use.arguments["summary"]
                self.log.emit(
                    "session.task_complete", {"summary": summary, "success": True}, self.clock
                )

    @staticmethod
    def _tool_data(call_id: str, agent: _Agent, turn_id: str | None) -> JSON:
        data: JSON = {"toolCallId": call_id}
        if agent.task_call_id is not None:
            data = {"parentToolCallId": agent.task_call_id, **data}
        elif turn_id is not None:
            data["turnId"] = turn_id
        return data

    def _record_change(self, use: _ToolUse) -> None:
        """Count an edit's or a created file's lines for ``codeChanges``."""
        if use.path is None:
            return
        self.files[use.path] = None
        args = use.arguments
        self.lines_added += _lines(args.get("new_str") or args["file_text"])
        self.lines_removed += _lines(args.get("old_str"))

    def _subagent(self, task: _ToolUse, turn: _Turn) -> _Text:
        """Run an explore sub-agent for ``task``; return its final answer (the task's result)."""
        p, rng = self.p, self.rng
        agent = _Agent(*self.explore_fixed, agent_id=_uuid(rng), task_call_id=task.call_id)
        self.agent_ids[task.call_id] = str(agent.agent_id)
        started, names = self.clock, {"agentName": "explore", "agentDisplayName": "Explore Agent"}
        self.log.emit(
            "subagent.started",
            {"toolCallId": task.call_id, **names, "agentDescription": _EXPLORE_DESCRIPTION,
             "model": p.subagent_model},
            self._tick(2, 20), agent.agent_id,
        )  # fmt: skip
        system = _padded("You are an exploration agent. ", self._bytes_of(agent.fixed_system), rng)
        prompt: _Text = task.arguments["prompt"]
        self.log.emit("system.message", {"role": "system", "content": system}, self._tick(5, 50),
                      agent.agent_id)  # fmt: skip
        self.log.emit("user.message", {"content": prompt, "interactionId": turn.interaction_id},
                      self._tick(2, 20), agent.agent_id)  # fmt: skip
        self._add(agent, "prose", len(prompt), user=True)
        first_call = len(self.calls)
        calls = self._int(*p.subagent_calls)
        answer = _text("")
        for j in range(calls):
            uses = self._tool_uses(p.subagent_model, j == calls - 1, allow_task=False)
            answer = self._content(uses, final=not uses)
            call = self._call("subagent", p.subagent_model, agent, answer, uses, turn.index,
                              "sub-agent")  # fmt: skip
            self._message(call, answer, uses, turn, None)
            self._run_tools(uses, turn, None, agent)
        mine = self.calls[first_call:]
        self.log.emit(
            "subagent.completed",
            {"toolCallId": task.call_id, **names, "model": p.subagent_model,
             "totalToolCalls": agent.messages - 1 - calls,
             "totalTokens": sum(c.input_tokens + c.output_tokens for c in mine),
             "durationMs": self.clock - started},
            self._tick(2, 30), agent.agent_id,
        )  # fmt: skip
        return answer

    # -- compaction, checkpoints, shutdown ---------------------------------------------------------

    def _compact(self) -> None:
        """Summarise the conversation with one extra LLM call; the summary replaces it."""
        main, spec = self.main, MODELS[self.model]
        snapshot = self._snapshot()
        self.log.emit(
            "session.compaction_start",
            {**snapshot, "trigger": "threshold", "model": self.model},
            self._tick(5, 50),
        )
        usage = self._usage(spec, main)
        usage = _Usage(usage.input_tokens, usage.cache_read_tokens, 0)  # reads, writes nothing
        chain = self.chains[(None, spec.name)]
        chain.prefix = min(usage.cache_read_tokens, main.fixed_system + main.fixed_tools)
        summary_tokens = self._int(*self.p.compaction_summary_tokens)
        summary = _padded("<overview>The user asked to ", summary_tokens * 4, self.rng)
        nano = _nano(spec, usage, summary_tokens)
        duration = 2000 + summary_tokens * 20
        self.calls.append(
            _Call(
                "compaction", self.model, usage.input_tokens, usage.cache_read_tokens, 0,
                summary_tokens, 0, nano, self.process, False, -1, None, "compaction", "stop",
                duration, 0.0, 0.0, self._tick(duration, duration),
            )
        )  # fmt: skip
        self.total_nano += nano
        self.compactions += 1
        pre, removed = main.prompt, main.messages
        main.conversation, main.messages = summary_tokens, 1
        self.log.emit(
            "session.compaction_complete",
            {"success": True, "preCompactionTokens": pre, "postCompactionTokens": main.prompt,
             "preCompactionMessagesLength": removed, "messagesRemoved": removed,
             "tokensRemoved": pre - main.prompt, "summaryContent": summary,
             "checkpointNumber": self.compactions,
             "compactionTokensUsed": {
                 "inputTokens": usage.input_tokens, "outputTokens": summary_tokens,
                 "cacheReadTokens": usage.cache_read_tokens, "cacheWriteTokens": 0,
                 "model": self.model, "duration": duration},
             "requestId": _request_id(self.rng)},
            self.clock,
        )  # fmt: skip

    def _snapshot(self) -> JSON:
        return {
            "currentTokens": self.main.prompt,
            "systemTokens": self.main.fixed_system,
            "conversationTokens": self.main.conversation,
            "toolDefinitionsTokens": self.main.fixed_tools,
        }

    def _checkpoint(self) -> None:
        expires = _iso(self.clock + self.p.cache_ttl_seconds * 1000)
        self.log.emit(
            "session.usage_checkpoint",
            {
                "totalNanoAiu": self.total_nano,
                "totalPremiumRequests": _js_number(self.premium),
                "modelCacheState": [
                    {"modelId": self.model, "cacheExpiresAt": expires,
                     "cacheTtlSeconds": self.p.cache_ttl_seconds}
                ],
            },
            self._tick(5, 30),
        )  # fmt: skip

    def _shutdown(self) -> None:
        """The process exits normally: cumulative totals (compactions only in totalNanoAiu)."""
        overall = _ModelTotals()
        for totals in self.totals.values():
            for name in (
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
            ):
                setattr(overall, name, getattr(overall, name) + getattr(totals, name))
        self.log.emit(
            "session.shutdown",
            {
                "shutdownType": "routine",
                "totalPremiumRequests": _js_number(self.premium),
                "totalNanoAiu": self.total_nano,
                "tokenDetails": overall.token_details(),
                "totalApiDurationMs": self.api_ms,
                "sessionStartTime": self.start_ms,
                "eventsFileSizeBytes": self.log.bytes,
                "codeChanges": {
                    "linesAdded": self.lines_added,
                    "linesRemoved": self.lines_removed,
                    "filesModified": list(self.files),
                },
                "modelMetrics": {m: t.metrics() for m, t in self.totals.items() if t.requests},
                "currentModel": self.model,
                **self._snapshot(),
            },
            self._tick(100, 5000),
        )

    # -- results ---------------------------------------------------------------------------------

    def _workspace_yaml(self) -> str:
        context = self._context()
        return (
            f"id: {self.session_id}\ncwd: {context['cwd']}\ngit_root: {context['gitRoot']}\n"
            f"repository: {self.repository}\nbranch: {self.branch}\nsummary: {self.summary}\n"
            f"created_at: {_iso(self.start_ms)}\nupdated_at: {_iso(self.clock)}\n"
        )

    def workspace_row(self) -> JSON:
        """The session's ``sessions`` row in the store (cwd ... updated_at)."""
        return {
            "cwd": self._context()["cwd"],
            "repository": self.repository,
            "branch": self.branch,
            "summary": self.summary,
            "created_at": _iso(self.start_ms),
            "updated_at": _iso(self.clock),
        }

    def _outcome(self) -> _Outcome:
        yaml = self._workspace_yaml()
        (self.directory / "workspace.yaml").write_text(yaml, encoding="ascii")
        kinds = [c.kind for c in self.calls]
        truth: JSON = {
            "session_id": self.session_id,
            "events_file": f"session-state/{self.session_id}/events.jsonl",
            "processes": self.process + 1,
            "crashed": self.crashed,
            "torn_line": self.torn,
            "user_messages": self.user_messages,
            "llm_calls": len(self.calls),
            "main_calls": kinds.count("main"),
            "subagent_calls": kinds.count("subagent"),
            "compaction_calls": kinds.count("compaction"),
            "interrupted_calls": sum(c.interrupted for c in self.calls),
            "premium_requests": _js_number(self.premium),
            "system_tokens": self.main.fixed_system,
            "tool_definitions_tokens": self.main.fixed_tools,
            # what the session drew and the reconstruction is not told
            "drawn": {
                "fixed_tokens": self.main.fixed_system + self.main.fixed_tools,
                "subagent_fixed_tokens": sum(self.explore_fixed),
                "tokens_per_kb": dict(self.rates),
                "item_tokens": self.item_tokens,
            },
            "total_nano_aiu": self.total_nano,
            "models": {m: t.truth() for m, t in self.totals.items() if t.requests},
            "calls": [c.truth() for c in self.calls],
        }
        crashed_process = self.process if self.crashed else None
        return _Outcome(truth, self.calls, crashed_process, self.log.bytes + len(yaml))


# ----------------------------------------------------------------------------------------------
# The store and the ground-truth file

_STORE_DDL = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (8);
CREATE TABLE sessions (
  id TEXT PRIMARY KEY, cwd TEXT, repository TEXT, host_type TEXT, branch TEXT,
  summary TEXT, created_at TEXT, updated_at TEXT
);
CREATE TABLE assistant_usage_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id),
  turn_index INTEGER,
  agent_id TEXT,
  parent_tool_call_id TEXT,
  model TEXT NOT NULL,
  input_tokens INTEGER,
  output_tokens INTEGER,
  cache_read_tokens INTEGER,
  cache_write_tokens INTEGER,
  reasoning_tokens INTEGER,
  total_nano_aiu INTEGER,
  request_multiplier REAL,
  duration_ms INTEGER,
  time_to_first_token_ms REAL,
  inter_token_latency_ms REAL,
  initiator TEXT,
  api_endpoint TEXT,
  reasoning_effort TEXT,
  finish_reason TEXT,
  content_filter_triggered INTEGER,
  token_details_json TEXT,
  created_at TEXT
);
"""
_STORE_INSERT = (
    "INSERT INTO assistant_usage_events (session_id, turn_index, agent_id, parent_tool_call_id, "
    "model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, "
    "total_nano_aiu, request_multiplier, duration_ms, time_to_first_token_ms, "
    "inter_token_latency_ms, initiator, api_endpoint, reasoning_effort, finish_reason, "
    "content_filter_triggered, token_details_json, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _token_details_json(spec: ModelSpec, call: _Call) -> str:
    """Itemised prices as the CLI stores them (keys sorted, prices per batch of 1M tokens)."""
    items = (
        ("input", call.uncached_tokens, spec.input_nano),
        ("cache_read", call.cache_read_tokens, spec.cache_read_nano),
        ("cache_write", call.cache_write_tokens, spec.cache_write_nano),
        ("output", call.output_tokens, spec.output_nano),
    )
    return _dumps(
        [
            {"batchSize": 1_000_000, "costPerBatch": price * 1_000_000, "tokenCount": count,
             "tokenType": kind}
            for kind, count, price in items
        ]
    )  # fmt: skip


def _store_row(session_id: str, call: _Call) -> tuple[object, ...]:
    spec = MODELS[call.model]
    return (
        session_id, call.turn_index, call.task_call_id, call.task_call_id, call.model,
        call.input_tokens, call.output_tokens, call.cache_read_tokens, call.cache_write_tokens,
        call.reasoning_tokens, call.nano_aiu, spec.multiplier, call.duration_ms, call.ttft_ms,
        call.itl_ms, call.initiator, spec.api_endpoint, "medium" if spec.reasoning else None,
        call.finish_reason, 0, _token_details_json(spec, call), _iso(call.end_ms),
    )  # fmt: skip


def _stored_calls(outcome: _Outcome) -> Iterator[_Call]:
    """Main and sub-agent calls that reached the store (a crashed process loses its WAL)."""
    for call in outcome.calls:
        if call.kind != "compaction" and call.process != outcome.crashed_process:
            yield call


def write_capture_tree(out: Path, capture: Capture) -> Path:
    """Write an SDK capture as a Copilot home: ``session-state/<id>/events.jsonl`` (the log the
    CLI would have written) and ``session-store.db`` holding each call's true usage, as
    CLI 1.0.80+ persists it. ``agentcost validate OUT`` then measures the reconstruction
    against real per-call truth. Returns the session directory."""
    session_dir = out / "session-state" / capture.session_id
    if session_dir.exists():
        raise UsageError(f"{session_dir} already exists; choose another output directory")
    session_dir.mkdir(parents=True)
    (session_dir / "events.jsonl").write_text(capture.text(), encoding="utf-8")
    db_path = out / "session-store.db"
    fresh = not db_path.exists()
    with closing(sqlite3.connect(db_path)) as db:
        if fresh:
            db.executescript(_STORE_DDL)
        db.execute("INSERT INTO sessions (id, host_type) VALUES (?, 'cli')", (capture.session_id,))
        db.executemany(_STORE_INSERT, (_truth_row(capture.session_id, u) for u in capture.usage))
        db.commit()
    return session_dir


def _truth_row(session_id: str, u: dict[str, Any]) -> tuple[object, ...]:
    return (
        session_id, None, u["agent_id"], u["agent_id"], u["model"], u["input_tokens"],
        u["output_tokens"], u["cache_read_tokens"], u["cache_write_tokens"],
        u["reasoning_tokens"], u["total_nano_aiu"], u["request_multiplier"], u["duration_ms"],
        None, None, u["initiator"], None, None, None, 0, None, u["created_at"],
    )  # fmt: skip


class _Outputs:
    """The files shared by all sessions: ``ground_truth.json`` and the optional store."""

    def __init__(self, out: Path, plans: Sequence[SimulationParams], store: bool) -> None:
        self._truth: IO[str] = (out / "ground_truth.json").open("w", encoding="ascii")
        header = {
            "generator": "agentcost simulate",
            "size_bytes_per_token": BYTES_PER_TOKEN,
            "params": [asdict(p) for p in plans],
        }
        self._truth.write(_dumps(header)[:-1] + ',"sessions":[')
        self._db = sqlite3.connect(out / "session-store.db") if store else None
        if self._db is not None:
            self._db.executescript(_STORE_DDL)
        self.sessions = 0
        self.llm_calls = 0
        self.total_nano = 0

    def add(self, outcome: _Outcome, workspace: JSON) -> None:
        """Record one kept session in the ground truth and the store."""
        self._truth.write(("\n" if not self.sessions else ",\n") + _dumps(outcome.truth))
        self.sessions += 1
        self.llm_calls += int(outcome.truth["llm_calls"])
        self.total_nano += int(outcome.truth["total_nano_aiu"])
        if self._db is None:
            return
        session_id = str(outcome.truth["session_id"])
        self._db.execute(
            "INSERT INTO sessions (id, cwd, repository, host_type, branch, summary, created_at, "
            "updated_at) VALUES (?, ?, ?, 'cli', ?, ?, ?, ?)",
            (session_id, *workspace.values()),
        )
        rows = (_store_row(session_id, c) for c in _stored_calls(outcome))
        self._db.executemany(_STORE_INSERT, rows)
        self._db.commit()

    def close(self, bytes_written: int) -> None:
        totals = {
            "sessions": self.sessions,
            "llm_calls": self.llm_calls,
            "total_nano_aiu": self.total_nano,
            "session_state_bytes": bytes_written,
        }
        self._truth.write('\n],"totals":' + _dumps(totals) + "}\n")
        self._truth.close()
        if self._db is not None:
            self._db.close()


# ----------------------------------------------------------------------------------------------
# Entry point


def _run_plan(plan: SimulationParams, plan_index: int, state_dir: Path, outputs: _Outputs) -> int:
    """Generate one plan's sessions; return the bytes of the sessions kept."""
    written, index = 0, 0
    target = None if plan.target_size_mb is None else plan.target_size_mb * MB
    while True:
        rng = random.Random(f"{plan.seed}:{plan_index}:{index}")
        session = _Session(plan, rng, state_dir)
        outcome = session.run()
        after = written + outcome.bytes
        if target is not None and index and after - target > target - written:
            shutil.rmtree(session.directory)  # overshoots more than stopping short would miss
            return written
        outputs.add(outcome, session.workspace_row())
        written, index = after, index + 1
        if (target is not None and written >= target) or index == plan.sessions:
            return written


def simulate(
    out: Path, plans: SimulationParams | Sequence[SimulationParams], *, store: bool = False
) -> SimulationSummary:
    """Write a session-state tree, ``ground_truth.json`` and (``store``) ``session-store.db``.

    ``plans`` is one population or several (each with its own seed), written one after another
    into the same tree. ``out`` must not already hold a ``session-state`` directory.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     summary = simulate(Path(tmp), SimulationParams(seed=1, sessions=2))
    >>> summary.sessions
    2
    """
    plans = [plans] if isinstance(plans, SimulationParams) else list(plans)
    state_dir = out / "session-state"
    if state_dir.exists():
        raise UsageError(f"{state_dir} already exists; choose an empty output directory")
    state_dir.mkdir(parents=True)
    began = time.perf_counter()
    outputs = _Outputs(out, plans, store)
    written = sum(_run_plan(plan, i, state_dir, outputs) for i, plan in enumerate(plans))
    outputs.close(written)
    return SimulationSummary(
        outputs.sessions, outputs.llm_calls, written, time.perf_counter() - began
    )


__all__ = [
    "BYTES_PER_TOKEN",
    "MB",
    "MODELS",
    "ModelSpec",
    "SimulationParams",
    "SimulationSummary",
    "parse_model_shares",
    "parse_range",
    "simulate",
    "text_tokens",
    "write_capture_tree",
]
