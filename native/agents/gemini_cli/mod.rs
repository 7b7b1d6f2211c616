//! The Gemini CLI fold: chat recordings (`~/.gemini/tmp/<project>/chats/session-*.jsonl`,
//! sub-agents' `chats/<parent sessionId>/<sessionId>.jsonl`, and the legacy one-document
//! `session-*.json` written before April 2026) in, one call per model response out.
//!
//! **Records.** A JSON-lines recording opens with a header `{sessionId, projectHash,
//! startTime, lastUpdated, kind}`; then messages `{id, timestamp, type, content, ...}`
//! (`type`: `user`, `gemini`, `info`, `error`, `warning`), metadata patches `{"$set": {...}}`
//! (`lastUpdated`; `messages`, a checkpoint listing the whole conversation; `sessionId` on a
//! resume; `summary`, ...) and `{"$rewindTo": id}` (the message and all later ones leave the
//! conversation). A message line *upserts* by id: Gemini CLI writes a reply when it arrives,
//! again when its tokens come, and again with its `toolCalls`. A header later in a file starts
//! another session. A legacy document is the header's fields plus `messages[]`, read as a
//! header followed by its messages (each at the line it starts on).
//!
//! **Calls.** One call per distinct (file's session id, message id) of a `gemini` message
//! with a `tokens` object, whether written as a line of its own or listed in a checkpoint;
//! its usage is its last copy's (a copy with other tokens than an earlier one is a warning).
//! A rewound message, or one a compression checkpoint no longer lists, was sent and billed:
//! it still counts. A gemini message without `tokens` (a compression's synthetic turns) is no
//! call. Ids are per session (every session's `<session_context>` message has the same id),
//! so a message is keyed by its session too; a legacy document and the JSON-lines file its
//! resume wrote name the same session, so a message in both counts once.
//!
//! **Tokens** (`tokens`, the API's `usageMetadata`): `input` (`promptTokenCount`) is the
//! whole prompt with the `cached` tokens (`cachedContentTokenCount`, cache reads) inside it;
//! `tool` (`toolUsePromptTokenCount`) is prompt-side tool-use input the API counts apart, so
//! `input_tokens` = input + tool; `thoughts` (`thoughtsTokenCount`) are billed as output, so
//! `output_tokens` = output + thoughts and `reasoning_tokens` = thoughts. No cache writes are
//! logged (null). A `total` other than input + output + thoughts + tool is a warning.
//!
//! **Sub-agents.** A header with `kind: "subagent"` in `chats/<parent>/` makes its calls
//! `subagent` calls of the parent session (`agent_id`: its own session id); where the parent's
//! id is not known from the path, the sub-agent is a session of its own.
//!
//! **Context items**: each distinct message's last state, where it was first written: a
//! user prompt (`prompt`), its tool results (`functionResponse` parts,
//! `tool_output`), a gemini reply (`reply`, its tool requests'
//! names and arguments as `tool_request_bytes`) and each tool it requests
//! (`tool_call`). `info`, `error` and `warning` messages are the CLI's notices,
//! never sent to the model: no items. Where messages leave the conversation (a rewind, a
//! checkpoint that no longer lists them: `/compress`), the conversation left is one
//! `compaction` item (see [`Conversation`]): later calls were sent that,
//! not what left.
#![forbid(unsafe_code)]

mod conversation;
mod document;
mod record;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fold::{self, kind, Call, Folded, Item, Line};
use crate::read::json::{self, Fields, Kind, Schema};

use conversation::Conversation;
use record::{Message, Record, Schemas};

/// The agent id (the registry's `Agent.id`).
pub const AGENT: &str = "gemini-cli";

/// The session a file's records belong to at the moment.
#[derive(Clone)]
struct Current {
    /// The session id the file's records name (a message's key).
    id: String,
    /// The session its calls and items join: its own, or a sub-agent's parent.
    session: String,
    kind: &'static str,
    agent_id: Option<String>,
}

impl Current {
    fn new(id: String, subagent: bool, parent: Option<&str>) -> Current {
        let session = match parent {
            Some(parent) if subagent => parent.to_owned(),
            _ => id.clone(),
        };
        Current {
            kind: if subagent { "subagent" } else { "main" },
            agent_id: subagent.then(|| id.clone()),
            session,
            id,
        }
    }

    /// A resume names the session `id` (`$set.sessionId`).
    fn rename(&mut self, id: String) {
        if self.kind == "subagent" {
            self.agent_id = Some(id.clone());
        } else {
            self.session.clone_from(&id);
        }
        self.id = id;
    }
}

/// A distinct message of the group: its last state, where it was first written.
struct Entry {
    current: Current,
    file: usize,
    line: i64,
    /// Its place among the messages of its line (a checkpoint lists several).
    sub: u32,
    message: Message,
    /// First written in a checkpoint that replaced the conversation: the replacement's item
    /// stands for it (see [`Conversation`]), so it adds no item of its own.
    covered: bool,
}

/// A message's key: (its file's session id, its id); a message without an id has none.
type Key = (String, String);

struct Fold {
    schemas: Arc<Schemas>,
    out: Folded,
    index: HashMap<String, usize>,
    entries: Vec<Entry>,
    keys: HashMap<Key, usize>,
    /// The conversation replacements' items (see [`Conversation`]).
    resets: Vec<Item>,
    /// Whether to gather the context items at all (reports of calls and money need none).
    with_items: bool,
}

/// Fold a group of Gemini CLI chat recordings into calls, sessions, issues and context items.
pub fn fold(paths: &[PathBuf]) -> Folded {
    fold_with(paths, true)
}

/// [`fold`], gathering the context items only `with_items`.
pub fn fold_with(paths: &[PathBuf], with_items: bool) -> Folded {
    let schemas = Arc::new(Schemas::default());
    let line_schema = schemas.line.clone();
    fold::fold_group(paths, AGENT, &line_schema, |out| Fold {
        schemas: Arc::clone(&schemas),
        out,
        index: HashMap::new(),
        entries: Vec::new(),
        keys: HashMap::new(),
        resets: Vec::new(),
        with_items,
    })
}

/// Where a file sits in a Gemini home: the session its lines belong to before any header
/// (its name's stem), the parent session a sub-agent's file names (`chats/<parent>/`), and
/// the project directory (`tmp/<project>/`, holding `chats/`).
struct Place {
    hint: String,
    parent: Option<String>,
    project: Option<PathBuf>,
}

impl Place {
    fn of(path: &Path) -> Place {
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
        };
        let dir = path.parent();
        let up = dir.and_then(Path::parent);
        let (parent, project) = if name(dir).as_deref() == Some("chats") {
            (None, up)
        } else if name(up).as_deref() == Some("chats") {
            (name(dir), up.and_then(Path::parent))
        } else {
            (None, None)
        };
        Place {
            hint: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            parent,
            project: project.map(Path::to_path_buf),
        }
    }

    /// The project's folder as Gemini CLI noted it (`<project>/.project_root`), if it did.
    fn project_root(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.project.as_ref()?.join(".project_root")).ok()?;
        let root = text.trim();
        (!root.is_empty() && root.len() < 4096 && !root.contains('\n')).then(|| root.to_owned())
    }
}

/// Lines of unknown kind in a file: how many, and the first's number and type.
type Unknown = (i64, Option<(i64, String)>);

impl Fold {
    /// The session `current`'s lines join, seen at `time` in file `file`.
    fn saw(&mut self, current: &Current, file: usize, time: Option<i64>) {
        fold::session_of(&mut self.out.sessions, &mut self.index, &current.session).saw(file, time);
    }

    /// One record line of a JSON-lines recording.
    fn line(
        &mut self,
        line: &Line<'_>,
        file: usize,
        place: &Place,
        (current, conversation): (&mut Current, &mut Conversation),
        unknown: &mut Unknown,
    ) {
        let schemas = Arc::clone(&self.schemas);
        match schemas.record(line) {
            Record::Header {
                session,
                start,
                subagent,
            } => {
                *current = Current::new(session, subagent, place.parent.as_deref());
                *conversation = Conversation::starting(start);
                self.saw(current, file, start);
            }
            Record::Set { session, time } => {
                if let Some(id) = session.filter(|id| *id != current.id) {
                    current.rename(id);
                }
                self.saw(current, file, time);
                conversation.last_time = time.or(conversation.last_time);
                if schemas.is_checkpoint(line) {
                    self.checkpoint(line, file, current, conversation);
                }
            }
            Record::Rewind(target) => {
                self.saw(current, file, None);
                if target.is_some_and(|id| conversation.rewind(&id)) {
                    self.reset(current, conversation, file, line.number);
                }
            }
            Record::Message => {
                let message = schemas.message(line);
                self.saw(current, file, message.time);
                conversation.last_time = message.time.or(conversation.last_time);
                if let Some(id) = &message.id {
                    conversation.add(id, message.context_bytes());
                }
                self.message(current, file, (line.number, 0), message, false);
            }
            Record::Unknown(kind) => {
                self.saw(current, file, None);
                let session =
                    fold::session_of(&mut self.out.sessions, &mut self.index, &current.session);
                session.unknown_lines += 1;
                unknown.0 += 1;
                if unknown.1.is_none() {
                    let kind = kind.unwrap_or_else(|| "(none)".into());
                    unknown.1 = Some((line.number, kind));
                }
            }
        }
    }

    /// A checkpoint: the conversation as it now stands, each message read as one of its own
    /// at the checkpoint's line. Where messages left the conversation, the replacement is
    /// an item of its own and its new messages add none (see [`Conversation`]).
    fn checkpoint(
        &mut self,
        line: &Line<'_>,
        file: usize,
        current: &Current,
        conversation: &mut Conversation,
    ) {
        let schemas = Arc::clone(&self.schemas);
        let mut fields = Fields::new(&schemas.line);
        let mut messages = Vec::new();
        for (at, raw) in schemas.listed(line).into_iter().enumerate() {
            let sub = u32::try_from(at + 1).unwrap_or(u32::MAX);
            if !matches!(
                json::parse(raw, &schemas.line, &mut fields),
                Ok(Kind::Object)
            ) {
                let message = format!(
                    "checkpoint message {} is not a JSON object; ignored",
                    at + 1
                );
                self.out.issue(file, line.number, "warning", message);
                continue;
            }
            let item = Line {
                text: raw,
                number: line.number,
                fields: &fields,
            };
            if matches!(schemas.record(&item), Record::Message) {
                messages.push((sub, schemas.message(&item)));
            }
        }
        let listed = messages
            .iter()
            .filter_map(|(_, m)| Some((m.id.clone()?, m.context_bytes())))
            .collect();
        let replaced = conversation.replace(listed);
        if replaced {
            self.reset(current, conversation, file, line.number);
        }
        for (sub, message) in messages {
            self.message(current, file, (line.number, sub), message, replaced);
        }
    }

    /// Messages left the conversation at (`file`, `line`): the conversation left is an item.
    fn reset(&mut self, current: &Current, conversation: &Conversation, file: usize, line: i64) {
        self.resets.push(Item {
            file,
            line,
            sub: 1,
            session: current.session.clone(),
            time: conversation.last_time,
            kind: kind::COMPACTION,
            agent_id: current.agent_id.clone(),
            content_bytes: Some(conversation.bytes()),
            ..Item::default()
        });
    }

    /// A message written at (`file`, `line`, `sub`): a new one, or a later copy of one seen;
    /// `covered`: written in a checkpoint that replaced the conversation.
    fn message(
        &mut self,
        current: &Current,
        file: usize,
        (line, sub): (i64, u32),
        message: Message,
        covered: bool,
    ) {
        let Some(id) = message.id.clone() else {
            if message.kind == "gemini" && message.tokens.is_some() {
                let text = "gemini message without an id: counted as a call of its own";
                self.out.issue(file, line, "warning", text.into());
            }
            self.entries.push(Entry {
                current: current.clone(),
                file,
                line,
                sub,
                message,
                covered,
            });
            return;
        };
        let key = (current.id.clone(), id);
        match self.keys.get(&key).and_then(|&at| self.entries.get_mut(at)) {
            Some(entry) => {
                if upsert(&mut entry.message, message) {
                    self.out
                        .issue(file, line, "warning", changed_tokens(&key.1));
                }
            }
            None => {
                self.keys.insert(key, self.entries.len());
                self.entries.push(Entry {
                    current: current.clone(),
                    file,
                    line,
                    sub,
                    message,
                    covered,
                });
            }
        }
    }

    /// The calls and the context items of the distinct messages.
    fn calls_and_items(&mut self) -> (Vec<Call>, Vec<Item>) {
        let (mut calls, mut items) = (Vec::new(), Vec::new());
        for entry in &self.entries {
            let message = &entry.message;
            let cur = &entry.current;
            if message.kind == "gemini" {
                if let Some(tokens) = message.tokens {
                    if tokens.total_differs() {
                        let text = "tokens.total is not input + output + thoughts + tool; the parts are used";
                        self.out
                            .issue(entry.file, entry.line, "warning", text.into());
                    }
                    calls.push(Call {
                        file: entry.file,
                        line: entry.line,
                        session: cur.session.clone(),
                        kind: cur.kind,
                        model: message.model.clone(),
                        agent_id: cur.agent_id.clone(),
                        api_call_id: message.id.clone(),
                        start_time: message.time,
                        end_time: message.time,
                        usage: tokens.usage(),
                        final_usage: true,
                        ..Call::default()
                    });
                }
            }
            if self.with_items && !entry.covered {
                items.extend(items_of(entry));
            }
        }
        (calls, items)
    }
}

/// Take a later copy of a message into its entry: the last state wins, but a copy without
/// tokens, a model or tool calls keeps those of the earlier. True when both copies carry
/// tokens and they differ.
fn upsert(kept: &mut Message, copy: Message) -> bool {
    let changed = matches!((kept.tokens, copy.tokens), (Some(a), Some(b)) if a != b);
    kept.tokens = copy.tokens.or(kept.tokens);
    kept.model = copy.model.or(kept.model.take());
    kept.time = kept.time.or(copy.time);
    if !copy.requests.is_empty() {
        kept.requests = copy.requests;
    }
    if !copy.results.is_empty() {
        kept.results = copy.results;
    }
    if copy.text_bytes > 0 {
        kept.text_bytes = copy.text_bytes;
    }
    if kept.kind.is_empty() {
        kept.kind = copy.kind;
    }
    changed
}

fn changed_tokens(id: &str) -> String {
    format!("message {id} written again with other tokens; the last copy's are used")
}

/// The context items a message adds (see the module documentation).
fn items_of(entry: &Entry) -> Vec<Item> {
    let message = &entry.message;
    let base = Item {
        file: entry.file,
        line: entry.line,
        session: entry.current.session.clone(),
        time: message.time,
        event_id: message.id.clone(),
        agent_id: entry.current.agent_id.clone(),
        ..Item::default()
    };
    let first = entry.sub.saturating_mul(64);
    let mut found = Vec::new();
    match message.kind.as_str() {
        "user" => {
            if message.text_bytes > 0 || message.results.is_empty() {
                found.push(Item {
                    kind: kind::PROMPT,
                    content_bytes: Some(message.text_bytes),
                    ..base.clone()
                });
            }
            for result in &message.results {
                found.push(Item {
                    kind: kind::TOOL_OUTPUT,
                    tool_call_id: result.id.clone(),
                    tool_name: result.name.clone(),
                    content_bytes: Some(result.bytes),
                    ..base.clone()
                });
            }
        }
        "gemini" => {
            let requests: i64 = message.requests.iter().map(|r| r.bytes).sum();
            if message.text_bytes + requests > 0 {
                found.push(Item {
                    kind: kind::REPLY,
                    content_bytes: Some(message.text_bytes + requests),
                    tool_request_bytes: Some(requests),
                    ..base.clone()
                });
            }
            for request in &message.requests {
                found.push(Item {
                    kind: kind::TOOL_CALL,
                    tool_call_id: request.id.clone(),
                    tool_name: request.name.clone(),
                    ..base.clone()
                });
            }
        }
        _ => {}
    }
    for (at, item) in found.iter_mut().enumerate() {
        item.sub = first.saturating_add(u32::try_from(at + 1).unwrap_or(63).min(63));
    }
    found
}

impl fold::GroupFold for Fold {
    /// Read file `file` (at `path`): a legacy document (`.json`) whole, else line by line.
    fn read(&mut self, schema: &Schema, file: usize, path: &Path) {
        let place = Place::of(path);
        let first = self.out.sessions.len();
        if path.extension().is_some_and(|e| e == "json") {
            self.document(file, path, &place);
        } else {
            let mut fields = Fields::new(schema);
            let mut current = Current::new(place.hint.clone(), false, None);
            let mut conversation = Conversation::default();
            let mut unknown: Unknown = (0, None);
            let read = fold::read_file(path, file, schema, &mut fields, |line| {
                let state = (&mut current, &mut conversation);
                self.line(line, file, &place, state, &mut unknown);
            });
            self.out.issues.extend(read.issues);
            if let (count, Some((line, kind))) = unknown {
                let message =
                    format!("{count} line(s) of unknown type (first: {kind:?}); counted, not read");
                self.out.issue(file, line, "warning", message);
            }
        }
        if let Some(root) = place.project_root() {
            for session in self.out.sessions.iter_mut().skip(first) {
                session.cwd.get_or_insert_with(|| root.clone());
            }
        }
    }

    /// Take in what a part (a later file's fold) found, as if its file were read now: its
    /// messages upsert those already seen.
    fn merge(&mut self, part: Fold) {
        for session in part.out.sessions {
            let id = session.id.clone();
            fold::session_of(&mut self.out.sessions, &mut self.index, &id).absorb(session);
        }
        self.out.issues.extend(part.out.issues);
        self.resets.extend(part.resets);
        let mut keyed: HashMap<usize, Key> = part.keys.into_iter().map(|(k, at)| (at, k)).collect();
        for (at, entry) in part.entries.into_iter().enumerate() {
            let Some(key) = keyed.remove(&at) else {
                self.entries.push(entry);
                continue;
            };
            match self.keys.get(&key).and_then(|&i| self.entries.get_mut(i)) {
                Some(kept) => {
                    let (file, line) = (entry.file, entry.line);
                    if upsert(&mut kept.message, entry.message) {
                        self.out
                            .issue(file, line, "warning", changed_tokens(&key.1));
                    }
                }
                None => {
                    self.keys.insert(key, self.entries.len());
                    self.entries.push(entry);
                }
            }
        }
    }

    fn finish(mut self) -> Folded {
        let (calls, mut items) = self.calls_and_items();
        if self.with_items {
            // a copied file replays its rewinds: each replacement once
            let keyed = std::mem::take(&mut self.resets).into_iter().map(|item| {
                let key = format!("{}@{:?}#{:?}", item.session, item.time, item.content_bytes);
                (key, item)
            });
            items.extend(fold::unique_items(keyed.collect()));
        }
        self.out.calls = calls;
        self.out.items = items;
        self.out.finish();
        self.out
    }
}

/// Lines of this format for the fuzzers (`native/fuzz.rs` damages and mixes them): one of
/// each record the fold reads.
pub const SEEDS: &[&[u8]] = &[
    br#"{"sessionId":"g1","projectHash":"ab12","startTime":"2026-06-12T10:55:16.719Z","lastUpdated":"2026-06-12T10:55:16.719Z","kind":"main"}"#,
    br#"{"sessionId":"g2","projectHash":"ab12","startTime":"2026-06-12T10:55:16.719Z","kind":"subagent"}"#,
    br#"{"id":"u1","timestamp":"2026-06-12T10:55:45.068Z","type":"user","content":[{"text":"Reply with: one"}]}"#,
    br#"{"id":"m1","timestamp":"2026-06-12T10:56:16.027Z","type":"gemini","content":"one","thoughts":[],"tokens":{"input":11480,"output":1,"cached":40,"thoughts":210,"tool":3,"total":11694},"model":"gemini-3.5-flash"}"#,
    br#"{"id":"m1","timestamp":"2026-06-12T10:56:16.027Z","type":"gemini","content":"","tokens":{"input":11480,"output":1,"cached":40,"thoughts":210,"tool":3,"total":11694},"model":"gemini-3.5-flash","toolCalls":[{"id":"t1","name":"glob","args":{"pattern":"**/*"},"result":[{"functionResponse":{"id":"t1","name":"glob","response":{"output":"x"}}}]}]}"#,
    br#"{"id":"u2","timestamp":"2026-06-12T10:57:03.831Z","type":"user","content":[{"functionResponse":{"id":"t1","name":"glob","response":{"output":"x"}}}]}"#,
    br#"{"$set":{"lastUpdated":"2026-06-12T10:56:16.027Z"}}"#,
    br#"{"$set":{"sessionId":"g1","messages":[{"id":"m0","timestamp":"2026-06-12T10:50:00Z","type":"gemini","content":[{"text":"a"}],"tokens":{"input":9,"output":2,"thoughts":1,"total":12},"model":"gemini-2.5-pro"}]}}"#,
    br#"{"$rewindTo":"u1"}"#,
    br#"{"id":"i1","timestamp":"2026-06-12T10:58:00Z","type":"info","content":"Request cancelled."}"#,
];
