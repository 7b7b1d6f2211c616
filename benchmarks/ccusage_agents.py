"""agentcost against ccusage on the real Claude Code and Codex CLI logs, session by session.

Run by hand from the repository root: ``python -m benchmarks.ccusage_agents``. It lays the
files of ``../shared/real_logs/claude-code`` out as a Claude home (``CLAUDE_CONFIG_DIR``,
``projects/<project>/<session>.jsonl`` with each session's ``<session>/subagents/`` beside it)
and those of ``../shared/real_logs/codex`` as a Codex home (``CODEX_HOME``,
``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``), copies in a temporary directory. Then it
runs the pinned ccusage (``claude session``, ``claude daily``, ``codex session``, ``codex
daily``, ``--json --offline``, days in UTC) and ``agentcost analyze --format json --calls`` on
the same homes, and joins them:

- per ccusage session: ccusage names a session after its file (a Claude session file's stem,
  with its ``subagents/`` files; a rollout's path under ``sessions/``), so agentcost's calls
  are summed by the file they came from, under the same name;
- per day (UTC): agentcost's calls by the day of their timestamp.

Tokens are compared by kind (uncached input, output, cache read, cache write) and must be
equal; costs are shown beside them, each with its price source (ccusage: LiteLLM's table,
its offline copy; agentcost: its own rate tables, vendor list prices). Every difference is
named with its cause from ``CAUSES``, found by reading the log lines (see the README section
"Claude Code and Codex against ccusage"); a difference without one is printed as
unexplained. The comparison goes to ``benchmarks/results/ccusage-agents.json``, ccusage's
per-session figures and the explained differences to ``tests/fixtures/ccusage/`` (what
``tests/agents/test_ccusage_agreement.py`` checks agentcost against, without running ccusage), and
a table to stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchmarks.run import AGENTCOST, CCUSAGE, CCUSAGE_VERSION, REPO, RESULTS, ensure_ccusage

REAL_LOGS = REPO.parent / "shared" / "real_logs"
FIXTURES = REPO / "tests" / "fixtures" / "ccusage"
#: Where each tool's costs come from (costs are compared, never forced to agree).
PRICES = {
    "ccusage": "LiteLLM's model price table, the copy bundled with ccusage (--offline)",
    "agentcost": (
        "analytics/rate_tables through the default table (github-copilot): Claude Code and "
        "Codex calls at their vendor's API list price (cost_source vendor_api)"
    ),
}
#: Token kinds, in the order tables show them: uncached input, output, cache read, write.
KINDS = ("input", "output", "cache_read", "cache_write")
_NOT_NAME = re.compile(r"[^A-Za-z0-9]")


@dataclass(frozen=True)
class Placed:
    """One real log file, where it lies in the temporary home, and the ccusage session
    (``unit``) its lines are reported under."""

    source: Path
    dest: Path
    unit: str


@dataclass
class Figures:
    """Tokens by kind and cost of a set of calls (one tool's view of a session or a day)."""

    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    cost: Decimal = Decimal(0)
    unpriced: int = 0
    calls: int = 0

    def add(self, tokens: dict[str, int], cost: Decimal | None) -> None:
        for kind in KINDS:
            self.tokens[kind] += tokens[kind]
        self.calls += 1
        if cost is None:
            self.unpriced += 1
        else:
            self.cost += cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="lay the homes out here and keep them")
    args = parser.parse_args()
    if not REAL_LOGS.is_dir():
        raise SystemExit(f"{REAL_LOGS}: the shared real logs are absent")
    ensure_ccusage()
    with tempfile.TemporaryDirectory(prefix="ccusage-agents-") as scratch:
        root = args.keep or Path(scratch)
        report: dict[str, object] = {
            "ccusage_version": CCUSAGE_VERSION,
            "measured": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "agentcost_commit": _commit(),
            "prices": PRICES,
            "agents": {
                "claude-code": compare_claude(root / "claude", root / "cache"),
                "codex": compare_codex(root / "codex", root / "cache"),
            },
        }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ccusage-agents.json").write_text(json.dumps(report, indent=1) + "\n")
    write_fixtures(report)
    print(render(report))


# ---------------------------------------------------------------------------- layout


def first_value(path: Path, pattern: re.Pattern[bytes]) -> str | None:
    """The first match of ``pattern`` (one group) in a file's lines, decoded."""
    with path.open("rb") as file:
        for line in file:
            match = pattern.search(line)
            if match:
                return match.group(1).decode()
    return None


_SESSION_ID = re.compile(rb'"sessionId":"([^"]+)"')


def project_name(directory: Path) -> str:
    """A project directory's name as Claude Code writes it: every character outside
    ``[A-Za-z0-9]`` of the path turned into ``-``."""
    return _NOT_NAME.sub("-", str(directory))


def claude_layout(source_root: Path, home: Path, only: str | None = None) -> list[Placed]:
    """Copy the Claude Code files into ``home/projects`` as Claude Code lays them out.

    A session file keeps its name, except the recorder's ``transcript.jsonl``, which takes
    the name Claude Code gives it, ``<sessionId>.jsonl`` (its first ``sessionId``); its
    project is the directory it was found in. A ``subagents/agent-*.jsonl`` file goes into
    ``<session>/subagents/`` beside its session file: the file named by the directory it
    was found under, else the session file holding its ``sessionId``, else (its parent is
    not in the set) a ``<sessionId>/`` directory of its own. ``only``: one source
    repository's files.
    """
    files = _files(source_root, only)
    mains = [f for f in files if f.parent.name != "subagents"]
    placed: dict[Path, Placed] = {}
    by_session: dict[str, Placed] = {}
    for file in mains:
        relative = file.parent.relative_to(source_root)
        name = file.name
        if name == "transcript.jsonl":
            name = f"{first_value(file, _SESSION_ID)}.jsonl"
        project = project_name(relative)
        dest = home / "projects" / project / name
        placed[file] = Placed(file, dest, f"{project}/{dest.stem}")
        session = first_value(file, _SESSION_ID)
        if session and not file.name.startswith("agent-"):
            by_session.setdefault(session, placed[file])
    for file in files:
        if file.parent.name != "subagents":
            continue
        owner_dir = file.parent.parent
        session = first_value(file, _SESSION_ID) or owner_dir.name
        beside = owner_dir.with_suffix(".jsonl")
        parent = placed.get(beside) or by_session.get(session)
        if parent is not None:
            where, stem = parent.dest.parent, parent.dest.stem
        else:
            project = project_name(owner_dir.parent.relative_to(source_root))
            where, stem = home / "projects" / project, session
        dest = where / stem / "subagents" / file.name
        placed[file] = Placed(file, dest, f"{where.name}/{stem}")
    return _copy(placed.values())


def codex_layout(source_root: Path, home: Path, only: str | None = None) -> list[Placed]:
    """Copy the Codex rollouts into ``home/sessions/YYYY/MM/DD/``. A rollout keeps its name
    and day; the recorder's ``transcript.jsonl`` takes the name Codex gives a rollout,
    ``rollout-<start>-<id>.jsonl``, from its first ``session_meta`` (start in UTC)."""
    placed = []
    named = re.compile(r"rollout-(\d{4})-(\d\d)-(\d\d)T")
    for file in _files(source_root, only):
        match = named.match(file.name)
        if match:
            name, day = file.name, match.groups()
        else:
            session, start = first_session_meta(file)
            when = dt.datetime.fromisoformat(start.replace("Z", "+00:00"))
            name = f"rollout-{when:%Y-%m-%dT%H-%M-%S}-{session}.jsonl"
            day = (f"{when:%Y}", f"{when:%m}", f"{when:%d}")
        dest = home / "sessions" / Path(*day) / name
        placed.append(Placed(file, dest, str(Path(*day) / dest.stem)))
    return _copy(placed)


def _files(source_root: Path, only: str | None) -> list[Path]:
    """The ``*.jsonl`` files under ``source_root`` (of the repository ``only``), sorted."""
    files = sorted(source_root.rglob("*.jsonl"))
    return [f for f in files if only is None or f.relative_to(source_root).parts[0] == only]


def first_session_meta(path: Path) -> tuple[str, str]:
    """The ``id`` and ``timestamp`` of a rollout's first ``session_meta``."""
    with path.open("rb") as file:
        for line in file:
            if b'"session_meta"' in line:
                payload = json.loads(line)["payload"]
                return str(payload["id"]), str(payload["timestamp"])
    raise SystemExit(f"{path}: no session_meta")


def _copy(placed: Iterable[Placed]) -> list[Placed]:
    """Copy each file to its place (two files meant for one place is an error)."""
    result = sorted(placed, key=lambda p: str(p.dest))
    if len({p.dest for p in result}) != len(result):
        raise SystemExit("two real files would lie at one path of the home")
    for item in result:
        item.dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(item.source, item.dest)
    return result


# ---------------------------------------------------------------------------- counting

Tokens = dict[str, int]


def zero() -> Tokens:
    return dict.fromkeys(KINDS, 0)


def plus(a: Tokens, b: Tokens) -> Tokens:
    return {kind: a[kind] + b[kind] for kind in KINDS}


def minus(a: Tokens, b: Tokens) -> Tokens:
    return {kind: a[kind] - b[kind] for kind in KINDS}


def day_of(timestamp: str) -> str:
    """The UTC day of an ISO timestamp."""
    when = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return f"{when.astimezone(dt.UTC):%Y-%m-%d}"


@dataclass(frozen=True)
class Credit:
    """Tokens a counting rule credits at one log line (``file`` in the home), and what the
    line is (a request's message id, a token_count's totals)."""

    file: str
    line: int
    day: str
    tokens: Tokens
    note: str


def _objects(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """(line number, decoded object) of every line of a log that decodes as an object."""
    with path.open("rb") as file:
        for number, raw in enumerate(file, 1):
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield number, value


@dataclass(frozen=True)
class Reply:
    """One assistant line of a Claude Code log that carries usage (``<synthetic>`` left out)."""

    file: str
    line: int
    session: str
    message: str
    request: str | None
    timestamp: str
    sidechain: bool
    tokens: Tokens


def claude_replies(placed: list[Placed]) -> list[Reply]:
    """Every assistant line with usage, in the order of the files' paths and their lines."""
    replies = []
    for item in placed:
        for number, value in _objects(item.dest):
            message = value.get("message")
            if value.get("type") != "assistant" or not isinstance(message, dict):
                continue
            usage = message.get("usage")
            if not isinstance(usage, dict) or message.get("model") == "<synthetic>":
                continue
            request = value.get("requestId")
            tokens = {
                "input": int(usage.get("input_tokens") or 0),
                "output": int(usage.get("output_tokens") or 0),
                "cache_read": int(usage.get("cache_read_input_tokens") or 0),
                "cache_write": int(usage.get("cache_creation_input_tokens") or 0),
            }
            replies.append(
                Reply(
                    str(item.dest),
                    number,
                    str(value.get("sessionId")),
                    str(message.get("id")),
                    request if isinstance(request, str) else None,
                    str(value.get("timestamp")),
                    value.get("isSidechain") is True,
                    tokens,
                )
            )
    return replies


def claude_credits(replies: list[Reply], key: str) -> list[Credit]:
    """Group the replies into requests by ``key`` and credit each request's **last** line's
    usage at its first line (its file, its day).

    ``rule``: the format's key, (``message.id``, ``requestId``), ``message.id`` alone where
    ``requestId`` is missing, across every file and session (the formats doc).
    ``session``: what ccusage's ``claude session`` does, measured: the same key, but a
    request without ``requestId`` is deduplicated only within one ``sessionId``.
    ``daily``: what ``claude daily`` does, measured: the key where ``requestId`` exists or
    the line is a sub-agent's (``isSidechain``), else (``message.id``, line ``timestamp``),
    so each streamed line of a main-session request without ``requestId`` is a request of
    its own.
    """
    groups: dict[tuple[str | None, ...], list[Reply]] = {}
    for reply in replies:
        ids: tuple[str | None, ...] = (reply.message, reply.request)
        if key == "session" and reply.request is None:
            ids = (reply.session, reply.message)
        elif key == "daily" and reply.request is None and not reply.sidechain:
            ids = (reply.message, reply.timestamp)
        groups.setdefault(ids, []).append(reply)
    return [
        Credit(g[0].file, g[0].line, day_of(g[0].timestamp), g[-1].tokens, g[0].message)
        for g in groups.values()
    ]


def codex_credits(placed: list[Placed], ccusage_rule: bool) -> list[Credit]:
    """The usage each ``token_count`` line adds, by the format rule or by ccusage's.

    Rule (formats doc): a session starts at a ``session_meta`` with a new id (totals from 0;
    a ``session_meta`` right after another is a fork's copy of its parent's header); a
    ``token_count`` whose ``total_token_usage`` moved adds the increase. ccusage's, measured:
    a ``token_count`` whose total differs from the file's previous one adds its
    ``last_token_usage``; a ``session_meta`` resets nothing.
    """
    credits = []
    for item in placed:
        previous: Tokens | None = None
        session, last_type = "", ""
        for number, value in _objects(item.dest):
            kind, payload = value.get("type"), value.get("payload")
            if not isinstance(payload, dict):
                continue
            starts = payload.get("id") != session and last_type != "session_meta"
            if kind == "session_meta" and starts:
                session = str(payload.get("id"))
                previous = previous if ccusage_rule else zero()
            last_type = str(kind)
            info = payload.get("info")
            if payload.get("type") != "token_count" or not isinstance(info, dict):
                continue
            total = _codex_tokens(info.get("total_token_usage"))
            if total is None or total == previous:
                continue
            if ccusage_rule:
                added = _codex_tokens(info.get("last_token_usage")) or zero()
            else:
                added = minus(total, previous or zero())
            note = f"token_count total {_short(total)}" + (
                f" after {_short(previous)}" if previous else ""
            )
            previous = total
            credits.append(
                Credit(str(item.dest), number, day_of(str(value["timestamp"])), added, note)
            )
    return credits


def _codex_tokens(usage: object) -> Tokens | None:
    """A Codex usage record as uncached input, output, cache read and cache write
    (``input_tokens`` includes cached input and cache writes)."""
    if not isinstance(usage, dict):
        return None
    cached = int(usage.get("cached_input_tokens") or 0)
    written = int(usage.get("cache_write_input_tokens") or 0)
    return {
        "input": int(usage.get("input_tokens") or 0) - cached - written,
        "output": int(usage.get("output_tokens") or 0),
        "cache_read": cached,
        "cache_write": written,
    }


def _short(tokens: Tokens) -> str:
    return "/".join(f"{tokens[kind]:,}" for kind in KINDS)


# ---------------------------------------------------------------------------- running


def ccusage(agent: str, report: str, env: dict[str, str]) -> dict[str, object]:
    """``ccusage <agent> <report> --json --offline`` with days in UTC."""
    command = [str(CCUSAGE), agent, report, "--json", "--offline", "--timezone", "UTC"]
    out = subprocess.run(
        command, env={**os.environ, **env}, check=True, capture_output=True, cwd=REPO
    )
    value: dict[str, object] = json.loads(out.stdout)
    return value


def agentcost_calls(target: Path, cache: Path) -> list[dict[str, Any]]:
    """``agentcost analyze TARGET --format json --calls`` (days in UTC): its calls."""
    command = [str(AGENTCOST), "analyze", str(target), "--format", "json", "--calls"]
    env = {**os.environ, "AGENTCOST_CACHE_DIR": str(cache)}
    out = subprocess.run([*command, "--timezone", "UTC"], env=env, capture_output=True, check=False)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{command} failed: {out.stderr.decode()}")
    calls: list[dict[str, Any]] = json.loads(out.stdout)["calls"]
    return calls


def ccusage_figures(rows: object, key: str) -> dict[str, Figures]:
    """ccusage's JSON rows (sessions or days) as figures by session name or day."""
    figures = {}
    assert isinstance(rows, list)
    for row in rows:
        name = f"{row['projectPath']}/{row['sessionId']}" if "projectPath" in row else row[key]
        cost = row.get("totalCost", row.get("costUSD"))
        figures[name] = Figures(
            tokens={
                "input": row["inputTokens"],
                "output": row["outputTokens"],
                "cache_read": row["cacheReadTokens"],
                "cache_write": row["cacheCreationTokens"],
            },
            cost=Decimal(str(cost)),
        )
    return figures


@dataclass
class Ours:
    """agentcost's calls summed by ccusage session name, by UTC day and by file, and the
    agentcost session ids found under each ccusage session name."""

    units: dict[str, Figures] = field(default_factory=dict)
    days: dict[str, Figures] = field(default_factory=dict)
    files: dict[str, Figures] = field(default_factory=dict)
    sessions: dict[str, set[str]] = field(default_factory=dict)


def agentcost_figures(calls: list[dict[str, Any]], unit_of: dict[str, str]) -> Ours:
    """Sum agentcost's calls (``--calls`` JSON) as ccusage's reports group them."""
    ours = Ours()
    for call in calls:
        read, written = call["cache_read_tokens"] or 0, call["cache_write_tokens"] or 0
        tokens = {
            "input": call["input_tokens"] - read - written,
            "output": call["output_tokens"],
            "cache_read": read,
            "cache_write": written,
        }
        cost = Decimal(call["cost_usd"]) if call["cost_usd"] is not None else None
        file = call["source_file"]
        unit = unit_of[file]
        ours.units.setdefault(unit, Figures()).add(tokens, cost)
        ours.days.setdefault(day_of(call["start_time"]), Figures()).add(tokens, cost)
        ours.files.setdefault(file, Figures()).add(tokens, cost)
        ours.sessions.setdefault(unit, set()).add(call["session_id"])
    return ours


def _by(credits: list[Credit], group: dict[str, str] | None) -> dict[str, Tokens]:
    """Credits summed by ccusage session name (``group`` maps a file to it) or by day."""
    sums: dict[str, Tokens] = {}
    for credit in credits:
        name = group[credit.file] if group is not None else credit.day
        sums[name] = plus(sums.get(name, zero()), credit.tokens)
    return sums


#: The causes of the differences found, by name: what ccusage does, and what the format
#: says (each measured on the log lines; ``explain`` names the lines).
CAUSES = {
    "claude-copy-under-another-session": (
        "a request without requestId (message.id alone is its key) is written under two "
        "sessionIds; ccusage's claude session dedupes such a request only within one "
        "sessionId (with a requestId, across sessions) and counts it again here; the format "
        "counts a request once across files and sessions (agentcost does)"
    ),
    "claude-daily-lines-without-request-id": (
        "main-session requests without requestId (Bedrock msg_bdrk_ ids; the mock's "
        "msg_mock_001): ccusage's claude daily keys a line that has no requestId and is not "
        "a sub-agent's (isSidechain false) by message.id and line timestamp, so every "
        "streamed line of such a request counts as a request (input, cache reads and writes "
        "once per line, output summed over the lines), and so does a copy written at "
        "another time; the format keys them by message.id and takes the last line (agentcost "
        "does, as ccusage's claude session does)"
    ),
    "codex-equal-total-after-restart": (
        "a new session_meta in the same file starts a session whose totals restart from 0; "
        "when it reaches exactly the previous session's total, ccusage takes the token_count "
        "for a repeat of the previous total and drops it; the format counts the new "
        "session's increase (agentcost does)"
    ),
    "codex-last-usage-not-increment": (
        "the token_count's last_token_usage is not the increase of its total_token_usage; "
        "ccusage adds last_token_usage, the format the totals' increase (agentcost does, as "
        "the facts table's final totals do)"
    ),
}


@dataclass
class Difference:
    """The lines of one file where ccusage's rule credits other tokens than the format's,
    for one cause: their numbers, what they are, and the tokens ccusage counts more
    (negative: fewer)."""

    file: str
    cause: str
    lines: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ccusage_more: Tokens = field(default_factory=zero)


def explain(
    agent: str, report: str, rule: list[Credit], model: list[Credit], group: dict[str, str] | None
) -> dict[str, list[Difference]]:
    """Where ccusage's rule (``model``) credits other tokens than the format's (``rule``),
    by ccusage session name (``group`` maps a file to it) or by day."""
    mine = {(c.file, c.line): c for c in rule}
    theirs: dict[tuple[str, int], Tokens] = {}
    first: dict[tuple[str, int], Credit] = {}
    for credit in model:
        where = (credit.file, credit.line)
        theirs[where] = plus(theirs.get(where, zero()), credit.tokens)
        first.setdefault(where, credit)
    found: dict[tuple[str, str, str], Difference] = {}
    for where in sorted(mine.keys() | theirs.keys()):
        expected = mine[where].tokens if where in mine else zero()
        got = theirs.get(where, zero())
        if got == expected:
            continue
        credit = mine.get(where) or first[where]
        name = group[credit.file] if group is not None else credit.day
        cause = _cause(agent, report, where in theirs, got)
        entry = found.setdefault((name, credit.file, cause), Difference(credit.file, cause))
        entry.lines.append(where[1])
        if credit.note not in entry.notes and len(entry.notes) < 3:
            entry.notes.append(credit.note)
        entry.ccusage_more = plus(entry.ccusage_more, minus(got, expected))
    by_name: dict[str, list[Difference]] = {}
    for (name, _, _), entry in found.items():
        by_name.setdefault(name, []).append(entry)
    return by_name


def _cause(agent: str, report: str, counted: bool, got: Tokens) -> str:
    """The name (``CAUSES``) of what made ccusage's rule credit other tokens at a line."""
    if agent == "claude-code":
        if report == "session":
            return "claude-copy-under-another-session"
        return "claude-daily-lines-without-request-id"
    if not counted or got == zero():
        return "codex-equal-total-after-restart"
    return "codex-last-usage-not-increment"


def _signed(tokens: Tokens) -> str:
    return ", ".join(f"{kind} {tokens[kind]:+,}" for kind in KINDS if tokens[kind]) or "none"


# ---------------------------------------------------------------------------- comparing


def compare_claude(home: Path, cache: Path) -> dict[str, object]:
    """The Claude Code comparison on a home laid out from the real files."""
    placed = claude_layout(REAL_LOGS / "claude-code", home)
    replies = claude_replies(placed)
    env = {"CLAUDE_CONFIG_DIR": str(home)}
    return compare_agent(
        "claude-code",
        placed,
        (ccusage("claude", "session", env), ccusage("claude", "daily", env)),
        agentcost_calls(home / "projects", cache),
        claude_credits(replies, "rule"),
        (claude_credits(replies, "session"), claude_credits(replies, "daily")),
        {tree: _claude_tree(home.parent / f"claude-{tree}", tree) for tree in _trees(placed)},
    )


def compare_codex(home: Path, cache: Path) -> dict[str, object]:
    """The Codex comparison on a home laid out from the real rollouts."""
    placed = codex_layout(REAL_LOGS / "codex", home)
    env = {"CODEX_HOME": str(home)}
    model = codex_credits(placed, ccusage_rule=True)
    return compare_agent(
        "codex",
        placed,
        (ccusage("codex", "session", env), ccusage("codex", "daily", env)),
        agentcost_calls(home, cache),
        codex_credits(placed, ccusage_rule=False),
        (model, model),
        {tree: _codex_tree(home.parent / f"codex-{tree}", tree) for tree in _trees(placed)},
    )


def _trees(placed: list[Placed]) -> list[str]:
    """The source repositories (``<owner>__<repo>``) the files come from."""
    return sorted({_tree(item.source) for item in placed})


def _tree(source: Path) -> str:
    return source.relative_to(REAL_LOGS).parts[1]


def _claude_tree(home: Path, tree: str) -> dict[str, str]:
    """ccusage's claude session and daily totals on one source repository's files alone."""
    claude_layout(REAL_LOGS / "claude-code", home, only=tree)
    env = {"CLAUDE_CONFIG_DIR": str(home)}
    return _report_totals(ccusage("claude", "session", env), ccusage("claude", "daily", env))


def _codex_tree(home: Path, tree: str) -> dict[str, str]:
    """ccusage's codex session and daily totals on one source repository's files alone."""
    codex_layout(REAL_LOGS / "codex", home, only=tree)
    env = {"CODEX_HOME": str(home)}
    return _report_totals(ccusage("codex", "session", env), ccusage("codex", "daily", env))


def _report_totals(session: dict[str, object], daily: dict[str, object]) -> dict[str, str]:
    """All tokens and cost of ccusage's session report and of its daily report, and how
    much more the daily one says (percent)."""
    by_session = _total(ccusage_figures(session["sessions"], "sessionId").values())
    by_day = _total(ccusage_figures(daily["daily"], "date").values())
    tokens = (sum(by_session.tokens.values()), sum(by_day.tokens.values()))
    return {
        "session_tokens": str(tokens[0]),
        "daily_tokens": str(tokens[1]),
        "daily_over_session_tokens_pct": _pct(Decimal(tokens[1]), Decimal(tokens[0])),
        "session_cost_usd": str(by_session.cost),
        "daily_cost_usd": str(by_day.cost),
        "daily_over_session_cost_pct": _pct(by_day.cost, by_session.cost),
    }


def _pct(value: Decimal, base: Decimal) -> str:
    """How much more ``value`` is than ``base``, in percent, to 0.1 (ccusage sums floats:
    a difference under a millionth is none)."""
    if not base:
        return "null"
    more = value / base - 1
    return f"{more * 100:.1f}" if abs(more) > Decimal("1e-6") else "0.0"


def _total(figures: Iterable[Figures]) -> Figures:
    total = Figures()
    for item in figures:
        total.tokens = plus(total.tokens, item.tokens)
        total.cost += item.cost
        total.unpriced += item.unpriced
        total.calls += item.calls
    return total


def compare_agent(
    agent: str,
    placed: list[Placed],
    reports: tuple[dict[str, object], dict[str, object]],
    calls: list[dict[str, Any]],
    rule: list[Credit],
    models: tuple[list[Credit], list[Credit]],
    trees: dict[str, dict[str, str]],
) -> dict[str, object]:
    """Join ccusage's session and daily reports with agentcost's calls and the format
    rule's count, name each difference's cause, and sum by source repository."""
    unit_of = {str(item.dest): item.unit for item in placed}
    source_of = {str(item.dest): _relative(item.source) for item in placed}
    files_of: dict[str, list[str]] = {}
    dests_of: dict[str, list[str]] = {}
    for item in placed:
        files_of.setdefault(item.unit, []).append(_relative(item.source))
        dests_of.setdefault(item.unit, []).append(str(item.dest))
    ours = agentcost_figures(calls, unit_of)
    joined = _join(
        agent, "session", reports[0]["sessions"], ours.units, (rule, models[0]), unit_of, source_of
    )
    sessions = [
        {
            "session": name,
            "tree": files_of[name][0].split("/")[1],
            "files": files_of[name],
            "agentcost_sessions": sorted(ours.sessions.get(name, ())),
            "agentcost_by_file": {
                source_of[file]: ours.files[file].tokens
                for file in dests_of[name]
                if file in ours.files
            },
            **row,
        }
        for name, row in joined.items()
    ]
    by_day = _join(
        agent, "daily", reports[1]["daily"], ours.days, (rule, models[1]), None, source_of
    )
    days = [{"day": day, **row} for day, row in by_day.items()]
    return {
        "files": [source_of[str(item.dest)] for item in placed],
        "sessions": sessions,
        "days": days,
        "trees": _tree_summary(sessions, trees),
        "ccusage_daily_against_session": _report_totals(*reports),
    }


def _join(
    agent: str,
    report: str,
    their_rows: object,
    ours: dict[str, Figures],
    credits: tuple[list[Credit], list[Credit]],
    group: dict[str, str] | None,
    source_of: dict[str, str],
) -> dict[str, dict[str, object]]:
    """One row per ccusage session name (``group`` maps a file in the home to it) or day
    (``group`` None) that ccusage (``their_rows``), agentcost or the format's rule counts
    tokens in; ``credits`` are the rule's and ccusage's measured rule's."""
    theirs = ccusage_figures(their_rows, "sessionId" if group is not None else "date")
    rule, model = (_by(c, group) for c in credits)
    differences = explain(agent, report, *credits, group)
    rows = {}
    for name in sorted(theirs.keys() | ours.keys() | _nonzero(rule)):
        row = _row(theirs.get(name), ours.get(name), rule.get(name, zero()))
        row["verdict"] = _verdict(row, model.get(name, zero()))
        row["differences"] = _differences(differences.get(name, []), source_of)
        rows[name] = row
    return rows


def _relative(source: Path) -> str:
    return source.relative_to(REAL_LOGS).as_posix()


def _nonzero(sums: dict[str, Tokens]) -> set[str]:
    return {name for name, tokens in sums.items() if tokens != zero()}


def _row(theirs: Figures | None, ours: Figures | None, rule: Tokens) -> dict[str, object]:
    """One joined row: each tool's tokens and cost, and the format rule's tokens."""
    theirs, ours = theirs or Figures(), ours or Figures()
    return {
        "ccusage": {**theirs.tokens, "cost_usd": str(theirs.cost)},
        "agentcost": {
            **ours.tokens,
            "cost_usd": str(ours.cost),
            "calls": ours.calls,
            "unpriced_calls": ours.unpriced,
        },
        "format_rule": rule,
    }


def _tokens(figures: object) -> Tokens:
    assert isinstance(figures, dict)
    return {kind: int(figures[kind]) for kind in KINDS}


def _verdict(row: dict[str, object], model: Tokens) -> str:
    """``agree``; ``ccusage differs`` (agentcost counts as the format says, and ccusage's
    figure is what its measured rule gives, so the cause is named); ``agentcost differs``
    (agentcost is not the format's count); else ``unexplained``."""
    theirs, ours = _tokens(row["ccusage"]), _tokens(row["agentcost"])
    rule = _tokens(row["format_rule"])
    if ours != rule:
        return "agentcost differs"
    if theirs == ours:
        return "agree"
    return "ccusage differs" if theirs == model else "unexplained"


def _differences(found: list[Difference], source_of: dict[str, str]) -> list[dict[str, object]]:
    return [
        {
            "file": source_of[entry.file],
            "cause": entry.cause,
            "lines": entry.lines,
            "what": entry.notes,
            "ccusage_more": entry.ccusage_more,
        }
        for entry in found
    ]


def _tree_summary(
    sessions: list[dict[str, object]], trees: dict[str, dict[str, str]]
) -> dict[str, dict[str, object]]:
    """Per source repository: sessions agreeing, all tokens and cost of each tool, and
    ccusage's daily totals against its session totals on that repository alone."""
    summary: dict[str, dict[str, object]] = {}
    for tree, daily in trees.items():
        mine = [s for s in sessions if s["tree"] == tree]
        theirs = [_tokens(s["ccusage"]) for s in mine]
        ours = [_tokens(s["agentcost"]) for s in mine]
        summary[tree] = {
            "sessions": len(mine),
            "agreeing": sum(s["verdict"] == "agree" for s in mine),
            "ccusage_tokens": sum(sum(t.values()) for t in theirs),
            "agentcost_tokens": sum(sum(t.values()) for t in ours),
            "ccusage_cost_usd": str(sum(Decimal(_cost(s["ccusage"])) for s in mine)),
            "agentcost_cost_usd": str(sum(Decimal(_cost(s["agentcost"])) for s in mine)),
            "agentcost_unpriced_calls": sum(_unpriced(s["agentcost"]) for s in mine),
            "ccusage_alone_on_this_tree": daily,
        }
    return summary


def _cost(figures: object) -> str:
    assert isinstance(figures, dict)
    return str(figures["cost_usd"])


def _unpriced(figures: object) -> int:
    assert isinstance(figures, dict)
    return int(figures["unpriced_calls"])


# ---------------------------------------------------------------------------- writing


def write_fixtures(report: dict[str, object]) -> None:
    """``tests/fixtures/ccusage/<agent>.json``: ccusage's per-session and per-day tokens on
    the given files, whether agentcost agreed, and each difference's cause with the tokens
    ccusage counts more than the format (what tests/agents/test_ccusage_agreement.py checks)."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    agents = report["agents"]
    assert isinstance(agents, dict)
    for agent, result in agents.items():
        rows = {}
        for kind, key in (("sessions", "session"), ("days", "day")):
            rows[kind] = [
                {
                    key: row[key],
                    **({"files": row["files"]} if kind == "sessions" else {}),
                    "ccusage": {k: row["ccusage"][k] for k in KINDS},
                    "agrees": row["verdict"] == "agree",
                    "causes": sorted({d["cause"] for d in row["differences"]}),
                    "ccusage_more": minus(_tokens(row["ccusage"]), _tokens(row["format_rule"])),
                    "verdict": row["verdict"],
                }
                for row in result[kind]
            ]
        fixture = {
            "ccusage_version": report["ccusage_version"],
            "recorded": report["measured"],
            "recorded_by": "python -m benchmarks.ccusage_agents",
            "commands": COMMANDS[agent],
            "layout": LAYOUT[agent],
            "tokens": "input = uncached input; cache_write = cache creation; output includes "
            "reasoning; days in UTC",
            "causes": {
                name: text for name, text in CAUSES.items() if name.startswith(agent.split("-")[0])
            },
            "files": [
                {"path": path, "sha256": _sha256(REAL_LOGS / path)} for path in result["files"]
            ],
            **rows,
        }
        (FIXTURES / f"{agent}.json").write_text(_one_row_a_line(fixture))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_row_a_line(value: dict[str, object]) -> str:
    """JSON with each element of a top-level list on a line of its own (a readable diff)."""
    parts = []
    for key, item in value.items():
        text = (
            "[\n" + ",\n".join(f"  {json.dumps(row)}" for row in item) + "\n ]"
            if isinstance(item, list)
            else json.dumps(item)
        )
        parts.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


COMMANDS = {
    "claude-code": [
        "CLAUDE_CONFIG_DIR=<home> ccusage claude session --json --offline --timezone UTC",
        "CLAUDE_CONFIG_DIR=<home> ccusage claude daily --json --offline --timezone UTC",
    ],
    "codex": [
        "CODEX_HOME=<home> ccusage codex session --json --offline --timezone UTC",
        "CODEX_HOME=<home> ccusage codex daily --json --offline --timezone UTC",
    ],
}
LAYOUT = {
    "claude-code": (
        "each file copied to <home>/projects/<its directory, non-alphanumerics as '-'>/, "
        "transcript.jsonl renamed <first sessionId>.jsonl, subagents/ files under "
        "<session>/subagents/ beside their session file; a ccusage session is a session "
        "file with its subagents/ files (named <project>/<file stem>)"
    ),
    "codex": (
        "each rollout copied to <home>/sessions/YYYY/MM/DD/, transcript.jsonl renamed "
        "rollout-<first session_meta time, UTC>-<id>.jsonl; a ccusage session is a rollout "
        "file (named by its path under sessions/)"
    ),
}


def render(report: dict[str, object]) -> str:
    """The comparison as markdown: per agent and source repository, then each difference."""
    agents = report["agents"]
    assert isinstance(agents, dict)
    out = [
        f"ccusage {report['ccusage_version']} against agentcost {report['agentcost_commit']}, "
        f"measured {report['measured']}",
        "",
        "| agent | tree | sessions agreeing / total | tokens ccusage | tokens agentcost "
        "| cost ccusage (LiteLLM) | cost agentcost (vendor list) | days agreeing / total |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for agent, result in agents.items():
        days = result["days"]
        agreeing_days = sum(d["verdict"] == "agree" for d in days)
        for tree, row in result["trees"].items():
            out.append(
                f"| {agent} | {tree} | {row['agreeing']} / {row['sessions']} "
                f"| {row['ccusage_tokens']:,} | {row['agentcost_tokens']:,} "
                f"| ${Decimal(row['ccusage_cost_usd']):.2f} "
                f"| ${Decimal(row['agentcost_cost_usd']):.2f}"
                + (
                    f" ({row['agentcost_unpriced_calls']} calls unpriced)"
                    if row["agentcost_unpriced_calls"]
                    else ""
                )
                + f" | {agreeing_days} / {len(days)} (all trees) |"
            )
    out += ["", "ccusage daily against ccusage session (all files, then each tree alone):", ""]
    for agent, result in agents.items():
        alone = [(t, row["ccusage_alone_on_this_tree"]) for t, row in result["trees"].items()]
        for tree, daily in [("all files", result["ccusage_daily_against_session"]), *alone]:
            out.append(
                f"- {agent} {tree}: daily {int(daily['daily_tokens']):,} tokens vs session "
                f"{int(daily['session_tokens']):,} ({daily['daily_over_session_tokens_pct']}%), "
                f"${Decimal(daily['daily_cost_usd']):.2f} vs "
                f"${Decimal(daily['session_cost_usd']):.2f} "
                f"({daily['daily_over_session_cost_pct']}%)"
            )
    out += ["", "Differences:", ""]
    for agent, result in agents.items():
        for kind, key in (("sessions", "session"), ("days", "day")):
            for row in result[kind]:
                if row["verdict"] == "agree":
                    continue
                out.append(f"- {agent} {key} `{row[key]}`: {row['verdict']}")
                for diff in row["differences"]:
                    lines = diff["lines"]
                    shown = ", ".join(map(str, lines[:6])) + (" …" if len(lines) > 6 else "")
                    out.append(
                        f"  - `{diff['file']}` lines {shown} ({len(lines)}; "
                        f"{', '.join(diff['what'])}): {diff['cause']}; ccusage "
                        f"{_signed(diff['ccusage_more'])}"
                    )
    return "\n".join(out)


def _commit() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, check=False, cwd=REPO
    )
    return out.stdout.decode().strip() or "unknown"


if __name__ == "__main__":
    main()
