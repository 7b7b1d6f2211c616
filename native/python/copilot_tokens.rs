//! The binding of the Copilot token stage (`copilot_tokens.rs`):
//! `analytics._scanner.copilot_tokens(events, calls, sessions, metrics, records,
//! use_observed)`. Each frame comes in as an Arrow stream capsule of one chunk; each session
//! is worked on its own, in parallel, with the GIL released.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use arrow_schema::ArrowError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use rayon::prelude::*;

use super::{
    bool_array, by_session, column, flag, flags, int_array, issue_table, read_frame, string_lists,
    table, text_array, to_py, ArrowTable, EventColumns, Ints, Strs, FOLD_INTS, FOLD_STRS,
};
use crate::agents::copilot::fold::{CallRow, Event, Metric, SessionRow};
use crate::agents::copilot::pass::ObservedRows;
use crate::agents::copilot::tokens::{
    session_tokens, CallTokens, Observed, Session, SessionTokens,
};
use rustc_hash::FxHashMap;

/// The EVENTS columns the fold and the token stage read (`EventColumns`), for the caller to
/// narrow the events it hands over.
#[pyfunction]
pub(super) fn copilot_token_columns() -> Vec<&'static str> {
    FOLD_STRS
        .iter()
        .chain(&FOLD_INTS)
        .chain(&["is_autopilot", "is_byok"])
        .copied()
        .collect()
}

/// The known values of a column the fold gives as a static string.
fn known(value: Option<&str>, values: &[&'static str]) -> Option<&'static str> {
    value.and_then(|v| values.iter().copied().find(|k| *k == v))
}

/// The token stage on the CALLS of a group of Copilot sessions: ordered EVENTS (narrowed to
/// the columns read), CALLS (the fold's, in session id and event order), SESSIONS (the
/// fold's), the placed MODEL_METRICS and the OBSERVED_USAGE rows beside the logs (in their
/// order). Returns `token_tables` of the sessions in id order.
#[pyfunction]
#[pyo3(signature = (events, calls, sessions, metrics, records, use_observed = true))]
pub(super) fn copilot_tokens(
    py: Python<'_>,
    events: Bound<'_, PyCapsule>,
    calls: Bound<'_, PyCapsule>,
    sessions: Bound<'_, PyCapsule>,
    metrics: Bound<'_, PyCapsule>,
    records: Bound<'_, PyCapsule>,
    use_observed: bool,
) -> PyResult<(ArrowTable, ArrowTable, ArrowTable)> {
    let frames = [
        read_frame(&events)?,
        read_frame(&calls)?,
        read_frame(&sessions)?,
        read_frame(&metrics)?,
        read_frame(&records)?,
    ];
    py.detach(|| {
        let [events, calls, sessions, metrics, records] = &frames;
        fn grouped(b: &arrow_array::RecordBatch) -> FxHashMap<&str, Vec<usize>> {
            by_session(&Strs::of(column(b, "session_id")), b.num_rows())
                .into_iter()
                .collect()
        }
        let (event_rows, call_rows) = (grouped(events), grouped(calls));
        let columns = EventColumns::of(events);
        let call_row = call_reader(calls);
        let observed = observed_by_session(records);
        let metric_ids = Strs::of(column(metrics, "session_id"));
        let mut placed: FxHashMap<&str, Vec<Metric>> = FxHashMap::default();
        for (i, metric) in metric_list(metrics).into_iter().enumerate() {
            placed
                .entry(metric_ids.get(i).unwrap_or(""))
                .or_default()
                .push(metric);
        }
        let ids = Strs::of(column(sessions, "session_id"));
        let row_of: FxHashMap<&str, usize> = (0..sessions.num_rows())
            .map(|s| (ids.get(s).unwrap_or(""), s))
            .collect();
        let mut every: Vec<&str> = row_of.keys().chain(call_rows.keys()).copied().collect();
        every.sort_unstable();
        every.dedup();
        let (mode, requests, llm) = (
            Strs::of(column(sessions, "shutdown_mode")),
            Ints::of(column(sessions, "shutdown_requests")),
            Ints::of(column(sessions, "llm_calls")),
        );
        let source = Strs::of(column(sessions, "token_totals_source"));
        let byok = flags(column(sessions, "byok"));
        let none = Vec::new();
        let worked: Vec<(Vec<CallRow>, Option<SessionTokens>)> = every
            .par_iter()
            .map(|&id| {
                let rows = |g: &FxHashMap<&str, Vec<usize>>| g.get(id).unwrap_or(&none).clone();
                let list: Vec<Event> = rows(&event_rows)
                    .into_iter()
                    .map(|i| columns.event(i))
                    .collect();
                let call_list: Vec<CallRow> = rows(&call_rows).into_iter().map(&call_row).collect();
                let row = row_of
                    .get(id)
                    .map_or_else(SessionRow::default, |&s| SessionRow {
                        shutdown_mode: known(mode.get(s), &["cumulative", "per_process"]),
                        shutdown_requests: requests.get(s),
                        token_totals_source: known(
                            source.get(s),
                            &["shutdown", "shutdown+messages", "usage_records", "messages"],
                        ),
                        llm_calls: llm.get(s).unwrap_or(0),
                        byok: flag(byok, s).unwrap_or(false),
                        ..SessionRow::default()
                    });
                let session = Session {
                    id,
                    events: &list,
                    calls: &call_list,
                    row: &row,
                    metrics: placed.get(id).map_or(&[][..], Vec::as_slice),
                    observed: observed.get(id).map_or(&[][..], Vec::as_slice),
                };
                let out = catch_unwind(AssertUnwindSafe(|| session_tokens(&session, use_observed)));
                (call_list, out.ok())
            })
            .collect();
        let parts: Vec<Part> = every
            .iter()
            .zip(&worked)
            .map(|(&id, (calls, tokens))| Part {
                id,
                calls,
                tokens: tokens.as_ref(),
            })
            .collect();
        let order: Vec<usize> = (0..parts.len()).collect();
        token_tables(&parts, &order).map_err(to_py)
    })
}

/// One session's part of the token tables: its calls (as the fold gave them) and what the
/// stage gave (None: it failed on the session).
pub(super) struct Part<'p, 'a> {
    pub id: &'a str,
    pub calls: &'p [CallRow<'a>],
    pub tokens: Option<&'p SessionTokens<'a>>,
}

/// The OBSERVED_USAGE rows of a frame by session, each session's in the frame's order.
pub(super) fn observed_by_session(records: &arrow_array::RecordBatch) -> ObservedRows<'_> {
    let ids = Strs::of(column(records, "session_id"));
    let row = observed_reader(records);
    let mut out = ObservedRows::default();
    for i in 0..records.num_rows() {
        out.entry(ids.get(i).unwrap_or(""))
            .or_default()
            .push(row(i));
    }
    out
}

/// A CALLS row of the frame, as the fold gave it.
fn call_reader<'a>(
    calls: &'a arrow_array::RecordBatch,
) -> impl Fn(usize) -> CallRow<'a> + Sync + 'a {
    let s = |name| Strs::of(column(calls, name));
    let n = |name| Ints::of(column(calls, name));
    let (file, kind, model, source) = (s("source_file"), s("kind"), s("model"), s("model_source"));
    let (agent_id, agent_name, parent) = (s("agent_id"), s("agent_name"), s("parent_tool_call_id"));
    let interaction = s("interaction_id");
    let (line, seq, index, process) = (
        n("source_line"),
        n("event_seq"),
        n("call_index"),
        n("process_index"),
    );
    let (start, end, output) = (n("start_time"), n("end_time"), n("output_tokens"));
    let (interrupted, prompted) = (
        flags(column(calls, "interrupted")),
        flags(column(calls, "user_initiated")),
    );
    move |i| CallRow {
        file: file.get(i).unwrap_or(""),
        line: line.get(i).unwrap_or(0),
        seq: seq.get(i).unwrap_or(0),
        index: index.get(i).unwrap_or(0),
        kind: known(kind.get(i), &["main", "subagent", "compaction"]).unwrap_or("main"),
        model: model.get(i),
        model_source: known(source.get(i), &["log", "session", "shutdown", "counts"]),
        agent_id: agent_id.get(i),
        agent_name: agent_name.get(i),
        parent_tool_call_id: parent.get(i),
        interaction_id: interaction.get(i),
        process: process
            .get(i)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(0),
        start_time: start.get(i),
        end_time: end.get(i),
        interrupted: flag(interrupted, i).unwrap_or(false),
        user_initiated: flag(prompted, i).unwrap_or(false),
        output_tokens: output.get(i),
    }
}

/// An OBSERVED_USAGE row of the frame.
fn observed_reader<'a>(
    records: &'a arrow_array::RecordBatch,
) -> impl Fn(usize) -> Observed<'a> + Sync + 'a {
    let (file, agent, nano) = (
        Strs::of(column(records, "source_file")),
        Strs::of(column(records, "agent_id")),
        Strs::of(column(records, "total_nano_aiu")),
    );
    let tokens = [
        "input_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "output_tokens",
    ]
    .map(|name| Ints::of(column(records, name)));
    move |i| Observed {
        file: file.get(i).unwrap_or(""),
        agent_id: agent.get(i),
        tokens: [0, 1, 2, 3, 4].map(|k| tokens.get(k).and_then(|c| c.get(i))),
        nano_aiu: nano.get(i),
    }
}

/// The stage's tables for `parts`: the columns it sets of the calls (aligned with the
/// parts' calls, one after the other), the sessions' (`session_id`, their token sums, models
/// and fit; a row per part, parts in `order`: positions in `parts`), and the issues. A
/// session the stage failed on keeps its calls' own model and output, gets no other figure,
/// and is named in an error.
pub(super) fn token_tables(
    parts: &[Part<'_, '_>],
    order: &[usize],
) -> Result<(ArrowTable, ArrowTable, ArrowTable), ArrowError> {
    // The calls' figures are read where they are, part after part (a group's calls copied
    // into one list would be a buffer of megabytes, faulted in afresh for every group); a
    // failed part's calls keep their own model and output.
    let mut kept: Vec<Vec<CallTokens>> = Vec::with_capacity(parts.len());
    let mut issues: Vec<(&str, Option<i64>, &str, String)> = Vec::new();
    for part in parts {
        match part.tokens {
            Some(out) => {
                kept.push(Vec::new());
                issues.extend(
                    out.warnings
                        .iter()
                        .map(|w| (w.file, w.line, "warning", w.message.clone())),
                );
            }
            None => {
                kept.push(
                    part.calls
                        .iter()
                        .map(|c| CallTokens {
                            model: c.model,
                            model_source: c.model_source,
                            tokens: [None, None, None, None, c.output_tokens],
                            ..CallTokens::default()
                        })
                        .collect(),
                );
                let file = part.calls.first().map_or("", |c| c.file);
                let message = format!(
                    "internal error in the Copilot token stage; session {} left without tokens",
                    part.id
                );
                issues.push((file, None, "error", message));
            }
        }
    }
    let each = || {
        parts
            .iter()
            .zip(&kept)
            .flat_map(|(part, kept)| part.tokens.map_or(&kept[..], |t| &t.calls[..]))
    };
    let count = parts
        .iter()
        .zip(&kept)
        .map(|(part, kept)| part.tokens.map_or(kept.len(), |t| t.calls.len()))
        .sum();
    let token = |k: usize| int_array(each().map(move |c| c.tokens.get(k).copied().flatten()));
    let call_table = table(
        vec![
            ("model", text_array(each().map(|c| c.model))),
            ("model_source", text_array(each().map(|c| c.model_source))),
            ("output_tokens", token(4)),
            ("input_tokens", token(0)),
            ("cache_read_tokens", token(1)),
            ("cache_write_tokens", token(2)),
            ("reasoning_tokens", token(3)),
            ("token_source", text_array(each().map(|c| c.token_source))),
            (
                "estimate_reason",
                text_array(each().map(|c| c.estimate_reason.as_deref())),
            ),
            (
                "billed_nano_aiu",
                text_array(each().map(|c| c.billed_nano_aiu)),
            ),
            ("is_byok", bool_array(each().map(|c| c.is_byok))),
            (
                "fixed_part_tokens",
                int_array(each().map(|c| c.fixed_part_tokens)),
            ),
            ("input_tokens_low", int_array(each().map(|c| c.input_low))),
            ("input_tokens_high", int_array(each().map(|c| c.input_high))),
        ],
        count,
    );
    let ordered: Vec<&Part> = order.iter().filter_map(|&i| parts.get(i)).collect();
    let each = || ordered.iter().map(|p| p.tokens);
    let total = |k: usize| {
        int_array(each().map(move |o| o.and_then(|o| o.totals.get(k).copied().flatten())))
    };
    let fit = || each().map(|o| o.and_then(|o| o.fit.as_ref()));
    let names = |determined: bool| {
        string_lists(fit().map(|f| {
            f.map(|f| {
                f.parameters
                    .iter()
                    .filter(|p| p.2 == determined)
                    .map(|p| p.0.as_str())
                    .collect()
            })
        }))
    };
    let session_table = table(
        vec![
            ("session_id", text_array(ordered.iter().map(|p| Some(p.id)))),
            ("input_tokens", total(0)),
            ("output_tokens", total(1)),
            ("cache_read_tokens", total(2)),
            ("cache_write_tokens", total(3)),
            ("reasoning_tokens", total(4)),
            (
                "models",
                string_lists(each().map(|o| o.and_then(|o| o.models.clone()))),
            ),
            (
                "fit_constraints",
                int_array(fit().map(|f| f.map(|f| f.constraints))),
            ),
            (
                "fit_residual_pct",
                Arc::new(
                    fit()
                        .map(|f| f.and_then(|f| f.residual_pct))
                        .collect::<Float64Array>(),
                ),
            ),
            ("fit_determined", names(true)),
            ("fit_from_prior", names(false)),
            (
                "fit_parameters",
                parameter_lists(&fit().collect::<Vec<_>>())?,
            ),
        ],
        ordered.len(),
    );
    Ok((call_table, session_table, issue_table(&issues)))
}

/// The fit_parameters column: a list of {name, value} per session (null without a fit).
fn parameter_lists(
    fits: &[Option<&crate::agents::copilot::tokens::SessionFit>],
) -> Result<ArrayRef, ArrowError> {
    use arrow_array::builder::{Float64Builder, ListBuilder, StringViewBuilder, StructBuilder};
    use arrow_schema::{DataType, Field, Fields};
    let fields = Fields::from(vec![
        Field::new("name", DataType::Utf8View, true),
        Field::new("value", DataType::Float64, true),
    ]);
    let parts: Vec<Box<dyn arrow_array::builder::ArrayBuilder>> = vec![
        Box::new(StringViewBuilder::new()),
        Box::new(Float64Builder::new()),
    ];
    let mut lists = ListBuilder::new(StructBuilder::new(fields, parts));
    for fit in fits {
        let entry = lists.values();
        for (name, value, _) in fit.map(|f| f.parameters.as_slice()).unwrap_or(&[]) {
            let missing = || ArrowError::ComputeError("a parameter column is missing".into());
            entry
                .field_builder::<StringViewBuilder>(0)
                .ok_or_else(missing)?
                .append_value(name);
            entry
                .field_builder::<Float64Builder>(1)
                .ok_or_else(missing)?
                .append_value(*value);
            entry.append(true);
        }
        lists.append(fit.is_some());
    }
    Ok(Arc::new(lists.finish()))
}

/// The shutdowns' per-model totals, by file and line (MODEL_METRICS columns).
pub(super) fn metric_list(batch: &RecordBatch) -> Vec<Metric<'_>> {
    let s = |name: &str| Strs::of(column(batch, name));
    let n = |name: &str| Ints::of(column(batch, name));
    let (file, model) = (s("source_file"), s("model"));
    let (line, requests) = (n("source_line"), n("requests_count"));
    let tokens = [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
    ]
    .map(n);
    (0..batch.num_rows())
        .map(|i| Metric {
            file: file.get(i).unwrap_or(""),
            line: line.get(i).unwrap_or(0),
            model: model.get(i),
            requests: requests.get(i),
            tokens: tokens.each_ref().map(|c| c.get(i)),
        })
        .collect()
}
