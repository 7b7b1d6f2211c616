//! The Python binding: `analytics._scanner.scan_copilot(...)`, and `scan_copilot_from(...)`,
//! which goes on from where an earlier scan of each file stopped (`ScanState`).
//!
//! The event columns leave as Arrow arrays through the Arrow C data interface (the
//! `__arrow_c_array__` protocol, which `polars.Series(...)` accepts), so polars adopts the
//! buffers without a copy and without a Python object per row. Each column is exported on its
//! own: a value polars keeps from one column (a session id in a result table) then keeps that
//! column's buffers alive, not the whole batch's. The shutdowns' per-model totals, decoded
//! (`model_metrics.rs`), leave as one `ArrowTable` of MODEL_METRICS rows; issues, the totals'
//! warnings and unreadable files are few and leave as Python lists. The GIL is released while
//! scanning.
//!
//! `fold_agent(agent, groups)` folds the logs of an agent folded one call per request (its
//! folder under `agents/`, named in `agents::FOLDS`): calls, sessions, issues and items, each
//! an `ArrowTable`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Int32Array, Int64Array, ListArray,
    StringViewArray, TimestampMillisecondArray,
};
use arrow_buffer::bit_iterator::BitIndexIterator;
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{ArrowError, DataType, Field};

use arrow_array::builder::{ListBuilder, StringBuilder};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyTuple};

use crate::agents::copilot::format::COPILOT;
use crate::agents::copilot::model_metrics::ModelRow;
use crate::fold::{
    Folded, Frame, ListValues, Out, Tables, CALL_COLUMNS, ITEM_COLUMNS, SESSION_COLUMNS,
};
use crate::read::format::Rule;
use crate::read::json::Shape;
use crate::read::scan::{Batch, Failure, FileSpec, Issue, Resume, Scanner, Totals, BLOCK};
use crate::read::table::{Bits, Column, Recycled, StrColumn, Table, POOL};
use rustc_hash::FxHashMap;

mod copilot_pass;
mod copilot_tokens;

fn scanner() -> &'static Scanner {
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    SCANNER.get_or_init(|| Scanner::new(COPILOT))
}

/// The columns of one batch (`columns()`: name and column, for `polars.Series(column)`).
#[pyclass(frozen, module = "analytics._scanner")]
struct ArrowTable {
    names: Vec<&'static str>,
    arrays: Vec<ArrayRef>,
    rows: usize,
}

/// One column, for `polars.Series(column)`.
#[pyclass(frozen, module = "analytics._scanner")]
#[derive(Clone)]
struct ArrowColumn {
    array: ArrayRef,
}

#[pymethods]
impl ArrowTable {
    fn columns(&self) -> Vec<(&'static str, ArrowColumn)> {
        self.names
            .iter()
            .zip(&self.arrays)
            .map(|(&name, array)| {
                let column = ArrowColumn {
                    array: Arc::clone(array),
                };
                (name, column)
            })
            .collect()
    }

    fn __len__(&self) -> usize {
        self.rows
    }

    /// The Arrow PyCapsule stream protocol: the table as one record batch, so
    /// `polars.DataFrame(table)` adopts every column in one call (a small result table's
    /// columns then live as long as the table's, which `columns()` avoids for scanned lines).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        use arrow_array::ffi_stream::FFI_ArrowArrayStream;
        use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchOptions};
        use arrow_schema::{Field, Schema};
        let _ = requested_schema;
        let fields: Vec<Field> = self
            .names
            .iter()
            .zip(&self.arrays)
            .map(|(&name, array)| Field::new(name, array.data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        let batch =
            RecordBatch::try_new_with_options(Arc::clone(&schema), self.arrays.clone(), &options)
                .map_err(to_py)?;
        let reader = RecordBatchIterator::new([Ok(batch)], schema);
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

#[pymethods]
impl ArrowColumn {
    /// The Arrow PyCapsule protocol: (schema capsule, array capsule) of the column.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let data = self.array.to_data();
        let schema = FFI_ArrowSchema::try_from(data.data_type()).map_err(to_py)?;
        let array = FFI_ArrowArray::new(&data);
        let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
        let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }
}

fn to_py(error: ArrowError) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// Where the scan of one file stopped (`scan_copilot_from`): pass it back to read only the
/// lines written since. Opaque, but for the byte offset and line count it stands at.
#[pyclass(frozen, from_py_object, module = "analytics._scanner")]
#[derive(Clone)]
struct ScanState {
    state: Resume,
}

#[pymethods]
impl ScanState {
    /// Bytes of the file scanned (just after its last complete line).
    #[getter]
    fn offset(&self) -> u64 {
        self.state.offset
    }

    /// Lines scanned.
    #[getter]
    fn lines(&self) -> i64 {
        self.state.lines
    }

    fn __repr__(&self) -> String {
        format!(
            "ScanState(offset={}, lines={})",
            self.state.offset, self.state.lines
        )
    }
}

/// What `scan_copilot` returns: event tables (one per batch, in file order); issues as
/// columns (file index, line, severity, message); the shutdowns' per-model totals decoded
/// (`model_metrics`): a table of MODEL_METRICS rows with each row's file index (`file`)
/// instead of its path, and their warnings as columns (file index, line, message);
/// unreadable files (file index, errno, message).
type Scanned = (
    Vec<ArrowTable>,
    (Vec<usize>, Vec<Option<i64>>, Vec<&'static str>, Vec<String>),
    ModelMetrics,
    Vec<(usize, Option<i32>, String)>,
);

/// The shutdowns' per-model totals: MODEL_METRICS rows (`file`: the file's index, for its
/// path), and their lines' warnings as columns (file index, line, message).
type ModelMetrics = (ArrowTable, (Vec<usize>, Vec<i64>, Vec<String>));

/// Scan Copilot event logs: `paths[i]` with session hint `hints[i]`, reading up to
/// `sizes[i]` bytes (None: to the end), `block_bytes` at once, in batches of about
/// `batch_bytes` on all cores.
#[pyfunction]
#[pyo3(signature = (paths, hints, sizes, batch_bytes = 16 << 20, block_bytes = BLOCK))]
fn scan_copilot(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    hints: Vec<String>,
    sizes: Vec<Option<u64>>,
    batch_bytes: u64,
    block_bytes: usize,
) -> PyResult<Scanned> {
    let files = file_specs(paths, hints, sizes)?;
    let count = files.len();
    POOL.open();
    let batches = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            scanner().scan(&files, batch_bytes, block_bytes)
        }))
        .unwrap_or_else(|_| vec![lost(count)])
    });
    let (scanned, _) = to_python(batches)?;
    Ok(scanned)
}

/// The files to scan: `paths[i]` with hint `hints[i]`, read up to `sizes[i]` bytes.
fn file_specs(
    paths: Vec<PathBuf>,
    hints: Vec<String>,
    sizes: Vec<Option<u64>>,
) -> PyResult<Vec<FileSpec>> {
    if paths.len() != hints.len() || paths.len() != sizes.len() {
        return Err(PyValueError::new_err(
            "paths, hints and sizes differ in length",
        ));
    }
    Ok(paths
        .into_iter()
        .zip(hints)
        .zip(sizes)
        .map(|((path, hint), size)| FileSpec { path, hint, size })
        .collect())
}

/// As `scan_copilot`, each file from `states[i]` (None: from its start), leaving a last line
/// without its newline for next time; also returns each file's end state.
#[pyfunction]
#[pyo3(signature = (paths, hints, sizes, states, batch_bytes = 16 << 20, block_bytes = BLOCK))]
fn scan_copilot_from(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    hints: Vec<String>,
    sizes: Vec<Option<u64>>,
    states: Vec<Option<ScanState>>,
    batch_bytes: u64,
    block_bytes: usize,
) -> PyResult<(Scanned, Vec<ScanState>)> {
    if paths.len() != states.len() {
        return Err(PyValueError::new_err("paths and states differ in length"));
    }
    let files = file_specs(paths, hints, sizes)?;
    let from: Vec<Resume> = states
        .into_iter()
        .map(|s| s.map(|s| s.state).unwrap_or_default())
        .collect();
    let count = files.len();
    POOL.open();
    let batches = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            scanner().scan_from(&files, &from, batch_bytes, block_bytes)
        }))
        .unwrap_or_else(|_| {
            let mut batch = lost(count);
            batch.ends = from.iter().cloned().enumerate().collect();
            vec![batch]
        })
    });
    let (scanned, mut ends) = to_python(batches)?;
    ends.sort_by_key(|&(file, _)| file);
    Ok((
        scanned,
        ends.into_iter()
            .map(|(_, state)| ScanState { state })
            .collect(),
    ))
}

/// Free the memory of scanned columns kept for the next scan's (see `table::Pool`), and keep
/// none until the next scan: for when the scans of a run are done. Returns the bytes freed.
#[pyfunction]
fn release_buffers() -> usize {
    POOL.release()
}

/// Batches as Python data, and their end states (file index, state).
fn to_python(batches: Vec<Batch>) -> PyResult<(Scanned, Vec<(usize, Resume)>)> {
    let mut ends = Vec::new();
    let mut tables = Vec::with_capacity(batches.len());
    let mut issues = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut totals = Vec::new();
    let mut failures = Vec::new();
    for batch in batches {
        ends.extend(batch.ends);
        for issue in batch.issues {
            issues.0.push(issue.file);
            issues.1.push(issue.line);
            issues.2.push(issue.severity);
            issues.3.push(issue.message);
        }
        totals.extend(batch.totals);
        failures.extend(
            batch
                .failures
                .into_iter()
                .map(|f| (f.file, f.errno, f.message)),
        );
        let rows = batch.events.rows();
        let names = batch.events.names.clone();
        tables.push(ArrowTable {
            names,
            arrays: to_arrow(batch.events).map_err(to_py)?,
            rows,
        });
    }
    Ok(((tables, issues, model_metrics(&totals), failures), ends))
}

/// The shutdowns' per-model totals decoded (`crate::agents::copilot::model_metrics`), in the order of their
/// lines.
fn model_metrics(totals: &[Totals]) -> ModelMetrics {
    let mut warnings = (Vec::new(), Vec::new(), Vec::new());
    let mut rows = Vec::new();
    for line in totals {
        let decoded = crate::agents::copilot::model_metrics::decode(line.json.as_bytes());
        for message in decoded.warnings {
            warnings.0.push(line.file);
            warnings.1.push(line.line);
            warnings.2.push(message);
        }
        rows.extend(decoded.rows.into_iter().map(|row| (line, row)));
    }
    let each = || rows.iter();
    let count = |pick: fn(&ModelRow) -> Option<i64>| int_array(each().map(|(_, r)| pick(r)));
    let columns = vec![
        (
            "file",
            int_array(each().map(|(l, _)| i64::try_from(l.file).ok())),
        ),
        ("source_line", int_array(each().map(|(l, _)| Some(l.line)))),
        (
            "session_id",
            text_array(each().map(|(l, _)| Some(l.session.as_str()))),
        ),
        (
            "process_index",
            nullable(each().map(|(l, _)| i32::try_from(l.process).ok())).ints(),
        ),
        ("model", text_array(each().map(|(_, r)| r.model.as_deref()))),
        ("requests_count", count(|r| r.requests_count)),
        (
            "requests_cost",
            text_array(each().map(|(_, r)| r.requests_cost.as_deref())),
        ),
        ("input_tokens", count(|r| r.input_tokens)),
        ("output_tokens", count(|r| r.output_tokens)),
        ("cache_read_tokens", count(|r| r.cache_read_tokens)),
        ("cache_write_tokens", count(|r| r.cache_write_tokens)),
        ("reasoning_tokens", count(|r| r.reasoning_tokens)),
        (
            "total_nano_aiu",
            text_array(each().map(|(_, r)| r.total_nano_aiu.as_deref())),
        ),
    ];
    (table(columns, rows.len()), warnings)
}

/// Every file lost to a panic that escaped the scanner's own guards (a last resort).
fn lost(count: usize) -> Batch {
    let mut batch = scanner().empty_batch();
    batch.failures = (0..count)
        .map(|file| Failure {
            file,
            errno: None,
            message: "internal error in the log scanner; file skipped".into(),
        })
        .collect();
    batch
}

/// A column rule as Python data: (kind, [(event type or "", [field paths])], limit).
type RuleData = (&'static str, Vec<(&'static str, Vec<&'static str>)>, usize);

/// Fields, columns and settings of a format, as Python data.
type FormatData = (
    Vec<(&'static str, &'static str)>,
    Vec<(&'static str, RuleData)>,
    Vec<(&'static str, Vec<&'static str>)>,
);

/// The Copilot format table (see `copilot.rs`) as Python data, for the reference reader of
/// the tests: fields (path, shape), columns (name, rule) and the event-type settings.
#[pyfunction]
fn copilot_format() -> FormatData {
    let format = COPILOT;
    let fields = format
        .fields
        .iter()
        .map(|&(path, shape)| {
            let shape = match shape {
                Shape::Scalar => "scalar",
                Shape::Struct => "struct",
                Shape::Any => "any",
            };
            (path, shape)
        })
        .collect();
    let columns = format
        .columns
        .iter()
        .map(|&(name, rule)| {
            let (kind, limit) = match rule {
                Rule::Text(_) => ("text", 0),
                Rule::Shared(_) => ("text", 0),
                Rule::Limited(_, n) => ("text", n),
                Rule::Int(_) => ("int", 0),
                Rule::Flag(_) => ("flag", 0),
                Rule::FlagOrFalse(_) => ("flag_or_false", 0),
                Rule::Time(_) => ("time", 0),
                Rule::MatchedOn(_) => ("matched", 0),
                Rule::MeasuredOn(_) => ("measured", 0),
                Rule::ContentBytes => ("content_bytes", 0),
            };
            let mut paths = vec![("", rule.paths().to_vec())];
            paths.extend(rule.by_type().iter().map(|&(t, p)| (t, p.to_vec())));
            (name, (kind, paths, limit))
        })
        .collect();
    let c = format.content;
    let mut settings = vec![
        ("type", vec![format.type_field]),
        ("time", vec![format.time_field]),
        ("start", vec![format.start_type, format.session_field]),
        ("resume", vec![format.resume_type]),
        ("totals", vec![format.totals.0, format.totals.1]),
        ("text_types", c.text_types.to_vec()),
        ("text", c.text.to_vec()),
        ("assistant", [&[c.assistant_type][..], c.assistant].concat()),
    ];
    for &(kind, paths) in c.extras {
        settings.push(("extra", [&[kind][..], paths].concat()));
    }
    (fields, columns, settings)
}

/// The names of the event table's columns (for an empty scan, and for checks).
#[pyfunction]
fn event_columns() -> Vec<&'static str> {
    scanner().column_names()
}

/// A bitmap as Arrow's, its bytes handed over.
fn bitmap(bits: Bits) -> BooleanBuffer {
    let len = bits.len();
    BooleanBuffer::new(Buffer::from_vec(fitted(bits.into_bytes())), 0, len)
}

/// A column's validity (none when no row is null).
fn nulls(valid: Bits) -> Option<NullBuffer> {
    let buffer = NullBuffer::new(bitmap(valid));
    (buffer.null_count() > 0).then_some(buffer)
}

/// A string column as an Arrow array. The scanner's columns ([`Memory::Recycled`]) are not
/// validated again: Arrow's check (every string UTF-8, every view inside its buffer) cost
/// about 4% of the scan's CPU, and it holds by construction, as `StrColumn::invalid_view`
/// states (pinned by the fuzz target and by a debug assertion here). Other tables are checked.
fn strings(column: StrColumn, memory: Memory) -> Result<ArrayRef, ArrowError> {
    debug_assert_eq!(column.invalid_view(), None, "a string view Arrow rejects");
    debug_assert_eq!(column.valid.len(), column.len(), "a validity bit per view");
    let buffers: Vec<Buffer> = column
        .buffers
        .into_iter()
        .map(|data| memory.buffer(data))
        .collect();
    let views = ScalarBuffer::from(memory.buffer(column.views));
    let valid = nulls(column.valid);
    let array = match memory {
        Memory::Fitted => StringViewArray::try_new(views, buffers, valid)?,
        // SAFETY: the scanner builds every view with `StrColumn::view` from the bytes it
        // copies into `buffers` (length, prefix, buffer index and offset of those bytes; a
        // null row's view is all zeros), and every string it pushes is UTF-8: slices of a line
        // validated as UTF-8 (or replaced by `from_utf8_lossy`) cut at ASCII quotes or at
        // character starts, strings decoded from escapes (`format::unescape`, lone
        // surrogates as U+FFFD), numbers' text, paths and session ids from `str`s. That is
        // what `StringViewArray::try_new` would check (`StrColumn::invalid_view`), and the
        // validity has one bit per view.
        Memory::Recycled => unsafe { StringViewArray::new_unchecked(views, buffers.into(), valid) },
    };
    Ok(Arc::new(array))
}

/// A column's values without the room its growth left: the arrays live as long as polars
/// keeps the events, and the spare capacity of a doubling vector is up to as much again.
fn fitted<T>(mut values: Vec<T>) -> Vec<T> {
    values.shrink_to_fit();
    values
}

/// How a column's memory is handed to Arrow.
#[derive(Clone, Copy)]
enum Memory {
    /// Fitted (see `fitted`), freed when Arrow drops it: for tables kept as results.
    Fitted,
    /// As it is, back to `table::POOL` when Arrow drops it: for the scanner's batches, read
    /// once and dropped, whose memory the next batches' columns are built in (their string
    /// views are not validated again: see `strings`). Not fitted, so a small batch does not
    /// unmap the resident end of a recycled block (what was never written of a fresh block
    /// is not resident anyway).
    Recycled,
}

impl Memory {
    fn buffer<T: Recycled + ArrowNativeType>(self, values: Vec<T>) -> Buffer {
        match self {
            Memory::Fitted => Buffer::from_vec(fitted(values)),
            Memory::Recycled => recycled(values),
        }
    }
}

/// The owner of a column's memory while Arrow buffers point into it: when the last of them
/// is dropped (polars released the array, or the batch's tables were dropped), the memory
/// goes back to the pool the next batch's columns are taken from (`table::POOL`).
struct Owner<T: Recycled>(Vec<T>);

impl<T: Recycled> Drop for Owner<T> {
    fn drop(&mut self) {
        POOL.recycle(std::mem::take(&mut self.0));
    }
}

/// A column's values as an Arrow buffer that gives its memory back to the pool.
fn recycled<T: Recycled + ArrowNativeType>(values: Vec<T>) -> Buffer {
    let len = std::mem::size_of_val(values.as_slice());
    // A vector's pointer is never null (dangling but aligned when it holds nothing).
    let pointer = NonNull::from(values.as_slice()).cast::<u8>();
    let owner: Arc<Owner<T>> = Arc::new(Owner(values));
    // SAFETY: `pointer` is the start of the `len` initialised bytes of the vector `owner`
    // holds (moving a vector does not move its elements). The vector is never changed or
    // freed while the owner lives, and the buffer keeps the owner alive as long as it or any
    // slice or clone of it does: the bytes stay valid and unchanged for all of them.
    unsafe { Buffer::from_custom_allocation(pointer, len, owner) }
}

/// A scanned batch's columns as Arrow arrays, in recycled memory.
fn to_arrow(table: Table) -> Result<Vec<ArrayRef>, ArrowError> {
    let rows = table.rows();
    table
        .columns
        .into_iter()
        .map(|column| column_array(column, rows, Memory::Recycled))
        .collect()
}

/// One column as an Arrow array of `rows` rows.
fn column_array(column: Column, rows: usize, memory: Memory) -> Result<ArrayRef, ArrowError> {
    if column.len() < rows {
        // A column without a value in the batch (see `Table`): all null. Its zeroed values
        // come from `calloc` (arrow's `new_null_array` writes its zeros), so their pages are
        // made resident only if a reader looks at them; readers look at the validity first.
        return Ok(match column {
            Column::Str(_) => Arc::new(StringViewArray::new_null(rows)),
            Column::Int(_) => Arc::new(Int64Array::new_null(rows)),
            Column::Int32(_) => Arc::new(Int32Array::new_null(rows)),
            Column::Bool(_) => Arc::new(BooleanArray::new_null(rows)),
            Column::Time(_) => {
                Arc::new(TimestampMillisecondArray::new_null(rows).with_timezone("UTC"))
            }
        });
    }
    Ok(match column {
        Column::Str(c) => strings(c, memory)?,
        Column::Int(c) => Arc::new(Int64Array::new(
            ScalarBuffer::from(memory.buffer(c.values)),
            nulls(c.valid),
        )),
        Column::Int32(c) => Arc::new(Int32Array::new(
            ScalarBuffer::from(memory.buffer(c.values)),
            nulls(c.valid),
        )),
        Column::Bool(c) => Arc::new(BooleanArray::new(bitmap(c.values), nulls(c.valid))),
        Column::Time(c) => Arc::new(
            TimestampMillisecondArray::new(
                ScalarBuffer::from(memory.buffer(c.values)),
                nulls(c.valid),
            )
            .with_timezone("UTC"),
        ),
    })
}

/// A frame of folded calls, sessions or issues as an Arrow table; `paths`: the data buffers
/// of its columns of paths ([`Out::Paths`]), shared with the other frames of the fold.
fn frame_table(frame: Frame, paths: &[Buffer]) -> Result<ArrowTable, ArrowError> {
    let rows = frame.rows;
    let list = |offsets: Vec<i32>, values: ArrayRef| -> Result<ArrayRef, ArrowError> {
        let item = Arc::new(Field::new("item", DataType::Utf8View, true));
        let offsets = OffsetBuffer::new(ScalarBuffer::from(fitted(offsets)));
        Ok(Arc::new(ListArray::try_new(item, offsets, values, None)?))
    };
    let views = |views: Vec<u128>, valid: Option<NullBuffer>| -> Result<ArrayRef, ArrowError> {
        let views = ScalarBuffer::from(Buffer::from_vec(fitted(views)));
        Ok(Arc::new(StringViewArray::try_new(
            views,
            paths.to_vec(),
            valid,
        )?))
    };
    let arrays = frame
        .columns
        .into_iter()
        .map(|column| match column {
            Out::Plain(column) => column_array(column, rows, Memory::Fitted),
            Out::Lists {
                offsets,
                values: ListValues::Text(values),
            } => list(offsets, strings(values, Memory::Fitted)?),
            Out::Lists {
                offsets,
                values: ListValues::Paths(v),
            } => list(offsets, views(v, None)?),
            Out::Paths { views: v, valid } => views(v, nulls(valid)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ArrowTable {
        names: frame.names,
        arrays,
        rows,
    })
}

/// Calls, sessions and issues of folded groups, as Arrow tables.
type FoldedTables = (ArrowTable, ArrowTable, ArrowTable, ArrowTable);

/// Fold each group with `fold`, groups in parallel (the GIL released), each laid out as
/// columns as soon as the groups before it are. A group whose fold panicked (a bug: the
/// folds are written not to) gives an error issue per file instead.
fn fold_groups(
    py: Python<'_>,
    groups: Vec<Vec<PathBuf>>,
    agent: &'static str,
    fold: fn(&[PathBuf], bool) -> Folded,
    with_items: bool,
) -> PyResult<FoldedTables> {
    let tables = py.detach(|| {
        let mut tables = Tables::default();
        let each = |_: usize, paths: &Vec<PathBuf>| {
            catch_unwind(AssertUnwindSafe(|| fold(paths, with_items))).unwrap_or_else(|_| Folded {
                agent,
                paths: crate::fold::path_names(paths),
                issues: (0..paths.len())
                    .map(|file| Issue {
                        file,
                        line: None,
                        severity: "error",
                        message: "internal error in the log fold; file skipped".into(),
                    })
                    .collect(),
                ..Folded::default()
            })
        };
        // a group's fold is held until it is laid out: groups are worked on a few files' worth
        // at a time (a large group with as many others as there are threads)
        let mut since = 0;
        crate::fold::in_order_by(&groups, Vec::len, each, |folded| {
            since += folded.paths.len();
            tables.add(folded);
            if since >= TRIM_EVERY {
                give_back_freed_memory();
                since = 0;
            }
        });
        tables
    });
    let (calls, sessions, issues, items, paths) = tables.finish();
    let paths: Vec<Buffer> = paths
        .into_iter()
        .map(|text| Buffer::from_vec(fitted(text)))
        .collect();
    let tables = (
        frame_table(calls, &paths).map_err(to_py)?,
        frame_table(sessions, &paths).map_err(to_py)?,
        frame_table(issues, &paths).map_err(to_py)?,
        frame_table(items, &paths).map_err(to_py)?,
    );
    give_back_freed_memory();
    Ok(tables)
}

/// How many files' folds are laid out between two [`give_back_freed_memory`].
const TRIM_EVERY: usize = 4096;

/// Return the memory the C allocator keeps after a fold to the system: the groups' rows,
/// many small allocations made on the worker threads and freed, stay resident in its heaps
/// otherwise (a 1 GB tree's fold left some 240 MB so), under whatever polars allocates next.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's `malloc_trim` takes no pointer and is thread-safe: it only hands
        // free pages of the allocator's heaps back to the system.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Fold one agent's logs (`agent`: its id, as `agents::FOLDS` names it): each group (files
/// a call may be copied between: a Claude Code project directory, a Codex home) is folded
/// together, so a request written into several of its files counts once. Returns the calls,
/// sessions, issues and items tables (the items empty unless `with_items`), each with the
/// index of a row's group in `groups` as its last column (`fold::GROUP`).
#[pyfunction]
#[pyo3(signature = (agent, groups, with_items = true))]
fn fold_agent(
    py: Python<'_>,
    agent: &str,
    groups: Vec<Vec<PathBuf>>,
    with_items: bool,
) -> PyResult<FoldedTables> {
    let Some(native) = crate::agents::FOLDS
        .iter()
        .find(|native| native.id == agent)
    else {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "no native fold for agent {agent:?}"
        )));
    };
    fold_groups(py, groups, native.id, native.fold, with_items)
}

/// A file's first bytes (None: it could not be read) and its size, `mtime_ns`, `ctime_ns` and
/// inode (None: no status could be had).
type HeadOut = (Option<Py<PyBytes>>, Option<crate::read::heads::Seen>);

/// The first `limit` bytes of each of `paths` (all of a shorter file) and its status, read in
/// parallel with the GIL released (`read::heads`): discovery's one read of each file.
#[pyfunction]
fn read_heads(py: Python<'_>, paths: Vec<PathBuf>, limit: usize) -> Vec<HeadOut> {
    let heads = py.detach(|| crate::read::heads::heads(&paths, limit));
    heads
        .into_iter()
        .map(|(bytes, seen)| (bytes.map(|b| PyBytes::new(py, &b).unbind()), seen))
        .collect()
}

/// The column names of the folds' calls, sessions, issues and items tables.
#[pyfunction]
fn fold_columns() -> (
    Vec<&'static str>,
    Vec<&'static str>,
    Vec<&'static str>,
    Vec<&'static str>,
) {
    (
        CALL_COLUMNS.to_vec(),
        SESSION_COLUMNS.to_vec(),
        vec!["file", "line", "severity", "message"],
        ITEM_COLUMNS.to_vec(),
    )
}

/// Solve many small dense systems (`solve::solve_systems`): returns (solutions, inverse
/// diagonals), concatenated in system order.
#[pyfunction]
fn solve_systems(
    py: Python<'_>,
    sizes: Vec<usize>,
    matrices: Vec<f64>,
    vectors: Vec<f64>,
) -> (Vec<f64>, Vec<f64>) {
    py.detach(|| crate::agents::copilot::solve::solve_systems(&sizes, &matrices, &vectors))
}

/// What this build of the engine is, for `agentcost --version`: the crate's version, the
/// Cargo profile and the target it was compiled for (`0.1.0 release, x86_64-linux`).
fn build() -> String {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let (arch, os) = (std::env::consts::ARCH, std::env::consts::OS);
    format!("{} {profile}, {arch}-{os}", env!("CARGO_PKG_VERSION"))
}

/// The module `analytics._scanner`.
#[pymodule]
fn _scanner(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("BUILD", build())?;
    module.add_class::<ArrowTable>()?;
    module.add_class::<ScanState>()?;
    module.add_function(wrap_pyfunction!(scan_copilot, module)?)?;
    module.add_function(wrap_pyfunction!(scan_copilot_from, module)?)?;
    module.add_function(wrap_pyfunction!(release_buffers, module)?)?;
    module.add_function(wrap_pyfunction!(event_columns, module)?)?;
    module.add_function(wrap_pyfunction!(copilot_format, module)?)?;
    module.add_function(wrap_pyfunction!(solve_systems, module)?)?;
    module.add_function(wrap_pyfunction!(fold_agent, module)?)?;
    module.add_function(wrap_pyfunction!(fold_columns, module)?)?;
    module.add_function(wrap_pyfunction!(read_heads, module)?)?;
    module.add_function(wrap_pyfunction!(copilot_pass::pass_copilot, module)?)?;
    module.add_function(wrap_pyfunction!(copilot_tokens::copilot_tokens, module)?)?;
    module.add_function(wrap_pyfunction!(
        copilot_tokens::copilot_token_columns,
        module
    )?)?;
    Ok(())
}

/// A string column read from polars (views, or offsets of either width); a column of nulls
/// only (most of a batch's sparse columns) reads as `Null`, without a look at each row.
enum Strs<'a> {
    View(&'a StringViewArray),
    Small(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    Null,
}

impl<'a> Strs<'a> {
    fn of(array: &'a dyn Array) -> Strs<'a> {
        let any = array.as_any();
        if array.null_count() == array.len() {
            Strs::Null
        } else if let Some(a) = any.downcast_ref::<StringViewArray>() {
            Strs::View(a)
        } else if let Some(a) = any.downcast_ref::<arrow_array::StringArray>() {
            Strs::Small(a)
        } else if let Some(a) = any.downcast_ref::<arrow_array::LargeStringArray>() {
            Strs::Large(a)
        } else {
            Strs::Null
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strs::View(a) => (i < a.len() && a.is_valid(i)).then(|| a.value(i)),
            Strs::Small(a) => (i < a.len() && a.is_valid(i)).then(|| a.value(i)),
            Strs::Large(a) => (i < a.len() && a.is_valid(i)).then(|| a.value(i)),
            Strs::Null => None,
        }
    }

    /// `f(row, value)` for each row of `start..start + count` with a value, in order (rows
    /// past the column's end have none): the column's kind and validity are looked at once,
    /// not per row, and a null row costs nothing where the validity's bits are all clear.
    #[inline]
    fn each_in(&self, start: usize, count: usize, mut f: impl FnMut(usize, &'a str)) {
        match self {
            Strs::View(a) => valid_rows(a.len(), a.nulls(), start, count, |i| f(i, a.value(i))),
            Strs::Small(a) => valid_rows(a.len(), a.nulls(), start, count, |i| f(i, a.value(i))),
            Strs::Large(a) => valid_rows(a.len(), a.nulls(), start, count, |i| f(i, a.value(i))),
            Strs::Null => {}
        }
    }

    /// `set(item, value)` for each row of `start..start + out.len()` with a value, on the
    /// row's item of `out` (`out[0]` is row `start`).
    #[inline]
    fn each<T>(&self, start: usize, out: &mut [T], set: impl Fn(&mut T, &'a str)) {
        self.each_in(start, out.len(), |i, v| {
            if let Some(item) = out.get_mut(i.wrapping_sub(start)) {
                set(item, v);
            }
        });
    }
}

/// `f(row)` for each row of `start..start + count` (those below `len`) that `nulls` says is
/// valid, in order. Bits are read a word at a time (`BitIndexIterator`), so the null rows of
/// a sparse column are skipped, not tested one by one.
#[inline]
fn valid_rows(
    len: usize,
    nulls: Option<&NullBuffer>,
    start: usize,
    count: usize,
    mut f: impl FnMut(usize),
) {
    let end = start.saturating_add(count).min(len);
    if start >= end {
        return;
    }
    match nulls {
        None => (start..end).for_each(f),
        Some(nulls) => {
            let (bits, offset) = (nulls.validity(), nulls.offset());
            let within = nulls.len() >= end
                && offset
                    .checked_add(end)
                    .is_some_and(|last| last.div_ceil(8) <= bits.len());
            if within {
                BitIndexIterator::new(bits, offset + start, end - start)
                    .for_each(|at| f(start + at));
            } else {
                // Not an Arrow array's validity (it covers its rows): read row by row.
                (start..end)
                    .filter(|&i| i < nulls.len() && nulls.is_valid(i))
                    .for_each(f);
            }
        }
    }
}

/// A whole-number column read from polars (Int64, Int32 or UTC-millisecond timestamps): its
/// values and validity, resolved once; a column of nulls only reads as `Null`.
enum Ints<'a> {
    I64(&'a [i64], Option<&'a NullBuffer>),
    I32(&'a [i32], Option<&'a NullBuffer>),
    Null,
}

impl<'a> Ints<'a> {
    fn of(array: &'a dyn Array) -> Ints<'a> {
        let any = array.as_any();
        if array.null_count() == array.len() {
            Ints::Null
        } else if let Some(a) = any.downcast_ref::<Int64Array>() {
            Ints::I64(a.values(), a.nulls())
        } else if let Some(a) = any.downcast_ref::<Int32Array>() {
            Ints::I32(a.values(), a.nulls())
        } else if let Some(a) = any.downcast_ref::<TimestampMillisecondArray>() {
            Ints::I64(a.values(), a.nulls())
        } else {
            Ints::Null
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Option<i64> {
        let valid = |nulls: &Option<&NullBuffer>| nulls.is_none_or(|n| n.is_valid(i));
        match self {
            Ints::I64(values, nulls) => values.get(i).copied().filter(|_| valid(nulls)),
            Ints::I32(values, nulls) => values
                .get(i)
                .map(|&v| i64::from(v))
                .filter(|_| valid(nulls)),
            Ints::Null => None,
        }
    }

    /// `set(item, value)` for each row of `start..start + out.len()` with a value, on the
    /// row's item of `out` (`out[0]` is row `start`); see `Strs::each_in`.
    #[inline]
    fn each<T>(&self, start: usize, out: &mut [T], set: impl Fn(&mut T, i64)) {
        let count = out.len();
        let mut put = |i: usize, v: i64| {
            if let Some(item) = out.get_mut(i.wrapping_sub(start)) {
                set(item, v);
            }
        };
        match self {
            Ints::I64(values, nulls) => {
                valid_rows(values.len(), *nulls, start, count, |i| {
                    if let Some(&v) = values.get(i) {
                        put(i, v);
                    }
                });
            }
            Ints::I32(values, nulls) => {
                valid_rows(values.len(), *nulls, start, count, |i| {
                    if let Some(&v) = values.get(i) {
                        put(i, i64::from(v));
                    }
                });
            }
            Ints::Null => {}
        }
    }
}

fn flags(array: &dyn Array) -> Option<&BooleanArray> {
    array.as_any().downcast_ref::<BooleanArray>()
}

fn flag(array: Option<&BooleanArray>, i: usize) -> Option<bool> {
    array.and_then(|a| (i < a.len() && a.is_valid(i)).then(|| a.value(i)))
}

/// `set(item, value)` for each row of `start..start + out.len()` with a value, on the row's
/// item of `out` (`out[0]` is row `start`); see `Strs::each_in`.
#[inline]
fn each_flag<T>(
    array: Option<&BooleanArray>,
    start: usize,
    out: &mut [T],
    set: impl Fn(&mut T, bool),
) {
    let Some(a) = array else { return };
    let values = a.values();
    valid_rows(a.len(), a.nulls(), start, out.len(), |i| {
        if let Some(item) = out.get_mut(i.wrapping_sub(start)) {
            set(item, i < values.len() && values.value(i));
        }
    });
}

/// The columns of a frame passed in through the Arrow PyCapsule stream protocol
/// (`frame.__arrow_c_stream__()`), as one record batch (the caller rechunks).
fn read_frame(capsule: &Bound<'_, PyCapsule>) -> PyResult<arrow_array::RecordBatch> {
    use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
    use arrow_array::RecordBatchReader;
    let pointer = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
    // SAFETY: the capsule holds an FFI_ArrowArrayStream (its name says so, by the protocol);
    // `from_raw` moves the stream out and leaves a released one for the capsule to drop.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) };
    let reader = RecordBatchStreamReader::try_new(stream).map_err(to_py)?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(to_py)?;
    match batches.len() {
        0 => Ok(arrow_array::RecordBatch::new_empty(schema)),
        1 => Ok(batches
            .into_iter()
            .next()
            .unwrap_or_else(|| arrow_array::RecordBatch::new_empty(Arc::clone(&schema)))),
        _ => Err(PyValueError::new_err(
            "expected one chunk (rechunk the frame)",
        )),
    }
}

/// A column of a record batch by name (an absent column reads as null).
fn column<'a>(batch: &'a arrow_array::RecordBatch, name: &str) -> &'a dyn Array {
    static EMPTY: OnceLock<ArrayRef> = OnceLock::new();
    batch
        .column_by_name(name)
        .map(|a| a.as_ref())
        .unwrap_or_else(|| {
            EMPTY
                .get_or_init(|| new_null_array(&DataType::Null, 0))
                .as_ref()
        })
}

/// The EVENTS columns the Copilot fold and its token stage read.
struct EventColumns<'a> {
    s: [Strs<'a>; 23],
    n: [Ints<'a>; 20],
    autopilot: Option<&'a BooleanArray>,
    byok: Option<&'a BooleanArray>,
}

const FOLD_STRS: [&str; 23] = [
    "source_file",
    "session_id",
    "event_type",
    "agent_id",
    "parent_tool_call_id",
    "turn_id",
    "interaction_id",
    "model",
    "api_call_id",
    "tool_call_id",
    "tool_name",
    "initiator",
    "text",
    "interaction_type",
    "usage_id",
    "cwd",
    "repository",
    "copilot_version",
    "status_detail",
    "total_nano_aiu",
    "total_premium_requests",
    "info_type",
    "nano_aiu",
];
const FOLD_INTS: [&str; 20] = [
    "source_line",
    "event_seq",
    "process_index",
    "timestamp",
    "output_tokens",
    "duration_ms",
    "total_api_duration_ms",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "events_file_size_bytes",
    "byte_offset",
    "content_bytes",
    "tool_request_bytes",
    "total_tokens",
    "system_tokens",
    "tool_definitions_tokens",
    "pre_compaction_tokens",
    "post_compaction_tokens",
];

impl<'a> EventColumns<'a> {
    fn of(batch: &'a arrow_array::RecordBatch) -> EventColumns<'a> {
        EventColumns {
            s: FOLD_STRS.map(|name| Strs::of(column(batch, name))),
            n: FOLD_INTS.map(|name| Ints::of(column(batch, name))),
            autopilot: flags(column(batch, "is_autopilot")),
            byok: flags(column(batch, "is_byok")),
        }
    }

    /// Row `i` as the fold reads it.
    fn event(&self, i: usize) -> crate::agents::copilot::fold::Event<'a> {
        let mut event = [crate::agents::copilot::fold::Event::default()];
        self.fill(i, &mut event);
        let [event] = event;
        event
    }

    /// Rows `start..start + out.len()` as the fold reads them, into `out` (`out[0]` is row
    /// `start`), which holds default events: column by column, each column's values set
    /// where it has them (most columns are null on most lines, and a null costs nothing).
    fn fill(&self, start: usize, out: &mut [crate::agents::copilot::fold::Event<'a>]) {
        let [file, _session, kind, agent_id, parent_tool_call_id, turn_id, interaction_id, model, api_call_id, tool_call_id, tool_name, initiator, text, interaction_type, usage_id, cwd, repository, copilot_version, status_detail, total_nano_aiu, total_premium_requests, info_type, nano_aiu] =
            &self.s;
        let [line, seq, process, timestamp, output_tokens, duration_ms, total_api_duration_ms, input_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, events_file_size_bytes, byte_offset, content_bytes, tool_request_bytes, total_tokens, system_tokens, tool_definitions_tokens, pre_compaction_tokens, post_compaction_tokens] =
            &self.n;
        file.each(start, out, |e, v| e.file = v);
        kind.each(start, out, |e, v| e.kind = v);
        macro_rules! some {
            ($($column:ident),*) => {
                $($column.each(start, out, |e, v| e.$column = Some(v));)*
            };
        }
        some!(
            agent_id,
            parent_tool_call_id,
            turn_id,
            interaction_id,
            model,
            api_call_id,
            tool_call_id,
            tool_name,
            initiator,
            text,
            interaction_type,
            usage_id,
            cwd,
            repository,
            copilot_version,
            status_detail,
            total_nano_aiu,
            total_premium_requests,
            info_type,
            nano_aiu
        );
        line.each(start, out, |e, v| e.line = v);
        seq.each(start, out, |e, v| e.seq = v);
        process.each(start, out, |e, v| e.process = i32::try_from(v).unwrap_or(0));
        some!(
            timestamp,
            output_tokens,
            duration_ms,
            total_api_duration_ms,
            input_tokens,
            cache_read_tokens,
            cache_write_tokens,
            reasoning_tokens,
            events_file_size_bytes,
            byte_offset,
            content_bytes,
            tool_request_bytes,
            total_tokens,
            system_tokens,
            tool_definitions_tokens,
            pre_compaction_tokens,
            post_compaction_tokens
        );
        each_flag(self.autopilot, start, out, |e, v| e.is_autopilot = Some(v));
        each_flag(self.byok, start, out, |e, v| e.is_byok = Some(v));
    }
}

/// Row indexes of each session, sessions in id order.
fn by_session<'a>(ids: &Strs<'a>, rows: usize) -> Vec<(&'a str, Vec<usize>)> {
    let mut at: FxHashMap<&'a str, usize> = FxHashMap::default();
    let mut groups: Vec<(&'a str, Vec<usize>)> = Vec::new();
    for i in 0..rows {
        let id = ids.get(i).unwrap_or("");
        let slot = *at.entry(id).or_insert_with(|| {
            groups.push((id, Vec::new()));
            groups.len() - 1
        });
        if let Some((_, rows)) = groups.get_mut(slot) {
            rows.push(i);
        }
    }
    groups.sort_by(|a, b| a.0.cmp(b.0));
    groups
}

/// Largest data buffer of a result's string column (view offsets are 32 bits).
const TEXT_BLOCK: usize = 1 << 30;

/// A string column of `values` (a result table's): see [`Texts`].
fn text_array<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut texts = Texts::with_capacity(values.size_hint().0);
    values.for_each(|value| texts.push(value));
    texts.finish()
}

/// A result table's string column, built in one go: the views sized up front, the long
/// strings copied into one data buffer, and a long string that repeats the one before it (a
/// session's file, id or model on each of its calls) pointing at the bytes already there
/// instead of copying them again.
struct Texts<'a> {
    views: Vec<u128>,
    valid: arrow_buffer::NullBufferBuilder,
    blocks: Vec<Buffer>,
    data: Vec<u8>,
    /// The last long string copied, and its view.
    last: Option<(&'a str, u128)>,
    /// Whether a string was too long for a view (4 GiB or more).
    oversized: bool,
}

impl<'a> Texts<'a> {
    fn with_capacity(rows: usize) -> Texts<'a> {
        Texts {
            views: Vec::with_capacity(rows),
            valid: arrow_buffer::NullBufferBuilder::new(rows),
            blocks: Vec::new(),
            data: Vec::new(),
            last: None,
            oversized: false,
        }
    }

    #[inline]
    fn push(&mut self, value: Option<&'a str>) {
        let Some(text) = value else {
            self.views.push(0);
            self.valid.append_null();
            return;
        };
        self.valid.append_non_null();
        let bytes = text.as_bytes();
        if let Some(view) = inline_view(bytes) {
            self.views.push(view);
            return;
        }
        if let Some((before, view)) = self.last {
            if std::ptr::eq(before, text) || before == text {
                self.views.push(view);
                return;
            }
        }
        if self.data.len().saturating_add(bytes.len()) > TEXT_BLOCK && !self.data.is_empty() {
            self.blocks
                .push(Buffer::from_vec(std::mem::take(&mut self.data)));
        }
        // A block holds at most TEXT_BLOCK bytes but for a string longer than that, alone
        // in its block: all fit in 32 bits unless a string is 4 GiB or more.
        self.oversized |= u32::try_from(bytes.len()).is_err();
        let block = u32::try_from(self.blocks.len()).unwrap_or(u32::MAX);
        let offset = u32::try_from(self.data.len()).unwrap_or(u32::MAX);
        let view = long_view(bytes, block, offset);
        self.data.extend_from_slice(bytes);
        self.views.push(view);
        self.last = Some((text, view));
    }

    fn finish(self) -> ArrayRef {
        let Texts {
            views,
            mut valid,
            mut blocks,
            data,
            oversized,
            ..
        } = self;
        if !data.is_empty() {
            blocks.push(Buffer::from_vec(data));
        }
        let rows = views.len();
        let views = ScalarBuffer::from(views);
        let valid = valid.finish();
        if oversized {
            // A string Arrow cannot hold (its length is 32 bits): `try_new` turns it down.
            return match StringViewArray::try_new(views, blocks, valid) {
                Ok(array) => Arc::new(array),
                Err(_) => Arc::new(StringViewArray::new_null(rows)),
            };
        }
        debug_assert!(
            StringViewArray::try_new(views.clone(), blocks.clone(), valid.clone()).is_ok(),
            "a string view Arrow rejects"
        );
        // SAFETY: what `try_new` would check holds by construction (its check, UTF-8 of every
        // string and bounds of every view, cost a third of building the tables; a debug
        // assertion runs it): each view is of a `&str`'s bytes (UTF-8), a short one inline
        // (`inline_view`: length, bytes, zero padding), a long one (`long_view`, under 4 GiB:
        // `oversized` is false) with the index of the block its bytes were copied into and
        // their offset there, or the view of the same string copied just before; a null's
        // view is zero; the validity has one bit per view.
        Arc::new(unsafe { StringViewArray::new_unchecked(views, blocks.into(), valid) })
    }
}

/// The view of a string of at most 12 bytes, held in the view itself (Arrow's layout: the
/// length in the low 32 bits, then the bytes, zero-padded); None for a longer one.
#[inline]
fn inline_view(bytes: &[u8]) -> Option<u128> {
    let len = u32::try_from(bytes.len()).ok().filter(|&n| n <= 12)?;
    let mut view = [0u8; 16];
    view.get_mut(4..4 + bytes.len())?.copy_from_slice(bytes);
    Some(u128::from_le_bytes(view) | u128::from(len))
}

/// The view of a string of more than 12 bytes at `offset` in data buffer `block` (Arrow's
/// layout: length, first four bytes, buffer index, offset; 32 bits each, low to high).
#[inline]
fn long_view(bytes: &[u8], block: u32, offset: u32) -> u128 {
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    let prefix = bytes
        .first_chunk::<4>()
        .map_or(0, |p| u32::from_le_bytes(*p));
    u128::from(len) | u128::from(prefix) << 32 | u128::from(block) << 64 | u128::from(offset) << 96
}

/// A result table's number column: values and validity (none when no value is missing).
struct Nums<T> {
    values: Vec<T>,
    valid: arrow_buffer::NullBufferBuilder,
}

impl<T: Default> Nums<T> {
    fn with_capacity(rows: usize) -> Nums<T> {
        Nums {
            values: Vec::with_capacity(rows),
            valid: arrow_buffer::NullBufferBuilder::new(rows),
        }
    }

    #[inline]
    fn push(&mut self, value: Option<T>) {
        match value {
            Some(v) => {
                self.values.push(v);
                self.valid.append_non_null();
            }
            None => {
                self.values.push(T::default());
                self.valid.append_null();
            }
        }
    }

    fn finish(self) -> (ScalarBuffer<T>, Option<NullBuffer>)
    where
        T: ArrowNativeType,
    {
        let Nums { values, mut valid } = self;
        (ScalarBuffer::from(values), valid.finish())
    }
}

impl Nums<i64> {
    fn ints(self) -> ArrayRef {
        let (values, valid) = self.finish();
        Arc::new(Int64Array::new(values, valid))
    }

    fn times(self) -> ArrayRef {
        let (values, valid) = self.finish();
        Arc::new(TimestampMillisecondArray::new(values, valid).with_timezone("UTC"))
    }
}

impl Nums<i32> {
    fn ints(self) -> ArrayRef {
        let (values, valid) = self.finish();
        Arc::new(Int32Array::new(values, valid))
    }
}

/// Values and validity (none when no value is missing) of a column of `values`.
fn nullable<T: Default>(values: impl Iterator<Item = Option<T>>) -> Nums<T> {
    let mut nums = Nums::with_capacity(values.size_hint().0);
    values.for_each(|value| nums.push(value));
    nums
}

fn int_array(values: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    nullable(values).ints()
}

fn time_array(values: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    nullable(values).times()
}

fn bool_array(values: impl Iterator<Item = Option<bool>>) -> ArrayRef {
    Arc::new(values.collect::<BooleanArray>())
}

fn table(columns: Vec<(&'static str, ArrayRef)>, rows: usize) -> ArrowTable {
    let (names, arrays) = columns.into_iter().unzip();
    ArrowTable {
        names,
        arrays,
        rows,
    }
}

/// A list-of-strings column (null where a row has None).
fn string_lists<'a>(lists: impl Iterator<Item = Option<Vec<&'a str>>>) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for list in lists {
        match list {
            Some(items) => {
                for item in items {
                    builder.values().append_value(item);
                }
                builder.append(true);
            }
            None => builder.append(false),
        }
    }
    Arc::new(builder.finish())
}

/// The tool calls column: a list of {tool, calls} per row (null where a row has None).
fn tool_lists(lists: &[Option<&Vec<(&str, i64)>>]) -> Result<ArrayRef, ArrowError> {
    use arrow_array::{ListArray, StructArray};
    use arrow_buffer::OffsetBuffer;
    use arrow_schema::{Field, Fields};
    let mut offsets = vec![0i32];
    let (mut tools, mut counts) = (Vec::new(), Vec::new());
    for list in lists {
        for (tool, n) in list.map(|l| l.as_slice()).unwrap_or(&[]) {
            tools.push(Some(*tool));
            counts.push(Some(*n));
        }
        offsets.push(
            i32::try_from(tools.len())
                .map_err(|_| ArrowError::ComputeError("too many tool rows".into()))?,
        );
    }
    let fields = Fields::from(vec![
        Field::new("tool", DataType::Utf8View, true),
        Field::new("calls", DataType::Int64, true),
    ]);
    let values = StructArray::try_new(
        fields.clone(),
        vec![text_array(tools.into_iter()), int_array(counts.into_iter())],
        None,
    )?;
    let item = Arc::new(Field::new("item", DataType::Struct(fields), true));
    let valid = nulls(lists.iter().map(Option::is_some).collect());
    Ok(Arc::new(ListArray::try_new(
        item,
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(values),
        valid,
    )?))
}

/// Where a session's row goes in the sessions table: by start time (unknown first), then id.
fn session_rank<'a>(
    id: &'a str,
    row: &crate::agents::copilot::fold::SessionRow,
) -> (Option<i64>, &'a str) {
    (row.start_time, id)
}

/// Calls, sessions, call issues (orphan ends) and session issues (gaps, then rewinds).
type CopilotTables = (ArrowTable, ArrowTable, ArrowTable, ArrowTable);

fn copilot_tables(
    folded: &[(
        &str,
        Option<crate::agents::copilot::fold::SessionFold<'_>>,
        &str,
    )],
) -> Result<CopilotTables, ArrowError> {
    let calls: Vec<(&str, &crate::agents::copilot::fold::CallRow)> = folded
        .iter()
        .filter_map(|(id, f, _)| f.as_ref().map(|f| (*id, f)))
        .flat_map(|(id, f)| f.calls.iter().map(move |c| (id, c)))
        .collect();
    // The calls' columns in one pass over them (a column at a time would go over the list,
    // some megabytes, once per column).
    let n = calls.len();
    let mut texts: [Texts<'_>; 9] = std::array::from_fn(|_| Texts::with_capacity(n));
    let mut ints: [Nums<i64>; 6] = std::array::from_fn(|_| Nums::with_capacity(n));
    let mut process = Nums::<i32>::with_capacity(n);
    for &(id, c) in &calls {
        let [file, session, kind, model, model_source, agent_id, agent_name, parent, interaction] =
            &mut texts;
        file.push(Some(c.file));
        session.push(Some(id));
        kind.push(Some(c.kind));
        model.push(c.model);
        model_source.push(c.model_source);
        agent_id.push(c.agent_id);
        agent_name.push(c.agent_name);
        parent.push(c.parent_tool_call_id);
        interaction.push(c.interaction_id);
        let [line, seq, index, start, end, output] = &mut ints;
        line.push(Some(c.line));
        seq.push(Some(c.seq));
        index.push(Some(c.index));
        start.push(c.start_time);
        end.push(c.end_time);
        output.push(c.output_tokens);
        process.push(Some(c.process));
    }
    let [file, session, kind, model, model_source, agent_id, agent_name, parent, interaction] =
        texts.map(Texts::finish);
    let [line, seq, index, start, end, output] = ints;
    let call_table = table(
        vec![
            ("source_file", file),
            ("source_line", line.ints()),
            ("session_id", session),
            ("event_seq", seq.ints()),
            ("call_index", index.ints()),
            ("kind", kind),
            ("model", model),
            ("model_source", model_source),
            ("agent_id", agent_id),
            ("agent_name", agent_name),
            ("parent_tool_call_id", parent),
            ("interaction_id", interaction),
            ("process_index", process.ints()),
            ("start_time", start.times()),
            ("end_time", end.times()),
            (
                "interrupted",
                bool_array(calls.iter().map(|(_, c)| Some(c.interrupted))),
            ),
            (
                "user_initiated",
                bool_array(calls.iter().map(|(_, c)| Some(c.user_initiated))),
            ),
            ("output_tokens", output.ints()),
        ],
        n,
    );
    let mut rows: Vec<(&str, &crate::agents::copilot::fold::SessionRow)> = folded
        .iter()
        .filter_map(|(id, f, _)| f.as_ref().map(|f| (*id, &f.session)))
        .collect();
    rows.sort_by_key(|(id, row)| session_rank(id, row));
    let each = || rows.iter().map(|(id, s)| (*id, *s));
    let logged = |k: usize| int_array(each().map(move |(_, s)| s.logged.get(k).copied().flatten()));
    let tools: Vec<Option<&Vec<(&str, i64)>>> =
        each().map(|(_, s)| s.tool_calls.as_ref()).collect();
    let session_table = table(
        vec![
            ("session_id", text_array(each().map(|(id, _)| Some(id)))),
            (
                "source_files",
                string_lists(each().map(|(_, s)| Some(s.files.clone()))),
            ),
            ("start_time", time_array(each().map(|(_, s)| s.start_time))),
            ("end_time", time_array(each().map(|(_, s)| s.end_time))),
            ("cwd", text_array(each().map(|(_, s)| s.cwd))),
            ("repository", text_array(each().map(|(_, s)| s.repository))),
            (
                "copilot_version",
                text_array(each().map(|(_, s)| s.copilot_version)),
            ),
            (
                "models",
                string_lists(each().map(|(_, s)| s.models.clone())),
            ),
            (
                "processes",
                int_array(each().map(|(_, s)| Some(s.processes))),
            ),
            (
                "shutdowns",
                int_array(each().map(|(_, s)| Some(s.shutdowns))),
            ),
            (
                "shutdown_mode",
                text_array(each().map(|(_, s)| s.shutdown_mode)),
            ),
            (
                "llm_calls",
                int_array(each().map(|(_, s)| Some(s.llm_calls))),
            ),
            (
                "main_calls",
                int_array(each().map(|(_, s)| Some(s.main_calls))),
            ),
            (
                "subagent_calls",
                int_array(each().map(|(_, s)| Some(s.subagent_calls))),
            ),
            (
                "compaction_calls",
                int_array(each().map(|(_, s)| Some(s.compaction_calls))),
            ),
            (
                "interrupted_calls",
                int_array(each().map(|(_, s)| Some(s.interrupted_calls))),
            ),
            (
                "shutdown_requests",
                int_array(each().map(|(_, s)| s.shutdown_requests)),
            ),
            (
                "calls_checked",
                int_array(each().map(|(_, s)| s.calls_checked)),
            ),
            ("calls_delta", int_array(each().map(|(_, s)| s.calls_delta))),
            (
                "calls_agree",
                bool_array(each().map(|(_, s)| s.calls_agree)),
            ),
            (
                "calls_delta_reason",
                text_array(each().map(|(_, s)| s.calls_delta_reason.as_deref())),
            ),
            (
                "failed_calls",
                int_array(each().map(|(_, s)| Some(s.failed_calls))),
            ),
            ("rewinds", int_array(each().map(|(_, s)| Some(s.rewinds)))),
            ("byok", bool_array(each().map(|(_, s)| Some(s.byok)))),
            (
                "user_messages",
                int_array(each().map(|(_, s)| Some(s.user_messages))),
            ),
            (
                "autopilot_nudges",
                int_array(each().map(|(_, s)| Some(s.autopilot_nudges))),
            ),
            ("tool_calls", tool_lists(&tools)?),
            (
                "tool_calls_total",
                int_array(each().map(|(_, s)| Some(s.tool_calls_total))),
            ),
            (
                "wall_time_ms",
                int_array(each().map(|(_, s)| s.wall_time_ms)),
            ),
            ("api_time_ms", int_array(each().map(|(_, s)| s.api_time_ms))),
            ("status", text_array(each().map(|(_, s)| Some(s.status)))),
            (
                "status_detail",
                text_array(each().map(|(_, s)| s.status_detail.as_deref())),
            ),
            ("logged_input_tokens", logged(0)),
            ("logged_output_tokens", logged(1)),
            ("logged_cache_read_tokens", logged(2)),
            ("logged_cache_write_tokens", logged(3)),
            ("logged_reasoning_tokens", logged(4)),
            (
                "token_totals_source",
                text_array(each().map(|(_, s)| s.token_totals_source)),
            ),
            (
                "billed_nano_aiu",
                text_array(each().map(|(_, s)| s.billed_nano_aiu.as_deref())),
            ),
            (
                "premium_requests",
                text_array(each().map(|(_, s)| s.premium_requests.as_deref())),
            ),
        ],
        rows.len(),
    );
    let lost: Vec<(&str, Option<i64>, &str, String)> = folded
        .iter()
        .filter(|(_, f, _)| f.is_none())
        .map(|(id, _, file)| {
            let message = format!("internal error in the Copilot fold; session {id} skipped");
            (*file, None, "error", message)
        })
        .collect();
    let orphans: Vec<(&str, Option<i64>, &str, String)> = folded
        .iter()
        .filter_map(|(_, f, _)| f.as_ref())
        .flat_map(|f| f.orphans.iter())
        .map(|w| (w.file, Some(w.line), "warning", w.message.clone()))
        .chain(lost)
        .collect();
    let session_issues: Vec<(&str, Option<i64>, &str, String)> = folded
        .iter()
        .filter_map(|(_, f, _)| f.as_ref())
        .flat_map(|f| f.gaps.iter())
        .chain(
            folded
                .iter()
                .filter_map(|(_, f, _)| f.as_ref())
                .flat_map(|f| f.rewinds.iter()),
        )
        .map(|w| (w.file, Some(w.line), "warning", w.message.clone()))
        .collect();
    Ok((
        call_table,
        session_table,
        issue_table(&orphans),
        issue_table(&session_issues),
    ))
}

fn issue_table(rows: &[(&str, Option<i64>, &str, String)]) -> ArrowTable {
    table(
        vec![
            ("file", text_array(rows.iter().map(|r| Some(r.0)))),
            ("line", int_array(rows.iter().map(|r| r.1))),
            ("severity", text_array(rows.iter().map(|r| Some(r.2)))),
            (
                "message",
                text_array(rows.iter().map(|r| Some(r.3.as_str()))),
            ),
        ],
        rows.len(),
    )
}
