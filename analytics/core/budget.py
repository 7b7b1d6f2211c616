"""A monthly allowance in AI credits or dollars, and where this month stands against it.

The allowance lives in ``budget.toml`` in agentcost's config directory (``config_dir``), written
by ``agentcost budget set``::

    credits = "300"        # or: usd = "39.00"
    start_day = 1          # the day of the month a budget month starts (1-28)
    agents = ["copilot"]   # the agents whose calls it counts

A budget counts the calls of its ``agents`` only. AI credits are what Copilot bills (its
premium requests), so a credits budget counts Copilot alone; a dollar budget counts the agents
it names (all of them unless ``budget set --usd N --agent A`` names some): Copilot's calls at
Copilot's price, Claude Code's and Codex's at their vendors' API list prices (API-equivalent:
a subscription pays no per-token bill). A file written before budgets named their agents has
no ``agents`` key and keeps its meaning: a credits budget counts Copilot, a dollar budget every
agent.

A budget month runs from ``start_day`` to the day before ``start_day`` of the next month.
Spent is the priced cost of the counted calls that started in it (``periods.period_report``,
exact decimals, in the user's timezone), and every agent's own figure is kept beside it
(``AgentSpend``), counted or not; the projection assumes the rest of the month goes at the
average daily rate so far. 1 AI credit = $0.01 (the github-copilot table's unit).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import polars as pl

from analytics.core import registry
from analytics.core.errors import ConfigError
from analytics.core.periods import period_report

Unit = Literal["credits", "usd"]
#: Dollars per AI credit.
USD_PER_CREDIT = Decimal("0.01")
#: The agents a budget can count (the calls' ``agent``), in the order they are shown.
AGENTS = tuple(registry.ids())
#: The agents whose calls AI credits pay for.
CREDITS_AGENTS = tuple(registry.ids(registry.with_credits()))
_LAST_START_DAY = 28  # every month has the day


def config_dir() -> Path:
    """``$AGENTCOST_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/agentcost``, else
    ``~/.config/agentcost``."""
    configured = os.environ.get("AGENTCOST_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".config") / "agentcost"


def budget_path() -> Path:
    """The budget file."""
    return config_dir() / "budget.toml"


def default_agents(unit: Unit) -> tuple[str, ...]:
    """The agents a budget in ``unit`` counts unless it names them: those billing AI credits
    (Copilot) for credits, every agent for dollars."""
    return CREDITS_AGENTS if unit == "credits" else AGENTS


@dataclass(frozen=True)
class Budget:
    """``amount`` a month in ``unit``, counting the calls of ``agents``; months start on
    ``start_day``."""

    amount: Decimal
    unit: Unit
    start_day: int = 1
    agents: tuple[str, ...] = ()  # empty: ``default_agents(unit)``

    def __post_init__(self) -> None:
        chosen = self.agents or default_agents(self.unit)
        unknown = sorted(set(chosen) - set(AGENTS))
        if unknown:
            raise ConfigError(f"unknown agents {unknown}; choose from {', '.join(AGENTS)}")
        if self.unit == "credits" and not set(chosen) <= set(CREDITS_AGENTS):
            payers = registry.listed([a.short_name for a in registry.with_credits()])
            raise ConfigError(
                f"AI credits pay for {payers}'s premium requests only; a budget of other "
                "agents' calls is in dollars (--usd N --agent AGENT)"
            )
        object.__setattr__(self, "agents", tuple(a for a in AGENTS if a in chosen))
        if not self.amount.is_finite() or self.amount <= 0:
            raise ConfigError(f"a budget must be a positive amount (e.g. 300), not {self.amount}")
        if not 1 <= self.start_day <= _LAST_START_DAY:
            raise ConfigError(
                f"start day {self.start_day} is not 1-{_LAST_START_DAY}; choose a day every "
                "month has"
            )

    @property
    def usd(self) -> Decimal:
        """The allowance in dollars."""
        return self.amount * USD_PER_CREDIT if self.unit == "credits" else self.amount

    def to_toml(self) -> str:
        """The file ``agentcost budget set`` writes (``parse_budget`` reads it back)."""
        agents = ", ".join(f'"{agent}"' for agent in self.agents)
        return (
            "# agentcost budget: written by `agentcost budget set`\n"
            f'{self.unit} = "{self.amount}"\nstart_day = {self.start_day}\nagents = [{agents}]\n'
        )


def parse_budget(text: str, origin: str) -> Budget:
    """The budget in ``text`` (a file's content; errors name ``origin`` and say what to do)."""
    fix = "fix it or run agentcost budget set --credits N | --usd N"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{origin}: not valid TOML ({err}); {fix}") from None
    units = [unit for unit in ("credits", "usd") if unit in raw]
    unknown = sorted(set(raw) - {"credits", "usd", "start_day", "agents"})
    if len(units) != 1 or unknown:
        problem = f"unknown keys {unknown}" if unknown else "needs exactly one of credits, usd"
        raise ConfigError(f"{origin}: {problem}; {fix}")
    unit: Unit = "credits" if units[0] == "credits" else "usd"
    start_day = raw.get("start_day", 1)
    if not isinstance(start_day, int) or isinstance(start_day, bool):
        raise ConfigError(f"{origin}: start_day must be a whole number 1-28; {fix}")
    agents = raw.get("agents", [])  # absent: what the file meant before (``default_agents``)
    if (
        not isinstance(agents, list)
        or not all(isinstance(a, str) for a in agents)
        or ("agents" in raw and not agents)
    ):
        raise ConfigError(f"{origin}: agents must be a list of agent names; {fix}")
    try:
        return make_budget(raw[unit], unit, start_day, tuple(agents))
    except ConfigError as err:
        raise ConfigError(f"{origin}: {err}; {fix}") from None


def make_budget(
    amount: object, unit: Unit, start_day: int = 1, agents: tuple[str, ...] = ()
) -> Budget:
    """A budget of ``amount`` (a number, or its text) a month in ``unit`` counting ``agents``
    (default ``default_agents(unit)``); a ``ConfigError`` saying what is wrong otherwise."""
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        raise ConfigError(f"{unit} {amount!r} is not a number (e.g. 300 or 39.50)") from None
    return Budget(value, unit, start_day, agents)


def load_budget(path: Path | None = None) -> Budget:
    """The saved budget; a missing or unreadable file is a ``ConfigError`` saying what to do."""
    path = path or budget_path()
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"no budget set ({path} does not exist); run agentcost budget set --credits N"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read ({err}); fix it or set the budget again") from None
    return parse_budget(text, str(path))


def saved_budget() -> Budget | None:
    """The saved budget, or None when none is set (no budget file); a file that cannot be
    used is a ``ConfigError`` (``load_budget``)."""
    return load_budget() if budget_path().exists() else None


def budget_month(today: date, start_day: int) -> tuple[date, date]:
    """The budget month holding ``today``: (first day, first day of the next one)."""
    start = today.replace(day=start_day)
    if today.day < start_day:
        start = _add_month(start, -1)
    return start, _add_month(start, 1)


def _add_month(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return day.replace(year=index // 12, month=index % 12 + 1)


@dataclass(frozen=True)
class AgentSpend:
    """One agent's calls in the budget month: its priced cost this month and today (dollars,
    exact), the calls without a cost, the log's own bill, and whether the budget counts
    them (``counted``)."""

    agent: str
    counted: bool
    month_usd: Decimal
    today_usd: Decimal
    unpriced_calls: int
    billed_usd: Decimal | None


@dataclass(frozen=True)
class BudgetStatus:
    """Where the budget month stands on ``today``: money in dollars (exact decimals) of the
    counted agents (``agents``: the budget's; without a budget, ``None``, every agent's, the
    month the calendar month and nothing left or over), and each agent's own figure
    (``by_agent``: the counted ones, and the others that spent this month)."""

    budget: Budget | None
    today: date
    start: date
    end: date  # the first day of the next budget month
    agents: tuple[str, ...]
    by_agent: tuple[AgentSpend, ...]

    def _counted(self) -> list[AgentSpend]:
        return [spend for spend in self.by_agent if spend.counted]

    @property
    def spent_usd(self) -> Decimal:
        """The counted agents' cost this month."""
        return sum((spend.month_usd for spend in self._counted()), Decimal(0))

    @property
    def today_usd(self) -> Decimal:
        """The counted agents' cost today."""
        return sum((spend.today_usd for spend in self._counted()), Decimal(0))

    @property
    def unpriced_calls(self) -> int:
        """The counted calls without a cost this month: spent is a lower bound."""
        return sum(spend.unpriced_calls for spend in self._counted())

    @property
    def billed_usd(self) -> Decimal | None:
        """The log's own bill for the counted calls of the month (None: no log states one)."""
        bills = [spend.billed_usd for spend in self._counted() if spend.billed_usd is not None]
        return sum(bills, Decimal(0)) if bills else None

    @property
    def left_usd(self) -> Decimal | None:
        return None if self.budget is None else self.budget.usd - self.spent_usd

    @property
    def over(self) -> bool:
        return self.budget is not None and self.spent_usd > self.budget.usd

    @property
    def projected_usd(self) -> Decimal:
        """Month-end spend at this month's average daily rate so far."""
        elapsed = (self.today - self.start).days + 1
        return self.spent_usd * (self.end - self.start).days / elapsed


def budget_status(
    priced_calls: pl.DataFrame,
    priced_sessions: pl.DataFrame,
    budget: Budget | None,
    zone: ZoneInfo,
    today: date,
    read: tuple[str, ...] = AGENTS,
) -> BudgetStatus:
    """``budget`` against the calls of its month up to ``today`` (``price.price_analysis``
    output, with each call's ``agent``), days in ``zone``; ``read``: the agents whose logs
    were read (``--agent``), the only ones that can be counted."""
    start, end = budget_month(today, budget.start_day if budget else 1)
    counted = tuple(a for a in (budget.agents if budget else AGENTS) if a in read)
    days = period_report(
        priced_calls, priced_sessions, period="day", by="agent", zone=zone, since=start, until=today
    ).rows
    spent = days.group_by("agent").agg(
        pl.col("cost_usd").sum().alias("month"),
        pl.col("cost_usd").filter(pl.col("period_start") == today).sum().alias("today"),
        pl.col("unpriced_calls").sum(),
        pl.when(pl.col("billed_usd").is_not_null().any())
        .then(pl.col("billed_usd").sum())
        .alias("billed_usd"),
    )
    found: dict[str, dict[str, Any]] = {row["agent"]: row for row in spent.iter_rows(named=True)}
    by_agent = tuple(
        _spend(agent, agent in counted, found.get(agent, {}))
        for agent in AGENTS
        if agent in counted or agent in found
    )
    return BudgetStatus(budget, today, start, end, counted, by_agent)


def _spend(agent: str, counted: bool, sums: dict[str, Any]) -> AgentSpend:
    """``agent``'s ``AgentSpend`` from its month's sums (none: no call this month)."""
    return AgentSpend(
        agent=agent,
        counted=counted,
        month_usd=_usd(sums.get("month")),
        today_usd=_usd(sums.get("today")),
        unpriced_calls=int(sums.get("unpriced_calls") or 0),
        billed_usd=None if sums.get("billed_usd") is None else _usd(sums["billed_usd"]),
    )


def _usd(value: object) -> Decimal:
    """A sum as a decimal; no priced call is no known spend (0, with the unpriced calls
    counted beside it)."""
    return Decimal(0) if value is None else Decimal(str(value))
