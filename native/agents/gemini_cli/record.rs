//! What a Gemini CLI chat record holds, read off a parsed line: the fields the fold wants
//! ([`Schemas`]), the kind of record a line is ([`Record`]), and a chat message with its usage,
//! its tool requests and its tool results ([`Message`]).
//!
//! The same message schema reads a message written as a line of its own and one listed in a
//! `$set.messages` checkpoint or in a legacy document's `messages` (each such item is parsed
//! as an object of its own), so a message reads alike wherever it is written.
#![forbid(unsafe_code)]

use crate::fold::{array_items, Line};
use crate::read::format;
use crate::read::json::{self, Fields, Kind, Schema, Shape};

/// The fields of a record line (and of a message object inside a checkpoint).
const LINE_FIELDS: &[(&str, Shape)] = &[
    // the session header (and the legacy document's top level)
    ("sessionId", Shape::Scalar),
    ("projectHash", Shape::Scalar),
    ("startTime", Shape::Scalar),
    ("lastUpdated", Shape::Scalar),
    ("kind", Shape::Scalar),
    ("messages", Shape::Any),
    // metadata patches and rewinds
    ("$set", Shape::Struct),
    ("$set.sessionId", Shape::Scalar),
    ("$set.lastUpdated", Shape::Scalar),
    ("$set.messages", Shape::Any),
    ("$rewindTo", Shape::Scalar),
    // a message
    ("id", Shape::Scalar),
    ("timestamp", Shape::Scalar),
    ("type", Shape::Scalar),
    ("model", Shape::Scalar),
    ("content", Shape::Any),
    ("toolCalls", Shape::Any),
    ("tokens", Shape::Struct),
    ("tokens.input", Shape::Scalar),
    ("tokens.output", Shape::Scalar),
    ("tokens.cached", Shape::Scalar),
    ("tokens.thoughts", Shape::Scalar),
    ("tokens.tool", Shape::Scalar),
    ("tokens.total", Shape::Scalar),
];

/// The fields of a content part: text, or a tool's result (`functionResponse`).
const PART_FIELDS: &[(&str, Shape)] = &[
    ("text", Shape::Scalar),
    ("functionResponse", Shape::Struct),
    ("functionResponse.id", Shape::Scalar),
    ("functionResponse.name", Shape::Scalar),
];

/// The fields of a tool call a gemini message requests (`toolCalls[]`; its `result` copies the
/// tool's output, which the next user message carries as well).
const TOOL_FIELDS: &[(&str, Shape)] = &[
    ("id", Shape::Scalar),
    ("name", Shape::Scalar),
    ("args", Shape::Any),
];

/// Message types Gemini CLI writes (`MessageRecord.type`).
pub const MESSAGE_TYPES: &[&str] = &["user", "gemini", "info", "error", "warning"];

/// The schemas of a record line, a content part and a tool call, and the nodes read.
pub struct Schemas {
    pub line: Schema,
    part: Schema,
    tool: Schema,
    n: Nodes,
}

/// The schema nodes read.
struct Nodes {
    session: usize,
    project: usize,
    started: usize,
    updated: usize,
    kind: usize,
    messages: usize,
    set: usize,
    set_session: usize,
    set_updated: usize,
    set_messages: usize,
    rewind: usize,
    id: usize,
    time: usize,
    message_type: usize,
    model: usize,
    content: usize,
    tool_calls: usize,
    tokens: usize,
    /// input, output, cached, thoughts, tool, total
    counts: [usize; 6],
    part_text: usize,
    part_response: usize,
    part_id: usize,
    part_name: usize,
    tool_id: usize,
    tool_name: usize,
    tool_args: usize,
}

impl Default for Schemas {
    fn default() -> Schemas {
        let (line, part, tool) = (
            Schema::new(LINE_FIELDS),
            Schema::new(PART_FIELDS),
            Schema::new(TOOL_FIELDS),
        );
        let l = |path: &str| line.find(path).unwrap_or(0);
        let p = |path: &str| part.find(path).unwrap_or(0);
        let t = |path: &str| tool.find(path).unwrap_or(0);
        let n = Nodes {
            session: l("sessionId"),
            project: l("projectHash"),
            started: l("startTime"),
            updated: l("lastUpdated"),
            kind: l("kind"),
            messages: l("messages"),
            set: l("$set"),
            set_session: l("$set.sessionId"),
            set_updated: l("$set.lastUpdated"),
            set_messages: l("$set.messages"),
            rewind: l("$rewindTo"),
            id: l("id"),
            time: l("timestamp"),
            message_type: l("type"),
            model: l("model"),
            content: l("content"),
            tool_calls: l("toolCalls"),
            tokens: l("tokens"),
            counts: [
                "tokens.input",
                "tokens.output",
                "tokens.cached",
                "tokens.thoughts",
                "tokens.tool",
                "tokens.total",
            ]
            .map(l),
            part_text: p("text"),
            part_response: p("functionResponse"),
            part_id: p("functionResponse.id"),
            part_name: p("functionResponse.name"),
            tool_id: t("id"),
            tool_name: t("name"),
            tool_args: t("args"),
        };
        Schemas {
            line,
            part,
            tool,
            n,
        }
    }
}

/// What a record line is.
pub enum Record {
    /// A session's header (`{sessionId, projectHash, startTime, lastUpdated, kind}`), or a
    /// legacy document's top level: the session id, its start, and whether it is a sub-agent's.
    Header {
        session: String,
        start: Option<i64>,
        subagent: bool,
    },
    /// A metadata patch: a resumed session's id, the time of the write.
    Set {
        session: Option<String>,
        time: Option<i64>,
    },
    /// `$rewindTo`: the message it names and all later ones leave the conversation (not the
    /// bill).
    Rewind(Option<String>),
    /// A message of a type Gemini CLI writes.
    Message,
    /// Anything else: its `type` when it names one.
    Unknown(Option<String>),
}

/// The token counts of a gemini message (`tokens`, from the API's `usageMetadata`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// `promptTokenCount`: the whole prompt, cached tokens included.
    pub input: Option<i64>,
    /// `candidatesTokenCount`: visible output.
    pub output: Option<i64>,
    /// `cachedContentTokenCount`: cache reads, a part of `input`.
    pub cached: Option<i64>,
    /// `thoughtsTokenCount`: reasoning, billed as output.
    pub thoughts: Option<i64>,
    /// `toolUsePromptTokenCount`: prompt tokens of tool use, outside `input`.
    pub tool: Option<i64>,
    /// `totalTokenCount`.
    pub total: Option<i64>,
}

/// A tool request of a gemini message, or a tool result of a user message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tool {
    pub id: Option<String>,
    pub name: Option<String>,
    /// The request's arguments, or the result part, as the log writes them (bytes).
    pub bytes: i64,
}

/// One chat message as a record writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub id: Option<String>,
    /// Its `type` (one of [`MESSAGE_TYPES`]).
    pub kind: String,
    pub time: Option<i64>,
    pub model: Option<String>,
    /// Its usage; None for a message without a `tokens` object (not a call).
    pub tokens: Option<Tokens>,
    /// Bytes of its content other than tool results.
    pub text_bytes: i64,
    pub requests: Vec<Tool>,
    pub results: Vec<Tool>,
}

impl Message {
    /// The bytes it adds to the conversation the model is sent: a prompt's or reply's text,
    /// tool requests and tool results; a notice (`info`, `error`, `warning`) adds none.
    pub fn context_bytes(&self) -> i64 {
        if self.kind != "user" && self.kind != "gemini" {
            return 0;
        }
        let tools = self.requests.iter().chain(&self.results);
        tools.fold(self.text_bytes, |sum, tool| sum.saturating_add(tool.bytes))
    }
}

fn bytes(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Schemas {
    /// What a parsed record line is.
    pub fn record(&self, line: &Line<'_>) -> Record {
        let n = &self.n;
        if line.get(n.set).kind == Kind::Object {
            return Record::Set {
                session: line.str(n.set_session).map(|s| s.into_owned()),
                time: line.time(n.set_updated),
            };
        }
        if line.get(n.rewind).kind != Kind::Missing {
            return Record::Rewind(line.str(n.rewind).map(|s| s.into_owned()));
        }
        let kind = line.str(n.message_type);
        if kind.is_none() {
            if let Some(session) = line.str(n.session) {
                return Record::Header {
                    session: session.into_owned(),
                    start: line.time(n.started).or_else(|| line.time(n.updated)),
                    subagent: line.str(n.kind).as_deref() == Some("subagent"),
                };
            }
        }
        match kind {
            Some(kind) if MESSAGE_TYPES.contains(&&*kind) => Record::Message,
            other => Record::Unknown(other.map(|s| s.into_owned())),
        }
    }

    /// Whether a parsed object is a Gemini chat document's top level (the legacy `.json`):
    /// `sessionId`, `projectHash` and a `messages` array.
    pub fn is_document(&self, line: &Line<'_>) -> bool {
        let n = &self.n;
        line.str(n.session).is_some()
            && line.get(n.project).kind == Kind::Str
            && line.get(n.messages).kind == Kind::Array
    }

    /// Whether a line is a checkpoint: its `$set` lists the conversation (`messages`).
    pub fn is_checkpoint(&self, line: &Line<'_>) -> bool {
        line.get(self.n.set_messages).kind == Kind::Array
    }

    /// The raw message objects a checkpoint (`$set.messages`) or a legacy document
    /// (`messages`) lists.
    pub fn listed<'l>(&self, line: &Line<'l>) -> Vec<&'l [u8]> {
        let n = &self.n;
        let value = match line.get(n.set_messages) {
            v if v.kind == Kind::Array => v,
            _ => line.get(n.messages),
        };
        array_items(line.text, value)
    }

    /// A message record read off a parsed line (or message object).
    pub fn message(&self, line: &Line<'_>) -> Message {
        let n = &self.n;
        let kind = line.str(n.message_type).map(|s| s.into_owned());
        let kind = kind.unwrap_or_default();
        let tokens = (line.get(n.tokens).kind == Kind::Object).then(|| {
            let [input, output, cached, thoughts, tool, total] = n.counts.map(|c| line.int(c));
            Tokens {
                input,
                output,
                cached,
                thoughts,
                tool,
                total,
            }
        });
        let content = line.get(n.content);
        let mut message = Message {
            id: line.str(n.id).map(|s| s.into_owned()),
            time: line.time(n.time),
            model: line.str(n.model).map(|s| s.into_owned()),
            tokens,
            ..Message::default()
        };
        if content.kind == Kind::Array {
            self.parts(line.text, content, &mut message);
        } else {
            message.text_bytes = bytes(format::measured(content).unwrap_or(0));
        }
        if kind == "gemini" {
            message.requests = self.requests(line.text, line.get(n.tool_calls));
        }
        message.kind = kind;
        message
    }

    /// A content array's parts: tool results (`functionResponse`) apart, the rest as text.
    fn parts(&self, text: &[u8], content: json::Value, message: &mut Message) {
        let n = &self.n;
        let mut fields = Fields::new(&self.part);
        for raw in array_items(text, content) {
            let size = bytes(raw.len());
            if !matches!(json::parse(raw, &self.part, &mut fields), Ok(Kind::Object)) {
                message.text_bytes += size;
                continue;
            }
            let part = Line {
                text: raw,
                number: 0,
                fields: &fields,
            };
            if part.get(n.part_response).kind == Kind::Object {
                message.results.push(Tool {
                    id: part.str(n.part_id).map(|s| s.into_owned()),
                    name: part.str(n.part_name).map(|s| s.into_owned()),
                    bytes: size,
                });
            } else {
                let text = part.get(n.part_text);
                message.text_bytes += bytes(format::measured(text).unwrap_or(raw.len()));
            }
        }
    }

    /// The tool calls a gemini message requests, sized by their name and arguments.
    fn requests(&self, text: &[u8], calls: json::Value) -> Vec<Tool> {
        let n = &self.n;
        let mut fields = Fields::new(&self.tool);
        let mut found = Vec::new();
        for raw in array_items(text, calls) {
            if !matches!(json::parse(raw, &self.tool, &mut fields), Ok(Kind::Object)) {
                continue;
            }
            let call = Line {
                text: raw,
                number: 0,
                fields: &fields,
            };
            let name = call.str(n.tool_name).map(|s| s.into_owned());
            let args = format::measured(call.get(n.tool_args)).unwrap_or(0);
            found.push(Tool {
                id: call.str(n.tool_id).map(|s| s.into_owned()),
                bytes: bytes(args + name.as_ref().map_or(0, String::len)),
                name,
            });
        }
        found
    }
}

impl Tokens {
    /// The call's usage in agentcost's terms: input is the prompt (cache reads included)
    /// plus the tool-use prompt, which the API counts apart (`totalTokenCount` = prompt +
    /// candidates + thoughts + tool use); output is the visible output plus the thoughts,
    /// which are billed as output; the thoughts are the reasoning. No cache writes are
    /// logged (unknown, not 0).
    pub fn usage(&self) -> crate::fold::Usage {
        crate::fold::Usage {
            input: self
                .input
                .map(|input| input.saturating_add(self.tool.unwrap_or(0))),
            cache_read: self.cached,
            output: self
                .output
                .map(|output| output.saturating_add(self.thoughts.unwrap_or(0))),
            reasoning: self.thoughts,
            ..crate::fold::Usage::default()
        }
    }

    /// Whether the logged total disagrees with its parts (all known): input + output +
    /// thoughts + tool use.
    pub fn total_differs(&self) -> bool {
        match (self.input, self.output, self.total) {
            (Some(input), Some(output), Some(total)) => {
                let parts = [output, self.thoughts.unwrap_or(0), self.tool.unwrap_or(0)];
                parts.iter().fold(input, |sum, &n| sum.saturating_add(n)) != total
            }
            _ => false,
        }
    }
}
