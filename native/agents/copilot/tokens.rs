//! The Copilot token stage: one session's calls (the fold's rows) get their tokens from the
//! best source available for each, and the session its sums and its fit.
//!
//! 1. `observed`: a per-call record. In the log itself: the figures on the call's own line
//!    (`assistant.usage` in SDK captures, `compactionTokensUsed`), the n-th compaction usage
//!    record for the n-th compaction call, and a main turn's first usage record; beside it:
//!    session-store rows and OpenTelemetry spans (`Observed`), matched in order, main calls
//!    to rows without an agent id and sub-agent calls to rows with one.
//! 2. `calibrated`: reconstructed with the agent-loop growth model (`fit.rs`) and apportioned
//!    to the shutdown's per-model totals (`calibrate.rs`) where the calls counted are its
//!    requests;
//! 3. `estimated`: the same where no total, or no total that the calls match, covers the call.
//!
//! Before that, calls whose model is a guess take the models the shutdown's per-model request
//! counts imply (`assign_models`). Out come each call's CALL_TOKENS figures, its model as it
//! now stands, the session's token sums, models and fit, and the warnings. Token arithmetic is
//! integer; the reconstruction's floats only weigh the shares. The polars stages this replaces
//! are the oracle in `tests/oracle/reference/tokens.py`, and the differential test holds the two
//! equal.
//!
//! Pure safe Rust on borrowed strings: nothing here panics on any input (indexing is checked,
//! arithmetic saturates where the input decides it).
#![forbid(unsafe_code)]

use crate::agents::copilot::calibrate::{calibrate, Row};
use crate::agents::copilot::fit::{
    fit_calls, regressors, CallIn, Facts, Item, Part, Prior, Regressors, XRow,
};
use crate::agents::copilot::fold::{CallRow, Event, Metric, SessionRow};
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::{Duration, Instant};

/// Per-call usage records in the log: `assistant.usage` (SDK captures) and
/// `session.usage_record` (on disk).
pub const USAGE_RECORDS: [&str; 2] = ["assistant.usage", "session.usage_record"];
const COMPACTING: &str = "conversation-compaction";
/// The priors of the content kinds' unknowns (`fit::RATES` order): mean and standard
/// deviation, in tokens per byte (per item for `item`, tokens for `task`). Code and command
/// output tokenize at about 2.5-3 bytes per token and English prose at about 4 (schema doc
/// §0b.9); JSON arguments fall between; a sub-agent's task prompt is the part of its first
/// prompt the log holds only inside the parent's tool request.
pub const RATE_PRIORS: [(f64, f64); 5] = [
    (0.36, 0.12),
    (0.25, 0.08),
    (0.30, 0.10),
    (8.0, 8.0),
    (800.0, 800.0),
];
/// The main agent's fixed part without a system message: the middle of the 8k-40k seen in
/// real logs.
pub const MAIN_FIXED_PRIOR: (f64, f64) = (20_000.0, 12_000.0);
/// Tool definitions, in tokens (the middle of the values real 1.0.49-1.0.91 logs state),
/// added to the system message's text at 4 bytes a token.
pub const TOOL_DEFINITIONS_PRIOR: i64 = 11_000;
pub const SYSTEM_FIXED_SD: f64 = 6_000.0;
/// A sub-agent's fixed part (its own, smaller prompt and tools: 5k-26k in real logs).
pub const SUB_FIXED_PRIOR: (f64, f64) = (12_000.0, 10_000.0);
/// Bytes of UTF-8 text per token where the log gives text but no count.
pub const BYTES_PER_TOKEN: i64 = 4;
/// The two-sided 80% quantile of the normal distribution.
pub const Z80: f64 = 1.2816;
/// Relative per-call error of the content-to-tokens model with the unknowns known
/// (measured on the real Claude Code corpus).
pub const MODEL_SD: f64 = 0.10;
/// What Copilot's built-in sub-agents run on when the user picks nothing (a model id
/// prefix); any other kind defaults to the main agent's model.
pub const DEFAULT_FAMILIES: [(&str, &str); 2] =
    [("explore", "claude-haiku"), ("task", "claude-haiku")];
/// Assignments tried at most per segment (models ^ units); beyond it, the calls stay unknown.
pub const MAX_ASSIGNMENTS: usize = 100_000;

/// One per-call row kept beside the log (session store, OTel), in its source's order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Observed<'a> {
    pub file: &'a str,
    pub agent_id: Option<&'a str>,
    /// input, cache read, cache write, reasoning, output.
    pub tokens: [Option<i64>; 5],
    pub nano_aiu: Option<&'a str>,
}

/// One call's figures after the stage (CALL_TOKENS, and the CALLS columns it changes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallTokens<'a> {
    pub model: Option<&'a str>,
    pub model_source: Option<&'static str>,
    /// input, cache read, cache write, reasoning, output.
    pub tokens: [Option<i64>; 5],
    pub token_source: Option<&'static str>,
    pub estimate_reason: Option<String>,
    pub billed_nano_aiu: Option<&'a str>,
    pub is_byok: Option<bool>,
    pub fixed_part_tokens: Option<i64>,
    pub input_low: Option<i64>,
    pub input_high: Option<i64>,
}

/// A session's fit figures (the SESSIONS `fit_*` columns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionFit {
    pub constraints: i64,
    pub residual_pct: Option<f64>,
    /// (unknown, value, determined by the log), by name.
    pub parameters: Vec<(String, f64, bool)>,
}

/// A warning of the stage: file, line (None: about the session), message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning<'a> {
    pub file: &'a str,
    pub line: Option<i64>,
    pub message: String,
}

/// What the stage gives for one session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionTokens<'a> {
    /// Aligned with the calls given.
    pub calls: Vec<CallTokens<'a>>,
    /// input, output, cache read, cache write, reasoning (the SESSIONS order): its calls'
    /// sums, 0 without LLM calls, None where no call has a figure.
    pub totals: [Option<i64>; 5],
    /// Its calls' models, most calls first (ties by name); None without a model.
    pub models: Option<Vec<&'a str>>,
    /// None without calls.
    pub fit: Option<SessionFit>,
    pub warnings: Vec<Warning<'a>>,
}

/// One session's input: its events (by `seq`), the fold's calls and row, its shutdowns'
/// per-model totals, and the per-call rows beside its log.
#[derive(Clone, Copy, Debug)]
pub struct Session<'s, 'a> {
    pub id: &'a str,
    pub events: &'s [Event<'a>],
    pub calls: &'s [CallRow<'a>],
    pub row: &'s SessionRow<'a>,
    pub metrics: &'s [Metric<'a>],
    pub observed: &'s [Observed<'a>],
}

/// What the steps read of a session: its calls in event order, its events, the event at
/// each line, the main calls' `seq`s (in order) and each call's position by `seq`.
struct View<'s, 'a> {
    calls: Vec<&'s CallRow<'a>>,
    events: &'s [Event<'a>],
    at_line: FxHashMap<(&'a str, i64), &'s Event<'a>>,
    main_seqs: Vec<i64>,
    position: FxHashMap<i64, usize>,
}

impl<'a> View<'_, 'a> {
    /// Tokens the log holds per call: its own line's figures, compaction usage records, and a
    /// main turn's first usage record.
    fn observed_in_log(&self, work: &mut [Work<'a>]) {
        for (c, w) in self.calls.iter().zip(work.iter_mut()) {
            let Some(e) = self.at_line.get(&(c.file, c.line)) else {
                continue;
            };
            let own = usage(e);
            if own.iter().take(4).any(Option::is_some) || e.nano_aiu.is_some() {
                for (slot, value) in w.tokens.iter_mut().zip(own).take(4) {
                    *slot = value;
                }
                w.nano = e.nano_aiu;
            }
        }
        let records = || {
            self.events
                .iter()
                .filter(|e| USAGE_RECORDS.contains(&e.kind))
        };
        // The n-th compaction record of a session for its n-th compaction call, before the
        // figures of its own line.
        let mut compaction_records = records().filter(|e| e.interaction_type == Some(COMPACTING));
        for (c, w) in self.calls.iter().zip(work.iter_mut()) {
            if c.kind != "compaction" {
                continue;
            }
            let Some(r) = compaction_records.next() else {
                break;
            };
            for (slot, value) in w.tokens.iter_mut().zip(usage(r)) {
                *slot = value.or(*slot);
            }
            w.nano = r.nano_aiu.or(w.nano);
        }
        // A main turn's first usage record.
        let mut taken: FxHashSet<i64> = FxHashSet::default();
        for r in records().filter(|e| e.main() && e.interaction_type != Some(COMPACTING)) {
            let Some(seq) = owner(&self.main_seqs, r.seq) else {
                continue;
            };
            if !taken.insert(seq) {
                continue;
            }
            let Some(w) = self.position.get(&seq).and_then(|&i| work.get_mut(i)) else {
                continue;
            };
            // (its output is the fold's already)
            for (slot, value) in w.tokens.iter_mut().zip(usage(r)).take(4) {
                *slot = slot.or(value);
            }
            w.nano = w.nano.or(r.nano_aiu);
        }
        for w in work.iter_mut() {
            w.source = w.tokens[0].map(|_| "observed");
        }
    }

    /// Per call, the bytes of text the model wrote (a main turn's messages, or a sub-agent
    /// call's own): the weight for splitting a shutdown's output total over the calls whose
    /// output the log does not state.
    fn reply_bytes(&self, work: &mut [Work<'a>]) {
        let mut turns: FxHashMap<usize, i64> = FxHashMap::default();
        for m in self
            .events
            .iter()
            .filter(|e| e.kind == "assistant.message" && e.main())
        {
            let Some(i) = owner(&self.main_seqs, m.seq).and_then(|seq| self.position.get(&seq))
            else {
                continue;
            };
            let sum = turns.entry(*i).or_insert(0);
            *sum = sum.saturating_add(m.content_bytes.unwrap_or(0));
        }
        for (i, (c, w)) in self.calls.iter().zip(work.iter_mut()).enumerate() {
            let own = self
                .at_line
                .get(&(c.file, c.line))
                .filter(|e| e.kind == "assistant.message")
                .and_then(|e| e.content_bytes);
            w.reply_bytes = turns.get(&i).copied().or(own).unwrap_or(0);
        }
    }

    /// `is_byok` per call: its own usage record's flag, else (a main call) whether any main
    /// usage record of its turn says so, else its session's.
    fn byok(&self, session_byok: bool) -> Vec<Option<bool>> {
        let flagged = |e: &Event<'_>| e.kind == "session.usage_record" && e.is_byok.is_some();
        let mut turns: FxHashMap<usize, bool> = FxHashMap::default();
        for r in self.events.iter().filter(|e| flagged(e) && e.main()) {
            if let Some(&i) = owner(&self.main_seqs, r.seq).and_then(|s| self.position.get(&s)) {
                let any = turns.entry(i).or_insert(false);
                *any |= r.is_byok.unwrap_or(false);
            }
        }
        self.calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let own = self
                    .at_line
                    .get(&(c.file, c.line))
                    .filter(|e| flagged(e))
                    .and_then(|e| e.is_byok);
                own.or(turns.get(&i).copied()).or(Some(session_byok))
            })
            .collect()
    }
}

/// A call while the stage works on it.
#[derive(Clone, Debug, Default)]
struct Work<'a> {
    model: Option<&'a str>,
    model_source: Option<&'static str>,
    /// input, cache read, cache write, reasoning, output.
    tokens: [Option<i64>; 5],
    nano: Option<&'a str>,
    source: Option<&'static str>,
    reply_bytes: i64,
    segment: i64,
    covered: bool,
}

/// One shutdown total: the (segment, model) it covers, its line, its figures.
#[derive(Clone, Copy, Debug)]
struct Total<'a> {
    segment: i64,
    model: Option<&'a str>,
    file: &'a str,
    line: i64,
    /// input, cache read, cache write, reasoning, output.
    tokens: [Option<i64>; 5],
    requests: Option<i64>,
}

fn llm(call: &CallRow<'_>) -> bool {
    call.kind != "compaction"
}

fn add(sum: Option<i64>, value: Option<i64>) -> Option<i64> {
    match (sum, value) {
        (Some(s), Some(v)) => Some(s.saturating_add(v)),
        (s, v) => s.or(v),
    }
}

/// The stage for one session (`use_observed` false: every per-call record ignored and every
/// call reconstructed, what `agentcost validate` measures the reconstruction with).
pub fn session_tokens<'a>(session: &Session<'_, 'a>, use_observed: bool) -> SessionTokens<'a> {
    session_tokens_timed(session, use_observed).0
}

/// [`session_tokens`], and the time its fit (the reconstruction) and calibration took of it,
/// for the pass's profile of its stages (`copilot_pass::Spent`).
pub fn session_tokens_timed<'a>(
    session: &Session<'_, 'a>,
    use_observed: bool,
) -> (SessionTokens<'a>, Duration) {
    let events = session.events;
    // The calls in event order (the fold gives them so; sorted again for any caller).
    let mut order: Vec<usize> = (0..session.calls.len()).collect();
    order.sort_by_key(|&i| session.calls.get(i).map_or(0, |c| c.seq));
    let calls: Vec<&CallRow<'a>> = order.iter().filter_map(|&i| session.calls.get(i)).collect();
    let named = calls
        .iter()
        .map(|c| (c.file, c.line))
        .chain(session.metrics.iter().map(|m| (m.file, m.line)));
    let at_line = first_at_lines(events, named);
    let mut work: Vec<Work<'a>> = calls
        .iter()
        .map(|c| Work {
            model: c.model,
            model_source: c.model_source,
            tokens: [None, None, None, None, c.output_tokens],
            ..Work::default()
        })
        .collect();
    let mut warnings = Vec::new();
    let main_seqs: Vec<i64> = calls
        .iter()
        .filter(|c| c.kind == "main")
        .map(|c| c.seq)
        .collect();
    let position: FxHashMap<i64, usize> =
        calls.iter().enumerate().map(|(i, c)| (c.seq, i)).collect();
    let view = View {
        calls,
        events,
        at_line,
        main_seqs,
        position,
    };
    if use_observed {
        view.observed_in_log(&mut work);
        warnings.extend(observed_beside_log(session, &view.calls, &mut work));
    }
    view.reply_bytes(&mut work);
    let View { calls, at_line, .. } = &view;
    let totals = segments(session, calls, &mut work, at_line);
    warnings.extend(assign_models(session.id, calls, &mut work, &totals));
    let keyed = keyed(calls, &work, &totals);
    let fitting = Instant::now();
    let (estimates, fit) = reconstruct(session, calls, &work, &keyed);
    let mut fit_time = fitting.elapsed();
    let rows: Vec<Row<'_>> = calls
        .iter()
        .zip(&work)
        .zip(&keyed)
        .zip(&estimates)
        .map(|(((c, w), k), e)| Row {
            session: session.id,
            seq: c.seq,
            segment: Some(w.segment),
            model: w.model,
            observed: w.source.is_some(),
            apportion: k.apportion,
            sum_ok: k.sum_ok,
            estimate: e.estimate,
            previous_prefix: e.previous_prefix,
            left: k.left,
            total_output: k.total.and_then(|t| t.tokens[4]),
            reply_bytes: w.reply_bytes,
            tokens: w.tokens,
        })
        .collect();
    let calibrating = Instant::now();
    let calibrated = calibrate(&rows);
    fit_time = fit_time.saturating_add(calibrating.elapsed());
    let byok = view.byok(session.row.byok);
    // the shutdown's token totals were taken (its request total may still be unknown)
    let has_totals = matches!(
        session.row.token_totals_source,
        Some("shutdown" | "shutdown+messages")
    );
    let mut out: Vec<CallTokens<'a>> = calls
        .iter()
        .zip(&work)
        .zip(&keyed)
        .zip(&estimates)
        .zip(calibrated)
        .zip(byok)
        .map(|(((((c, w), k), e), cal), is_byok)| {
            let source = cal.source.or(w.source);
            let input = cal.tokens[0];
            let estimated = source == Some("estimated");
            let (input_low, input_high) = if estimated {
                bounds(e.estimate, e.sd, input)
            } else {
                (None, None)
            };
            CallTokens {
                model: w.model,
                model_source: w.model_source,
                tokens: cal.tokens,
                token_source: source,
                estimate_reason: estimated
                    .then(|| estimate_reason(c, w, k, has_totals))
                    .flatten(),
                billed_nano_aiu: w.nano,
                is_byok,
                fixed_part_tokens: match (e.fixed, input) {
                    (Some(f), Some(i)) => Some(f.min(i)),
                    (f, i) => f.or(i),
                },
                input_low,
                input_high,
            }
        })
        .collect();
    // Back to the order the calls came in.
    let mut aligned = vec![CallTokens::default(); out.len()];
    for (&i, figures) in order.iter().zip(out.drain(..)) {
        if let Some(slot) = aligned.get_mut(i) {
            *slot = figures;
        }
    }
    let tokens = SessionTokens {
        totals: call_totals(session.row, &aligned),
        models: models_by_calls(&aligned),
        calls: aligned,
        fit,
        warnings,
    };
    (tokens, fit_time)
}

/// The first event at each (file, line) of `named` (the lines of the calls and of the
/// shutdowns' totals: all the stage looks up by line). An event's line number alone rules
/// most events out before their file name is hashed.
fn first_at_lines<'s, 'a>(
    events: &'s [Event<'a>],
    named: impl Iterator<Item = (&'a str, i64)>,
) -> FxHashMap<(&'a str, i64), &'s Event<'a>> {
    let named: FxHashSet<(&'a str, i64)> = named.collect();
    let lines: FxHashSet<i64> = named.iter().map(|&(_, line)| line).collect();
    let mut at_line = FxHashMap::with_capacity_and_hasher(named.len(), Default::default());
    for event in events.iter().filter(|e| lines.contains(&e.line)) {
        let key = (event.file, event.line);
        if named.contains(&key) {
            at_line.entry(key).or_insert(event);
        }
    }
    at_line
}

/// The owning main call of an event at `seq`: the last main call at or before it.
fn owner(main_seqs: &[i64], seq: i64) -> Option<i64> {
    let at = main_seqs.partition_point(|&s| s <= seq);
    at.checked_sub(1).and_then(|i| main_seqs.get(i)).copied()
}

/// An event's usage figures: input, cache read, cache write, reasoning, output.
fn usage(e: &Event<'_>) -> [Option<i64>; 5] {
    [
        e.input_tokens,
        e.cache_read_tokens,
        e.cache_write_tokens,
        e.reasoning_tokens,
        e.output_tokens,
    ]
}

/// Match the per-call rows beside the log to the calls without a figure, in order; warn of a
/// count that differs and of a row that disagrees with the log's own record.
fn observed_beside_log<'a>(
    session: &Session<'_, 'a>,
    calls: &[&CallRow<'a>],
    work: &mut [Work<'a>],
) -> Vec<Warning<'a>> {
    let mut warnings = Vec::new();
    let Some(source) = session.observed.first().map(|o| o.file) else {
        return warnings;
    };
    // Numbered among the session's main or sub-agent rows of every source, then only the
    // first source's kept.
    let mut counters = [0usize; 2];
    let mut picked: FxHashMap<(bool, usize), &Observed<'a>> = FxHashMap::default();
    let mut rows = 0i64;
    for o in session.observed {
        let sub = o.agent_id.is_some();
        let counter = &mut counters[usize::from(sub)];
        let nth = *counter;
        *counter += 1;
        if o.file == source {
            picked.insert((sub, nth), o);
            rows += 1;
        }
    }
    let mut numbers = [0usize; 2];
    let mut counted = 0i64;
    for (c, w) in calls.iter().zip(work.iter_mut()) {
        if !llm(c) {
            continue;
        }
        counted += 1;
        let sub = c.kind == "subagent";
        let number = &mut numbers[usize::from(sub)];
        let nth = *number;
        *number += 1;
        let Some(o) = picked.get(&(sub, nth)) else {
            continue;
        };
        let differs =
            (0..4).any(|k| matches!((w.tokens[k], o.tokens[k]), (Some(a), Some(b)) if a != b));
        if w.source == Some("observed") && differs {
            let text = |v: Option<i64>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
            warnings.push(Warning {
                file: c.file,
                line: Some(c.line),
                message: format!(
                    "the log's usage record and the per-call row beside the log disagree on \
                     this call (input {} vs {}, cache read {} vs {}, cache write {} vs {}); the \
                     log's is used",
                    text(w.tokens[0]),
                    text(o.tokens[0]),
                    text(w.tokens[1]),
                    text(o.tokens[1]),
                    text(w.tokens[2]),
                    text(o.tokens[2]),
                ),
            });
        }
        if w.source.is_none() && o.tokens[0].is_some() {
            w.tokens = o.tokens;
            w.nano = o.nano_aiu;
            w.source = Some("observed");
        }
    }
    if counted > 0 && rows > 0 && counted != rows {
        warnings.push(Warning {
            file: source,
            line: None,
            message: format!(
                "session {}: {rows} per-call usage rows for {counted} counted calls; matched in \
                 order",
                session.id
            ),
        });
    }
    warnings
}

/// Which shutdown total covers each call (the session's last, when its shutdowns are
/// cumulative, else its process's), and the totals: per segment, the last shutdown's
/// per-model figures.
fn segments<'a>(
    session: &Session<'_, 'a>,
    calls: &[&CallRow<'a>],
    work: &mut [Work<'a>],
    at_line: &FxHashMap<(&str, i64), &Event<'a>>,
) -> Vec<Total<'a>> {
    let cumulative = session.row.shutdown_mode == Some("cumulative");
    let mut last_shutdown: FxHashMap<i32, i64> = FxHashMap::default();
    for e in session
        .events
        .iter()
        .filter(|e| e.kind == "session.shutdown")
    {
        let seq = last_shutdown.entry(e.process).or_insert(e.seq);
        *seq = (*seq).max(e.seq);
    }
    let last = last_shutdown.values().copied().max();
    for (c, w) in calls.iter().zip(work.iter_mut()) {
        w.segment = if cumulative { 0 } else { i64::from(c.process) };
        let end = if cumulative {
            last
        } else {
            last_shutdown.get(&c.process).copied()
        };
        w.covered = llm(c) && end.is_some_and(|end| c.seq < end);
    }
    let placed: Vec<(i64, i64, &Metric<'a>)> = session
        .metrics
        .iter()
        .filter_map(|m| {
            let e = at_line.get(&(m.file, m.line))?;
            let segment = if cumulative { 0 } else { i64::from(e.process) };
            Some((segment, e.seq, m))
        })
        .collect();
    let mut latest: FxHashMap<i64, i64> = FxHashMap::default();
    for &(segment, seq, _) in &placed {
        let at = latest.entry(segment).or_insert(seq);
        *at = (*at).max(seq);
    }
    placed
        .into_iter()
        .filter(|(segment, seq, _)| latest.get(segment) == Some(seq))
        .map(|(segment, _, m)| {
            let [input, output, read, write, reasoning] = m.tokens;
            Total {
                segment,
                model: m.model,
                file: m.file,
                line: m.line,
                tokens: [input, read, write, reasoning, output],
                requests: m.requests,
            }
        })
        .collect()
}

/// A call whose model may be reassigned: a sub-agent's guessed model (the session's, the
/// shutdown's) or none, or a main call without one. None (neither free nor named, as the
/// polars stage's null had it): a sub-agent's model of no stated source.
fn free(call: &CallRow<'_>, w: &Work<'_>) -> Option<bool> {
    let guessed = match w.model_source {
        Some(source) => Some(matches!(source, "session" | "shutdown") || w.model.is_none()),
        None => w.model.is_none().then_some(true),
    };
    let sub = if call.kind == "subagent" {
        guessed
    } else {
        Some(false)
    };
    let main = call.kind == "main" && w.model.is_none();
    if main {
        Some(true)
    } else {
        sub
    }
}

/// The unit a free call belongs to: its kind of sub-agent (else its own agent id).
fn unit<'a>(call: &CallRow<'a>) -> &'a str {
    call.agent_name.or(call.agent_id).unwrap_or("main")
}

/// Models of the calls the log names none for (or only guesses), from the shutdown's
/// per-model request counts, where the calls add up to the requests and the counts per model
/// disagree: the one assignment of a model per unit (a kind of sub-agent, or the main calls
/// without one) that makes every count agree, or the one the kinds' defaults prefer; else
/// the calls stay without a model and a warning says why.
fn assign_models<'a>(
    id: &str,
    calls: &[&CallRow<'a>],
    work: &mut [Work<'a>],
    totals: &[Total<'a>],
) -> Vec<Warning<'a>> {
    let counted = |i: usize| {
        calls
            .get(i)
            .zip(work.get(i))
            .is_some_and(|(c, w)| w.covered && llm(c))
    };
    let needs: Vec<&Total<'a>> = totals.iter().filter(|t| t.requests.is_some()).collect();
    let any_free = (0..calls.len()).any(|i| {
        counted(i)
            && calls
                .get(i)
                .zip(work.get(i))
                .is_some_and(|(c, w)| free(c, w) == Some(true))
    });
    if !any_free || needs.is_empty() {
        return Vec::new();
    }
    let mut segments: Vec<i64> = (0..calls.len())
        .filter(|&i| counted(i))
        .filter_map(|i| work.get(i).map(|w| w.segment))
        .collect();
    segments.sort_unstable();
    segments.dedup();
    let mut warnings = Vec::new();
    let mut assigned: FxHashMap<(i64, &'static str, &'a str), Option<&'a str>> =
        FxHashMap::default();
    for segment in segments {
        let here: Vec<usize> = (0..calls.len())
            .filter(|&i| counted(i) && work.get(i).is_some_and(|w| w.segment == segment))
            .collect();
        let need: Vec<&Total<'a>> = needs
            .iter()
            .filter(|t| t.segment == segment)
            .copied()
            .collect();
        // The counts compared: calls per model (no model: a group of its own) against the
        // requests, where the shutdown states some, its counts differ, and the sums agree.
        let mut per_model: FxHashMap<Option<&'a str>, i64> = FxHashMap::default();
        for &i in &here {
            if let Some(w) = work.get(i) {
                *per_model.entry(w.model).or_insert(0) += 1;
            }
        }
        let requests_of = |model: Option<&str>| -> Option<i64> {
            model.and_then(|m| {
                need.iter()
                    .find(|t| t.model == Some(m))
                    .and_then(|t| t.requests)
            })
        };
        // (a total without a model, or for a model no call has, compares with 0 calls)
        let differ = per_model
            .iter()
            .any(|(m, n)| *n != requests_of(*m).unwrap_or(0))
            || need.iter().any(|t| {
                (t.model.is_none() || !per_model.contains_key(&t.model))
                    && t.requests.unwrap_or(0) != 0
            });
        let calls_sum: i64 = per_model.values().sum();
        let requests_sum = need
            .iter()
            .filter_map(|t| t.requests)
            .fold(0i64, i64::saturating_add);
        if need.is_empty() || !differ || calls_sum != requests_sum {
            continue;
        }
        let (mut free_here, mut named): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for &i in &here {
            match calls.get(i).zip(work.get(i)).and_then(|(c, w)| free(c, w)) {
                Some(true) => free_here.push(i),
                Some(false) => named.push(i),
                None => {}
            }
        }
        if free_here.is_empty() {
            continue;
        }
        let mut unit_counts: std::collections::BTreeMap<(&'static str, &'a str), i64> =
            std::collections::BTreeMap::new();
        for &i in &free_here {
            if let Some(c) = calls.get(i) {
                *unit_counts.entry((c.kind, unit(c))).or_insert(0) += 1;
            }
        }
        let units: Vec<(&'static str, &'a str, i64)> = unit_counts
            .into_iter()
            .map(|((kind, name), n)| (kind, name, n))
            .collect();
        let mut fixed: FxHashMap<&'a str, i64> = FxHashMap::default();
        let mut mains: FxHashMap<&'a str, i64> = FxHashMap::default();
        for &i in &named {
            let (Some(c), Some(w)) = (calls.get(i), work.get(i)) else {
                continue;
            };
            let model = w.model.unwrap_or("None");
            *fixed.entry(model).or_insert(0) += 1;
            if c.kind == "main" && w.model.is_some() {
                *mains.entry(model).or_insert(0) += 1;
            }
        }
        let main = mains
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(m, _)| *m);
        let mut requests: std::collections::BTreeMap<&'a str, i64> =
            std::collections::BTreeMap::new();
        for t in &need {
            if let Some(n) = t.requests {
                requests.insert(t.model.unwrap_or("None"), n);
            }
        }
        let (picked, problem) = solve(&units, &fixed, &requests, main);
        for (k, (kind, name, _)) in units.iter().enumerate() {
            let model = picked.as_ref().and_then(|p| p.get(k).copied());
            assigned.insert((segment, kind, name), model);
        }
        if let Some(problem) = problem {
            if let Some(t) = need.last() {
                warnings.push(Warning {
                    file: t.file,
                    line: Some(t.line),
                    message: assignment_message(id, &problem, &units, &requests),
                });
            }
        }
    }
    for (c, w) in calls.iter().zip(work.iter_mut()) {
        if !(w.covered && llm(c) && free(c, w) == Some(true)) {
            continue;
        }
        if let Some(model) = assigned.get(&(w.segment, c.kind, unit(c))) {
            w.model = *model;
            w.model_source = model.map(|_| "counts");
        }
    }
    warnings
}

/// (a model per unit, None) when one assignment fits or the defaults pick one; else
/// (None, why not).
fn solve<'a>(
    units: &[(&'static str, &str, i64)],
    fixed: &FxHashMap<&str, i64>,
    requests: &std::collections::BTreeMap<&'a str, i64>,
    main: Option<&str>,
) -> (Option<Vec<&'a str>>, Option<String>) {
    let models: Vec<&'a str> = requests.keys().copied().collect();
    if fixed.keys().any(|m| !requests.contains_key(m)) {
        let why = "calls the log names a model for are not all in the shutdown's counts";
        return (None, Some(why.to_owned()));
    }
    let tries = u32::try_from(units.len())
        .ok()
        .and_then(|n| models.len().checked_pow(n));
    if tries.is_none_or(|n| n > MAX_ASSIGNMENTS) {
        return (
            None,
            Some("more than 100,000 assignments to try".to_owned()),
        );
    }
    let mut fits: Vec<Vec<&'a str>> = Vec::new();
    let mut pick = vec![0usize; units.len()];
    let total = tries.unwrap_or(0);
    for _ in 0..total {
        let mut served: FxHashMap<&str, i64> = models
            .iter()
            .map(|m| (*m, fixed.get(m).copied().unwrap_or(0)))
            .collect();
        for (&k, (_, _, n)) in pick.iter().zip(units) {
            if let Some(slot) = models.get(k).and_then(|m| served.get_mut(m)) {
                *slot += n;
            }
        }
        if served
            .iter()
            .all(|(m, n)| requests.get(m).copied() == Some(*n))
        {
            fits.push(
                pick.iter()
                    .filter_map(|&k| models.get(k).copied())
                    .collect(),
            );
        }
        // The next assignment, the last unit fastest (itertools.product's order).
        for slot in pick.iter_mut().rev() {
            *slot += 1;
            if *slot < models.len() {
                break;
            }
            *slot = 0;
        }
    }
    match fits.len() {
        0 => (
            None,
            Some(
                "no assignment of models to the calls without one fits the shutdown's counts"
                    .to_owned(),
            ),
        ),
        1 => (fits.pop(), None),
        n => {
            let scores: Vec<usize> = fits
                .iter()
                .map(|pick| {
                    pick.iter()
                        .zip(units)
                        .filter(|(m, u)| is_default(u, m, main))
                        .count()
                })
                .collect();
            let best = scores.iter().copied().max().unwrap_or(0);
            if scores.iter().filter(|&&s| s == best).count() > 1 {
                return (
                    None,
                    Some(format!(
                        "{n} assignments of models to the calls without one fit the shutdown's \
                         counts, and the kinds' default models do not decide"
                    )),
                );
            }
            let at = scores.iter().position(|&s| s == best).unwrap_or(0);
            (fits.get(at).cloned(), None)
        }
    }
}

/// Whether `model` is what the unit's kind runs on by default.
fn is_default(unit: &(&str, &str, i64), model: &str, main: Option<&str>) -> bool {
    let (kind, name, _) = *unit;
    let family = (kind == "subagent")
        .then(|| {
            DEFAULT_FAMILIES
                .iter()
                .find(|(k, _)| name.to_lowercase() == *k)
                .map(|(_, f)| *f)
        })
        .flatten();
    match family {
        Some(family) => model.starts_with(family),
        None => Some(model) == main,
    }
}

fn assignment_message(
    id: &str,
    problem: &str,
    units: &[(&str, &str, i64)],
    requests: &std::collections::BTreeMap<&str, i64>,
) -> String {
    let counts: Vec<String> = requests.iter().map(|(m, n)| format!("{m} {n}")).collect();
    let without: Vec<String> = units
        .iter()
        .map(|(_, name, n)| format!("{name} ({n} call{})", if *n == 1 { "" } else { "s" }))
        .collect();
    format!(
        "session {id}: {problem} ({}; calls without a model: {}); their models stay unknown",
        counts.join(", "),
        without.join(", ")
    )
}

/// A call's shutdown total and what it leaves for the calls without a figure.
#[derive(Clone, Copy, Debug, Default)]
struct Keyed<'a> {
    total: Option<Total<'a>>,
    /// input, cache read, cache write, reasoning, output.
    left: [Option<i64>; 5],
    apportion: bool,
    sum_ok: bool,
    counted: i64,
}

fn keyed<'a>(calls: &[&CallRow<'a>], work: &[Work<'a>], totals: &[Total<'a>]) -> Vec<Keyed<'a>> {
    let mut counted: FxHashMap<(i64, Option<&str>), i64> = FxHashMap::default();
    let mut seen: FxHashMap<(i64, Option<&str>), [i64; 5]> = FxHashMap::default();
    for w in work.iter().filter(|w| w.covered) {
        let key = (w.segment, w.model);
        *counted.entry(key).or_insert(0) += 1;
        if w.source.is_some() {
            let sums = seen.entry(key).or_insert([0; 5]);
            for (sum, value) in sums.iter_mut().zip(w.tokens) {
                *sum = sum.saturating_add(value.unwrap_or(0));
            }
        }
    }
    calls
        .iter()
        .zip(work)
        .map(|(_, w)| {
            let key = (w.segment, w.model);
            let total = w.model.and_then(|m| {
                totals
                    .iter()
                    .find(|t| t.segment == w.segment && t.model == Some(m))
                    .copied()
            });
            let n = counted.get(&key).copied().unwrap_or(0);
            let sums = seen.get(&key).copied().unwrap_or([0; 5]);
            let left = [0, 1, 2, 3, 4].map(|k| {
                total
                    .and_then(|t| t.tokens.get(k).copied().flatten())
                    .map(|t| t.saturating_sub(sums.get(k).copied().unwrap_or(0)).max(0))
            });
            let apportion = w.covered && total.is_some_and(|t| t.tokens[0].is_some());
            Keyed {
                total,
                left,
                apportion,
                sum_ok: apportion && total.and_then(|t| t.requests) == Some(n),
                counted: n,
            }
        })
        .collect()
}

/// A call's reconstruction: its fitted prompt (at least 1), the previous call's cacheable
/// part, its fixed part and its standard error.
#[derive(Clone, Copy, Debug, Default)]
struct Estimated {
    estimate: i64,
    previous_prefix: Option<i64>,
    fixed: Option<i64>,
    sd: Option<f64>,
}

/// The session's regressors, priors and fit (`fit.rs`): each call's estimate and the
/// session's fit figures.
fn reconstruct<'a>(
    session: &Session<'_, 'a>,
    calls: &[&CallRow<'a>],
    work: &[Work<'a>],
    keyed: &[Keyed<'a>],
) -> (Vec<Estimated>, Option<SessionFit>) {
    if calls.is_empty() {
        return (Vec::new(), None);
    }
    let events = session.events;
    let ins: Vec<CallIn<'a>> = calls
        .iter()
        .zip(work)
        .map(|(c, w)| CallIn {
            seq: c.seq,
            kind: c.kind,
            agent_id: c.agent_id,
            agent_name: c.agent_name,
            model: w.model,
            start_time: c.start_time,
            end_time: c.end_time,
        })
        .collect();
    // What the fit reads of the events, in one pass: the items that add to a conversation
    // (or restart it), the compactions' stated sizes, the sub-agents' runs, the main system
    // message's size and the fixed part the log states.
    let mut items: Vec<Item<'a>> = Vec::new();
    let mut pre: FxHashMap<(&str, i64), i64> = FxHashMap::default();
    let mut runs: Vec<(&Event<'a>, i64)> = Vec::new();
    let mut system: Option<Option<i64>> = None;
    let mut stated: Option<i64> = None;
    for e in events {
        let item = match e.kind {
            "user.message" | "assistant.message" | "tool.execution_complete" | "skill.invoked" => {
                true
            }
            "session.compaction_complete" => {
                if let Some(tokens) = e.pre_compaction_tokens {
                    pre.insert((e.file, e.line), tokens);
                }
                true
            }
            "subagent.completed" | "subagent.failed" => {
                if let Some(total) = e.total_tokens {
                    runs.push((e, total));
                }
                false
            }
            "system.message" => {
                if system.is_none() && e.agent_id.is_none() {
                    system = Some(e.content_bytes);
                }
                false
            }
            _ => false,
        };
        if item {
            items.push(Item {
                seq: e.seq,
                kind: e.kind,
                agent: e.agent_id.or(e.parent_tool_call_id).unwrap_or("main"),
                content_bytes: e.content_bytes.unwrap_or(0),
                tool_request_bytes: e.tool_request_bytes.unwrap_or(0),
                post_compaction_tokens: e.post_compaction_tokens,
            });
        }
        if stated.is_none() {
            stated = e
                .system_tokens
                .zip(e.tool_definitions_tokens)
                .map(|(system, tools)| system.saturating_add(tools));
        }
    }
    let x: Vec<XRow<'a>> = regressors(&ins, &items);
    let priors = priors(system.flatten(), &x);
    let facts: Vec<(Regressors<'_>, Facts<'_>)> = calls
        .iter()
        .zip(work)
        .zip(keyed)
        .zip(&x)
        .map(|(((c, w), k), r)| {
            let float = |v: i64| v as f64;
            let regressors = Regressors {
                seq: c.seq,
                fixed_key: &r.fixed_key,
                c_fixed: float(r.c_fixed),
                prompt: [r.x[0], r.x[1], r.x[2], r.x[3], 0].map(float),
                prefix: r.p.map(float),
                offset: r.offset,
            };
            let part = if r.prev_part == "fixed" {
                Part::Fixed
            } else {
                Part::Prefix
            };
            let facts = Facts {
                kind: c.kind,
                model: w.model,
                segment: Some(w.segment),
                sum_ok: k.sum_ok,
                total_input: k.total.and_then(|t| t.tokens[0]),
                total_read: k.total.and_then(|t| t.tokens[1]),
                observed: w.source == Some("observed"),
                input: w.tokens[0],
                cache_read: w.tokens[1],
                output: w.tokens[4],
                previous: r.prev_seq.map(|s| (s, part)),
                agent: r.agent,
                pre_compaction: pre.get(&(c.file, c.line)).copied(),
            };
            (regressors, facts)
        })
        .collect();
    let prior_list: Vec<Prior<'_>> = priors
        .iter()
        .map(|(param, mean, sd)| Prior {
            param,
            mean: *mean,
            sd: *sd,
        })
        .collect();
    let fitted = fit_calls(&facts, &subagent_runs(&runs), stated, &prior_list);
    let se: FxHashMap<&str, f64> = fitted
        .parameters
        .iter()
        .zip(&fitted.standard_errors)
        .map(|((name, _, _), sd)| (*name, *sd))
        .collect();
    let by_seq: FxHashMap<i64, &crate::agents::copilot::fit::Estimate> =
        fitted.estimates.iter().map(|e| (e.seq, e)).collect();
    // The rates' standard errors, and the last fixed part's (calls name one or a few).
    let rate_se =
        crate::agents::copilot::fit::RATES.map(|name| se.get(name).copied().unwrap_or(0.0));
    let mut last_fixed: Option<(&str, Option<f64>)> = None;
    let estimates = calls
        .iter()
        .zip(&x)
        .map(|(c, r)| {
            let own = by_seq.get(&c.seq);
            let previous = r.prev_seq.and_then(|s| by_seq.get(&s)).map(|p| {
                if r.prev_part == "fixed" {
                    p.fixed
                } else {
                    p.prefix
                }
            });
            let fixed_se = match last_fixed {
                Some((key, s)) if key == r.fixed_key => s,
                _ => se.get(r.fixed_key.as_str()).copied(),
            };
            last_fixed = Some((r.fixed_key.as_str(), fixed_se));
            let terms = std::iter::once(fixed_se.map(|s| r.c_fixed as f64 * s)).chain(
                rate_se
                    .iter()
                    .zip([r.x[0], r.x[1], r.x[2], r.x[3], 0])
                    .map(|(s, v)| Some(v as f64 * s)),
            );
            let variance: f64 = terms.flatten().map(|t| t * t).sum();
            Estimated {
                estimate: own.map_or(0, |e| e.prompt).max(1),
                previous_prefix: previous,
                fixed: own.map(|e| e.fixed),
                sd: own.map(|_| variance.sqrt()),
            }
        })
        .collect();
    let fit = SessionFit {
        constraints: fitted.constraints,
        residual_pct: fitted.residual_pct,
        parameters: fitted
            .parameters
            .iter()
            .map(|(name, value, determined)| ((*name).to_owned(), *value, *determined))
            .collect(),
    };
    (estimates, Some(fit))
}

/// Every unknown of a session and its prior (name, mean, sd): each fixed part, in the order
/// of the calls that first name it, then the content kinds. `system`: the size of the main
/// agent's first system message.
fn priors<'x>(system: Option<i64>, x: &'x [XRow<'_>]) -> Vec<(&'x str, f64, f64)> {
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let mut out = Vec::new();
    for r in x {
        if !seen.insert(r.fixed_key.as_str()) {
            continue;
        }
        // A sub-agent's (an agent other than `main`; a call without an agent counts as the
        // main agent's, as the polars stage's null did).
        let sub = r.agent.is_some_and(|a| a != "main");
        let (mean, sd) = if sub {
            SUB_FIXED_PRIOR
        } else if let Some(bytes) = system {
            let mean = bytes
                .saturating_add(BYTES_PER_TOKEN - 1)
                .div_euclid(BYTES_PER_TOKEN)
                + TOOL_DEFINITIONS_PRIOR;
            (mean as f64, SYSTEM_FIXED_SD)
        } else {
            MAIN_FIXED_PRIOR
        };
        out.push((r.fixed_key.as_str(), mean, sd));
    }
    for (name, (mean, sd)) in crate::agents::copilot::fit::RATES.iter().zip(RATE_PRIORS) {
        out.push((*name, mean, sd));
    }
    out
}

/// Each sub-agent's `totalTokens` (its `subagent.completed` and `subagent.failed` lines that
/// state one, in order), by its agent id and by its task's tool call id (the last line wins;
/// a tool call id over an agent id).
fn subagent_runs<'a>(runs: &[(&Event<'a>, i64)]) -> FxHashMap<&'a str, i64> {
    let mut out = FxHashMap::default();
    for &(e, total) in runs {
        if let Some(id) = e.agent_id {
            out.insert(id, total);
        }
    }
    for &(e, total) in runs {
        if let Some(id) = e.tool_call_id {
            out.insert(id, total);
        }
    }
    out
}

/// An estimated call's 80% interval for its input: ± `Z80` relative standard errors (the
/// fit's over its estimate, and `MODEL_SD`), the low end at 0 at least.
fn bounds(estimate: i64, sd: Option<f64>, input: Option<i64>) -> (Option<i64>, Option<i64>) {
    let (Some(sd), Some(input)) = (sd, input) else {
        return (None, None);
    };
    if sd.is_nan() {
        return (None, None);
    }
    let ratio = sd / (estimate as f64).max(1.0);
    let relative = (ratio * ratio + MODEL_SD * MODEL_SD).sqrt();
    let tokens = input as f64;
    let half = tokens * relative * Z80;
    let whole = |v: f64| crate::agents::copilot::fit::round_to(v, 0) as i64;
    (
        Some(whole((tokens - half).max(0.0))),
        Some(whole(tokens + half)),
    )
}

/// Why an estimated call's tokens are estimated rather than observed or calibrated.
fn estimate_reason(
    call: &CallRow<'_>,
    w: &Work<'_>,
    k: &Keyed<'_>,
    has_totals: bool,
) -> Option<String> {
    let text = if call.kind == "compaction" {
        "compaction calls are not in the shutdown's totals".to_owned()
    } else if !has_totals {
        "no shutdown totals in the log".to_owned()
    } else if !w.covered {
        "after the last shutdown: no total covers it".to_owned()
    } else if let Some(model) = w.model {
        match k.total.filter(|t| t.tokens[0].is_some()) {
            None => format!("the shutdown states no token totals for {model}"),
            Some(t) => format!(
                "calls counted for {model} ({}) differ from the shutdown's requests ({}): its \
                 totals are spread over the calls found",
                k.counted, t.requests?
            ),
        }
    } else {
        "no model, so no total to follow".to_owned()
    };
    Some(text)
}

/// A session's tokens: its calls' sums (compactions and every process included); 0 where it
/// has no LLM call, None where no call gives a figure. In the SESSIONS order: input, output,
/// cache read, cache write, reasoning.
fn call_totals(row: &SessionRow<'_>, calls: &[CallTokens<'_>]) -> [Option<i64>; 5] {
    let column = |k: usize| {
        if row.llm_calls == 0 {
            return Some(0);
        }
        calls
            .iter()
            .map(|c| c.tokens.get(k).copied().flatten())
            .fold(None, add)
    };
    [column(0), column(4), column(1), column(2), column(3)]
}

/// A session's calls' models, most calls first (ties by name); None without any.
fn models_by_calls<'a>(calls: &[CallTokens<'a>]) -> Option<Vec<&'a str>> {
    let mut counts: FxHashMap<&'a str, i64> = FxHashMap::default();
    for model in calls.iter().filter_map(|c| c.model) {
        *counts.entry(model).or_insert(0) += 1;
    }
    let mut models: Vec<(&'a str, i64)> = counts.into_iter().collect();
    models.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    (!models.is_empty()).then(|| models.into_iter().map(|(m, _)| m).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event<'a>(seq: i64, kind: &'a str) -> Event<'a> {
        Event {
            file: "f",
            line: seq,
            seq,
            kind,
            ..Event::default()
        }
    }

    fn call<'a>(seq: i64, kind: &'static str, model: Option<&'a str>) -> CallRow<'a> {
        CallRow {
            file: "f",
            line: seq,
            seq,
            kind,
            model,
            model_source: model.map(|_| "log"),
            ..CallRow::default()
        }
    }

    #[test]
    fn rows_beside_the_log_fill_calls_in_order_and_a_count_that_differs_is_named() {
        let events = [
            event(1, "assistant.turn_start"),
            event(2, "assistant.turn_start"),
        ];
        let calls = [call(1, "main", Some("m")), call(2, "main", Some("m"))];
        let row = SessionRow {
            llm_calls: 2,
            ..SessionRow::default()
        };
        let observed = [Observed {
            file: "store",
            tokens: [Some(100), Some(40), Some(60), None, Some(7)],
            nano_aiu: Some("5"),
            ..Observed::default()
        }];
        let session = Session {
            id: "s",
            events: &events,
            calls: &calls,
            row: &row,
            metrics: &[],
            observed: &observed,
        };
        let out = session_tokens(&session, true);
        let first = &out.calls[0];
        assert_eq!(first.tokens, [Some(100), Some(40), Some(60), None, Some(7)]);
        assert_eq!(first.token_source, Some("observed"));
        assert_eq!(first.billed_nano_aiu, Some("5"));
        assert_eq!(out.calls[1].token_source, Some("estimated"));
        assert_eq!(
            out.calls[1].estimate_reason.as_deref(),
            Some("no shutdown totals in the log")
        );
        assert_eq!(out.warnings.len(), 1);
        assert_eq!(out.warnings[0].line, None);
        // The validate mode ignores the rows: every call reconstructed.
        let blind = session_tokens(&session, false);
        assert!(blind
            .calls
            .iter()
            .all(|c| c.token_source == Some("estimated")));
        assert!(blind.warnings.is_empty());
    }

    #[test]
    fn the_shutdowns_counts_give_a_guessed_sub_agent_its_model() {
        let mut events = vec![
            event(1, "assistant.turn_start"),
            event(2, "assistant.message"),
        ];
        events.push(event(3, "session.shutdown"));
        let mut sub = call(2, "subagent", Some("big"));
        sub.model_source = Some("session");
        sub.agent_name = Some("explore");
        let calls = [call(1, "main", Some("big")), sub];
        let row = SessionRow {
            llm_calls: 2,
            shutdown_requests: Some(2),
            shutdown_mode: Some("per_process"),
            ..SessionRow::default()
        };
        let metrics = [
            Metric {
                file: "f",
                line: 3,
                model: Some("big"),
                requests: Some(1),
                tokens: [Some(1000), Some(10), None, None, None],
            },
            Metric {
                file: "f",
                line: 3,
                model: Some("claude-haiku-4.5"),
                requests: Some(1),
                tokens: [Some(500), Some(5), None, None, None],
            },
        ];
        let session = Session {
            id: "s",
            events: &events,
            calls: &calls,
            row: &row,
            metrics: &metrics,
            observed: &[],
        };
        let out = session_tokens(&session, true);
        assert_eq!(out.calls[1].model, Some("claude-haiku-4.5"));
        assert_eq!(out.calls[1].model_source, Some("counts"));
        // each model's calls are its requests: calibrated to its totals, exactly
        assert_eq!(out.calls[0].tokens[0], Some(1000));
        assert_eq!(out.calls[1].tokens[0], Some(500));
        assert!(out
            .calls
            .iter()
            .all(|c| c.token_source == Some("calibrated")));
        assert_eq!(out.totals[0], Some(1500));
        assert_eq!(out.models, Some(vec!["big", "claude-haiku-4.5"]));
    }

    #[test]
    fn an_interval_holds_its_figure_and_is_never_narrower_than_the_model_error() {
        for (tokens, estimate, sd) in [(1, 1, 0.0), (10_000, 9_000, 2_500.0), (5, 1, 1e9)] {
            let (Some(low), Some(high)) = bounds(estimate, Some(sd), Some(tokens)) else {
                panic!("no interval");
            };
            assert!(0 <= low && low <= tokens && tokens <= high);
            let floor = (tokens as f64 * MODEL_SD * Z80).floor() as i64;
            assert!(high - tokens >= floor);
        }
        assert_eq!(bounds(10, Some(f64::NAN), Some(10)), (None, None));
        assert_eq!(bounds(10, None, Some(10)), (None, None));
    }
}
