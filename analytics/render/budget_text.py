"""The budget as text: ``agentcost budget`` (a few lines) and ``agentcost statusline`` (one).

Amounts are shown in the budget's unit (AI credits or dollars) with two decimals, rounded for
display only; a month with calls left without a cost says its spend is a lower bound, and a
projection is marked ``~`` because it is one.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from analytics.core.budget import USD_PER_CREDIT, BudgetStatus
from analytics.render.text_table import counted

_CENT = Decimal("0.01")


def _number(usd: Decimal, unit: str) -> str:
    """``usd`` in ``unit`` without the unit's name: ``123.45`` (credits) or ``$1.23``."""
    if unit == "credits":
        return f"{(usd / USD_PER_CREDIT).quantize(_CENT, ROUND_HALF_EVEN):,}"
    sign = "-" if usd < 0 else ""
    return f"{sign}${abs(usd).quantize(_CENT, ROUND_HALF_EVEN):,}"


def _amount(usd: Decimal, unit: str) -> str:
    """``usd`` in ``unit``: ``123.45 credits`` or ``$1.23``."""
    return _number(usd, unit) + (" credits" if unit == "credits" else "")


def budget_lines(status: BudgetStatus) -> str:
    """What ``agentcost budget`` prints: the month, allowance, spent, left, projection."""
    budget = status.budget
    unit = budget.unit if budget else "usd"
    days = (status.end - status.start).days
    elapsed = (status.today - status.start).days + 1
    month = f"{status.start} to {status.end - timedelta(days=1)}"
    lines = [f"budget month  {month} (day {elapsed} of {days})"]
    lower = (
        f" (+{counted(status.unpriced_calls, 'call')} without a cost: a lower bound)"
        if status.unpriced_calls
        else ""
    )
    if budget is None:
        lines.append(f"spent         {_amount(status.spent_usd, unit)}{lower}")
    else:
        share = status.spent_usd / budget.usd * 100
        dollars = f" ({_amount(budget.usd, 'usd')})" if unit == "credits" else ""
        lines += [
            f"allowance     {_amount(budget.usd, unit)}{dollars} a month, from day "
            f"{budget.start_day}",
            f"spent         {_amount(status.spent_usd, unit)}, {share:.0f}%{lower}",
            f"left          {_amount(status.left_usd or Decimal(0), unit)}",
        ]
    projected = status.projected_usd
    verdict = ""
    if budget is not None:
        gap = projected - budget.usd
        verdict = f": over by {_amount(gap, unit)}" if gap > 0 else ": within the budget"
    lines.append(
        f"projection    ~{_amount(projected, unit)} by month end at this month's rate{verdict}"
    )
    if status.billed_usd is not None:
        lines.append(
            f"Copilot bill  {_amount(status.billed_usd, unit)} for these calls (the log's own)"
        )
    if status.over:
        lines.append(f"OVER BUDGET by {_amount(-(status.left_usd or Decimal(0)), unit)}")
    return "\n".join(lines)


def statusline(status: BudgetStatus, active: str | None) -> str:
    """One short line for a shell prompt or tmux: today, the month against the budget, and
    the active session (``active``: its short description, if any)."""
    unit = status.budget.unit if status.budget else "usd"
    parts = [f"today {_amount(status.today_usd, unit)}"]
    if status.budget is None:
        parts.append(f"month {_amount(status.spent_usd, unit)}")
    else:
        share = status.spent_usd / status.budget.usd * 100
        over = " OVER" if status.over else ""
        parts.append(
            f"month {_number(status.spent_usd, unit)}/{_amount(status.budget.usd, unit)} "
            f"({share:.0f}%){over}"
        )
    if active:
        parts.append(active)
    return " · ".join(parts)
