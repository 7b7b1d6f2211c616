"""The agents agentcost reads, as facts: one :class:`Agent` each, in ``AGENTS``.

What every part of agentcost that names an agent needs to know without reading its logs: its
id (the ``agent`` column), the name people know it by, where its logs live (the variables
that name its home and the paths used when none is set), whether its plans meter 5-hour
usage windows (``agentcost blocks``), and what the money agentcost shows for it means. The
agent modules find their homes from these facts (``Agent.homes``), and the command line
writes its help from them (through ``engine.inputs``), so a new agent or home is one edit
here and no help text goes stale.

Only the standard library: ``agentcost --help`` imports this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Agent:
    """One agent's facts.

    ``home_variables`` name the agent's home (the first set one is used, comma-separated
    lists allowed where ``adds_homes``); ``default_homes`` are used when none is set, or
    beside them when ``adds_homes`` (Claude Code reads every home it finds). ``logs_in`` are
    the directories of a home that hold the session logs (none: the home itself is walked).
    ``blocks``: its plans meter usage in 5-hour windows. ``api_equivalent``: its COST USD is
    the vendor's list prices, with no per-token bill on ``plans`` (a subscription); else the
    rate table's, and its logs record the bill. ``shutdown_check``: its log's shutdown states
    the session's request count, which the counted calls are checked against (SHUTDOWN
    CHECK). ``reader``: the module that folds its logs one call per API request (a
    :class:`analytics.agents.reader.Reader`), imported when its logs are read.
    ``pipeline``: instead, the module of its side of the engine's staged pipeline (an
    :class:`analytics.agents.pipeline.Pipeline`: Copilot's, whose calls are worked out from
    the whole log rather than read one by one). ``suffixes``: the endings of
    the file names discovery offers its reader (``.jsonl`` files by their first record,
    others, such as ``.db``, through ``Reader.claims``). ``credits``: its plans bill AI
    credits (premium requests), so a budget in credits counts its calls alone, and its calls
    are priced under its own table, not at a vendor's API prices. ``content_truth``: its log
    holds every call's true usage beside the content the model read, so ``agentcost
    validate`` measures the token reconstruction on its sessions."""

    id: str
    name: str
    short_name: str
    home_variables: tuple[str, ...]
    default_homes: tuple[str, ...]
    logs_in: tuple[str, ...] = ()
    adds_homes: bool = False
    blocks: bool = False
    api_equivalent: bool = False
    plans: str = ""
    shutdown_check: bool = False
    reader: str = ""
    pipeline: str = ""
    suffixes: tuple[str, ...] = (".jsonl",)
    credits: bool = False
    content_truth: bool = False

    def homes(self) -> list[Path]:
        """The homes named by the environment and the defaults, in that order (whether or
        not they exist; nothing is created)."""
        named: list[Path] = []
        for variable in self.home_variables:
            value = os.environ.get(variable, "")
            parts = value.split(",") if self.adds_homes else [value]
            named += [Path(part.strip()).expanduser() for part in parts if part.strip()]
        defaults = [Path(home).expanduser() for home in self.default_homes]
        return [*named, *defaults] if self.adds_homes or not named else named

    def log_dirs(self) -> list[Path]:
        """The directories holding the agent's logs that exist, each once however it is
        reached: ``logs_in`` of each home (the home itself when ``logs_in`` is empty). What
        discovery walks when no path is named; nothing is created."""
        found: list[Path] = []
        seen: set[Path] = set()
        for home in self.homes():
            for directory in [home / name for name in self.logs_in] or [home]:
                if directory.is_dir() and (real := directory.resolve()) not in seen:
                    seen.add(real)
                    found.append(directory)
        return found

    def home_words(self) -> str:
        """Where the agent's home is, in words: ``$COPILOT_HOME or ~/.copilot``."""
        variables = " or ".join(f"${variable}" for variable in self.home_variables)
        defaults = " and ".join(self.default_homes)
        return f"{variables}, {defaults}" if self.adds_homes else f"{variables} or {defaults}"


COPILOT = Agent(
    id="copilot",
    name="GitHub Copilot CLI",
    short_name="Copilot",
    home_variables=("COPILOT_HOME",),
    default_homes=("~/.copilot",),
    logs_in=("session-state",),
    shutdown_check=True,
    credits=True,
    pipeline="analytics.agents.copilot.pipeline",
)
CLAUDE_CODE = Agent(
    id="claude-code",
    name="Claude Code",
    short_name="Claude Code",
    home_variables=("CLAUDE_CONFIG_DIR",),
    default_homes=("~/.config/claude", "~/.claude"),
    logs_in=("projects",),
    adds_homes=True,
    blocks=True,
    api_equivalent=True,
    plans="Claude Pro/Max",
    content_truth=True,
    reader="analytics.agents.claude_code",
)
CODEX = Agent(
    id="codex",
    name="Codex CLI",
    short_name="Codex",
    home_variables=("CODEX_HOME",),
    default_homes=("~/.codex",),
    logs_in=("sessions", "archived_sessions"),
    api_equivalent=True,
    plans="a ChatGPT plan",
    reader="analytics.agents.codex",
)
PI = Agent(
    id="pi",
    name="pi (pi-coding-agent)",
    short_name="pi",
    home_variables=("PI_CODING_AGENT_DIR",),
    default_homes=("~/.pi/agent",),
    logs_in=("sessions",),
    api_equivalent=True,
    plans="a subscription pi signs in to (ChatGPT, Claude, Copilot)",
    reader="analytics.agents.pi",
)
#: OpenClaw writes pi's session format in a home of its own (``agents/<agentId>/sessions/``):
#: a line of its own for its home and its ``agent`` id, read by pi's fold.
OPENCLAW = Agent(
    id="openclaw",
    name="OpenClaw",
    short_name="OpenClaw",
    home_variables=("OPENCLAW_STATE_DIR",),
    default_homes=("~/.openclaw",),
    logs_in=("agents",),
    api_equivalent=True,
    plans="a subscription OpenClaw signs in to",
    reader="analytics.agents.pi.openclaw",
)
ANTIGRAVITY = Agent(
    id="antigravity",
    name="Antigravity CLI",
    short_name="Antigravity",
    home_variables=("ANTIGRAVITY_DATA_DIR",),
    default_homes=(
        "~/.gemini/antigravity-cli",
        "~/.gemini/antigravity-ide",
        "~/.gemini/antigravity",
    ),
    logs_in=("conversations",),
    api_equivalent=True,
    plans="a Google account's Antigravity quota",
    reader="analytics.agents.antigravity",
    suffixes=(".db",),
)

OPENCODE = Agent(
    id="opencode",
    name="OpenCode",
    short_name="OpenCode",
    home_variables=("OPENCODE_DATA_DIR", "KILO_DATA_DIR"),
    default_homes=("~/.local/share/opencode", "~/.local/share/kilo"),
    adds_homes=True,
    reader="analytics.agents.opencode",
    suffixes=(".db", ".json"),
)

GEMINI_CLI = Agent(
    id="gemini-cli",
    name="Gemini CLI",
    short_name="Gemini CLI",
    # GEMINI_CLI_HOME stands for the user's home (Gemini CLI keeps its files in <it>/.gemini)
    home_variables=("GEMINI_CLI_HOME",),
    default_homes=("~",),
    logs_in=(".gemini/tmp",),
    api_equivalent=True,
    plans="a Google account's Gemini Code Assist or Google AI plan",
    reader="analytics.agents.gemini_cli",
    suffixes=(".jsonl", ".json"),
)
KIMI = Agent(
    id="kimi",
    name="Kimi Code",
    short_name="Kimi",
    home_variables=("KIMI_CODE_HOME", "KIMI_SHARE_DIR"),
    default_homes=("~/.kimi-code", "~/.kimi"),
    logs_in=("sessions",),
    api_equivalent=True,
    plans="a Kimi membership (kimi-for-coding)",
    reader="analytics.agents.kimi",
)

#: Every agent agentcost reads, in the order help texts name them.
AGENTS = (COPILOT, CLAUDE_CODE, CODEX, GEMINI_CLI, OPENCODE, PI, OPENCLAW, ANTIGRAVITY, KIMI)


def listed(words: list[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"


def every_home() -> str:
    """Every agent's home, for help texts: ``$COPILOT_HOME or ~/.copilot (Copilot); ...``."""
    return "; ".join(f"{agent.home_words()} ({agent.short_name})" for agent in AGENTS)


def ids(agents: tuple[Agent, ...] = AGENTS) -> list[str]:
    """The ids of ``agents`` (all of them by default)."""
    return [agent.id for agent in agents]


def by_id(agent_id: str) -> Agent:
    """The agent whose id is ``agent_id`` (a ``KeyError`` for no agent of that id)."""
    for agent in AGENTS:
        if agent.id == agent_id:
            return agent
    raise KeyError(agent_id)


def money_words(agent_id: str) -> str:
    """What an agent's dollar figure is, in words: ``API-equivalent`` (its vendors' list
    prices, no per-token bill on a plan) or ``at Copilot's price`` (its own bill's)."""
    agent = by_id(agent_id)
    return "API-equivalent" if agent.api_equivalent else f"at {agent.short_name}'s price"


def with_credits() -> tuple[Agent, ...]:
    """The agents whose plans bill AI credits (a credits budget counts them alone)."""
    return tuple(agent for agent in AGENTS if agent.credits)


def home_parts() -> frozenset[str]:
    """The names of the agents' default home directories and of their log folders
    (``.copilot``, ``projects``, ``sessions``, ...): path parts that name no person."""
    names = {Path(home).name for agent in AGENTS for home in agent.default_homes}
    return frozenset(names | {folder for agent in AGENTS for folder in agent.logs_in})


def with_content_truth() -> tuple[Agent, ...]:
    """The agents whose logs measure the token reconstruction (``Agent.content_truth``)."""
    return tuple(agent for agent in AGENTS if agent.content_truth)


def with_blocks() -> tuple[Agent, ...]:
    """The agents whose plans meter 5-hour windows (``agentcost blocks``)."""
    return tuple(agent for agent in AGENTS if agent.blocks)


def api_equivalent() -> tuple[Agent, ...]:
    """The agents whose COST USD is the API-equivalent cost (see :class:`Agent`)."""
    return tuple(agent for agent in AGENTS if agent.api_equivalent)


def shutdown_checked() -> tuple[Agent, ...]:
    """The agents whose sessions' calls are checked against their shutdown's count."""
    return tuple(agent for agent in AGENTS if agent.shutdown_check)
