//! The Python binding: `analytics._scanner.scan_copilot(...)`, and `scan_copilot_from(...)`,
//! which goes on from where an earlier scan of each file stopped (`ScanState`).
//!
//! The event columns leave as Arrow arrays through the Arrow C data interface (the
//! `__arrow_c_array__` protocol, which `polars.Series(...)` accepts), so polars adopts the
//! buffers without a copy and without a Python object per row. Each column is exported on its
//! own: a value polars keeps from one column (a session id in a result table) then keeps that
//! column's buffers alive, not the whole batch's. Issues, per-model totals and
//! unreadable files are few and leave as Python lists. The GIL is released while scanning.
//!
//! `fold_claude_code(groups)` and `fold_codex(groups)` fold Claude Code and Codex logs (see
//! `claude.rs`, `codex.rs`): calls, sessions and issues, each an `ArrowTable`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Int32Array, Int64Array, StringViewArray,
    TimestampMillisecondArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, TimeUnit};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use arrow_array::builder::{ListBuilder, StringBuilder};
use rayon::prelude::*;

use crate::calls::{
    calls_frame, issues_frame, sessions_frame, Folded, Frame, Out, CALL_COLUMNS, SESSION_COLUMNS,
};
use crate::copilot::COPILOT;
use crate::format::Rule;
use crate::json::Shape;
use crate::scan::{Batch, Failure, FileSpec, Issue, Resume, Scanner, BLOCK};
use crate::table::{Column, IntColumn, StrColumn, Table};

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
/// columns (file index, line, severity, message); per-model totals as rows (file index,
/// line, session, process, JSON text); unreadable files (file index, errno, message).
type Scanned = (
    Vec<ArrowTable>,
    (Vec<usize>, Vec<Option<i64>>, Vec<&'static str>, Vec<String>),
    Vec<(usize, i64, String, i64, String)>,
    Vec<(usize, Option<i32>, String)>,
);

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
        totals.extend(
            batch
                .totals
                .into_iter()
                .map(|t| (t.file, t.line, t.session, t.process, t.json)),
        );
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
    Ok(((tables, issues, totals, failures), ends))
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

fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
    let buffer = NullBuffer::from(valid);
    (buffer.null_count() > 0).then_some(buffer)
}

fn strings(column: StrColumn) -> Result<ArrayRef, ArrowError> {
    let buffers: Vec<Buffer> = column
        .buffers
        .into_iter()
        .map(|mut data| {
            data.shrink_to_fit();
            Buffer::from_vec(data)
        })
        .collect();
    let array = StringViewArray::try_new(
        ScalarBuffer::from(fitted(column.views)),
        buffers,
        nulls(column.valid),
    )?;
    Ok(Arc::new(array))
}

/// A column's values without the room its growth left: the arrays live as long as polars
/// keeps the events, and the spare capacity of a doubling vector is up to as much again.
fn fitted<T>(mut values: Vec<T>) -> Vec<T> {
    values.shrink_to_fit();
    values
}

fn ints(column: IntColumn) -> ArrayRef {
    Arc::new(Int64Array::new(
        ScalarBuffer::from(fitted(column.values)),
        nulls(column.valid),
    ))
}

fn to_arrow(table: Table) -> Result<Vec<ArrayRef>, ArrowError> {
    let rows = table.rows();
    table
        .columns
        .into_iter()
        .map(|column| column_array(column, rows))
        .collect()
}

/// One column as an Arrow array of `rows` rows.
fn column_array(column: Column, rows: usize) -> Result<ArrayRef, ArrowError> {
    if column.len() < rows {
        // A column without a value in the batch (see `Table`): all null, zeroed memory
        // that is never written.
        let kind = match column {
            Column::Str(_) => DataType::Utf8View,
            Column::Int(_) => DataType::Int64,
            Column::Int32(_) => DataType::Int32,
            Column::Bool(_) => DataType::Boolean,
            Column::Time(_) => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        };
        return Ok(new_null_array(&kind, rows));
    }
    Ok(match column {
        Column::Str(c) => strings(c)?,
        Column::Int(c) => ints(c),
        Column::Int32(c) => {
            let values: Vec<i32> = c
                .values
                .iter()
                .map(|&v| i32::try_from(v).unwrap_or(i32::MAX))
                .collect();
            Arc::new(Int32Array::new(ScalarBuffer::from(values), nulls(c.valid)))
        }
        Column::Bool(c) => Arc::new(BooleanArray::new(
            BooleanBuffer::from(c.values),
            nulls(c.valid),
        )),
        Column::Time(c) => Arc::new(
            TimestampMillisecondArray::new(ScalarBuffer::from(fitted(c.values)), nulls(c.valid))
                .with_timezone("UTC"),
        ),
    })
}

/// A frame of folded calls, sessions or issues as an Arrow table.
fn frame_table(frame: Frame) -> Result<ArrowTable, ArrowError> {
    let rows = frame.rows;
    let arrays = frame
        .columns
        .into_iter()
        .map(|column| match column {
            Out::Plain(column) => column_array(column, rows),
            Out::Strings(lists) => {
                let mut builder = ListBuilder::new(StringBuilder::new());
                for list in lists {
                    for item in list {
                        builder.values().append_value(item);
                    }
                    builder.append(true);
                }
                Ok(Arc::new(builder.finish()) as ArrayRef)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ArrowTable {
        names: frame.names,
        arrays,
        rows,
    })
}

/// Calls, sessions and issues of folded groups, as Arrow tables.
type FoldedTables = (ArrowTable, ArrowTable, ArrowTable);

/// Fold each group with `fold`, groups in parallel (the GIL released). A group whose fold
/// panicked (a bug: the folds are written not to) gives an error issue per file instead.
fn fold_groups(
    py: Python<'_>,
    groups: Vec<Vec<PathBuf>>,
    agent: &'static str,
    fold: fn(&[PathBuf]) -> Folded,
) -> PyResult<FoldedTables> {
    let folded: Vec<Folded> = py.detach(|| {
        groups
            .par_iter()
            .map(|paths| {
                catch_unwind(AssertUnwindSafe(|| fold(paths))).unwrap_or_else(|_| Folded {
                    agent,
                    paths: paths
                        .iter()
                        .map(|p| p.to_string_lossy().into_owned())
                        .collect(),
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
            })
            .collect()
    });
    Ok((
        frame_table(calls_frame(&folded)).map_err(to_py)?,
        frame_table(sessions_frame(&folded)).map_err(to_py)?,
        frame_table(issues_frame(&folded)).map_err(to_py)?,
    ))
}

/// Fold Claude Code logs: each group (a project directory's session and sub-agent files) is
/// folded together, so a request copied into several of its files counts once. Returns the
/// calls, sessions and issues tables.
#[pyfunction]
fn fold_claude_code(py: Python<'_>, groups: Vec<Vec<PathBuf>>) -> PyResult<FoldedTables> {
    fold_groups(py, groups, "claude-code", crate::claude::fold)
}

/// Fold Codex CLI rollouts: each group (a home's rollouts) is folded together, so a
/// session's totals in several files count once and a fork finds its parent. Returns the
/// calls, sessions and issues tables.
#[pyfunction]
fn fold_codex(py: Python<'_>, groups: Vec<Vec<PathBuf>>) -> PyResult<FoldedTables> {
    fold_groups(py, groups, "codex", crate::codex::fold)
}

/// The column names of the folds' calls, sessions and issues tables.
#[pyfunction]
fn fold_columns() -> (Vec<&'static str>, Vec<&'static str>, Vec<&'static str>) {
    (
        CALL_COLUMNS.to_vec(),
        SESSION_COLUMNS.to_vec(),
        vec!["file", "line", "severity", "message"],
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
    py.detach(|| crate::solve::solve_systems(&sizes, &matrices, &vectors))
}

/// The module `analytics._scanner`.
#[pymodule]
fn _scanner(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<ArrowTable>()?;
    module.add_class::<ScanState>()?;
    module.add_function(wrap_pyfunction!(scan_copilot, module)?)?;
    module.add_function(wrap_pyfunction!(scan_copilot_from, module)?)?;
    module.add_function(wrap_pyfunction!(event_columns, module)?)?;
    module.add_function(wrap_pyfunction!(copilot_format, module)?)?;
    module.add_function(wrap_pyfunction!(solve_systems, module)?)?;
    module.add_function(wrap_pyfunction!(fold_claude_code, module)?)?;
    module.add_function(wrap_pyfunction!(fold_codex, module)?)?;
    module.add_function(wrap_pyfunction!(fold_columns, module)?)?;
    Ok(())
}
