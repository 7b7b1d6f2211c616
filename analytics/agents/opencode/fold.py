"""OpenCode's rows folded into calls, sessions, issues and context items, over whole columns.

The counting rules (``docs/agents/opencode.md``):

* **A call is a ``step-finish`` part** (OpenCode writes one per LLM step, with the step's
  ``tokens`` and ``cost``); a failed step leaves none (its message carries ``error``) and
  is no call. ``api_call_id`` is the part id: a part found in several databases of a group
  (or again in the same) counts once.
* **A fork's copy counts once.** ``Session.fork`` copies a session's messages and parts
  into a new session under new ids, the JSON unchanged: a ``step-finish`` part whose JSON
  and whose message's creation stamp (milliseconds) equal those of a part of an older
  session is that part's copy, and only the oldest session's counts. Two real calls whose
  ``step-finish`` JSON happens to be equal (same tokens, same snapshot) were made at other
  milliseconds, so they stay two.
* **Tokens**: OpenCode's ``input`` excludes cache reads and writes and its ``output``
  excludes reasoning (``total`` is their sum): ``input_tokens`` adds the cache back and
  ``output_tokens`` the reasoning, unless ``total`` shows the output already held it.
* **Sub-agents**: a ``task`` runs in a child session (``session.parent_id``); its calls join
  the root of their session tree as ``subagent`` calls (``agent_id`` the child session,
  ``agent_name`` its agent). A compaction step (message ``mode``/``agent``
  ``compaction``) is a ``compaction`` call.
* ``provider`` is the message's ``providerID`` (``lmstudio``, ``ollama``: local, billed
  nothing; OpenCode logs 0 for them as for unpriced models and subscriptions), and
  ``logged_cost_usd`` the part's ``cost`` as its JSON number text.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import polars as pl

from analytics.agents import AgentTables, call_columns, issue_columns, item_columns, session_columns
from analytics.agents.opencode import database, legacy, slices
from analytics.core import items as kinds
from analytics.core.registry import OPENCODE

#: Part types OpenCode writes (others are counted as unknown rows).
PART_TYPES = frozenset(
    {"text", "reasoning", "tool", "step-start", "step-finish", "patch", "compaction", "file",
     "agent", "subtask", "retry", "snapshot"}
)  # fmt: skip

#: The message ``error`` of a step the user stopped.
ABORTED = "MessageAbortedError"


def issue(file: str, line: int | None, severity: str, message: str) -> dict[str, object]:
    """One issues row."""
    return {"file": file, "line": line, "severity": severity, "message": message}


class _Read(NamedTuple):
    """The rows of a group's files (see ``database.Rows``), each part once, and the issues of
    reading them."""

    sessions: pl.DataFrame
    messages: pl.DataFrame
    parts: pl.DataFrame
    steps: pl.DataFrame
    items: pl.DataFrame
    issues: list[dict[str, object]]


def _tagged(frame: pl.DataFrame, file: pl.Expr, line: pl.Expr, index: int) -> pl.DataFrame:
    """``frame`` with the ``file`` it was read from, its ``line`` there and that file's
    place in the group."""
    return frame.with_columns(
        file.alias("file"), line.alias("line"), pl.lit(index, pl.Int64).alias("file_index")
    )


def _read(
    files: Sequence[Path],
    items: bool,
    only: database.Sessions | None = None,
    session_rows: pl.DataFrame | None = None,
) -> _Read:
    """Every file's sessions, messages and parts (and those parts that are calls and items:
    with their context items' fields unless ``items`` is false), tagged with their file,
    each once (a database's before the legacy store's, then the first file's), and the
    issues of reading them: unreadable files, invalid rows, tables not counted. ``only``:
    the sessions whose messages and parts are read (of a group of one database, whose
    ``session_rows`` are given: ``slices.plan``), else all."""
    found: list[tuple[database.Rows, pl.Expr, pl.Expr, int]] = []
    issues = []
    for index, path in enumerate(path for path in files if not legacy.claims(path)):
        name = str(path)
        try:
            rows = database.read(path, items=items, only=only)
            if session_rows is not None:
                rows = dataclasses.replace(rows, sessions=session_rows)
        except database.UnreadableError as error:
            issues.append(issue(name, None, "error", f"{error}; file skipped"))
            continue
        found.append((rows, pl.lit(name), pl.col("line"), index))
        issues += [
            issue(name, line, "error", f"{table} {id_!r}: data is not valid JSON; row skipped")
            for table, line, id_ in rows.invalid.iter_rows()
        ]
        issues += [
            issue(name, None, "error", f"{count} rows of table {table} (OpenCode 2.x) not read")
            for table, count in rows.unread.items()
        ]
    if stores := [path for path in files if legacy.claims(path)]:
        rows, listed, problems = legacy.read(stores, items=items)
        # a record's ``line`` is its file's place in ``listed``, from 1: its file is named
        named = pl.col("line").replace_strict(
            range(1, len(listed) + 1),
            [str(path) for path in listed],
            default=None,
            return_dtype=pl.String,
        )
        found.append((rows, named, pl.lit(None, pl.Int64), len(files) - len(stores)))
        issues += [issue(str(path), None, "error", why) for path, why in problems]
    every = [(database.nothing(), pl.lit(""), pl.col("line"), 0), *found]
    parts, steps, givers, at = [], [], [], 0
    for rows, file, line, index in every:
        parts.append(_tagged(rows.parts, file, line, index))
        placed = pl.col("at") + at  # the place among every file's parts
        steps.append(_tagged(rows.steps, file, line, index).with_columns(placed))
        givers.append(_tagged(rows.items, file, line, index).with_columns(placed))
        at += rows.parts.height
    every_part = pl.concat(parts)
    kept = every_part.select(pl.col("part").is_first_distinct()).to_series()

    def once(frame: pl.DataFrame, place: pl.Series) -> pl.DataFrame:
        """``frame`` less the parts read before (in an earlier file or row): ``place`` is
        where its rows are among every part."""
        return frame if kept.all() else frame.filter(kept.gather(place))

    sessions = [_tagged(rows.sessions, file, line, index) for rows, file, line, index in every]
    steps_read, items_read = pl.concat(steps), pl.concat(givers)
    return _Read(
        sessions=_first(pl.concat(sessions), "session"),
        messages=_first(pl.concat(rows.messages for rows, *_ in every), "message"),
        parts=once(every_part, pl.Series(range(every_part.height))),
        steps=once(steps_read, steps_read["at"]),
        items=once(items_read, items_read["at"]),
        issues=issues,
    )


def _first(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    """The first row of ``frame`` of each ``key``, in order (``frame`` itself, not a copy,
    when no key is repeated)."""
    first = frame.select(pl.col(key).is_first_distinct()).to_series()
    return frame if first.all() else frame.filter(first)


#: Log order: a part's creation stamp, id, file and row.
ORDER = ["created", "part", "file_index", "line"]


def _rooted(parts: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """``parts`` with the root of their own session's sub-agent tree (``session``: the
    session they count in; their own where it is not known)."""
    root = pl.col("own_session").replace(sessions["session"], sessions["root"])
    return parts.with_columns(root.alias("session"))


def _owned(parts: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """``parts`` with their own session's parent and creation stamp (what tell a sub-agent's
    call and a fork's original) and OpenCode version."""
    own = sessions.select(
        pl.col("session").alias("own_session"),
        pl.col("parent").alias("own_parent"),
        pl.col("created").alias("own_created"),
        pl.col("version").alias("agent_version"),
    )
    return parts.join(own, on="own_session", how="left")


def _said(parts: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """``parts`` with what their message says (role, model and provider, else its user
    message's, mode, agent, error, creation stamp)."""
    asked = messages.select(
        pl.col("message").alias("parent_message"),
        pl.col("model").alias("asked_model"),
        pl.col("provider").alias("asked_provider"),
    )
    said = messages.join(asked, on="parent_message", how="left").with_columns(
        pl.coalesce("model", "asked_model").alias("model"),
        pl.coalesce("provider", "asked_provider").alias("provider"),
    )
    return parts.join(said.drop("asked_model", "asked_provider"), on="message", how="left")


def _calls(steps: pl.DataFrame) -> pl.DataFrame:
    """The ``step-finish`` parts ``steps`` (``_said``) less forks' copies, as calls (before
    numbering)."""
    steps = steps.select(
        "file",
        "line",
        "session",
        "own_session",
        "own_parent",
        "own_created",
        "created",
        "time",
        "part",
        "file_index",
        "mode",
        "agent_name",
        "model",
        "message_created",
        "tokens",
        "snapshot",
        *database.COUNTS,
        "error",
        "agent_version",
        "provider",
        pl.when(pl.col("cost").str.contains(r"^-?[0-9]")).then(pl.col("cost")).alias("cost"),
    )
    fork_key = pl.struct("message_created", "tokens", "cost", "snapshot")
    oldest = steps.sort(["own_created", "created", "file_index", "line"], nulls_last=True)
    original = pl.col("own_session").first().over(fork_key)
    steps = oldest.filter(pl.col("message_created").is_null() | (pl.col("own_session") == original))
    cache = pl.col("cache_read").fill_null(0) + pl.col("cache_write").fill_null(0)
    reasoning_inside = (pl.col("reasoning") > 0) & (
        pl.col("total") == pl.col("input") + pl.col("output") + cache
    )
    subagent = pl.col("own_parent").is_not_null()
    return steps.select(
        pl.col("file").alias("source_file"),
        pl.col("line").alias("source_line"),
        pl.lit(OPENCODE.id).alias("agent"),
        pl.col("session").alias("session_id"),
        pl.col("created"),
        pl.col("part"),
        pl.col("file_index"),
        pl.when((pl.col("mode") == "compaction") | (pl.col("agent_name") == "compaction"))
        .then(pl.lit("compaction"))
        .when(subagent)
        .then(pl.lit("subagent"))
        .otherwise(pl.lit("main"))
        .alias("kind"),
        pl.col("model"),
        pl.when(subagent).then(pl.col("own_session")).alias("agent_id"),
        pl.when(subagent).then(pl.col("agent_name")).alias("agent_name"),
        pl.col("part").alias("api_call_id"),
        pl.from_epoch(pl.coalesce("message_created", "created"), "ms").alias("start_time"),
        pl.from_epoch("time", "ms").alias("end_time"),
        (pl.col("input") + cache).alias("input_tokens"),
        pl.col("cache_read").alias("cache_read_tokens"),
        pl.col("cache_write").alias("cache_write_tokens"),
        pl.when(reasoning_inside)
        .then(pl.col("output"))
        .otherwise(pl.col("output") + pl.col("reasoning").fill_null(0))
        .alias("output_tokens"),
        pl.col("reasoning").alias("reasoning_tokens"),
        pl.lit(True).alias("final_usage"),
        (pl.col("error") == ABORTED).fill_null(False).alias("interrupted"),
        pl.lit("observed").alias("token_source"),
        pl.col("agent_version"),
        pl.col("provider"),
        pl.col("cost").alias("logged_cost_usd"),
    )


def _items(parts: pl.DataFrame) -> pl.DataFrame:
    """The context items of ``parts``, in the core's kinds (``analytics.core.items``): a
    user text is a ``prompt``; an assistant text or reasoning a ``reply`` (a compaction
    step's a ``compaction`` summary); a tool part its request (a ``reply`` of the input's
    bytes, and a ``tool_call`` naming the tool) and its result (a ``tool_output`` of the
    output's bytes), numbered from the part's ``first_seq`` (``_numbered``) in that
    order."""
    base = [
        pl.col("file").alias("source_file"),
        pl.col("line").alias("source_line"),
        pl.lit(OPENCODE.id).alias("agent"),
        pl.col("session").alias("session_id"),
        pl.col("part").alias("event_id"),
        pl.from_epoch("created", "ms").alias("timestamp"),
        pl.when(pl.col("own_parent").is_not_null()).then(pl.col("own_session")).alias("agent_id"),
    ]
    texts = parts.filter(pl.col("type").is_in(["text", "reasoning"])).select(
        *base,
        pl.when(pl.col("role") == "user")
        .then(pl.lit(kinds.PROMPT))
        .when((pl.col("mode") == "compaction") | (pl.col("agent_name") == "compaction"))
        .then(pl.lit(kinds.COMPACTION))
        .otherwise(pl.lit(kinds.REPLY))
        .alias("item"),
        pl.lit(None, pl.String).alias("tool_call_id"),
        pl.lit(None, pl.String).alias("tool_name"),
        pl.col("text_bytes").alias("content_bytes"),
        pl.lit(None, pl.Int64).alias("tool_request_bytes"),
        pl.col("first_seq").alias("event_seq"),
    )
    tools = parts.filter(pl.col("type") == "tool")
    tool = [pl.col("call_id").alias("tool_call_id"), pl.col("tool").alias("tool_name")]
    requests = tools.select(
        *base,
        pl.lit(kinds.REPLY).alias("item"),
        *tool,
        pl.col("tool_input_bytes").alias("content_bytes"),
        pl.col("tool_input_bytes").alias("tool_request_bytes"),
        pl.col("first_seq").alias("event_seq"),
    )
    starts = tools.select(
        *base,
        pl.lit(kinds.TOOL_CALL).alias("item"),
        *tool,
        pl.lit(None, pl.Int64).alias("content_bytes"),
        pl.lit(None, pl.Int64).alias("tool_request_bytes"),
        (pl.col("first_seq") + 1).alias("event_seq"),
    )
    results = tools.filter(pl.col("tool_output_bytes").is_not_null()).select(
        *base,
        pl.lit(kinds.TOOL_OUTPUT).alias("item"),
        *tool,
        pl.col("tool_output_bytes").alias("content_bytes"),
        pl.lit(None, pl.Int64).alias("tool_request_bytes"),
        (pl.col("first_seq") + 2).alias("event_seq"),
    )
    return pl.concat([texts, requests, starts, results]).sort(["session_id", "event_seq"])


#: How many context items a part of each type gives (a tool one more with its result).
_ITEMS_OF = {"text": 1, "reasoning": 1, "tool": 2}


def _numbered(calls: pl.DataFrame, givers: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``calls`` numbered 1.. per session in log order (``call_index``) and their place among
    the session's calls and context items (``event_seq``), so the items a call carried are
    those numbered before it; and the parts that give items (``_ITEMS_OF``), each with the
    ``event_seq`` of its first item (``first_seq``: its others follow it).
    Numbered from the parts ``givers`` (those of ``_ITEMS_OF``'s types), without making the
    items: the items of a part are together in log order (``ORDER``)."""
    order = ORDER
    givers = givers.with_columns(
        (
            pl.col("type").replace_strict(_ITEMS_OF, return_dtype=pl.Int64)
            + (pl.col("type") == "tool").and_(pl.col("tool_output_bytes").is_not_null())
        ).alias("weight")
    )
    numbered = (
        pl.concat(
            [
                calls.select(
                    "session_id",
                    *order[:-1],
                    pl.col("source_line").alias("line"),
                    pl.lit(1, pl.Int64).alias("weight"),
                    pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
                    pl.lit(True).alias("is_call"),
                ),
                givers.select(
                    pl.col("session").alias("session_id"),
                    *order,
                    "weight",
                    pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
                    pl.lit(False).alias("is_call"),
                ),
            ]
        )
        .sort(["session_id", *order], nulls_last=True)
        .with_columns(pl.col("weight").cum_sum().over("session_id").alias("last"))
    )

    def seq(is_call: bool) -> pl.DataFrame:
        return numbered.filter(pl.col("is_call") == is_call).sort("row")

    called = seq(True)
    calls = (
        calls.with_columns(called["last"].alias("event_seq"))
        .sort(["session_id", "event_seq"])
        .with_columns(pl.int_range(1, pl.len() + 1).over("session_id").alias("call_index"))
    )
    given = seq(False)
    givers = givers.with_columns((given["last"] - given["weight"] + 1).alias("first_seq"))
    return calls, givers


def _sessions(
    sessions: pl.DataFrame, parts: pl.DataFrame, calls: pl.DataFrame, issues: pl.DataFrame
) -> pl.DataFrame:
    """One row per session tree (its root's id): where, when, its OpenCode version, its calls
    by kind and state, the part rows read (``unknown_lines``: of types OpenCode is not known
    to write) and the issues of its files. Sessions with no rows are listed too."""
    roots = sessions.filter(pl.col("session") == pl.col("root")).select(
        pl.col("session").alias("session_id"),
        "cwd",
        pl.col("version").alias("agent_version"),
        pl.col("parent").alias("parent_session_id"),
        pl.col("created").alias("root_created"),
        pl.col("updated").alias("root_updated"),
    )
    placed = parts.select(pl.col("session").alias("session_id"), "file", *ORDER)
    if placed["file"].n_unique() > 1:  # a session's files are listed in log order
        placed = placed.sort(ORDER, nulls_last=True)
    members = pl.concat(
        [
            sessions.select(pl.col("root").alias("session_id"), "file"),
            placed.select("session_id", "file"),
        ]
    )
    files = members.group_by("session_id").agg(
        pl.col("file").unique(maintain_order=True).alias("source_files")
    )
    read = parts.group_by(pl.col("session").alias("session_id")).agg(
        pl.col("created").min().alias("first"),
        pl.col("time").max().alias("last"),
        pl.len().cast(pl.Int64).alias("lines_read"),
        (~pl.col("type").is_in(list(PART_TYPES)))
        .fill_null(True)
        .sum()
        .cast(pl.Int64)
        .alias("unknown_lines"),
    )
    counted = calls.group_by("session_id").agg(
        pl.col("model").drop_nulls().unique().sort().alias("models"),
        pl.len().cast(pl.Int64).alias("llm_calls"),
        *(
            (pl.col("kind") == kind).sum().cast(pl.Int64).alias(f"{kind}_calls")
            for kind in ("main", "subagent", "compaction")
        ),
        (~pl.col("final_usage")).sum().cast(pl.Int64).alias("calls_without_final_usage"),
        pl.col("interrupted").sum().cast(pl.Int64).alias("interrupted_calls"),
    )
    per_file = issues.group_by(pl.col("file")).agg(pl.len().cast(pl.Int64).alias("n"))
    issue_counts = (
        files.explode("source_files")
        .join(per_file, left_on="source_files", right_on="file", how="inner")
        .group_by("session_id")
        .agg(pl.col("n").sum().alias("issues"))
    )
    ids = members.select("session_id").unique(maintain_order=True)
    table = (
        ids.join(roots, on="session_id", how="left")
        .join(files, on="session_id", how="left")
        .join(read, on="session_id", how="left")
        .join(counted, on="session_id", how="left")
        .join(issue_counts, on="session_id", how="left")
    )
    zero = ["llm_calls", "main_calls", "subagent_calls", "compaction_calls",
            "calls_without_final_usage", "interrupted_calls", "lines_read", "unknown_lines",
            "issues"]  # fmt: skip
    return table.with_columns(
        pl.lit(OPENCODE.id).alias("agent"),
        pl.from_epoch(pl.min_horizontal("root_created", "first"), "ms").alias("start_time"),
        pl.from_epoch(pl.max_horizontal("root_updated", "last"), "ms").alias("end_time"),
        pl.col("models").fill_null(pl.lit([], pl.List(pl.String))),
        *(pl.col(column).fill_null(0) for column in zero),
    ).sort("start_time", "session_id", nulls_last=True)


def _conformed(frame: pl.DataFrame, columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """``frame`` with exactly ``columns`` (those it lacks null), in order, with their dtypes."""
    return frame.select(
        (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in columns.items()
    )


def tables(files: Sequence[Path], *, items: bool = True) -> AgentTables:
    """The calls, sessions, issues (and, unless ``items`` is false, context items) of the
    databases ``files``, folded as one group: a slice of session trees at a time where
    that is the same (``_sliced``), else at once."""
    return _sliced(files, items) or _folded(_read(files, items), items)


def _sliced(files: Sequence[Path], items: bool) -> AgentTables | None:
    """The fold of a group of one database cut into slices (``slices``), each folded on its
    own, their rows in the whole fold's order; None where it is not cut (one slice, or
    unreadable), where a slice has an issue (the issues, and the sessions' count of them,
    are the whole file's: then it is folded at once, which reports them as they are) or
    where two slices hold steps of messages created at the same millisecond (a fork's copy
    and its original, which count once: ``_calls``)."""
    if len(files) != 1 or legacy.claims(files[0]):
        return None
    try:
        plan, sessions = database.opened(files[0], slices.plan)
    except database.UnreadableError:
        return None
    if len(plan) < 2:
        return None
    folded: list[AgentTables] = []
    stamps: list[pl.Series] = []
    for read in _read_ahead(files, items, plan, sessions):
        part = _folded(read, items, stamps)
        if part.issues.height:
            return None
        folded.append(part)
    del sessions
    if pl.concat(stamps).is_duplicated().any():  # a fork's copy in another slice
        return None

    return AgentTables(
        calls=_joined([part.calls for part in folded], *_BY_SESSION),
        sessions=_joined([part.sessions for part in folded], *_BY_START, nulls_last=True),
        issues=folded[0].issues,
        items=_joined([part.items for part in folded], *_BY_SESSION),
    )


#: The slices read at once (``_read_ahead``): one folded while the next is read.
READS_AT_ONCE = 2


def _read_ahead(
    files: Sequence[Path], items: bool, plan: list[database.Sessions], sessions: pl.DataFrame
) -> Iterator[_Read]:
    """The rows of each slice of ``plan`` (``_read``), in its order, the next slice read
    while the one given is folded. A slice's read keeps SQLite on one core for its parts
    and on another for its messages only while those last (a fifth as long): on the 1 GB
    bench database the slices' reads one after another took 10 of a cold run's 16.7 s,
    with one core idle most of that time. At most ``READS_AT_ONCE`` slices' rows are held
    beside the tables folded so far; those read ahead of a caller that stops are dropped."""
    with ThreadPoolExecutor(READS_AT_ONCE, thread_name_prefix="agentcost-opencode") as pool:
        pending: deque[Future[_Read]] = deque()
        ahead = iter(plan)
        try:
            while True:
                while len(pending) < READS_AT_ONCE and (only := next(ahead, None)) is not None:
                    mine = sessions.filter(pl.col("session").is_in(pl.Series(only).implode()))
                    pending.append(pool.submit(_read, files, items, only, mine))
                if not pending:
                    return
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


#: The order of the calls and items of a fold, and of its sessions.
_BY_SESSION, _BY_START = ("session_id", "event_seq"), ("start_time", "session_id")


def _joined(frames: list[pl.DataFrame], *order: str, nulls_last: bool = False) -> pl.DataFrame:
    """``frames`` one after another in ``order`` (a fold's order of that table): as they
    are where they are in it already (the slices' calls and items, ``slices._packed``),
    without the copy a sort makes of the whole table."""
    joined = pl.concat(frames)
    place = joined.select(pl.arg_sort_by(order, nulls_last=nulls_last)).to_series()
    return joined if place.is_sorted() else joined.sort(order, nulls_last=nulls_last)


def _folded(read: _Read, items: bool, stamps: list[pl.Series] | None = None) -> AgentTables:
    """The tables of the rows ``read`` (with context items unless ``items`` is false);
    ``stamps`` is given the creation stamps of the calls' messages, each once."""
    sessions, messages, problems = read.sessions, read.messages, read.issues
    parts = _rooted(read.parts, sessions)
    steps = _said(_owned(_rooted(read.steps, sessions), sessions), messages)
    steps = steps.sort(ORDER, nulls_last=True)
    if stamps is not None:
        stamps.append(steps["message_created"].drop_nulls().unique())
    givers = _owned(_rooted(read.items, sessions), sessions)
    # each frame is let go once the next is made of it: the peak holds no frame twice
    del read
    missing = steps.filter(pl.col("input").is_null())
    problems += [
        issue(
            file,
            line,
            "warning",
            f"step-finish part {part!r} states no tokens.input: its tokens are unknown",
        )
        for file, line, part in missing.select("file", "line", "part").iter_rows()
    ]
    found = _calls(steps)
    del steps, missing
    calls, givers = _numbered(found, _said(givers, messages) if items else givers)
    del found, messages
    context = _items(givers) if items else pl.DataFrame(schema=item_columns())
    del givers  # ``_sessions`` reads none of them: freed first
    issues = pl.DataFrame(problems, schema=issue_columns())
    return AgentTables(
        calls=_conformed(calls, call_columns()),
        sessions=_conformed(_sessions(sessions, parts, calls, issues), session_columns()),
        issues=issues,
        items=_conformed(context, item_columns()),
    )


def refolded(
    files: Sequence[Path], items: bool, before: AgentTables, changed: Collection[str]
) -> AgentTables | None:
    """The tables of the database ``files`` (a group of one) with the session trees whose
    roots are ``changed`` folded again and the others' rows taken from ``before`` (its
    fold's tables, with no issue); None where that is not the fold of the whole (the
    database unreadable, an issue in the trees folded, or a message of another tree created
    at the millisecond of one of theirs or of a call they had: a fork's copy, which counts
    once among them all)."""
    if len(files) != 1 or legacy.claims(files[0]) or before.issues.height:
        return None
    path, wanted = files[0], pl.Series(sorted(changed), dtype=pl.String).implode()
    try:
        rows = database.opened(path, database.sessions_of)
    except database.UnreadableError:
        return None
    own = rows.filter(pl.col("root").is_in(wanted))["session"]
    only = tuple(pl.concat([own, wanted.explode()]).unique(maintain_order=True))
    session_rows = rows.filter(pl.col("session").is_in(pl.Series(only).implode()))
    stamps: list[pl.Series] = []
    fresh = _folded(_read(files, items, only, session_rows), items, stamps)
    had = before.calls.filter(pl.col("session_id").is_in(wanted))["start_time"]
    stamps.append(had.dt.epoch("ms"))
    try:
        met = database.opened(path, lambda fetch: database.stamps_met(fetch, only, stamps))
    except database.UnreadableError:
        return None
    if fresh.issues.height or met:
        return None
    kept = ~pl.col("session_id").is_in(wanted)

    def joined(name: str, *order: str, nulls_last: bool = False) -> pl.DataFrame:
        frames: list[pl.DataFrame] = [getattr(before, name).filter(kept), getattr(fresh, name)]
        return _joined(frames, *order, nulls_last=nulls_last)

    return AgentTables(
        calls=joined("calls", *_BY_SESSION),
        sessions=joined("sessions", *_BY_START, nulls_last=True),
        issues=fresh.issues,
        items=joined("items", *_BY_SESSION),
    )
