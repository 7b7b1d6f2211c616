//! The Copilot fold: one session's ordered events in, its LLM calls, its SESSIONS row and its
//! warnings out, by the rules of the Copilot agent loop (the polars stages kept as the oracle
//! in `tests/oracle/reference/` state them; the differential test holds the two equal).
//!
//! Calls:
//! - a main call is a main-agent `assistant.turn_start`; the first main `turn_end` after it,
//!   in the same process, closes it; a start never closed is interrupted; any other end is an
//!   orphan (a warning);
//! - a main turn with no answer (`assistant.message`, `assistant.usage`,
//!   `session.usage_record`) that a `session.error`, `abort` or `session.shutdown` ended is a
//!   failed call: not a request, counted apart;
//! - sub-agent calls are the sub-agent `assistant.message` lines, or, where the session has
//!   per-call usage records, the sub-agent records; one per usage id (else api call id);
//! - each `session.compaction_complete` is a compaction call;
//! - models: the call's own lines, then the session's selected model, the neighbouring calls
//!   of its kind, the sub-agent's tool and life-cycle lines, the shutdown's only model.
//!
//! Sessions: counts by kind, the shutdown reconciliation (cumulative or per-process
//! counters), the log's own totals and bill (exact decimals), status, tools, gaps and rewinds.
//!
//! Pure safe Rust on borrowed strings: nothing here panics on any input (indexing is checked,
//! arithmetic saturates where the input decides it).
#![forbid(unsafe_code)]

use rustc_hash::{FxHashMap, FxHashSet};

/// One event of a session, as the ordered EVENTS table holds it (only the columns the fold
/// reads). Strings borrow from the caller's columns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Event<'a> {
    pub file: &'a str,
    pub line: i64,
    pub seq: i64,
    pub process: i32,
    pub kind: &'a str,
    pub timestamp: Option<i64>,
    pub agent_id: Option<&'a str>,
    pub parent_tool_call_id: Option<&'a str>,
    pub turn_id: Option<&'a str>,
    pub interaction_id: Option<&'a str>,
    pub model: Option<&'a str>,
    pub api_call_id: Option<&'a str>,
    pub tool_call_id: Option<&'a str>,
    pub tool_name: Option<&'a str>,
    pub output_tokens: Option<i64>,
    pub is_autopilot: Option<bool>,
    pub initiator: Option<&'a str>,
    pub text: Option<&'a str>,
    pub duration_ms: Option<i64>,
    pub interaction_type: Option<&'a str>,
    pub usage_id: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub repository: Option<&'a str>,
    pub copilot_version: Option<&'a str>,
    pub status_detail: Option<&'a str>,
    pub total_nano_aiu: Option<&'a str>,
    pub total_premium_requests: Option<&'a str>,
    pub total_api_duration_ms: Option<i64>,
    pub info_type: Option<&'a str>,
    pub is_byok: Option<bool>,
    pub nano_aiu: Option<&'a str>,
    pub input_tokens: Option<i64>,
    pub cache_read_tokens: Option<i64>,
    pub cache_write_tokens: Option<i64>,
    pub reasoning_tokens: Option<i64>,
    pub events_file_size_bytes: Option<i64>,
    pub byte_offset: Option<i64>,
    /// What the token stage (`copilot_tokens.rs`) reads beside the fold: the text an event
    /// adds to the context, a tool request's bytes, a sub-agent run's `totalTokens`, and the
    /// context sizes shutdowns and compactions state.
    pub content_bytes: Option<i64>,
    pub tool_request_bytes: Option<i64>,
    pub total_tokens: Option<i64>,
    pub system_tokens: Option<i64>,
    pub tool_definitions_tokens: Option<i64>,
    pub pre_compaction_tokens: Option<i64>,
    pub post_compaction_tokens: Option<i64>,
}

impl Event<'_> {
    /// An event of the main agent: no sub-agent id, no parent tool call, not initiated by a
    /// sub-agent.
    pub fn main(&self) -> bool {
        self.agent_id.is_none()
            && self.parent_tool_call_id.is_none()
            && self.initiator != Some("sub-agent")
    }
}

/// One model's totals of one shutdown line (MODEL_METRICS, placed on the kept shutdowns).
#[derive(Clone, Copy, Debug, Default)]
pub struct Metric<'a> {
    pub file: &'a str,
    pub line: i64,
    pub model: Option<&'a str>,
    pub requests: Option<i64>,
    /// input, output, cache read, cache write, reasoning.
    pub tokens: [Option<i64>; 5],
}

/// One LLM call (a CALLS row, before its tokens).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallRow<'a> {
    pub file: &'a str,
    pub line: i64,
    pub seq: i64,
    pub index: i64,
    pub kind: &'static str,
    pub model: Option<&'a str>,
    pub model_source: Option<&'static str>,
    pub agent_id: Option<&'a str>,
    pub agent_name: Option<&'a str>,
    pub parent_tool_call_id: Option<&'a str>,
    pub interaction_id: Option<&'a str>,
    pub process: i32,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub interrupted: bool,
    pub user_initiated: bool,
    pub output_tokens: Option<i64>,
}

/// One SESSIONS row, before the per-call tokens and the fit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionRow<'a> {
    pub files: Vec<&'a str>,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub cwd: Option<&'a str>,
    pub repository: Option<&'a str>,
    pub copilot_version: Option<&'a str>,
    /// None: the session has no call with a model.
    pub models: Option<Vec<&'a str>>,
    pub processes: i64,
    pub shutdowns: i64,
    pub shutdown_mode: Option<&'static str>,
    pub llm_calls: i64,
    pub main_calls: i64,
    pub subagent_calls: i64,
    pub compaction_calls: i64,
    pub interrupted_calls: i64,
    pub shutdown_requests: Option<i64>,
    pub calls_checked: Option<i64>,
    pub calls_delta: Option<i64>,
    pub calls_agree: Option<bool>,
    pub calls_delta_reason: Option<String>,
    pub failed_calls: i64,
    pub rewinds: i64,
    pub byok: bool,
    pub user_messages: i64,
    pub autopilot_nudges: i64,
    /// None: no tool call at all.
    pub tool_calls: Option<Vec<(&'a str, i64)>>,
    pub tool_calls_total: i64,
    pub wall_time_ms: Option<i64>,
    pub api_time_ms: Option<i64>,
    pub status: &'static str,
    pub status_detail: Option<String>,
    /// input, output, cache read, cache write, reasoning.
    pub logged: [Option<i64>; 5],
    pub token_totals_source: Option<&'static str>,
    pub billed_nano_aiu: Option<String>,
    pub premium_requests: Option<String>,
}

/// A warning about one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning<'a> {
    pub file: &'a str,
    pub line: i64,
    pub message: String,
}

/// What one session's fold gives.
#[derive(Debug, Default)]
pub struct SessionFold<'a> {
    pub calls: Vec<CallRow<'a>>,
    pub session: SessionRow<'a>,
    /// Orphan `turn_end` lines (in event order).
    pub orphans: Vec<Warning<'a>>,
    /// Shutdowns showing bytes missing before them (in event order).
    pub gaps: Vec<Warning<'a>>,
    /// `/rewind` lines (in event order).
    pub rewinds: Vec<Warning<'a>>,
}

const ANSWERS: [&str; 3] = [
    "assistant.message",
    "assistant.usage",
    "session.usage_record",
];
const USAGE_RECORDS: [&str; 2] = ["assistant.usage", "session.usage_record"];
const CALL_PARTS: [&str; 9] = [
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "assistant.usage",
    "session.usage_record",
    "session.error",
    "abort",
    "session.shutdown",
    "user.message",
];
const SESSION_MODEL_EVENTS: [&str; 4] = [
    "session.start",
    "session.resume",
    "session.model_change",
    "session.auto_mode_resolved",
];
/// CLI versions from this one write cumulative shutdown counters.
const CUMULATIVE_SINCE: i64 = 1_000_066;

/// The lines of the kinds the fold's steps read, each in event order, found in one pass over
/// a session's events (a step that reads a few kinds reads them here, not every event).
#[derive(Default)]
struct ByKind<'e, 'a> {
    /// `session.shutdown`.
    shutdowns: Vec<&'e Event<'a>>,
    /// `session.usage_checkpoint`.
    checkpoints: Vec<&'e Event<'a>>,
    /// `session.usage_record`.
    records: Vec<&'e Event<'a>>,
    /// `USAGE_RECORDS`: `assistant.usage` and `session.usage_record`.
    usage: Vec<&'e Event<'a>>,
    /// `tool.execution_start`.
    tool_starts: Vec<&'e Event<'a>>,
    /// `tool.execution_start` and `tool.execution_complete`.
    tools: Vec<&'e Event<'a>>,
    /// `subagent.started`, `subagent.completed` and `subagent.failed`.
    life: Vec<&'e Event<'a>>,
    /// `session.compaction_start` and `session.compaction_complete`.
    compactions: Vec<&'e Event<'a>>,
    /// `session.start`.
    starts: Vec<&'e Event<'a>>,
    /// `SESSION_MODEL_EVENTS`.
    selections: Vec<&'e Event<'a>>,
    /// The last process of the session (0 without events).
    max_process: i32,
}

impl<'e, 'a> ByKind<'e, 'a> {
    fn of(events: &'e [Event<'a>]) -> Self {
        let mut by = ByKind::default();
        let mut max_process = None;
        for event in events {
            max_process = max_process.max(Some(event.process));
            match event.kind {
                "session.shutdown" => by.shutdowns.push(event),
                "session.usage_checkpoint" => by.checkpoints.push(event),
                "session.usage_record" => {
                    by.records.push(event);
                    by.usage.push(event);
                }
                "assistant.usage" => by.usage.push(event),
                "tool.execution_start" => {
                    by.tool_starts.push(event);
                    by.tools.push(event);
                }
                "tool.execution_complete" => by.tools.push(event),
                "subagent.started" | "subagent.completed" | "subagent.failed" => {
                    by.life.push(event);
                }
                "session.compaction_start" | "session.compaction_complete" => {
                    by.compactions.push(event);
                }
                "session.start" => {
                    by.starts.push(event);
                    by.selections.push(event);
                }
                "session.resume" | "session.model_change" | "session.auto_mode_resolved" => {
                    by.selections.push(event);
                }
                _ => {}
            }
        }
        by.max_process = max_process.unwrap_or(0);
        by
    }
}

/// Fold one session's events (ordered by `seq`) and its shutdowns' per-model totals.
pub fn fold_session<'a>(events: &[Event<'a>], metrics: &[Metric<'a>]) -> SessionFold<'a> {
    let by = ByKind::of(events);
    let (calls, orphans, failed) = build_calls(events, &by, metrics);
    let (session, gaps) = summarize(events, &by, &calls, metrics, failed);
    let rewinds = rewind_warnings(events, &session);
    SessionFold {
        calls,
        session,
        orphans,
        gaps,
        rewinds,
    }
}

/// Per main turn (`_call` index, 1-based): answered, ended, the last error text.
#[derive(Default, Clone, Copy)]
struct Turn<'a> {
    answered: bool,
    ended: bool,
    error: Option<&'a str>,
    message_output: i64,
    in_messages: bool,
    usage_output: i64,
    in_usage: bool,
    message_model: Option<&'a str>,
    tool_model: Option<&'a str>,
    end_time: Option<i64>,
    closed: bool,
    start: Option<usize>,
}

impl Turn<'_> {
    fn failed(&self) -> bool {
        !self.answered && self.ended
    }
}

/// The main events a call is made of, each with its turn (0: before any start).
fn main_parts<'a, 'e>(events: &'e [Event<'a>]) -> Vec<(usize, &'e Event<'a>)> {
    let mut turn = 0usize;
    let mut out = Vec::new();
    for event in events {
        let main = event.main();
        if main && event.kind == "assistant.turn_start" {
            turn += 1;
        }
        if main
            && (CALL_PARTS.contains(&event.kind)
                || (event.kind == "tool.execution_start" && event.model.is_some()))
        {
            out.push((turn, event));
        }
    }
    out
}

/// Each main turn's facts (index 0 unused: events before the first start).
fn turns<'a>(parts: &[(usize, &Event<'a>)]) -> Vec<Turn<'a>> {
    let count = parts.iter().map(|(t, _)| *t).max().unwrap_or(0);
    let mut turns = vec![Turn::default(); count + 1];
    for (at, &(t, event)) in parts.iter().enumerate() {
        let Some(turn) = turns.get_mut(t) else {
            continue;
        };
        let kind = event.kind;
        if kind == "assistant.turn_start" {
            turn.start = Some(at);
        }
        if ANSWERS.contains(&kind) {
            turn.answered = true;
            if kind == "assistant.message" {
                turn.message_output = turn
                    .message_output
                    .saturating_add(event.output_tokens.unwrap_or(0));
                turn.in_messages |= event.output_tokens.is_some();
            } else {
                turn.usage_output = turn
                    .usage_output
                    .saturating_add(event.output_tokens.unwrap_or(0));
                turn.in_usage |= event.output_tokens.is_some();
            }
            if turn.message_model.is_none() {
                turn.message_model = event.model;
            }
        }
        if matches!(kind, "session.error" | "abort" | "session.shutdown") {
            turn.ended = true;
        }
        if kind == "session.error" {
            turn.error = event.text;
        }
        if kind == "tool.execution_start" && turn.tool_model.is_none() {
            turn.tool_model = event.model;
        }
    }
    turns
}

/// A failed main call (`failed_calls`): its start line and time, and the turn's last error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed<'a> {
    pub file: &'a str,
    pub line: i64,
    pub start_time: Option<i64>,
    pub error: Option<&'a str>,
}

/// The failed main calls of one session's events.
pub fn failed_calls<'a>(events: &[Event<'a>]) -> Vec<Failed<'a>> {
    let parts = main_parts(events);
    let turns = turns(&parts);
    turns
        .iter()
        .skip(1)
        .filter(|t| t.failed())
        .filter_map(|t| {
            let (_, start) = parts.get(t.start?)?;
            Some(Failed {
                file: start.file,
                line: start.line,
                start_time: start.timestamp,
                error: t.error,
            })
        })
        .collect()
}

type Built<'a> = (Vec<CallRow<'a>>, Vec<Warning<'a>>, i64);

/// CALLS of one session (ordered and numbered), the orphan ends, and the failed calls' count.
fn build_calls<'a>(events: &[Event<'a>], by: &ByKind<'_, 'a>, metrics: &[Metric<'a>]) -> Built<'a> {
    let parts = main_parts(events);
    let mut turns = turns(&parts);
    // Ends: the first end of a turn closes it when in the start's process.
    let mut orphans = Vec::new();
    let mut ends_seen: FxHashSet<usize> = FxHashSet::default();
    for &(t, event) in &parts {
        if event.kind != "assistant.turn_end" {
            continue;
        }
        let first = ends_seen.insert(t);
        let start_process = turns
            .get(t)
            .and_then(|turn| turn.start)
            .and_then(|at| parts.get(at))
            .map(|(_, s)| s.process);
        let closes = t > 0 && first && start_process == Some(event.process);
        if closes {
            if let Some(turn) = turns.get_mut(t) {
                turn.closed = true;
                turn.end_time = event.timestamp;
            }
        } else {
            orphans.push(Warning {
                file: event.file,
                line: event.line,
                message: format!(
                    "assistant.turn_end (turnId {}) without a matching assistant.turn_start",
                    event.turn_id.unwrap_or("?")
                ),
            });
        }
    }
    let failed = turns.iter().skip(1).filter(|t| t.failed()).count();
    // Prompts: the first start after a person's (non-autopilot) user message, failed
    // attempts left out (the call after one answers the prompt).
    let mut prompted: FxHashMap<usize, bool> = FxHashMap::default();
    let mut previous: Option<&Event<'a>> = None;
    for &(t, event) in &parts {
        let start = event.kind == "assistant.turn_start";
        if !(start || event.kind == "user.message") {
            continue;
        }
        if start && turns.get(t).is_some_and(Turn::failed) {
            continue;
        }
        if start {
            let user = previous
                .is_some_and(|p| p.kind == "user.message" && !p.is_autopilot.unwrap_or(false));
            prompted.insert(t, user);
        }
        previous = Some(event);
    }
    let mut calls: Vec<CallRow<'a>> = Vec::new();
    for (t, turn) in turns.iter().enumerate().skip(1) {
        if turn.failed() {
            continue;
        }
        let Some((_, start)) = turn.start.and_then(|at| parts.get(at)) else {
            continue;
        };
        let end_time = if turn.closed { turn.end_time } else { None };
        calls.push(CallRow {
            file: start.file,
            line: start.line,
            seq: start.seq,
            kind: "main",
            model: start.model.or(turn.message_model).or(turn.tool_model),
            interaction_id: start.interaction_id,
            process: start.process,
            start_time: start.timestamp,
            end_time,
            interrupted: end_time.is_none(),
            user_initiated: prompted.get(&t).copied().unwrap_or(false),
            output_tokens: if turn.in_messages {
                Some(turn.message_output)
            } else if turn.in_usage {
                Some(turn.usage_output)
            } else {
                None
            },
            ..CallRow::default()
        });
    }
    let mut drafts: Vec<Draft<'a>> = calls
        .into_iter()
        .map(|row| Draft {
            row,
            ..Draft::default()
        })
        .collect();
    drafts.extend(subagent_calls(events, by));
    drafts.extend(
        compaction_calls(&by.compactions)
            .into_iter()
            .map(|row| Draft {
                row,
                ..Draft::default()
            }),
    );
    drafts.sort_by_key(|d| d.row.seq);
    fill_models(&mut drafts, &by.selections);
    subagent_models(&mut drafts, &by.tools, metrics);
    let calls = drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| CallRow {
            index: i64::try_from(i + 1).unwrap_or(i64::MAX),
            ..d.row
        })
        .collect();
    (calls, orphans, i64::try_from(failed).unwrap_or(i64::MAX))
}

/// A call being built: its row, the model its sub-agent's life-cycle lines name, and the
/// session's current model at it.
#[derive(Default)]
struct Draft<'a> {
    row: CallRow<'a>,
    agent_model: Option<&'a str>,
    current: Option<&'a str>,
}

/// The key a sub-agent's events carry: its envelope agent id, else its parent tool call.
fn agent_key<'a>(event: &Event<'a>) -> Option<&'a str> {
    event.agent_id.or(event.parent_tool_call_id)
}

/// Sub-agents by key: (name, model, the tool call that spawned it), from their life-cycle
/// lines (first non-null of each, agent-id-keyed lines before tool-call-keyed ones).
fn subagents<'a>(life: &[&Event<'a>]) -> FxHashMap<&'a str, [Option<&'a str>; 3]> {
    let mut out: FxHashMap<&'a str, [Option<&'a str>; 3]> = FxHashMap::default();
    let keyed = life
        .iter()
        .filter_map(|e| e.agent_id.map(|k| (k, e)))
        .chain(life.iter().filter_map(|e| e.tool_call_id.map(|k| (k, e))));
    for (key, event) in keyed {
        let entry = out.entry(key).or_default();
        for (slot, value) in
            entry
                .iter_mut()
                .zip([event.tool_name, event.model, event.tool_call_id])
        {
            if slot.is_none() {
                *slot = value;
            }
        }
    }
    out
}

/// One call per sub-agent message (or per sub-agent usage record where the session has
/// them), one per usage id (else api call id) and agent.
fn subagent_calls<'a>(events: &[Event<'a>], by: &ByKind<'_, 'a>) -> Vec<Draft<'a>> {
    let captured = !by.usage.is_empty();
    let started = subagents(&by.life);
    let mut previous_time: FxHashMap<Option<&'a str>, Option<i64>> = FxHashMap::default();
    let mut keys_seen: FxHashSet<(Option<&'a str>, &'a str)> = FxHashSet::default();
    let mut calls = Vec::new();
    // The previous line's agent and time, not yet in `previous_time` (a run of one agent's
    // lines, the usual case, is not hashed line by line).
    let mut run: Option<(Option<&'a str>, Option<i64>)> = None;
    for event in events {
        let agent = agent_key(event);
        let before = match run {
            Some((previous, time)) if previous == agent => time,
            _ => {
                if let Some((previous, time)) = run {
                    previous_time.insert(previous, time);
                }
                previous_time.get(&agent).copied().flatten()
            }
        };
        run = Some((agent, event.timestamp));
        let is_call = if captured {
            USAGE_RECORDS.contains(&event.kind)
                && (event.initiator == Some("sub-agent")
                    || event.parent_tool_call_id.is_some()
                    || event.agent_id.is_some()
                    || event.interaction_type == Some("conversation-subagent"))
        } else {
            event.kind == "assistant.message" && !event.main()
        };
        if !is_call {
            continue;
        }
        if let Some(key) = event.usage_id.or(event.api_call_id) {
            if !keys_seen.insert((agent, key)) {
                continue;
            }
        }
        let [name, model, spawned_by] = agent
            .and_then(|a| started.get(a))
            .copied()
            .unwrap_or_default();
        let own_start = match (event.timestamp, event.duration_ms) {
            (Some(t), Some(d)) => t.checked_sub(d),
            _ => None,
        };
        calls.push(Draft {
            row: CallRow {
                file: event.file,
                line: event.line,
                seq: event.seq,
                kind: "subagent",
                model: event.model,
                agent_id: agent,
                agent_name: name,
                parent_tool_call_id: event.parent_tool_call_id.or(spawned_by),
                interaction_id: event.interaction_id,
                process: event.process,
                start_time: own_start.or(before).or(event.timestamp),
                end_time: event.timestamp,
                output_tokens: event.output_tokens,
                ..CallRow::default()
            },
            agent_model: model,
            current: None,
        });
    }
    calls
}

/// One call per `session.compaction_complete`, started at the latest compaction start.
fn compaction_calls<'a>(compactions: &[&Event<'a>]) -> Vec<CallRow<'a>> {
    let (mut started, mut start_model) = (None, None);
    let mut calls = Vec::new();
    for event in compactions {
        match event.kind {
            "session.compaction_start" => {
                started = event.timestamp.or(started);
                start_model = event.model.or(start_model);
            }
            "session.compaction_complete" => calls.push(CallRow {
                file: event.file,
                line: event.line,
                seq: event.seq,
                kind: "compaction",
                model: event.model.or(start_model),
                interaction_id: event.interaction_id,
                process: event.process,
                start_time: started.or(event.timestamp),
                end_time: event.timestamp,
                output_tokens: event.output_tokens,
                ..CallRow::default()
            }),
            _ => {}
        }
    }
    calls
}

/// Models of main and compaction calls their lines do not name: the session's selected
/// model (main calls), else the nearest earlier call of the kind that names one, else the
/// nearest later one; `model_source` says which (`log`, `session`). Also each call's
/// `current` model (the selected one, else the latest main call's own), for sub-agents.
fn fill_models<'a>(drafts: &mut [Draft<'a>], selections: &[&Event<'a>]) {
    let selected: Vec<(i64, &'a str)> = selections
        .iter()
        .filter(|e| SESSION_MODEL_EVENTS.contains(&e.kind) && e.main())
        .filter_map(|e| e.model.filter(|m| *m != "auto").map(|m| (e.seq, m)))
        .collect();
    let own: Vec<(&'static str, Option<&'a str>)> =
        drafts.iter().map(|d| (d.row.kind, d.row.model)).collect();
    // Within each kind: the nearest earlier call's own model (itself included), else the
    // nearest later one's.
    let mut neighbour: Vec<Option<&'a str>> = vec![None; own.len()];
    let mut later: FxHashMap<&'static str, Option<&'a str>> = FxHashMap::default();
    for (at, (kind, model)) in own.iter().enumerate().rev() {
        let next = later.entry(kind).or_default();
        *next = model.or(*next);
        if let Some(slot) = neighbour.get_mut(at) {
            *slot = *next;
        }
    }
    let mut earlier: FxHashMap<&'static str, Option<&'a str>> = FxHashMap::default();
    for (at, (kind, model)) in own.iter().enumerate() {
        let last = earlier.entry(kind).or_default();
        *last = model.or(*last);
        if let Some(slot) = neighbour.get_mut(at) {
            *slot = last.or(*slot);
        }
    }
    let neighbour = |at: usize| neighbour.get(at).copied().flatten();
    let (mut pointer, mut chosen, mut last_main) = (0usize, None, None);
    for (at, draft) in drafts.iter_mut().enumerate() {
        while let Some(&(seq, model)) = selected.get(pointer) {
            if seq > draft.row.seq {
                break;
            }
            chosen = Some(model);
            pointer += 1;
        }
        let row = &mut draft.row;
        let original = row.model;
        row.model_source = original.map(|_| "log");
        if row.kind == "main" {
            last_main = original.or(last_main);
        }
        draft.current = chosen.or(last_main);
        row.model = match row.kind {
            "main" => original.or(chosen).or_else(|| neighbour(at)),
            "compaction" => original.or_else(|| neighbour(at)),
            _ => original,
        };
        if row.kind != "subagent" && row.model_source.is_none() && row.model.is_some() {
            row.model_source = Some("session");
        }
    }
}

/// Models of sub-agent calls: the call's own, its agent's tool lines', its life-cycle
/// lines', the session's current model, the shutdown's only model (`log`, `log`, `log`,
/// `session`, `shutdown`).
fn subagent_models<'a>(
    drafts: &mut [Draft<'a>],
    tool_lines: &[&Event<'a>],
    metrics: &[Metric<'a>],
) {
    let mut tools: FxHashMap<&'a str, &'a str> = FxHashMap::default();
    for event in tool_lines {
        if !matches!(
            event.kind,
            "tool.execution_complete" | "tool.execution_start"
        ) {
            continue;
        }
        if let (Some(agent), Some(model)) = (agent_key(event), event.model) {
            tools.entry(agent).or_insert(model);
        }
    }
    let mut models: Vec<&'a str> = metrics.iter().filter_map(|m| m.model).collect();
    models.sort_unstable();
    models.dedup();
    let single = match models.as_slice() {
        [only] => Some(*only),
        _ => None,
    };
    for draft in drafts.iter_mut() {
        let row = &mut draft.row;
        if row.kind != "subagent" {
            continue;
        }
        let own = row
            .model
            .or_else(|| row.agent_id.and_then(|a| tools.get(a).copied()))
            .or(draft.agent_model);
        row.model = own.or(draft.current).or(single);
        row.model_source = if own.is_some() {
            Some("log")
        } else if draft.current.is_some() {
            Some("session")
        } else if single.is_some() {
            Some("shutdown")
        } else {
            None
        };
    }
}

/// One shutdown line: whether it has per-model totals, its request and token sums, and the
/// calls counted before it.
struct Shutdown {
    seq: i64,
    process: i32,
    metrics: bool,
    requests: Option<i64>,
    tokens: [Option<i64>; 5],
    calls_before: i64,
    calls_in_process: i64,
}

/// The sum of `values`, None when there are none or one is unknown.
fn known_sum(mut values: impl Iterator<Item = Option<i64>>) -> Option<i64> {
    let mut any = false;
    let sum = values.try_fold(0i64, |sum, n| {
        any = true;
        n.map(|n| sum.saturating_add(n))
    });
    sum.filter(|_| any)
}

/// Kleene AND and OR of nullable booleans (polars' rules).
fn and(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `major.minor.patch` at the start of a version, as one number (`1.0.66` -> 1000066).
fn version_number(version: &str) -> Option<i64> {
    let mut parts = version.splitn(3, '.');
    let mut number = |last: bool| -> Option<i64> {
        let part = parts.next()?;
        let digits: &str = if last {
            let end = part
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(part.len());
            part.get(..end)?
        } else {
            part
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    let (major, minor, patch) = (number(false)?, number(false)?, number(true)?);
    major
        .checked_mul(1_000_000)?
        .checked_add(minor.checked_mul(1_000)?)?
        .checked_add(patch)
}

/// The SESSIONS row of one session, and the shutdowns that show bytes missing before them.
fn summarize<'a>(
    events: &[Event<'a>],
    by: &ByKind<'_, 'a>,
    calls: &[CallRow<'a>],
    metrics: &[Metric<'a>],
    failed: i64,
) -> (SessionRow<'a>, Vec<Warning<'a>>) {
    let mut row = SessionRow {
        failed_calls: failed,
        ..SessionRow::default()
    };
    overview(events, by.max_process, &mut row);
    let gaps = gaps(by);
    // Calls by kind and model.
    let mut last_interrupted = None;
    let mut by_model: Vec<(&'a str, i64)> = Vec::new();
    for call in calls {
        row.llm_calls += 1;
        match call.kind {
            "main" => {
                row.main_calls += 1;
                last_interrupted = Some(call.interrupted);
            }
            "subagent" => row.subagent_calls += 1,
            _ => row.compaction_calls += 1,
        }
        row.interrupted_calls += i64::from(call.interrupted);
        if let Some(model) = call.model {
            match by_model.iter_mut().find(|(m, _)| *m == model) {
                Some((_, n)) => *n += 1,
                None => by_model.push((model, 1)),
            }
        }
    }
    by_model.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    row.models = (!by_model.is_empty()).then(|| by_model.iter().map(|(m, _)| *m).collect());
    // Tools.
    let mut tools: Vec<(&'a str, i64)> = Vec::new();
    for event in &by.tool_starts {
        let name = event.tool_name.unwrap_or("?");
        match tools.iter_mut().find(|(t, _)| *t == name) {
            Some((_, n)) => *n += 1,
            None => tools.push((name, 1)),
        }
    }
    tools.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    row.tool_calls_total = tools.iter().map(|(_, n)| n).sum();
    row.tool_calls = (!tools.is_empty()).then_some(tools);
    // Shutdowns and how to read them.
    let llm: Vec<&CallRow<'a>> = calls.iter().filter(|c| c.kind != "compaction").collect();
    let shutdowns: Vec<Shutdown> = by
        .shutdowns
        .iter()
        .map(|e| {
            let mine: Vec<&Metric<'a>> = metrics
                .iter()
                .filter(|m| m.file == e.file && m.line == e.line)
                .collect();
            let mut tokens = [None; 5];
            for (i, slot) in tokens.iter_mut().enumerate() {
                let values: Vec<i64> = mine.iter().filter_map(|m| m.tokens[i]).collect();
                *slot = (!values.is_empty())
                    .then(|| values.iter().fold(0i64, |a, b| a.saturating_add(*b)));
            }
            let before = llm.iter().filter(|c| c.seq < e.seq);
            Shutdown {
                seq: e.seq,
                process: e.process,
                metrics: !mine.is_empty(),
                // Unknown when a model's count is (left out, or beyond 64 bits): the others'
                // sum would be a total the calls agree with, or not, by chance.
                requests: known_sum(mine.iter().map(|m| m.requests)),
                tokens,
                calls_before: count(before.clone().count()),
                calls_in_process: count(before.filter(|c| c.process == e.process).count()),
            }
        })
        .collect();
    row.shutdowns = count(shutdowns.len());
    let with_requests: Vec<&Shutdown> = shutdowns.iter().filter(|s| s.metrics).collect();
    row.shutdown_mode = (!shutdowns.is_empty()).then(|| {
        let checkpoints = !by.checkpoints.is_empty();
        let version = events
            .iter()
            .find_map(|e| e.copilot_version)
            .and_then(version_number);
        let errors = |f: fn(&Shutdown) -> i64| -> i64 {
            with_requests
                .iter()
                .filter_map(|s| s.requests.map(|r| r.saturating_sub(f(s)).saturating_abs()))
                .fold(0, i64::saturating_add)
        };
        if checkpoints || version.is_some_and(|v| v >= CUMULATIVE_SINCE) {
            "cumulative"
        } else if !with_requests.is_empty()
            && errors(|s| s.calls_in_process) < errors(|s| s.calls_before)
        {
            "per_process"
        } else {
            "cumulative"
        }
    });
    let cumulative = row.shutdown_mode == Some("cumulative");
    // The totals: the last shutdown's (cumulative) or their sum.
    let mut shutdown_tokens = [None; 5];
    let mut covered: Option<(i64, Vec<i32>)> = None;
    if let Some(last) = with_requests.last() {
        if cumulative {
            row.shutdown_requests = last.requests;
            shutdown_tokens = last.tokens;
        } else {
            row.shutdown_requests = known_sum(with_requests.iter().map(|s| s.requests));
            for (i, slot) in shutdown_tokens.iter_mut().enumerate() {
                *slot = with_requests
                    .iter()
                    .map(|s| s.tokens[i])
                    .try_fold(0i64, |a, b| b.map(|b| a.saturating_add(b)));
            }
        }
        covered = Some((last.seq, with_requests.iter().map(|s| s.process).collect()));
    }
    // Calls after the shutdown totals (a crash): their count and output.
    let (mut uncovered_calls, mut uncovered_output) = (None, None);
    let (mut uncovered_has_output, mut any_output) = (None, None);
    if !llm.is_empty() {
        let after = |c: &CallRow| match &covered {
            None => true,
            Some((until, processes)) => {
                if cumulative {
                    c.seq > *until
                } else {
                    !processes.contains(&c.process)
                }
            }
        };
        let late: Vec<&&CallRow<'a>> = llm.iter().filter(|c| after(c)).collect();
        uncovered_calls = Some(count(late.len()));
        uncovered_output = Some(
            late.iter()
                .filter_map(|c| c.output_tokens)
                .fold(0i64, i64::saturating_add),
        );
        uncovered_has_output = Some(late.iter().any(|c| c.output_tokens.is_some()));
        any_output = Some(llm.iter().any(|c| c.output_tokens.is_some()));
    }
    // The log's own bill.
    // (shutdowns and checkpoints in event order: merged by `seq`, which orders the events)
    let bills: Vec<&Event<'a>> = if by.checkpoints.is_empty() {
        by.shutdowns
            .iter()
            .copied()
            .filter(|e| e.total_nano_aiu.is_some())
            .collect()
    } else {
        events
            .iter()
            .filter(|e| {
                matches!(e.kind, "session.shutdown" | "session.usage_checkpoint")
                    && e.total_nano_aiu.is_some()
            })
            .collect()
    };
    let mut billed: Option<String> = None;
    if !bills.is_empty() {
        let shutdown_bills = || bills.iter().filter(|e| e.kind == "session.shutdown");
        if row.shutdown_mode == Some("per_process") {
            billed = decimal_sum(shutdown_bills().map(|e| e.total_nano_aiu));
            row.api_time_ms = Some(
                shutdown_bills()
                    .filter_map(|e| e.total_api_duration_ms)
                    .fold(0, i64::saturating_add),
            );
            row.premium_requests = decimal_sum(shutdown_bills().map(|e| e.total_premium_requests));
        } else {
            billed = bills
                .last()
                .and_then(|e| e.total_nano_aiu)
                .map(str::to_owned);
            row.api_time_ms = shutdown_bills()
                .next_back()
                .and_then(|e| e.total_api_duration_ms);
            row.premium_requests = bills
                .iter()
                .rev()
                .find_map(|e| e.total_premium_requests)
                .map(str::to_owned);
        }
    }
    // Usage records: the tokens and bill without a shutdown.
    let records = &by.records;
    let (mut record_count, mut record_tokens, mut record_nano, mut byok_records) =
        (None, [None; 5], None, None);
    if !records.is_empty() {
        record_count = Some(count(records.len()));
        let fields: [fn(&Event) -> Option<i64>; 5] = [
            |e| e.input_tokens,
            |e| e.output_tokens,
            |e| e.cache_read_tokens,
            |e| e.cache_write_tokens,
            |e| e.reasoning_tokens,
        ];
        for (slot, field) in record_tokens.iter_mut().zip(fields) {
            *slot = Some(
                records
                    .iter()
                    .filter_map(|e| field(e))
                    .fold(0, i64::saturating_add),
            );
        }
        record_nano = decimal_sum(records.iter().map(|e| e.nano_aiu));
        byok_records = Some(records.iter().any(|e| e.is_byok == Some(true)));
    }
    // Counts against the shutdown's requests.
    let covered_calls = row
        .llm_calls
        .saturating_sub(row.compaction_calls)
        .saturating_sub(uncovered_calls.unwrap_or(0));
    // A request total to check the calls against, and token totals to take (a shutdown with
    // per-model totals has both, unless a model's count is unknown).
    let has_truth = row.shutdown_requests.is_some();
    let has_totals = !with_requests.is_empty();
    row.calls_checked = has_truth.then_some(covered_calls);
    row.calls_delta = row
        .shutdown_requests
        .map(|r| covered_calls.saturating_sub(r));
    row.calls_agree = row.calls_delta.map(|d| d == 0);
    let from_records = !has_totals && record_count.is_some_and(|n| n > 0);
    let partial = has_totals && uncovered_calls.is_some_and(|n| n > 0);
    let extra = if uncovered_has_output == Some(true) {
        uncovered_output
    } else {
        Some(0)
    };
    // input, output, cache read, cache write, reasoning
    for (i, slot) in row.logged.iter_mut().enumerate() {
        *slot = if has_totals {
            if i == 1 {
                shutdown_tokens[1]
                    .zip(extra)
                    .map(|(a, b)| a.saturating_add(b))
            } else {
                shutdown_tokens[i]
            }
        } else if from_records {
            record_tokens[i]
        } else if i == 1 && any_output == Some(true) {
            uncovered_output
        } else {
            None
        };
    }
    row.token_totals_source = if from_records {
        Some("usage_records")
    } else if !has_totals {
        (any_output == Some(true)).then_some("messages")
    } else if partial {
        Some("shutdown+messages")
    } else {
        Some("shutdown")
    };
    row.billed_nano_aiu = billed.or(record_nano);
    let billed_zero = row
        .billed_nano_aiu
        .as_deref()
        .and_then(parse_decimal)
        .map(|v| v == 0);
    let spent = row.logged[0].map(|v| v > 0);
    row.byok = or(byok_records, and(spent, billed_zero)).unwrap_or(false);
    // Status.
    (row.status, row.status_detail) = Ending::of(events, by.max_process).status(last_interrupted);
    // Why the counts differ.
    let gap = gaps.first().map(|g| g.message.clone());
    row.calls_delta_reason = match row.calls_delta {
        None | Some(0) => None,
        Some(delta) if delta > 0 && row.rewinds > 0 => Some(format!(
            "/rewind: the shutdown counts only the calls after the rewind point ({delta} more \
             were made)"
        )),
        Some(delta) if delta < 0 && gap.is_some() => Some(format!(
            "lines missing from the log: {}",
            gap.unwrap_or_default()
        )),
        Some(_) => Some("not explained by the log".to_owned()),
    };
    if let Some(reason) = &row.calls_delta_reason {
        row.status_detail = Some(match row.status_detail.take() {
            Some(detail) => format!("{reason}; {detail}"),
            None => reason.clone(),
        });
    }
    (row, gaps)
}

/// Identity, place, time and conversation counts of a session.
fn overview<'a>(events: &[Event<'a>], max_process: i32, row: &mut SessionRow<'a>) {
    let mut spans: Vec<(i32, Option<i64>, Option<i64>)> = Vec::new();
    for event in events {
        // (the scanner's lines of a file share its name's bytes: mostly no comparing)
        if !row
            .files
            .iter()
            .any(|f| std::ptr::eq(*f, event.file) || *f == event.file)
        {
            row.files.push(event.file);
        }
        row.start_time = crate::fold::min_time(row.start_time, event.timestamp);
        row.end_time = crate::fold::max_time(row.end_time, event.timestamp);
        row.cwd = row.cwd.or(event.cwd);
        row.repository = row.repository.or(event.repository);
        row.copilot_version = event.copilot_version.or(row.copilot_version);
        match spans.iter_mut().find(|(p, _, _)| *p == event.process) {
            Some((_, low, high)) => {
                *low = crate::fold::min_time(*low, event.timestamp);
                *high = crate::fold::max_time(*high, event.timestamp);
            }
            None => spans.push((event.process, event.timestamp, event.timestamp)),
        }
        if event.kind == "user.message" && event.main() {
            match event.is_autopilot {
                Some(false) => row.user_messages += 1,
                Some(true) => row.autopilot_nudges += 1,
                None => {}
            }
        }
        if event.info_type == Some("rewind") {
            row.rewinds += 1;
        }
    }
    row.processes = i64::from(max_process) + 1;
    row.wall_time_ms = Some(
        spans
            .iter()
            .filter_map(|(_, low, high)| Some(high.as_ref()?.saturating_sub(*low.as_ref()?)))
            .fold(0, i64::saturating_add),
    );
}

/// What decides a session's status: the last lines of each kind that end it.
#[derive(Default)]
struct Ending<'a> {
    completed: bool,
    summary: Option<&'a str>,
    abort: Option<&'a str>,
    shutdown_type: Option<&'a str>,
    error: Option<&'a str>,
    last_kind: Option<&'a str>,
    final_shutdown: bool,
}

impl<'a> Ending<'a> {
    /// `max_process`: the session's last process.
    fn of(events: &[Event<'a>], max_process: i32) -> Ending<'a> {
        let mut ending = Ending::default();
        let mut last_seq = None;
        for event in events {
            match event.kind {
                "session.task_complete" => {
                    ending.completed = true;
                    ending.summary = event.text;
                }
                "abort" => ending.abort = event.text,
                "session.shutdown" => {
                    ending.shutdown_type = event.status_detail;
                    ending.final_shutdown |= event.process == max_process;
                }
                "session.error" => ending.error = event.text,
                _ => {}
            }
            if last_seq.is_none_or(|s| event.seq > s) {
                last_seq = Some(event.seq);
                ending.last_kind = Some(event.kind);
            }
        }
        ending
    }

    /// (status, status detail) of the session.
    fn status(&self, last_interrupted: Option<bool>) -> (&'static str, Option<String>) {
        let error = self.shutdown_type == Some("error");
        let aborted = self.last_kind == Some("abort");
        let status = if error {
            "error"
        } else if last_interrupted.unwrap_or(false) || aborted || !self.final_shutdown {
            "interrupted"
        } else if self.completed {
            "complete"
        } else {
            "idle"
        };
        let detail = error
            .then_some(self.error)
            .flatten()
            .or(aborted.then_some(self.abort).flatten())
            .or(self.summary)
            .map(str::to_owned)
            .or_else(|| {
                (!self.final_shutdown).then(|| {
                    "no session.shutdown in the last process (crashed, killed or still running)"
                        .to_owned()
                })
            })
            .or_else(|| {
                (last_interrupted == Some(true))
                    .then(|| "the last LLM call has no assistant.turn_end (cut off)".to_owned())
            });
        (status, detail)
    }
}

/// Shutdown lines that show bytes missing before them.
fn gaps<'a>(by: &ByKind<'_, 'a>) -> Vec<Warning<'a>> {
    let mut starts: Vec<(&'a str, Option<i64>)> = Vec::new();
    for event in &by.starts {
        match starts.iter_mut().find(|(f, _)| *f == event.file) {
            Some((_, low)) => *low = crate::fold::min_time(*low, event.byte_offset),
            None => starts.push((event.file, event.byte_offset)),
        }
    }
    by.shutdowns
        .iter()
        .filter_map(|e| {
            let stated = e.events_file_size_bytes?;
            let start = starts.iter().find(|(f, _)| *f == e.file)?.1?;
            let found = e.byte_offset?.checked_sub(start)?;
            (found < stated).then(|| Warning {
                file: e.file,
                line: e.line,
                message: format!(
                    "{} bytes of the session's log are missing before this line (its \
                     session.shutdown states the size the log had when it was written): an \
                     excerpt, or lines lost",
                    stated.saturating_sub(found)
                ),
            })
        })
        .collect()
}

/// One warning per `/rewind` line of a session that has them.
fn rewind_warnings<'a>(events: &[Event<'a>], session: &SessionRow<'a>) -> Vec<Warning<'a>> {
    if session.rewinds == 0 {
        return Vec::new();
    }
    let message = match session.calls_delta {
        Some(delta) if delta > 0 => format!(
            "/rewind: the session.shutdown counts only the calls after the rewind point; {delta} \
             calls made before it are counted here, not in the shutdown"
        ),
        _ => "/rewind: the session.shutdown may leave out calls made before it".to_owned(),
    };
    events
        .iter()
        .filter(|e| e.info_type == Some("rewind"))
        .map(|e| Warning {
            file: e.file,
            line: e.line,
            message: message.clone(),
        })
        .collect()
}

/// A decimal text as polars reads it into `Decimal(38, 9)`: units of 1e-9, rounded half to
/// even; None for text that is not a plain decimal number or does not fit 38 digits.
pub fn parse_decimal(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    let (negative, rest) = match bytes.first() {
        Some(b'-') => (true, bytes.get(1..)?),
        Some(b'+') => (false, bytes.get(1..)?),
        _ => (false, bytes),
    };
    let mantissa_end = rest
        .iter()
        .position(|b| *b == b'e' || *b == b'E')
        .unwrap_or(rest.len());
    let (mantissa, exponent) = rest.split_at(mantissa_end);
    let exponent: i64 = match exponent.get(1..) {
        None => 0,
        Some(digits) => {
            let (sign, body) = match digits.first() {
                Some(b'-') => (-1, digits.get(1..)?),
                Some(b'+') => (1, digits.get(1..)?),
                _ => (1, digits),
            };
            if body.is_empty() || !body.iter().all(u8::is_ascii_digit) || body.len() > 6 {
                return None;
            }
            sign * std::str::from_utf8(body).ok()?.parse::<i64>().ok()?
        }
    };
    let point = mantissa.iter().position(|b| *b == b'.');
    let (whole, fraction) = match point {
        Some(at) => (mantissa.get(..at)?, mantissa.get(at + 1..)?),
        None => (mantissa, &b""[..]),
    };
    if whole.is_empty() && fraction.is_empty()
        || !whole.iter().chain(fraction).all(u8::is_ascii_digit)
    {
        return None;
    }
    let digits: Vec<u8> = whole.iter().chain(fraction).map(|b| b - b'0').collect();
    // value = digits x 10^(shift - 9) in units of 1e-9: shift = exponent - fraction + 9.
    let shift = exponent - i64::try_from(fraction.len()).ok()? + 9;
    let limit = 10i128.pow(38);
    let mut value: i128 = 0;
    let keep = if shift >= 0 {
        digits.len()
    } else {
        digits.len().saturating_sub(usize::try_from(-shift).ok()?)
    };
    for &d in digits.get(..keep)? {
        value = value.checked_mul(10)?.checked_add(i128::from(d))?;
        if value >= limit {
            return None;
        }
    }
    if shift > 0 {
        for _ in 0..shift {
            value = value.checked_mul(10)?;
            if value >= limit {
                return None;
            }
        }
    } else {
        let dropped = digits.get(keep..).unwrap_or(&[]);
        let cut = usize::try_from(-shift).ok()?;
        // Digits dropped beyond the ones present are zeros (leading zeros of the fraction).
        let first = if cut > dropped.len() {
            0
        } else {
            dropped.first().copied().unwrap_or(0)
        };
        let rest_nonzero = if cut > dropped.len() {
            dropped.iter().any(|d| *d != 0)
        } else {
            dropped.iter().skip(1).any(|d| *d != 0)
        };
        let up = first > 5 || (first == 5 && (rest_nonzero || value % 2 == 1));
        if up {
            value = value.checked_add(1)?;
        }
        if value >= limit {
            return None;
        }
    }
    Some(if negative { -value } else { value })
}

/// Exact sum of decimal texts, written without trailing zeros (`"80"`, `"2.31"`); None when
/// no text is given. A text that is not a number counts as nothing.
pub fn decimal_sum<'a>(texts: impl Iterator<Item = Option<&'a str>>) -> Option<String> {
    let mut any = false;
    let mut total: i128 = 0;
    for text in texts.flatten() {
        any = true;
        total = total.saturating_add(parse_decimal(text).unwrap_or(0));
    }
    any.then(|| decimal_text(total))
}

/// Units of 1e-9 as decimal text without trailing zeros.
pub fn decimal_text(units: i128) -> String {
    let sign = if units < 0 { "-" } else { "" };
    let magnitude = units.unsigned_abs();
    let whole = magnitude / 1_000_000_000;
    let fraction = magnitude % 1_000_000_000;
    if fraction == 0 {
        return format!("{sign}{whole}");
    }
    let digits = format!("{fraction:09}");
    format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
}
