//! What every agent's fold shares: reading a log file line by line into parsed JSON fields
//! (bad bytes and bad lines become issues, the rest is read), and the agent-agnostic CALLS,
//! SESSIONS and ISSUES rows a fold produces, with their columns in Arrow's layout.
//!
//! A fold (`agents/claude_code/`, `agents/codex/`) reads one *group* of files together (a Claude Code project
//! directory, a Codex home), so that a call written into several files is counted once, and
//! returns a [`Folded`]: calls, sessions and issues, each file named by its index in the group.
//! [`Folded::finish`] orders the calls, numbers them within their session and counts them into
//! the sessions; [`calls_frame`], [`sessions_frame`] and [`issues_frame`] lay the rows out as
//! columns for the Python binding.
#![forbid(unsafe_code)]

pub mod kind;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::read::format;
use crate::read::json::{self, Fields, Kind, Schema, Value};
use crate::read::line;
use crate::read::scan::Issue;
use crate::read::table::{Bits, BoolColumn, Column, IntColumn, StrColumn};

/// One line of a log that is a JSON object, its wanted fields parsed.
pub struct Line<'a> {
    /// The line's text (UTF-8; bad bytes replaced, NULs and a trailing CR removed).
    pub text: &'a [u8],
    /// 1-based line number in its file.
    pub number: i64,
    pub fields: &'a Fields,
}

impl Line<'_> {
    /// The value of a schema node.
    pub fn get(&self, node: usize) -> Value {
        self.fields.get(node)
    }

    /// A node's string value (None when absent, null or not a string).
    pub fn str(&self, node: usize) -> Option<Cow<'_, str>> {
        string(self.text, self.get(node))
    }

    /// A node's whole-number value (None when absent, null or not a number).
    pub fn int(&self, node: usize) -> Option<i64> {
        integer(self.text, self.get(node))
    }

    /// A node's value as UTC milliseconds, when it is an ISO 8601 timestamp string.
    pub fn time(&self, node: usize) -> Option<i64> {
        let value = self.get(node);
        (value.kind == Kind::Str)
            .then(|| format::text(self.text, value))
            .flatten()
            .and_then(|text| format::timestamp(&text))
    }
}

/// A JSON string's text (decoded), None for any other kind of value.
pub fn string(line: &[u8], value: Value) -> Option<Cow<'_, str>> {
    if value.kind != Kind::Str {
        return None;
    }
    match format::text(line, value)? {
        Cow::Borrowed(bytes) => Some(String::from_utf8_lossy(bytes)),
        Cow::Owned(bytes) => Some(Cow::Owned(String::from_utf8_lossy(&bytes).into_owned())),
    }
}

/// A JSON number as a whole number (a fraction is cut off), None for any other value.
pub fn integer(line: &[u8], value: Value) -> Option<i64> {
    matches!(value.kind, Kind::Int | Kind::Float)
        .then(|| format::whole(line, value))
        .flatten()
}

/// Bytes read from a log at once. Below the C allocator's mmap threshold, which the command
/// line caps at 128 KiB (`analytics.engine.allocators`): a larger buffer would be mapped,
/// faulted in and unmapped for every file (on Kimi Code's 1 GB tree of 4,698 logs, 0.5 s of
/// a 1.5 s fold).
const READ_BUFFER: usize = 64 << 10;

/// Files up to this size are read whole, in one go, into a buffer their thread keeps
/// ([`WHOLE`]), and split into lines where they lie: no copy of each line, and the newlines
/// found with `memchr`'s vector search (on Kimi Code's 1 GB tree the line-by-line copies and
/// search were a tenth of the fold). A larger file is read [`READ_BUFFER`] bytes at a time.
const WHOLE_FILE: u64 = 16 << 20;
/// The largest buffer a thread keeps between files (one grown for a larger file is let go).
const KEPT_BUFFER: usize = 4 << 20;

thread_local! {
    /// The buffer this thread reads whole files into, kept from one file to the next (taken
    /// while in use, so a fold that reads a file while reading another gets one of its own).
    static WHOLE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Read `path` (file `file` of its group) line by line: each line that is a JSON object goes
/// to `each` with its fields parsed against `schema`; a line that cannot be read is an issue
/// (bad UTF-8 and NUL bytes are repaired with a warning, a blank line is a warning, a line
/// that is not JSON or not an object is an error). Returns what was read ([`Read`]); a file
/// that cannot be opened or read is an error issue with no line. A file of up to
/// [`WHOLE_FILE`] bytes is read whole first (a read that fails then reads it again a block at
/// a time, so its lines and issues are the same either way).
pub fn read_file(
    path: &Path,
    file: usize,
    schema: &Schema,
    fields: &mut Fields,
    mut each: impl FnMut(&Line<'_>),
) -> Read {
    let mut opened = match File::open(path) {
        Ok(f) => f,
        Err(error) => {
            return Read {
                lines: 0,
                issues: vec![file_issue(file, &error)],
                torn: None,
            };
        }
    };
    if opened.metadata().is_ok_and(|m| m.len() <= WHOLE_FILE) {
        let mut data = WHOLE.with(std::cell::RefCell::take);
        data.clear();
        let whole = std::io::Read::read_to_end(&mut opened, &mut data).is_ok();
        let read = whole.then(|| {
            let mut lines = Lines::new(file);
            let mut rest: &[u8] = &data;
            while !rest.is_empty() {
                let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |at| at + 1);
                let (line, after) = rest.split_at(end);
                rest = after;
                match line.strip_suffix(b"\n") {
                    Some(text) => lines.line(text, true, schema, fields, &mut each),
                    None => lines.line(line, false, schema, fields, &mut each),
                }
            }
            lines.read()
        });
        if data.capacity() <= KEPT_BUFFER {
            WHOLE.with(|kept| *kept.borrow_mut() = data);
        }
        if let Some(read) = read {
            return read;
        }
        // the whole read failed: the file is read again a block at a time, which reports
        // the failure where it happens
        match File::open(path) {
            Ok(f) => opened = f,
            Err(error) => {
                return Read {
                    lines: 0,
                    issues: vec![file_issue(file, &error)],
                    torn: None,
                };
            }
        }
    }
    let mut reader = BufReader::with_capacity(READ_BUFFER, opened);
    let mut lines = Lines::new(file);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                lines.issues.push(file_issue(file, &error));
                break;
            }
        }
        let ended = buffer.last() == Some(&b'\n');
        if ended {
            buffer.pop();
        }
        lines.line(&buffer, ended, schema, fields, &mut each);
    }
    lines.read()
}

/// What [`read_file`] has read of a file so far, a line at a time.
struct Lines {
    file: usize,
    number: i64,
    issues: Vec<Issue>,
    torn: Option<Vec<u8>>,
}

impl Lines {
    fn new(file: usize) -> Lines {
        Lines {
            file,
            number: 0,
            issues: Vec::new(),
            torn: None,
        }
    }

    /// The next line, without its newline (`ended`: it had one).
    fn line(
        &mut self,
        raw: &[u8],
        ended: bool,
        schema: &Schema,
        fields: &mut Fields,
        each: &mut impl FnMut(&Line<'_>),
    ) {
        self.number += 1;
        let (file, number) = (self.file, self.number);
        let issues = &mut self.issues;
        let mut note = |severity: &'static str, message: String| {
            issues.push(Issue {
                file,
                line: Some(number),
                severity,
                message,
            });
        };
        // the line's hygiene and its issues' words are every agent's (`read::line`)
        let Some(text) = line::clean(raw, false, |warning| note("warning", warning.into())) else {
            return;
        };
        match json::parse(&text, schema, fields) {
            Ok(Kind::Object) => each(&Line {
                text: &text,
                number,
                fields,
            }),
            Ok(kind) => note("error", line::not_an_object(kind)),
            Err(error) => {
                note("error", line::invalid_json(&text, &error));
                if !ended {
                    self.torn = Some(text.into_owned());
                }
            }
        }
    }

    fn read(self) -> Read {
        Read {
            lines: self.number,
            issues: self.issues,
            torn: self.torn,
        }
    }
}

/// What [`read_file`] read of a file.
pub struct Read {
    /// The number of lines.
    pub lines: i64,
    pub issues: Vec<Issue>,
    /// The last line, when it could not be read and no newline ends it: a line cut off by a
    /// crash or a copy taken while it was written (its number is `lines`).
    pub torn: Option<Vec<u8>>,
}

fn file_issue(file: usize, error: &std::io::Error) -> Issue {
    Issue {
        file,
        line: None,
        severity: "error",
        message: format!("cannot read the file: {}", io_reason(error)),
    }
}

/// Why a file could not be read, in agentcost's words: the system's reason in lower case,
/// without Rust's `(os error N)` (`permission denied`, as the Copilot path words it).
fn io_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    let reason = text.split(" (os error ").next().unwrap_or(&text);
    let mut letters = reason.chars();
    letters.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(letters).collect()
    })
}

/// The raw text of each item of a JSON array value of `line` (the line is valid JSON, so a
/// scan for commas outside strings and nested brackets is enough).
pub fn array_items(line: &[u8], value: Value) -> Vec<&[u8]> {
    let mut items = Vec::new();
    if value.kind != Kind::Array {
        return items;
    }
    let Some(body) = line.get(value.start + 1..value.end.saturating_sub(1)) else {
        return items;
    };
    let (mut depth, mut in_string, mut escaped, mut start) = (0usize, false, false, 0usize);
    for (i, &b) in body.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                items.push(body.get(start..i).unwrap_or(&[]).trim_ascii());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = body.get(start..).unwrap_or(&[]).trim_ascii();
    if !last.is_empty() {
        items.push(last);
    }
    items
}

/// One call's tokens. Unknown is None, never 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input, cache reads and writes included.
    pub input: Option<i64>,
    pub cache_read: Option<i64>,
    pub cache_write: Option<i64>,
    /// The part of `cache_write` written with a 1-hour lifetime (None: no split given).
    pub cache_write_1h: Option<i64>,
    /// Output, reasoning included.
    pub output: Option<i64>,
    pub reasoning: Option<i64>,
    pub web_search: Option<i64>,
    pub web_fetch: Option<i64>,
}

/// One LLM call (one API request).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// Where its usage was read: file index in the group, 1-based line.
    pub file: usize,
    pub line: i64,
    pub session: String,
    /// `main`, `subagent` or `compaction`.
    pub kind: &'static str,
    pub model: Option<String>,
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    /// The agent's id for the request (Claude `message.id`), when it has one.
    pub api_call_id: Option<String>,
    /// UTC milliseconds of the call's first and last line.
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub usage: Usage,
    pub speed: Option<String>,
    pub service_tier: Option<String>,
    /// False where the request never got its final usage: its output is a lower bound.
    pub final_usage: bool,
    /// True where the log shows the user or the CLI stopped the request (Esc, abort) before
    /// it finished; a call merely without its final usage is not interrupted.
    pub interrupted: bool,
    pub agent_version: Option<String>,
    /// Who served the call, where the log names it (OpenCode's `providerID`: `anthropic`,
    /// `lmstudio`); a local provider bills nothing.
    pub provider: Option<String>,
    /// The call's cost as the agent itself logged it, in US dollars, as the log's decimal text
    /// (pi's `usage.cost.total`, OpenCode's `cost`): shown beside agentcost's price, never
    /// used as it.
    pub logged_cost: Option<String>,
    /// Where the call stands among its session's items, when not at its own line: the
    /// (stamp, file, line) of the first line of its reply (a Codex call's usage line follows
    /// the reply it counts).
    pub anchor: Option<(Option<i64>, usize, i64)>,
    /// 1-based order within the session (set by [`Folded::finish`]).
    pub index: i64,
    /// 1-based order among the session's calls and items (set by [`Folded::finish`]).
    pub seq: i64,
}

/// One item a session's context gains, of one of the core's neutral [`kind`]s: a prompt, a
/// reply (its tool requests included: `tool_request_bytes`), a tool call (a tool request's
/// name, no bytes), a tool output, system instructions, a compaction summary, or the agent
/// saying its task is done (no bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Item {
    pub file: usize,
    pub line: i64,
    /// Its place among the items of its line (from 1; a call at the line comes first).
    pub sub: u32,
    pub session: String,
    pub time: Option<i64>,
    /// Its neutral kind, one of [`kind`]'s.
    pub kind: &'static str,
    /// The log's own id for the line (Claude `uuid`), when it has one.
    pub event_id: Option<String>,
    pub agent_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub tool_name: Option<String>,
    /// The item's size as the log writes it (its JSON), None for a name-only row.
    pub content_bytes: Option<i64>,
    pub tool_request_bytes: Option<i64>,
    /// 1-based order among the session's calls and items (set by [`Folded::finish`]).
    pub seq: i64,
}

/// Where a row stands in its session: stamp (unstamped last), file, line, place in the line.
type Position = (bool, i64, usize, i64, u32);

/// The [`Position`] of a row.
fn position(time: Option<i64>, file: usize, line: i64, sub: u32) -> Position {
    (time.is_none(), time.unwrap_or(0), file, line, sub)
}

/// Items keyed by what makes a copy the same item; of copies, the one seen first (earliest
/// stamp, then file, line) is kept, so a resumed or copied file adds no item.
pub fn unique_items(mut keyed: Vec<(String, Item)>) -> Vec<Item> {
    keyed.sort_by(|(a, x), (b, y)| {
        (a, position(x.time, x.file, x.line, x.sub))
            .cmp(&(b, position(y.time, y.file, y.line, y.sub)))
    });
    keyed.dedup_by(|(b, _), (a, _)| a == b);
    keyed.into_iter().map(|(_, item)| item).collect()
}

/// One session: what its lines say, and its calls counted by [`Folded::finish`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Session {
    pub id: String,
    /// Indexes of the files holding its lines.
    pub files: Vec<usize>,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub cwd: Option<String>,
    /// The latest agent version its lines name, and when it was named.
    pub agent_version: Option<String>,
    pub version_time: Option<i64>,
    /// The session it was forked from (Codex `forked_from_id`).
    pub parent: Option<String>,
    pub models: Vec<String>,
    pub calls: i64,
    pub main_calls: i64,
    pub subagent_calls: i64,
    pub compaction_calls: i64,
    pub calls_without_final_usage: i64,
    pub interrupted_calls: i64,
    pub lines: i64,
    pub unknown_lines: i64,
}

impl Session {
    pub fn new(id: &str) -> Session {
        Session {
            id: id.to_owned(),
            ..Session::default()
        }
    }

    /// A line of file `file` stamped `time` belongs to the session.
    pub fn saw(&mut self, file: usize, time: Option<i64>) {
        self.lines += 1;
        if self.files.last() != Some(&file) && !self.files.contains(&file) {
            self.files.push(file);
        }
        self.start_time = min_time(self.start_time, time);
        self.end_time = max_time(self.end_time, time);
    }

    /// Take in what another part of the logs (a later file) says of the same session.
    pub fn absorb(&mut self, other: Session) {
        for file in other.files {
            if !self.files.contains(&file) {
                self.files.push(file);
            }
        }
        self.start_time = min_time(self.start_time, other.start_time);
        self.end_time = max_time(self.end_time, other.end_time);
        if self.cwd.is_none() {
            self.cwd = other.cwd;
        }
        if let Some(version) = other.agent_version {
            self.version(&version, other.version_time);
        }
        if self.parent.is_none() {
            self.parent = other.parent;
        }
        self.lines += other.lines;
        self.unknown_lines += other.unknown_lines;
    }

    /// The agent named version `version` at `time`: the latest one is kept.
    pub fn version(&mut self, version: &str, time: Option<i64>) {
        if self.agent_version.is_none() || time >= self.version_time {
            self.agent_version = Some(version.to_owned());
            self.version_time = time;
        }
    }
}

/// The session named `id` in `sessions` (found by `index`), made on first sight.
pub fn session_of<'a>(
    sessions: &'a mut Vec<Session>,
    index: &mut HashMap<String, usize>,
    id: &str,
) -> &'a mut Session {
    let at = match index.get(id) {
        Some(&at) if at < sessions.len() => at,
        _ => {
            sessions.push(Session::new(id));
            index.insert(id.to_owned(), sessions.len() - 1);
            sessions.len() - 1
        }
    };
    &mut sessions[at]
}

/// The earlier of two optional times (a known one beats an unknown one).
pub fn min_time(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The later of two optional times (a known one beats an unknown one).
pub fn max_time(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// How many inputs [`in_order`] works on in parallel before it merges their results (for
/// [`in_order_by`]: how much weight).
const AT_ONCE: usize = 128;

/// `work(index, input)` for each of `inputs`, in parallel, and each result to `merge` in the
/// inputs' order, [`AT_ONCE`] inputs at a time. The merged result is that of working through
/// the inputs one after another, and only one batch's results are held besides it: a fold
/// of thousands of files (or groups) never keeps a part per file until the end.
pub fn in_order<T: Sync, P: Send>(
    inputs: &[T],
    work: impl Fn(usize, &T) -> P + Sync,
    merge: impl FnMut(P),
) {
    in_order_by(inputs, |_| 1, work, merge);
}

/// [`in_order`] with batches of consecutive inputs whose `weight`s add up to at most
/// [`AT_ONCE`], or of one input alone when it weighs more: a batch's results are what is
/// held at once, so inputs whose results are large in proportion to their weight (a group's
/// fold, by its number of files) are held one at a time, the many light ones still worked on
/// together. A heavy input is worked on in parallel within (a group's files are), so one
/// alone still keeps every thread busy; two groups of 20,000 files at once held both groups'
/// calls until laid out (the 1 GB pi tree's fold peaked some 80 MB higher).
pub fn in_order_by<T: Sync, P: Send>(
    inputs: &[T],
    weight: impl Fn(&T) -> usize,
    work: impl Fn(usize, &T) -> P + Sync,
    mut merge: impl FnMut(P),
) {
    let mut first = 0;
    while first < inputs.len() {
        let (mut end, mut load) = (first, 0);
        while let Some(next) = inputs.get(end) {
            load += weight(next);
            if load > AT_ONCE && end > first {
                break;
            }
            end += 1;
        }
        let chunk = inputs.get(first..end).unwrap_or(&[]);
        let parts: Vec<P> = chunk
            .par_iter()
            .enumerate()
            .map(|(at, input)| work(first + at, input))
            .collect();
        parts.into_iter().for_each(&mut merge);
        first = end;
    }
}

/// An agent's fold of a group of files: a part is one file's fold, and the group's fold is
/// its files' parts merged in file order ([`fold_group`]).
pub trait GroupFold: Sized + Send {
    /// Read file `index` of the group (at `path`) into this fold.
    fn read(&mut self, schema: &Schema, index: usize, path: &Path);
    /// Take in what `part` (a later file's fold) found, as if its file were read now.
    fn merge(&mut self, part: Self);
    /// The calls, sessions, issues and items of the group.
    fn finish(self) -> Folded;
}

/// Fold the files `paths` of an agent's group: each file is read, in parallel, into a part
/// made by `empty(Folded::default())`, and the parts are merged in file order into the
/// group's fold, `empty` of the group's [`Folded`] (see [`in_order`]); the result is that of
/// reading the files one after another.
pub fn fold_group<F: GroupFold>(
    paths: &[PathBuf],
    agent: &'static str,
    schema: &Schema,
    empty: impl Fn(Folded) -> F + Sync,
) -> Folded {
    let mut fold = empty(Folded {
        agent,
        paths: path_names(paths),
        ..Folded::default()
    });
    let read = |index: usize, path: &PathBuf| {
        let mut part = empty(Folded::default());
        part.read(schema, index, path);
        part
    };
    in_order(paths, read, |part| fold.merge(part));
    fold.finish()
}

/// The names of a group's files, as its rows name them (by index).
pub fn path_names(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// A group of files folded together.
#[derive(Debug, Default)]
pub struct Folded {
    pub agent: &'static str,
    pub paths: Vec<String>,
    pub calls: Vec<Call>,
    pub sessions: Vec<Session>,
    pub issues: Vec<Issue>,
    pub items: Vec<Item>,
}

impl Folded {
    /// Calls ordered by session (in session order), then time, file and line, numbered from
    /// 1 within their session; each session's call counts and models from its calls; calls
    /// and items numbered together in log order (`seq`); issues in file and line order.
    /// Sessions without a line are dropped, and so are the items of sessions without one.
    pub fn finish(&mut self) {
        self.issues.sort_by_key(|i| (i.file, i.line));
        self.sessions.retain(|s| s.lines > 0);
        let order: BTreeMap<String, usize> = self
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        self.calls.sort_by(|a, b| {
            (order.get(&a.session), a.start_time, a.file, a.line).cmp(&(
                order.get(&b.session),
                b.start_time,
                b.file,
                b.line,
            ))
        });
        let mut last: Option<&str> = None;
        let mut index = 0;
        for call in &mut self.calls {
            if last != Some(call.session.as_str()) {
                index = 0;
            }
            index += 1;
            call.index = index;
            last = Some(call.session.as_str());
            let Some(session) = order
                .get(&call.session)
                .and_then(|&i| self.sessions.get_mut(i))
            else {
                continue;
            };
            session.calls += 1;
            match call.kind {
                "subagent" => session.subagent_calls += 1,
                "compaction" => session.compaction_calls += 1,
                _ => session.main_calls += 1,
            }
            session.calls_without_final_usage += i64::from(!call.final_usage);
            session.interrupted_calls += i64::from(call.interrupted);
            if let Some(model) = &call.model {
                if !session.models.contains(model) {
                    session.models.push(model.clone());
                }
            }
        }
        self.items.retain(|i| order.contains_key(&i.session));
        self.number_in_log_order(&order);
    }

    /// `seq` of every call and item: 1.. per session, in log order (a call before the items
    /// of the line it stands at); items sorted the same way.
    fn number_in_log_order(&mut self, order: &BTreeMap<String, usize>) {
        let at = |call: &Call| {
            let (time, file, line) = call
                .anchor
                .unwrap_or((call.start_time, call.file, call.line));
            position(time, file, line, 0)
        };
        self.items.sort_by(|a, b| {
            (
                order.get(&a.session),
                position(a.time, a.file, a.line, a.sub),
            )
                .cmp(&(
                    order.get(&b.session),
                    position(b.time, b.file, b.line, b.sub),
                ))
        });
        // (session, position, is an item, index among the calls or the items)
        let mut rows: Vec<(Option<&usize>, Position, bool, usize)> = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| (order.get(&c.session), at(c), false, i))
            .chain(self.items.iter().enumerate().map(|(i, item)| {
                let place = position(item.time, item.file, item.line, item.sub);
                (order.get(&item.session), place, true, i)
            }))
            .collect();
        rows.sort_unstable();
        let mut last = None;
        let mut seq = 0;
        for (session, _, is_item, i) in rows {
            if last != Some(session) {
                seq = 0;
                last = Some(session);
            }
            seq += 1;
            let slot = if is_item {
                self.items.get_mut(i).map(|item| &mut item.seq)
            } else {
                self.calls.get_mut(i).map(|call| &mut call.seq)
            };
            if let Some(slot) = slot {
                *slot = seq;
            }
        }
    }

    /// A warning or error about line `line` of file `file`.
    pub fn issue(&mut self, file: usize, line: i64, severity: &'static str, message: String) {
        self.issues.push(Issue {
            file,
            line: Some(line),
            severity,
            message,
        });
    }
}

/// A column of a frame: one of the scanner's columns, or a list of strings per row (the
/// rows' strings one after another in `values`, row `i`'s from `offsets[i]` to
/// `offsets[i + 1]`: Arrow's layout, so no row holds a vector of its own).
pub enum Out {
    Plain(Column),
    Lists {
        offsets: Vec<i32>,
        values: ListValues,
    },
    /// A column of paths: each row's view of its text in the frames' one store of paths
    /// ([`Tables::finish`]), so a path is held once however many rows and tables name it
    /// (a call's and an item's `source_file`, a session's `source_files`, an issue's file).
    Paths {
        views: Vec<u128>,
        valid: Bits,
    },
}

/// The values of an [`Out::Lists`] column, one row's list after another.
pub enum ListValues {
    Text(StrColumn),
    /// Paths, as views into the store of paths (see [`Out::Paths`]).
    Paths(Vec<u128>),
}

/// A value of a list column: it knows its kind of [`ListValues`].
trait ListValue {
    fn push_to(self, values: &mut ListValues);
}

impl ListValue for &str {
    /// Shared: a session's models are often the ones before it.
    fn push_to(self, values: &mut ListValues) {
        if let ListValues::Text(column) = values {
            column.push_shared(self.as_bytes());
        }
    }
}

impl ListValue for u128 {
    /// A path's view into the store of paths.
    fn push_to(self, values: &mut ListValues) {
        if let ListValues::Paths(views) = values {
            views.push(self);
        }
    }
}

impl ListValues {
    fn len(&self) -> usize {
        match self {
            ListValues::Text(column) => column.len(),
            ListValues::Paths(views) => views.len(),
        }
    }
}

/// Named columns of equal length.
#[derive(Default)]
pub struct Frame {
    pub names: Vec<&'static str>,
    pub columns: Vec<Out>,
    pub rows: usize,
}

/// Builds a [`Frame`] a group of rows at a time: each group lays out the same columns in the
/// same order, appended to those of the groups before it.
///
/// A plain column is built only once its rows differ ([`Lazy`]): until then it is held as
/// "every row null" or "every row this text". Most of a fold's columns are what its agent
/// never logs (a sub-agent's name, the speed, the 1-hour cache writes) or its constants (its
/// id): built row by row they were a 16-byte view (or 8 bytes) a row, some 100 MB of the
/// 1 GB Gemini CLI tree's fold held until its end, to be made one value a column by
/// `schema.as_literals` on the Python side.
#[derive(Default)]
struct Builder {
    frame: Frame,
    /// Each column's state, by place.
    lazy: Vec<Lazy>,
    /// The column the group being laid out fills next.
    next: usize,
}

/// What a plain column holds before it is built row by row (its rows: the frame's so far).
#[derive(Default)]
enum Lazy {
    /// No row is null or has a value yet (no group had a row).
    #[default]
    Empty,
    /// Every row is null.
    Nulls,
    /// Every row is this text (a text column only).
    Same(Vec<u8>),
    /// Built: the column holds its rows.
    Built,
}

impl Builder {
    /// The place of the group's next column, named `name`: made by `empty` for the first
    /// group, the one of the same place after.
    fn slot(&mut self, name: &'static str, empty: impl FnOnce() -> Out) -> usize {
        if self.next == self.frame.columns.len() {
            self.frame.names.push(name);
            self.frame.columns.push(empty());
            self.lazy.push(Lazy::Empty);
        }
        self.next += 1;
        self.next - 1
    }

    /// The group of `rows` rows, the `at`-th, is laid out with its last column ([`GROUP`]):
    /// the next one starts again at the first column.
    fn group(&mut self, at: i64, rows: usize) {
        self.int(GROUP, std::iter::repeat_n(Some(at), rows));
        self.frame.rows += rows;
        self.next = 0;
    }

    fn text<'a>(&mut self, name: &'static str, values: impl Iterator<Item = Option<&'a str>>) {
        let at = self.slot(name, || Out::Plain(Column::Str(StrColumn::default())));
        let base = self.frame.rows;
        let (Some(Out::Plain(Column::Str(column))), Some(lazy)) =
            (self.frame.columns.get_mut(at), self.lazy.get_mut(at))
        else {
            return;
        };
        for (row, value) in values.enumerate() {
            let value = value.map(str::as_bytes);
            match lazy {
                Lazy::Built => {
                    column.push_opt(value, true);
                    continue;
                }
                Lazy::Empty => {
                    *lazy = value.map_or(Lazy::Nulls, |v| Lazy::Same(v.to_vec()));
                    continue;
                }
                Lazy::Nulls if value.is_none() => continue,
                Lazy::Same(same) if value == Some(same.as_slice()) => continue,
                Lazy::Nulls => column.pad(base + row),
                Lazy::Same(same) => column.push_shared_n(same, base + row),
            }
            *lazy = Lazy::Built;
            column.push_opt(value, true);
        }
    }

    /// A fixed-width column: `push` appends a row to it (its kind's), `pad` nulls up to a
    /// row count; built lazily as far as nulls go ([`Lazy::Nulls`]).
    fn fixed<T>(
        &mut self,
        name: &'static str,
        empty: fn() -> Out,
        values: impl Iterator<Item = Option<T>>,
        push: fn(&mut Column, Option<T>),
    ) {
        let at = self.slot(name, empty);
        let base = self.frame.rows;
        let (Some(Out::Plain(column)), Some(lazy)) =
            (self.frame.columns.get_mut(at), self.lazy.get_mut(at))
        else {
            return;
        };
        for (row, value) in values.enumerate() {
            if !matches!(lazy, Lazy::Built) {
                if value.is_none() {
                    *lazy = Lazy::Nulls;
                    continue;
                }
                column.pad(base + row);
                *lazy = Lazy::Built;
            }
            push(column, value);
        }
    }

    fn int(&mut self, name: &'static str, values: impl Iterator<Item = Option<i64>>) {
        let empty = || Out::Plain(Column::Int(IntColumn::default()));
        self.fixed(name, empty, values, |column, value| {
            if let Column::Int(column) = column {
                column.push(value);
            }
        });
    }

    fn time(&mut self, name: &'static str, values: impl Iterator<Item = Option<i64>>) {
        let empty = || Out::Plain(Column::Time(IntColumn::default()));
        self.fixed(name, empty, values, |column, value| {
            if let Column::Time(column) = column {
                column.push(value);
            }
        });
    }

    fn flag(&mut self, name: &'static str, values: impl Iterator<Item = Option<bool>>) {
        let empty = || Out::Plain(Column::Bool(BoolColumn::default()));
        self.fixed(name, empty, values, |column, value| {
            if let Column::Bool(column) = column {
                column.push(value);
            }
        });
    }

    /// The frame, each column of one text in every row built now; a column every row of
    /// which is null is left without rows (an all-null array: `python::column_array`).
    fn finish(mut self) -> Frame {
        let rows = self.frame.rows;
        for (column, lazy) in self.frame.columns.iter_mut().zip(self.lazy) {
            if let (Out::Plain(Column::Str(column)), Lazy::Same(same)) = (column, lazy) {
                column.push_shared_n(&same, rows);
            }
        }
        self.frame
    }

    /// A column of a list of values per row, its values made by `empty`.
    fn lists<V: ListValue, L: Iterator<Item = V>>(
        &mut self,
        name: &'static str,
        empty: fn() -> ListValues,
        lists: impl Iterator<Item = L>,
    ) {
        let at = self.slot(name, || Out::Lists {
            offsets: vec![0],
            values: empty(),
        });
        if let Some(Out::Lists { offsets, values }) = self.frame.columns.get_mut(at) {
            for list in lists {
                list.for_each(|value| value.push_to(values));
                offsets.push(i32::try_from(values.len()).unwrap_or(i32::MAX));
            }
        }
    }

    /// A column of paths, each row's given as its view in the store of paths (None: null).
    fn paths(&mut self, name: &'static str, values: impl Iterator<Item = Option<u128>>) {
        let at = self.slot(name, || Out::Paths {
            views: Vec::new(),
            valid: Bits::default(),
        });
        if let Some(Out::Paths { views, valid }) = self.frame.columns.get_mut(at) {
            for value in values {
                views.push(value.unwrap_or(0));
                valid.push(value.is_some());
            }
        }
    }

    /// The columns a call's and an item's row start with: its file (as its view in the
    /// store of paths, `files` by the group's file index), line, agent and session, from
    /// each row's (file index, line, session) as `at` gives them.
    fn located<T>(
        &mut self,
        group: &Folded,
        files: &[u128],
        rows: &[T],
        at: fn(&T) -> (usize, i64, &str),
    ) {
        let each = || rows.iter().map(at);
        self.paths(
            "source_file",
            each().map(|(file, _, _)| files.get(file).copied()),
        );
        self.int("source_line", each().map(|(_, line, _)| Some(line)));
        self.text("agent", each().map(|_| Some(group.agent)));
        self.text("session_id", each().map(|(_, _, session)| Some(session)));
    }
}

/// The last column of every table of folded groups: the index of a row's group, so that a
/// caller that folds many groups in one call tells their rows apart without their paths.
pub const GROUP: &str = "_group";

/// The CALLS columns of folded groups (their rows one after another).
pub const CALL_COLUMNS: [&str; 29] = [
    "source_file",
    "source_line",
    "agent",
    "session_id",
    "call_index",
    "event_seq",
    "kind",
    "model",
    "agent_id",
    "agent_name",
    "api_call_id",
    "start_time",
    "end_time",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "reasoning_tokens",
    "web_search_requests",
    "web_fetch_requests",
    "speed",
    "service_tier",
    "final_usage",
    "interrupted",
    "token_source",
    "agent_version",
    "provider",
    "logged_cost_usd",
];

/// The SESSIONS columns of folded groups.
pub const SESSION_COLUMNS: [&str; 18] = [
    "session_id",
    "agent",
    "source_files",
    "start_time",
    "end_time",
    "cwd",
    "agent_version",
    "parent_session_id",
    "models",
    "llm_calls",
    "main_calls",
    "subagent_calls",
    "compaction_calls",
    "calls_without_final_usage",
    "interrupted_calls",
    "lines_read",
    "unknown_lines",
    "issues",
];

/// The item columns of folded groups: EVENTS columns (see [`Item`]).
pub const ITEM_COLUMNS: [&str; 13] = [
    "source_file",
    "source_line",
    "agent",
    "session_id",
    "event_seq",
    "item",
    "event_id",
    "timestamp",
    "agent_id",
    "tool_call_id",
    "tool_name",
    "content_bytes",
    "tool_request_bytes",
];

/// The calls ([`CALL_COLUMNS`]), sessions ([`SESSION_COLUMNS`]), issues (file, line,
/// severity, message) and items ([`ITEM_COLUMNS`]) of folded groups as columns, each with
/// [`GROUP`] last, the groups' rows one after another. A group is laid out as it is added and its rows are dropped then,
/// so the rows of all groups are never held beside their columns.
#[derive(Default)]
pub struct Tables {
    calls: Builder,
    sessions: Builder,
    issues: Builder,
    items: Builder,
    /// The number of groups added.
    groups: i64,
    /// Every group's paths, each once: the text the tables' paths are views of.
    paths: StrColumn,
}

impl Tables {
    /// Append the rows of `group`, the next group (each table's last column, [`GROUP`], is
    /// the index of a row's group among those added).
    pub fn add(&mut self, mut group: Folded) {
        let at = self.groups;
        self.groups += 1;
        let files: Vec<u128> = group
            .paths
            .iter()
            .map(|path| self.paths.view(path.as_bytes()))
            .collect();
        let calls = std::mem::take(&mut group.calls);
        self.calls
            .located(&group, &files, &calls, |c| (c.file, c.line, &c.session));
        call_columns(&mut self.calls, &calls);
        self.calls.group(at, calls.len());
        drop(calls);
        let items = std::mem::take(&mut group.items);
        self.items
            .located(&group, &files, &items, |i| (i.file, i.line, &i.session));
        item_columns(&mut self.items, &items);
        self.items.group(at, items.len());
        drop(items);
        session_columns(&mut self.sessions, &group, &files);
        self.sessions.group(at, group.sessions.len());
        issue_columns(&mut self.issues, &group, &files);
        self.issues.group(at, group.issues.len());
    }

    /// The calls, sessions, issues and items frames, and the text of the store of paths
    /// their paths are views of ([`Out::Paths`]: the data buffers of every such column).
    pub fn finish(self) -> (Frame, Frame, Frame, Frame, Vec<Vec<u8>>) {
        (
            self.calls.finish(),
            self.sessions.finish(),
            self.issues.finish(),
            self.items.finish(),
            self.paths.buffers,
        )
    }
}

/// The CALLS columns after [`Builder::located`]'s of a group's calls.
fn call_columns(b: &mut Builder, calls: &[Call]) {
    let each = || calls.iter();
    b.int("call_index", each().map(|c| Some(c.index)));
    b.int("event_seq", each().map(|c| Some(c.seq)));
    b.text("kind", each().map(|c| Some(c.kind)));
    b.text("model", each().map(|c| c.model.as_deref()));
    b.text("agent_id", each().map(|c| c.agent_id.as_deref()));
    b.text("agent_name", each().map(|c| c.agent_name.as_deref()));
    b.text("api_call_id", each().map(|c| c.api_call_id.as_deref()));
    b.time("start_time", each().map(|c| c.start_time));
    b.time("end_time", each().map(|c| c.end_time));
    b.int("input_tokens", each().map(|c| c.usage.input));
    b.int("cache_read_tokens", each().map(|c| c.usage.cache_read));
    b.int("cache_write_tokens", each().map(|c| c.usage.cache_write));
    b.int(
        "cache_write_1h_tokens",
        each().map(|c| c.usage.cache_write_1h),
    );
    b.int("output_tokens", each().map(|c| c.usage.output));
    b.int("reasoning_tokens", each().map(|c| c.usage.reasoning));
    b.int("web_search_requests", each().map(|c| c.usage.web_search));
    b.int("web_fetch_requests", each().map(|c| c.usage.web_fetch));
    b.text("speed", each().map(|c| c.speed.as_deref()));
    b.text("service_tier", each().map(|c| c.service_tier.as_deref()));
    b.flag("final_usage", each().map(|c| Some(c.final_usage)));
    b.flag("interrupted", each().map(|c| Some(c.interrupted)));
    b.text("token_source", each().map(|_| Some("observed")));
    b.text("agent_version", each().map(|c| c.agent_version.as_deref()));
    b.text("provider", each().map(|c| c.provider.as_deref()));
    b.text("logged_cost_usd", each().map(|c| c.logged_cost.as_deref()));
}

/// The SESSIONS columns of a group; a session's `issues` counts the issues of its files.
fn session_columns(b: &mut Builder, group: &Folded, files: &[u128]) {
    let each = || group.sessions.iter();
    b.text("session_id", each().map(|s| Some(s.id.as_str())));
    b.text("agent", each().map(|_| Some(group.agent)));
    b.lists(
        "source_files",
        || ListValues::Paths(Vec::new()),
        each().map(|s| s.files.iter().filter_map(|&f| files.get(f).copied())),
    );
    b.time("start_time", each().map(|s| s.start_time));
    b.time("end_time", each().map(|s| s.end_time));
    b.text("cwd", each().map(|s| s.cwd.as_deref()));
    b.text("agent_version", each().map(|s| s.agent_version.as_deref()));
    b.text("parent_session_id", each().map(|s| s.parent.as_deref()));
    b.lists(
        "models",
        || ListValues::Text(StrColumn::default()),
        each().map(|s| s.models.iter().map(String::as_str)),
    );
    b.int("llm_calls", each().map(|s| Some(s.calls)));
    b.int("main_calls", each().map(|s| Some(s.main_calls)));
    b.int("subagent_calls", each().map(|s| Some(s.subagent_calls)));
    b.int("compaction_calls", each().map(|s| Some(s.compaction_calls)));
    b.int(
        "calls_without_final_usage",
        each().map(|s| Some(s.calls_without_final_usage)),
    );
    b.int(
        "interrupted_calls",
        each().map(|s| Some(s.interrupted_calls)),
    );
    b.int("lines_read", each().map(|s| Some(s.lines)));
    b.int("unknown_lines", each().map(|s| Some(s.unknown_lines)));
    let mut per_file: HashMap<usize, i64> = HashMap::new();
    for issue in &group.issues {
        *per_file.entry(issue.file).or_insert(0) += 1;
    }
    b.int(
        "issues",
        each().map(|s| Some(s.files.iter().filter_map(|f| per_file.get(f)).sum())),
    );
}

/// The item columns after [`Builder::located`]'s of a group's items.
fn item_columns(b: &mut Builder, items: &[Item]) {
    let each = || items.iter();
    b.int("event_seq", each().map(|i| Some(i.seq)));
    b.text("item", each().map(|i| Some(i.kind)));
    b.text("event_id", each().map(|i| i.event_id.as_deref()));
    b.time("timestamp", each().map(|i| i.time));
    b.text("agent_id", each().map(|i| i.agent_id.as_deref()));
    b.text("tool_call_id", each().map(|i| i.tool_call_id.as_deref()));
    b.text("tool_name", each().map(|i| i.tool_name.as_deref()));
    b.int("content_bytes", each().map(|i| i.content_bytes));
    b.int("tool_request_bytes", each().map(|i| i.tool_request_bytes));
}

/// The ISSUES columns of a group.
fn issue_columns(b: &mut Builder, group: &Folded, files: &[u128]) {
    let each = || group.issues.iter();
    b.paths("file", each().map(|i| files.get(i.file).copied()));
    b.int("line", each().map(|i| i.line));
    b.text("severity", each().map(|i| Some(i.severity)));
    b.text("message", each().map(|i| Some(i.message.as_str())));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::json::Shape;

    #[test]
    fn a_read_error_is_worded_without_rusts_os_error_number() {
        let denied = std::io::Error::from_raw_os_error(13);
        assert_eq!(io_reason(&denied), "permission denied");
        let issue = file_issue(0, &denied);
        assert_eq!(issue.message, "cannot read the file: permission denied");
    }

    /// Column `name` of `frame`.
    fn column_named<'f>(frame: &'f Frame, name: &str) -> Option<&'f Out> {
        let at = frame.names.iter().position(|n| *n == name)?;
        frame.columns.get(at)
    }

    /// The rows of column `name` of `frame` as `Option<String>`s (a column without rows is
    /// all null: `python::column_array`).
    fn texts(frame: &Frame, name: &str) -> Vec<Option<String>> {
        match column_named(frame, name) {
            Some(Out::Plain(Column::Str(column))) if column.is_empty() => vec![None; frame.rows],
            Some(Out::Plain(Column::Str(column))) => (0..frame.rows)
                .map(|row| {
                    column
                        .get(row)
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn ints(frame: &Frame, name: &str) -> Vec<Option<i64>> {
        match column_named(frame, name) {
            Some(Out::Plain(Column::Int(column))) if column.values.is_empty() => {
                vec![None; frame.rows]
            }
            Some(Out::Plain(Column::Int(column))) => (0..frame.rows)
                .map(|row| column.valid.get(row).then(|| column.values[row]))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A group's rows of a text column and of an integer column.
    type Rows = (Vec<Option<&'static str>>, Vec<Option<i64>>);

    #[test]
    fn lazy_columns_hold_the_rows_they_were_given() {
        let long = "a value longer than twelve bytes";
        // (text rows, int rows) of each group, laid out one group after another
        let groups: [Rows; 5] = [
            (vec![], vec![]),
            (vec![None, None], vec![None, None]),
            (vec![None, Some(long)], vec![None, Some(4)]),
            (
                vec![Some(long), Some("short"), None],
                vec![None, Some(5), Some(6)],
            ),
            (vec![], vec![]),
        ];
        let mut b = Builder::default();
        let (mut texts_in, mut ints_in) = (Vec::new(), Vec::new());
        // every state: a column all null, one all one text, one null then one text, one
        // changing text, and integers null until a value
        for (at, (text, int)) in groups.iter().enumerate() {
            let rows = text.len();
            b.text("nulls", std::iter::repeat_n(None, rows));
            b.text("same", std::iter::repeat_n(Some(long), rows));
            b.text("mixed", text.iter().copied());
            b.int("count", int.iter().copied());
            b.group(i64::try_from(at).unwrap_or(0), rows);
            texts_in.extend(text.iter().map(|t| t.map(str::to_owned)));
            ints_in.extend(int.iter().copied());
        }
        let frame = b.finish();
        assert_eq!(frame.rows, 7);
        assert_eq!(texts(&frame, "nulls"), vec![None; 7]);
        assert_eq!(texts(&frame, "same"), vec![Some(long.to_owned()); 7]);
        assert_eq!(texts(&frame, "mixed"), texts_in);
        assert_eq!(ints(&frame, "count"), ints_in);
        // what never held a value or a second text was never built row by row
        let built = |name: &str| matches!(column_named(&frame, name), Some(Out::Plain(c)) if c.len() == frame.rows);
        assert!(!built("nulls"));
        assert!(built("same") && built("mixed") && built("count"));
    }

    /// The text a view of the store of paths stands for (`store`: its buffers).
    fn path_of(store: &[Vec<u8>], view: u128) -> String {
        let bytes = view.to_le_bytes();
        let word = |at: usize| {
            let four: [u8; 4] = bytes[at..at + 4].try_into().unwrap_or_default();
            u32::from_le_bytes(four) as usize
        };
        let len = word(0);
        let text = if len <= 12 {
            &bytes[4..4 + len]
        } else {
            &store[word(8)][word(12)..word(12) + len]
        };
        String::from_utf8_lossy(text).into_owned()
    }

    #[test]
    fn every_table_names_a_path_from_one_copy_of_it() {
        let paths = [
            "/home/u/.pi/sessions/a.jsonl",
            "/home/u/.pi/sessions/b.jsonl",
        ];
        let group = |calls: usize| Folded {
            agent: "pi",
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            calls: (0..calls)
                .map(|at| Call {
                    file: at % 2,
                    session: "s".into(),
                    kind: "main",
                    ..Call::default()
                })
                .collect(),
            sessions: vec![Session {
                files: vec![1, 0],
                lines: 1,
                ..Session::new("s")
            }],
            issues: vec![Issue {
                file: 1,
                line: Some(3),
                severity: "warning",
                message: "m".into(),
            }],
            ..Folded::default()
        };
        let mut tables = Tables::default();
        tables.add(group(3));
        tables.add(group(1));
        let (calls, sessions, issues, _, store) = tables.finish();
        // each group's paths once: two groups of two paths
        let held: usize = store.iter().map(Vec::len).sum();
        assert_eq!(held, 2 * paths.iter().map(|p| p.len()).sum::<usize>());
        let column = |frame: &Frame, name: &str| {
            column_named(frame, name)
                .map(|out| match out {
                    Out::Paths { views, .. }
                    | Out::Lists {
                        values: ListValues::Paths(views),
                        ..
                    } => views.iter().map(|v| path_of(&store, *v)).collect(),
                    _ => Vec::new(),
                })
                .unwrap_or_default()
        };
        let [a, b] = paths;
        assert_eq!(column(&calls, "source_file"), [a, b, a, a]);
        assert_eq!(column(&sessions, "source_files"), [b, a, b, a]);
        assert_eq!(column(&issues, "file"), [b, b]);
    }

    #[test]
    fn weighted_batches_merge_every_result_in_order() {
        for weights in [
            vec![],
            vec![500],
            vec![1; 300],
            vec![3, 200, 1, 1, 90, 90, 500, 2],
        ] {
            let mut merged = Vec::new();
            in_order_by(&weights, |w| *w, |at, w| (at, *w), |part| merged.push(part));
            let expected: Vec<(usize, usize)> = weights.iter().copied().enumerate().collect();
            assert_eq!(merged, expected);
        }
    }

    #[test]
    fn array_items_split_at_top_level_commas_only() {
        let line = br#"{"a":[{"x":"a,]b\"c"},[1,2], 3 ,"s"]}"#;
        let schema = Schema::new(&[("a", Shape::Any)]);
        let mut fields = Fields::new(&schema);
        json::parse(line, &schema, &mut fields).expect("valid");
        let node = schema.find("a").expect("a");
        let items = array_items(line, fields.get(node));
        let expected: Vec<&[u8]> = vec![br#"{"x":"a,]b\"c"}"#, b"[1,2]", b"3", br#""s""#];
        assert_eq!(items, expected);
    }

    #[test]
    fn a_test_group_removes_its_directory_when_dropped() {
        let files = testing::group(&[("p/s1.jsonl", "{}\n"), ("p/s1/sub/a.jsonl", "")]);
        let dir = files.dir().to_path_buf();
        assert!(files.iter().all(|path| path.is_file()));
        drop(files);
        assert!(!dir.exists());
    }

    #[test]
    fn bad_lines_are_issues_and_the_rest_is_read() {
        let data = b"{\"a\":1}\n{\"a\":\xff2}\n{\"a\":\x00\x003}\n\n[1]\n{\"a\":4}\n{\"a\":";
        let files = testing::group(&[("x.jsonl", data)]);
        let (dir, path) = (files.dir(), &files[0]);
        let schema = Schema::new(&[("a", Shape::Scalar)]);
        let mut fields = Fields::new(&schema);
        let mut seen = Vec::new();
        let node = schema.find("a").expect("a");
        let read = read_file(path, 0, &schema, &mut fields, |line| {
            seen.push((line.number, line.int(node)));
        });
        let (lines, mut issues) = (read.lines, read.issues);
        assert_eq!(read.torn.as_deref(), Some(&b"{\"a\":"[..]));
        assert_eq!(lines, 7);
        assert_eq!(seen, vec![(1, Some(1)), (3, Some(3)), (6, Some(4))]);
        let got: Vec<(Option<i64>, &str)> = issues.iter().map(|i| (i.line, i.severity)).collect();
        assert_eq!(
            got,
            vec![
                (Some(2), "warning"),
                (Some(2), "error"),
                (Some(3), "warning"),
                (Some(4), "warning"),
                (Some(5), "error"),
                (Some(7), "error"),
            ]
        );
        assert!(issues
            .last()
            .is_some_and(|i| i.message.contains("truncated line?")));
        let missing = read_file(&dir.join("none"), 3, &schema, &mut fields, |_| {});
        issues.extend(missing.issues);
        assert_eq!(missing.lines, 0);
        assert!(issues
            .last()
            .is_some_and(|i| i.file == 3 && i.line.is_none()));
    }
}

/// Helpers for the folds' tests: groups of literal files, and a fold's figures.
#[cfg(test)]
pub mod testing {
    use std::collections::BTreeMap;
    use std::ops::Deref;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::Folded;

    /// A test's files under a temporary directory of their own, which goes when the group
    /// is dropped (a failed assertion's unwinding included): it reads as the files' paths.
    pub struct Group {
        dir: PathBuf,
        paths: Vec<PathBuf>,
    }

    impl Group {
        /// The directory the files are in.
        pub fn dir(&self) -> &Path {
            &self.dir
        }
    }

    impl Deref for Group {
        type Target = [PathBuf];

        fn deref(&self) -> &[PathBuf] {
            &self.paths
        }
    }

    impl Drop for Group {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Write `files` (relative path, text) under a new temporary directory.
    pub fn group<T: AsRef<[u8]>>(files: &[(&str, T)]) -> Group {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "agentcost-fold-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // Made before any file, so that the guard removes whatever a failed write left.
        std::fs::create_dir_all(&dir).expect("a test directory");
        let mut group = Group {
            dir,
            paths: Vec::new(),
        };
        for (name, text) in files {
            let path = group.dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("a test directory");
            }
            std::fs::write(&path, text.as_ref()).expect("a test file");
            group.paths.push(path);
        }
        group
    }

    /// The figures of a session's lines `base` folded by `fold` as one file, and whether
    /// they stay the same with line `twice` (modulo their number) written twice, and with
    /// the lines up to `cut` copied into a second file read after the first or before it.
    pub fn copies_change_nothing(
        fold: fn(&[PathBuf]) -> Folded,
        base: &[String],
        twice: usize,
        cut: usize,
    ) -> (BTreeMap<String, [i64; 8]>, bool) {
        let text =
            |lines: &[String]| -> String { lines.iter().map(|l| format!("{l}\n")).collect() };
        let folded = |files: &[(&str, String)]| figures(&fold(&group(files)));
        let expected = folded(&[("p/s1.jsonl", text(base))]);
        let mut doubled = base.to_vec();
        if let Some(line) = doubled.get(twice % base.len().max(1)).cloned() {
            doubled.insert(twice % base.len(), line);
        }
        let copied = base.get(..=cut % base.len().max(1)).unwrap_or(base);
        let same = [
            vec![("p/s1.jsonl", text(&doubled))],
            vec![("p/s1.jsonl", text(base)), ("p/s2.jsonl", text(copied))],
            vec![("p/s2.jsonl", text(copied)), ("p/s1.jsonl", text(base))],
        ]
        .iter()
        .all(|files| folded(files) == expected);
        (expected, same)
    }

    /// Whether each session's calls and items are numbered 1..n between them, each once.
    pub fn numbered(folded: &Folded) -> bool {
        let mut seqs: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
        for call in &folded.calls {
            seqs.entry(&call.session).or_default().push(call.seq);
        }
        for item in &folded.items {
            seqs.entry(&item.session).or_default().push(item.seq);
        }
        seqs.into_values().all(|mut s| {
            s.sort_unstable();
            s.iter()
                .copied()
                .eq(1..=i64::try_from(s.len()).unwrap_or(0))
        })
    }

    /// Per session: calls, input, cache read, cache write, 1-hour writes, output, reasoning
    /// (unknown counted as 0), and calls without final usage.
    pub fn figures(folded: &Folded) -> BTreeMap<String, [i64; 8]> {
        let mut out: BTreeMap<String, [i64; 8]> = BTreeMap::new();
        for s in &folded.sessions {
            out.entry(s.id.clone()).or_default();
        }
        for call in &folded.calls {
            let u = &call.usage;
            let f = out.entry(call.session.clone()).or_default();
            let add = [
                Some(1),
                u.input,
                u.cache_read,
                u.cache_write,
                u.cache_write_1h,
                u.output,
                u.reasoning,
                Some(i64::from(!call.final_usage)),
            ];
            for (total, value) in f.iter_mut().zip(add) {
                *total += value.unwrap_or(0);
            }
        }
        out
    }
}
