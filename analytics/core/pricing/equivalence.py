"""The same model under each seller's name: Copilot ``claude-sonnet-4.6`` is Anthropic's
``claude-sonnet-4-6`` and OpenRouter's ``anthropic/claude-sonnet-4.6``.

The map is data (``model_equivalence.toml``, documented there). :func:`seller_names` turns it
into the ``model_map`` that prices a log's calls at one seller, so ``agentcost compare`` can
answer "what would these calls cost elsewhere" instead of leaving other tables unpriced.
A model a seller does not sell keeps its own name there: the seller's table may know it by an
alias, and otherwise its calls are unpriced, never priced as another model.

>>> seller_names(["claude-sonnet-4.6", "gpt-5-mini"], "openrouter")
{'claude-sonnet-4.6': 'anthropic/claude-sonnet-4.6', 'gpt-5-mini': 'gpt-5-mini'}
>>> seller_names(["claude-opus-4.7-1m-internal"], VENDOR)
{'claude-opus-4.7-1m-internal': 'claude-opus-4-7'}
>>> seller_names(["gpt-5"], "anthropic", {"gpt-5": "claude-haiku-4.5"})
{'gpt-5': 'claude-haiku-4-5'}
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

from analytics.core.pricing.rates import model_key, vendor_model_id

#: The seller column that prices each model at its vendor's own API (``vendor`` in the map).
VENDOR = "vendor"
#: The bundled tables of vendors' own APIs, merged into the ``vendor`` column's table.
VENDOR_TABLES = ("anthropic", "openai", "google", "moonshotai", "deepseek")


@dataclass(frozen=True)
class Equivalent:
    """One model: the table of its vendor's own API, and its id in each table selling it."""

    vendor: str
    names: Mapping[str, str]


@functools.cache
def equivalences() -> dict[str, Equivalent]:
    """The bundled map, by the Copilot name of each model."""
    text = (resources.files("analytics.core.pricing") / "model_equivalence.toml").read_text("utf-8")
    models = tomllib.loads(text)["models"]
    return {
        model: Equivalent(
            vendor=entry["vendor"], names={k: v for k, v in entry.items() if k != "vendor"}
        )
        for model, entry in models.items()
    }


def lookup(model: str) -> Equivalent | None:
    """The entry of ``model`` in any spelling (:func:`rates.model_key`: Claude Code's
    ``claude-sonnet-4-6`` and a Bedrock id are Copilot's ``claude-sonnet-4.6``), else that of
    the longest listed name it extends by a suffix that is not a further version number
    (``claude-opus-4.7-1m-internal`` is ``claude-opus-4.7``; ``claude-sonnet-4-6`` does not
    extend ``claude-sonnet-4``, whose next version it names)."""
    known = equivalences()
    if model in known:
        return known[model]
    keys = _keys()
    key = model_key(vendor_model_id(model))
    if key in keys:
        return known[keys[key]]
    extended = [k for k in keys if key.startswith(f"{k}-") and not _VERSION.match(key, len(k) + 1)]
    return known[keys[max(extended, key=len)]] if extended else None


#: A version number right after a listed name: one or two digits ending the name or a part.
_VERSION = re.compile(r"\d{1,2}(?:-|$)")


@functools.cache
def _keys() -> dict[str, str]:
    """The listed names by their :func:`rates.model_key`."""
    return {model_key(name): name for name in equivalences()}


def seller_names(
    models: Iterable[str], seller: str, model_map: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A ``model_map`` for pricing ``models`` at ``seller`` (a table name, or ``VENDOR``).

    Each model is first renamed by the user's ``model_map`` ("what if these calls had used
    model X"), then to the seller's id for that model where the map lists one.
    """
    renamed: dict[str, str] = {}
    for model in models:
        target = (model_map or {}).get(model, model)
        entry = lookup(target)
        name = None
        if entry is not None:
            name = entry.names.get(entry.vendor if seller == VENDOR else seller)
        renamed[model] = name or target
    return renamed
