//! The context items of pi's session lines, in the core's item kinds ([`crate::fold::kind`]).
//!
//! pi turns its messages into the model's context as follows (`convertToLlm`): a `user`
//! message is the prompt; an `assistant` message is the reply, its `toolCall` blocks the tool
//! requests; a `toolResult` the tool's output; `bashExecution` (a `!command` the user ran),
//! `custom` messages and `custom_message` entries reach the model as user messages;
//! `branchSummary` and `compactionSummary` messages and `compaction` / `branch_summary`
//! entries are summaries standing for the history they replace; pi 1.0's `system` message is
//! the instructions. Thinking blocks are left out of a reply's bytes, as the Claude Code fold
//! does. Sizes are the raw JSON bytes the line writes (a block's, the content array's, or a
//! summary's decoded text).
#![forbid(unsafe_code)]

use crate::fold::{self, kind, Item, Line};
use crate::read::json::{self, Fields, Kind, Schema, Shape};

/// One block of an assistant message's `content`.
struct Block {
    kind: Option<String>,
    id: Option<String>,
    name: Option<String>,
    bytes: i64,
}

/// What an item of a line is (see the module documentation).
pub enum Source {
    /// A message of this role.
    Message(String),
    /// A `custom_message` entry.
    CustomEntry,
    /// A `compaction` or `branch_summary` entry.
    Summary,
}

/// The second parse a line's items need: its content arrays, parsed only when items are
/// gathered (a report of calls and money reads no content).
pub struct Content {
    schema: Schema,
    fields: Fields,
    content: usize,
    entry_content: usize,
    message: usize,
    excluded: usize,
    block: Schema,
    block_fields: Fields,
    block_type: usize,
    block_id: usize,
    block_name: usize,
}

fn bytes_of(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Content {
    pub fn new() -> Content {
        let schema = Schema::new(&[
            ("message", Shape::Struct),
            ("message.content", Shape::Any),
            ("message.excludeFromContext", Shape::Scalar),
            ("content", Shape::Any),
        ]);
        let block = Schema::new(&[
            ("type", Shape::Scalar),
            ("id", Shape::Scalar),
            ("name", Shape::Scalar),
        ]);
        let n = |s: &Schema, p: &str| s.find(p).unwrap_or(0);
        Content {
            fields: Fields::new(&schema),
            content: n(&schema, "message.content"),
            entry_content: n(&schema, "content"),
            message: n(&schema, "message"),
            excluded: n(&schema, "message.excludeFromContext"),
            block_fields: Fields::new(&block),
            block_type: n(&block, "type"),
            block_id: n(&block, "id"),
            block_name: n(&block, "name"),
            schema,
            block,
        }
    }

    /// The raw bytes of a value of the line last parsed (None when absent or null).
    fn span(&self, line: &[u8], node: usize) -> Option<i64> {
        let value = self.fields.get(node);
        match value.kind {
            Kind::Missing | Kind::Null => None,
            _ => line
                .get(value.start..value.end)
                .map(|raw| bytes_of(raw.len())),
        }
    }

    /// The blocks of the `message.content` array of the line last parsed.
    fn blocks(&mut self, line: &[u8]) -> Vec<Block> {
        let mut out = Vec::new();
        for raw in fold::array_items(line, self.fields.get(self.content)) {
            if !matches!(
                json::parse(raw, &self.block, &mut self.block_fields),
                Ok(Kind::Object)
            ) {
                continue;
            }
            let get = |node: usize| {
                fold::string(raw, self.block_fields.get(node)).map(|s| s.into_owned())
            };
            out.push(Block {
                kind: get(self.block_type),
                id: get(self.block_id),
                name: get(self.block_name),
                bytes: bytes_of(raw.len()),
            });
        }
        out
    }

    /// The items `line` adds to its session's context (`base` holds what they share), in
    /// their order in the line; `summary` is the decoded size of an entry's `summary`.
    pub fn items(
        &mut self,
        line: &Line<'_>,
        source: &Source,
        base: &Item,
        summary: Option<i64>,
    ) -> Vec<Item> {
        let text = line.text;
        if json::parse(text, &self.schema, &mut self.fields).is_err() {
            return Vec::new();
        }
        let one = |kind: &'static str, bytes: Option<i64>| Item {
            kind,
            content_bytes: bytes,
            ..base.clone()
        };
        match source {
            Source::Summary => vec![one(kind::COMPACTION, summary)],
            Source::CustomEntry => vec![one(kind::PROMPT, self.span(text, self.entry_content))],
            Source::Message(role) => match role.as_str() {
                "user" | "custom" => vec![one(kind::PROMPT, self.span(text, self.content))],
                "bashExecution" if self.fields.get(self.excluded).kind != Kind::True => {
                    vec![one(kind::PROMPT, self.span(text, self.message))]
                }
                "system" => vec![one(kind::SYSTEM, self.span(text, self.message))],
                "branchSummary" | "compactionSummary" => {
                    vec![one(kind::COMPACTION, self.span(text, self.message))]
                }
                "toolResult" => vec![one(kind::TOOL_OUTPUT, self.span(text, self.content))],
                "assistant" => self.reply(text, base),
                _ => Vec::new(),
            },
        }
    }

    /// An assistant message: one `reply` (its text and tool requests; thinking
    /// left out), then a `tool_call` naming each tool requested.
    fn reply(&mut self, text: &[u8], base: &Item) -> Vec<Item> {
        let (mut said, mut requests) = (0i64, 0i64);
        let mut starts = Vec::new();
        for block in self.blocks(text) {
            match block.kind.as_deref() {
                Some("toolCall") => {
                    requests += block.bytes;
                    starts.push(Item {
                        kind: kind::TOOL_CALL,
                        tool_call_id: block.id,
                        tool_name: block.name,
                        ..base.clone()
                    });
                }
                Some("thinking") => {}
                _ => said += block.bytes,
            }
        }
        if said + requests == 0 {
            return starts;
        }
        let mut out = vec![Item {
            kind: kind::REPLY,
            content_bytes: Some(said + requests),
            tool_request_bytes: Some(requests),
            ..base.clone()
        }];
        out.extend(starts);
        out
    }
}
