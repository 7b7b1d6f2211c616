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
//!   without, then the larger `output_tokens` (streamed output only grows), then a line of an
//!   earlier file of the group, then the later line of the file. The key is deduplicated across lines *and* files of the group: resume and
//!   `--continue` write earlier lines again.
//! - A request none of whose lines has a `stop_reason` never got its final usage: it is
//!   counted with `final_usage = false` (its output is a lower bound; CLI 2.1.38/2.1.39 never
//!   write one). That is not an interruption: a call is `interrupted` only where a
//!   `[Request interrupted by user]` line answers its last line (or the `<synthetic>`
//!   placeholder written in its place) and it has no final usage (`Fold::interrupted`).
//! - Not calls: `message.model == "<synthetic>"` (a local placeholder); `progress` lines
//!   (`data.type: agent_progress` embeds a sub-agent's messages, whose own file holds the
//!   call: a request seen only there, its file missing, is counted once from them with a
//!   warning naming it, `Fold::count_echoes`); `toolUseResult.usage` (a restatement of the
//!   sub-agent's last call).
//! - A file's cut-off last line is an issue that says whether it held the only usage line of
//!   a request (the call is lost; `Fold::tell_torn`).
//! - Sub-agent files (`<session>/subagents/agent-<id>.jsonl`, or older flat `agent-<id>.jsonl`
//!   beside the session) carry the parent's `sessionId`: their calls belong to the parent
//!   session, kind `subagent`, `agent_id` = `agentId`, `agent_name` = the sub-agent type the
//!   parent named (`subagent_type` of its Task/Agent tool input, `toolUseResult.agentType`),
//!   else "subagent". `agent-acompact-*` files hold the compaction call: kind `compaction`.
//! - Every line names its session (`sessionId`); a file may hold several, one after another.
//!   A line without one (snapshots, summaries) belongs to the file's session at that point.
//! - Line types outside [`KNOWN_TYPES`] are counted, with one warning per file.
//!
//! **Context items** (what `agentcost top` and the report attribute input cost to): a user
//! line's prompt (its blocks other than tool results; a `isCompactSummary` line is a
//! compaction summary instead) and each tool result; an assistant line's text and tool
//! requests (thinking left out: the API drops it from later turns) and each request's name.
//! Keyed by the line's `uuid` (a resume's copy repeats it; else the line's text), the copy
//! seen first kept, like a request's owner; a compaction file's lines and `<synthetic>`
//! replies add none. A call stands among them at its request's first line.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::fold::{self, kind, Call, Folded, Item, Line, Session, Usage};
use crate::read::json::{Fields, Kind, Schema, Shape};

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
    ("uuid", Shape::Scalar),
    ("parentUuid", Shape::Scalar),
    ("isCompactSummary", Shape::Scalar),
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
    ("data.message", Shape::Struct),
    ("toolUseResult", Shape::Struct),
    ("toolUseResult.agentId", Shape::Scalar),
    ("toolUseResult.agentType", Shape::Scalar),
];

/// The schema nodes the fold reads.
#[derive(Clone, Copy)]
struct Nodes {
    kind: usize,
    uuid: usize,
    parent: usize,
    compact_summary: usize,
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
    data_message: usize,
    result_agent: usize,
    result_type: usize,
}

impl Nodes {
    fn new(schema: &Schema) -> Nodes {
        let n = |path: &str| schema.find(path).unwrap_or(0);
        Nodes {
            kind: n("type"),
            uuid: n("uuid"),
            parent: n("parentUuid"),
            compact_summary: n("isCompactSummary"),
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
            data_message: n("data.message"),
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
/// output, then an earlier file (a copy in a later file changes nothing), then a later line.
type Rank = (bool, i64, std::cmp::Reverse<usize>, i64);

/// One API request, as its lines so far tell it.
struct Request {
    /// (`message.id`, `requestId`).
    key: (String, Option<String>),
    /// The line it was first seen on (earliest stamp, then file and line): its session, kind
    /// and agent.
    owner: (Option<i64>, usize, i64),
    call: Call,
    rank: Rank,
    any_final: bool,
    /// A `[Request interrupted by user]` line answers one of its lines.
    stopped: bool,
}

/// Requests by key, each counted once (see [`Requests::add`]).
#[derive(Default)]
struct Requests {
    list: Vec<Request>,
    keys: HashMap<(String, Option<String>), usize>,
}

impl Requests {
    /// Count `request` (one line of it, or what a part of the logs said of it): a new key is
    /// a new call; a known one keeps the owner seen first, the usage of the best-ranked line,
    /// and the span of all of its lines.
    fn add(&mut self, request: Request) {
        let Some(&at) = self.keys.get(&request.key) else {
            self.keys.insert(request.key.clone(), self.list.len());
            self.list.push(request);
            return;
        };
        let Some(known) = self.list.get_mut(at) else {
            return;
        };
        known.any_final |= request.any_final;
        known.stopped |= request.stopped;
        let start = fold::min_time(known.call.start_time, request.call.start_time);
        let end = fold::max_time(known.call.end_time, request.call.end_time);
        let owner = if owner_key(request.owner) < owner_key(known.owner) {
            known.owner = request.owner;
            &request.call
        } else {
            &known.call
        };
        let (session, kind, agent_id) = (owner.session.clone(), owner.kind, owner.agent_id.clone());
        if request.rank > known.rank {
            known.rank = request.rank;
            known.call = request.call;
        }
        known.call.session = session;
        known.call.kind = kind;
        known.call.agent_id = agent_id;
        known.call.start_time = start;
        known.call.end_time = end;
    }

    /// Mark the request `key` as stopped by the user, when this part of the logs holds it.
    fn stop(&mut self, key: &(String, Option<String>)) {
        if let Some(request) = self.keys.get(key).and_then(|&at| self.list.get_mut(at)) {
            request.stopped = true;
        }
    }
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

/// One block of a line's `message.content`: its type, ids, the sub-agent type a Task/Agent
/// tool input names, and its size as written (its JSON).
#[derive(Default)]
struct Block {
    kind: Option<String>,
    id: Option<String>,
    name: Option<String>,
    tool_use_id: Option<String>,
    subagent_type: Option<String>,
    bytes: i64,
    /// A text block that is Claude Code's mark of a request the user stopped
    /// ([`INTERRUPTED`]).
    interrupt: bool,
}

/// The text Claude Code writes as a user line when the user stops a request in flight (Esc).
/// `[Request interrupted by user for tool use]` is another mark: the request had finished
/// and the user stopped the tool it asked for.
const INTERRUPTED: &str = "[Request interrupted by user]";

/// Whether `value` (a string of `line`) is the [`INTERRUPTED`] mark; its length is checked
/// first, so a long text is never decoded for it.
fn is_interrupt(line: &[u8], value: crate::read::json::Value) -> bool {
    value.kind == Kind::Str
        && value.decoded_len == INTERRUPTED.len()
        && fold::string(line, value).as_deref() == Some(INTERRUPTED)
}

/// The second look at a user or assistant line: its `message.content`.
struct Content {
    schema: Schema,
    fields: Fields,
    content: usize,
    item: Schema,
    item_fields: Fields,
    item_type: usize,
    item_id: usize,
    name: usize,
    tool_use_id: usize,
    subagent_type: usize,
    text: usize,
}

impl Content {
    fn new() -> Content {
        let schema = Schema::new(&[("message", Shape::Struct), ("message.content", Shape::Any)]);
        let item = Schema::new(&[
            ("type", Shape::Scalar),
            ("id", Shape::Scalar),
            ("name", Shape::Scalar),
            ("tool_use_id", Shape::Scalar),
            ("input", Shape::Struct),
            ("input.subagent_type", Shape::Scalar),
            ("text", Shape::Scalar),
        ]);
        let n = |s: &Schema, p: &str| s.find(p).unwrap_or(0);
        Content {
            fields: Fields::new(&schema),
            content: n(&schema, "message.content"),
            item_fields: Fields::new(&item),
            item_type: n(&item, "type"),
            item_id: n(&item, "id"),
            name: n(&item, "name"),
            tool_use_id: n(&item, "tool_use_id"),
            subagent_type: n(&item, "input.subagent_type"),
            text: n(&item, "text"),
            schema,
            item,
        }
    }

    /// The blocks of `line`'s `message.content`; a plain string content is one `text` block.
    fn blocks(&mut self, line: &[u8]) -> Vec<Block> {
        let mut out = Vec::new();
        if crate::read::json::parse(line, &self.schema, &mut self.fields).is_err() {
            return out;
        }
        let value = self.fields.get(self.content);
        if value.kind == Kind::Str {
            out.push(Block {
                kind: Some("text".into()),
                bytes: i64::try_from(value.decoded_len).unwrap_or(i64::MAX),
                interrupt: is_interrupt(line, value),
                ..Block::default()
            });
            return out;
        }
        for item in fold::array_items(line, value) {
            if !matches!(
                crate::read::json::parse(item, &self.item, &mut self.item_fields),
                Ok(Kind::Object)
            ) {
                continue;
            }
            let get = |node: usize| {
                fold::string(item, self.item_fields.get(node)).map(|s| s.into_owned())
            };
            out.push(Block {
                kind: get(self.item_type),
                id: get(self.item_id),
                name: get(self.name),
                tool_use_id: get(self.tool_use_id),
                subagent_type: get(self.subagent_type),
                bytes: i64::try_from(item.len()).unwrap_or(i64::MAX),
                interrupt: is_interrupt(item, self.item_fields.get(self.text)),
            });
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
    /// The `uuid` and request key of the file's last real assistant line, and the `uuid`
    /// and `parentUuid` of its last `<synthetic>` one: what a [`INTERRUPTED`] line answers.
    last_reply: Option<(String, (String, Option<String>))>,
    last_placeholder: Option<(String, Option<String>)>,
    /// The fields of an `agent_progress` line's embedded message.
    echo_fields: Fields,
}

/// The fold of one group of files.
struct Fold {
    n: Nodes,
    out: Folded,
    sessions: HashMap<String, usize>,
    requests: Requests,
    /// Sub-agent requests as the parent's `agent_progress` lines restate them: counted only
    /// where no sub-agent line holds the request (its file is missing).
    echoes: Requests,
    /// (file, line, request key) of each file's cut-off last assistant line.
    torn: Vec<(usize, i64, (String, Option<String>))>,
    names: Names,
    content: Content,
    /// Context items, each keyed by what a copy of it repeats (see [`Fold::items`]).
    items: Vec<(String, Item)>,
    /// Whether to gather the context items at all (reports of calls and money need none).
    with_items: bool,
}

/// Fold a group of Claude Code files (a project directory's sessions and their sub-agent
/// files) into calls, sessions, issues and context items.
pub fn fold(paths: &[PathBuf]) -> Folded {
    fold_with(paths, true)
}

/// [`fold`], gathering the context items only `with_items`: a report of calls and money
/// over a large tree then holds no row per prompt, reply and tool result.
pub fn fold_with(paths: &[PathBuf], with_items: bool) -> Folded {
    let schema = Schema::new(FIELDS);
    let n = Nodes::new(&schema);
    fold::fold_group(paths, "claude-code", &schema, |out| Fold {
        n,
        out,
        sessions: HashMap::new(),
        requests: Requests::default(),
        echoes: Requests::default(),
        torn: Vec::new(),
        names: Names::default(),
        content: Content::new(),
        items: Vec::new(),
        with_items,
    })
}

impl Fold {
    /// The session named `id`, made on first sight (sessions keep the order they are seen).
    fn session(&mut self, id: &str) -> &mut Session {
        fold::session_of(&mut self.out.sessions, &mut self.sessions, id)
    }

    fn line(&mut self, line: &Line<'_>, state: &mut FileState, schema: &Schema) {
        let n = &self.n;
        let time = line.time(n.time);
        let named = line.str(n.session).map(|s| s.into_owned());
        let unnamed = named.is_none();
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
        if unnamed && matches!(kind.as_str(), "user" | "assistant") {
            let message = format!(
                "{kind} line without sessionId; read as part of {}",
                session.as_deref().unwrap_or(&state.hint)
            );
            self.out.issue(state.index, line.number, "warning", message);
        }
        match kind.as_str() {
            "assistant" => {
                let blocks = self.content.blocks(line.text);
                if self.with_items {
                    self.items(line, state, &session, time, &blocks);
                }
                self.assistant(line, state, session, version, time, &blocks);
            }
            "user" => {
                let blocks = self.content.blocks(line.text);
                if self.with_items {
                    self.items(line, state, &session, time, &blocks);
                }
                self.user(line, &blocks);
                if blocks.iter().any(|b| b.interrupt) {
                    self.interrupted(line, state);
                }
            }
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
                    let call = Call {
                        session: session.unwrap_or_else(|| state.hint.clone()),
                        kind: "subagent",
                        agent_id: line.str(self.n.data_agent).map(|s| s.into_owned()),
                        agent_version: version,
                        start_time: time,
                        ..Call::default()
                    };
                    self.echo(line, state, schema, call);
                }
            }
            _ => {}
        }
    }

    /// A user line: the sub-agent a tool result reports (`toolUseResult.agentId`), by type
    /// or by the tool call that started it.
    fn user(&mut self, line: &Line<'_>, blocks: &[Block]) {
        let n = &self.n;
        let Some(agent) = line.str(n.result_agent).map(|s| s.into_owned()) else {
            return;
        };
        if let Some(kind) = line.str(n.result_type) {
            self.names.by_agent.insert(agent, kind.into_owned());
            return;
        }
        let tool = blocks.iter().find_map(|b| {
            (b.kind.as_deref() == Some("tool_result"))
                .then(|| b.tool_use_id.clone())
                .flatten()
        });
        if let Some(tool) = tool {
            self.names.tool_of.entry(agent).or_insert(tool);
        }
    }

    /// A [`INTERRUPTED`] line: the request it answers was stopped by the user. It answers a
    /// request when its `parentUuid` is the request's last line, or a `<synthetic>` line the
    /// CLI wrote in the reply's place; a mark that answers a tool result stopped a request
    /// that wrote no line, so no call of the log was cut.
    fn interrupted(&mut self, line: &Line<'_>, state: &FileState) {
        let Some(mut parent) = line.str(self.n.parent).map(|s| s.into_owned()) else {
            return;
        };
        if let Some((uuid, Some(up))) = &state.last_placeholder {
            if *uuid == parent {
                parent.clone_from(up);
            }
        }
        if let Some((uuid, key)) = &state.last_reply {
            if *uuid == parent {
                self.requests.stop(key);
            }
        }
    }

    /// An `agent_progress` line's embedded sub-agent reply (`data.message`), read like an
    /// assistant line of its own and kept among the echoes (see [`Fold::echoes`]); `call`
    /// holds what the progress line says of it (session, sub-agent, version, stamp).
    fn echo(&mut self, line: &Line<'_>, state: &mut FileState, schema: &Schema, call: Call) {
        let value = line.get(self.n.data_message);
        let Some(text) = line.text.get(value.start..value.end) else {
            return;
        };
        if value.kind != Kind::Object
            || !matches!(
                crate::read::json::parse(text, schema, &mut state.echo_fields),
                Ok(Kind::Object)
            )
        {
            return;
        }
        let inner = Line {
            text,
            number: line.number,
            fields: &state.echo_fields,
        };
        let n = &self.n;
        let reply = inner.str(n.kind).as_deref() == Some("assistant")
            && inner.str(n.model).as_deref() != Some("<synthetic>")
            && inner.get(n.usage).kind == Kind::Object;
        let Some(id) = inner.str(n.id).filter(|_| reply).map(|s| s.into_owned()) else {
            return;
        };
        let time = inner.time(n.time).or(call.start_time);
        let request = self.request(
            &inner,
            state.index,
            id,
            Call {
                start_time: time,
                ..call
            },
        );
        self.echoes.add(request);
    }

    /// The request an assistant line states, `call` holding its session, kind, agent,
    /// version and stamp; `line` may be an `agent_progress` line's embedded message, read at
    /// the progress line's place in file `file`.
    fn request(&self, line: &Line<'_>, file: usize, id: String, call: Call) -> Request {
        let n = &self.n;
        let usage = self.usage(line);
        let is_final = line.get(n.stop).kind == Kind::Str;
        Request {
            key: (id.clone(), line.str(n.request).map(|s| s.into_owned())),
            owner: (call.start_time, file, line.number),
            rank: (
                is_final,
                usage.output.unwrap_or(-1),
                std::cmp::Reverse(file),
                line.number,
            ),
            any_final: is_final,
            stopped: false,
            call: Call {
                file,
                line: line.number,
                model: line.str(n.model).map(|s| s.into_owned()),
                api_call_id: Some(id),
                end_time: call.start_time,
                usage,
                speed: line.str(n.speed).map(|s| s.into_owned()),
                service_tier: line.str(n.tier).map(|s| s.into_owned()),
                final_usage: is_final,
                ..call
            },
        }
    }

    fn assistant(
        &mut self,
        line: &Line<'_>,
        state: &mut FileState,
        session: Option<String>,
        version: Option<String>,
        time: Option<i64>,
        blocks: &[Block],
    ) {
        for block in blocks {
            if let (Some("tool_use"), Some(id), Some(subagent)) =
                (block.kind.as_deref(), &block.id, &block.subagent_type)
            {
                self.names.by_tool.insert(id.clone(), subagent.clone());
            }
        }
        let n = &self.n;
        let uuid = line.str(n.uuid).map(|s| s.into_owned());
        if line.str(n.model).as_deref() == Some("<synthetic>") {
            let parent = line.str(n.parent).map(|s| s.into_owned());
            state.last_placeholder = uuid.map(|uuid| (uuid, parent));
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
        let (kind, agent_id) = self.agent_of(line, state);
        let call = Call {
            session: session.unwrap_or_else(|| state.hint.clone()),
            kind,
            agent_id,
            start_time: time,
            agent_version: version,
            ..Call::default()
        };
        let request = self.request(line, state.index, id, call);
        if let Some(uuid) = uuid {
            state.last_reply = Some((uuid, request.key.clone()));
        }
        self.requests.add(request);
    }

    /// The kind of call a line of this file makes (`main`, `subagent`, `compaction`), and
    /// its sub-agent's id (None for the main agent).
    fn agent_of(&self, line: &Line<'_>, state: &FileState) -> (&'static str, Option<String>) {
        let n = &self.n;
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
        (kind, agent_id)
    }

    /// The context items of a user or assistant line: a user line's prompt text (its
    /// non-tool-result blocks, one `prompt`; a compaction summary when the line says
    /// it is one) and each tool result; an assistant line's text and tool requests (one
    /// `reply`, thinking left out: the API drops it from later turns) and each
    /// request's name. A compaction file's lines restate the conversation it summarises, and
    /// a `<synthetic>` reply never reached a model: neither adds an item. Keyed by the line's
    /// `uuid` (a resume's copy repeats it), else by the line's text.
    fn items(
        &mut self,
        line: &Line<'_>,
        state: &FileState,
        session: &Option<String>,
        time: Option<i64>,
        blocks: &[Block],
    ) {
        let n = &self.n;
        if state.role == Role::Compaction || line.str(n.model).as_deref() == Some("<synthetic>") {
            return;
        }
        let user = line.str(n.kind).as_deref() == Some("user");
        let (_, agent_id) = self.agent_of(line, state);
        let key = match line.str(n.uuid) {
            Some(uuid) => format!("u{uuid}"),
            None => {
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                line.text.hash(&mut hasher);
                format!("h{:x}", hasher.finish())
            }
        };
        let base = Item {
            file: state.index,
            line: line.number,
            session: session.clone().unwrap_or_else(|| state.hint.clone()),
            time,
            event_id: line.str(n.uuid).map(|s| s.into_owned()),
            agent_id,
            ..Item::default()
        };
        let mut found: Vec<Item> = Vec::new();
        let (mut text, mut requests) = (0i64, 0i64);
        for block in blocks {
            match block.kind.as_deref() {
                Some("tool_result") if user => found.push(Item {
                    kind: kind::TOOL_OUTPUT,
                    tool_call_id: block.tool_use_id.clone(),
                    content_bytes: Some(block.bytes),
                    ..base.clone()
                }),
                Some("tool_use") if !user => {
                    requests += block.bytes;
                    found.push(Item {
                        kind: kind::TOOL_CALL,
                        tool_call_id: block.id.clone(),
                        tool_name: block.name.clone(),
                        ..base.clone()
                    });
                }
                Some("thinking" | "redacted_thinking") => {}
                _ => text += block.bytes,
            }
        }
        if text + requests > 0 {
            let item = match (user, line.get(n.compact_summary).kind == Kind::True) {
                (true, true) => kind::COMPACTION,
                (true, false) => kind::PROMPT,
                (false, _) => kind::REPLY,
            };
            found.insert(
                0,
                Item {
                    kind: item,
                    content_bytes: Some(text + requests),
                    tool_request_bytes: (!user).then_some(requests),
                    ..base.clone()
                },
            );
        }
        for (at, mut item) in found.into_iter().enumerate() {
            item.sub = u32::try_from(at + 1).unwrap_or(u32::MAX);
            self.items.push((format!("{key}#{}", item.sub), item));
        }
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
}

/// How an issue names a request: its `requestId`, else its `message.id`.
fn request_name(key: &(String, Option<String>)) -> &str {
    key.1.as_deref().unwrap_or(&key.0)
}

/// The request key an assistant line cut off at the end of its file still names (the line's
/// `"type"` or its message's `"role"` says it is one, whichever the part kept holds): the
/// first `"id"` after `"message":{` and the `"requestId"`.
fn torn_key(text: &[u8]) -> Option<(String, Option<String>)> {
    use memchr::memmem::find;
    find(text, br#""type":"assistant""#).or_else(|| find(text, br#""role":"assistant""#))?;
    let message = find(text, br#""message":{"#)?;
    let id = quoted_after(text.get(message..)?, br#""id":""#)?;
    Some((id, quoted_after(text, br#""requestId":""#)))
}

/// The characters between `key` (ending in a quote) and the next quote.
fn quoted_after(text: &[u8], key: &[u8]) -> Option<String> {
    let at = memchr::memmem::find(text, key)? + key.len();
    let rest = text.get(at..)?;
    let end = memchr::memchr(b'"', rest)?;
    String::from_utf8(rest.get(..end)?.to_vec()).ok()
}

impl Fold {
    /// The echoes of requests no line of the logs states otherwise (their sub-agent's file
    /// is missing) become calls, once each, with one warning per session naming them.
    fn count_echoes(&mut self) {
        let mut lone: BTreeMap<String, Vec<Request>> = BTreeMap::new();
        for echo in std::mem::take(&mut self.echoes.list) {
            if !self.requests.keys.contains_key(&echo.key) {
                lone.entry(echo.call.session.clone())
                    .or_default()
                    .push(echo);
            }
        }
        for (session, echoes) in lone {
            let first = echoes.iter().map(|e| (e.owner.1, e.owner.2)).min();
            let names: Vec<&str> = echoes.iter().map(|e| request_name(&e.key)).collect();
            let message = format!(
                "{} sub-agent request(s) of session {session} appear only in the parent's \
                 agent_progress lines (the sub-agent's own file is missing): counted from \
                 those lines: {}",
                echoes.len(),
                names.join(", ")
            );
            if let Some((file, line)) = first {
                self.out.issue(file, line, "warning", message);
            }
            for echo in echoes {
                self.requests.add(echo);
            }
        }
    }

    /// Say in the issue of each cut-off last line whether the request it began lost its only
    /// usage line (the call is not counted) or is counted from its earlier lines.
    fn tell_torn(&mut self) {
        for (file, line, key) in std::mem::take(&mut self.torn) {
            let counted = self.requests.keys.contains_key(&key)
                || (key.1.is_none() && self.requests.keys.keys().any(|(id, _)| *id == key.0));
            let name = request_name(&key);
            let told = if counted {
                format!("; it held a usage line of request {name}, counted from its other lines (its output may be low)")
            } else {
                format!("; it held the only usage line of request {name}: that call is not counted")
            };
            let issue = self
                .out
                .issues
                .iter_mut()
                .find(|i| i.file == file && i.line == Some(line) && i.severity == "error");
            if let Some(issue) = issue {
                issue.message.push_str(&told);
            }
        }
    }
}

impl fold::GroupFold for Fold {
    /// Take in what a part (one file's fold) found, as if its file were read now.
    fn merge(&mut self, part: Fold) {
        for session in part.out.sessions {
            let id = session.id.clone();
            self.session(&id).absorb(session);
        }
        self.out.issues.extend(part.out.issues);
        self.items.extend(part.items);
        for request in part.requests.list {
            self.requests.add(request);
        }
        for echo in part.echoes.list {
            self.echoes.add(echo);
        }
        self.torn.extend(part.torn);
        self.names.by_agent.extend(part.names.by_agent);
        self.names.by_tool.extend(part.names.by_tool);
        for (agent, tool) in part.names.tool_of {
            self.names.tool_of.entry(agent).or_insert(tool);
        }
    }

    /// Read file `index` (at `path`) into this fold.
    fn read(&mut self, schema: &Schema, index: usize, path: &Path) {
        let mut fields = Fields::new(schema);
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
            last_reply: None,
            last_placeholder: None,
            echo_fields: Fields::new(schema),
        };
        let read = fold::read_file(path, index, schema, &mut fields, |line| {
            self.line(line, &mut state, schema);
        });
        self.out.issues.extend(read.issues);
        if let Some(key) = read.torn.as_deref().and_then(torn_key) {
            self.torn.push((index, read.lines, key));
        }
        self.end_file(state);
    }

    fn finish(mut self) -> Folded {
        self.count_echoes();
        self.tell_torn();
        for request in self.requests.list {
            let mut call = request.call;
            call.final_usage = request.any_final;
            call.interrupted = request.stopped && !request.any_final;
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
        self.out.items = fold::unique_items(self.items);
        self.out.finish();
        self.out
    }
}

/// Lines of this format for the fuzzers (`native/fuzz.rs` damages and mixes them): one of
/// each record the fold reads.
pub const SEEDS: &[&[u8]] = &[
    br#"{"type":"assistant","sessionId":"s1","requestId":"r1","timestamp":"2026-05-01T10:00:01.000Z","version":"2.1.101","message":{"id":"m1","model":"claude-opus-4-6","stop_reason":null,"content":[{"type":"tool_use","id":"t1","name":"Task","input":{"subagent_type":"Explore"}}],"usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":5,"output_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":6}}}}"#,
    br#"{"type":"assistant","sessionId":"s1","requestId":"r1","timestamp":"2026-05-01T10:00:02.000Z","message":{"id":"m1","model":"claude-opus-4-6","stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":70,"server_tool_use":{"web_search_requests":1},"speed":"fast"}}}"#,
    br#"{"type":"user","sessionId":"s2","timestamp":"2026-05-01T10:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"toolUseResult":{"agentId":"a1","usage":{"input_tokens":1}}}"#,
    br#"{"type":"progress","sessionId":"s1","parentToolUseID":"t1","data":{"type":"agent_progress","agentId":"a1","message":{"message":{"id":"m9","usage":{"output_tokens":1}}}}}"#,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::testing::{copies_change_nothing, figures, group, numbered};
    use proptest::prelude::*;

    /// An assistant line of session `s`, request (`id`, `req`), `stop` reason, `out` output
    /// tokens, at second `t`.
    fn reply(s: &str, id: &str, req: Option<&str>, stop: Option<&str>, out: i64, t: u32) -> String {
        let req = req.map_or(String::new(), |r| format!(r#""requestId":"{r}","#));
        let stop = stop.map_or("null".to_owned(), |s| format!("{s:?}"));
        format!(
            r#"{{"type":"assistant","sessionId":"{s}",{req}"timestamp":"2026-05-01T10:00:{t:02}.000Z","version":"2.1.101","message":{{"id":"{id}","model":"claude-opus-4-6","stop_reason":{stop},"usage":{{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":{out},"cache_creation":{{"ephemeral_5m_input_tokens":40,"ephemeral_1h_input_tokens":60}}}}}}}}"#
        )
    }

    fn fold_texts(files: &[(&str, String)]) -> Folded {
        fold(&group(files))
    }

    fn lines(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// (seq, type, agent, tool call, tool name, bytes) of each item, and (seq, call index)
    /// of each call.
    type Rows<'a> = Vec<(
        i64,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
        Option<i64>,
    )>;

    fn items(folded: &Folded) -> Rows<'_> {
        folded
            .items
            .iter()
            .map(|i| {
                (
                    i.seq,
                    i.kind,
                    i.agent_id.as_deref(),
                    i.tool_call_id.as_deref(),
                    i.tool_name.as_deref(),
                    i.content_bytes,
                )
            })
            .collect()
    }

    /// A prompt, a reply streamed as a text line and a tool request line, its tool's result,
    /// a sub-agent's reply, and the next request.
    const CONVERSATION: [&str; 5] = [
        r#"{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2026-05-01T10:00:00Z","message":{"role":"user","content":"fix it"}}"#,
        r#"{"type":"assistant","uuid":"a1","sessionId":"s1","requestId":"r1","timestamp":"2026-05-01T10:00:01Z","message":{"id":"m1","model":"claude-opus-4-6","stop_reason":null,"content":[{"type":"thinking","thinking":"hm"}],"usage":{"input_tokens":9,"output_tokens":1}}}"#,
        r#"{"type":"assistant","uuid":"a2","sessionId":"s1","requestId":"r1","timestamp":"2026-05-01T10:00:02Z","message":{"id":"m1","model":"claude-opus-4-6","stop_reason":"tool_use","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.py"}}],"usage":{"input_tokens":9,"output_tokens":5}}}"#,
        r#"{"type":"user","uuid":"u2","sessionId":"s1","timestamp":"2026-05-01T10:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"print(1)"}]}}"#,
        r#"{"type":"assistant","uuid":"a3","sessionId":"s1","requestId":"r2","timestamp":"2026-05-01T10:00:05Z","message":{"id":"m2","model":"claude-opus-4-6","stop_reason":"end_turn","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":30,"output_tokens":2}}}"#,
    ];

    #[test]
    fn items_are_numbered_with_the_calls_in_log_order() {
        let sub = [
            r#"{"type":"user","uuid":"x1","isSidechain":true,"agentId":"abc","sessionId":"s1","timestamp":"2026-05-01T10:00:03.500Z","message":{"role":"user","content":"look"}}"#,
            r#"{"type":"assistant","uuid":"x2","isSidechain":true,"agentId":"abc","sessionId":"s1","requestId":"r3","timestamp":"2026-05-01T10:00:04Z","message":{"id":"m3","model":"claude-haiku-4-5","stop_reason":"end_turn","content":[{"type":"text","text":"seen"}],"usage":{"input_tokens":4,"output_tokens":1}}}"#,
        ];
        let folded = fold_texts(&[
            ("p/s1.jsonl", lines(&CONVERSATION.map(str::to_owned))),
            (
                "p/s1/subagents/agent-abc.jsonl",
                lines(&sub.map(str::to_owned)),
            ),
        ]);
        let text = |t: &str| i64::try_from(t.len()).expect("small");
        let tool_use =
            r#"{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.py"}}"#;
        let result = r#"{"type":"tool_result","tool_use_id":"t1","content":"print(1)"}"#;
        assert_eq!(
            items(&folded),
            vec![
                (1, kind::PROMPT, None, None, None, Some(6)),
                // 2: the call of request r1, at its first line (the thinking, no item)
                (
                    3,
                    kind::REPLY,
                    None,
                    None,
                    None,
                    Some(text(r#"{"type":"text","text":"ok"}"#) + text(tool_use))
                ),
                (4, kind::TOOL_CALL, None, Some("t1"), Some("Read"), None),
                (
                    5,
                    kind::TOOL_OUTPUT,
                    None,
                    Some("t1"),
                    None,
                    Some(text(result))
                ),
                (6, kind::PROMPT, Some("abc"), None, None, Some(4)),
                // 7: the sub-agent's call
                (
                    8,
                    kind::REPLY,
                    Some("abc"),
                    None,
                    None,
                    Some(text(r#"{"type":"text","text":"seen"}"#))
                ),
                // 9: the call of request r2
                (
                    10,
                    kind::REPLY,
                    None,
                    None,
                    None,
                    Some(text(r#"{"type":"text","text":"done"}"#))
                ),
            ]
        );
        let calls: Vec<_> = folded.calls.iter().map(|c| (c.seq, c.index)).collect();
        assert_eq!(calls, vec![(2, 1), (7, 2), (9, 3)]);
        assert_eq!(folded.items[1].tool_request_bytes, Some(text(tool_use)));
    }

    #[test]
    fn a_resumed_copy_adds_no_item_and_a_summary_resets_the_context() {
        let alone = fold_texts(&[("p/s1.jsonl", lines(&CONVERSATION.map(str::to_owned)))]);
        let mut resumed: Vec<String> = CONVERSATION.iter().map(|l| l.replace("s1", "s2")).collect();
        resumed.push(r#"{"type":"user","uuid":"c1","sessionId":"s2","isCompactSummary":true,"timestamp":"2026-05-01T11:00:00Z","message":{"role":"user","content":"summary of it all"}}"#.to_owned());
        let folded = fold_texts(&[
            ("p/s1.jsonl", lines(&CONVERSATION.map(str::to_owned))),
            ("p/s2.jsonl", lines(&resumed)),
        ]);
        let mut expected = items(&alone);
        expected.push((1, kind::COMPACTION, None, None, None, Some(17)));
        assert_eq!(items(&folded), expected);
        assert!(folded.items.iter().take(5).all(|i| i.session == "s1"));
    }

    #[test]
    fn streamed_reply_takes_its_last_lines_usage_once() {
        let text = lines(&[
            reply("s1", "msg_1", Some("req_1"), None, 1, 1),
            reply("s1", "msg_1", Some("req_1"), None, 9, 2),
            reply("s1", "msg_1", Some("req_1"), Some("end_turn"), 420, 3),
        ]);
        let folded = fold_texts(&[("p/s1.jsonl", text)]);
        assert_eq!(folded.calls.len(), 1);
        let call = &folded.calls[0];
        assert_eq!(call.usage.output, Some(420));
        assert_eq!(call.usage.input, Some(1103));
        assert_eq!(call.usage.cache_write_1h, Some(60));
        assert!(call.final_usage);
        assert_eq!((call.line, call.index, call.kind), (3, 1, "main"));
        assert_eq!(call.start_time, Some(1_777_629_601_000));
        assert_eq!(call.end_time, Some(1_777_629_603_000));
    }

    #[test]
    fn final_usage_copied_on_every_line_is_not_summed() {
        // CLI 2.1.98+: every line of the request carries the final usage.
        let text = lines(&[
            reply("s1", "msg_1", Some("req_1"), Some("tool_use"), 77, 1),
            reply("s1", "msg_1", Some("req_1"), Some("tool_use"), 77, 1),
            reply("s1", "msg_1", Some("req_1"), Some("tool_use"), 77, 2),
        ]);
        let folded = fold_texts(&[("p/s1.jsonl", text)]);
        assert_eq!(figures(&folded)["s1"], [1, 1103, 1000, 100, 60, 77, 0, 0]);
    }

    #[test]
    fn message_id_alone_keys_a_request_without_request_id() {
        let text = lines(&[
            reply("s1", "msg_bdrk_1", None, None, 5, 1),
            reply("s1", "msg_bdrk_1", None, Some("end_turn"), 50, 2),
            reply("s1", "msg_bdrk_2", None, Some("end_turn"), 7, 3),
        ]);
        let folded = fold_texts(&[("p/s1.jsonl", text)]);
        let outputs: Vec<_> = folded.calls.iter().map(|c| c.usage.output).collect();
        assert_eq!(outputs, vec![Some(50), Some(7)]);
    }

    /// A parent session's line restating its sub-agent's request `req` (`agent_progress`),
    /// then the tool result that restates the sub-agent's last usage.
    fn progress_lines(req: &str) -> [String; 2] {
        [
            format!(
                r#"{{"type":"progress","sessionId":"s1","timestamp":"2026-05-01T10:00:02Z","parentToolUseID":"toolu_1","data":{{"type":"agent_progress","agentId":"a1","message":{{"type":"assistant","timestamp":"2026-05-01T10:00:01.500Z","requestId":"{req}","message":{{"id":"msg_sub","model":"claude-haiku-4-5","stop_reason":"end_turn","usage":{{"input_tokens":5,"output_tokens":9}}}}}}}}}}"#
            ),
            r#"{"type":"user","sessionId":"s1","timestamp":"2026-05-01T10:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]},"toolUseResult":{"agentId":"a1","usage":{"input_tokens":5,"output_tokens":9},"totalTokens":14}}"#.to_owned(),
        ]
    }

    #[test]
    fn synthetic_messages_and_tool_result_usage_are_not_calls() {
        let synthetic = r#"{"type":"assistant","sessionId":"s1","timestamp":"2026-05-01T10:00:01Z","message":{"id":"x","model":"<synthetic>","stop_reason":"stop_sequence","usage":{"input_tokens":0,"output_tokens":0}}}"#;
        let [progress, result] = progress_lines("req_sub");
        let sub = reply("s1", "msg_sub", Some("req_sub"), Some("end_turn"), 9, 1);
        let folded = fold_texts(&[
            (
                "p/s1.jsonl",
                lines(&[synthetic.to_owned(), progress, result]),
            ),
            ("p/s1/subagents/agent-a1.jsonl", lines(&[sub])),
        ]);
        // the progress line restates the sub-agent file's call: counted once, from the file
        assert_eq!(folded.calls.len(), 1);
        assert_eq!((folded.calls[0].file, folded.calls[0].line), (1, 1));
        assert_eq!(folded.sessions.len(), 1);
        assert_eq!(folded.sessions[0].lines, 4);
        assert!(folded.issues.is_empty(), "{:?}", folded.issues);
    }

    #[test]
    fn a_sub_agent_request_seen_only_in_progress_lines_is_counted_once_and_named() {
        let [progress, result] = progress_lines("req_011CY18wA");
        let text = lines(&[progress.clone(), progress, result]);
        let folded = fold_texts(&[("p/s1.jsonl", text)]);
        assert_eq!(folded.calls.len(), 1);
        let call = &folded.calls[0];
        assert_eq!(
            (call.kind, call.agent_id.as_deref()),
            ("subagent", Some("a1"))
        );
        assert_eq!((call.usage.input, call.usage.output), (Some(5), Some(9)));
        assert_eq!(call.start_time, Some(1_777_629_601_500));
        assert_eq!(call.session, "s1");
        assert_eq!(folded.sessions[0].subagent_calls, 1);
        assert_eq!(folded.issues.len(), 1);
        let issue = &folded.issues[0];
        assert_eq!((issue.line, issue.severity), (Some(1), "warning"));
        assert!(
            issue.message.contains("agent_progress"),
            "{}",
            issue.message
        );
        assert!(
            issue.message.ends_with(": req_011CY18wA"),
            "{}",
            issue.message
        );
    }

    /// A user line of session `s1` answering line `parent` with `text`.
    fn user_text(uuid: &str, parent: &str, text: &str) -> String {
        format!(
            r#"{{"type":"user","uuid":"{uuid}","parentUuid":"{parent}","sessionId":"s1","timestamp":"2026-05-01T10:00:09Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}]}}}}"#
        )
    }

    /// [`reply`] with its own `uuid`.
    fn reply_at(uuid: &str, id: &str, stop: Option<&str>, t: u32) -> String {
        let line = reply("s1", id, Some(&format!("req_{id}")), stop, 3, t);
        format!(r#"{{"uuid":"{uuid}",{}"#, &line[1..])
    }

    #[test]
    fn only_a_request_the_user_stopped_is_interrupted() {
        let placeholder = r#"{"type":"assistant","uuid":"p4","parentUuid":"a4","sessionId":"s1","timestamp":"2026-05-01T10:00:08Z","message":{"id":"x","model":"<synthetic>","stop_reason":"stop_sequence","usage":{"input_tokens":0,"output_tokens":0}}}"#;
        let text = lines(&[
            // m1 never got its final usage, and nobody stopped it (CLI 2.1.39 writes no stop
            // reason at all)
            reply_at("a1", "m1", None, 1),
            user_text("u1", "a1", "go on"),
            // m2 asked for a tool; the user stopped the tool, not the request
            reply_at("a2", "m2", Some("tool_use"), 2),
            user_text("u2", "a2", "[Request interrupted by user for tool use]"),
            // m3 finished with a tool request; Esc then stopped a request that wrote nothing
            reply_at("a3", "m3", None, 3),
            r#"{"type":"user","uuid":"r3","parentUuid":"a3","sessionId":"s1","timestamp":"2026-05-01T10:00:04Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"ok"}]}}"#.to_owned(),
            user_text("u3", "r3", "[Request interrupted by user]"),
            // m4 was stopped while it streamed: the CLI wrote a placeholder, then the mark
            reply_at("a4", "m4", None, 5),
            placeholder.to_owned(),
            user_text("u4", "p4", "[Request interrupted by user]"),
            // m5 was stopped with no placeholder
            reply_at("a5", "m5", None, 6),
            user_text("u5", "a5", "[Request interrupted by user]"),
        ]);
        let folded = fold_texts(&[("p/s1.jsonl", text)]);
        let states: Vec<_> = folded
            .calls
            .iter()
            .map(|c| (c.api_call_id.as_deref(), c.final_usage, c.interrupted))
            .collect();
        assert_eq!(
            states,
            vec![
                (Some("m1"), false, false),
                (Some("m2"), true, false),
                (Some("m3"), false, false),
                (Some("m4"), false, true),
                (Some("m5"), false, true),
            ]
        );
        let session = &folded.sessions[0];
        assert_eq!(
            (session.calls_without_final_usage, session.interrupted_calls),
            (4, 2)
        );
    }

    #[test]
    fn a_cut_off_last_line_says_whether_it_lost_a_call() {
        let first = reply("s1", "msg_1", Some("req_1"), None, 5, 1);
        let lost = reply("s1", "msg_2", Some("req_2"), Some("end_turn"), 20, 2);
        let cut = |line: &str| line[..line.len() - 40].to_owned();
        let issue_of = |text: String| {
            let folded = fold_texts(&[("p/s1.jsonl", text)]);
            let message = folded.issues.last().map(|i| i.message.clone());
            (folded.calls.len(), message.unwrap_or_default())
        };
        let (calls, message) = issue_of(format!(
            "{first}
{}",
            cut(&lost)
        ));
        assert_eq!(calls, 1);
        assert!(message.contains("(truncated line?)"), "{message}");
        assert!(
            message.ends_with(
                "it held the only usage line of request req_2: that call is not counted"
            ),
            "{message}"
        );
        let (calls, message) = issue_of(format!(
            "{first}
{}",
            cut(&first)
        ));
        assert_eq!(calls, 1);
        assert!(
            message.contains("request req_1, counted from its other lines"),
            "{message}"
        );
    }

    #[test]
    fn a_request_never_finished_is_counted_and_flagged() {
        let text = lines(&[
            reply("s1", "msg_1", Some("req_1"), None, 2, 1),
            reply("s1", "msg_1", Some("req_1"), None, 30, 2),
        ]);
        let folded = fold_texts(&[("p/s1.jsonl", text)]);
        assert_eq!(figures(&folded)["s1"], [1, 1103, 1000, 100, 60, 30, 0, 1]);
        assert!(!folded.calls[0].final_usage);
        assert_eq!(folded.sessions[0].calls_without_final_usage, 1);
    }

    #[test]
    fn resume_copies_in_another_file_count_once() {
        let first = lines(&[
            reply("s1", "msg_1", Some("req_1"), Some("end_turn"), 10, 1),
            reply("s1", "msg_2", Some("req_2"), Some("end_turn"), 20, 2),
        ]);
        let resumed = lines(&[
            reply("s1", "msg_1", Some("req_1"), Some("end_turn"), 10, 1),
            reply("s1", "msg_2", Some("req_2"), Some("end_turn"), 20, 2),
            reply("s2", "msg_3", Some("req_3"), Some("end_turn"), 30, 9),
        ]);
        let folded = fold_texts(&[("p/s1.jsonl", first), ("p/s2.jsonl", resumed)]);
        let f = figures(&folded);
        assert_eq!(f["s1"][0], 2);
        assert_eq!(f["s1"][5], 30);
        assert_eq!(f["s2"][0], 1);
        assert!(folded
            .calls
            .iter()
            .all(|c| c.session != "s1" || c.file == 0));
    }

    #[test]
    fn several_session_ids_in_one_file_are_several_sessions() {
        let text = lines(&[
            r#"{"type":"file-history-snapshot","messageId":"m"}"#.to_owned(),
            reply("s1", "msg_1", Some("req_1"), Some("end_turn"), 10, 1),
            r#"{"type":"system","subtype":"local_command","sessionId":"s1","timestamp":"2026-05-01T10:00:05Z","cwd":"/w"}"#.to_owned(),
            reply("s2", "msg_2", Some("req_2"), Some("end_turn"), 20, 7),
            r#"{"type":"summary","summary":"x"}"#.to_owned(),
        ]);
        let folded = fold_texts(&[("p/transcript.jsonl", text)]);
        let ids: Vec<_> = folded
            .sessions
            .iter()
            .map(|s| (s.id.as_str(), s.lines, s.calls))
            .collect();
        assert_eq!(ids, vec![("s1", 3, 1), ("s2", 2, 1)]);
        assert_eq!(folded.sessions[0].cwd.as_deref(), Some("/w"));
        assert_eq!(folded.sessions[0].agent_version.as_deref(), Some("2.1.101"));
    }

    #[test]
    fn sub_agents_join_their_parent_under_the_type_it_named() {
        let parent = [
            r#"{"type":"assistant","sessionId":"s1","requestId":"req_p","timestamp":"2026-05-01T10:00:01Z","message":{"id":"msg_p","model":"claude-opus-4-6","stop_reason":"tool_use","content":[{"type":"text","text":"go"},{"type":"tool_use","id":"toolu_1","name":"Task","input":{"subagent_type":"Explore","prompt":"look"}}],"usage":{"input_tokens":1,"output_tokens":2}}}"#,
            r#"{"type":"user","sessionId":"s1","timestamp":"2026-05-01T10:00:09Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},"toolUseResult":{"agentId":"abc","usage":{"input_tokens":4,"output_tokens":4}}}"#,
        ];
        let sub = r#"{"type":"assistant","isSidechain":true,"agentId":"abc","sessionId":"s1","requestId":"req_s","timestamp":"2026-05-01T10:00:05Z","message":{"id":"msg_s","model":"claude-haiku-4-5","stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":4}}}"#;
        let flat = r#"{"type":"assistant","isSidechain":true,"agentId":"def","sessionId":"s1","requestId":"req_f","timestamp":"2026-05-01T10:00:06Z","message":{"id":"msg_f","model":"claude-haiku-4-5","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}}"#;
        let compact = r#"{"type":"assistant","isSidechain":true,"agentId":"acompact-1","sessionId":"s1","requestId":"req_c","timestamp":"2026-05-01T10:00:07Z","message":{"id":"msg_c","model":"claude-opus-4-6","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}}"#;
        let folded = fold_texts(&[
            ("p/s1.jsonl", lines(&parent.map(str::to_owned))),
            ("p/s1/subagents/agent-abc.jsonl", format!("{sub}\n")),
            ("p/agent-def.jsonl", format!("{flat}\n")),
            (
                "p/s1/subagents/agent-acompact-1.jsonl",
                format!("{compact}\n"),
            ),
        ]);
        let calls: Vec<_> = folded
            .calls
            .iter()
            .map(|c| {
                (
                    c.session.as_str(),
                    c.kind,
                    c.agent_id.as_deref(),
                    c.agent_name.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                ("s1", "main", None, None),
                ("s1", "subagent", Some("abc"), Some("Explore")),
                ("s1", "subagent", Some("def"), Some("subagent")),
                ("s1", "compaction", Some("acompact-1"), Some("compaction")),
            ]
        );
        let s = &folded.sessions[0];
        assert_eq!(
            (s.calls, s.main_calls, s.subagent_calls, s.compaction_calls),
            (4, 1, 2, 1)
        );
        assert_eq!(s.files, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_reply_without_session_id_joins_the_files_session_with_a_warning() {
        let text = lines(&[
            reply("s1", "msg_1", Some("req_1"), Some("end_turn"), 10, 1),
            reply("s1", "msg_2", Some("req_2"), Some("end_turn"), 20, 2)
                .replace(r#""sessionId":"s1","#, ""),
        ]);
        let folded = fold_texts(&[("p/s1.jsonl", text)]);
        assert_eq!(figures(&folded)["s1"][0], 2);
        let issues: Vec<_> = folded.issues.iter().map(|i| (i.line, i.severity)).collect();
        assert_eq!(issues, vec![(Some(2), "warning")]);
    }

    #[test]
    fn usage_fields_kept_and_no_split_is_null() {
        let line = r#"{"type":"assistant","sessionId":"s1","requestId":"r","timestamp":"2026-05-01T10:00:01Z","message":{"id":"m","model":"claude-opus-4-8","stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":7,"output_tokens":30,"output_tokens_details":{"thinking_tokens":12},"server_tool_use":{"web_search_requests":2,"web_fetch_requests":1},"service_tier":"standard","speed":"fast"}}}"#;
        let folded = fold_texts(&[("p/s1.jsonl", format!("{line}\n"))]);
        let call = &folded.calls[0];
        assert_eq!(
            call.usage,
            Usage {
                input: Some(22),
                cache_read: Some(7),
                cache_write: Some(5),
                cache_write_1h: None,
                output: Some(30),
                reasoning: Some(12),
                web_search: Some(2),
                web_fetch: Some(1),
            }
        );
        assert_eq!(call.speed.as_deref(), Some("fast"));
        assert_eq!(call.service_tier.as_deref(), Some("standard"));
    }

    #[test]
    fn bad_lines_are_issues_and_the_rest_is_counted() {
        let good = reply("s1", "msg_1", Some("req_1"), Some("end_turn"), 10, 1);
        let torn = &good[..good.len() / 2];
        let text = format!(
            "{good}\n{torn}\n\u{0}\u{0}\u{0}{}\n{{\"type\":\"assistant\",\"sessionId\":\"s1\",\"message\":{{\"model\":\"m\",\"usage\":{{}}}}}}\n{{\"type\":\"mystery\",\"sessionId\":\"s1\"}}\n{{\"type\":\"mystery\"}}\n",
            reply("s1", "msg_2", Some("req_2"), Some("end_turn"), 20, 2)
        );
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(b"{\"type\":\"user\",\"sessionId\":\"s1\",\"x\":\"\xff\"}\n");
        let path = group(&[("p/s1.jsonl", bytes)]);
        let folded = fold(&path);
        assert_eq!(folded.calls.len(), 2);
        let issues: Vec<_> = folded.issues.iter().map(|i| (i.line, i.severity)).collect();
        assert_eq!(
            issues,
            vec![
                (Some(2), "error"),
                (Some(3), "warning"),
                (Some(4), "error"),
                (Some(5), "warning"),
                (Some(7), "warning"),
            ]
        );
        assert!(folded.issues[3]
            .message
            .starts_with("2 line(s) of unknown type"));
        assert_eq!(folded.sessions[0].unknown_lines, 2);
        assert_eq!(
            folded.sessions[0].lines, 6,
            "the torn line belongs to no session"
        );
    }

    /// A session of requests, each `(stream, output, final)`: `stream` partial lines before
    /// its last line, which has the output and a stop reason when `final`.
    fn session_lines(requests: &[(usize, i64, bool)]) -> Vec<String> {
        let mut out = Vec::new();
        for (r, &(stream, output, fin)) in requests.iter().enumerate() {
            let (id, req) = (format!("msg_{r}"), format!("req_{r}"));
            let t = u32::try_from(r % 60).unwrap_or(0);
            for k in 0..stream {
                let partial = i64::try_from(k).unwrap_or(0).min(output);
                out.push(reply("s1", &id, Some(&req), None, partial, t));
            }
            let stop = fin.then_some("end_turn");
            out.push(reply("s1", &id, Some(&req), stop, output, t));
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn copies_and_streaming_change_no_figure(
            requests in proptest::collection::vec((0usize..3, 1i64..500, any::<bool>()), 1..6),
            twice in any::<usize>(),
            cut in any::<usize>(),
            extra in 1usize..4,
        ) {
            let base = session_lines(&requests);
            let (expected, same) = copies_change_nothing(fold, &base, twice, cut);
            prop_assert!(same, "a line written twice or copied into a resumed file");
            // the same requests streamed over more partial lines
            let longer: Vec<_> = requests.iter().map(|&(s, o, f)| (s + extra, o, f)).collect();
            let got = figures(&fold_texts(&[("p/s1.jsonl", lines(&session_lines(&longer)))]));
            prop_assert_eq!(&got, &expected);
        }

        #[test]
        fn copies_add_no_item(twice in any::<usize>(), cut in any::<usize>(), first in any::<bool>()) {
            let base: Vec<String> = CONVERSATION.map(str::to_owned).to_vec();
            let alone = fold_texts(&[("p/s1.jsonl", lines(&base))]);
            let expected = items(&alone).len();
            let mut doubled = base.clone();
            let at = twice % doubled.len();
            doubled.insert(at, doubled[at].clone());
            let folded = fold_texts(&[("p/s1.jsonl", lines(&doubled))]);
            prop_assert_eq!(items(&folded).len(), expected);
            let copied = base[..=cut % base.len()].to_vec();
            let files = [("p/s1.jsonl", lines(&base)), ("p/s2.jsonl", lines(&copied))];
            let files = if first { files } else { [files[1].clone(), files[0].clone()] };
            let folded = fold_texts(&files);
            prop_assert!(numbered(&folded));
            prop_assert_eq!(items(&folded), items(&alone));
        }
    }
}
