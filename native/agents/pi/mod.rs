//! The pi fold: pi-coding-agent's session files (`~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl`)
//! and OpenClaw's, which are written in pi's format (`~/.openclaw/agents/<agentId>/sessions/<id>.jsonl`),
//! in; one call per provider request out.
//!
//! A session file opens with a header `{"type":"session","version":3,"id","timestamp","cwd"}`
//! (`parentSession`: the file a `/fork`, `/clone` or sub-agent session came from); every other
//! line is an entry with `type`, `id`, `parentId` (the tree) and `timestamp`.
//!
//! **Sessions.** A header starts a session (its `id`); a file can hold several one after
//! another (a recorder appends each session file it sees), so each header starts the next.
//! Lines before any header belong to the session the file name gives (`<ts>_<uuid>`: the
//! uuid). A line stamped before its session's header is a copy of an older session's line (a
//! fork repeats its parent's entries with their own stamps): it does not move the session's
//! start or end.
//!
//! **Calls.** pi writes each provider request's finished `AssistantMessage` once, as a
//! `message` entry with `role:"assistant"`, aborted and failed requests included; so a call is
//! such a line, on whatever branch of the tree it stands (a branch left by `/tree` was paid).
//! Its key is `message.responseId`, else the entry `id` with `message.timestamp`, else the
//! line's text: across the files of a group each key counts once (a `/fork` or `/clone` file,
//! an earlier snapshot of a file, a copied recording repeat the lines byte for byte). Of the
//! copies, the one in the session whose header is oldest is kept (a copy is written after its
//! source), then the first in file and line order.
//! Usage is `message.usage`: `input` is uncached input, so `input_tokens` = `input` +
//! `cacheRead` + `cacheWrite`; `output` includes `reasoning` (pi ≥ 0.83), which is
//! `reasoning_tokens`, never added. The model and provider are the line's own
//! (`message.model`, `message.provider`; `model_change` entries are not read for it).
//! `usage.cost.total` is pi's own estimate from its model table: the call's logged cost, as
//! the log writes the number. `stopReason` `aborted` (Esc) is an interrupted call whose usage
//! is what pi had counted when the stream stopped, not the provider's final usage (that comes
//! at the stream's end): a lower bound; `error` (the provider refused or failed) is a call
//! with the zero usage pi logs, not interrupted. Its
//! start is `message.timestamp` (epoch ms, when the request began), its end the entry's stamp.
//!
//! Not calls: other messages, `custom` entries (an extension may store the session's totals
//! there), `compaction` and `branch_summary` entries (their summarising request is not logged
//! with usage), `model_change`, `thinking_level_change`, `label`, `session_info`. Unknown
//! entry types and message roles are counted and skipped with a warning per file.
//!
//! **Context items** (`items`): see [`items`]; keyed by the entry's `id` and stamp, so a copy
//! adds none, and kept with the session its call would be.
#![forbid(unsafe_code)]

mod items;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::fold::{self, Call, Folded, Item, Line, Usage};
use crate::read::json::{Fields, Kind, Schema, Shape, Value};

use items::{Content, Source};

/// Entry types pi writes (the others are counted as unknown).
pub const KNOWN_TYPES: &[&str] = &[
    "session",
    "message",
    "model_change",
    "thinking_level_change",
    "custom",
    "custom_message",
    "compaction",
    "branch_summary",
    "label",
    "session_info",
];

/// Message roles pi writes (`message.role`; the others are counted as unknown).
pub const KNOWN_ROLES: &[&str] = &[
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
    "system",
];

/// The usage counters of an assistant message, in order: input (uncached), cache reads,
/// cache writes, output, reasoning.
const COUNTERS: [&str; 5] = [
    "message.usage.input",
    "message.usage.cacheRead",
    "message.usage.cacheWrite",
    "message.usage.output",
    "message.usage.reasoning",
];

const FIELDS: &[(&str, Shape)] = &[
    ("type", Shape::Scalar),
    ("id", Shape::Scalar),
    ("timestamp", Shape::Scalar),
    ("cwd", Shape::Scalar),
    ("parentSession", Shape::Scalar),
    ("summary", Shape::Scalar),
    ("message", Shape::Struct),
    ("message.role", Shape::Scalar),
    ("message.model", Shape::Scalar),
    ("message.provider", Shape::Scalar),
    ("message.responseId", Shape::Scalar),
    ("message.timestamp", Shape::Scalar),
    ("message.stopReason", Shape::Scalar),
    ("message.usage", Shape::Struct),
    ("message.usage.input", Shape::Scalar),
    ("message.usage.cacheRead", Shape::Scalar),
    ("message.usage.cacheWrite", Shape::Scalar),
    ("message.usage.output", Shape::Scalar),
    ("message.usage.reasoning", Shape::Scalar),
    ("message.usage.cost", Shape::Struct),
    ("message.usage.cost.total", Shape::Scalar),
];

/// The schema nodes the fold reads.
#[derive(Clone, Copy)]
struct Nodes {
    kind: usize,
    id: usize,
    time: usize,
    cwd: usize,
    parent: usize,
    summary: usize,
    role: usize,
    model: usize,
    provider: usize,
    response: usize,
    started: usize,
    stop: usize,
    usage: usize,
    counters: [usize; 5],
    cost: usize,
}

impl Nodes {
    fn new(schema: &Schema) -> Nodes {
        let n = |path: &str| schema.find(path).unwrap_or(0);
        Nodes {
            kind: n("type"),
            id: n("id"),
            time: n("timestamp"),
            cwd: n("cwd"),
            parent: n("parentSession"),
            summary: n("summary"),
            role: n("message.role"),
            model: n("message.model"),
            provider: n("message.provider"),
            response: n("message.responseId"),
            started: n("message.timestamp"),
            stop: n("message.stopReason"),
            usage: n("message.usage"),
            counters: COUNTERS.map(n),
            cost: n("message.usage.cost.total"),
        }
    }
}

/// Which copy of a call or item is kept: the one whose session's header is oldest (unknown
/// last), then file, line and place in the line.
type Rank = (bool, i64, usize, i64, u32);

/// The session a file's lines belong to at the moment.
struct Current {
    id: String,
    /// Its header's stamp: lines stamped before it are copies (see the module documentation).
    header_time: Option<i64>,
}

/// A fold of a group of pi session files.
struct Fold {
    n: Nodes,
    out: Folded,
    index: HashMap<String, usize>,
    calls: Vec<(String, Rank, Call)>,
    items: Vec<(String, Rank, Item)>,
    /// The content parser, when context items are gathered.
    content: Option<Content>,
}

/// Fold a group of pi session files (one home's, or any set read together), as agent `pi`.
pub fn fold(paths: &[PathBuf]) -> Folded {
    fold_with(paths, true)
}

/// [`fold`], gathering the context items only `with_items`.
pub fn fold_with(paths: &[PathBuf], with_items: bool) -> Folded {
    fold_as(paths, "pi", with_items)
}

/// [`fold_with`] for OpenClaw's files (pi's format, OpenClaw's home): agent `openclaw`.
pub fn fold_openclaw(paths: &[PathBuf], with_items: bool) -> Folded {
    fold_as(paths, "openclaw", with_items)
}

fn fold_as(paths: &[PathBuf], agent: &'static str, with_items: bool) -> Folded {
    let schema = Schema::new(FIELDS);
    let n = Nodes::new(&schema);
    fold::fold_group(paths, agent, &schema, |out| Fold {
        n,
        out,
        index: HashMap::new(),
        calls: Vec::new(),
        items: Vec::new(),
        content: with_items.then(Content::new),
    })
}

/// The session id a session file's name gives: after the first `_` of its stem (pi's
/// `<ts>_<uuid>.jsonl`), else the stem (OpenClaw's `<sessionId>.jsonl`).
pub fn session_of_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.split_once('_') {
        Some((_, id)) if !id.is_empty() => id.to_owned(),
        _ => stem,
    }
}

/// A JSON number's text as plain decimal text (`1.5e-7` → `0.00000015`), so that it reads
/// as an exact decimal; None for anything that is not a number.
pub fn decimal_text(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (text.get(..at)?, text.get(at + 1..)?.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (sign, unsigned) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || exponent.abs() > 400 {
        return None;
    }
    if exponent == 0 {
        return Some(text.to_owned());
    }
    // the decimal point sits `point` digits into `digits`
    let point = i64::try_from(whole.len()).ok()? + i64::from(exponent);
    let len = i64::try_from(digits.len()).ok()?;
    let body = if point <= 0 {
        let zeros = "0".repeat(usize::try_from(-point).ok()?);
        format!("0.{zeros}{digits}")
    } else if point >= len {
        let zeros = "0".repeat(usize::try_from(point - len).ok()?);
        format!("{digits}{zeros}")
    } else {
        let (head, tail) = digits.split_at(usize::try_from(point).ok()?);
        format!("{head}.{tail}")
    };
    Some(format!("{sign}{body}"))
}

/// A key made of a line's text (for a line that names no id).
fn text_key(text: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    format!("h{:x}", hasher.finish())
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
        let n = self.n;
        let time = line.time(n.time);
        let kind = line.str(n.kind).map(|s| s.into_owned());
        if kind.as_deref() == Some("session") {
            self.header(line, file, time, hint, current);
            return;
        }
        let cur = current.get_or_insert_with(|| Current {
            id: hint.to_owned(),
            header_time: None,
        });
        let own = cur.header_time.is_none_or(|h| time.is_none_or(|t| t >= h));
        let session = fold::session_of(&mut self.out.sessions, &mut self.index, &cur.id);
        session.saw(file, if own { time } else { None });
        let Some(kind) = kind else {
            self.out.issue(
                file,
                line.number,
                "error",
                "line has no 'type'; ignored".into(),
            );
            return;
        };
        let role = (kind == "message")
            .then(|| line.str(n.role).map(|s| s.into_owned()))
            .flatten();
        let known = KNOWN_TYPES.contains(&kind.as_str())
            && (kind != "message" || role.as_deref().is_some_and(|r| KNOWN_ROLES.contains(&r)));
        if !known {
            session.unknown_lines += 1;
            unknown.0 += 1;
            if unknown.1.is_none() {
                let what = match &role {
                    Some(role) => format!("message role {role}"),
                    None if kind == "message" => "message without a role".to_owned(),
                    None => kind.clone(),
                };
                unknown.1 = Some((line.number, what));
            }
            return;
        }
        let rank: Rank = (
            cur.header_time.is_none(),
            cur.header_time.unwrap_or(0),
            file,
            line.number,
            0,
        );
        let session = cur.id.clone();
        if role.as_deref() == Some("assistant") {
            self.call(line, file, time, &session, rank);
        }
        let source = match (kind.as_str(), role) {
            ("message", Some(role)) => Source::Message(role),
            ("custom_message", _) => Source::CustomEntry,
            ("compaction" | "branch_summary", _) => Source::Summary,
            _ => return,
        };
        self.items(line, file, time, &session, rank, &source);
    }

    /// A session header: the next session of the file starts here.
    fn header(
        &mut self,
        line: &Line<'_>,
        file: usize,
        time: Option<i64>,
        hint: &str,
        current: &mut Option<Current>,
    ) {
        let n = self.n;
        let id = line
            .str(n.id)
            .map_or_else(|| hint.to_owned(), |s| s.into_owned());
        let session = fold::session_of(&mut self.out.sessions, &mut self.index, &id);
        session.saw(file, time);
        if session.cwd.is_none() {
            session.cwd = line.str(n.cwd).map(|s| s.into_owned());
        }
        if session.parent.is_none() {
            session.parent = line
                .str(n.parent)
                .map(|path| session_of_name(Path::new(&*path)))
                .filter(|parent| !parent.is_empty());
        }
        *current = Some(Current {
            id,
            header_time: time,
        });
    }

    /// An assistant message: one call (see the module documentation).
    fn call(&mut self, line: &Line<'_>, file: usize, time: Option<i64>, session: &str, rank: Rank) {
        let n = self.n;
        let started = line.int(n.started);
        let key = match (line.str(n.response), line.str(n.id)) {
            (Some(response), _) => format!("r{response}"),
            (None, Some(id)) => {
                format!("e{id}@{}", started.map_or(String::new(), |t| t.to_string()))
            }
            (None, None) => text_key(line.text),
        };
        let logged = line.get(n.usage).kind == Kind::Object;
        if !logged {
            self.out.issue(
                file,
                line.number,
                "warning",
                "assistant message without usage: its tokens are unknown".into(),
            );
        }
        let [input, cache_read, cache_write, output, reasoning] = n.counters.map(|c| line.int(c));
        let parts = [input, cache_read, cache_write];
        let usage = Usage {
            input: parts
                .iter()
                .any(Option::is_some)
                .then(|| parts.iter().flatten().sum()),
            cache_read,
            cache_write,
            output,
            reasoning,
            ..Usage::default()
        };
        // stopped by the user: pi wrote what it had counted when the stream stopped, not the
        // provider's final usage (which comes at the stream's end)
        let aborted = line.str(n.stop).as_deref() == Some("aborted");
        let cost = line.get(n.cost);
        let logged_cost = matches!(cost.kind, Kind::Int | Kind::Float)
            .then(|| line.text.get(cost.start..cost.end).and_then(decimal_text))
            .flatten();
        let api_call_id = line
            .str(n.response)
            .map(|s| s.into_owned())
            .unwrap_or_else(|| key.clone());
        let call = Call {
            file,
            line: line.number,
            session: session.to_owned(),
            kind: "main",
            model: line.str(n.model).map(|s| s.into_owned()),
            api_call_id: Some(api_call_id),
            start_time: started.or(time),
            end_time: time.or(started),
            usage,
            final_usage: logged && !aborted,
            interrupted: aborted,
            provider: line.str(n.provider).map(|s| s.into_owned()),
            logged_cost,
            anchor: Some((time, file, line.number)),
            ..Call::default()
        };
        self.calls.push((key, rank, call));
    }

    /// The context items of a line, when they are gathered.
    fn items(
        &mut self,
        line: &Line<'_>,
        file: usize,
        time: Option<i64>,
        session: &str,
        rank: Rank,
        source: &Source,
    ) {
        let n = self.n;
        let Some(content) = self.content.as_mut() else {
            return;
        };
        let id = line.str(n.id).map(|s| s.into_owned());
        let key = match (&id, line.str(n.time)) {
            (Some(id), Some(stamp)) => format!("e{id}@{stamp}"),
            _ => text_key(line.text),
        };
        let summary: Value = line.get(n.summary);
        let summary = (summary.kind == Kind::Str)
            .then(|| i64::try_from(summary.decoded_len).unwrap_or(i64::MAX));
        let base = Item {
            file,
            line: line.number,
            session: session.to_owned(),
            time,
            event_id: id,
            ..Item::default()
        };
        for (at, mut item) in content
            .items(line, source, &base, summary)
            .into_iter()
            .enumerate()
        {
            item.sub = u32::try_from(at + 1).unwrap_or(u32::MAX);
            let (a, b, c, d, _) = rank;
            self.items
                .push((format!("{key}#{}", item.sub), (a, b, c, d, item.sub), item));
        }
    }
}

/// Of the entries sharing a key, the first by rank.
fn first_of_each<T>(mut keyed: Vec<(String, Rank, T)>) -> Vec<(Rank, T)> {
    keyed.sort_by(|(a, x, _), (b, y, _)| (a, x).cmp(&(b, y)));
    keyed.dedup_by(|(b, _, _), (a, _, _)| a == b);
    keyed.into_iter().map(|(_, rank, t)| (rank, t)).collect()
}

impl fold::GroupFold for Fold {
    fn read(&mut self, schema: &Schema, file: usize, path: &Path) {
        let mut fields = Fields::new(schema);
        let hint = session_of_name(path);
        let mut current = None;
        let mut unknown: (i64, Option<(i64, String)>) = (0, None);
        let read = fold::read_file(path, file, schema, &mut fields, |line| {
            self.line(line, file, &hint, &mut current, &mut unknown);
        });
        self.out.issues.extend(read.issues);
        if let (count, Some((line, what))) = unknown {
            let message =
                format!("{count} line(s) of unknown type (first: {what}); counted, not read");
            self.out.issue(file, line, "warning", message);
        }
    }

    fn merge(&mut self, part: Fold) {
        for session in part.out.sessions {
            let id = session.id.clone();
            fold::session_of(&mut self.out.sessions, &mut self.index, &id).absorb(session);
        }
        self.out.issues.extend(part.out.issues);
        self.calls.extend(part.calls);
        self.items.extend(part.items);
    }

    fn finish(mut self) -> Folded {
        let mut calls = std::mem::take(&mut self.calls);
        calls.sort_by(|(a, x, _), (b, y, _)| (a, x).cmp(&(b, y)));
        let mut kept: Vec<Call> = Vec::with_capacity(calls.len());
        let mut last_key: Option<String> = None;
        for (key, _, call) in calls {
            if last_key.as_deref() == Some(key.as_str()) {
                if let Some(first) = kept.last() {
                    if first.usage != call.usage {
                        self.out.issue(
                            call.file,
                            call.line,
                            "warning",
                            "a call repeated with other usage than its first copy; the first is kept".into(),
                        );
                    }
                }
                continue;
            }
            last_key = Some(key);
            kept.push(call);
        }
        self.out.calls = kept;
        let items = std::mem::take(&mut self.items);
        self.out.items = first_of_each(items)
            .into_iter()
            .map(|(_, item)| item)
            .collect();
        self.out.finish();
        self.out
    }
}

/// Lines of this format for the fuzzers (`native/fuzz.rs` damages and mixes them): one of
/// each record the fold reads.
pub const SEEDS: &[&[u8]] = &[
    br#"{"type":"session","version":3,"id":"019e6d52-a5d5-7687-8c09-e4e69e4162c6","timestamp":"2026-05-28T06:43:13.495Z","cwd":"/w","parentSession":"/h/.pi/agent/sessions/--w--/2026-05-28T06-40-00-000Z_p1.jsonl"}"#,
    br#"{"type":"model_change","id":"0fcb83cd","parentId":null,"timestamp":"2026-05-28T06:43:15.676Z","provider":"openai-codex","modelId":"gpt-5.4-mini"}"#,
    br#"{"type":"message","id":"ad4314ed","parentId":"0fcb83cd","timestamp":"2026-05-28T06:43:42.970Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1779950622964}}"#,
    br#"{"type":"message","id":"e7360d4c","parentId":"ad4314ed","timestamp":"2026-05-28T06:43:47.381Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"one"},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls"}}],"api":"openai-codex-responses","provider":"openai-codex","model":"gpt-5.5","usage":{"input":800,"output":125,"cacheRead":4096,"cacheWrite":12,"reasoning":14,"totalTokens":5033,"cost":{"input":0.004,"output":0.00375,"cacheRead":0,"cacheWrite":0,"total":1.5e-7}},"stopReason":"toolUse","timestamp":1779950623000,"responseId":"resp_1"}}"#,
    br#"{"type":"message","id":"2e5e67cc","parentId":"e7360d4c","timestamp":"2026-05-28T06:43:48.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"a.py"}],"isError":false,"timestamp":1779950628000}}"#,
    br#"{"type":"message","id":"68c5078e","parentId":"6d85faaa","timestamp":"2026-05-25T03:20:53.426Z","message":{"role":"assistant","content":[],"provider":"openai-codex","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"total":0}},"stopReason":"error","timestamp":1779679245289,"errorMessage":"no"}}"#,
    br#"{"type":"compaction","id":"08fe0fa2","parentId":"9315a503","timestamp":"2026-05-25T02:43:44.082Z","summary":"Goal: none","firstKeptEntryId":"9315a503","tokensBefore":7509}"#,
    br#"{"type":"message","id":"1cbc6dc2","parentId":"6af93a9d","timestamp":"2026-05-25T00:51:58.502Z","message":{"role":"bashExecution","command":"echo hi","output":"hi\n","exitCode":0,"excludeFromContext":false}}"#,
    br#"{"type":"custom_message","id":"c1","parentId":null,"timestamp":"2026-05-25T00:51:59.000Z","customType":"x","content":"note","display":true}"#,
];

#[cfg(test)]
mod tests;
