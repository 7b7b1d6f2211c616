//! The Claude Code fold: `~/.claude/projects/<project>/*.jsonl` (and sub-agent files) in,
//! one call per API request out.
//!
//! Rules (see `/work/shared/docs/claude-code-codex-formats.md`):
//! - **One call is one API request**, keyed by (`message.id`, `requestId`), or `message.id`
//!   alone where `requestId` is missing (Bedrock, some newer CLIs). A reply is streamed as
//!   several lines of the same key, each with `message.usage`; early lines hold partial output
//!   and from CLI 2.1.98 the final usage is copied onto every line, so usage is never summed:
//!   the call's usage is that of its **last** line. "Last" is decided so that line order and
//!   copies cannot change it: a line with a `stop_reason` (the final record) beats one
//!   without, then the larger `output_tokens` (streamed output only grows), then the later
//!   line read. The key is deduplicated across lines *and* files of the group: resume and
//!   `--continue` write earlier lines again.
//! - A request none of whose lines has a `stop_reason` never got its final usage: it is
//!   counted with `final_usage = false` (its output is a lower bound).
//! - Not calls: `message.model == "<synthetic>"` (a local placeholder); `progress` lines
//!   (`data.type: agent_progress` embeds a sub-agent's messages, whose own file holds the
//!   call); `toolUseResult.usage` (a restatement of the sub-agent's last call).
//! - Sub-agent files (`<session>/subagents/agent-<id>.jsonl`, or older flat `agent-<id>.jsonl`
//!   beside the session) carry the parent's `sessionId`: their calls belong to the parent
//!   session, kind `subagent`, `agent_id` = `agentId`, `agent_name` = the sub-agent type the
//!   parent named (`subagent_type` of its Task/Agent tool input, `toolUseResult.agentType`),
//!   else "subagent". `agent-acompact-*` files hold the compaction call: kind `compaction`.
//! - Every line names its session (`sessionId`); a file may hold several, one after another.
//!   A line without one (snapshots, summaries) belongs to the file's session at that point.
//! - Line types outside [`KNOWN_TYPES`] are counted, with one warning per file.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::calls::{self, Call, Folded, Line, Session, Usage};
use crate::json::{Fields, Kind, Schema, Shape};

/// Line types the fold knows (the others are counted as unknown).
pub const KNOWN_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "attachment",
    "permission-mode",
    "ai-title",
    "last-prompt",
    "queue-operation",
    "mode",
    "agent-name",
    "worktree-state",
    "custom-title",
    "result",
];

const FIELDS: &[(&str, Shape)] = &[
    ("type", Shape::Scalar),
    ("sessionId", Shape::Scalar),
    ("timestamp", Shape::Scalar),
    ("version", Shape::Scalar),
    ("cwd", Shape::Scalar),
    ("isSidechain", Shape::Scalar),
    ("agentId", Shape::Scalar),
    ("requestId", Shape::Scalar),
    ("parentToolUseID", Shape::Scalar),
    ("message", Shape::Struct),
    ("message.id", Shape::Scalar),
    ("message.model", Shape::Scalar),
    ("message.stop_reason", Shape::Scalar),
    ("message.usage", Shape::Struct),
    ("message.usage.input_tokens", Shape::Scalar),
    ("message.usage.cache_creation_input_tokens", Shape::Scalar),
    ("message.usage.cache_read_input_tokens", Shape::Scalar),
    ("message.usage.output_tokens", Shape::Scalar),
    ("message.usage.cache_creation", Shape::Struct),
    (
        "message.usage.cache_creation.ephemeral_1h_input_tokens",
        Shape::Scalar,
    ),
    (
        "message.usage.cache_creation.ephemeral_5m_input_tokens",
        Shape::Scalar,
    ),
    ("message.usage.server_tool_use", Shape::Struct),
    (
        "message.usage.server_tool_use.web_search_requests",
        Shape::Scalar,
    ),
    (
        "message.usage.server_tool_use.web_fetch_requests",
        Shape::Scalar,
    ),
    ("message.usage.output_tokens_details", Shape::Struct),
    (
        "message.usage.output_tokens_details.thinking_tokens",
        Shape::Scalar,
    ),
    ("message.usage.service_tier", Shape::Scalar),
    ("message.usage.speed", Shape::Scalar),
    ("data", Shape::Struct),
    ("data.type", Shape::Scalar),
    ("data.agentId", Shape::Scalar),
    ("toolUseResult", Shape::Struct),
    ("toolUseResult.agentId", Shape::Scalar),
    ("toolUseResult.agentType", Shape::Scalar),
];

/// The schema nodes the fold reads.
struct Nodes {
    kind: usize,
    session: usize,
    time: usize,
    version: usize,
    cwd: usize,
    sidechain: usize,
    agent: usize,
    request: usize,
    parent_tool: usize,
    message: usize,
    id: usize,
    model: usize,
    stop: usize,
    usage: usize,
    input: usize,
    cache_write: usize,
    cache_read: usize,
    output: usize,
    split: usize,
    one_hour: usize,
    five_minutes: usize,
    web_search: usize,
    web_fetch: usize,
    thinking: usize,
    tier: usize,
    speed: usize,
    data_type: usize,
    data_agent: usize,
    result_agent: usize,
    result_type: usize,
}

impl Nodes {
    fn new(schema: &Schema) -> Nodes {
        let n = |path: &str| schema.find(path).unwrap_or(0);
        Nodes {
            kind: n("type"),
            session: n("sessionId"),
            time: n("timestamp"),
            version: n("version"),
            cwd: n("cwd"),
            sidechain: n("isSidechain"),
            agent: n("agentId"),
            request: n("requestId"),
            parent_tool: n("parentToolUseID"),
            message: n("message"),
            id: n("message.id"),
            model: n("message.model"),
            stop: n("message.stop_reason"),
            usage: n("message.usage"),
            input: n("message.usage.input_tokens"),
            cache_write: n("message.usage.cache_creation_input_tokens"),
            cache_read: n("message.usage.cache_read_input_tokens"),
            output: n("message.usage.output_tokens"),
            split: n("message.usage.cache_creation"),
            one_hour: n("message.usage.cache_creation.ephemeral_1h_input_tokens"),
            five_minutes: n("message.usage.cache_creation.ephemeral_5m_input_tokens"),
            web_search: n("message.usage.server_tool_use.web_search_requests"),
            web_fetch: n("message.usage.server_tool_use.web_fetch_requests"),
            thinking: n("message.usage.output_tokens_details.thinking_tokens"),
            tier: n("message.usage.service_tier"),
            speed: n("message.usage.speed"),
            data_type: n("data.type"),
            data_agent: n("data.agentId"),
            result_agent: n("toolUseResult.agentId"),
            result_type: n("toolUseResult.agentType"),
        }
    }
}

/// What a file is, from its name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Main,
    Subagent,
    Compaction,
}

/// A file's role, the agent id its name gives, and the session its lines belong to when
/// they name none (the session directory of a `subagents/` file, else the file's stem).
fn role_of(path: &Path) -> (Role, Option<String>, String) {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(id) = stem.strip_prefix("agent-") else {
        return (Role::Main, None, stem);
    };
    let role = if id.starts_with("acompact") {
        Role::Compaction
    } else {
        Role::Subagent
    };
    let parent = path.parent();
    let hint = match parent.and_then(Path::file_name) {
        Some(dir) if dir == "subagents" => parent
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned()),
        _ => None,
    };
    (role, Some(id.to_owned()), hint.unwrap_or(stem))
}

/// How one line of a request ranks as its final record: a `stop_reason` first, then more
/// output, then read later (file, line).
type Rank = (bool, i64, usize, i64);

/// One API request, as its lines so far tell it.
struct Request {
    /// The line it was first seen on (earliest stamp, then file and line): its session, kind
    /// and agent.
    owner: (Option<i64>, usize, i64),
    call: Call,
    rank: Rank,
    any_final: bool,
}

/// Earliest first; a line without a stamp after every stamped one.
fn owner_key(owner: (Option<i64>, usize, i64)) -> (bool, i64, usize, i64) {
    (owner.0.is_none(), owner.0.unwrap_or(0), owner.1, owner.2)
}

/// Names of sub-agents, as the parent session gives them.
#[derive(Default)]
struct Names {
    /// agentId -> sub-agent type (`toolUseResult.agentType`).
    by_agent: HashMap<String, String>,
    /// tool_use id -> sub-agent type (the Task/Agent tool input's `subagent_type`).
    by_tool: HashMap<String, String>,
    /// agentId -> the tool_use id that started it (tool results, `agent_progress`).
    tool_of: HashMap<String, String>,
}

impl Names {
    fn of(&self, agent: &str) -> Option<&String> {
        self.by_agent.get(agent).or_else(|| {
            self.tool_of
                .get(agent)
                .and_then(|tool| self.by_tool.get(tool))
        })
    }
}

/// The second look at a line's `message.content`, for the few lines that name sub-agents.
struct Content {
    schema: Schema,
    fields: Fields,
    content: usize,
    item: Schema,
    item_fields: Fields,
    item_type: usize,
    item_id: usize,
    tool_use_id: usize,
    subagent_type: usize,
}

impl Content {
    fn new() -> Content {
        let schema = Schema::new(&[("message", Shape::Struct), ("message.content", Shape::Any)]);
        let item = Schema::new(&[
            ("type", Shape::Scalar),
            ("id", Shape::Scalar),
            ("tool_use_id", Shape::Scalar),
            ("input", Shape::Struct),
            ("input.subagent_type", Shape::Scalar),
        ]);
        let n = |s: &Schema, p: &str| s.find(p).unwrap_or(0);
        Content {
            fields: Fields::new(&schema),
            content: n(&schema, "message.content"),
            item_fields: Fields::new(&item),
            item_type: n(&item, "type"),
            item_id: n(&item, "id"),
            tool_use_id: n(&item, "tool_use_id"),
            subagent_type: n(&item, "input.subagent_type"),
            schema,
            item,
        }
    }

    /// Each content item of `line` as (type, id, tool_use_id, subagent_type).
    fn items(&mut self, line: &[u8]) -> Vec<[Option<String>; 4]> {
        let mut out = Vec::new();
        if crate::json::parse(line, &self.schema, &mut self.fields).is_err() {
            return out;
        }
        let value = self.fields.get(self.content);
        for item in calls::array_items(line, value) {
            if !matches!(
                crate::json::parse(item, &self.item, &mut self.item_fields),
                Ok(Kind::Object)
            ) {
                continue;
            }
            let get = |node: usize| {
                calls::string(item, self.item_fields.get(node)).map(|s| s.into_owned())
            };
            out.push([
                get(self.item_type),
                get(self.item_id),
                get(self.tool_use_id),
                get(self.subagent_type),
            ]);
        }
        out
    }
}

/// One file's state while it is read.
struct FileState {
    index: usize,
    role: Role,
    agent: Option<String>,
    hint: String,
    /// The session of the last line that named one.
    current: Option<String>,
    /// Stamps of the lines read before any line named a session.
    pending: Vec<Option<i64>>,
    unknown: i64,
    first_unknown: Option<(i64, String)>,
}

/// The fold of one group of files.
struct Fold {
    n: Nodes,
    out: Folded,
    sessions: HashMap<String, usize>,
    requests: Vec<Request>,
    keys: HashMap<(String, Option<String>), usize>,
    names: Names,
    content: Content,
}

/// Fold a group of Claude Code files (a project directory's sessions and their sub-agent
/// files) into calls, sessions and issues.
pub fn fold(paths: &[PathBuf]) -> Folded {
    let schema = Schema::new(FIELDS);
    let mut fields = Fields::new(&schema);
    let mut fold = Fold {
        n: Nodes::new(&schema),
        out: Folded {
            agent: "claude-code",
            paths: paths
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            ..Folded::default()
        },
        sessions: HashMap::new(),
        requests: Vec::new(),
        keys: HashMap::new(),
        names: Names::default(),
        content: Content::new(),
    };
    for (index, path) in paths.iter().enumerate() {
        let (role, agent, hint) = role_of(path);
        let mut state = FileState {
            index,
            role,
            agent,
            hint,
            current: None,
            pending: Vec::new(),
            unknown: 0,
            first_unknown: None,
        };
        let mut issues = std::mem::take(&mut fold.out.issues);
        calls::read_file(
            path,
            index,
            &schema,
            &mut fields,
            &mut issues,
            |line, issues| {
                std::mem::swap(issues, &mut fold.out.issues);
                fold.line(line, &mut state);
                std::mem::swap(issues, &mut fold.out.issues);
            },
        );
        fold.out.issues = issues;
        fold.end_file(state);
    }
    fold.finish()
}

impl Fold {
    /// The session named `id`, made on first sight (sessions keep the order they are seen).
    fn session(&mut self, id: &str) -> &mut Session {
        calls::session_of(&mut self.out.sessions, &mut self.sessions, id)
    }

    fn line(&mut self, line: &Line<'_>, state: &mut FileState) {
        let n = &self.n;
        let time = line.time(n.time);
        let named = line.str(n.session).map(|s| s.into_owned());
        let session = match named {
            Some(id) => {
                if state.current.is_none() {
                    let pending = std::mem::take(&mut state.pending);
                    let s = self.session(&id);
                    for t in pending {
                        s.saw(state.index, t);
                    }
                }
                state.current = Some(id.clone());
                Some(id)
            }
            None => state.current.clone(),
        };
        let n = &self.n;
        let version = line.str(n.version).map(|s| s.into_owned());
        let cwd = line.str(n.cwd).map(|s| s.into_owned());
        match &session {
            Some(id) => {
                let s = self.session(id);
                s.saw(state.index, time);
                if let Some(v) = &version {
                    s.version(v, time);
                }
                if s.cwd.is_none() {
                    s.cwd = cwd;
                }
            }
            None => state.pending.push(time),
        }
        let n = &self.n;
        let Some(kind) = line.str(n.kind).map(|s| s.into_owned()) else {
            self.out.issue(
                state.index,
                line.number,
                "error",
                "line has no 'type'; ignored".into(),
            );
            return;
        };
        if !KNOWN_TYPES.contains(&kind.as_str()) {
            state.unknown += 1;
            if state.first_unknown.is_none() {
                state.first_unknown = Some((line.number, kind.clone()));
            }
            if let Some(id) = &session {
                self.session(id).unknown_lines += 1;
            }
            return;
        }
        match kind.as_str() {
            "assistant" => self.assistant(line, state, session, version, time),
            "user" => self.user(line),
            "progress" => {
                let n = &self.n;
                if line.str(n.data_type).as_deref() == Some("agent_progress") {
                    if let (Some(agent), Some(tool)) =
                        (line.str(n.data_agent), line.str(n.parent_tool))
                    {
                        self.names
                            .tool_of
                            .entry(agent.into_owned())
                            .or_insert_with(|| tool.into_owned());
                    }
                }
            }
            _ => {}
        }
    }

    /// A user line: the sub-agent a tool result reports (`toolUseResult.agentId`), by type
    /// or by the tool call that started it.
    fn user(&mut self, line: &Line<'_>) {
        let n = &self.n;
        let Some(agent) = line.str(n.result_agent).map(|s| s.into_owned()) else {
            return;
        };
        if let Some(kind) = line.str(n.result_type) {
            self.names.by_agent.insert(agent, kind.into_owned());
            return;
        }
        let tool = self
            .content
            .items(line.text)
            .into_iter()
            .find_map(|[kind, _, tool, _]| tool.filter(|_| kind.as_deref() == Some("tool_result")));
        if let Some(tool) = tool {
            self.names.tool_of.entry(agent).or_insert(tool);
        }
    }

    fn assistant(
        &mut self,
        line: &Line<'_>,
        state: &FileState,
        session: Option<String>,
        version: Option<String>,
        time: Option<i64>,
    ) {
        if memchr::memmem::find(line.text, b"\"subagent_type\"").is_some() {
            for [kind, id, _, subagent] in self.content.items(line.text) {
                if let (Some("tool_use"), Some(id), Some(subagent)) =
                    (kind.as_deref(), id, subagent)
                {
                    self.names.by_tool.insert(id, subagent);
                }
            }
        }
        let n = &self.n;
        let model = line.str(n.model).map(|s| s.into_owned());
        if model.as_deref() == Some("<synthetic>") {
            return;
        }
        let Some(id) = line.str(n.id).map(|s| s.into_owned()) else {
            let message = if line.get(n.message).kind == Kind::Object {
                "assistant line without message.id; not counted"
            } else {
                "assistant line without a message; not counted"
            };
            self.out
                .issue(state.index, line.number, "error", message.into());
            return;
        };
        if line.get(n.usage).kind != Kind::Object {
            self.out.issue(
                state.index,
                line.number,
                "error",
                "assistant line without message.usage; not counted".into(),
            );
            return;
        }
        if time.is_none() {
            self.out.issue(
                state.index,
                line.number,
                "warning",
                "assistant line without a valid timestamp".into(),
            );
        }
        let usage = self.usage(line);
        let is_final = line.get(n.stop).kind == Kind::Str;
        let rank: Rank = (
            is_final,
            usage.output.unwrap_or(-1),
            state.index,
            line.number,
        );
        let request = line.str(n.request).map(|s| s.into_owned());
        let owner = (time, state.index, line.number);
        let session = session.unwrap_or_else(|| state.hint.clone());
        let sidechain = line.get(n.sidechain).kind == Kind::True;
        let kind = match state.role {
            Role::Compaction => "compaction",
            Role::Subagent => "subagent",
            Role::Main if sidechain => "subagent",
            Role::Main => "main",
        };
        let agent_id = match kind {
            "main" => None,
            _ => line
                .str(n.agent)
                .map(|s| s.into_owned())
                .or_else(|| state.agent.clone()),
        };
        let call = Call {
            file: state.index,
            line: line.number,
            session,
            kind,
            model,
            agent_id,
            api_call_id: Some(id.clone()),
            start_time: time,
            end_time: time,
            usage,
            speed: line.str(n.speed).map(|s| s.into_owned()),
            service_tier: line.str(n.tier).map(|s| s.into_owned()),
            final_usage: is_final,
            agent_version: version,
            ..Call::default()
        };
        let key = (id, request);
        let Some(&at) = self.keys.get(&key) else {
            self.keys.insert(key, self.requests.len());
            self.requests.push(Request {
                owner,
                call,
                rank,
                any_final: is_final,
            });
            return;
        };
        let Some(known) = self.requests.get_mut(at) else {
            return;
        };
        known.any_final |= is_final;
        let (start, end) = (known.call.start_time, known.call.end_time);
        let owned = owner_key(owner) < owner_key(known.owner);
        let (session, kind, agent_id) = if owned {
            known.owner = owner;
            (call.session.clone(), call.kind, call.agent_id.clone())
        } else {
            (
                known.call.session.clone(),
                known.call.kind,
                known.call.agent_id.clone(),
            )
        };
        if rank > known.rank {
            known.rank = rank;
            known.call = call;
        }
        known.call.session = session;
        known.call.kind = kind;
        known.call.agent_id = agent_id;
        known.call.start_time = min_time(start, time);
        known.call.end_time = max_time(end, time);
    }

    /// A line's `message.usage` as the contract counts it: input includes cache reads and
    /// writes; the 1-hour part of cache writes where the log splits them.
    fn usage(&self, line: &Line<'_>) -> Usage {
        let n = &self.n;
        let uncached = line.int(n.input);
        let cache_write = line.int(n.cache_write);
        let cache_read = line.int(n.cache_read);
        let split = line.get(n.split).kind == Kind::Object;
        let one_hour = line.int(n.one_hour);
        let five_minutes = line.int(n.five_minutes);
        Usage {
            input: uncached.map(|u| u + cache_write.unwrap_or(0) + cache_read.unwrap_or(0)),
            cache_read,
            cache_write,
            cache_write_1h: if split && (one_hour.is_some() || five_minutes.is_some()) {
                Some(one_hour.unwrap_or(0))
            } else {
                None
            },
            output: line.int(n.output),
            reasoning: line.int(n.thinking),
            web_search: line.int(n.web_search),
            web_fetch: line.int(n.web_fetch),
        }
    }

    fn end_file(&mut self, state: FileState) {
        if !state.pending.is_empty() {
            let hint = state.hint.clone();
            let s = self.session(&hint);
            for t in &state.pending {
                s.saw(state.index, *t);
            }
            if state.current.is_none() {
                s.unknown_lines += state.unknown;
            }
        }
        if let Some((line, kind)) = state.first_unknown {
            let message = format!(
                "{} line(s) of unknown type (first: {kind:?}); counted, not read",
                state.unknown
            );
            self.out.issue(state.index, line, "warning", message);
        }
    }

    fn finish(mut self) -> Folded {
        for request in self.requests {
            let mut call = request.call;
            call.final_usage = request.any_final;
            if call.kind == "subagent" {
                call.agent_name = Some(
                    call.agent_id
                        .as_deref()
                        .and_then(|a| self.names.of(a))
                        .cloned()
                        .unwrap_or_else(|| "subagent".into()),
                );
            } else if call.kind == "compaction" {
                call.agent_name = Some("compaction".into());
            }
            self.out.calls.push(call);
        }
        self.out.finish();
        self.out
    }
}

fn min_time(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn max_time(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}
