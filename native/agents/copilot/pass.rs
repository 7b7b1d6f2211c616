//! The one Copilot pass: a group's scanned lines in, every session's calls, SESSIONS row,
//! warnings, placed shutdown totals and priced lines out, with no table of events in between.
//!
//! The steps, each by the rules of the polars stages kept as the oracle in `tests/oracle/reference/`
//! (`order_events`, `drop_repeats`, `place_model_metrics`, `log_prices`):
//! 1. rows by session (lines of unreadable files left out);
//! 2. each session in order: its files by their first timestamp (unknown first), then name;
//!    lines by number. `event_seq` numbers the result, `process_index` counts the
//!    `session.resume` lines up to each one;
//! 3. repeated lines dropped: an event id an earlier line of the session had, or a usage
//!    record's usage id (else api call id) an earlier record had; one warning per file, and
//!    `byte_offset` of the lines kept reads as if the repeats were not there;
//! 4. the shutdowns' per-model totals placed on the shutdown lines kept;
//! 5. `copilot_fold::fold_session` on each session, sessions in parallel (rayon), and, when
//!    the per-call rows beside the logs are given, the token stage
//!    (`tokens::session_tokens`) on its fold right after: the session's events are
//!    built once, for both, into a buffer each worker refills session after session;
//! 6. the lines whose `tokenDetails` list quotes prices (not bring-your-own-key).
//!
//! Each pass also says where its time went, stage by stage ([`Spent`]), for the benchmarks'
//! profile: a few clock reads per session, none per line.
//!
//! The rows come from a [`Rows`] source (the binding reads the scanner's Arrow columns; the
//! tests and the fuzz run use owned rows), and each session's events borrow from it. Pure safe
//! Rust: nothing here panics on any input, and a session whose fold or token stage did is
//! reported as such.
#![forbid(unsafe_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::agents::copilot::fold::{fold_session, Event, Metric, SessionFold, Warning};
use crate::agents::copilot::tokens::{self, session_tokens_timed, Observed, SessionTokens};
use rustc_hash::{FxHashMap, FxHashSet};

/// What ordering and repeat detection read of a line (the fold reads [`Rows::event`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Key<'a> {
    pub session: &'a str,
    pub file: &'a str,
    pub line: Option<i64>,
    pub timestamp: Option<i64>,
    pub kind: Option<&'a str>,
    pub event_id: Option<&'a str>,
    /// A usage record's usage id, else its api call id.
    pub record: Option<&'a str>,
    pub byte_offset: Option<i64>,
}

/// A group's scanned lines, in scan order (file by file, line by line).
pub trait Rows<'a>: Sync {
    /// How many lines.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// What ordering reads of line `row`.
    fn key(&self, row: usize) -> Key<'a>;
    /// What ordering reads of every line, in order (a source may read its columns faster in
    /// bulk than line by line).
    fn keys(&self) -> Vec<Key<'a>> {
        (0..self.len()).map(|row| self.key(row)).collect()
    }
    /// Line `row` as the fold reads it (`seq`, `process` and `byte_offset` as scanned: the
    /// pass sets them).
    fn event(&self, row: usize) -> Event<'a>;
    /// Lines `rows` as the fold reads them, in that order, into `out`, emptied first (rows
    /// mostly ascending: a source may read runs of them faster than line by line).
    fn events_into(&self, rows: &[usize], out: &mut Vec<Event<'a>>) {
        out.clear();
        out.extend(rows.iter().map(|&row| self.event(row)));
    }
    /// The line's `tokenDetails` text and whether it was a bring-your-own-key call.
    fn prices(&self, row: usize) -> (Option<&'a str>, Option<bool>);
    /// The positions in `rows` of the lines whose `tokenDetails` quote prices (rows mostly
    /// ascending: a source may read runs of them faster than line by line).
    fn priced(&self, rows: &[usize]) -> Vec<usize> {
        priced_among(rows.iter().map(|&row| self.prices(row)))
    }
}

/// One session after the pass.
#[derive(Debug)]
pub struct Session<'a> {
    pub id: &'a str,
    /// The lines kept (row numbers of the source), in session order: `event_seq` is the
    /// position + 1.
    pub rows: Vec<usize>,
    /// `process_index` of each line kept.
    pub processes: Vec<i32>,
    /// `byte_offset` of each line kept, repeats left out.
    pub byte_offsets: Vec<Option<i64>>,
    /// The fold (None: it panicked, a bug the caller reports as an issue).
    pub fold: Option<SessionFold<'a>>,
    /// The token stage on the fold.
    pub tokens: Tokens<'a>,
    /// Lines kept whose `tokenDetails` quote prices (positions in `rows`).
    pub priced: Vec<usize>,
}

/// What the token stage gave a session.
#[derive(Debug, Default)]
pub enum Tokens<'a> {
    /// Not run: the per-call rows beside the logs were not given, or the fold failed.
    #[default]
    NotRun,
    /// Its figures.
    Done(SessionTokens<'a>),
    /// The stage panicked on the session (a bug the caller reports as an issue).
    Failed,
}

impl<'a> Session<'a> {
    /// The session's events in order, as its fold reads them (`seq`, `process` and
    /// `byte_offset` as the pass set them), into `events`, emptied first.
    pub fn events_into<R: Rows<'a> + ?Sized>(&self, rows: &R, events: &mut Vec<Event<'a>>) {
        rows.events_into(&self.rows, events);
        for (at, (event, (&process, &byte_offset))) in events
            .iter_mut()
            .zip(self.processes.iter().zip(&self.byte_offsets))
            .enumerate()
        {
            event.seq = i64::try_from(at).map_or(i64::MAX, |n| n.saturating_add(1));
            event.process = process;
            event.byte_offset = byte_offset;
        }
    }

    /// The fold of the session's `events` with its shutdowns' totals `metrics`, then, given
    /// its per-call rows beside the logs (`observed`), the token stage on the fold; each
    /// step's panic caught (the session's result then says so). Returns the time each took.
    fn work(
        &mut self,
        events: &[Event<'a>],
        metrics: &[Metric<'a>],
        observed: Option<&[Observed<'a>]>,
    ) -> Spent {
        let folding = Instant::now();
        self.fold = catch_unwind(AssertUnwindSafe(|| fold_session(events, metrics))).ok();
        let mut spent = Spent {
            fold: folding.elapsed(),
            ..Spent::default()
        };
        let (Some(fold), Some(observed)) = (&self.fold, observed) else {
            return spent;
        };
        let session = tokens::Session {
            id: self.id,
            events,
            calls: &fold.calls,
            row: &fold.session,
            metrics,
            observed,
        };
        let stage = Instant::now();
        let tokens = catch_unwind(AssertUnwindSafe(|| session_tokens_timed(&session, true)));
        let whole = stage.elapsed();
        (self.tokens, spent.fit) = match tokens {
            Ok((tokens, fit)) => (Tokens::Done(tokens), fit),
            Err(_) => (Tokens::Failed, Duration::ZERO),
        };
        spent.tokens = whole.saturating_sub(spent.fit);
        spent
    }
}

/// Where a pass's time went, by stage, in seconds of thread time: the wall of the steps run
/// on one thread, and for the steps run per session, in parallel, the sum over sessions (so
/// these add up to more than the pass's wall when its sessions ran at once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    /// Reading the lines' columns: what ordering reads of each line, each session's events
    /// (for its fold and token stage) and whether its lines quote prices.
    pub events: Duration,
    /// Rows by session, each session's lines ordered, repeats dropped, shutdown totals placed,
    /// unknown event types counted.
    pub order: Duration,
    /// The fold of each session (`copilot_fold::fold_session`).
    pub fold: Duration,
    /// The token stage on each fold, its reconstruction and calibration left out (observed
    /// tokens, reply sizes, segments, models, each call's figures and the session's sums).
    pub tokens: Duration,
    /// The token stage's reconstruction (the fit of its growth model) and calibration.
    pub fit: Duration,
}

impl Spent {
    /// Both's times, stage by stage.
    #[must_use]
    pub fn plus(self, other: Spent) -> Spent {
        Spent {
            events: self.events.saturating_add(other.events),
            order: self.order.saturating_add(other.order),
            fold: self.fold.saturating_add(other.fold),
            tokens: self.tokens.saturating_add(other.tokens),
            fit: self.fit.saturating_add(other.fit),
        }
    }
}

/// The per-call rows kept beside the logs (OBSERVED_USAGE), by session, each session's in
/// their source's order.
pub type ObservedRows<'a> = FxHashMap<&'a str, Vec<Observed<'a>>>;

/// A group's pass.
#[derive(Debug, Default)]
pub struct Pass<'a> {
    /// Sessions in id order.
    pub sessions: Vec<Session<'a>>,
    /// One warning per file with repeated lines, at its first, files in name order.
    pub repeats: Vec<Warning<'a>>,
    /// Per file and unknown event type (files in name order, then first line): the first
    /// line and the count of lines, repeats included.
    pub unknown: Vec<(&'a str, &'a str, i64, i64)>,
    /// Per input shutdown total (`run`'s `metrics`): the session and process of the kept
    /// shutdown line it belongs to, or None when that line is not kept.
    pub placed: Vec<Option<(&'a str, i32)>>,
    /// Where the pass's time went.
    pub spent: Spent,
}

/// The pass over `rows`, leaving out the lines of `failed` files; `metrics` are the
/// shutdowns' per-model totals (by file and line), `known` the event types analysed;
/// `observed`: the per-call rows beside the logs, to run the token stage on each session's
/// fold (None: not run).
pub fn run<'a, R: Rows<'a> + ?Sized>(
    rows: &R,
    failed: &FxHashSet<&str>,
    metrics: &[Metric<'a>],
    known: &FxHashSet<&str>,
    observed: Option<&ObservedRows<'a>>,
) -> Pass<'a> {
    let reading = Instant::now();
    let keys: Vec<Key<'a>> = rows.keys();
    let read = reading.elapsed();
    let ordering = Instant::now();
    // One pass over the lines (a group's keys are many megabytes: each pass is a trip
    // through memory): the unknown event types counted and the rows put by session (a run
    // of rows of one session, the usual case, looks its slot up once).
    let mut unknown = Unknown::default();
    let mut slots: FxHashMap<&'a str, usize> = FxHashMap::default();
    let mut grouped: Vec<(&'a str, Vec<usize>)> = Vec::new();
    let mut last: Option<(&'a str, usize)> = None;
    for (row, key) in keys.iter().enumerate() {
        if !failed.is_empty() && failed.contains(key.file) {
            continue;
        }
        unknown.add(key, known);
        let slot = match last {
            Some((session, slot)) if session == key.session => slot,
            _ => *slots.entry(key.session).or_insert_with(|| {
                grouped.push((key.session, Vec::new()));
                grouped.len() - 1
            }),
        };
        last = Some((key.session, slot));
        if let Some((_, rows)) = grouped.get_mut(slot) {
            rows.push(row);
        }
    }
    let unknown = unknown.finish();
    grouped.sort_unstable_by(|a, b| a.0.cmp(b.0));
    // Each session's repeated lines found right after its lines are ordered (its keys still
    // in cache).
    let longest = grouped
        .iter()
        .map(|(_, rows)| rows.len())
        .max()
        .unwrap_or(0);
    let mut repeats = Repeats::with_capacity(longest);
    let mut sessions: Vec<Session<'a>> = grouped
        .into_iter()
        .map(|(id, members)| {
            let session = ordered(id, members, &keys);
            repeats.find(&session, &keys);
            session
        })
        .collect();
    let repeats = drop_repeats(&mut sessions, &keys, &repeats.rows);
    let (placed, per_session) = place(&sessions, &keys, metrics);
    let order = ordering.elapsed();
    // Each worker thread's events go into one buffer, refilled session after session: a
    // line's event is hundreds of bytes, and a buffer past glibc's mmap threshold (the
    // process sets it to 128 KiB) allocated per session would be mapped, faulted in page by
    // page and unmapped each time. (rayon's `for_each_init` makes one per piece the work is
    // split into: on the 1 GB benchmark tree that saved no faults.) Sized for the longest
    // session up front (pages never written are never faulted in), a buffer never moves; one
    // found busy (never, as the fold starts no parallel work) or poisoned gives way to a
    // fresh one.
    let longest = sessions.iter().map(|s| s.rows.len()).max().unwrap_or(0);
    let buffers: Vec<Mutex<Vec<Event<'a>>>> = (0..rayon::current_num_threads())
        .map(|_| Mutex::new(Vec::with_capacity(longest)))
        .collect();
    let spent = sessions
        .par_iter_mut()
        .zip(per_session.par_iter())
        .map(|(session, mine)| {
            let reading = Instant::now();
            let mut own = Vec::new();
            let mut held = rayon::current_thread_index()
                .and_then(|at| buffers.get(at))
                .and_then(|buffer| buffer.try_lock().ok());
            let events = held.as_deref_mut().unwrap_or(&mut own);
            session.events_into(rows, events);
            let mut read = reading.elapsed();
            let beside = observed.map(|o| o.get(session.id).map_or(&[][..], Vec::as_slice));
            let spent = session.work(events, mine, beside);
            let pricing = Instant::now();
            session.priced = rows.priced(&session.rows);
            read = read.saturating_add(pricing.elapsed());
            spent.plus(Spent {
                events: read,
                ..Spent::default()
            })
        })
        .reduce(Spent::default, Spent::plus);
    Pass {
        sessions,
        repeats,
        unknown,
        placed,
        spent: spent.plus(Spent {
            events: read,
            order,
            ..Spent::default()
        }),
    }
}

/// One session's lines in order (`order_events`): files by their first timestamp (unknown
/// first), then name; lines by number (unknown first), then as scanned.
fn ordered<'a>(id: &'a str, mut members: Vec<usize>, keys: &[Key<'a>]) -> Session<'a> {
    // A session has a file or a few: a list is quicker than a map (and a line's file is
    // mostly the one of the line before). Each line's file, as its place in the list.
    let mut starts: Vec<(&'a str, Option<i64>)> = Vec::new();
    let mut file_of: Vec<usize> = Vec::with_capacity(members.len());
    let mut last = usize::MAX;
    for &row in &members {
        let key = keys.get(row).copied().unwrap_or_default();
        let at = match starts.get(last) {
            Some((file, _)) if same(file, key.file) => last,
            _ => match starts.iter().position(|(file, _)| same(file, key.file)) {
                Some(at) => at,
                None => {
                    starts.push((key.file, None));
                    starts.len() - 1
                }
            },
        };
        if keys.get(row).is_some() {
            if let Some((_, start)) = starts.get_mut(at) {
                *start = crate::fold::min_time(*start, key.timestamp);
            }
        }
        file_of.push(at);
        last = at;
    }
    // Each file's rank by its first timestamp (unknown first), then name: the order of
    // (first timestamp, name) for lines of different files (no two files rank alike).
    let mut by_start: Vec<usize> = (0..starts.len()).collect();
    let start_name = |at: usize| starts.get(at).map(|&(file, start)| (start, file));
    by_start.sort_by(|&a, &b| start_name(a).cmp(&start_name(b)));
    let mut file_rank = vec![0usize; starts.len()];
    for (rank, &at) in by_start.iter().enumerate() {
        if let Some(slot) = file_rank.get_mut(at) {
            *slot = rank;
        }
    }
    // Each line's rank, computed once (a log's lines are mostly in order already: then no
    // sort at all).
    let ranks: Vec<(usize, Option<i64>)> = members
        .iter()
        .zip(&file_of)
        .map(|(&row, &at)| {
            let line = keys.get(row).and_then(|k| k.line);
            (file_rank.get(at).copied().unwrap_or(0), line)
        })
        .collect();
    if !ranks.is_sorted() {
        // A stable sort: lines of one number keep their scan order.
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by(|&a, &b| ranks.get(a).cmp(&ranks.get(b)));
        members = order
            .into_iter()
            .filter_map(|at| members.get(at).copied())
            .collect();
    }
    let mut session = Session {
        id,
        processes: Vec::new(),
        byte_offsets: members
            .iter()
            .map(|&row| keys.get(row).and_then(|k| k.byte_offset))
            .collect(),
        rows: members,
        fold: None,
        tokens: Tokens::NotRun,
        priced: Vec::new(),
    };
    number(&mut session, keys);
    session
}

/// Whether two strings are equal: the same bytes (the scanner's lines of a file share its
/// name's) without comparing them, else compared.
fn same(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// `process_index` of each line: the `session.resume` lines up to it (itself included).
fn number(session: &mut Session<'_>, keys: &[Key<'_>]) {
    let mut resumes: i32 = 0;
    session.processes = session
        .rows
        .iter()
        .map(|&row| {
            if keys
                .get(row)
                .is_some_and(|k| k.kind == Some("session.resume"))
            {
                resumes = resumes.saturating_add(1);
            }
            resumes
        })
        .collect();
}

/// The repeated lines of sessions (`drop_repeats`): a line with an event id an earlier line
/// of its session had, or a usage record with a usage id (else api call id) an earlier one
/// had.
struct Repeats<'a> {
    rows: FxHashSet<usize>,
    /// The ids seen in the session at hand (emptied for each: sized once).
    ids: FxHashSet<&'a str>,
    records: FxHashSet<&'a str>,
}

impl<'a> Repeats<'a> {
    fn with_capacity(lines: usize) -> Self {
        Repeats {
            rows: FxHashSet::default(),
            ids: FxHashSet::with_capacity_and_hasher(lines, Default::default()),
            records: FxHashSet::default(),
        }
    }

    /// The repeated lines of `session` (its lines in order) added to `rows`.
    fn find(&mut self, session: &Session<'a>, keys: &[Key<'a>]) {
        self.ids.clear();
        self.records.clear();
        for &row in &session.rows {
            let Some(key) = keys.get(row) else { continue };
            let copy_of_id = key.event_id.is_some_and(|id| !self.ids.insert(id));
            let copy_of_record = key.kind == Some("session.usage_record")
                && key.record.is_some_and(|r| !self.records.insert(r));
            if copy_of_id || copy_of_record {
                self.rows.insert(row);
            }
        }
    }
}

/// Drop each session's `repeated` lines (`drop_repeats`, [`Repeats`]); one warning per file
/// that had them.
fn drop_repeats<'a>(
    sessions: &mut [Session<'a>],
    keys: &[Key<'a>],
    repeated: &FxHashSet<usize>,
) -> Vec<Warning<'a>> {
    if repeated.is_empty() {
        return Vec::new();
    }
    // Per file, in line order: the bytes of repeated lines before each line.
    let mut by_file: FxHashMap<&'a str, Vec<usize>> = FxHashMap::default();
    for session in sessions.iter() {
        for &row in &session.rows {
            if let Some(key) = keys.get(row) {
                by_file.entry(key.file).or_default().push(row);
            }
        }
    }
    let mut before: FxHashMap<usize, i64> = FxHashMap::default();
    let mut warnings = Vec::new();
    let mut files: Vec<(&'a str, Vec<usize>)> = by_file.into_iter().collect();
    files.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (file, mut lines) in files {
        lines.sort_by_key(|&row| (keys.get(row).and_then(|k| k.line), row));
        let mut skipped: i64 = 0;
        let (mut first, mut count) = (None, 0i64);
        for (at, &row) in lines.iter().enumerate() {
            before.insert(row, skipped);
            if repeated.contains(&row) {
                let line = keys.get(row).and_then(|k| k.line);
                first = crate::fold::min_time(first, line);
                count = count.saturating_add(1);
                let offset = |r: Option<&usize>| r.and_then(|&r| keys.get(r)?.byte_offset);
                let size = offset(lines.get(at + 1))
                    .zip(offset(Some(&row)))
                    .map_or(0, |(next, own)| next.saturating_sub(own));
                skipped = skipped.saturating_add(size);
            }
        }
        if count > 0 {
            let what = if count == 1 {
                "line repeats an earlier event"
            } else {
                "lines repeat earlier events"
            };
            warnings.push(Warning {
                file,
                line: first.unwrap_or(0),
                message: format!(
                    "{count} {what} of their session (same event id, or a usage record's \
                     usage id): analysed once"
                ),
            });
        }
    }
    for session in sessions.iter_mut() {
        let kept: Vec<(usize, Option<i64>)> = session
            .rows
            .iter()
            .zip(&session.byte_offsets)
            .filter(|(row, _)| !repeated.contains(row))
            .map(|(&row, &offset)| {
                let moved = before.get(&row).copied().unwrap_or(0);
                (row, offset.map(|o| o.saturating_sub(moved)))
            })
            .collect();
        (session.rows, session.byte_offsets) = kept.into_iter().unzip();
        number(session, keys);
    }
    warnings
}

/// Each shutdown total's session and process (None: its line was not kept), and the totals
/// of each session (in input order), for its fold.
type Placed<'a> = (Vec<Option<(&'a str, i32)>>, Vec<Vec<Metric<'a>>>);

/// The shutdowns' totals on the shutdown lines kept (`place_model_metrics`).
fn place<'a>(sessions: &[Session<'a>], keys: &[Key<'a>], metrics: &[Metric<'a>]) -> Placed<'a> {
    let mut at: FxHashMap<(&str, Option<i64>), (usize, i32)> = FxHashMap::default();
    for (index, session) in sessions.iter().enumerate() {
        for (&row, &process) in session.rows.iter().zip(&session.processes) {
            if let Some(key) = keys.get(row).filter(|k| k.kind == Some("session.shutdown")) {
                at.entry((key.file, key.line)).or_insert((index, process));
            }
        }
    }
    let mut per_session: Vec<Vec<Metric<'a>>> = vec![Vec::new(); sessions.len()];
    let placed = metrics
        .iter()
        .map(|metric| {
            let (index, process) = *at.get(&(metric.file, Some(metric.line)))?;
            per_session.get_mut(index)?.push(*metric);
            Some((sessions.get(index)?.id, process))
        })
        .collect();
    (placed, per_session)
}

/// Whether a line's `tokenDetails` is a list of prices that bill (`agents/copilot/log_prices.py`
/// reads those: not bring-your-own-key lines, whose prices teach nothing).
fn quotes_prices((details, byok): (Option<&str>, Option<bool>)) -> bool {
    byok != Some(true) && details.is_some_and(|d| d.trim_start().starts_with('['))
}

/// The positions of the lines that quote prices ([`quotes_prices`]) among lines' `prices`
/// (`tokenDetails` and bring-your-own-key flag), in order ([`Rows::priced`]).
pub fn priced_among<'s>(
    prices: impl Iterator<Item = (Option<&'s str>, Option<bool>)>,
) -> Vec<usize> {
    prices
        .enumerate()
        .filter(|&(_, line)| quotes_prices(line))
        .map(|(at, _)| at)
        .collect()
}

/// Per file and event type not in `known`: its first line and count, files in name order.
#[derive(Default)]
struct Unknown<'a> {
    seen: FxHashMap<(&'a str, &'a str), (i64, i64)>,
}

impl<'a> Unknown<'a> {
    /// Count a line.
    fn add(&mut self, key: &Key<'a>, known: &FxHashSet<&str>) {
        let Some(kind) = key.kind.filter(|k| !known.contains(k)) else {
            return;
        };
        let line = key.line.unwrap_or(0);
        let entry = self.seen.entry((key.file, kind)).or_insert((line, 0));
        entry.0 = entry.0.min(line);
        entry.1 = entry.1.saturating_add(1);
    }

    /// (file, type, first line, count), files in name order, then first line, then type.
    fn finish(self) -> Vec<(&'a str, &'a str, i64, i64)> {
        let mut out: Vec<_> = self
            .seen
            .into_iter()
            .map(|((file, kind), (line, n))| (file, kind, line, n))
            .collect();
        out.sort_unstable_by(|a, b| (a.0, a.2, a.1).cmp(&(b.0, b.2, b.1)));
        out
    }
}

/// Owned lines for tests and the fuzz run: the events as given (their `seq`, `process` and
/// `byte_offset` are the pass's to set), with session ids, event ids and prices.
#[derive(Clone, Debug, Default)]
pub struct Line<'a> {
    pub session: &'a str,
    pub event_id: Option<&'a str>,
    pub token_details: Option<&'a str>,
    pub event: Event<'a>,
}

impl<'a> Rows<'a> for [Line<'a>] {
    fn len(&self) -> usize {
        <[Line<'a>]>::len(self)
    }

    fn key(&self, row: usize) -> Key<'a> {
        self.get(row).map_or_else(Key::default, |l| Key {
            session: l.session,
            file: l.event.file,
            line: Some(l.event.line),
            timestamp: l.event.timestamp,
            kind: Some(l.event.kind),
            event_id: l.event_id,
            record: l.event.usage_id.or(l.event.api_call_id),
            byte_offset: l.event.byte_offset,
        })
    }

    fn event(&self, row: usize) -> Event<'a> {
        self.get(row).map(|l| l.event).unwrap_or_default()
    }

    fn prices(&self, row: usize) -> (Option<&'a str>, Option<bool>) {
        self.get(row)
            .map_or((None, None), |l| (l.token_details, l.event.is_byok))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(session: &'a str, file: &'a str, n: i64, time: i64, kind: &'a str) -> Line<'a> {
        Line {
            session,
            event: Event {
                file,
                line: n,
                kind,
                timestamp: Some(time),
                byte_offset: Some(n * 10),
                ..Event::default()
            },
            ..Line::default()
        }
    }

    /// The pass over `lines` alone: no failed files, totals, known types or rows beside.
    fn alone<'a>(lines: &[Line<'a>]) -> Pass<'a> {
        run(
            lines,
            &FxHashSet::default(),
            &[],
            &FxHashSet::default(),
            None,
        )
    }

    #[test]
    fn files_of_a_session_go_by_their_first_time_then_lines_by_number() {
        let lines = [
            line("s", "b", 1, 5, "session.start"),
            line("s", "b", 2, 6, "session.resume"),
            line("s", "a", 2, 9, "user.message"),
            line("s", "a", 1, 8, "user.message"),
        ];
        let pass = alone(&lines[..]);
        let session = &pass.sessions[0];
        assert_eq!(session.rows, vec![0, 1, 3, 2]);
        assert_eq!(session.processes, vec![0, 1, 1, 1]);
        assert_eq!(pass.unknown.len(), 3); // nothing is known here: b's two kinds, a's one
    }

    #[test]
    fn a_repeated_id_is_dropped_once_with_one_warning_and_offsets_close_up() {
        let mut lines = [
            line("s", "f", 1, 1, "session.start"),
            line("s", "f", 2, 2, "user.message"),
            line("s", "f", 3, 3, "user.message"),
            line("s", "f", 4, 4, "session.shutdown"),
        ];
        lines[1].event_id = Some("x");
        lines[2].event_id = Some("x");
        let metric = Metric {
            file: "f",
            line: 4,
            ..Metric::default()
        };
        let pass = run(
            &lines[..],
            &FxHashSet::default(),
            &[metric],
            &FxHashSet::default(),
            None,
        );
        let session = &pass.sessions[0];
        assert_eq!(session.rows, vec![0, 1, 3]);
        assert_eq!(session.byte_offsets, vec![Some(10), Some(20), Some(30)]);
        assert_eq!(pass.repeats.len(), 1);
        assert_eq!(pass.repeats[0].line, 3);
        assert!(pass.repeats[0].message.starts_with("1 line repeats"));
        assert_eq!(pass.placed, vec![Some(("s", 0))]);
    }

    #[test]
    fn each_session_is_folded_on_its_own_events_whatever_a_worker_folded_before() {
        // Sessions of many lengths, each line at its own time: a worker's buffer that kept a
        // longer session's events would show in the start or end of the next one it folds.
        let ids: Vec<String> = (0..60).map(|i| format!("s{i:02}")).collect();
        let lines: Vec<Line<'_>> = ids
            .iter()
            .enumerate()
            .flat_map(|(i, id)| {
                let count = (i * 7) % 13 + 1;
                (1..=count).map(move |n| {
                    let n = n as i64;
                    line(id, id, n, i as i64 * 1000 + n, "user.message")
                })
            })
            .collect();
        let pass = alone(&lines[..]);
        assert_eq!(pass.sessions.len(), ids.len());
        for (i, session) in pass.sessions.iter().enumerate() {
            let count = ((i * 7) % 13 + 1) as i64;
            let row = &session.fold.as_ref().expect("folded").session;
            let start = i as i64 * 1000;
            assert_eq!(
                (row.start_time, row.end_time),
                (Some(start + 1), Some(start + count))
            );
        }
    }

    #[test]
    fn the_pass_says_where_its_time_went() {
        let ids: Vec<String> = (0..20).map(|i| format!("s{i:02}")).collect();
        let lines: Vec<Line<'_>> = ids
            .iter()
            .flat_map(|id| (1..=30).map(move |n| line(id, id, n, n, "user.message")))
            .collect();
        let zero = Duration::ZERO;
        let beside = ObservedRows::default();
        let known = FxHashSet::default();
        let spent = run(
            &lines[..],
            &FxHashSet::default(),
            &[],
            &known,
            Some(&beside),
        )
        .spent;
        assert!(spent.events > zero && spent.order > zero, "{spent:?}");
        assert!(spent.fold > zero && spent.tokens > zero, "{spent:?}");
        // Without the rows beside the logs the token stage does not run: nothing spent on it.
        let spent = alone(&lines[..]).spent;
        assert!(spent.fold > zero, "{spent:?}");
        assert_eq!((spent.tokens, spent.fit), (zero, zero));
    }

    #[test]
    fn a_sessions_events_replace_what_the_buffer_held() {
        let lines = [
            line("s", "f", 1, 1, "session.start"),
            line("s", "f", 2, 2, "session.resume"),
        ];
        let pass = alone(&lines[..]);
        let mut events = vec![Event::default(); 5];
        pass.sessions[0].events_into(&lines[..], &mut events);
        let read: Vec<(i64, i32, i64)> =
            events.iter().map(|e| (e.seq, e.process, e.line)).collect();
        assert_eq!(read, vec![(1, 0, 1), (2, 1, 2)]);
    }

    #[test]
    fn failed_files_are_left_out_and_priced_lines_found() {
        let mut lines = [
            line("s", "ok", 1, 1, "session.usage_record"),
            line("s", "gone", 1, 1, "session.start"),
        ];
        lines[0].token_details = Some(" [{}]");
        let failed: FxHashSet<&str> = ["gone"].into_iter().collect();
        let known: FxHashSet<&str> = ["session.usage_record"].into_iter().collect();
        let pass = run(&lines[..], &failed, &[], &known, None);
        assert_eq!(pass.sessions[0].rows, vec![0]);
        assert_eq!(pass.sessions[0].priced, vec![0]);
        assert!(pass.unknown.is_empty());
        assert!(pass.sessions[0].fold.is_some());
    }
}
