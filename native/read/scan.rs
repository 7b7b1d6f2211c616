//! Files in, columns out: every line of every file becomes a row or an issue.
//!
//! Each file is read once, in large blocks, and split into lines with `memchr`; files are
//! scanned in batches of about `batch_bytes` on rayon's threads, each batch into its own
//! columns. A line is checked in the order the reader always has: a byte order mark opening
//! it (dropped, with a warning), bytes that are not UTF-8
//! (replaced, with a warning), NUL bytes left by a crash (removed, with a warning), blank
//! (a warning and nothing else), then JSON (an error), then its fields (shape warnings, a
//! missing type is an error, a missing or bad time a warning). Nothing here can panic on any
//! input; should a bug panic anyway, the batch is scanned again file by file and only the file
//! that panicked is lost, reported as an error.
//!
//! A growing file can be scanned in goes ([`Scanner::scan_from`]): each file from the
//! [`Resume`] state an earlier scan ended at, so only the bytes written since are read.
//!
//! Speed (see `benchmarks/README.md`, "Scanner speed"): string bodies are searched for a quote
//! or backslash 32 bytes at a time (`memchr`'s AVX2 search) in a line without control
//! characters, else 16 bytes at a time for a quote, backslash or control character; unwanted values are validated without
//! being recorded; keys are found by a hash of their first 16 bytes; a block's complete lines
//! are checked for UTF-8 at once, and for NULs only when a line is not JSON; a row fills only
//! the columns of the fields its line has, the others padded with nulls in bulk; a batch's
//! columns are sized from the rows per byte of the thread's batch before.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use rayon::prelude::*;

use crate::read::format::{self, Dtype, Format, Rule};
use crate::read::json::{self, Fields, Kind, Schema, Value};
use crate::read::line;
use crate::read::table::{BoolColumn, Column, Int32Column, IntColumn, StrColumn, Table};

/// Bytes read from a file at once, unless the caller says otherwise. A block is read into
/// the buffer, then passed over three times (newlines, UTF-8, the lines themselves):
/// small enough to stay in a core's L2 cache for all of them, where 4 MB went back to the
/// shared cache or memory each time (the scanner's CPU time on the 1 GB Copilot tree, AMD
/// EPYC with 1 MB of L2 a core, median of 21 runs: 1.26 s with 4 MB blocks, 1.17 s with 256
/// KB; against full validation by sonic-rs, 1.47-1.50x then, 1.44x now).
pub const BLOCK: usize = 256 << 10;
thread_local! {
    /// Each thread's read buffer, kept from batch to batch.
    static BUFFERS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Bytes per row that a thread's first batch's columns are sized for up front (fewer than
/// most logs have, so they rarely grow; memory reserved and never written is never made
/// resident). Later batches are sized from the rows the thread's last batch had for its
/// bytes (`ROW_BYTES_SEEN`), less an eighth, so columns have little room to spare: their
/// memory is reused by the next batches (the allocator's freed memory, or `table::Pool`)
/// only as far as it was written, and memory not yet written costs a page fault per 4 KB.
/// On the 1 GB Copilot tree (2,000 bytes a row, batches within 7% of it) that took
/// `scan_bench`'s page faults from 41,500 to 27,800 a run (its digest included).
const ROW_BYTES: u64 = 1024;
thread_local! {
    /// Bytes scanned per row in this thread's last batch (0: none yet).
    static ROW_BYTES_SEEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One file to scan: its path, the session it belongs to when it has no session start (the
/// directory name or file stem), and how many bytes to read (what discovery saw).
#[derive(Clone, Debug)]
pub struct FileSpec {
    pub path: PathBuf,
    pub hint: String,
    pub size: Option<u64>,
}

/// A problem with one line (or, with no line, a whole file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub file: usize,
    pub line: Option<i64>,
    pub severity: &'static str,
    pub message: String,
}

/// The warning of a per-model totals field with a number no double holds (read as null).
pub const TOTALS_OUT_OF_RANGE: &str =
    "shutdown modelMetrics has a number beyond a double's range; read as null";

/// The per-model totals field of one line, as JSON text, for `model_metrics` to decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Totals {
    pub file: usize,
    pub line: i64,
    pub session: String,
    pub process: i64,
    pub json: String,
}

/// A file that could not be read: its rows are dropped. `errno` is the OS error, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub file: usize,
    pub errno: Option<i32>,
    pub message: String,
}

/// What a batch of files gave.
pub struct Batch {
    pub events: Table,
    pub issues: Vec<Issue>,
    pub totals: Vec<Totals>,
    pub failures: Vec<Failure>,
    /// With [`Scanner::scan_from`]: where each file's scan stopped (file index, state).
    pub ends: Vec<(usize, Resume)>,
}

/// Where the scan of one file stopped, to go on from there as if the file were scanned
/// whole ([`Scanner::scan_from`]): what the line numbers, byte offsets, process indexes and
/// the cutting into sessions of later lines depend on.
///
/// One difference is kept, by design: rows already returned are never renamed. A part of the
/// file (see `Builder::sessions`) is named by its first start that names a session; lines of
/// a part read before that start (lines before the file's first `session.start`, or after a
/// start without a session id) keep the name they were given then, the hint (`hint#n` for the
/// n-th part), where a whole-file scan gives them the session named later.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    /// Bytes of the file scanned: just after its last complete line.
    pub offset: u64,
    /// Lines scanned (the next line's number is one more).
    pub lines: i64,
    /// `session.resume` lines seen: the next line's process index.
    pub resumes: i64,
    /// Session starts that began a part so far (a start repeating an earlier line's event id
    /// begins none).
    pub starts: usize,
    /// The part the last line scanned belongs to.
    pub part: usize,
    /// The session of each part so far, once one of its starts named it.
    pub names: Vec<Option<Vec<u8>>>,
    /// The part each start that began one began, by its event id.
    pub start_parts: HashMap<Vec<u8>, usize>,
    /// The event ids of every line so far.
    pub ids: HashSet<Vec<u8>>,
}

/// Field nodes by event type (its index in `Scanner::types`), for type-dependent rules.
type Typed = Vec<(usize, Vec<usize>)>;

/// No event type the rules name.
const OTHER: usize = usize::MAX;

/// A format with its paths resolved to schema nodes.
pub struct Scanner {
    format: Format,
    schema: Schema,
    columns: Vec<(Rule, Vec<usize>, Typed)>,
    /// The columns in the order a row fills them, grouped by rule, so the branch to each
    /// rule's code goes where it went for the column before, nearly always; a column's rank
    /// is its place in this order.
    by_rank: Vec<usize>,
    /// The ranks of the columns each field node feeds, and of those filled on every row
    /// (never null, or depending on the event type).
    by_node: Vec<Vec<usize>>,
    always: Vec<usize>,
    /// With 64 columns or fewer (one word of marks): the bit of each rank in `by_node[n]`,
    /// and of those in `always`, so a row's marks are one OR per field it has.
    node_bits: Option<(Vec<u64>, u64)>,
    type_node: usize,
    time_node: usize,
    session_node: usize,
    id_node: usize,
    id_column: Option<usize>,
    totals_node: usize,
    text_nodes: Vec<usize>,
    assistant_nodes: Vec<usize>,
    extras: Typed,
    /// The event types the format's rules name: a line's type is found among them once
    /// ([`Scanner::type_of`]) and the rules compare indexes.
    types: Vec<&'static [u8]>,
    start_type: usize,
    resume_type: usize,
    totals_type: usize,
    text_types: Vec<usize>,
    assistant_type: usize,
}

/// Column names every table starts with, before the format's own.
pub const PROVENANCE: [&str; 5] = [
    "source_file",
    "source_line",
    "byte_offset",
    "session_id",
    "process_index",
];

impl Scanner {
    /// The scanner of `format`. Paths the format names but does not declare as fields are a
    /// bug of the format table: they resolve to no field (always absent).
    pub fn new(format: Format) -> Scanner {
        let schema = Schema::new(format.fields);
        let nodes = |paths: &[&str]| -> Vec<usize> {
            paths
                .iter()
                .map(|p| schema.find(p).unwrap_or(usize::MAX))
                .collect()
        };
        let node = |path: &str| schema.find(path).unwrap_or(usize::MAX);
        let mut types: Vec<&'static [u8]> = Vec::new();
        let mut type_id = |kind: &'static str| {
            let kind = kind.as_bytes();
            types.iter().position(|&t| t == kind).unwrap_or_else(|| {
                types.push(kind);
                types.len() - 1
            })
        };
        let content = format.content;
        let columns: Vec<(Rule, Vec<usize>, Typed)> = format
            .columns
            .iter()
            .map(|&(_, rule)| {
                let typed = rule
                    .by_type()
                    .iter()
                    .map(|&(kind, paths)| (type_id(kind), nodes(paths)))
                    .collect();
                (rule, nodes(rule.paths()), typed)
            })
            .collect();
        let extras = content
            .extras
            .iter()
            .map(|&(kind, paths)| (type_id(kind), nodes(paths)))
            .collect();
        let text_types = content.text_types.iter().map(|&t| type_id(t)).collect();
        let start_type = type_id(format.start_type);
        let resume_type = type_id(format.resume_type);
        let totals_type = type_id(format.totals.0);
        let assistant_type = type_id(content.assistant_type);
        let mut by_rank: Vec<usize> = (0..columns.len()).collect();
        by_rank.sort_by_key(|&c| columns.get(c).map_or(0, |(rule, _, _)| rule_group(*rule)));
        let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); schema.nodes.len()];
        let mut always = Vec::new();
        for (rank, &index) in by_rank.iter().enumerate() {
            let Some((rule, nodes, typed)) = columns.get(index) else {
                continue;
            };
            if matches!(
                rule,
                Rule::ContentBytes | Rule::FlagOrFalse(_) | Rule::Time(_)
            ) {
                always.push(rank);
                continue;
            }
            let fed = nodes.iter().chain(typed.iter().flat_map(|(_, n)| n));
            for &node in fed {
                if let Some(ranks) = by_node.get_mut(node) {
                    if !ranks.contains(&rank) {
                        ranks.push(rank);
                    }
                }
            }
        }
        let bits = |ranks: &[usize]| ranks.iter().fold(0u64, |bits, &rank| bits | 1 << rank);
        let node_bits = (columns.len() <= 64).then(|| {
            let nodes = by_node.iter().map(|ranks| bits(ranks)).collect();
            (nodes, bits(&always))
        });
        Scanner {
            by_rank,
            by_node,
            always,
            node_bits,
            columns,
            type_node: node(format.type_field),
            time_node: node(format.time_field),
            session_node: node(format.session_field),
            id_node: node(format.id_field),
            id_column: format
                .columns
                .iter()
                .position(|&(name, _)| name == format.id_column),
            totals_node: node(format.totals.1),
            text_nodes: nodes(content.text),
            assistant_nodes: nodes(content.assistant),
            extras,
            types,
            start_type,
            resume_type,
            totals_type,
            text_types,
            assistant_type,
            format,
            schema,
        }
    }

    /// The index in `types` of an event type, or [`OTHER`].
    fn type_of(&self, kind: &[u8]) -> usize {
        self.types
            .iter()
            .position(|t| t.len() == kind.len() && *t == kind)
            .unwrap_or(OTHER)
    }

    /// The names of the event table's columns, in order.
    pub fn column_names(&self) -> Vec<&'static str> {
        PROVENANCE
            .iter()
            .copied()
            .chain(self.format.columns.iter().map(|&(name, _)| name))
            .collect()
    }

    /// Scan `files` (their indexes in `files` name them in the output) in batches of about
    /// `batch_bytes`, reading `block` bytes at once, on rayon's threads; batches come back in
    /// file order.
    pub fn scan(&self, files: &[FileSpec], batch_bytes: u64, block: usize) -> Vec<Batch> {
        self.scan_batches(files, None, batch_bytes, block)
    }

    /// As [`Scanner::scan`], each file from a saved state (`from[i]` for `files[i]`; the
    /// default state is the file's start). A last line without its newline is left for the
    /// next scan (it is being written), not reported; each batch's `ends` say where every
    /// file stopped, to pass back next time.
    pub fn scan_from(
        &self,
        files: &[FileSpec],
        from: &[Resume],
        batch_bytes: u64,
        block: usize,
    ) -> Vec<Batch> {
        self.scan_batches(files, Some(from), batch_bytes, block)
    }

    fn scan_batches(
        &self,
        files: &[FileSpec],
        from: Option<&[Resume]>,
        batch_bytes: u64,
        block: usize,
    ) -> Vec<Batch> {
        let block = block.max(1);
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let mut size = 0;
        for (index, file) in files.iter().enumerate() {
            if batches.is_empty() || size >= batch_bytes {
                batches.push(Vec::new());
                size = 0;
            }
            if let Some(batch) = batches.last_mut() {
                batch.push(index);
            }
            size += file.size.unwrap_or(BLOCK as u64).max(1);
        }
        batches
            .par_iter()
            .map(|indexes| self.scan_batch(files, from, indexes, block))
            .collect()
    }

    /// A batch of no rows (the event table's columns, empty).
    pub fn empty_batch(&self) -> Batch {
        Builder::new(self).finish()
    }

    /// One batch; if scanning it panics (a bug), file by file so one file alone is lost.
    fn scan_batch(
        &self,
        files: &[FileSpec],
        from: Option<&[Resume]>,
        indexes: &[usize],
        block: usize,
    ) -> Batch {
        let run = |indexes: &[usize]| {
            catch_unwind(AssertUnwindSafe(|| {
                let mut out = Builder::new(self);
                out.block = block;
                let bytes: u64 = indexes
                    .iter()
                    .filter_map(|&i| files.get(i).and_then(|f| f.size))
                    .sum();
                let seen = ROW_BYTES_SEEN.with(std::cell::Cell::get);
                let per_row = match seen {
                    0 => ROW_BYTES,
                    seen => (seen - seen / 8).clamp(64, 4 * ROW_BYTES),
                };
                out.reserve(usize::try_from(bytes / per_row).unwrap_or(0).min(1 << 20));
                for &index in indexes {
                    if let Some(file) = files.get(index) {
                        let start = from.map(|f| f.get(index).cloned().unwrap_or_default());
                        if let Some(end) = out.file(index, file, start) {
                            out.ends.push((index, end));
                        }
                    }
                }
                let rows = u64::try_from(out.source_line.values.len()).unwrap_or(0);
                if rows > 0 && out.scanned > 0 {
                    ROW_BYTES_SEEN.with(|seen| seen.set(out.scanned / rows));
                }
                out.finish()
            }))
        };
        if let Ok(batch) = run(indexes) {
            return batch;
        }
        let mut parts: Vec<Batch> = Vec::new();
        for &index in indexes {
            match run(std::slice::from_ref(&index)) {
                Ok(batch) => parts.push(batch),
                Err(_) => {
                    let mut lost = self.empty_batch();
                    lost.failures.push(Failure {
                        file: index,
                        errno: None,
                        message: "internal error in the log scanner; file skipped".into(),
                    });
                    if let Some(from) = from {
                        let start = from.get(index).cloned().unwrap_or_default();
                        lost.ends.push((index, start));
                    }
                    parts.push(lost);
                }
            }
        }
        merge(self.empty_batch(), parts)
    }
}

/// Batches in one (used after a panic only: the parts are tiny then, one file each).
fn merge(mut first: Batch, parts: Vec<Batch>) -> Batch {
    for part in parts {
        first.issues.extend(part.issues);
        first.totals.extend(part.totals);
        first.failures.extend(part.failures);
        first.ends.extend(part.ends);
        first.events = append(first.events, part.events);
    }
    first
}

fn append(mut into: Table, mut from: Table) -> Table {
    into.pad();
    from.pad();
    for (a, b) in into.columns.iter_mut().zip(from.columns) {
        match (a, b) {
            (Column::Str(a), Column::Str(b)) => {
                for row in 0..b.len() {
                    a.push_opt(b.get(row).as_deref(), false);
                }
            }
            (Column::Int(a), Column::Int(b)) | (Column::Time(a), Column::Time(b)) => {
                a.values.extend(b.values);
                a.valid.append(&b.valid);
            }
            (Column::Int32(a), Column::Int32(b)) => {
                a.values.extend(b.values);
                a.valid.append(&b.valid);
            }
            (Column::Bool(a), Column::Bool(b)) => {
                a.values.append(&b.values);
                a.valid.append(&b.valid);
            }
            _ => {}
        }
    }
    into
}

/// A session start line: its row within its file, the session it names, its event id.
type Start = (usize, Option<Vec<u8>>, Option<Vec<u8>>);

/// The state of one file being scanned.
struct FileState {
    index: usize,
    first_row: usize,
    first_totals: usize,
    /// The row within the file of each of its totals lines (their session is known once the
    /// file is done).
    totals_rows: Vec<usize>,
    /// Session starts in the file: (row within the file, the session id it names, its event
    /// id).
    starts: Vec<Start>,
    resumes: i64,
    offset: i64,
    /// Lines read so far (including those before a resumed scan's start).
    lines: i64,
    /// A resumed scan: a last line without its newline is left unread.
    partial: bool,
}

/// Read into all of `into` (fewer bytes only at the end of the file), as `read_to_end` reads
/// a `take` of it: the bytes read, or the error (the bytes read before it are dropped).
fn read_full(file: &mut File, into: Option<&mut [u8]>) -> std::io::Result<usize> {
    let into = into.unwrap_or_default();
    let mut got = 0;
    while let Some(rest) = into.get_mut(got..).filter(|rest| !rest.is_empty()) {
        match file.read(rest) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(got)
}

/// Columns and issues of one batch, filled line by line.
struct Builder<'s> {
    scanner: &'s Scanner,
    fields: Fields,
    source_file: StrColumn,
    source_line: IntColumn,
    byte_offset: IntColumn,
    session_id: StrColumn,
    process_index: Int32Column,
    columns: Vec<Column>,
    issues: Vec<Issue>,
    totals: Vec<Totals>,
    failures: Vec<Failure>,
    ends: Vec<(usize, Resume)>,
    /// The columns a row fills (see `Builder::event`), and which are in it.
    todo: Vec<usize>,
    marked: Vec<u64>,
    scratch: Vec<u8>,
    buffer: Vec<u8>,
    block: usize,
    /// Rows the batch's columns are sized for (`Builder::reserve`).
    room: usize,
    /// Bytes of lines scanned in the batch.
    scanned: u64,
}

impl<'s> Builder<'s> {
    fn new(scanner: &'s Scanner) -> Builder<'s> {
        let columns = scanner
            .columns
            .iter()
            .map(|(rule, _, _)| match rule.dtype() {
                Dtype::Str => Column::Str(StrColumn::default()),
                Dtype::Int => Column::Int(IntColumn::default()),
                Dtype::Bool => Column::Bool(BoolColumn::default()),
                Dtype::Time => Column::Time(IntColumn::default()),
            })
            .collect();
        Builder {
            scanner,
            fields: Fields::new(&scanner.schema),
            source_file: StrColumn::default(),
            source_line: IntColumn::default(),
            byte_offset: IntColumn::default(),
            session_id: StrColumn::default(),
            process_index: Int32Column::default(),
            columns,
            issues: Vec::new(),
            totals: Vec::new(),
            failures: Vec::new(),
            ends: Vec::new(),
            todo: Vec::new(),
            marked: vec![0; scanner.columns.len().div_ceil(64)],
            scratch: Vec::new(),
            buffer: Vec::new(),
            block: BLOCK,
            room: 0,
            scanned: 0,
        }
    }

    /// Room for `rows` rows in every column: now in those filled on every row, in the others
    /// when their first value comes (see `Column::reserve_first`).
    fn reserve(&mut self, rows: usize) {
        self.source_file.reserve(rows);
        self.source_line.reserve(rows);
        self.byte_offset.reserve(rows);
        self.session_id.reserve(rows);
        self.process_index.reserve(rows);
        self.room = rows;
    }

    fn finish(mut self) -> Batch {
        // The read buffer goes back to the thread for its next batch (fresh memory costs a
        // page fault per 4 KB).
        let buffer = std::mem::take(&mut self.buffer);
        BUFFERS.with(|b| {
            if buffer.capacity() > b.borrow().capacity() {
                b.replace(buffer);
            }
        });
        // A column no row of the batch had a value for stays empty: all null (see
        // `Table`), never written, so its memory is never made resident.
        let rows = self.source_line.values.len();
        for column in &mut self.columns {
            if !column.is_empty() {
                column.pad(rows);
            }
        }
        let mut columns = vec![
            Column::Str(self.source_file),
            Column::Int(self.source_line),
            Column::Int(self.byte_offset),
            Column::Str(self.session_id),
            Column::Int32(self.process_index),
        ];
        columns.extend(self.columns);
        Batch {
            events: Table {
                names: self.scanner.column_names(),
                columns,
            },
            issues: self.issues,
            totals: self.totals,
            failures: self.failures,
            ends: self.ends,
        }
    }

    /// Every line of one file, read once in blocks; with `from`, the lines after that state,
    /// and the state at the end.
    fn file(&mut self, index: usize, spec: &FileSpec, from: Option<Resume>) -> Option<Resume> {
        let resumed = from.is_some();
        let mut carry = from.unwrap_or_default();
        let mut state = FileState {
            index,
            first_row: self.source_line.values.len(),
            first_totals: self.totals.len(),
            totals_rows: Vec::new(),
            starts: Vec::new(),
            resumes: carry.resumes,
            offset: i64::try_from(carry.offset).unwrap_or(i64::MAX),
            lines: carry.lines,
            partial: resumed,
        };
        let start = state.offset;
        let read = self.read_lines(spec, &mut state);
        self.scanned += u64::try_from(state.offset.saturating_sub(start)).unwrap_or(0);
        let failed = if let Err(error) = read {
            self.failures.push(Failure {
                file: index,
                errno: error.raw_os_error(),
                message: error.to_string(),
            });
            true
        } else {
            false
        };
        let unchanged = (resumed && failed).then(|| carry.clone());
        let rows = self.source_line.values.len() - state.first_row;
        let path = spec.path.to_string_lossy();
        self.source_file.push_shared_n(path.as_bytes(), rows);
        for (session, count) in self.sessions(&state, spec.hint.as_bytes(), rows, &mut carry) {
            self.session_id.push_shared_n(&session, count);
        }
        if let Some(unchanged) = unchanged {
            carry = unchanged; // the caller drops an unreadable file's rows
        } else {
            carry.offset = u64::try_from(state.offset).unwrap_or(0);
            carry.lines = state.lines;
            carry.resumes = state.resumes;
        }
        let rows = self.totals.iter_mut().skip(state.first_totals);
        for (totals, &row) in rows.zip(&state.totals_rows) {
            totals.session = self
                .session_id
                .get(state.first_row + row)
                .map(|id| String::from_utf8_lossy(&id).into_owned())
                .unwrap_or_default();
        }
        resumed.then_some(carry)
    }

    /// The session of each of a file's `rows`. The file is cut into parts at each session start
    /// (lines before the first start belong to the first part); a part is the session its
    /// starts name (the first that names one), else the hint for the first part and
    /// `hint#n` for the n-th, so two unnamed sessions of one file stay apart. A start whose
    /// event id an earlier line of the file had (a log copied onto itself) begins no part: the
    /// lines after it go back to the part the original start began (those after a copy of any
    /// other line stay where they are), so each copied line lands in its original's session,
    /// where it is a repeat. Returns (session, rows) runs.
    fn sessions(
        &self,
        state: &FileState,
        hint: &[u8],
        rows: usize,
        carry: &mut Resume,
    ) -> Vec<(Vec<u8>, usize)> {
        let ids = self.scanner.id_column.and_then(|c| self.columns.get(c));
        let remember = |seen: &mut HashSet<Vec<u8>>, rows: std::ops::Range<usize>| {
            if let Some(Column::Str(column)) = ids {
                for row in rows {
                    if let Some(id) = column.get(state.first_row + row) {
                        seen.insert(id);
                    }
                }
            }
        };
        let mut checked = 0;
        // Segments of these rows: (first row, part), a new one wherever the part changes.
        // Part k (from 0) begins at the (k+1)-th new start for k >= 1; part 0 at line 1.
        let mut bounds: Vec<(usize, usize)> = vec![(0, carry.part)];
        for (row, _, id) in &state.starts {
            let repeated = match id {
                Some(id) if ids.is_some() => {
                    remember(&mut carry.ids, checked..*row);
                    checked = checked.max(*row);
                    carry.ids.contains(id)
                }
                _ => false,
            };
            let part = if repeated {
                id.as_ref()
                    .and_then(|id| carry.start_parts.get(id))
                    .copied()
            } else {
                carry.starts += 1;
                let part = carry.starts - 1;
                if let Some(id) = id {
                    carry.start_parts.insert(id.clone(), part);
                }
                Some(part)
            };
            match part {
                Some(part) if bounds.last().is_some_and(|&(_, last)| last != part) => {
                    bounds.push((*row, part));
                }
                _ => {}
            }
        }
        if state.partial {
            remember(&mut carry.ids, checked..rows);
        }
        let mut names = std::mem::take(&mut carry.names);
        names.resize(carry.starts.max(carry.part + 1), None);
        for (row, session, _) in &state.starts {
            let segment = bounds
                .partition_point(|&(b, _)| b <= *row)
                .saturating_sub(1);
            let part = bounds.get(segment).map_or(0, |&(_, part)| part);
            if let (Some(slot @ None), Some(session)) = (names.get_mut(part), session) {
                *slot = Some(session.clone());
            }
        }
        let mut out = Vec::with_capacity(bounds.len());
        for (segment, &(first, part)) in bounds.iter().enumerate() {
            let end = bounds.get(segment + 1).map_or(rows, |&(b, _)| b);
            let session = match names.get(part).cloned().flatten() {
                Some(name) => name,
                None if part == 0 => hint.to_vec(),
                None => [hint, format!("#{}", part + 1).as_bytes()].concat(),
            };
            out.push((session, end.saturating_sub(first)));
        }
        carry.part = bounds.last().map_or(0, |&(_, part)| part);
        carry.names = names;
        out
    }

    fn read_lines(&mut self, spec: &FileSpec, state: &mut FileState) -> std::io::Result<()> {
        let mut file = File::open(&spec.path)?;
        let start = u64::try_from(state.offset).unwrap_or(0);
        if start > 0 {
            file.seek(SeekFrom::Start(start))?;
        }
        let mut left = spec
            .size
            .map_or(u64::MAX, |size| size.saturating_sub(start));
        // One buffer per batch, reused: a block is read in after the unfinished line before
        // it (the buffer's first `filled` bytes), and only the new bytes are searched for
        // newlines (a line may span many blocks). Its bytes stay initialised from block to
        // block, so each block is one `read` into them (read_to_end started at 8 KB and
        // doubled: six reads a block).
        let mut buffer = std::mem::take(&mut self.buffer);
        if buffer.capacity() == 0 {
            buffer = BUFFERS.with(|b| b.take());
        }
        let mut filled = 0;
        let mut number: i64 = state.lines;
        let mut result = Ok(());
        while left > 0 {
            let searched = filled;
            let want = usize::try_from(left.min(self.block as u64)).unwrap_or(self.block);
            if buffer.len() < filled + want {
                buffer.resize(filled + want, 0);
            }
            let got = match read_full(&mut file, buffer.get_mut(filled..filled + want)) {
                Ok(0) => break,
                Ok(got) => got,
                Err(error) => {
                    result = Err(error);
                    break;
                }
            };
            filled += got;
            left = left.saturating_sub(got as u64);
            let new = buffer.get(searched..filled).unwrap_or(&[]);
            let Some(last) = memchr::memrchr(b'\n', new) else {
                continue;
            };
            // The block's complete lines are checked at once for bytes that are not UTF-8
            // (nearly always there are none); only if there are, line by line. NULs are
            // looked for only in lines that are not JSON (see `Builder::line`).
            let complete = buffer.get(..searched + last + 1).unwrap_or(&[]);
            let utf8 = simdutf8::basic::from_utf8(complete).is_ok();
            let mut start = 0;
            let new = buffer.get(searched..complete.len()).unwrap_or(&[]);
            for end in memchr::memchr_iter(b'\n', new).map(|at| at + searched) {
                number += 1;
                let line = buffer.get(start..end).unwrap_or(&[]);
                self.line(line, number, state, utf8);
                state.offset += i64::try_from(end - start + 1).unwrap_or(0);
                start = end + 1;
            }
            buffer.copy_within(start..filled, 0);
            filled -= start;
        }
        if result.is_ok() && filled > 0 && !state.partial {
            number += 1;
            self.line(buffer.get(..filled).unwrap_or(&[]), number, state, false);
        }
        state.lines = number;
        self.buffer = buffer;
        result
    }

    fn issue(&mut self, state: &FileState, line: i64, severity: &'static str, message: String) {
        self.issues.push(Issue {
            file: state.index,
            line: Some(line),
            severity,
            message,
        });
    }

    /// One line: an event row, or an issue (or a row with warnings). The line's hygiene and
    /// the words of its issues are every agent's (`line`). `utf8`: the line is known to be
    /// UTF-8. NULs are looked for only in a line that is not JSON: JSON has no NUL byte (not
    /// in a string, where it is a control character, nor between tokens), so a line that
    /// parses has none, and a line that does not is read again with its NULs removed (and
    /// their warning) if it has any.
    fn line(&mut self, raw: &[u8], number: i64, state: &mut FileState, utf8: bool) {
        let mut notes: Vec<&'static str> = Vec::new();
        let text = line::clean(raw, utf8, |note| notes.push(note));
        let scanner = self.scanner;
        let parsed = text
            .as_ref()
            .map(|text| json::parse(text, &scanner.schema, &mut self.fields));
        if utf8 && matches!(parsed, Some(Err(_))) && memchr::memchr(0, raw).is_some() {
            return self.line(raw, number, state, false);
        }
        for note in notes {
            self.issue(state, number, "warning", note.into());
        }
        let (Some(text), Some(parsed)) = (text, parsed) else {
            return;
        };
        match parsed {
            Err(error) => {
                let message = line::invalid_json(&text, &error);
                self.issue(state, number, "error", message);
            }
            Ok(Kind::Object) => self.event(&text, number, state),
            Ok(Kind::Null) => {
                self.issue(state, number, "error", "event has no 'type'".into());
            }
            Ok(kind) => self.issue(state, number, "error", line::not_an_object(kind)),
        }
    }

    /// A line that is a JSON object: its row, or an error when it has no type.
    fn event(&mut self, line: &[u8], number: i64, state: &mut FileState) {
        let scanner = self.scanner;
        if self.fields.any_dropped() {
            let dropped: Vec<String> = (0..scanner.schema.nodes.len())
                .filter(|&n| self.fields.dropped.get(n).copied().unwrap_or(false))
                .map(|n| scanner.schema.path(n))
                .collect();
            let message = format!("unexpected shape, ignored: {}", dropped.join(", "));
            self.issue(state, number, "warning", message);
        }
        let Some(kind) = format::text(line, self.fields.get(scanner.type_node)) else {
            self.issue(state, number, "error", "event has no 'type'".into());
            return;
        };
        let time = format::text(line, self.fields.get(scanner.time_node))
            .and_then(|t| format::timestamp(&t));
        if time.is_none() {
            let message = "timestamp missing or not ISO-8601".into();
            self.issue(state, number, "warning", message);
        }
        let tid = scanner.type_of(&kind);
        if tid == scanner.resume_type {
            state.resumes += 1;
        }
        let row = self.source_line.values.len() - state.first_row;
        if tid == scanner.start_type {
            let session = format::text(line, self.fields.get(scanner.session_node));
            let id = format::text(line, self.fields.get(scanner.id_node));
            state
                .starts
                .push((row, session.map(Cow::into_owned), id.map(Cow::into_owned)));
        }
        if tid == scanner.totals_type {
            let value = self.fields.get(scanner.totals_node);
            // A string's text, else compact JSON, where a number beyond a double's range is
            // null (the line says so: the other models' totals are still read).
            let json = match value.kind {
                Kind::Missing | Kind::Null => None,
                Kind::Str => format::text(line, value).map(Cow::into_owned),
                _ => {
                    if value.measured.is_none() {
                        self.issue(state, number, "warning", TOTALS_OUT_OF_RANGE.into());
                    }
                    let mut out = Vec::new();
                    compact(line, value, &mut out);
                    Some(out)
                }
            };
            if let Some(json) = json {
                self.totals.push(Totals {
                    file: state.index,
                    line: number,
                    session: String::new(),
                    // Its session once the file is done.
                    process: state.resumes,
                    json: String::from_utf8_lossy(&json).into_owned(),
                });
                state.totals_rows.push(row);
            }
        }
        let at = self.source_line.values.len();
        self.source_line.push(Some(number));
        self.byte_offset.push(Some(state.offset));
        self.process_index
            .push(Some(i32::try_from(state.resumes).unwrap_or(i32::MAX)));
        // Only the columns of the fields this line has (and those that are never null) are
        // filled; the others are padded with nulls when a later row, or the batch's end,
        // needs them to be.
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        if let (Some((nodes, always)), [word]) = (&scanner.node_bits, &mut self.marked[..]) {
            let touched = self.fields.touched().iter();
            *word = touched.fold(*always, |bits, &node| bits | nodes.get(node).unwrap_or(&0));
        } else {
            let ranks = self
                .fields
                .touched()
                .iter()
                .flat_map(|&node| scanner.by_node.get(node).map_or(&[][..], Vec::as_slice));
            for &rank in ranks.chain(&scanner.always) {
                if let Some(word) = self.marked.get_mut(rank / 64) {
                    *word |= 1 << (rank % 64);
                }
            }
        }
        for (at_word, word) in self.marked.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let rank = at_word * 64 + usize::try_from(bits.trailing_zeros()).unwrap_or(0);
                bits &= bits - 1;
                todo.extend(scanner.by_rank.get(rank));
            }
        }
        for &index in &todo {
            let (Some(column), Some((rule, nodes, typed))) =
                (self.columns.get_mut(index), scanner.columns.get(index))
            else {
                continue;
            };
            column.reserve_first(self.room);
            column.pad(at);
            let first = if typed.is_empty() {
                first_present(&self.fields, nodes)
            } else {
                typed
                    .iter()
                    .find(|&&(t, _)| t == tid)
                    .and_then(|(_, nodes)| first_present(&self.fields, nodes))
            };
            match (column, *rule) {
                (Column::Str(c), Rule::Shared(_)) => {
                    c.push_opt(first.and_then(|v| format::text(line, v)).as_deref(), true);
                }
                (Column::Str(c), Rule::Text(_)) => {
                    c.push_opt(first.and_then(|v| format::text(line, v)).as_deref(), false);
                }
                (Column::Str(c), Rule::Limited(_, n)) => {
                    let text = first.and_then(|v| format::text(line, v));
                    c.push_opt(text.as_deref().map(|t| format::first_chars(t, n)), false);
                }
                (Column::Str(c), Rule::MatchedOn(_)) => match first {
                    Some(v) if v.kind == Kind::Str => {
                        c.push_opt(format::text(line, v).as_deref(), false);
                    }
                    Some(v) if v.measured.is_some() => {
                        self.scratch.clear();
                        compact(line, v, &mut self.scratch);
                        c.push(&self.scratch);
                    }
                    _ => c.push_null(),
                },
                (Column::Int(c), Rule::Int(_)) => {
                    c.push(first.and_then(|v| format::whole(line, v)))
                }
                (Column::Int(c), Rule::MeasuredOn(_)) => {
                    c.push(first.and_then(format::measured).and_then(to_i64));
                }
                (Column::Int(c), Rule::ContentBytes) => {
                    c.push(content_bytes(scanner, &self.fields, line, tid));
                }
                (Column::Bool(c), Rule::Flag(_)) => {
                    c.push(first.and_then(|v| format::flag(line, v)))
                }
                (Column::Bool(c), Rule::FlagOrFalse(_)) => {
                    c.push(Some(
                        first.and_then(|v| format::flag(line, v)).unwrap_or(false),
                    ));
                }
                (Column::Time(c), Rule::Time(_)) => c.push(time),
                (Column::Str(c), _) => c.push_null(),
                (Column::Int(c) | Column::Time(c), _) => c.push(None),
                (Column::Int32(c), _) => c.push(None),
                (Column::Bool(c), _) => c.push(None),
            }
        }
        self.todo = todo;
    }
}

/// Rules in groups of the same code (see `Scanner::by_rank`).
fn rule_group(rule: Rule) -> u8 {
    match rule {
        Rule::Shared(_) => 0,
        Rule::Text(_) => 1,
        Rule::Limited(..) => 2,
        Rule::MatchedOn(_) => 3,
        Rule::Int(_) => 4,
        Rule::MeasuredOn(_) => 5,
        Rule::ContentBytes => 6,
        Rule::Flag(_) => 7,
        Rule::FlagOrFalse(_) => 8,
        Rule::Time(_) => 9,
    }
}

/// The first of `nodes` whose value is present and not null.
fn first_present(fields: &Fields, nodes: &[usize]) -> Option<Value> {
    nodes
        .iter()
        .map(|&n| fields.get(n))
        .find(|v| !matches!(v.kind, Kind::Missing | Kind::Null))
}

fn to_i64(n: usize) -> Option<i64> {
    i64::try_from(n).ok()
}

/// Bytes of text an event adds to the conversation (see `format::Content`).
fn content_bytes(scanner: &Scanner, fields: &Fields, line: &[u8], tid: usize) -> Option<i64> {
    let len = |v: Value| format::text_len(line, v);
    let base = if tid != OTHER && scanner.text_types.contains(&tid) {
        first_present(fields, &scanner.text_nodes).and_then(len)
    } else if tid == scanner.assistant_type {
        Some(
            scanner
                .assistant_nodes
                .iter()
                .map(|&n| len(fields.get(n)).unwrap_or(0))
                .sum(),
        )
    } else {
        None
    };
    let extra = scanner
        .extras
        .iter()
        .filter(|&&(t, _)| t == tid && tid != OTHER)
        .find_map(|(_, nodes)| first_present(fields, nodes).and_then(format::measured));
    let total = match extra {
        Some(extra) => Some(base.unwrap_or(0) + extra),
        None => base,
    };
    total.and_then(to_i64)
}

/// The compact JSON text of a value (for `Rule::MatchedOn`), from its span.
fn compact(line: &[u8], value: Value, out: &mut Vec<u8>) {
    if let Some(raw) = line.get(value.start..value.end) {
        crate::read::compact::write(raw, out);
    }
}
