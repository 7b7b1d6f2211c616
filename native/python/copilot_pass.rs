//! The binding of the one Copilot pass (`copilot_pass.rs`): `pass_copilot(tables, ...)` takes
//! the scanner's batches (`scan_copilot`'s Arrow tables, never a polars frame of events) and
//! the shutdowns' decoded per-model totals, and returns every table the analysis needs of the
//! group. The events themselves are gathered into a table only when asked for (`columns`).
//! Given a dict (`stages`), it adds to it where the pass's time went, stage by stage.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{make_array, Array, ArrayRef, Int32Array, Int64Array, RecordBatch};
use arrow_data::transform::MutableArrayData;
use arrow_schema::{ArrowError, Field, Schema};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use super::copilot_tokens::{metric_list, observed_by_session};
use super::{
    column, copilot_tables, int_array, issue_table, read_frame, session_rank, table, text_array,
    time_array, to_py, ArrowTable, CopilotTables, EventColumns, Strs,
};
use crate::agents::copilot::fold::{Event, SessionFold};
use crate::agents::copilot::pass::{priced_among, run, Key, Pass, Rows, Session, Spent, Tokens};
use rustc_hash::FxHashSet;

/// Lines whose keys are read at once, column after column: a block of keys (128 bytes each)
/// that stays in the cache while each column is read into it. (A session's events are read
/// whole: a few hundred lines.)
const KEY_BLOCK: usize = 256;

/// One scanned batch as the pass reads it.
struct Batch<'a> {
    events: EventColumns<'a>,
    session: Strs<'a>,
    event_id: Strs<'a>,
    details: Strs<'a>,
}

/// The group's batches, rows numbered across them.
struct Batches<'a> {
    batches: Vec<Batch<'a>>,
    /// The first row of each batch, and the total at the end.
    starts: Vec<usize>,
}

impl<'a> Batches<'a> {
    fn of(records: &'a [RecordBatch]) -> Batches<'a> {
        let mut starts = vec![0];
        for record in records {
            starts.push(starts.last().copied().unwrap_or(0) + record.num_rows());
        }
        let batches = records
            .iter()
            .map(|record| Batch {
                events: EventColumns::of(record),
                session: Strs::of(column(record, "session_id")),
                event_id: Strs::of(column(record, "event_id")),
                details: Strs::of(column(record, "token_details")),
            })
            .collect();
        Batches { batches, starts }
    }

    /// The batch and row within it of row `row`.
    fn at(&self, row: usize) -> Option<(&Batch<'a>, usize)> {
        let index = self.starts.partition_point(|&s| s <= row).checked_sub(1)?;
        let local = row.checked_sub(*self.starts.get(index)?)?;
        Some((self.batches.get(index)?, local))
    }

    /// Runs of `rows` that are consecutive rows of one batch, in order: `f(batch, first row
    /// in the batch, positions in rows)` (a row outside the batches is left out).
    fn runs(&self, rows: &[usize], mut f: impl FnMut(&Batch<'a>, usize, Range<usize>)) {
        let mut cursor = Cursor::new();
        // The run being gathered: batch index, its first row in the batch, first position.
        let mut run: Option<(usize, usize, usize)> = None;
        for (at, &row) in rows.iter().enumerate() {
            let found = cursor.at(self, row).map(|(_, i)| (cursor.index, i));
            if let (Some((batch, first, from)), Some((index, i))) = (run, found) {
                if batch == index && first.checked_add(at.saturating_sub(from)) == Some(i) {
                    continue;
                }
            }
            if let Some((batch, first, from)) = run.take() {
                if let Some(batch) = self.batches.get(batch) {
                    f(batch, first, from..at);
                }
            }
            run = found.map(|(index, i)| (index, i, at));
        }
        if let Some((batch, first, from)) = run {
            if let Some(batch) = self.batches.get(batch) {
                f(batch, first, from..rows.len());
            }
        }
    }

    /// What ordering reads of rows `start..start + out.len()` of `batch`, into `out` (of
    /// default keys), column by column.
    fn keys_in(batch: &Batch<'a>, start: usize, out: &mut [Key<'a>]) {
        let (s, n) = (&batch.events.s, &batch.events.n);
        let [file, _, kind, _, _, _, _, _, api_call_id, .., usage_id, _, _, _, _, _, _, _, _] = s;
        let [line, _, _, timestamp, .., byte_offset, _, _, _, _, _, _, _] = n;
        batch.session.each(start, out, |k, v| k.session = v);
        file.each(start, out, |k, v| k.file = v);
        line.each(start, out, |k, v| k.line = Some(v));
        timestamp.each(start, out, |k, v| k.timestamp = Some(v));
        kind.each(start, out, |k, v| k.kind = Some(v));
        batch.event_id.each(start, out, |k, v| k.event_id = Some(v));
        // A usage record's usage id, else its api call id.
        api_call_id.each(start, out, |k, v| k.record = Some(v));
        usage_id.each(start, out, |k, v| k.record = Some(v));
        byte_offset.each(start, out, |k, v| k.byte_offset = Some(v));
    }
}

impl<'a> Batches<'a> {
    /// The `tokenDetails` text of row `i` of `batch` and whether it was a
    /// bring-your-own-key call.
    fn prices_in(batch: &Batch<'a>, i: usize) -> (Option<&'a str>, Option<bool>) {
        (batch.details.get(i), super::flag(batch.events.byok, i))
    }
}

/// Where a run of rows read in (mostly) ascending order stands: the batch of the last row
/// and its bounds, so that a row of the same batch is found without a search.
struct Cursor {
    index: usize,
    start: usize,
    end: usize,
}

impl Cursor {
    fn new() -> Cursor {
        Cursor {
            index: 0,
            start: 0,
            end: 0,
        }
    }

    /// The batch and row within it of row `row` of `rows`.
    fn at<'r, 'a>(&mut self, rows: &'r Batches<'a>, row: usize) -> Option<(&'r Batch<'a>, usize)> {
        if !(self.start..self.end).contains(&row) {
            self.index = rows.starts.partition_point(|&s| s <= row).checked_sub(1)?;
            self.start = *rows.starts.get(self.index)?;
            self.end = *rows.starts.get(self.index + 1)?;
        }
        Some((rows.batches.get(self.index)?, row.checked_sub(self.start)?))
    }
}

impl<'a> Rows<'a> for Batches<'a> {
    fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    fn key(&self, row: usize) -> Key<'a> {
        let mut key = [Key::default()];
        if let Some((batch, i)) = self.at(row) {
            Batches::keys_in(batch, i, &mut key);
        }
        let [key] = key;
        key
    }

    fn keys(&self) -> Vec<Key<'a>> {
        let mut keys = vec![Key::default(); self.len()];
        for (batch, (start, end)) in self
            .batches
            .iter()
            .zip(self.starts.iter().zip(self.starts.iter().skip(1)))
        {
            if let Some(out) = keys.get_mut(*start..*end) {
                // In blocks that stay in the cache while each column is read into them.
                for (block, out) in out.chunks_mut(KEY_BLOCK).enumerate() {
                    Batches::keys_in(batch, block * KEY_BLOCK, out);
                }
            }
        }
        keys
    }

    fn event(&self, row: usize) -> Event<'a> {
        self.at(row)
            .map(|(batch, i)| batch.events.event(i))
            .unwrap_or_default()
    }

    fn events_into(&self, rows: &[usize], out: &mut Vec<Event<'a>>) {
        out.clear();
        out.resize(rows.len(), Event::default());
        self.runs(rows, |batch, first, at| {
            if let Some(out) = out.get_mut(at) {
                batch.events.fill(first, out);
            }
        });
    }

    fn prices(&self, row: usize) -> (Option<&'a str>, Option<bool>) {
        self.at(row)
            .map_or((None, None), |(batch, i)| Batches::prices_in(batch, i))
    }

    fn priced(&self, rows: &[usize]) -> Vec<usize> {
        // Only the lines with a `tokenDetails` text can quote prices: those are looked at
        // (the column's nulls skipped a word of rows at a time), each by `priced_among`.
        let mut priced = Vec::new();
        self.runs(rows, |batch, first, at| {
            batch.details.each_in(first, at.len(), |i, details| {
                let line = (Some(details), super::flag(batch.events.byok, i));
                if !priced_among(std::iter::once(line)).is_empty() {
                    priced.push(at.start + i.saturating_sub(first));
                }
            });
        });
        priced
    }
}

/// What `pass_copilot` returns: the fold's tables (calls, sessions, orphan-end issues,
/// session issues), the repeated lines' issues (and the pass's own errors, were it to fail),
/// the unknown event types (file, event_type, line, count), the totals' placement
/// (session_id, process_index; null: not kept), the priced lines, the events when asked
/// for, and the token stage's tables (`copilot_tokens::token_tables`) when the per-call
/// rows beside the logs were given.
type Passed = (
    CopilotTables,
    ArrowTable,
    ArrowTable,
    ArrowTable,
    ArrowTable,
    Option<ArrowTable>,
    Option<(ArrowTable, ArrowTable, ArrowTable)>,
);

/// The one pass over a group's scanned `tables` (lines of the `failed` files left out), with
/// the shutdowns' per-model totals `metrics` (a frame of one chunk, as an Arrow stream
/// capsule), `known` event types; `columns`: the EVENTS columns to return (None: no events);
/// `usage`: the OBSERVED_USAGE rows beside the logs (a frame of one chunk), to run the token
/// stage on each session's fold in the same pass (None: the caller runs it); `stages`: a dict
/// to add the pass's seconds to, by stage (`add_stages`).
#[pyfunction]
#[pyo3(signature = (tables, metrics, failed, known, columns = None, usage = None, stages = None))]
#[allow(clippy::too_many_arguments)] // the pass's inputs, and where its profile goes
pub(super) fn pass_copilot(
    py: Python<'_>,
    tables: Vec<PyRef<'_, ArrowTable>>,
    metrics: Bound<'_, PyCapsule>,
    failed: Vec<String>,
    known: Vec<String>,
    columns: Option<Vec<String>>,
    usage: Option<Bound<'_, PyCapsule>>,
    stages: Option<Bound<'_, PyDict>>,
) -> PyResult<Passed> {
    let records = tables
        .iter()
        .map(|t| record_batch(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(to_py)?;
    let metrics = read_frame(&metrics)?;
    let observed = usage.as_ref().map(read_frame).transpose()?;
    let (passed, spent, tables) = py.detach(|| {
        let rows = Batches::of(&records);
        let totals = metric_list(&metrics);
        let failed: FxHashSet<&str> = failed.iter().map(String::as_str).collect();
        let known: FxHashSet<&str> = known.iter().map(String::as_str).collect();
        let beside = observed.as_ref().map(observed_by_session);
        // The pass is written not to panic; were it to (a bug), each file of the group gets
        // an error issue instead of the whole analysis failing.
        let pass = || run(&rows, &failed, &totals, &known, beside.as_ref());
        let (mut pass, lost) = match catch_unwind(AssertUnwindSafe(pass)) {
            Ok(pass) => (pass, Vec::new()),
            Err(_) => {
                let pass = Pass {
                    placed: vec![None; totals.len()],
                    ..Pass::default()
                };
                (pass, files_of(&rows))
            }
        };
        let building = Instant::now();
        let events = columns
            .map(|names| gathered(&records, &rows, &pass, &names))
            .transpose()
            .map_err(to_py)?;
        let prices = priced(&rows, &pass);
        let tokens = beside
            .is_some()
            .then(|| tokens(&pass))
            .transpose()
            .map_err(to_py)?;
        let placed = table(
            vec![
                (
                    "session_id",
                    text_array(pass.placed.iter().map(|p| p.map(|(s, _)| s))),
                ),
                (
                    "process_index",
                    Arc::new(
                        pass.placed
                            .iter()
                            .map(|p| p.map(|(_, n)| n))
                            .collect::<Int32Array>(),
                    ),
                ),
            ],
            pass.placed.len(),
        );
        let unknown = table(
            vec![
                ("file", text_array(pass.unknown.iter().map(|u| Some(u.0)))),
                (
                    "event_type",
                    text_array(pass.unknown.iter().map(|u| Some(u.1))),
                ),
                ("line", int_array(pass.unknown.iter().map(|u| Some(u.2)))),
                ("count", int_array(pass.unknown.iter().map(|u| Some(u.3)))),
            ],
            pass.unknown.len(),
        );
        let message = "internal error in the Copilot pass; file skipped";
        let repeats: Vec<_> = pass
            .repeats
            .iter()
            .map(|w| (w.file, Some(w.line), "warning", w.message.clone()))
            .chain(lost.iter().map(|f| (*f, None, "error", message.to_owned())))
            .collect();
        let folded: Vec<(&str, Option<SessionFold<'_>>, &str)> = pass
            .sessions
            .iter_mut()
            .map(|s| {
                let first = s.rows.first().map_or("", |&row| rows.key(row).file);
                (s.id, s.fold.take(), first)
            })
            .collect();
        let passed = (
            copilot_tables(&folded).map_err(to_py)?,
            issue_table(&repeats),
            unknown,
            placed,
            prices,
            events,
            tokens,
        );
        Ok::<_, PyErr>((passed, pass.spent, building.elapsed()))
    })?;
    if let Some(stages) = stages {
        add_stages(&stages, spent, tables)?;
    }
    Ok(passed)
}

/// Add a pass's seconds to `stages`, by stage: `events`, `order`, `fold`, `tokens` and `fit`
/// as the pass measured them ([`Spent`]: thread-seconds, summed over the sessions of its
/// parallel steps), and `tables`, the wall of building the tables it returns.
fn add_stages(stages: &Bound<'_, PyDict>, spent: Spent, tables: Duration) -> PyResult<()> {
    let each = [
        ("events", spent.events),
        ("order", spent.order),
        ("fold", spent.fold),
        ("tokens", spent.tokens),
        ("fit", spent.fit),
        ("tables", tables),
    ];
    for (name, time) in each {
        let before: f64 = match stages.get_item(name)? {
            Some(value) => value.extract()?,
            None => 0.0,
        };
        stages.set_item(name, before + time.as_secs_f64())?;
    }
    Ok(())
}

/// The files of the group's lines, each once, in scan order.
fn files_of<'a>(rows: &Batches<'a>) -> Vec<&'a str> {
    let mut seen = FxHashSet::default();
    (0..rows.len())
        .map(|row| rows.key(row).file)
        .filter(|file| seen.insert(*file))
        .collect()
}

/// The token stage's tables of the sessions the pass folded (`copilot_tokens::token_tables`),
/// aligned with the fold's tables (`copilot_tables`): the calls row for row, the sessions
/// row for row in their order (by start, then id), so that they join by position.
fn tokens(pass: &Pass<'_>) -> Result<(ArrowTable, ArrowTable, ArrowTable), ArrowError> {
    use super::copilot_tokens::{token_tables, Part};
    let folded: Vec<(&Session<'_>, &SessionFold<'_>)> = pass
        .sessions
        .iter()
        .filter_map(|s| Some((s, s.fold.as_ref()?)))
        .collect();
    let parts: Vec<Part<'_, '_>> = folded
        .iter()
        .map(|(s, fold)| Part {
            id: s.id,
            calls: &fold.calls,
            tokens: match &s.tokens {
                Tokens::Done(tokens) => Some(tokens),
                Tokens::NotRun | Tokens::Failed => None,
            },
        })
        .collect();
    let mut order: Vec<usize> = (0..folded.len()).collect();
    order.sort_by_key(|&i| folded.get(i).map(|(s, f)| session_rank(s.id, &f.session)));
    token_tables(&parts, &order)
}

/// A scanned batch's columns as a record batch.
fn record_batch(table: &ArrowTable) -> Result<RecordBatch, ArrowError> {
    let fields: Vec<Field> = table
        .names
        .iter()
        .zip(&table.arrays)
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), table.arrays.clone())
}

/// The priced lines kept (what `agents/copilot/log_prices.py` decodes into LOG_PRICES rows), in event order.
fn priced(rows: &Batches<'_>, pass: &Pass<'_>) -> ArrowTable {
    // Each line's columns, not its whole event: a list of these is a tenth the size.
    struct Line<'a> {
        session: &'a str,
        file: &'a str,
        line: i64,
        timestamp: Option<i64>,
        model: Option<&'a str>,
        details: Option<&'a str>,
    }
    let lines: Vec<Line<'_>> = pass
        .sessions
        .iter()
        .flat_map(|s| {
            s.priced
                .iter()
                .filter_map(|&at| s.rows.get(at))
                .map(|&row| (s.id, row))
        })
        .map(|(session, row)| {
            let event = rows.event(row);
            Line {
                session,
                file: event.file,
                line: event.line,
                timestamp: event.timestamp,
                model: event.model,
                details: rows.prices(row).0,
            }
        })
        .collect();
    table(
        vec![
            (
                "source_file",
                text_array(lines.iter().map(|l| Some(l.file))),
            ),
            ("source_line", int_array(lines.iter().map(|l| Some(l.line)))),
            (
                "session_id",
                text_array(lines.iter().map(|l| Some(l.session))),
            ),
            ("timestamp", time_array(lines.iter().map(|l| l.timestamp))),
            ("model", text_array(lines.iter().map(|l| l.model))),
            ("token_details", text_array(lines.iter().map(|l| l.details))),
        ],
        lines.len(),
    )
}

/// The EVENTS columns `names` of the lines kept, in session order: each scanned column's
/// values gathered (strings keep pointing into the scanner's buffers), and the pass's own
/// `event_seq`, `process_index` and `byte_offset`.
fn gathered(
    records: &[RecordBatch],
    rows: &Batches<'_>,
    pass: &Pass<'_>,
    names: &[String],
) -> Result<ArrowTable, ArrowError> {
    // Runs of consecutive rows of one batch: (batch, first row, end).
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for &row in pass.sessions.iter().flat_map(|s| &s.rows) {
        let batch = rows.starts.partition_point(|&s| s <= row).saturating_sub(1);
        let local = row.saturating_sub(rows.starts.get(batch).copied().unwrap_or(0));
        match runs.last_mut() {
            Some((b, _, end)) if *b == batch && *end == local => *end += 1,
            _ => runs.push((batch, local, local + 1)),
        }
    }
    let count: usize = pass.sessions.iter().map(|s| s.rows.len()).sum();
    let mut out: Vec<(&'static str, ArrayRef)> = Vec::new();
    for name in names {
        let Some(name) = static_name(name) else {
            continue; // a column the scan does not have: the caller pads it
        };
        let array: ArrayRef = match name {
            "event_seq" => Arc::new(
                pass.sessions
                    .iter()
                    .flat_map(|s| (1..=s.rows.len()).map(|n| i64::try_from(n).ok()))
                    .collect::<Int64Array>(),
            ),
            "process_index" => Arc::new(
                pass.sessions
                    .iter()
                    .flat_map(|s| s.processes.iter().map(|&p| Some(p)))
                    .collect::<Int32Array>(),
            ),
            "byte_offset" => int_array(pass.sessions.iter().flat_map(|s| s.byte_offsets.clone())),
            _ => {
                let sources: Vec<_> = records
                    .iter()
                    .filter_map(|r| r.column_by_name(name).map(|a| a.to_data()))
                    .collect();
                if sources.len() != records.len() || records.is_empty() {
                    continue;
                }
                let mut data = MutableArrayData::new(sources.iter().collect(), true, count);
                for &(batch, start, end) in &runs {
                    data.try_extend(batch, start, end)?;
                }
                make_array(data.freeze())
            }
        };
        out.push((name, array));
    }
    Ok(table(out, count))
}

/// A column name as the `'static` text `ArrowTable` holds: the scanner's own (or
/// `event_seq`, which the pass numbers); None for a name the scan does not have.
fn static_name(name: &str) -> Option<&'static str> {
    if name == "event_seq" {
        return Some("event_seq");
    }
    super::scanner()
        .column_names()
        .into_iter()
        .find(|&n| n == name)
}
