//! The Codex CLI fold: rollouts (`$CODEX_HOME/sessions/**/rollout-*.jsonl`,
//! `archived_sessions/`) in, one call per model request out.
//!
//! Lines are `{timestamp, type, payload}`; the oldest logs open with a bare
//! `{id, timestamp, instructions}` line, read as a session start, followed by bare response
//! items and `{"record_type": "state"}` lines (no usage in them).
//!
//! **Sessions.** A session starts at its `session_meta`. A file can hold several: a
//! `session_meta` with a new `id` starts the next one, whose running totals start again from
//! 0. A `session_meta` repeating the current id (a resume header) and a resume appending
//! with no header at all keep the session and its running totals. Lines before any header
//! belong to the session the file name gives (its trailing uuid).
//!
//! **Calls.** Usage comes as running totals: an `event_msg` `token_count` with
//! `info.total_token_usage` (`info` may be null). A call is a `token_count` whose total moved
//! forward; the same total written again (a rate-limit refresh, Codex Desktop writing each
//! token_count twice) is not a call. A call's usage is the increment of the total over the
//! session's previous total; `last_token_usage` should say the same, and where it does not a
//! warning names the line (the increment is kept). `input_tokens` includes
//! `cached_input_tokens` (cache reads), `output_tokens` includes `reasoning_output_tokens`,
//! and `cache_write_input_tokens` (newer CLIs) is a part of the uncached input. The model is
//! that of the latest `turn_context` before the call (sessions switch models); before any,
//! the header's `model` where it names one.
//! Calls are deduplicated across the files of a group by (session, total): a copy of a
//! rollout (`archived_sessions/` beside `sessions/`) or of its lines adds nothing, and a
//! session's totals from several files are put in order by their size.
//! A total that goes back within a session (not a fork, see below) starts a new run of totals
//! from zero, with a warning.
//!
//! **Forks and rewinds** (`session_meta.forked_from_id`). Codex writes a forked thread's
//! rollout as: the child's own `session_meta`, then the parent's history copied as it was
//! (opened by the parent's `session_meta`, and its ancestors' when the parent was itself a
//! fork; `token_count` lines included), then the child's own turns. The child's running total
//! is seeded with the last replayed total (`set_token_info` from the copied history), so the
//! child's first own `token_count` is the parent's total at the fork plus the child's first
//! request. The rule:
//! 1. A session whose header names `forked_from_id`, or whose header is followed at once by
//!    another `session_meta` (a copied parent header), begins with a replay.
//! 2. The replay is every line after the header stamped no later than [`REPLAY_WINDOW_MS`]
//!    after the header: the copy is written in one burst when the child starts (re-stamped
//!    with the write time), or keeps the parent's original, older stamps. The first line
//!    stamped later ends the replay for good; a copied `session_meta` inside it never starts
//!    a session. (A child's first own request cannot end within the window: it needs a model
//!    round trip over the whole copied history.)
//! 3. Replayed `token_count` lines are never calls. The last replayed total is the child's
//!    starting point, unless the child's first own total is below it (a CLI that did not seed
//!    the child's total): then the child counts from zero.
//! 4. Where the parent session is in the same group, the child's leading totals that equal
//!    one of the parent's own totals are replay too, as long as the burst goes on: every line
//!    since the header came within [`REPLAY_WINDOW_MS`] of the line before it (a copy slower
//!    than the window). The child's own first request breaks the chain: it waits for a
//!    prompt or a model reply.
//!
//! So each session's figures are its own increments, and a fork adds only what the child did.
//!
//! **Context items**: each response item outside a replay (user, assistant and developer
//! messages, reasoning, tool calls with their names, tool outputs) and each `compacted`
//! line, keyed by session, stamp and text (a copied rollout or a line written twice adds
//! none); a `task_complete` is noted too. A call's `token_count` follows the reply it
//! counts, so the call stands before that reply's first item.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fold::{self, kind, Call, Folded, Item, Line, Usage};
use crate::read::json::{Fields, Kind, Schema, Shape};

/// How long after a forked session's header its copied history may be stamped (see the
/// module documentation, rule 2).
pub const REPLAY_WINDOW_MS: i64 = 1000;

/// Line types the fold knows (the others are counted as unknown).
pub const KNOWN_TYPES: &[&str] = &[
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "compacted",
    // the pre-envelope format (2025): after the bare header, response items as they are,
    // and `{"record_type": "state"}` lines; none carries usage
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "local_shell_call",
    "custom_tool_call",
    "custom_tool_call_output",
    "web_search_call",
];

/// The paths of the counters of token usage record `$record` (`payload.info.$record`), in
/// order: input (cache reads included), cached input, output (reasoning included), reasoning
/// output, total, cache writes.
macro_rules! counters {
    ($record:literal) => {
        [
            concat!("payload.info.", $record, ".input_tokens"),
            concat!("payload.info.", $record, ".cached_input_tokens"),
            concat!("payload.info.", $record, ".output_tokens"),
            concat!("payload.info.", $record, ".reasoning_output_tokens"),
            concat!("payload.info.", $record, ".total_tokens"),
            concat!("payload.info.", $record, ".cache_write_input_tokens"),
        ]
    };
}

/// The counters of the running total and of the last request.
const TOTALS: [&str; 6] = counters!("total_token_usage");
const LASTS: [&str; 6] = counters!("last_token_usage");

/// A token usage record (`total_token_usage` or `last_token_usage`): its counters, each
/// known or not (an unknown one holds 0, so equal records compare and hash equal). Kept for
/// every running total of a group until the group is folded, so it is packed.
/// Ordered by total first, then the others, which is the order of a session's running totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Totals {
    values: [i64; 6],
    /// Bit `k`: counter `k` is known.
    known: u8,
}

impl Totals {
    fn new(counters: [Option<i64>; 6]) -> Totals {
        let mut totals = Totals::default();
        for (k, counter) in counters.into_iter().enumerate() {
            if let (Some(value), Some(slot)) = (counter, totals.values.get_mut(k)) {
                *slot = value;
                totals.known |= 1 << k;
            }
        }
        totals
    }

    /// The counters, None where unknown.
    fn counters(&self) -> [Option<i64>; 6] {
        let mut out = [None; 6];
        for (k, (o, &value)) in out.iter_mut().zip(self.values.iter()).enumerate() {
            *o = (self.known & (1 << k) != 0).then_some(value);
        }
        out
    }

    fn sort_key(&self) -> [Option<i64>; 6] {
        let t = self.counters();
        [t[4], t[0], t[1], t[2], t[3], t[5]]
    }

    /// Whether no counter is below `other`'s (a counter one of them lacks is not compared).
    fn at_least(&self, other: &Totals) -> bool {
        let (mine, theirs) = (self.counters(), other.counters());
        mine.iter().zip(theirs.iter()).all(|pair| match pair {
            (Some(a), Some(b)) => a >= b,
            _ => true,
        })
    }

    /// `self - base`, counter by counter (a counter `base` lacks counts from zero).
    fn minus(&self, base: &Totals) -> Totals {
        let mut out = [None; 6];
        let (mine, base) = (self.counters(), base.counters());
        for (o, (a, b)) in out.iter_mut().zip(mine.iter().zip(base.iter())) {
            *o = a.map(|a| a - b.unwrap_or(0));
        }
        Totals::new(out)
    }

    /// Whether a counter went up.
    fn moved(&self) -> bool {
        self.counters().iter().any(|c| c.is_some_and(|c| c > 0))
    }

    fn negative(&self) -> bool {
        self.counters().iter().any(|c| c.is_some_and(|c| c < 0))
    }

    /// Whether `other` (a `last_token_usage`) says otherwise about a counter both have.
    fn differs(&self, other: &Totals) -> bool {
        let (mine, theirs) = (self.counters(), other.counters());
        mine.iter()
            .zip(theirs.iter())
            .any(|pair| matches!(pair, (Some(a), Some(b)) if a != b))
    }

    fn usage(&self) -> Usage {
        let [input, cached, output, reasoning, _, cache_write] = self.counters();
        Usage {
            input,
            cache_read: cached,
            cache_write,
            output,
            reasoning,
            ..Usage::default()
        }
    }
}

/// The fields the fold reads, besides the usage counters ([`fields`]).
const FIELDS: &[(&str, Shape)] = &[
    ("type", Shape::Scalar),
    ("timestamp", Shape::Scalar),
    ("id", Shape::Scalar),
    ("record_type", Shape::Scalar),
    ("payload", Shape::Struct),
    ("payload.type", Shape::Scalar),
    ("payload.role", Shape::Scalar),
    ("payload.name", Shape::Scalar),
    ("payload.call_id", Shape::Scalar),
    ("role", Shape::Scalar),
    ("name", Shape::Scalar),
    ("call_id", Shape::Scalar),
    ("payload.id", Shape::Scalar),
    ("payload.timestamp", Shape::Scalar),
    ("payload.cwd", Shape::Scalar),
    ("payload.cli_version", Shape::Scalar),
    ("payload.forked_from_id", Shape::Scalar),
    ("payload.source", Shape::Struct),
    ("payload.source.subagent", Shape::Any),
    ("payload.model", Shape::Scalar),
    ("payload.info", Shape::Struct),
    ("payload.info.total_token_usage", Shape::Struct),
    ("payload.info.last_token_usage", Shape::Struct),
];

/// Every field the fold reads: [`FIELDS`] and the counters of both usage records.
fn fields() -> Vec<(&'static str, Shape)> {
    let counters = TOTALS.iter().chain(LASTS.iter());
    FIELDS
        .iter()
        .copied()
        .chain(counters.map(|&path| (path, Shape::Scalar)))
        .collect()
}

/// The schema nodes the fold reads.
#[derive(Clone, Copy)]
struct Nodes {
    kind: usize,
    time: usize,
    bare_id: usize,
    record_type: usize,
    payload_type: usize,
    payload: usize,
    /// `role`, `name`, `call_id` of a response item: in its payload, and at the top of a
    /// pre-envelope line.
    role: [usize; 2],
    name: [usize; 2],
    call_id: [usize; 2],
    id: usize,
    started: usize,
    cwd: usize,
    version: usize,
    forked_from: usize,
    subagent: usize,
    model: usize,
    info: usize,
    total: usize,
    last: usize,
    totals: [usize; 6],
    lasts: [usize; 6],
}

impl Nodes {
    fn new(schema: &Schema) -> Nodes {
        let n = |path: &str| schema.find(path).unwrap_or(0);
        Nodes {
            kind: n("type"),
            time: n("timestamp"),
            bare_id: n("id"),
            record_type: n("record_type"),
            payload_type: n("payload.type"),
            payload: n("payload"),
            role: [n("payload.role"), n("role")],
            name: [n("payload.name"), n("name")],
            call_id: [n("payload.call_id"), n("call_id")],
            id: n("payload.id"),
            started: n("payload.timestamp"),
            cwd: n("payload.cwd"),
            version: n("payload.cli_version"),
            forked_from: n("payload.forked_from_id"),
            subagent: n("payload.source.subagent"),
            model: n("payload.model"),
            info: n("payload.info"),
            total: n("payload.info.total_token_usage"),
            last: n("payload.info.last_token_usage"),
            totals: TOTALS.map(n),
            lasts: LASTS.map(n),
        }
    }
}

/// The session a file's lines belong to at the moment.
/// Its names are shared with the running totals read in it.
struct Current {
    id: Arc<str>,
    model: Option<Arc<str>>,
    /// `subagent` for a sub-agent thread's rollout, else `main`.
    kind: &'static str,
    agent_name: Option<Arc<str>>,
    version: Option<Arc<str>>,
    /// While the fork's copied history is being read: the last stamp it may carry (None:
    /// the header had no stamp, so only copied headers are replay).
    replay: Option<Option<i64>>,
    /// Every line since the header came within the window of the one before it (rule 4),
    /// and the last line's stamp.
    burst: bool,
    last_time: Option<i64>,
    /// The line just read was this session's header (a header right after it is a copy).
    after_header: bool,
    /// Header stamp, for a fork found by its copied header.
    header_time: Option<i64>,
    /// The last total of this session in this file, and whether it was replayed.
    previous: Option<(Totals, bool)>,
    run: u32,
    /// (stamp, line) of the first reply item since the last input item or call: where the
    /// next call stands among the items (its usage line comes after its reply).
    anchor: Option<(Option<i64>, i64)>,
}

/// One `token_count` whose total moved (its names shared with the session's other totals).
struct Point {
    session: Arc<str>,
    run: u32,
    total: Totals,
    last: Option<Totals>,
    time: Option<i64>,
    model: Option<Arc<str>>,
    file: usize,
    line: i64,
    replay: bool,
    /// Read while the header's copy burst went on (see `Current::burst`).
    burst: bool,
    kind: &'static str,
    agent_name: Option<Arc<str>>,
    version: Option<Arc<str>>,
    anchor: Option<(Option<i64>, i64)>,
}

/// What makes two lines of a session the same line: its stamp and text (a copy repeats
/// both), the key of the items it adds.
fn line_key(session: &str, time: Option<i64>, text: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    format!("{session}@{time:?}#{:x}", hasher.finish())
}

/// The session a file name gives: the uuid that ends a rollout's name, else its stem.
fn hint_of(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tail = stem
        .char_indices()
        .rev()
        .nth(35)
        .and_then(|(at, _)| stem.get(at..));
    match tail {
        Some(t) if t.len() == 36 && t.bytes().filter(|&b| b == b'-').count() == 4 => t.to_owned(),
        _ => stem,
    }
}

struct Fold {
    n: Nodes,
    out: Folded,
    index: HashMap<String, usize>,
    points: Vec<Point>,
    /// Context items, each keyed by its session, stamp and text (a copied line repeats all
    /// three).
    items: Vec<(String, Item)>,
    /// Whether to gather the context items at all (reports of calls and money need none).
    with_items: bool,
}

/// Fold a group of Codex rollouts (one home's, or any set read together) into calls,
/// sessions, issues and context items.
pub fn fold(paths: &[PathBuf]) -> Folded {
    fold_with(paths, true)
}

/// [`fold`], gathering the context items only `with_items`: a report of calls and money
/// over a large tree then holds no row per message and tool output.
pub fn fold_with(paths: &[PathBuf], with_items: bool) -> Folded {
    let schema = Schema::new(&fields());
    let n = Nodes::new(&schema);
    fold::fold_group(paths, "codex", &schema, |out| Fold {
        n,
        out,
        index: HashMap::new(),
        points: Vec::new(),
        items: Vec::new(),
        with_items,
    })
}

impl Fold {
    fn line(
        &mut self,
        line: &Line<'_>,
        file: usize,
        hint: &str,
        current: &mut Option<Current>,
        unknown: &mut (i64, Option<(i64, String)>),
    ) {
        let n = &self.n;
        let time = line.time(n.time);
        let kind = line.str(n.kind).map(|s| s.into_owned());
        let header = match kind.as_deref() {
            Some("session_meta") => line.str(n.id).map(|s| s.into_owned()),
            None => line.str(n.bare_id).map(|s| s.into_owned()),
            _ => None,
        };
        if let Some(id) = header {
            self.header(line, file, id, time, current);
            return;
        }
        let cur = current.get_or_insert_with(|| Current {
            id: hint.into(),
            model: None,
            kind: "main",
            agent_name: None,
            version: None,
            replay: None,
            after_header: false,
            header_time: None,
            burst: false,
            last_time: None,
            previous: None,
            run: 0,
            anchor: None,
        });
        cur.after_header = false;
        cur.burst &= match (cur.last_time, time) {
            (Some(before), Some(t)) => t - before <= REPLAY_WINDOW_MS,
            _ => true,
        };
        cur.last_time = time.or(cur.last_time);
        match cur.replay {
            Some(Some(horizon)) if time.is_some_and(|t| t > horizon) => cur.replay = None,
            Some(None) => cur.replay = None,
            _ => {}
        }
        let replaying = cur.replay.is_some();
        let session = fold::session_of(&mut self.out.sessions, &mut self.index, &cur.id);
        session.saw(file, if replaying { None } else { time });
        let Some(kind) = kind else {
            if line.get(n.record_type).kind != Kind::Missing {
                return; // a pre-envelope state line
            }
            self.out.issue(
                file,
                line.number,
                "error",
                "line has no 'type'; ignored".into(),
            );
            return;
        };
        if !KNOWN_TYPES.contains(&kind.as_str()) {
            session.unknown_lines += 1;
            unknown.0 += 1;
            if unknown.1.is_none() {
                unknown.1 = Some((line.number, kind));
            }
            return;
        }
        let n = &self.n;
        match kind.as_str() {
            "turn_context" => {
                if let Some(model) = line.str(n.model) {
                    cur.model = Some(Arc::from(&*model));
                }
            }
            "event_msg" if line.str(n.payload_type).as_deref() == Some("token_count") => {
                self.token_count(line, file, time, cur);
            }
            "event_msg"
                if self.with_items
                    && !replaying
                    && line.str(n.payload_type).as_deref() == Some("task_complete") =>
            {
                // the agent says its task is done (no context item: no bytes)
                self.items.push((
                    line_key(&cur.id, time, line.text),
                    Item {
                        file,
                        line: line.number,
                        sub: 1,
                        session: cur.id.to_string(),
                        time,
                        kind: kind::TASK_COMPLETE,
                        ..Item::default()
                    },
                ));
            }
            "event_msg" | "session_meta" => {}
            _ if !replaying => self.item(line, file, time, &kind, cur),
            _ => {}
        }
    }

    /// The context item a response item (or a `compacted` line) adds: a user, assistant or
    /// developer message (`prompt`, `reply`, `system`), reasoning
    /// and tool requests (a `reply`, the request's bytes as
    /// `tool_request_bytes`, and a `tool_call` naming the tool), a tool output
    /// (`tool_output`) or a compaction summary. Sized by its payload's JSON (a
    /// pre-envelope line's whole JSON). A replayed history adds none (see the caller).
    fn item(
        &mut self,
        line: &Line<'_>,
        file: usize,
        time: Option<i64>,
        kind: &str,
        cur: &mut Current,
    ) {
        let n = &self.n;
        let enveloped = kind == "response_item" || kind == "compacted";
        let pick = |nodes: [usize; 2]| {
            line.str(if enveloped { nodes[0] } else { nodes[1] })
                .map(|s| s.into_owned())
        };
        let item_type = match kind {
            "response_item" => line.str(n.payload_type).map(|s| s.into_owned()),
            other => Some(other.to_owned()),
        };
        let Some(item_type) = item_type else { return };
        let payload = line.get(n.payload);
        let span = if enveloped {
            payload.end.saturating_sub(payload.start)
        } else {
            line.text.len()
        };
        let bytes = i64::try_from(span).unwrap_or(i64::MAX);
        let role = pick(n.role);
        let (item, reply) = match (item_type.as_str(), role.as_deref()) {
            ("compacted", _) => (kind::COMPACTION, false),
            ("message", Some("user")) => (kind::PROMPT, false),
            ("message", Some("assistant")) => (kind::REPLY, true),
            ("message", _) => (kind::SYSTEM, false),
            ("reasoning", _) => (kind::REPLY, true),
            (t, _) if t.ends_with("_output") => (kind::TOOL_OUTPUT, false),
            (t, _) if t.ends_with("_call") => (kind::REPLY, true),
            _ => return,
        };
        let request = item == kind::REPLY && item_type.ends_with("_call");
        if reply {
            cur.anchor.get_or_insert((time, line.number));
        } else {
            cur.anchor = None;
        }
        if !self.with_items {
            return;
        }
        let base = Item {
            file,
            line: line.number,
            sub: 1,
            session: cur.id.to_string(),
            time,
            kind: item,
            tool_call_id: pick(n.call_id),
            content_bytes: Some(bytes),
            tool_request_bytes: request.then_some(bytes),
            ..Item::default()
        };
        let key = line_key(&cur.id, time, line.text);
        if request {
            let start = Item {
                sub: 2,
                kind: kind::TOOL_CALL,
                tool_name: pick(n.name).or(Some(item_type)),
                content_bytes: None,
                tool_request_bytes: None,
                ..base.clone()
            };
            self.items.push((format!("{key}.2"), start));
        }
        self.items.push((format!("{key}.1"), base));
    }

    /// A `session_meta` (or a bare legacy header) naming session `id`.
    fn header(
        &mut self,
        line: &Line<'_>,
        file: usize,
        id: String,
        time: Option<i64>,
        current: &mut Option<Current>,
    ) {
        let n = &self.n;
        if let Some(cur) = current.as_mut() {
            let same = *id == *cur.id;
            let copied = cur.replay.is_some() || (cur.after_header && !same);
            if copied || same {
                let found_fork = cur.after_header && !same && cur.replay.is_none();
                if found_fork {
                    cur.replay = Some(cur.header_time.map(|t| t + REPLAY_WINDOW_MS));
                }
                cur.after_header = cur.after_header && copied;
                let replaying = cur.replay.is_some();
                let session = fold::session_of(&mut self.out.sessions, &mut self.index, &cur.id);
                session.saw(file, if replaying { None } else { time });
                if found_fork && session.parent.is_none() {
                    session.parent = Some(id);
                }
                if !copied {
                    if let Some(version) = line.str(n.version) {
                        session.version(&version, time);
                        cur.version = Some(Arc::from(&*version));
                    }
                }
                return;
            }
        }
        let header_time = time.or_else(|| line.time(n.started));
        let forked_from = line.str(n.forked_from).map(|s| s.into_owned());
        let subagent = line.get(n.subagent);
        let (kind, agent_name) = match subagent.kind {
            Kind::Missing | Kind::Null => ("main", None),
            Kind::Str => ("subagent", line.str(n.subagent).map(|s| Arc::from(&*s))),
            _ => ("subagent", Some("subagent".into())),
        };
        let version: Option<Arc<str>> = line.str(n.version).map(|s| Arc::from(&*s));
        let session = fold::session_of(&mut self.out.sessions, &mut self.index, &id);
        session.saw(file, time);
        if let Some(v) = &version {
            session.version(v, time);
        }
        if session.cwd.is_none() {
            session.cwd = line.str(n.cwd).map(|s| s.into_owned());
        }
        if forked_from.is_some() {
            session.parent.clone_from(&forked_from);
        }
        let run = current
            .as_ref()
            .filter(|c| *c.id == *id)
            .map_or(0, |c| c.run);
        *current = Some(Current {
            id: id.into(),
            model: line.str(n.model).map(|s| Arc::from(&*s)),
            kind,
            agent_name,
            version,
            replay: forked_from
                .is_some()
                .then(|| header_time.map(|t| t + REPLAY_WINDOW_MS)),
            burst: true,
            last_time: header_time,
            after_header: true,
            header_time,
            previous: None,
            run,
            anchor: None,
        });
    }

    fn token_count(&mut self, line: &Line<'_>, file: usize, time: Option<i64>, cur: &mut Current) {
        let n = &self.n;
        if !matches!(line.get(n.info).kind, Kind::Object) {
            return; // info null: a rate-limit notice, no usage
        }
        if line.get(n.total).kind != Kind::Object {
            self.out.issue(
                file,
                line.number,
                "warning",
                "token_count without info.total_token_usage; ignored".into(),
            );
            return;
        }
        let total = Totals::new(n.totals.map(|node| line.int(node)));
        let last = (line.get(n.last).kind == Kind::Object)
            .then(|| Totals::new(n.lasts.map(|node| line.int(node))));
        let replay = cur.replay.is_some();
        if let Some((previous, was_replay)) = cur.previous {
            if previous == total {
                return; // the same total again: not a call
            }
            if !total.at_least(&previous) && !was_replay && !replay {
                cur.run += 1;
                self.out.issue(
                    file,
                    line.number,
                    "warning",
                    "the running total went back; counted from zero again".into(),
                );
            }
        }
        cur.previous = Some((total, replay));
        let anchor = cur.anchor.take();
        self.points.push(Point {
            session: cur.id.clone(),
            run: cur.run,
            total,
            last,
            time,
            model: cur.model.clone(),
            file,
            line: line.number,
            replay,
            burst: cur.burst,
            kind: cur.kind,
            agent_name: cur.agent_name.clone(),
            version: cur.version.clone(),
            anchor,
        });
    }
}

impl fold::GroupFold for Fold {
    /// Take in what a part (one file's fold) found, as if its file were read now.
    fn merge(&mut self, part: Fold) {
        for session in part.out.sessions {
            let id = session.id.clone();
            fold::session_of(&mut self.out.sessions, &mut self.index, &id).absorb(session);
        }
        self.out.issues.extend(part.out.issues);
        self.points.extend(part.points);
        self.items.extend(part.items);
    }

    /// Read file `file` (at `path`) into this fold.
    fn read(&mut self, schema: &Schema, file: usize, path: &Path) {
        let mut line_fields = Fields::new(schema);
        let hint = hint_of(path);
        let mut current: Option<Current> = None;
        let mut unknown: (i64, Option<(i64, String)>) = (0, None);
        let read = fold::read_file(path, file, schema, &mut line_fields, |line| {
            self.line(line, file, &hint, &mut current, &mut unknown);
        });
        self.out.issues.extend(read.issues);
        if let (count, Some((line, kind))) = unknown {
            let message =
                format!("{count} line(s) of unknown type (first: {kind:?}); counted, not read");
            self.out.issue(file, line, "warning", message);
        }
    }

    fn finish(mut self) -> Folded {
        let mut runs: Vec<(Arc<str>, u32)> = Vec::new();
        let mut by_run: HashMap<(Arc<str>, u32), Vec<usize>> = HashMap::new();
        for (at, p) in self.points.iter().enumerate() {
            let key = (p.session.clone(), p.run);
            let entry = by_run.entry(key.clone()).or_default();
            if entry.is_empty() {
                runs.push(key);
            }
            entry.push(at);
        }
        let parents: HashMap<&str, &str> = self
            .out
            .sessions
            .iter()
            .filter_map(|s| Some((s.id.as_str(), s.parent.as_deref()?)))
            .collect();
        // the own totals of the sessions another one was forked from (rule 4)
        let forked: HashSet<&str> = parents.values().copied().collect();
        let mut own_totals: HashMap<&str, HashSet<Totals>> = HashMap::new();
        for p in self.points.iter().filter(|p| !p.replay) {
            if forked.contains(&*p.session) {
                own_totals.entry(&p.session).or_default().insert(p.total);
            }
        }
        let mut calls = Vec::new();
        let mut issues = Vec::new();
        for key in &runs {
            let Some(members) = by_run.get(key) else {
                continue;
            };
            let points: Vec<&Point> = members.iter().filter_map(|&i| self.points.get(i)).collect();
            let mut seen = HashSet::new();
            let mut own: Vec<&Point> = points
                .iter()
                .copied()
                .filter(|p| !p.replay && seen.insert(p.total))
                .collect();
            own.sort_by_key(|p| p.total.sort_key());
            let mut base = Totals::default();
            if let Some(replayed) = points
                .iter()
                .filter(|p| p.replay)
                .max_by_key(|p| p.total.sort_key())
            {
                if own
                    .first()
                    .is_none_or(|p| p.total.at_least(&replayed.total))
                {
                    base = replayed.total;
                }
            }
            let parent_totals = parents
                .get(&*key.0)
                .and_then(|parent| own_totals.get(parent));
            let mut skip = 0;
            if let Some(parent_totals) = parent_totals {
                for p in &own {
                    if !(p.burst && parent_totals.contains(&p.total) && p.total.at_least(&base)) {
                        break;
                    }
                    base = p.total;
                    skip += 1;
                }
            }
            let mut previous = base;
            for p in own.iter().skip(skip) {
                let mut increment = p.total.minus(&previous);
                previous = p.total;
                if !increment.moved() {
                    continue; // the total did not move forward: not a call
                }
                if increment.negative() {
                    issues.push((
                        p.file,
                        p.line,
                        "a counter of the running total went back; the call's last_token_usage is used",
                    ));
                    increment = p.last.unwrap_or_default();
                } else if p.last.is_some_and(|last| increment.differs(&last)) {
                    issues.push((
                        p.file,
                        p.line,
                        "the running total moved by other figures than last_token_usage gives; the increment is kept",
                    ));
                }
                calls.push(Call {
                    file: p.file,
                    line: p.line,
                    session: p.session.to_string(),
                    kind: p.kind,
                    model: p.model.as_deref().map(str::to_owned),
                    agent_name: p.agent_name.as_deref().map(str::to_owned),
                    start_time: p.time,
                    end_time: p.time,
                    usage: increment.usage(),
                    final_usage: true,
                    agent_version: p.version.as_deref().map(str::to_owned),
                    anchor: p.anchor.map(|(time, line)| (time, p.file, line)),
                    ..Call::default()
                });
            }
        }
        for (file, line, message) in issues {
            self.out.issue(file, line, "warning", message.into());
        }
        self.points = Vec::new();
        self.out.calls = calls;
        self.out.items = fold::unique_items(self.items);
        self.out.finish();
        self.out
    }
}

/// Lines of this format for the fuzzers (`native/fuzz.rs` damages and mixes them): one of
/// each record the fold reads.
pub const SEEDS: &[&[u8]] = &[
    br#"{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta","payload":{"id":"c1","timestamp":"2026-05-01T10:00:00.000Z","cli_version":"0.130.0","forked_from_id":"p1","source":{"subagent":"review"}}}"#,
    br#"{"timestamp":"2026-05-01T10:00:01.000Z","type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
    br#"{"timestamp":"2026-05-01T10:00:05.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":9,"reasoning_output_tokens":2,"total_tokens":109,"cache_write_input_tokens":3},"last_token_usage":{"input_tokens":60,"output_tokens":9}}}}"#,
    br#"{"timestamp":"2026-05-01T10:00:06.000Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
    br#"{"id":"legacy","timestamp":"2025-05-01T10:00:00Z","instructions":null}"#,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::testing::{copies_change_nothing, figures, group};
    use proptest::prelude::*;

    fn meta(id: &str, t: &str, extra: &str) -> String {
        format!(
            r#"{{"timestamp":"{t}","type":"session_meta","payload":{{"id":"{id}","timestamp":"{t}","cwd":"/w","originator":"codex-tui","cli_version":"0.130.0","source":"cli"{extra}}}}}"#
        )
    }

    fn turn(model: &str, t: &str) -> String {
        format!(
            r#"{{"timestamp":"{t}","type":"turn_context","payload":{{"cwd":"/w","model":"{model}"}}}}"#
        )
    }

    /// A token_count at `t` with running total (input, cached, output, reasoning) and its
    /// last request's usage.
    fn count(t: &str, total: [i64; 4], last: [i64; 4]) -> String {
        let usage = |u: [i64; 4]| {
            format!(
                r#"{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{}}}"#,
                u[0],
                u[1],
                u[2],
                u[3],
                u[0] + u[2]
            )
        };
        format!(
            r#"{{"timestamp":"{t}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{},"last_token_usage":{},"model_context_window":258400}},"rate_limits":null}}}}"#,
            usage(total),
            usage(last)
        )
    }

    const NULL_INFO: &str = r#"{"timestamp":"2026-05-01T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":null}}}"#;

    fn text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn fold_texts(files: &[(&str, String)]) -> Folded {
        fold(&group(files))
    }

    /// A response item of payload `payload` at `t`.
    fn item(t: &str, payload: &str) -> String {
        format!(r#"{{"timestamp":"{t}","type":"response_item","payload":{payload}}}"#)
    }

    const PROMPT: &str =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}"#;
    const REASONING: &str = r#"{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}"#;
    const CALL: &str = r#"{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}"#;
    const OUTPUT: &str = r#"{"type":"function_call_output","call_id":"c1","output":"a.py"}"#;
    const REPLY: &str =
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#;

    /// A prompt, a request that runs a tool, the tool's output, the reply that ends the task.
    fn conversation(id: &str) -> Vec<String> {
        vec![
            meta(id, "2026-05-01T10:00:00.000Z", ""),
            turn("gpt-5.5", "2026-05-01T10:00:00.500Z"),
            item("2026-05-01T10:00:01.000Z", PROMPT),
            item("2026-05-01T10:00:02.000Z", REASONING),
            item("2026-05-01T10:00:02.000Z", CALL),
            count("2026-05-01T10:00:02.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
            item("2026-05-01T10:00:03.000Z", OUTPUT),
            item("2026-05-01T10:00:04.000Z", REPLY),
            count("2026-05-01T10:00:04.000Z", [250, 90, 20, 0], [150, 90, 10, 0]),
            r#"{"timestamp":"2026-05-01T10:00:04.000Z","type":"event_msg","payload":{"type":"task_complete"}}"#.to_owned(),
        ]
    }

    /// (seq, type, tool call, tool name, bytes) of an item.
    type Row<'a> = (i64, &'a str, Option<&'a str>, Option<&'a str>, Option<i64>);

    /// The [`Row`] of each item.
    fn items(folded: &Folded) -> Vec<Row<'_>> {
        folded
            .items
            .iter()
            .map(|i| {
                (
                    i.seq,
                    i.kind,
                    i.tool_call_id.as_deref(),
                    i.tool_name.as_deref(),
                    i.content_bytes,
                )
            })
            .collect()
    }

    #[test]
    fn items_are_numbered_with_the_calls_before_the_reply_they_wrote() {
        let folded = fold_texts(&[("r.jsonl", text(&conversation("s1")))]);
        let size = |t: &str| Some(i64::try_from(t.len()).expect("small"));
        assert_eq!(
            items(&folded),
            vec![
                (1, kind::PROMPT, None, None, size(PROMPT)),
                // 2: the first call, before the reply it wrote
                (3, kind::REPLY, None, None, size(REASONING)),
                (4, kind::REPLY, Some("c1"), None, size(CALL)),
                (5, kind::TOOL_CALL, Some("c1"), Some("exec_command"), None),
                (6, kind::TOOL_OUTPUT, Some("c1"), None, size(OUTPUT)),
                // 7: the second call
                (8, kind::REPLY, None, None, size(REPLY)),
                (9, kind::TASK_COMPLETE, None, None, None),
            ]
        );
        let calls: Vec<_> = folded.calls.iter().map(|c| (c.seq, c.index)).collect();
        assert_eq!(calls, vec![(2, 1), (7, 2)]);
        assert_eq!(folded.items[2].tool_request_bytes, size(CALL));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, failure_persistence: None, ..proptest::prelude::ProptestConfig::default() })]

        #[test]
        fn a_line_written_twice_adds_no_item(twice in proptest::prelude::any::<usize>()) {
            let base = conversation("s1");
            let expected = fold_texts(&[("r.jsonl", text(&base))]);
            let mut doubled = base.clone();
            let at = twice % doubled.len();
            doubled.insert(at, doubled[at].clone());
            let folded = fold_texts(&[("r.jsonl", text(&doubled))]);
            proptest::prop_assert!(crate::fold::testing::numbered(&folded));
            proptest::prop_assert_eq!(items(&folded), items(&expected));
            let calls = |f: &Folded| f.calls.iter().map(|c| c.seq).collect::<Vec<_>>();
            proptest::prop_assert_eq!(calls(&folded), calls(&expected));
        }
    }

    #[test]
    fn a_copied_rollout_and_a_forks_replay_add_no_item() {
        let alone = fold_texts(&[("r.jsonl", text(&conversation("p")))]);
        let copied = fold_texts(&[
            ("sessions/r.jsonl", text(&conversation("p"))),
            ("archived_sessions/r.jsonl", text(&conversation("p"))),
        ]);
        assert_eq!(items(&copied), items(&alone));
        let mut child = vec![meta(
            "c",
            "2026-05-01T11:00:00.000Z",
            r#","forked_from_id":"p""#,
        )];
        child.extend(
            conversation("p")
                .iter()
                .map(|l| l.replace("2026-05-01T10:00:0", "2026-05-01T11:00:00.00")),
        );
        child.push(item("2026-05-01T11:00:30.000Z", PROMPT));
        let folded = fold_texts(&[
            ("r.jsonl", text(&conversation("p"))),
            ("c.jsonl", text(&child)),
        ]);
        let own: Vec<_> = folded
            .items
            .iter()
            .filter(|i| i.session == "c")
            .map(|i| (i.seq, i.kind))
            .collect();
        assert_eq!(own, vec![(1, kind::PROMPT)]);
        assert_eq!(items(&folded).len(), items(&alone).len() + 1);
    }

    #[test]
    fn a_repeated_total_and_a_null_info_are_not_calls() {
        let lines = [
            meta("s1", "2026-05-01T10:00:00.000Z", ""),
            turn("gpt-5.5", "2026-05-01T10:00:01.000Z"),
            NULL_INFO.to_owned(),
            count(
                "2026-05-01T10:00:03.000Z",
                [100, 40, 10, 4],
                [100, 40, 10, 4],
            ),
            count(
                "2026-05-01T10:00:04.000Z",
                [100, 40, 10, 4],
                [100, 40, 10, 4],
            ),
            count(
                "2026-05-01T10:00:05.000Z",
                [250, 140, 15, 4],
                [150, 100, 5, 0],
            ),
        ];
        let folded = fold_texts(&[("rollout.jsonl", text(&lines))]);
        assert_eq!(figures(&folded)["s1"], [2, 250, 140, 0, 0, 15, 4, 0]);
        let second = &folded.calls[1];
        assert_eq!(second.usage.input, Some(150));
        assert_eq!(second.usage.cache_write, None);
        assert_eq!((second.line, second.index), (6, 2));
        assert_eq!(second.agent_version.as_deref(), Some("0.130.0"));
        assert!(folded.issues.is_empty(), "{:?}", folded.issues);
    }

    #[test]
    fn a_zero_total_and_a_total_repeating_the_replay_are_not_calls() {
        let lines = [
            meta("s1", "2026-05-01T10:00:00.000Z", ""),
            count("2026-05-01T10:00:01.000Z", [0, 0, 0, 0], [0, 0, 0, 0]),
            count("2026-05-01T10:00:03.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
        ];
        let f = figures(&fold_texts(&[("rollout.jsonl", text(&lines))]));
        assert_eq!(f["s1"], [1, 100, 0, 0, 0, 10, 0, 0]);
        let mut forked = child(Some("2026-05-01T11:00:00.004Z"), true);
        let seed = count(
            "2026-05-01T11:00:35.000Z",
            [250, 90, 20, 0],
            [150, 90, 10, 0],
        );
        forked.insert(6, seed);
        let f = figures(&fold_texts(&[("child.jsonl", text(&forked))]));
        assert_eq!(f["c"], [1, 300, 200, 0, 0, 7, 0, 0]);
    }

    #[test]
    fn each_session_of_a_file_counts_from_zero() {
        let lines = [
            meta("s1", "2026-05-01T10:00:00.000Z", ""),
            turn("gpt-5.5", "2026-05-01T10:00:01.000Z"),
            count("2026-05-01T10:00:03.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
            meta("s2", "2026-05-01T10:01:00.000Z", ""),
            turn("gpt-5.5", "2026-05-01T10:01:01.000Z"),
            count("2026-05-01T10:01:03.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
            meta("s3", "2026-05-01T10:02:00.000Z", ""),
            NULL_INFO.to_owned(),
        ];
        let f = figures(&fold_texts(&[("transcript.jsonl", text(&lines))]));
        assert_eq!(f["s1"], [1, 100, 0, 0, 0, 10, 0, 0]);
        assert_eq!(f["s2"], [1, 100, 0, 0, 0, 10, 0, 0]);
        assert_eq!(f["s3"], [0; 8]);
    }

    #[test]
    fn a_resume_without_a_header_keeps_the_running_total() {
        let lines = [
            meta("s1", "2026-05-01T10:00:00.000Z", ""),
            turn("gpt-5.4-mini", "2026-05-01T10:00:01.000Z"),
            count(
                "2026-05-01T10:00:03.000Z",
                [30273, 0, 10, 0],
                [30273, 0, 10, 0],
            ),
            // resumed later: no session_meta, the total goes on
            turn("gpt-5.2", "2026-05-02T09:00:01.000Z"),
            count(
                "2026-05-02T09:00:03.000Z",
                [60552, 0, 20, 0],
                [30279, 0, 10, 0],
            ),
        ];
        let folded = fold_texts(&[("rollout.jsonl", text(&lines))]);
        let calls: Vec<_> = folded
            .calls
            .iter()
            .map(|c| (c.model.as_deref(), c.usage.input))
            .collect();
        assert_eq!(
            calls,
            vec![
                (Some("gpt-5.4-mini"), Some(30273)),
                (Some("gpt-5.2"), Some(30279))
            ]
        );
        assert_eq!(folded.sessions[0].models, vec!["gpt-5.4-mini", "gpt-5.2"]);
    }

    #[test]
    fn an_increment_that_disagrees_with_last_usage_is_kept_with_a_warning() {
        let lines = [
            meta("s1", "2026-05-01T10:00:00.000Z", ""),
            count("2026-05-01T10:00:03.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
            count("2026-05-01T10:00:04.000Z", [300, 0, 30, 0], [300, 0, 30, 0]),
        ];
        let folded = fold_texts(&[("rollout.jsonl", text(&lines))]);
        assert_eq!(folded.calls[1].usage.input, Some(200));
        assert_eq!(folded.issues.len(), 1);
        assert_eq!(
            (folded.issues[0].line, folded.issues[0].severity),
            (Some(3), "warning")
        );
        assert_eq!(
            folded.calls[0].model, None,
            "no turn_context: the model is unknown"
        );
    }

    #[test]
    fn the_headers_model_serves_until_a_turn_context() {
        let lines = [
            meta("s1", "2026-05-01T10:00:00.000Z", r#","model":"gpt-5""#),
            count("2026-05-01T10:00:03.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
            turn("gpt-5.5", "2026-05-01T10:00:04.000Z"),
            count("2026-05-01T10:00:05.000Z", [200, 0, 20, 0], [100, 0, 10, 0]),
        ];
        let folded = fold_texts(&[("rollout.jsonl", text(&lines))]);
        let models: Vec<_> = folded.calls.iter().map(|c| c.model.as_deref()).collect();
        assert_eq!(models, vec![Some("gpt-5"), Some("gpt-5.5")]);
    }

    #[test]
    fn cache_writes_and_a_legacy_header() {
        let lines = [
            r#"{"id":"0f0e0d0c-0000-4000-8000-000000000001","timestamp":"2025-05-01T10:00:00.000Z","instructions":null}"#.to_owned(),
            r#"{"timestamp":"2025-05-01T10:00:03.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":500,"cached_input_tokens":100,"cache_write_input_tokens":50,"output_tokens":9,"reasoning_output_tokens":0,"total_tokens":509}}}}"#.to_owned(),
        ];
        let folded = fold_texts(&[("rollout.jsonl", text(&lines))]);
        assert_eq!(
            folded.sessions[0].id,
            "0f0e0d0c-0000-4000-8000-000000000001"
        );
        assert_eq!(folded.calls[0].usage.cache_write, Some(50));
    }

    #[test]
    fn the_pre_envelope_format_is_read_without_complaint() {
        let lines = [
            r#"{"id":"0f0e0d0c-0000-4000-8000-000000000002","timestamp":"2025-05-01T10:00:00.000Z","instructions":null,"git":{"branch":"main"}}"#,
            r#"{"record_type":"state"}"#,
            r#"{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
            r#"{"type":"reasoning","id":"rs_1","summary":[]}"#,
            r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
            r#"{"record_type":"state"}"#,
        ]
        .map(str::to_owned);
        let folded = fold_texts(&[("rollout.jsonl", text(&lines))]);
        assert!(folded.issues.is_empty(), "{:?}", folded.issues);
        assert!(folded.calls.is_empty());
        assert_eq!(folded.sessions.len(), 1);
        assert_eq!(folded.sessions[0].lines, 6);
        assert_eq!(folded.sessions[0].unknown_lines, 0);
    }

    /// A parent session (`p`, 3 requests) and its lines.
    fn parent() -> Vec<String> {
        vec![
            meta("p", "2026-05-01T10:00:00.000Z", ""),
            turn("gpt-5.5", "2026-05-01T10:00:01.000Z"),
            count("2026-05-01T10:00:03.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
            count(
                "2026-05-01T10:00:09.000Z",
                [250, 90, 20, 0],
                [150, 90, 10, 0],
            ),
            count(
                "2026-05-01T10:00:20.000Z",
                [450, 200, 35, 5],
                [200, 110, 15, 5],
            ),
        ]
    }

    /// A fork of `parent()` after its second request, the copy stamped `copy_time` (None:
    /// the parent's own stamps), then the child's own request, seeded or not.
    fn child(copy_time: Option<&str>, seeded: bool) -> Vec<String> {
        let restamp = |line: &String| match copy_time {
            Some(t) => format!(r#"{{"timestamp":"{t}"{}"#, &line[39..]),
            None => line.clone(),
        };
        let mut lines = vec![meta(
            "c",
            "2026-05-01T11:00:00.000Z",
            r#","forked_from_id":"p""#,
        )];
        lines.extend(parent()[..4].iter().map(restamp));
        lines.push(turn("gpt-5.5", "2026-05-01T11:00:30.000Z"));
        let own = if seeded {
            [250 + 300, 90 + 200, 20 + 7, 0]
        } else {
            [300, 200, 7, 0]
        };
        lines.push(count("2026-05-01T11:00:40.000Z", own, [300, 200, 7, 0]));
        lines
    }

    #[test]
    fn a_forks_replay_adds_nothing_whatever_its_stamps() {
        for copy_time in [Some("2026-05-01T11:00:00.004Z"), None] {
            for seeded in [true, false] {
                let folded = fold_texts(&[("child.jsonl", text(&child(copy_time, seeded)))]);
                let f = figures(&folded);
                assert_eq!(
                    f["c"],
                    [1, 300, 200, 0, 0, 7, 0, 0],
                    "{copy_time:?} {seeded}"
                );
                assert!(!f.contains_key("p"), "the copied header starts no session");
                assert_eq!(folded.sessions[0].parent.as_deref(), Some("p"));
                assert_eq!(folded.sessions[0].start_time, Some(1_777_633_200_000));
                assert!(folded.issues.is_empty(), "{:?}", folded.issues);
                let with_parent = fold_texts(&[
                    ("parent.jsonl", text(&parent())),
                    ("child.jsonl", text(&child(copy_time, seeded))),
                ]);
                let g = figures(&with_parent);
                assert_eq!(g["c"], f["c"]);
                assert_eq!(g["p"], [3, 450, 200, 0, 0, 35, 5, 0]);
            }
        }
    }

    #[test]
    fn a_copy_slower_than_the_window_is_caught_by_the_parents_totals() {
        let mut lines = child(Some("2026-05-01T11:00:00.004Z"), true);
        // a slow copy: each line 0.9 s after the one before, the last 2.7 s after the header
        for (k, stamp) in [(2, "00.900"), (3, "01.800"), (4, "02.700")] {
            lines[k] = format!(
                r#"{{"timestamp":"2026-05-01T11:00:{stamp}Z"{}"#,
                &lines[k][39..]
            );
        }
        let alone = figures(&fold_texts(&[("child.jsonl", text(&lines))]));
        assert_eq!(
            alone["c"][0], 3,
            "alone, the late copy looks like the child's own"
        );
        let together = figures(&fold_texts(&[
            ("parent.jsonl", text(&parent())),
            ("child.jsonl", text(&lines)),
        ]));
        assert_eq!(together["c"], [1, 300, 200, 0, 0, 7, 0, 0]);
    }

    #[test]
    fn a_header_copied_right_after_the_header_is_a_fork_without_forked_from_id() {
        let mut lines = child(Some("2026-05-01T11:00:00.004Z"), true);
        lines[0] = meta("c", "2026-05-01T11:00:00.000Z", "");
        let f = figures(&fold_texts(&[("child.jsonl", text(&lines))]));
        assert_eq!(f["c"], [1, 300, 200, 0, 0, 7, 0, 0]);
    }

    #[test]
    fn a_rollout_copied_into_another_file_counts_once() {
        let f = figures(&fold_texts(&[
            ("sessions/rollout.jsonl", text(&parent())),
            ("archived_sessions/rollout.jsonl", text(&parent())),
        ]));
        assert_eq!(f["p"], [3, 450, 200, 0, 0, 35, 5, 0]);
    }

    #[test]
    fn a_total_going_back_counts_from_zero_with_a_warning() {
        let lines = [
            meta("s1", "2026-05-01T10:00:00.000Z", ""),
            count("2026-05-01T10:00:03.000Z", [100, 0, 10, 0], [100, 0, 10, 0]),
            count("2026-05-01T10:00:05.000Z", [40, 0, 4, 0], [40, 0, 4, 0]),
        ];
        let folded = fold_texts(&[("rollout.jsonl", text(&lines))]);
        assert_eq!(figures(&folded)["s1"], [2, 140, 0, 0, 0, 14, 0, 0]);
        assert_eq!(folded.issues.len(), 1);
        assert_eq!(folded.issues[0].line, Some(3));
    }

    /// A session's lines with requests of the given (input, output) increments.
    fn session(increments: &[(i64, i64)]) -> Vec<String> {
        let mut lines = vec![
            meta("s1", "2026-05-01T10:00:00.000Z", ""),
            turn("gpt-5.5", "2026-05-01T10:00:00.500Z"),
        ];
        let mut total = [0i64; 4];
        for (k, &(input, output)) in increments.iter().enumerate() {
            total[0] += input;
            total[2] += output;
            let t = format!("2026-05-01T10:{:02}:{:02}.000Z", 1 + k / 60, k % 60);
            lines.push(count(&t, total, [input, 0, output, 0]));
        }
        lines
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn copies_and_replays_change_no_figure(
            increments in proptest::collection::vec((1i64..1000, 0i64..100), 1..8),
            twice in any::<usize>(),
            cut in any::<usize>(),
            fork_at in any::<usize>(),
            own in proptest::collection::vec((1i64..1000, 0i64..100), 1..4),
        ) {
            let base = session(&increments);
            let (expected, same) = copies_change_nothing(fold, &base, twice, cut);
            prop_assert!(same, "a line written twice or copied into a resumed file");
            // a fork: the child's figures are its own requests alone
            let upto = 2 + fork_at % (base.len() - 1);
            let mut child = vec![meta("c", "2026-05-01T11:00:00.000Z", r#","forked_from_id":"s1""#)];
            child.extend(base[..upto].iter().map(|l| format!(r#"{{"timestamp":"2026-05-01T11:00:00.001Z"{}"#, &l[39..])));
            let seed = base[..upto].iter().filter(|l| l.contains("token_count")).count();
            let mut total = [0i64; 4];
            for &(i, o) in &increments[..seed] {
                total[0] += i;
                total[2] += o;
            }
            for (k, &(i, o)) in own.iter().enumerate() {
                total[0] += i;
                total[2] += o;
                child.push(count(&format!("2026-05-01T11:01:{k:02}.000Z"), total, [i, 0, o, 0]));
            }
            let folded = fold_texts(&[("a.jsonl", text(&base)), ("c.jsonl", text(&child))]);
            prop_assert!(folded.issues.iter().all(|i| i.severity != "error"), "{:?}", folded.issues);
            let got = figures(&folded);
            prop_assert_eq!(&got["s1"], &expected["s1"]);
            let own_input: i64 = own.iter().map(|&(i, _)| i).sum();
            let own_output: i64 = own.iter().map(|&(_, o)| o).sum();
            prop_assert_eq!(got["c"], [i64::try_from(own.len()).unwrap_or(0), own_input, 0, 0, 0, own_output, 0, 0]);
        }
    }
}
