"""The vendor rate tables (``anthropic``, ``openai``, ``bedrock``, ``google``, ``moonshotai``)
made from a maintained price database.

Vendor list prices change every few weeks and new models appear as often; a hand-kept table
falls behind (the one kept here lacked opus-4-6, sonnet-4-5's long-context tier, gpt-5.2,
gpt-5.3-codex and gpt-5.6-sol, which real Claude Code and Codex logs name). The prices come
from ``genai-prices`` (pydantic's price database, MIT), from the data bundled in the installed
package, never from its network update. It is a development dependency only: importing it costs
about 0.17 s (it pulls in pydantic and an HTTP client) and 18 MB, more than a priced command
spends on everything else, so its prices are converted once, exactly, into the ordinary
TOML rate tables that agentcost ships and reads (README, "Pricing").

``python -m analytics.core.pricing.vendor_tables`` rewrites the tables of :data:`VENDORS`
under ``analytics/rate_tables/`` from the installed database; ``--check`` only says whether
they are current (``tests/core/pricing/test_vendor_tables.py`` does the same). To update
prices: upgrade the pinned ``genai-prices`` in ``pyproject.toml``, run the module, review the
diff.

What the conversion keeps, per model of the vendor's provider entry:

* the token prices: input, output, cache read, 5-minute cache write (``cache_write_mtok``; where
  the database has none, as for most OpenAI and Gemini models, writes are ordinary input and
  cost the input price) and 1-hour cache write;
* long-context tiers (the whole request at the tier's prices once its prompt exceeds the tier's
  start: the same cliff as ``above_prompt_tokens``), one tier per distinct start;
* dated price changes, as price entries with ``effective_from``/``effective_until``;
* web searches (``web_searches_kcount``: dollars per 1,000) as ``web_search`` per request;
* fast mode (a ``speed: fast`` price variant that is one multiple of every standard price) as
  ``fast_multiplier``, and :data:`FAST_MULTIPLIERS` where the database lacks it;
* the model's match rules as aliases (exact names), glob patterns and excludes (a rule "starts
  with X and is not a TTS model" is the pattern ``X*`` with the excludes ``*-tts``,
  ``*-tts-*``), in the database's order, and :data:`EXTRA_ALIASES`.

Left out: models priced in other units only (audio, images, characters, embeddings-only) or with
a price for non-text output (image, audio, video generation), the batch and service-tier variants
(such calls stay unpriced, see ``call_costs.STANDARD_TIERS``), and file-search
(``storage_searches``) charges, which coding agents' logs do not count. Of the tables in
:data:`TEXT_INPUT_ONLY` the prices of audio, image and video input are left out too (see there).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analytics.core.pricing.rates import (
    ModelRate,
    PricePeriod,
    PriceSet,
    RateTable,
    Tier,
    check_unique_names,
    dump_rate_table,
    parse_rate_table,
)

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo, ModelPrice, Provider

#: The database's package and version the bundled tables were made from (pinned in pyproject).
DATABASE = "genai-prices"
#: The vendor tables made from the database: table name -> the database's provider id.
VENDORS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "bedrock": "aws",
    "google": "google",
    "moonshotai": "moonshotai",
}
#: Tables that keep only the names holding a fragment, and only the models left with one:
#: ``bedrock`` keeps Claude on Bedrock under its Bedrock ids (``jp.anthropic.claude-...``).
#: The database also matches the bare vendor ids there (``claude-haiku-4-5-20251001``), which
#: under agentcost's merged vendor tables would price a call to Anthropic's own API at
#: Bedrock's regional price; the vendor's table prices those.
NAMES_WITH = {"bedrock": "anthropic."}
#: Tables that leave out the models whose id starts with a prefix: ``google`` leaves out Claude
#: on Vertex AI, which is Anthropic's model at Anthropic's list price, priced by the
#: ``anthropic`` table (its copies would replace Anthropic's in the merged vendor tables of
#: ``price.BYOK_TABLES`` and ``compare``, without Anthropic's fast-mode multipliers).
MODELS_WITHOUT = {"google": "claude-"}
#: Tables whose models are priced for text: the database's prices for audio, image and video
#: *input* are left out, so a model with them (gemini-2.5-flash, gemini-3-flash-preview) is kept
#: at its text prices. Gemini CLI and Antigravity log one input count per call, never split by
#: modality; a prompt holding audio (billed above text on some Flash models) is priced low.
TEXT_INPUT_ONLY = {"google"}
_OTHER_INPUTS = {
    "input_audio_mtok",
    "cache_audio_read_mtok",
    "input_image_mtok",
    "cache_image_read_mtok",
    "input_video_mtok",
}
#: Fast-mode multipliers the database lacks, checked against the vendor's own documentation
#: (platform.claude.com, "Fast mode": 6x standard rates for Opus 4.6 and 4.7 across the whole
#: context window, cache prices included; Opus 4.8 is 2x, which the database has).
FAST_MULTIPLIERS = {"claude-opus-4-6": Decimal(6), "claude-opus-4-7": Decimal(6)}
#: Names the hand-kept tables answered to that the database's match rules do not (Copilot's
#: dotted spelling and short names), kept so that no name priced before goes unpriced.
EXTRA_ALIASES = {
    "claude-fable-5-1": ("claude-fable-5.1",),
    "claude-opus-5": ("claude-opus-5-0",),
    "claude-3-5-haiku-latest": ("claude-haiku-3.5",),
    "claude-3-haiku": ("claude-haiku-3",),
    # the hand-kept google table's short name; Antigravity's display labels of the model
    # (its ``MODEL_PLACEHOLDER_M16`` slot, "Gemini 3.1 Pro (High)" in the real conversation
    # database; the thinking level changes no price)
    "gemini-3.1-pro-preview": (
        "gemini-3.1-pro",
        "gemini-3.1-pro-high",
        "gemini-3.1-pro-low",
        "gemini 3.1 pro (high)",
        "gemini 3.1 pro (low)",
    ),
}
#: Price keys of the database that the conversion reads; a model with others is left out
#: unless they are among the ignored ones.
_READ = {"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok"}
_READ |= {"web_searches_kcount"}
_IGNORED = {"storage_searches_kcount"}
_TOKEN_KEYS = _READ - {"web_searches_kcount"}
#: How to run this converter (``python -m``).
_MODULE = "analytics.core.pricing.vendor_tables"
_FOLDER = Path(__file__).resolve().parents[2] / "rate_tables"


class ConversionError(ValueError):
    """The database holds something the rate-table format cannot say exactly."""


def vendor_table(name: str, checked: date) -> RateTable:
    """The rate table ``name`` (a key of :data:`VENDORS`) from the installed database's
    bundled data, its prices last checked on ``checked``."""
    from genai_prices import __version__, data_snapshot

    provider = next(p for p in data_snapshot.get_snapshot().providers if p.id == VENDORS[name])
    fragment = NAMES_WITH.get(name, "")
    without = MODELS_WITHOUT.get(name)
    ignored = _IGNORED | (_OTHER_INPUTS if name in TEXT_INPUT_ONLY else set())
    infos = (i for i in provider.models if without is None or not i.id.startswith(without))
    models = tuple(m for m in (_model(info, fragment, ignored) for info in infos) if m is not None)
    table = RateTable(
        name=name,
        unit="usd_per_million_tokens",
        usd_per_unit=Decimal(1),
        currency="USD",
        source=f"{DATABASE} {__version__} bundled data ({_provider_source(provider)}), "
        "converted by analytics/core/pricing/vendor_tables.py",
        checked=checked,
        models=models,
        description=f"{provider.name} API list prices, USD per million tokens",
        origin=f"{DATABASE}:{provider.id}",
    )
    check_unique_names(table)
    return table


def table_text(table: RateTable) -> str:
    """The TOML file of a vendor table: a header saying where it comes from, then the table."""
    header = (
        f"# Generated by `python -m {_MODULE}` from {DATABASE}'s bundled price data: do\n"
        "# not edit by hand. Add or override a model with `--rates "
        f"{table.name}+FILE.toml` instead.\n"
    )
    return header + dump_rate_table(table)


def stale_tables(checked: date) -> list[str]:
    """The bundled vendor tables that differ from the installed database (their ``checked``
    date aside)."""
    stale = []
    for name in VENDORS:
        path = _FOLDER / f"{name}.toml"
        fresh = vendor_table(name, checked)
        shipped = parse_rate_table(path.read_text("utf-8"), name=name, origin=str(path))
        if dataclasses.replace(shipped, checked=checked) != fresh:
            stale.append(name)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the vendor tables from the database, or with ``--check`` report stale ones."""
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report stale tables")
    args = parser.parse_args(argv)
    today = datetime.now(UTC).date()
    if args.check:
        stale = stale_tables(today)
        for name in stale:
            print(f"{name}.toml differs from {DATABASE}: run python -m {_MODULE}")
        return 1 if stale else 0
    for name in VENDORS:
        path = _FOLDER / f"{name}.toml"
        path.write_text(table_text(vendor_table(name, today)), "utf-8")
        print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------------------------- models


def _provider_source(provider: Provider) -> str:
    """Where the database's provider entry says its prices come from."""
    return str(getattr(provider, "pricing_urls", None) or [provider.name]).strip("[]'\"")


def _model(info: ModelInfo, fragment: str = "", ignored: set[str] = _IGNORED) -> ModelRate | None:
    """One database model as a rate-table model, answering only to its names that hold
    ``fragment`` (:data:`NAMES_WITH`); None for a model priced in other units than the read
    and ``ignored`` price keys, or left with no such name."""
    prices = _conditional(info)
    keys = {k for _, price in prices for k, v in vars(price).items() if v is not None}
    if not {"input_mtok", "output_mtok"} <= keys or keys - _READ - ignored:
        return None
    aliases, patterns, excludes = _names(info, fragment)
    if fragment and not aliases + list(patterns):
        return None
    fast = _fast_multiplier(info)
    periods: list[PricePeriod] = []
    for index, (start, price) in enumerate(prices):
        until = prices[index + 1][0] if index + 1 < len(prices) else None
        periods.append(_period(price, start, until, fast))
    aliases += [a for a in EXTRA_ALIASES.get(info.id, ()) if a not in aliases]
    return ModelRate(
        id=info.id,
        periods=tuple(periods),
        aliases=tuple(a for a in aliases if a != info.id.lower()),
        patterns=patterns,
        excludes=excludes,
    )


def _conditional(info: ModelInfo) -> list[tuple[datetime | None, ModelPrice]]:
    """The model's prices with the instant each takes effect (None: always), oldest first."""
    if not isinstance(info.prices, list):
        return [(None, info.prices)]
    dated: list[tuple[datetime | None, ModelPrice]] = []
    for conditional in info.prices:
        constraint = conditional.constraint
        if constraint is None:
            dated.append((None, conditional.prices))
        elif hasattr(constraint, "start_date"):
            day = constraint.start_date
            dated.append((datetime(day.year, day.month, day.day, tzinfo=UTC), conditional.prices))
        else:
            raise ConversionError(f"{info.id}: unsupported price constraint {constraint!r}")
    low = datetime.min.replace(tzinfo=UTC)
    return sorted(dated, key=lambda item: item[0] or low)


def _period(
    price: ModelPrice, start: datetime | None, until: datetime | None, fast: Decimal | None
) -> PricePeriod:
    """One price entry: base prices, tiers by distinct start, web search, fast multiplier."""
    starts = sorted({t.start for v in vars(price).values() for t in getattr(v, "tiers", ())})
    kcount = getattr(price, "web_searches_kcount", None)
    return PricePeriod(
        prices=_price_set(price, None),
        effective_from=start,
        effective_until=until,
        tiers=tuple(Tier(above, _price_set(price, above)) for above in starts),
        web_search=None
        if kcount is None
        else Decimal(format(Decimal(kcount).scaleb(-3).normalize(), "f")),
        fast_multiplier=fast,
    )


def _price_set(price: ModelPrice, above: int | None) -> PriceSet:
    """The token prices for prompts just above ``above`` tokens (None: below every tier)."""

    def at(key: str) -> Decimal | None:
        value = getattr(price, key, None)
        if value is None or isinstance(value, Decimal | int):
            return None if value is None else Decimal(value)
        applicable = [t.price for t in value.tiers if above is not None and t.start <= above]
        return Decimal(applicable[-1] if applicable else value.base)

    input_price = at("input_mtok")
    output_price = at("output_mtok")
    assert input_price is not None and output_price is not None  # checked by _model
    return PriceSet(
        input=input_price,
        output=output_price,
        cache_read=at("cache_read_mtok"),
        cache_write_5m=input_price if (write := at("cache_write_mtok")) is None else write,
        cache_write_1h=at("cache_write_1h_mtok"),
    )


def _fast_multiplier(info: ModelInfo) -> Decimal | None:
    """The one multiple of every standard price that the model's fast-mode variant is, or
    :data:`FAST_MULTIPLIERS`'s; a fast variant that is no single multiple is refused."""
    variants = [v for v in info.price_variants or () if v.when == {"speed": "fast"}]
    supplied = FAST_MULTIPLIERS.get(info.id)
    if not variants:
        return supplied
    standard = _conditional(info)[-1][1]
    ratios = {
        _base(value) / _base(getattr(standard, key))
        for variant in variants
        for key, value in vars(variant.prices).items()
        if value is not None and key in _TOKEN_KEYS
    }
    if len(ratios) != 1 or (supplied is not None and ratios != {supplied}):
        raise ConversionError(f"{info.id}: fast mode is not one multiple of its prices: {ratios}")
    return ratios.pop().normalize()


def _base(value: Any) -> Decimal:
    """A price below every tier: a tiered price's base, or the flat price itself."""
    return Decimal(getattr(value, "base", value))


# ---------------------------------------------------------------------------------- names


def _names(
    info: ModelInfo, fragment: str = ""
) -> tuple[list[str], tuple[str, ...], tuple[str, ...]]:
    """(exact names, glob patterns, excludes) equivalent to the model's match rule, the names
    and patterns holding ``fragment`` only. Excludes come from a rule "pattern and not X": the
    rate-table format applies them to every pattern of the model, so a model with them may have
    one pattern only."""
    aliases: list[str] = []
    patterns: list[str] = []
    excludes: list[str] = []
    for kind, text in _clauses(info.match, info.id):
        if kind == "exclude":
            excludes.append(text.lower())
        elif fragment not in text.lower():
            continue
        elif kind == "equals":
            aliases.append(text.lower())
        else:
            patterns.append(text.lower())
    if excludes and len(patterns) != 1:
        raise ConversionError(f"{info.id}: excludes beside {len(patterns)} patterns")
    return (
        list(dict.fromkeys(aliases)),
        tuple(dict.fromkeys(patterns)),
        tuple(dict.fromkeys(excludes)),
    )


def _clauses(clause: Any, model: str) -> Iterable[tuple[str, str]]:
    """The rule's alternatives: ("equals", name), ("glob", pattern) or ("exclude", pattern)
    (from an "and" of one pattern and negative lookaheads)."""
    if hasattr(clause, "or_"):
        for part in clause.or_:
            yield from _clauses(part, model)
    elif hasattr(clause, "and_"):
        yield from _conjunction(clause.and_, model)
    elif hasattr(clause, "equals"):
        yield "equals", clause.equals
    elif hasattr(clause, "starts_with"):
        yield "glob", _literal(clause.starts_with) + "*"
    elif hasattr(clause, "ends_with"):
        yield "glob", "*" + _literal(clause.ends_with)
    elif hasattr(clause, "contains"):
        yield "glob", "*" + _literal(clause.contains) + "*"
    elif hasattr(clause, "regex"):
        yield "glob", _regex_glob(clause.regex, model)
    else:
        raise ConversionError(f"{model}: unsupported match rule {clause!r}")


#: A regex that refuses names holding a part at their end or before a dash:
#: ``^(?!.*-[tT][tT][sS](?:$|-))`` (not a text-to-speech model).
_NOT_PART = re.compile(r"^\^\(\?!\.\*(?P<part>.+)\(\?:\$\|-\)\)$")


def _conjunction(parts: Sequence[Any], model: str) -> Iterable[tuple[str, str]]:
    """An "and" of one glob rule and negative lookaheads (:data:`_NOT_PART`): the glob and an
    exclude of each part at a name's end (``*-tts``) and before a dash (``*-tts-*``)."""
    positive = [p for p in parts if not (hasattr(p, "regex") and _NOT_PART.match(p.regex))]
    negative = [_NOT_PART.match(p.regex) for p in parts if p not in positive]
    globs = [c for p in positive for c in _clauses(p, model)]
    if len(globs) != 1 or globs[0][0] != "glob":
        raise ConversionError(f"{model}: unsupported match rule 'and' of {parts!r}")
    yield globs[0]
    for found in negative:
        assert found is not None  # kept by the filter above
        part = _regex_glob(f"^{found['part']}$", model)
        yield "exclude", f"*{part}"
        yield "exclude", f"*{part}-*"


def _literal(text: str) -> str:
    """``text`` as a glob that matches it literally."""
    return re.sub(r"([*?\[])", r"[\1]", text)


#: Regex pieces the conversion understands: an escaped character, ``\d`` with an optional
#: count, a character class, or a plain character.
_REGEX_PIECE = re.compile(r"\\d(?:\{(\d+)\})?|\\(.)|(\[[^\]]+\])|([^\\\[\](){}*+?|^$.])")


def _regex_glob(regex: str, model: str) -> str:
    """A regex of literals, ``\\d{n}`` and character classes anchored at the start as an exact
    glob: one that matches the whole name where the regex ends with ``$``, else its start."""
    if not regex.startswith("^"):
        raise ConversionError(f"{model}: unanchored regex {regex!r}")
    whole = regex.endswith("$") and not regex.endswith("\\$")
    body, glob, at = regex[1 : -1 if whole else None], [], 0
    while at < len(body):
        piece = _REGEX_PIECE.match(body, at)
        if piece is None:
            raise ConversionError(f"{model}: regex {regex!r} has no glob equivalent")
        count, escaped, klass, plain = piece.groups()
        if piece.group(0).startswith("\\d"):
            glob.append("[0-9]" * int(count or 1))
        else:
            glob.append(_literal(escaped) if escaped else _class(klass) or _literal(plain))
        at = piece.end()
    return "".join(glob) + ("" if whole else "*")


def _class(klass: str | None) -> str | None:
    """A character class as a glob; one letter in either case (``[tT]``) is that letter, since
    names and patterns are matched in lower case."""
    if klass is not None and len(set(klass[1:-1].lower())) == 1 and klass[1:-1].isalpha():
        return klass[1].lower()
    return klass


if __name__ == "__main__":
    sys.exit(main())
