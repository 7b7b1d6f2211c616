"""A monthly allowance in AI credits or dollars, and where this month stands against it.

The allowance lives in ``budget.toml`` in agentcost's config directory (``config_dir``), written
by ``agentcost budget set``::

    credits = "300"   # or: usd = "39.00"
    start_day = 1     # the day of the month a budget month starts (1-28)

A budget month runs from ``start_day`` to the day before ``start_day`` of the next month.
Spent is the priced cost of the calls that started in it (``periods.period_report``, exact
decimals, in the user's timezone); the projection assumes the rest of the month goes at the
average daily rate so far. 1 AI credit = $0.01 (the github-copilot table's unit).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

import polars as pl

from analytics.core.errors import ConfigError
from analytics.core.periods import period_report

Unit = Literal["credits", "usd"]
#: Dollars per AI credit.
USD_PER_CREDIT = Decimal("0.01")
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


@dataclass(frozen=True)
class Budget:
    """``amount`` a month in ``unit``; months start on ``start_day``."""

    amount: Decimal
    unit: Unit
    start_day: int = 1

    def __post_init__(self) -> None:
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
        return (
            "# agentcost budget: written by `agentcost budget set`\n"
            f'{self.unit} = "{self.amount}"\nstart_day = {self.start_day}\n'
        )


def parse_budget(text: str, origin: str) -> Budget:
    """The budget in ``text`` (a file's content; errors name ``origin`` and say what to do)."""
    fix = "fix it or run agentcost budget set --credits N | --usd N"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{origin}: not valid TOML ({err}); {fix}") from None
    units = [unit for unit in ("credits", "usd") if unit in raw]
    unknown = sorted(set(raw) - {"credits", "usd", "start_day"})
    if len(units) != 1 or unknown:
        problem = f"unknown keys {unknown}" if unknown else "needs exactly one of credits, usd"
        raise ConfigError(f"{origin}: {problem}; {fix}")
    unit: Unit = "credits" if units[0] == "credits" else "usd"
    start_day = raw.get("start_day", 1)
    if not isinstance(start_day, int) or isinstance(start_day, bool):
        raise ConfigError(f"{origin}: start_day must be a whole number 1-28; {fix}")
    try:
        return make_budget(raw[unit], unit, start_day)
    except ConfigError as err:
        raise ConfigError(f"{origin}: {err}; {fix}") from None


def make_budget(amount: object, unit: Unit, start_day: int = 1) -> Budget:
    """A budget of ``amount`` (a number, or its text) a month in ``unit``; a ``ConfigError``
    saying what is wrong otherwise."""
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        raise ConfigError(f"{unit} {amount!r} is not a number (e.g. 300 or 39.50)") from None
    return Budget(value, unit, start_day)


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
class BudgetStatus:
    """Where the budget month stands on ``today``: money in dollars (exact decimals). Without
    a budget (``None``), the month is the calendar month and nothing is left or over."""

    budget: Budget | None
    today: date
    start: date
    end: date  # the first day of the next budget month
    spent_usd: Decimal
    today_usd: Decimal
    unpriced_calls: int  # calls without a cost this month: spent is a lower bound
    billed_usd: Decimal | None  # the log's own bill for the month's calls

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
) -> BudgetStatus:
    """``budget`` against the calls of its month up to ``today`` (``price.price_analysis``
    output), days in ``zone``."""
    start, end = budget_month(today, budget.start_day if budget else 1)

    def totals(since: date) -> dict[str, object]:
        report = period_report(
            priced_calls, priced_sessions, period="day", zone=zone, since=since, until=today
        )
        return report.totals.row(0, named=True)

    month, day = totals(start), totals(today)
    return BudgetStatus(
        budget=budget,
        today=today,
        start=start,
        end=end,
        spent_usd=_usd(month["cost_usd"]),
        today_usd=_usd(day["cost_usd"]),
        unpriced_calls=int(str(month["unpriced_calls"] or 0)),
        billed_usd=None if month["billed_usd"] is None else _usd(month["billed_usd"]),
    )


def _usd(value: object) -> Decimal:
    """A period total as a decimal; no priced call is no known spend (0, with the unpriced
    calls counted beside it)."""
    return Decimal(0) if value is None else Decimal(str(value))
