"""The budget as text: ``agentcost budget`` (a few lines) and ``agentcost statusline`` (one).

Amounts are shown in the budget's unit (AI credits or dollars) with two decimals, rounded for
display only; a month with calls left without a cost says its spend is a lower bound, and a
projection is marked ``~`` because it is one. Every figure says whose it is and what it is:
the counted agents are named, a dollar figure of Claude Code or Codex is API-equivalent (their
vendors' list prices), Copilot's is at Copilot's price, and the spend of agents the budget
does not count is shown apart from it, never added in.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from analytics.core.budget import AGENTS, USD_PER_CREDIT, AgentSpend, BudgetStatus
from analytics.core.registry import by_id, money_words
from analytics.core.words import counted

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


def scope(status: BudgetStatus, joiner: str = "+") -> str:
    """Whose calls the figures count: ``Copilot``, ``Copilot+Codex`` (``joiner`` between the
    names), ``all agents``."""
    if status.agents == AGENTS:
        return "all agents"
    return joiner.join(by_id(agent).short_name for agent in status.agents)


def _agent_figure(spend: AgentSpend) -> str:
    """One agent's month in dollars, saying what the figure is."""
    return f"{_amount(spend.month_usd, 'usd')} {money_words(spend.agent)}"


def budget_lines(status: BudgetStatus) -> str:
    """What ``agentcost budget`` prints: the month, whose calls count, allowance, spent (by
    agent where several count), left, projection, the log's bill, and the agents that spent
    this month outside the budget."""
    budget = status.budget
    unit = budget.unit if budget else "usd"
    days = (status.end - status.start).days
    elapsed = (status.today - status.start).days + 1
    month = f"{status.start} to {status.end - timedelta(days=1)}"
    what = "in AI credits (Copilot's premium requests)" if unit == "credits" else "in dollars"
    lines = [
        f"budget month  {month} (day {elapsed} of {days})",
        f"counts        {scope(status, ' and ')}, {what}",
    ]
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
        ]
    if unit == "usd":  # each counted agent's part, saying what its dollars are
        lines += [
            f"  {by_id(s.agent).short_name:<12}{_agent_figure(s)}"
            for s in status.by_agent
            if s.counted
        ]
    if budget is not None:
        lines.append(f"left          {_amount(status.left_usd or Decimal(0), unit)}")
    lines.append(_projection(status, unit))
    if status.billed_usd is not None:
        lines.append(
            f"Copilot bill  {_amount(status.billed_usd, unit)} for these calls (the log's own)"
        )
    lines += [
        f"not counted   {by_id(s.agent).short_name} {_agent_figure(s)}"
        for s in status.by_agent
        if not s.counted and (s.month_usd or s.unpriced_calls)
    ]
    if status.over:
        lines.append(f"OVER BUDGET by {_amount(-(status.left_usd or Decimal(0)), unit)}")
    return "\n".join(lines)


def _projection(status: BudgetStatus, unit: str) -> str:
    """The month-end projection line, with the verdict against the budget (if any)."""
    projected = status.projected_usd
    verdict = ""
    if status.budget is not None:
        gap = projected - status.budget.usd
        verdict = f": over by {_amount(gap, unit)}" if gap > 0 else ": within the budget"
    return f"projection    ~{_amount(projected, unit)} by month end at this month's rate{verdict}"


def statusline(status: BudgetStatus, active: str | None) -> str:
    """One short line for a shell prompt or tmux: whose calls it counts and in what
    (``Copilot credits:``, ``all agents:`` in dollars), today, the month against the budget,
    and the active session (``active``: its short description, if any)."""
    unit = status.budget.unit if status.budget else "usd"
    what = f"{scope(status)} credits" if unit == "credits" else scope(status)
    parts = [f"{what}: today {_number(status.today_usd, unit)}"]
    if status.budget is None:
        parts.append(f"month {_number(status.spent_usd, unit)}")
    else:
        share = status.spent_usd / status.budget.usd * 100
        over = " OVER" if status.over else ""
        parts.append(
            f"month {_number(status.spent_usd, unit)}/{_number(status.budget.usd, unit)} "
            f"({share:.0f}%){over}"
        )
    if active:
        parts.append(active)
    return " · ".join(parts)


def budget_json(status: BudgetStatus) -> str:
    """``agentcost budget --json``: the month, the budget (its agents included), the counted
    figures in dollars (exact decimals as strings) and in the budget's unit, and each agent's
    own figure with what it is (``measure``) and whether the budget counts it."""
    import json

    budget = status.budget
    unit = budget.unit if budget else "usd"

    def money(usd: Decimal | None) -> str | None:
        return None if usd is None else format(usd.normalize(), "f")

    report = {
        "budget_month": {
            "start": str(status.start),
            "end": str(status.end - timedelta(days=1)),
            "day": (status.today - status.start).days + 1,
            "days": (status.end - status.start).days,
        },
        "budget": None
        if budget is None
        else {
            "amount": str(budget.amount),
            "unit": budget.unit,
            "usd": str(budget.usd),
            "start_day": budget.start_day,
            "agents": list(budget.agents),
        },
        "counts": {"agents": list(status.agents), "unit": unit},
        "spent_usd": money(status.spent_usd),
        "today_usd": money(status.today_usd),
        "left_usd": money(status.left_usd),
        "projected_usd": money(status.projected_usd),
        "unpriced_calls": status.unpriced_calls,
        "billed_usd": money(status.billed_usd),
        "over": status.over,
        "by_agent": [
            {
                "agent": spend.agent,
                "counted": spend.counted,
                "measure": money_words(spend.agent),
                "month_usd": money(spend.month_usd),
                "today_usd": money(spend.today_usd),
                "unpriced_calls": spend.unpriced_calls,
                "billed_usd": money(spend.billed_usd),
            }
            for spend in status.by_agent
        ],
    }
    return json.dumps(report, indent=2)
