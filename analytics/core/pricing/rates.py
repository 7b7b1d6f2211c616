"""Rate tables: what each model costs, read from TOML files and validated.

A rate table is data, not code. The bundled tables live in ``analytics/rate_tables/*.toml``; a
user's own table (``--rates FILE``) has the same format and can override single models of a
bundled one (:func:`merge_rate_tables`). Every error names the file and the key, and ends with a
hint.

File format
-----------
Top level (all required unless marked optional)::

    unit = "usd_per_million_tokens"        # or "ai_credits_per_million_tokens"
    usd_per_unit = "0.01"                  # only for ai_credits_...: dollars per credit
    currency = "USD"                       # the currency usd_per_unit converts to (USD only)
    source = "https://..."                 # where the prices come from
    checked = "2026-11-29"                 # when they were last checked (YYYY-MM-DD)
    description = "..."                    # optional

    [defaults]                             # optional: price keys merged into every price entry
    per_request = "0.04"

One table per model, keyed by the model id the table prices (quote ids containing dots)::

    [models."claude-sonnet-4.6"]
    aliases = ["claude-sonnet-4-6"]        # optional: other exact names, case-insensitive
    patterns = ["claude-sonnet-4.6-*"]     # optional: fnmatch globs, tried after ids and aliases
    excludes = ["*-tts", "*-tts-*"]        # optional: globs a name matched by `patterns` must
                                           # not match (``gemini-2.5-pro-*`` but not its TTS)
    source = "..."                         # optional: where this model's prices come from
    note = "..."                           # optional

One or more price entries per model, each valid from ``effective_from`` (inclusive) until
``effective_until`` (exclusive); either may be left out for an open end. Entries of one model
must not overlap. Dates are UTC midnight; a time may be given as ``2026-08-16T16:00:00Z``::

    [[models."claude-sonnet-4.6".prices]]
    effective_from = "2026-02-17"
    input = "3.00"                         # uncached input, per million tokens, in `unit`
    output = "15.00"                       # output (reasoning included unless priced apart)
    cache_read = "0.30"                    # optional
    cache_write_5m = "3.75"                # optional: cache writes with a 5-minute lifetime
    cache_write_1h = "6.00"                # optional: cache writes with a 1-hour lifetime
    reasoning = "15.00"                    # optional: reasoning tokens priced apart from output
    per_request = "0"                      # optional: charged once per user prompt (in `unit`'s
                                           # money: dollars or credits)
    multiplier = "1"                       # optional: per_request is charged multiplier times
    web_search = "0.01"                    # optional: charged per server-side web search request
                                           # (in `unit`'s money); calls with searches and no such
                                           # price stay unpriced
    fast_multiplier = "6"                  # optional: calls run at speed "fast" pay every token
                                           # price (tiers included) times this; calls at "fast"
                                           # of a model without it stay unpriced

Long-context tiers replace the token prices of the whole request when its prompt (all input
tokens, cached or not) is larger than ``above_prompt_tokens``; the largest such tier wins (a
cliff, not per-bucket pricing)::

    [[models."gpt-5.4".prices.tiers]]
    above_prompt_tokens = 272000
    input = "5.00"
    output = "22.50"
    cache_read = "0.50"

Time-of-day windows replace the token prices of calls that start inside them, in a named IANA
timezone; ``hours`` are ``HH:MM-HH:MM`` ranges (end exclusive, wrapping past midnight when the end
is not after the start) and ``days`` (optional) limits them to local weekdays. A price entry
has tiers or windows, not both::

    [[models."deepseek-chat".prices.windows]]
    name = "night discount"
    timezone = "UTC"
    hours = ["16:30-00:30"]
    days = ["mon", "tue", "wed", "thu", "fri"]
    input = "0.135"
    output = "0.55"

Prices are TOML strings parsed as :class:`decimal.Decimal`, so no float ever touches money;
a bare number is rejected. A price may have at most 12 decimal places once converted to
dollars per million tokens, so that the price of one token fits ``schema.MONEY`` (scale 18)
exactly.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal, Inexact, InvalidOperation, localcontext
from importlib import resources
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from analytics.core.errors import RateTableError

#: Units a table may state, with the fixed dollars-per-unit where the unit implies one.
UNITS: dict[str, Decimal | None] = {
    "usd_per_million_tokens": Decimal(1),
    "ai_credits_per_million_tokens": None,  # the file must state usd_per_unit
}

#: Token price keys, in the order they are written.
TOKEN_PRICE_KEYS = (
    "input",
    "output",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "reasoning",
)
#: Request price keys of a price entry.
REQUEST_KEYS = ("per_request", "multiplier", "web_search")
#: Speeds other than the standard one that a price entry can price, by their key.
SPEED_KEYS = {"fast": "fast_multiplier"}
#: Weekday names accepted in ``days``, Monday first (polars numbers them 1..7 in this order).
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

_TOP_KEYS = {"unit", "usd_per_unit", "currency", "source", "checked", "description", "defaults"}
_TOP_KEYS |= {"models"}
_MODEL_KEYS = {"aliases", "patterns", "excludes", "source", "note", "prices"}
_PERIOD_KEYS = {"effective_from", "effective_until", "tiers", "windows"}
_PERIOD_KEYS |= set(TOKEN_PRICE_KEYS) | set(REQUEST_KEYS) | set(SPEED_KEYS.values())
_TIER_KEYS = {"above_prompt_tokens", *TOKEN_PRICE_KEYS}
_WINDOW_KEYS = {"name", "timezone", "hours", "days", *TOKEN_PRICE_KEYS}
_HOURS = re.compile(r"^(\d{2}):(\d{2})-(\d{2}):(\d{2})$")
_MONEY_SCALE = 18


@dataclass(frozen=True)
class PriceSet:
    """Token prices in the table's unit per million tokens; ``None`` means not priced."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write_5m: Decimal | None = None
    cache_write_1h: Decimal | None = None
    reasoning: Decimal | None = None

    def scaled(self, factor: Decimal) -> PriceSet:
        """The same prices multiplied by ``factor`` (exactly), e.g. to change the unit."""
        return PriceSet(
            input=_exact_mul(self.input, factor) or Decimal(0),
            output=_exact_mul(self.output, factor) or Decimal(0),
            cache_read=_exact_mul(self.cache_read, factor),
            cache_write_5m=_exact_mul(self.cache_write_5m, factor),
            cache_write_1h=_exact_mul(self.cache_write_1h, factor),
            reasoning=_exact_mul(self.reasoning, factor),
        )

    def as_dict(self) -> dict[str, Decimal | None]:
        """The prices by key, in file order."""
        return {key: getattr(self, key) for key in TOKEN_PRICE_KEYS}


@dataclass(frozen=True)
class Tier:
    """Prices replacing the base prices for requests whose prompt exceeds a size."""

    above_prompt_tokens: int
    prices: PriceSet


@dataclass(frozen=True)
class TimeWindow:
    """Prices replacing the base prices for calls starting inside local-time ranges."""

    name: str
    timezone: str
    hours: tuple[tuple[time, time], ...]
    prices: PriceSet
    days: tuple[str, ...] = WEEKDAYS


@dataclass(frozen=True)
class PricePeriod:
    """A model's prices over one span of time, with its tiers or windows."""

    prices: PriceSet
    effective_from: datetime | None = None
    effective_until: datetime | None = None
    per_request: Decimal = Decimal(0)
    multiplier: Decimal = Decimal(1)
    tiers: tuple[Tier, ...] = ()
    windows: tuple[TimeWindow, ...] = ()
    web_search: Decimal | None = None
    fast_multiplier: Decimal | None = None

    def scaled(self, factor: Decimal) -> PricePeriod:
        """The same period with every money amount multiplied by ``factor``."""
        return dataclasses.replace(
            self,
            prices=self.prices.scaled(factor),
            per_request=_exact_mul(self.per_request, factor) or Decimal(0),
            web_search=_exact_mul(self.web_search, factor),
            tiers=tuple(dataclasses.replace(t, prices=t.prices.scaled(factor)) for t in self.tiers),
            windows=tuple(
                dataclasses.replace(w, prices=w.prices.scaled(factor)) for w in self.windows
            ),
        )


@dataclass(frozen=True)
class ModelRate:
    """One priced model: its id, the names that select it, and its price periods."""

    id: str
    periods: tuple[PricePeriod, ...]
    aliases: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    source: str | None = None
    note: str | None = None
    excludes: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The id and aliases, lower-cased: the exact names this model answers to."""
        return tuple(name.lower() for name in (self.id, *self.aliases))

    def globbed(self, name: str) -> bool:
        """Whether the lower-case ``name`` matches one of the patterns and none of the
        excludes."""
        return any(fnmatch.fnmatchcase(name, p) for p in self.patterns) and not any(
            fnmatch.fnmatchcase(name, x) for x in self.excludes
        )


@dataclass(frozen=True)
class RateTable:
    """A validated rate table. ``origin`` (the file it came from) is not part of equality."""

    name: str
    unit: str
    usd_per_unit: Decimal
    currency: str
    source: str
    checked: date
    models: tuple[ModelRate, ...]
    description: str | None = None
    origin: str = field(default="<memory>", compare=False)

    def resolve(self, model: str) -> ModelRate | None:
        """The model priced for ``model``, the first of:

        * an exact id or alias, tried on the name as given, on its last path part (a routed
          id such as ``converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0``) and on its
          vendor's own id (a Bedrock or Vertex id, :func:`vendor_model_id`);
        * the one model with a name that is this name in another spelling
          (:func:`model_key`: ``claude-sonnet-4-6`` is ``claude-sonnet-4.6``, never a glob's
          ``claude-sonnet-4-*``);
        * the first glob match of those names that no exclude of the model matches (a Bedrock
          id's region picks its price here);
        * the one model with a name that is the vendor's own id in another spelling
          (OpenRouter's ``anthropic/claude-haiku-4.5`` for a Bedrock id of Haiku 4.5).
        """
        lowered = model.lower()
        vendor = vendor_model_id(model)
        tried = dict.fromkeys((lowered, lowered.rsplit("/", 1)[-1], vendor))
        exact = next((m for wanted in tried for m in self.models if wanted in m.names), None)
        globbed = (m for wanted in tried for m in self.models if m.globbed(wanted))
        return (
            exact
            or self._by_key(model_key(model))
            or next(globbed, None)
            or self._by_key(model_key(vendor))
        )

    def _by_key(self, key: str) -> ModelRate | None:
        """The model one of whose names has ``key`` (:func:`model_key`); None when no model
        or more than one has it (two models of one spelling are not guessed between)."""
        found = {m.id: m for m in self.models if any(model_key(n) == key for n in m.names)}
        return next(iter(found.values())) if len(found) == 1 else None

    def usd_per_token(self, price: Decimal | None) -> Decimal | None:
        """Convert a price per million tokens in this table's unit to dollars per token."""
        return None if price is None else _per_token(price, self.usd_per_unit)


#: A Bedrock model id: an optional inference-profile region, the vendor, the model, a version.
_BEDROCK_ID = re.compile(
    r"^(?:[a-z]{2,4}(?:-gov)?\.|global\.)?(?:anthropic|openai)\.(?P<model>.+?)(?:-v\d+(?::\d+)?)?$"
)
#: A Vertex AI model id: the model, ``@``, a snapshot date or a label such as ``default``.
_VERTEX_ID = re.compile(r"^(?P<model>[^@]+)@(?P<version>[^@]*)$")
#: A dot between two digits: a version written ``4.6`` where another seller writes ``4-6``.
_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")
#: A snapshot date at the end of an id (``-20251001``).
_SNAPSHOT = re.compile(r"-\d{8}$")


def vendor_model_id(model: str) -> str:
    """The vendor's own id (lower case) for a cloud provider's id of the same model.

    Bedrock ids lose their region, vendor and version (``us.anthropic.claude-sonnet-4-5-20250929-
    v1:0`` is ``claude-sonnet-4-5-20250929``), also when routed (``converse/`` before it) or in
    an ARN (the id is the last path part); a Vertex id's snapshot date joins the name with a
    dash (``claude-sonnet-4-5@20250929``) and a label after ``@`` is dropped. Any other name is
    returned lower-cased, unchanged (``anthropic/claude-sonnet-4.6`` included: an OpenRouter id
    is that seller's own).

    >>> vendor_model_id("global.anthropic.claude-opus-4-6-v1")
    'claude-opus-4-6'
    >>> vendor_model_id("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0")
    'claude-haiku-4-5-20251001'
    >>> vendor_model_id("claude-sonnet-4-5@20250929")
    'claude-sonnet-4-5-20250929'
    """
    name = model.lower()
    last = name.rsplit("/", 1)[-1]
    if bedrock := _BEDROCK_ID.match(last):
        return bedrock["model"]
    if vertex := _VERTEX_ID.match(last):
        version = vertex["version"]
        return f"{vertex['model']}-{version}" if version.isdigit() else vertex["model"]
    return name


def model_key(model: str) -> str:
    """A name without its spelling: what two sellers' names of one model have in common.

    Lower case, without a seller's path (``anthropic/``), a version's dots as dashes (``4.6``
    is ``4-6``) and without a snapshot date: Claude Code's ``claude-opus-4-7``, Copilot's
    ``claude-opus-4.7`` and OpenRouter's ``anthropic/claude-opus-4.7`` are one model. A Bedrock
    id keeps its region and vendor (its price depends on them): give its
    :func:`vendor_model_id` for the model alone.

    >>> model_key("anthropic/claude-opus-4.7")
    'claude-opus-4-7'
    >>> model_key("claude-haiku-4-5-20251001")
    'claude-haiku-4-5'
    >>> model_key(vendor_model_id("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0"))
    'claude-haiku-4-5'
    """
    name = model.lower().rsplit("/", 1)[-1]
    return _SNAPSHOT.sub("", _VERSION_DOT.sub("-", name))


# ---------------------------------------------------------------------------------- loading


def bundled_rate_tables() -> list[str]:
    """Names of the rate tables shipped with agentcost, for ``--rates NAME`` and listings."""
    folder = resources.files("analytics") / "rate_tables"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load_rate_table(name_or_path: str | Path) -> RateTable:
    """Load a bundled table by name (``github-copilot``) or any table file by path.

    Raises :class:`RateTableError` naming the file and key when the table is invalid, and
    when neither a bundled table nor a file of that name exists.
    """
    text = str(name_or_path)
    if text in bundled_rate_tables():
        resource = resources.files("analytics") / "rate_tables" / f"{text}.toml"
        return parse_rate_table(resource.read_text("utf-8"), name=text, origin=f"bundled:{text}")
    path = Path(name_or_path)
    try:
        content = path.read_text("utf-8")
    except OSError as err:
        known = ", ".join(bundled_rate_tables())
        raise RateTableError(
            f"{path}: cannot read rate table ({err.strerror or err}). "
            f"Hint: give a TOML file or one of the bundled tables: {known}."
        ) from err
    return parse_rate_table(content, name=path.stem, origin=str(path))


def load_rates(spec: str) -> RateTable:
    """What ``--rates`` names: a bundled table or a file, or ``BASE+FILE[+FILE...]``, a table
    whose models the later files override or extend (``github-copilot+mine.toml`` prices one
    model your way and every other as bundled)."""
    if Path(spec).is_file():
        return load_rate_table(spec)
    base, *overrides = spec.split("+")
    table = load_rate_table(base)
    for override in overrides:
        table = merge_rate_tables(table, load_rate_table(override))
    return table


def parse_rate_table(text: str, *, name: str, origin: str = "<string>") -> RateTable:
    """Parse and validate TOML text as a rate table called ``name`` (errors cite ``origin``)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RateTableError(
            f"{origin}: not valid TOML ({err}). Hint: check the quoting near that line."
        ) from err
    return _Parser(origin).table(raw, name)


class _Parser:
    """Turns the parsed TOML of one file into a :class:`RateTable`, naming ``origin`` in errors."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.usd_per_unit = Decimal(1)

    def fail(self, key: str, problem: str, hint: str) -> RateTableError:
        """The error for ``key`` of this file."""
        return RateTableError(f"{self.origin}: {key}: {problem}. Hint: {hint}.")

    def table(self, raw: Mapping[str, Any], name: str) -> RateTable:
        """Validate the top level, then every model."""
        self.check_keys(raw, _TOP_KEYS, "")
        unit = self.string(raw, "unit", "")
        if unit not in UNITS:
            raise self.fail("unit", f"unknown unit {unit!r}", f"use one of {', '.join(UNITS)}")
        self.usd_per_unit = self.conversion(raw, unit)
        currency = self.string(raw, "currency", "")
        if currency != "USD":
            raise self.fail("currency", f"unsupported currency {currency!r}", 'write "USD"')
        defaults = self.prices(self.subtable(raw, "defaults", ""), "defaults")
        models_raw = self.subtable(raw, "models", "")
        if not models_raw:
            raise self.fail("models", "no models", 'add a [models."<id>"] table')
        models = tuple(self.model(mid, spec, defaults) for mid, spec in models_raw.items())
        table = RateTable(
            name=name,
            unit=unit,
            usd_per_unit=self.usd_per_unit,
            currency=currency,
            source=self.string(raw, "source", ""),
            checked=self.day(raw.get("checked"), "checked"),
            models=models,
            description=self.optional_string(raw, "description", ""),
            origin=self.origin,
        )
        check_unique_names(table)
        return table

    def conversion(self, raw: Mapping[str, Any], unit: str) -> Decimal:
        """Dollars per unit: fixed by the unit, or stated by ``usd_per_unit``."""
        fixed = UNITS[unit]
        if fixed is not None:
            if "usd_per_unit" in raw and self.decimal(raw["usd_per_unit"], "usd_per_unit") != fixed:
                raise self.fail("usd_per_unit", f"must be {fixed} for {unit}", "leave it out")
            return fixed
        if "usd_per_unit" not in raw:
            raise self.fail("usd_per_unit", f"missing (needed for {unit})", 'e.g. "0.01"')
        value = self.decimal(raw["usd_per_unit"], "usd_per_unit")
        if value <= 0:
            raise self.fail("usd_per_unit", "must be positive", 'e.g. "0.01"')
        return value

    def model(self, model_id: str, spec: Any, defaults: Mapping[str, Decimal]) -> ModelRate:
        """One ``[models."<id>"]`` table."""
        key = f"models.{json.dumps(model_id)}"
        spec = self.as_table(spec, key)
        self.check_keys(spec, _MODEL_KEYS, key)
        entries = spec.get("prices")
        if not isinstance(entries, list) or not entries:
            raise self.fail(f"{key}.prices", "missing", f"add a [[{key}.prices]] entry")
        periods = tuple(
            self.period(entry, f"{key}.prices[{i}]", defaults) for i, entry in enumerate(entries)
        )
        self.check_no_overlap(periods, f"{key}.prices")
        return ModelRate(
            id=model_id,
            periods=periods,
            aliases=self.strings(spec, "aliases", key),
            patterns=tuple(p.lower() for p in self.strings(spec, "patterns", key)),
            source=self.optional_string(spec, "source", key),
            note=self.optional_string(spec, "note", key),
            excludes=tuple(x.lower() for x in self.strings(spec, "excludes", key)),
        )

    def period(self, entry: Any, key: str, defaults: Mapping[str, Decimal]) -> PricePeriod:
        """One ``[[models.X.prices]]`` entry."""
        entry = self.as_table(entry, key)
        self.check_keys(entry, _PERIOD_KEYS, key)
        values = {**defaults, **self.prices(entry, key)}
        start = self.instant(entry.get("effective_from"), f"{key}.effective_from")
        end = self.instant(entry.get("effective_until"), f"{key}.effective_until")
        if start is not None and end is not None and end <= start:
            raise self.fail(f"{key}.effective_until", "not after effective_from", "swap them")
        tiers = self.tiers(entry.get("tiers", []), f"{key}.tiers")
        windows = tuple(
            self.window(w, f"{key}.windows[{i}]") for i, w in enumerate(entry.get("windows", []))
        )
        if tiers and windows:
            raise self.fail(key, "has both tiers and windows", "split them into two models")
        period = PricePeriod(
            prices=self.price_set(values, key),
            effective_from=start,
            effective_until=end,
            per_request=values.get("per_request", Decimal(0)),
            multiplier=values.get("multiplier", Decimal(1)),
            tiers=tiers,
            windows=windows,
            web_search=values.get("web_search"),
            fast_multiplier=self.speed_multiplier(entry, key),
        )
        if not fits_money(request_usd(period, self.usd_per_unit)):
            raise self.fail(
                f"{key}.multiplier",
                "per_request x multiplier has too many decimals",
                "a request may cost at most 18 decimal places of a dollar",
            )
        search = search_usd(period, self.usd_per_unit)
        if search is not None and not fits_money(search):
            raise self.fail(
                f"{key}.web_search",
                "has too many decimals",
                "a request may cost at most 18 decimal places of a dollar",
            )
        if period.fast_multiplier is not None and not all(
            fits_money(_per_token(price, self.usd_per_unit))
            for prices in speed_price_sets(period, period.fast_multiplier)
            for price in prices.as_dict().values()
            if price is not None
        ):
            raise self.fail(
                f"{key}.fast_multiplier",
                "makes a token price too precise",
                "one token may cost at most 18 decimal places of a dollar",
            )
        return period

    def speed_multiplier(self, entry: Mapping[str, Any], key: str) -> Decimal | None:
        """The entry's ``fast_multiplier``: a positive decimal, or None when absent."""
        if "fast_multiplier" not in entry:
            return None
        value = self.decimal(entry["fast_multiplier"], f"{key}.fast_multiplier")
        if value <= 0:
            raise self.fail(f"{key}.fast_multiplier", "must be positive", 'e.g. "6"')
        return value

    def tiers(self, raw: Any, key: str) -> tuple[Tier, ...]:
        """The long-context tiers of a price entry, checked to have distinct thresholds."""
        if not isinstance(raw, list):
            raise self.fail(key, "must be an array of tables", f"write [[{key}]]")
        tiers: list[Tier] = []
        for i, item in enumerate(raw):
            tier_key = f"{key}[{i}]"
            spec = self.as_table(item, tier_key)
            self.check_keys(spec, _TIER_KEYS, tier_key)
            above = spec.get("above_prompt_tokens")
            if isinstance(above, bool) or not isinstance(above, int) or above <= 0:
                raise self.fail(
                    f"{tier_key}.above_prompt_tokens",
                    "must be a positive integer",
                    "e.g. above_prompt_tokens = 200000",
                )
            if any(t.above_prompt_tokens == above for t in tiers):
                raise self.fail(
                    f"{tier_key}.above_prompt_tokens",
                    f"duplicate tier {above}",
                    "give each tier its own threshold",
                )
            tiers.append(Tier(above, self.price_set(self.prices(spec, tier_key), tier_key)))
        return tuple(sorted(tiers, key=lambda t: t.above_prompt_tokens))

    def window(self, spec: Any, key: str) -> TimeWindow:
        """One time-of-day window."""
        spec = self.as_table(spec, key)
        self.check_keys(spec, _WINDOW_KEYS, key)
        zone = self.string(spec, "timezone", key)
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError) as err:
            raise self.fail(
                f"{key}.timezone",
                f"unknown timezone {zone!r}",
                'use an IANA name such as "UTC" or "Asia/Shanghai"',
            ) from err
        days = self.strings(spec, "days", key) or WEEKDAYS
        if unknown := [d for d in days if d not in WEEKDAYS]:
            raise self.fail(f"{key}.days", f"unknown days {unknown}", f"use {', '.join(WEEKDAYS)}")
        hours = self.strings(spec, "hours", key)
        if not hours:
            raise self.fail(f"{key}.hours", "missing", 'e.g. hours = ["16:30-00:30"]')
        return TimeWindow(
            name=self.string(spec, "name", key),
            timezone=zone,
            hours=tuple(self.hour_range(h, f"{key}.hours") for h in hours),
            prices=self.price_set(self.prices(spec, key), key),
            days=tuple(d for d in WEEKDAYS if d in days),
        )

    def hour_range(self, text: str, key: str) -> tuple[time, time]:
        """Parse ``HH:MM-HH:MM``."""
        match = _HOURS.match(text)
        try:
            if match is None:
                raise ValueError(text)
            h1, m1, h2, m2 = (int(g) for g in match.groups())
            return time(h1, m1), time(h2, m2)
        except ValueError as err:
            raise self.fail(key, f"bad time range {text!r}", 'write "HH:MM-HH:MM"') from err

    def prices(self, raw: Mapping[str, Any], key: str) -> dict[str, Decimal]:
        """The price and request keys present in ``raw``, parsed and range-checked."""
        values: dict[str, Decimal] = {}
        for name in (*TOKEN_PRICE_KEYS, *REQUEST_KEYS):
            if name in raw:
                values[name] = self.price(raw[name], f"{key}.{name}" if key else name, name)
        return values

    def price(self, value: Any, key: str, name: str) -> Decimal:
        """One non-negative price whose per-token dollar amount fits ``schema.MONEY``."""
        amount = self.decimal(value, key)
        if amount < 0:
            raise self.fail(key, f"negative price {value!r}", "prices are zero or more")
        if name in TOKEN_PRICE_KEYS and not fits_money(_per_token(amount, self.usd_per_unit)):
            raise self.fail(
                key,
                f"{value!r} has too many decimal places",
                "one token may cost at most 18 decimal places of a dollar",
            )
        return amount

    def price_set(self, values: Mapping[str, Decimal], key: str) -> PriceSet:
        """The token prices of ``values``; input and output are required."""
        for required in ("input", "output"):
            if required not in values:
                raise self.fail(f"{key}.{required}", "missing", f'add {required} = "<price>"')
        return PriceSet(**{k: values.get(k) for k in TOKEN_PRICE_KEYS})  # type: ignore[arg-type]

    def check_no_overlap(self, periods: Iterable[PricePeriod], key: str) -> None:
        """Fail when two price entries of one model are in effect at the same instant."""
        low = datetime.min.replace(tzinfo=UTC)
        ordered = sorted(periods, key=lambda p: p.effective_from or low)
        for before, after in itertools.pairwise(ordered):
            if before.effective_until is None or before.effective_until > (
                after.effective_from or low
            ):
                raise self.fail(
                    key,
                    "overlapping effective dates",
                    "end one entry (effective_until) where the next begins",
                )

    # -- scalar readers

    def decimal(self, value: Any, key: str) -> Decimal:
        """A decimal from a TOML string; floats and integers are refused."""
        if isinstance(value, float):
            raise self.fail(
                key,
                f"float {value!r} is not allowed for money",
                f'write it as a string: {key.rsplit(".", 1)[-1]} = "{value}"',
            )
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {value!r}", 'write e.g. "3.00"')
        try:
            amount = Decimal(value.strip())
        except InvalidOperation as err:
            raise self.fail(key, f"not a number: {value!r}", 'write e.g. "3.00"') from err
        if not amount.is_finite():
            raise self.fail(key, f"not a finite number: {value!r}", 'write e.g. "3.00"')
        return amount

    def instant(self, value: Any, key: str) -> datetime | None:
        """An instant in UTC from a TOML date/datetime or an ISO string; dates are midnight."""
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value) if "T" in value else date.fromisoformat(value)
            except ValueError as err:
                raise self.fail(key, f"bad date {value!r}", 'write "YYYY-MM-DD"') from err
        if isinstance(value, datetime):
            if value.tzinfo is None:
                raise self.fail(key, "time without a UTC offset", 'end it with "Z"')
            return value.astimezone(UTC)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        raise self.fail(key, f"expected a date, got {value!r}", 'write "YYYY-MM-DD"')

    def day(self, value: Any, key: str) -> date:
        """A calendar date from a TOML date or a ``YYYY-MM-DD`` string."""
        if isinstance(value, date) and not isinstance(value, datetime):
            return value
        try:
            return date.fromisoformat(str(value))
        except ValueError as err:
            raise self.fail(key, f"bad or missing date {value!r}", 'write "YYYY-MM-DD"') from err

    def string(self, raw: Mapping[str, Any], name: str, key: str) -> str:
        """A required non-empty string."""
        value = self.optional_string(raw, name, key)
        if not value:
            raise self.fail(_join(key, name), "missing", f'add {name} = "..."')
        return value

    def optional_string(self, raw: Mapping[str, Any], name: str, key: str) -> str | None:
        """An optional string."""
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            raise self.fail(_join(key, name), f"expected a string, got {value!r}", "quote it")
        return value

    def strings(self, raw: Mapping[str, Any], name: str, key: str) -> tuple[str, ...]:
        """An optional list of strings."""
        value = raw.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(_join(key, name), "expected a list of strings", f'{name} = ["..."]')
        return tuple(value)

    def subtable(self, raw: Mapping[str, Any], name: str, key: str) -> Mapping[str, Any]:
        """An optional table."""
        return self.as_table(raw.get(name, {}), _join(key, name))

    def as_table(self, value: Any, key: str) -> Mapping[str, Any]:
        """``value`` when it is a table."""
        if not isinstance(value, dict):
            raise self.fail(key, "expected a table", f"write [{key}]")
        return value

    def check_keys(self, raw: Mapping[str, Any], allowed: set[str], key: str) -> None:
        """Fail on keys the format does not know (usually a typo)."""
        if unknown := sorted(set(raw) - allowed):
            raise self.fail(
                _join(key, unknown[0]),
                "unknown key",
                f"known keys here: {', '.join(sorted(allowed))}",
            )


def request_usd(period: PricePeriod, usd_per_unit: Decimal) -> Decimal:
    """Dollars charged per user prompt in ``period``: per_request x multiplier, converted."""
    return _exact_mul(_exact_mul(period.per_request, period.multiplier), usd_per_unit) or Decimal(0)


def search_usd(period: PricePeriod, usd_per_unit: Decimal) -> Decimal | None:
    """Dollars charged per web search in ``period``; None where the entry has no such price."""
    return _exact_mul(period.web_search, usd_per_unit)


def speed_price_sets(period: PricePeriod, factor: Decimal) -> list[PriceSet]:
    """The period's base, tier and window prices, each multiplied by a speed's ``factor``."""
    sets = [period.prices, *(t.prices for t in period.tiers), *(w.prices for w in period.windows)]
    return [prices.scaled(factor) for prices in sets]


def fits_money(amount: Decimal) -> bool:
    """Whether ``amount`` has at most 18 decimal places, the scale of ``schema.MONEY``."""
    exponent = amount.normalize().as_tuple().exponent
    return isinstance(exponent, int) and -exponent <= _MONEY_SCALE


def check_unique_names(table: RateTable) -> None:
    """Fail when two models of ``table`` answer to the same id or alias."""
    seen: dict[str, str] = {}
    for model in table.models:
        for name in model.names:
            if name in seen and seen[name] != model.id:
                raise RateTableError(
                    f"{table.origin}: models.{json.dumps(model.id)}.aliases: duplicate alias "
                    f"{name!r}, already a name of {seen[name]!r}. "
                    "Hint: give each name to one model only."
                )
            seen[name] = model.id


# ---------------------------------------------------------------------------------- merging


def merge_rate_tables(base: RateTable, override: RateTable) -> RateTable:
    """``base`` with the models of ``override`` added, replacing any base model sharing a name.

    The override's prices are converted exactly into the base table's unit (dollars to AI
    credits, say); a conversion that would not be exact is refused with a
    :class:`RateTableError`.
    """
    factor = _exact_div(override.usd_per_unit, base.usd_per_unit, override.origin)
    added = tuple(
        dataclasses.replace(m, periods=tuple(p.scaled(factor) for p in m.periods))
        for m in override.models
    )
    taken = {name for m in added for name in m.names}
    kept = tuple(m for m in base.models if not taken & set(m.names))
    merged = dataclasses.replace(
        base,
        name=f"{base.name}+{override.name}",
        source=f"{base.source}; {override.source}",
        checked=min(base.checked, override.checked),
        models=kept + added,
        origin=f"{base.origin} + {override.origin}",
    )
    check_unique_names(merged)
    return merged


def add_missing_models(base: RateTable, extra: RateTable) -> RateTable:
    """``base`` with the models of ``extra`` that ``base`` cannot price (none of their names
    resolves in ``base``), converted into ``base``'s unit; ``base`` itself when there are none.

    Unlike :func:`merge_rate_tables`, ``base`` wins: ``extra`` only fills its gaps.
    """
    missing = tuple(m for m in extra.models if all(base.resolve(n) is None for n in m.names))
    if not missing:
        return base
    return merge_rate_tables(base, dataclasses.replace(extra, models=missing))


# ---------------------------------------------------------------------------------- dumping


def dump_rate_table(table: RateTable) -> str:
    """TOML text that :func:`parse_rate_table` reads back into an equal table."""
    lines = [f"unit = {_q(table.unit)}"]
    if UNITS[table.unit] is None:
        lines.append(f"usd_per_unit = {_q(str(table.usd_per_unit))}")
    lines += [
        f"currency = {_q(table.currency)}",
        f"source = {_q(table.source)}",
        f"checked = {_q(table.checked.isoformat())}",
    ]
    if table.description is not None:
        lines.append(f"description = {_q(table.description)}")
    for model in table.models:
        lines += _dump_model(model)
    return "\n".join(lines) + "\n"


def _dump_model(model: ModelRate) -> list[str]:
    """The TOML lines of one model and its price entries."""
    key = f"models.{_q(model.id)}"
    lines = ["", f"[{key}]"]
    lines += [
        f"{name} = {_list(names)}"
        for name, names in (
            ("aliases", model.aliases),
            ("patterns", model.patterns),
            ("excludes", model.excludes),
        )
        if names
    ]
    lines += [
        f"{k} = {_q(v)}"
        for k, v in (("source", model.source), ("note", model.note))
        if v is not None
    ]
    for period in model.periods:
        lines += ["", f"[[{key}.prices]]"]
        for name, when in (
            ("effective_from", period.effective_from),
            ("effective_until", period.effective_until),
        ):
            if when is not None:
                lines.append(f"{name} = {_q(when.isoformat())}")
        lines += _dump_prices(period.prices)
        lines += [
            f"{name} = {_q(str(value))}"
            for name, value, default in (
                ("per_request", period.per_request, Decimal(0)),
                ("multiplier", period.multiplier, Decimal(1)),
                ("web_search", period.web_search, None),
                ("fast_multiplier", period.fast_multiplier, None),
            )
            if value is not None and not (default is not None and value == default)
        ]
        for tier in period.tiers:
            lines += ["", f"[[{key}.prices.tiers]]"]
            lines += [f"above_prompt_tokens = {tier.above_prompt_tokens}"]
            lines += _dump_prices(tier.prices)
        for window in period.windows:
            hours = [f"{a.strftime('%H:%M')}-{b.strftime('%H:%M')}" for a, b in window.hours]
            lines += ["", f"[[{key}.prices.windows]]", f"name = {_q(window.name)}"]
            lines += [f"timezone = {_q(window.timezone)}", f"hours = {_list(hours)}"]
            lines += [f"days = {_list(window.days)}"]
            lines += _dump_prices(window.prices)
    return lines


def _dump_prices(prices: PriceSet) -> list[str]:
    """``key = "price"`` lines for the prices that are set."""
    return [f"{k} = {_q(str(v))}" for k, v in prices.as_dict().items() if v is not None]


def _q(text: str) -> str:
    """A TOML basic string: JSON escapes are valid TOML, and TOML also forbids a raw DEL."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _list(items: Iterable[str]) -> str:
    """A TOML array of strings."""
    return "[" + ", ".join(_q(i) for i in items) + "]"


def _join(key: str, name: str) -> str:
    """A dotted key path."""
    return f"{key}.{name}" if key else name


def _exact_mul(value: Decimal | None, factor: Decimal) -> Decimal | None:
    """``value * factor`` computed without rounding (``None`` stays ``None``)."""
    if value is None:
        return None
    with localcontext(prec=80) as ctx:
        return ctx.multiply(value, factor)


def _per_token(price: Decimal, usd_per_unit: Decimal) -> Decimal:
    """Dollars per token for a price per million tokens in a unit worth ``usd_per_unit``."""
    with localcontext(prec=80):
        return (price * usd_per_unit).scaleb(-6)


def _exact_div(value: Decimal, divisor: Decimal, origin: str) -> Decimal:
    """``value / divisor``, refused when the quotient cannot be written exactly."""
    with localcontext(prec=80) as ctx:
        ctx.traps[Inexact] = True
        try:
            return ctx.divide(value, divisor)
        except Inexact as err:
            raise RateTableError(
                f"{origin}: usd_per_unit: {value} does not convert exactly into {divisor}. "
                "Hint: write the override table in the base table's unit."
            ) from err
