//! The Kimi Code fold: wire logs (`$KIMI_CODE_HOME/sessions/<workDirKey>/<sessionId>/agents/
//! <agentId>/wire.jsonl`, and legacy kimi-cli `~/.kimi/sessions/<md5(cwd)>/<uuid>/wire.jsonl`)
//! in, one call per finished model request out.
//!
//! **Records.** Kimi Code writes `{type, …payload, time}` lines (`time`: Unix ms), opened by
//! `{"type":"metadata","protocol_version":"1.5"}`. A protocol version other than 1.0–1.5 is a
//! warning; the file is still read. Types the fold does not know are counted per session
//! (`unknown_lines`) and named in one warning per file.
//!
//! **Calls.** One call per `usage.record` line (`usageScope` `turn`: an agent-loop request;
//! `session`: a full compaction, kind `compaction`). The same usage is written twice more (the
//! `step.end` loop event, the `agent.message.appended` replay at the end of a turn): those are
//! never read for usage. A request that failed (HTTP 429) leaves an `llm.request` and a
//! `step.end` without usage and no `usage.record`: not a call. Usage: `input_tokens` =
//! `inputOther` (uncached) + `inputCacheRead` + `inputCacheCreation`; cache reads and writes
//! apart; `output` includes reasoning (no split is logged). A record whose counters are all 0
//! is Kimi Code's stand-in when the provider sent no usage: a call whose tokens are unknown
//! (`final_usage` false). Model: the `model` of the agent's last `llm.request` before the
//! record (the provider's id, `kimi-k2.7-code`); else the record's config alias after its
//! last `/` (never the `__kimi_env_model__` placeholder). The call runs from that request's
//! stamp to the record's.
//!
//! **Copies.** A resumed session appends to its wire; a `/fork` writes the new session's wire
//! as the source's records (same stamps and usage) followed by a `forked` record. Calls are
//! keyed by (agent, stamp, alias, usage) across the group (the record has no id): a copy
//! counts once, and a fork's copied records yield to the source session's own when both are
//! read.
//!
//! **Legacy kimi-cli** wires hold `{timestamp (s), message: {type, payload}}`; a call is a
//! `StatusUpdate` with `token_usage` (snake_case counters; inside a `SubagentEvent`: a
//! sub-agent's), keyed by its `message_id`. They name no model. kimi-cli's `context.jsonl`
//! (`{role, …}` records: the conversation as sent, its `_usage` lines the context size) holds no
//! per-call usage: its lines are counted and skipped.
//!
//! **Sessions.** The directory above `agents/` (legacy: the wire's directory) is the session;
//! its `state.json` (`id`, `cwd`) names it when present.
//!
//! **Context items** (Kimi Code wires): the system prompt (`profile.bind`), messages appended
//! to the context (prompts, injected reminders), the loop's content parts, tool calls and
//! results, and compaction summaries; keyed by session, stamp and text, so a copied line adds
//! none. The end-of-turn replays add none.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use crate::fold::{self, kind, Call, Folded, Item, Line, Usage};
use crate::read::json::{self, Fields, Kind, Schema, Shape, Value};

/// Record types of Kimi Code wires (protocol 1.5 manifest, and those the 2.x files hold
/// beyond it); any other is counted as unknown.
pub const KNOWN_TYPES: &[&str] = &[
    "metadata",
    "config.update",
    "context.append_loop_event",
    "context.append_message",
    "context.apply_compaction",
    "context.clear",
    "context.undo",
    "cron.add",
    "cron.cursor",
    "cron.delete",
    "environment.set_binding",
    "file_history.checkpoint",
    "file_history.tracked",
    "forked",
    "full_compaction.begin",
    "full_compaction.cancel",
    "full_compaction.complete",
    "goal.clear",
    "goal.create",
    "goal.update",
    "interaction.request",
    "interaction.resolved",
    "interruptionReminder.recorded",
    "llm.request",
    "llm.tools_snapshot",
    "mcp.tools_discovered",
    "permission.record_approval_result",
    "permission.set_mode",
    "plan_mode.cancel",
    "plan_mode.enter",
    "plan_mode.exit",
    "plan.revision",
    "plugin.session_start",
    "profile.bind",
    "prompt.aborted",
    "prompt.completed",
    "prompt.steered",
    "subagent.cancelled",
    "subagent.completed",
    "subagent.failed",
    "subagent.spawned",
    "subagent.started",
    "swarm_mode.enter",
    "swarm_mode.exit",
    "task.started",
    "task.terminated",
    "task.waitDelivered",
    "token_counting.measured",
    "token_counting.rebased",
    "token_counting.truncated",
    "token_counting.turn_recorded",
    "tools.register_user_tool",
    "tools.reset_active_tools",
    "tools.set_active_tools",
    "tools.unregister_user_tool",
    "tools.update_store",
    "tower_mode.enter",
    "tower_mode.exit",
    "turn.cancel",
    "turn.ended",
    "turn.prompt",
    "turn.steer",
    "turn.step.interrupted",
    "turn.step.retrying",
    "usage.record",
    // in 2.x files, not in the 1.5 manifest
    "agent.message.appended",
    "agent.turn.started",
    "agent.turn.ended",
    "runtime.set_binding",
];

/// [`KNOWN_TYPES`] as a set: every line's type is looked up.
static KNOWN: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| KNOWN_TYPES.iter().copied().collect());

/// The wire protocol versions the fold knows (Kimi Code's migrations run 1.0 → 1.5).
pub const KNOWN_PROTOCOLS: &[&str] = &["1", "1.0", "1.1", "1.2", "1.3", "1.4", "1.5"];

/// The config alias Kimi Code writes when the model comes from `KIMI_MODEL_*` variables: not a
/// model id.
const ENV_MODEL: &str = "__kimi_env_model__";

/// Kimi Code's usage counters: uncached input, output, cache read, cache write.
const COUNTERS: [&str; 4] = [
    "usage.inputOther",
    "usage.output",
    "usage.inputCacheRead",
    "usage.inputCacheCreation",
];
/// kimi-cli's, in the same order, in a `StatusUpdate` and in a sub-agent's.
const LEGACY: [&str; 4] = [
    "message.payload.token_usage.input_other",
    "message.payload.token_usage.output",
    "message.payload.token_usage.input_cache_read",
    "message.payload.token_usage.input_cache_creation",
];
const LEGACY_SUB: [&str; 4] = [
    "message.payload.event.payload.token_usage.input_other",
    "message.payload.event.payload.token_usage.output",
    "message.payload.event.payload.token_usage.input_cache_read",
    "message.payload.event.payload.token_usage.input_cache_creation",
];

const FIELDS: &[(&str, Shape)] = &[
    ("type", Shape::Scalar),
    ("time", Shape::Scalar),
    ("created_at", Shape::Scalar),
    ("agentId", Shape::Scalar),
    ("protocol_version", Shape::Scalar),
    ("model", Shape::Scalar),
    ("modelAlias", Shape::Scalar),
    ("usageScope", Shape::Scalar),
    ("usage", Shape::Struct),
    ("role", Shape::Scalar),
    ("systemPrompt", Shape::Any),
    ("summary", Shape::Any),
    ("contextSummary", Shape::Any),
    ("event", Shape::Struct),
    ("event.type", Shape::Scalar),
    ("event.toolCallId", Shape::Scalar),
    ("event.name", Shape::Scalar),
    ("event.uuid", Shape::Scalar),
    ("event.part", Shape::Any),
    ("event.args", Shape::Any),
    ("event.result", Shape::Any),
    ("message", Shape::Struct),
    ("message.role", Shape::Scalar),
    ("message.id", Shape::Scalar),
    ("message.toolCallId", Shape::Scalar),
    ("message.content", Shape::Any),
    ("message.origin", Shape::Struct),
    ("message.origin.kind", Shape::Scalar),
    // legacy kimi-cli
    ("timestamp", Shape::Scalar),
    ("message.type", Shape::Scalar),
    ("message.payload", Shape::Struct),
    ("message.payload.message_id", Shape::Scalar),
    ("message.payload.agent_id", Shape::Scalar),
    ("message.payload.token_usage", Shape::Struct),
    ("message.payload.event", Shape::Struct),
    ("message.payload.event.type", Shape::Scalar),
    ("message.payload.event.payload", Shape::Struct),
    ("message.payload.event.payload.message_id", Shape::Scalar),
    ("message.payload.event.payload.token_usage", Shape::Struct),
];

/// Every field the fold reads.
fn fields() -> Vec<(&'static str, Shape)> {
    let counters = COUNTERS
        .iter()
        .chain(LEGACY.iter())
        .chain(LEGACY_SUB.iter());
    FIELDS
        .iter()
        .copied()
        .chain(counters.map(|&path| (path, Shape::Scalar)))
        .collect()
}

/// The schema nodes the fold reads.
struct Nodes {
    kind: usize,
    time: usize,
    created: usize,
    agent: usize,
    protocol: usize,
    model: usize,
    alias: usize,
    scope: usize,
    usage: usize,
    role: usize,
    system_prompt: usize,
    summary: usize,
    context_summary: usize,
    event_type: usize,
    tool_call: usize,
    tool_name: usize,
    event_uuid: usize,
    part: usize,
    args: usize,
    result: usize,
    message_role: usize,
    message_id: usize,
    message_tool_call: usize,
    content: usize,
    origin: usize,
    timestamp: usize,
    legacy_type: usize,
    legacy_id: usize,
    legacy_agent: usize,
    legacy_usage: usize,
    legacy_event_type: usize,
    legacy_sub_id: usize,
    legacy_sub_usage: usize,
    counters: [usize; 4],
    legacy: [usize; 4],
    legacy_sub: [usize; 4],
}

impl Nodes {
    fn new(schema: &Schema) -> Nodes {
        let n = |path: &str| schema.find(path).unwrap_or(0);
        Nodes {
            kind: n("type"),
            time: n("time"),
            created: n("created_at"),
            agent: n("agentId"),
            protocol: n("protocol_version"),
            model: n("model"),
            alias: n("modelAlias"),
            scope: n("usageScope"),
            usage: n("usage"),
            role: n("role"),
            system_prompt: n("systemPrompt"),
            summary: n("summary"),
            context_summary: n("contextSummary"),
            event_type: n("event.type"),
            tool_call: n("event.toolCallId"),
            tool_name: n("event.name"),
            event_uuid: n("event.uuid"),
            part: n("event.part"),
            args: n("event.args"),
            result: n("event.result"),
            message_role: n("message.role"),
            message_id: n("message.id"),
            message_tool_call: n("message.toolCallId"),
            content: n("message.content"),
            origin: n("message.origin.kind"),
            timestamp: n("timestamp"),
            legacy_type: n("message.type"),
            legacy_id: n("message.payload.message_id"),
            legacy_agent: n("message.payload.agent_id"),
            legacy_usage: n("message.payload.token_usage"),
            legacy_event_type: n("message.payload.event.type"),
            legacy_sub_id: n("message.payload.event.payload.message_id"),
            legacy_sub_usage: n("message.payload.event.payload.token_usage"),
            counters: COUNTERS.map(n),
            legacy: LEGACY.map(n),
            legacy_sub: LEGACY_SUB.map(n),
        }
    }
}

/// Where a wire file stands in its home: its session (id, cwd) and the agent whose wire it is.
struct Place {
    session: String,
    cwd: Option<String>,
    /// The agent directory's name (`main`, `agent-0`) of a Kimi Code wire; None for others.
    agent: Option<String>,
}

/// A wire's place: `<session>/agents/<agent>/wire.jsonl` (Kimi Code) or `<session>/wire.jsonl`
/// (kimi-cli, and any other layout: a file whose stem is not `wire` or `context*` is its own
/// session). The session directory's `state.json` names the session and its cwd.
fn place_of(path: &Path) -> Place {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
    };
    let parent = path.parent();
    let grandparent = parent.and_then(Path::parent);
    let (dir, agent) = if name(grandparent).as_deref() == Some("agents") {
        (grandparent.and_then(Path::parent), name(parent))
    } else {
        (parent, None)
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_session = stem == "wire" || stem.starts_with("context");
    let fallback = if in_session || agent.is_some() {
        name(dir).unwrap_or(stem)
    } else {
        stem
    };
    let (id, cwd) = dir
        .filter(|_| in_session || agent.is_some())
        .map(|d| state_of(&d.join("state.json")))
        .unwrap_or((None, None));
    Place {
        session: id.unwrap_or(fallback),
        cwd,
        agent,
    }
}

/// The `id` and `cwd` a session's `state.json` names (None for what it lacks, or when it is
/// absent, unreadable or not a JSON object: the directory's name then stands).
fn state_of(path: &Path) -> (Option<String>, Option<String>) {
    let Ok(bytes) = std::fs::read(path) else {
        return (None, None);
    };
    let schema = Schema::new(&[("id", Shape::Scalar), ("cwd", Shape::Scalar)]);
    let mut fields = Fields::new(&schema);
    let text: Vec<u8> = bytes
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    if !matches!(
        json::parse(text.trim_ascii(), &schema, &mut fields),
        Ok(Kind::Object)
    ) {
        return (None, None);
    }
    let get = |field: &str| {
        let node = schema.find(field)?;
        fold::string(text.trim_ascii(), fields.get(node))
            .map(|s| s.into_owned())
            .filter(|s| !s.is_empty())
    };
    (get("id"), get("cwd"))
}

/// What makes two lines of a session the same line: its stamp and text.
fn line_key(session: &str, time: Option<i64>, text: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    format!("{session}@{time:?}#{:x}", hasher.finish())
}

/// A value's bytes as the log writes it (None when absent or null).
fn span(value: Value) -> Option<i64> {
    match value.kind {
        Kind::Missing | Kind::Null => None,
        _ => i64::try_from(value.end.saturating_sub(value.start)).ok(),
    }
}

/// A JSON number of seconds (kimi-cli's `timestamp`) as whole milliseconds.
fn seconds_ms(line: &Line<'_>, node: usize) -> Option<i64> {
    let value = line.get(node);
    if !matches!(value.kind, Kind::Int | Kind::Float) {
        return None;
    }
    let text = line.text.get(value.start..value.end)?;
    let seconds: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    let ms = (seconds * 1000.0).round();
    // the range check makes the conversion exact and in range
    #[allow(clippy::cast_possible_truncation)]
    (ms.is_finite() && ms.abs() < 9.0e15).then_some(ms as i64)
}

/// The model a config alias names: its part after the last `/` (`moonshot-ai/kimi-k2.7-code`
/// → `kimi-k2.7-code`); None for the environment placeholder or an empty alias.
fn model_of_alias(alias: &str) -> Option<String> {
    let model = alias.rsplit('/').next().unwrap_or(alias);
    (!model.is_empty() && alias != ENV_MODEL && model != ENV_MODEL).then(|| model.to_owned())
}

/// One call found in a file, before the group's copies are set aside.
struct Found {
    key: String,
    /// Read before a `forked` record of its file: a fork's copy of its source's call.
    copied: bool,
    call: Call,
}

/// What one file's reading keeps between its lines.
#[derive(Default)]
struct FileState {
    /// Per agent: the model and stamp of its last `llm.request`.
    requests: HashMap<String, (Option<String>, Option<i64>)>,
    /// Calls found in this file so far (index into the fold's list) since the last `forked`.
    since_fork: Vec<usize>,
    unknown: i64,
    first_unknown: Option<(i64, String)>,
    /// The file's session (index into the fold's sessions), once its first line is read.
    session: Option<usize>,
}

struct Fold {
    n: &'static Nodes,
    out: Folded,
    index: HashMap<String, usize>,
    found: Vec<Found>,
    items: Vec<(String, Item)>,
    with_items: bool,
}

/// Fold a group of Kimi Code (and kimi-cli) wires into calls, sessions, issues and items.
pub fn fold(paths: &[PathBuf]) -> Folded {
    fold_with(paths, true)
}

/// The schema of the fields the fold reads and its nodes, built once: a tree is folded as
/// thousands of one-session groups, and building them per group cost a twentieth of the fold.
static SCHEMA: LazyLock<(Schema, Nodes)> = LazyLock::new(|| {
    let schema = Schema::new(&fields());
    let nodes = Nodes::new(&schema);
    (schema, nodes)
});

/// [`fold`], gathering the context items only `with_items`.
pub fn fold_with(paths: &[PathBuf], with_items: bool) -> Folded {
    let (schema, nodes) = &*SCHEMA;
    fold::fold_group(paths, "kimi", schema, |out| Fold {
        n: nodes,
        out,
        index: HashMap::new(),
        found: Vec::new(),
        items: Vec::new(),
        with_items,
    })
}

impl Fold {
    fn line(&mut self, line: &Line<'_>, file: usize, place: &Place, state: &mut FileState) {
        let n = self.n;
        let kind = line.str(n.kind);
        let legacy = kind.is_none() && line.get(n.legacy_type).kind == Kind::Str;
        let time = if legacy {
            seconds_ms(line, n.timestamp)
        } else {
            line.int(n.time).or_else(|| line.int(n.created))
        };
        // every line of a file is its place's session: looked up on the first line only
        let at = *state.session.get_or_insert_with(|| {
            fold::session_of(&mut self.out.sessions, &mut self.index, &place.session);
            self.index.get(&place.session).copied().unwrap_or_default()
        });
        let Some(session) = self.out.sessions.get_mut(at) else {
            return;
        };
        session.saw(file, time);
        if session.cwd.is_none() {
            session.cwd.clone_from(&place.cwd);
        }
        if legacy {
            self.legacy(line, file, time, place);
            return;
        }
        let Some(kind) = kind else {
            if line.get(n.role).kind == Kind::Str {
                return; // a kimi-cli context.jsonl record: no per-call usage
            }
            session.unknown_lines += 1;
            state.unknown += 1;
            state
                .first_unknown
                .get_or_insert((line.number, "(no type)".into()));
            return;
        };
        if !KNOWN.contains(kind.as_ref()) {
            session.unknown_lines += 1;
            state.unknown += 1;
            state
                .first_unknown
                .get_or_insert_with(|| (line.number, kind.into_owned()));
            return;
        }
        let agent = || {
            line.str(n.agent)
                .map(Cow::into_owned)
                .or_else(|| place.agent.clone())
                .unwrap_or_else(|| "main".into())
        };
        match kind.as_ref() {
            "metadata" => self.protocol(line, file),
            "llm.request" => {
                let model = line
                    .str(n.model)
                    .map(Cow::into_owned)
                    .or_else(|| line.str(n.alias).and_then(|a| model_of_alias(&a)));
                state.requests.insert(agent(), (model, time));
            }
            "usage.record" => self.usage_record(line, file, time, place, agent(), state),
            "forked" => {
                for &at in &state.since_fork {
                    if let Some(found) = self.found.get_mut(at) {
                        found.copied = true;
                    }
                }
                state.since_fork.clear();
            }
            _ if self.with_items => self.item(line, file, time, place, &kind, &agent()),
            _ => {}
        }
    }

    /// A `metadata` line: a protocol version the fold does not know is a warning.
    fn protocol(&mut self, line: &Line<'_>, file: usize) {
        let version = line.str(self.n.protocol).map(|s| s.into_owned());
        let known = version
            .as_deref()
            .is_some_and(|v| KNOWN_PROTOCOLS.contains(&v));
        if !known {
            let shown = version.map_or_else(|| "none".to_owned(), |v| format!("{v:?}"));
            let message = format!(
                "wire protocol version {shown} is not one agentcost knows (1.0 to 1.5); read as 1.5"
            );
            self.out.issue(file, line.number, "warning", message);
        }
    }

    fn usage_record(
        &mut self,
        line: &Line<'_>,
        file: usize,
        time: Option<i64>,
        place: &Place,
        agent: String,
        state: &mut FileState,
    ) {
        let n = self.n;
        if line.get(n.usage).kind != Kind::Object {
            self.out.issue(
                file,
                line.number,
                "warning",
                "usage.record without usage; counted as a call of unknown tokens".into(),
            );
        }
        let counters = n.counters.map(|node| line.int(node));
        let alias = line.str(n.model).map(|s| s.into_owned());
        let (model, started) = match state.requests.get(&agent) {
            Some((model, started)) => (model.clone(), *started),
            None => (alias.as_deref().and_then(model_of_alias), None),
        };
        let kind = if line.str(n.scope).as_deref() == Some("session") {
            "compaction"
        } else if agent == "main" {
            "main"
        } else {
            "subagent"
        };
        let [other, out, read, write] = counters;
        let key = format!(
            "{agent}@{}:{}:{}/{}/{}/{}",
            time.map_or_else(|| "?".into(), |t| t.to_string()),
            alias.as_deref().unwrap_or("?"),
            shown(other),
            shown(out),
            shown(read),
            shown(write)
        );
        state.since_fork.push(self.found.len());
        self.found.push(Found {
            key: key.clone(),
            copied: false,
            call: Call {
                file,
                line: line.number,
                session: place.session.clone(),
                kind,
                model,
                agent_id: (agent != "main").then_some(agent),
                api_call_id: Some(key),
                start_time: started.or(time),
                end_time: time,
                ..call_usage(counters)
            },
        });
    }

    /// A kimi-cli line: a `StatusUpdate` with token usage is a call (a `SubagentEvent`
    /// wrapping one, a sub-agent's call).
    fn legacy(&mut self, line: &Line<'_>, file: usize, time: Option<i64>, place: &Place) {
        let n = self.n;
        let (usage, counters, id, kind, agent) = match line.str(n.legacy_type).as_deref() {
            Some("StatusUpdate") => (n.legacy_usage, n.legacy, n.legacy_id, "main", None),
            Some("SubagentEvent")
                if line.str(n.legacy_event_type).as_deref() == Some("StatusUpdate") =>
            {
                let agent = line
                    .str(n.legacy_agent)
                    .map_or_else(|| "subagent".into(), |s| s.into_owned());
                let ids = n.legacy_sub_id;
                (
                    n.legacy_sub_usage,
                    n.legacy_sub,
                    ids,
                    "subagent",
                    Some(agent),
                )
            }
            _ => return,
        };
        if line.get(usage).kind != Kind::Object {
            return; // a status update without usage (context size, plan mode)
        }
        let counters = counters.map(|node| line.int(node));
        let key = match line.str(id) {
            Some(id) => format!("legacy:{id}"),
            None => format!(
                "legacy@{}:{}:{}/{}/{}/{}",
                time.map_or_else(|| "?".into(), |t| t.to_string()),
                agent.as_deref().unwrap_or("main"),
                shown(counters[0]),
                shown(counters[1]),
                shown(counters[2]),
                shown(counters[3])
            ),
        };
        self.found.push(Found {
            key: key.clone(),
            copied: false,
            call: Call {
                file,
                line: line.number,
                session: place.session.clone(),
                kind,
                agent_id: agent,
                api_call_id: Some(key),
                start_time: time,
                end_time: time,
                ..call_usage(counters)
            },
        });
    }

    /// The context item a Kimi Code record adds (see the module documentation).
    fn item(
        &mut self,
        line: &Line<'_>,
        file: usize,
        time: Option<i64>,
        place: &Place,
        kind: &str,
        agent: &str,
    ) {
        let n = self.n;
        let text = |node: usize| line.str(node).map(|s| s.into_owned());
        let mut base = Item {
            file,
            line: line.number,
            sub: 1,
            session: place.session.clone(),
            time,
            agent_id: (agent != "main").then(|| agent.to_owned()),
            ..Item::default()
        };
        let key = line_key(&place.session, time, line.text);
        match kind {
            "profile.bind" => {
                let Some(bytes) = span(line.get(n.system_prompt)) else {
                    return;
                };
                base.kind = kind::SYSTEM;
                base.content_bytes = Some(bytes);
            }
            "context.apply_compaction" => {
                base.kind = kind::COMPACTION;
                base.content_bytes =
                    span(line.get(n.summary)).or_else(|| span(line.get(n.context_summary)));
            }
            "context.append_message" => {
                let role = text(n.message_role);
                let origin = text(n.origin);
                base.kind = match (role.as_deref(), origin.as_deref()) {
                    (Some("user"), None | Some("user" | "shell_command" | "retry")) => kind::PROMPT,
                    (Some("assistant"), _) => kind::REPLY,
                    (Some("tool"), _) => kind::TOOL_OUTPUT,
                    _ => kind::SYSTEM,
                };
                base.event_id = text(n.message_id);
                base.tool_call_id = text(n.message_tool_call);
                base.content_bytes = span(line.get(n.content));
            }
            "context.append_loop_event" => match line.str(n.event_type).as_deref() {
                Some("content.part") => {
                    base.kind = kind::REPLY;
                    base.event_id = text(n.event_uuid);
                    base.content_bytes = span(line.get(n.part));
                }
                Some("tool.call") => {
                    let bytes = span(line.get(n.args));
                    base.kind = kind::REPLY;
                    base.event_id = text(n.event_uuid);
                    base.tool_call_id = text(n.tool_call);
                    base.content_bytes = bytes;
                    base.tool_request_bytes = bytes;
                    let start = Item {
                        sub: 2,
                        kind: kind::TOOL_CALL,
                        tool_name: text(n.tool_name),
                        content_bytes: None,
                        tool_request_bytes: None,
                        ..base.clone()
                    };
                    self.items.push((format!("{key}.2"), start));
                }
                Some("tool.result") => {
                    base.kind = kind::TOOL_OUTPUT;
                    base.tool_call_id = text(n.tool_call);
                    base.content_bytes = span(line.get(n.result));
                }
                _ => return,
            },
            _ => return,
        }
        self.items.push((format!("{key}.1"), base));
    }
}

/// A counter for a dedupe key (`?` when unknown).
fn shown(counter: Option<i64>) -> String {
    counter.map_or_else(|| "?".into(), |c| c.to_string())
}

/// A call's usage from (uncached input, output, cache read, cache write): input includes the
/// cache; all four 0 (the stand-in for a response without usage) or none known: tokens
/// unknown, no final usage.
fn call_usage(counters: [Option<i64>; 4]) -> Call {
    let [other, output, read, write] = counters;
    if counters.iter().all(|c| *c == Some(0)) || counters.iter().all(Option::is_none) {
        return Call {
            final_usage: false,
            ..Call::default()
        };
    }
    let input = other.map(|o| {
        o.saturating_add(read.unwrap_or(0))
            .saturating_add(write.unwrap_or(0))
    });
    Call {
        usage: Usage {
            input,
            cache_read: read,
            cache_write: write,
            output,
            ..Usage::default()
        },
        final_usage: true,
        ..Call::default()
    }
}

impl fold::GroupFold for Fold {
    fn merge(&mut self, part: Fold) {
        for session in part.out.sessions {
            let id = session.id.clone();
            fold::session_of(&mut self.out.sessions, &mut self.index, &id).absorb(session);
        }
        self.out.issues.extend(part.out.issues);
        self.found.extend(part.found);
        self.items.extend(part.items);
    }

    fn read(&mut self, schema: &Schema, file: usize, path: &Path) {
        let mut line_fields = Fields::new(schema);
        let place = place_of(path);
        let mut state = FileState::default();
        let read = fold::read_file(path, file, schema, &mut line_fields, |line| {
            self.line(line, file, &place, &mut state);
        });
        self.out.issues.extend(read.issues);
        if let Some((line, kind)) = state.first_unknown {
            let message = format!(
                "{} line(s) of unknown type (first: {kind:?}); counted, not read",
                state.unknown
            );
            self.out.issue(file, line, "warning", message);
        }
    }

    /// Of the calls sharing a key, the one read first is kept, a fork's copy only where the
    /// source's own is not in the group.
    fn finish(mut self) -> Folded {
        let mut found = std::mem::take(&mut self.found);
        found.sort_by(|a, b| {
            (&a.key, a.copied, a.call.file, a.call.line).cmp(&(
                &b.key,
                b.copied,
                b.call.file,
                b.call.line,
            ))
        });
        found.dedup_by(|later, first| later.key == first.key);
        self.out.calls = found.into_iter().map(|f| f.call).collect();
        self.out.items = fold::unique_items(self.items);
        self.out.finish();
        self.out
    }
}

/// Lines of this format for the fuzzers: one of each record the fold reads.
pub const SEEDS: &[&[u8]] = &[
    br#"{"type":"metadata","protocol_version":"1.5","created_at":1791426074510}"#,
    br#"{"type":"profile.bind","agentId":"main","modelAlias":"moonshot-ai/kimi-k2.7-code","systemPrompt":"You are Kimi","time":1791426074529}"#,
    br#"{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"fix it"}],"id":"msg_1","toolCalls":[],"origin":{"kind":"user"}},"time":1791426074561}"#,
    br#"{"type":"llm.request","agentId":"main","kind":"loop","provider":"openai","model":"kimi-k2.7-code","modelAlias":"moonshot-ai/kimi-k2.7-code","turnStep":"0.1","time":1791426074597}"#,
    br#"{"type":"usage.record","agentId":"main","model":"moonshot-ai/kimi-k2.7-code","usage":{"inputOther":8178,"output":323,"inputCacheRead":10752,"inputCacheCreation":0},"usageScope":"turn","time":1791426081110}"#,
    br#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.call","uuid":"u1","turnId":"0","step":1,"toolCallId":"Bash_0","name":"Bash","args":{"command":"ls"}},"time":1791426081274}"#,
    br#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.result","parentUuid":"u1","toolCallId":"Bash_0","result":{"output":"a.py"}},"time":1791426081472}"#,
    br#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.end","uuid":"u0","step":1,"finishReason":"tool_use","usage":{"inputOther":8178,"output":323,"inputCacheRead":10752,"inputCacheCreation":0},"messageId":"chatcmpl-1"},"time":1791426081479}"#,
    br#"{"type":"turn.step.retrying","agentId":"main","turnId":1,"step":4,"failedAttempt":1,"nextAttempt":2,"maxAttempts":10,"errorName":"APIProviderRateLimitError","statusCode":429,"time":1791426170684}"#,
    br#"{"message":{"message":{"role":"assistant","content":[]},"meta":{"model":{"provider":"agent-loop","model":"agent-loop"},"usage":{"inputOther":1,"output":2,"inputCacheRead":3,"inputCacheCreation":0}}},"type":"agent.message.appended","time":1791426090340,"kind":"event"}"#,
    br#"{"type":"forked","agentId":"main","time":1791426090341}"#,
    br#"{"timestamp":1760000000.25,"message":{"type":"StatusUpdate","payload":{"token_usage":{"input_other":10,"output":5,"input_cache_read":7,"input_cache_creation":1},"message_id":"chatcmpl-9"}}}"#,
    br#"{"timestamp":1760000001.5,"message":{"type":"SubagentEvent","payload":{"agent_id":"a1","event":{"type":"StatusUpdate","payload":{"token_usage":{"input_other":1,"output":1,"input_cache_read":0,"input_cache_creation":0},"message_id":"m2"}}}}}"#,
    br#"{"role":"_usage","token_count":1234}"#,
];

#[cfg(test)]
mod tests;
