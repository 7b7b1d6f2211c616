//! A bounded fuzz run of the scanner (no nightly toolchain or libFuzzer needed): for a stated
//! time (`AGENTCOST_FUZZ_SECONDS`, default 10), files made of random bytes, of damaged real log
//! lines and of generated JSON are scanned; the scanner must not panic (a panic fails the
//! test: `scan` would otherwise turn it into an issue and hide it), must not hang (each file is
//! timed), and must account for every line: one row, or an error, or a blank-line warning.
//! Each file is also scanned in two goes (`scan_from`, cut at a random line end): the two
//! account for the same lines, but a last line without its newline, which waits. Every
//! shutdown's per-model totals, and the file's raw bytes, go through `model_metrics::decode`.
//! The Claude Code and Codex folds get the same treatment (damaged agent lines, spread over
//! two files of a group, as sub-agent files too): no panic, no hang, and every line either
//! read into a session or an error.
//! The Copilot fold, the reconstruction's regressors and its fit get generated sessions (any
//! event order, extreme numbers, NaN and infinite figures): no panic, no hang, calls numbered
//! and counted, one estimate per call. The same lines, spread over sessions and files with
//! repeated ids and odd `tokenDetails`, go through the whole Copilot pass (`copilot_pass`:
//! order, repeats, placed totals, every session's fold): no panic in any fold, every line kept
//! or counted as a repeat, every total placed or not.
//! proptest drives the inputs; the run prints how many files and bytes it scanned.

use std::io::Write;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

use _scanner::agents::copilot::format::COPILOT;
use _scanner::agents::copilot::model_metrics;
use _scanner::fold::Folded;
use _scanner::read::scan::{Batch, FileSpec, Resume, Scanner};
use _scanner::read::table::{Column, Table};

const SEEDS: &[&[u8]] = &[
    br#"{"type":"session.start","data":{"sessionId":"s1","copilotVersion":"1.0.80","context":{"cwd":"/x"}},"id":"e1","timestamp":"2026-05-01T10:00:00.000Z"}"#,
    br#"{"type":"assistant.message","data":{"content":"a\nb\u00e9","toolRequests":[{"name":"bash","arguments":{"cmd":"ls -la","n":1.50}}],"outputTokens":12},"id":"e2","timestamp":"2026-05-01T10:00:01.000Z"}"#,
    br#"{"type":"tool.execution_complete","data":{"toolCallId":"t","success":true,"result":{"content":"ok","detailedContent":"x"}},"timestamp":"2026-05-01T10:00:02Z"}"#,
    br#"{"type":"session.shutdown","data":{"shutdownType":"routine","totalNanoAiu":305426000.0,"modelMetrics":{"m":{"requests":{"count":2,"cost":1},"usage":{"inputTokens":10}}},"tokenDetails":[{"tokenType":"input","tokenCount":15}]},"timestamp":"2026-05-01T10:00:03Z"}"#,
    br#"{"type":"session.shutdown","data":{"modelMetrics":{"a b":{"requests":{"count":1e30,"cost":1.5e-7},"usage":{"inputTokens":99999999999999999999,"outputTokens":-0.0}},"a b":[],"c":{"totalNanoAiu":1e400}}},"timestamp":"2026-05-01T10:00:03Z"}"#,
    br#"{"type":"session.shutdown","data":{"modelMetrics":"{\"m\": {\"requests\": {\"count\": 2.0, \"cost\": 1.50}}, \"n\": NaN}"},"timestamp":"2026-05-01T10:00:03Z"}"#,
    br#"{"type":"session.usage_record","data":{"usage":{"model":"m","inputTokens":"12","isByok":"TRUE","provider":{"id":"copilot"},"accounting":{"usageId":"u"},"copilotUsage":{"totalNanoAiu":1e3,"tokenDetails":[]}}},"timestamp":"2026-05-01T10:00:04+02:00"}"#,
];

/// Every natively folded agent's seed lines (each agent's `SEEDS`), for the folds' run.
fn agent_seeds() -> &'static [&'static [u8]] {
    let seeds: Vec<&'static [u8]> = _scanner::agents::FOLDS
        .iter()
        .flat_map(|agent| agent.seeds.iter().copied())
        .collect();
    Box::leak(seeds.into_boxed_slice())
}

/// A seed line damaged: truncated, NULs inserted, bits flipped, bytes inserted.
fn damaged(seeds: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    (
        0..seeds.len(),
        proptest::collection::vec((0usize..4, any::<usize>(), any::<u8>()), 0..6),
    )
        .prop_map(|(seed, edits)| {
            let mut line = seeds.get(seed).copied().unwrap_or(b"").to_vec();
            for (what, at, byte) in edits {
                let at = if line.is_empty() {
                    0
                } else {
                    at % (line.len() + 1)
                };
                match what {
                    0 => line.truncate(at),
                    1 => line
                        .splice(at..at, std::iter::repeat_n(0u8, 1 + usize::from(byte % 40)))
                        .for_each(drop),
                    2 => {
                        if let Some(b) = line.get_mut(at) {
                            *b ^= 1 << (byte % 8);
                        }
                    }
                    _ => line.insert(at.min(line.len()), byte),
                }
            }
            line
        })
}

fn file(seeds: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        damaged(seeds),
        proptest::collection::vec(any::<u8>(), 0..200),
        "[\\[\\]{}\":,0-9eE.+\\-\\\\u a-z]{0,80}".prop_map(String::into_bytes),
        (1usize..400).prop_map(|n| [vec![b'['; n], vec![b']'; n]].concat()),
    ];
    (proptest::collection::vec(line, 0..8), any::<bool>()).prop_map(|(lines, newline)| {
        let mut data = lines.join(&b'\n');
        if newline {
            data.push(b'\n');
        }
        data
    })
}

/// Rows, errors and blank-line warnings: one per line read.
fn accounted(batches: &[Batch]) -> usize {
    let rows: usize = batches.iter().map(|b| b.events.rows()).sum();
    let errors = batches
        .iter()
        .flat_map(|b| &b.issues)
        .filter(|i| i.severity == "error" || i.message == "blank line ignored")
        .count();
    rows + errors
}

/// Every string column of a scanned batch passes Arrow's view validation (UTF-8, views inside
/// their buffers), which the binding skips for the scanner's columns.
fn assert_views_valid(events: &Table, data: &[u8]) {
    for (i, column) in events.columns.iter().enumerate() {
        if let Column::Str(c) = column {
            let row = c.invalid_view();
            assert!(row.is_none(), "column {i} row {row:?} invalid on {data:?}");
            assert_eq!(c.valid.len(), c.len(), "column {i} validity on {data:?}");
        }
    }
}

/// A run's directory of inputs under the temporary directory, removed when dropped (a failed
/// assertion's unwinding included).
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn scanner_survives_damaged_input_for_a_stated_time() {
    let seconds: u64 = std::env::var("AGENTCOST_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let scanner = Scanner::new(COPILOT);
    let dir = Scratch::new("agentcost-fuzz");
    let path = dir.0.join("events.jsonl");
    let started = Instant::now();
    let (mut files, mut bytes, mut slowest) = (0u64, 0u64, Duration::ZERO);
    let mut runner = TestRunner::new(Config {
        cases: u32::MAX,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = file(SEEDS);
    while started.elapsed() < Duration::from_secs(seconds) {
        let data = strategy.new_tree(&mut runner).expect("an input").current();
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&data))
            .expect("write the input");
        let spec = FileSpec {
            path: path.clone(),
            hint: "hint".into(),
            size: None,
        };
        let began = Instant::now();
        let batches = std::panic::catch_unwind(|| scanner.scan(&[spec], 1 << 20, 64));
        let took = began.elapsed();
        slowest = slowest.max(took);
        assert!(took < Duration::from_secs(5), "hang: {took:?} on {data:?}");
        let batches = batches.unwrap_or_else(|_| panic!("panic on {data:?}"));
        for batch in &batches {
            assert!(batch.failures.is_empty(), "scanner lost the file {data:?}");
            assert_views_valid(&batch.events, &data);
            for totals in &batch.totals {
                std::panic::catch_unwind(|| model_metrics::decode(totals.json.as_bytes()))
                    .unwrap_or_else(|_| panic!("panic decoding {:?}", totals.json));
            }
        }
        // the decoder on the raw bytes too (a modelMetrics given as a string can hold any text)
        std::panic::catch_unwind(|| model_metrics::decode(&data))
            .unwrap_or_else(|_| panic!("panic decoding {data:?}"));
        let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        if lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        assert_eq!(
            accounted(&batches),
            lines.len(),
            "a line unaccounted for in {data:?}"
        );
        let ends: Vec<usize> = data
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .map(|(at, _)| at + 1)
            .collect();
        let cut = ends
            .get(files as usize % (ends.len() + 1))
            .copied()
            .unwrap_or(0);
        let mut spec = FileSpec {
            path: path.clone(),
            hint: "hint".into(),
            size: Some(cut as u64),
        };
        let first = std::panic::catch_unwind(|| {
            scanner.scan_from(
                std::slice::from_ref(&spec),
                &[Resume::default()],
                1 << 20,
                64,
            )
        })
        .unwrap_or_else(|_| panic!("panic resuming on {data:?}"));
        let state = first
            .iter()
            .flat_map(|b| &b.ends)
            .map(|(_, s)| s.clone())
            .next();
        let state = state.expect("an end state");
        assert_eq!(state.offset, cut as u64, "resume offset in {data:?}");
        spec.size = None;
        let rest = std::panic::catch_unwind(|| {
            scanner.scan_from(
                std::slice::from_ref(&spec),
                std::slice::from_ref(&state),
                1 << 20,
                64,
            )
        })
        .unwrap_or_else(|_| panic!("panic resuming on {data:?}"));
        let waiting = usize::from(!data.is_empty() && !data.ends_with(b"\n"));
        assert_eq!(
            accounted(&first) + accounted(&rest) + waiting,
            lines.len(),
            "resuming lost a line in {data:?}"
        );
        files += 1;
        bytes += data.len() as u64;
    }
    println!(
        "fuzz: {files} files, {bytes} bytes in {:.1} s, no panic, slowest file {slowest:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(files > 0);
}

/// Lines of a group that became session lines, or errors for lines that are not JSON
/// objects, or blank-line warnings.
fn fold_accounted(folded: &Folded) -> i64 {
    let lines: i64 = folded.sessions.iter().map(|s| s.lines).sum();
    let lost = folded
        .issues
        .iter()
        .filter(|i| {
            i.message.starts_with("invalid JSON")
                || i.message.starts_with("not a JSON object")
                || i.message == "blank line ignored"
        })
        .count();
    lines + i64::try_from(lost).unwrap_or(0)
}

#[test]
fn folds_survive_damaged_input_for_a_stated_time() {
    let seconds: u64 = std::env::var("AGENTCOST_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let dir = Scratch::new("agentcost-fold-fuzz");
    let paths = [
        dir.0.join("s1.jsonl"),
        dir.0.join("s1/subagents/agent-a1.jsonl"),
    ];
    std::fs::create_dir_all(dir.0.join("s1/subagents")).expect("a temporary directory");
    let started = Instant::now();
    let (mut groups, mut bytes) = (0u64, 0u64);
    let mut runner = TestRunner::new(Config {
        cases: u32::MAX,
        failure_persistence: None,
        ..Config::default()
    });
    let seeds = agent_seeds();
    let strategy = (file(seeds), file(seeds));
    while started.elapsed() < Duration::from_secs(seconds) {
        let (first, second) = strategy.new_tree(&mut runner).expect("an input").current();
        let mut lines = 0i64;
        for (path, data) in paths.iter().zip([&first, &second]) {
            std::fs::File::create(path)
                .and_then(|mut f| f.write_all(data))
                .expect("write the input");
            let mut count = data.split(|&b| b == b'\n').count();
            if data.is_empty() || data.ends_with(b"\n") {
                count -= 1;
            }
            lines += i64::try_from(count).unwrap_or(0);
            bytes += data.len() as u64;
        }
        for agent in _scanner::agents::FOLDS {
            let began = Instant::now();
            let folded = std::panic::catch_unwind(|| (agent.fold)(&paths, true))
                .unwrap_or_else(|_| panic!("fold panicked on {first:?} and {second:?}"));
            let took = began.elapsed();
            assert!(took < Duration::from_secs(5), "hang: {took:?} on {first:?}");
            assert_eq!(
                fold_accounted(&folded),
                lines,
                "a line unaccounted for in {first:?} and {second:?}"
            );
        }
        groups += 1;
    }
    println!(
        "fold fuzz: {groups} groups, {bytes} bytes in {:.1} s, no panic",
        started.elapsed().as_secs_f64()
    );
    assert!(groups > 0);
}

/// Words the Copilot fold's rules name, and a few it does not.
const KINDS: &[&str] = &[
    "session.start",
    "session.resume",
    "session.model_change",
    "session.shutdown",
    "session.usage_checkpoint",
    "session.usage_record",
    "session.error",
    "session.task_complete",
    "session.compaction_start",
    "session.compaction_complete",
    "abort",
    "user.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "assistant.usage",
    "tool.execution_start",
    "tool.execution_complete",
    "subagent.started",
    "subagent.completed",
    "other",
];
const WORDS: &[&str] = &[
    "a",
    " [{\"tokenType\":\"input\"}]",
    "b",
    "m1",
    "auto",
    "sub-agent",
    "rewind",
    "error",
    "conversation-subagent",
    "1.0.66",
    "99999999999999999999.9.9",
    "80",
    "2.31",
    "-1e999999",
    "1e30",
    ".",
    "",
];

/// One generated event: kind, 23 optional words, 12 optional numbers, 2 optional flags.
type Raw = (
    usize,
    Vec<Option<usize>>,
    Vec<Option<i64>>,
    [Option<bool>; 2],
);

fn raw_event() -> impl Strategy<Value = Raw> {
    let number = prop_oneof![
        Just(None),
        (-3i64..5_000).prop_map(Some),
        any::<i64>().prop_map(Some),
        Just(Some(i64::MIN)),
        Just(Some(i64::MAX)),
    ];
    (
        0..KINDS.len(),
        proptest::collection::vec(proptest::option::of(0..WORDS.len()), 23),
        proptest::collection::vec(number, 19),
        [
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
        ],
    )
}

#[test]
fn copilot_fold_survives_any_events_for_a_stated_time() {
    use _scanner::agents::copilot::fold::{fold_session, Event, Metric};
    use _scanner::agents::copilot::pass::{run, Line, ObservedRows, Tokens};
    use _scanner::agents::copilot::tokens::{session_tokens, Observed, Session};
    use rustc_hash::FxHashSet;
    let known: FxHashSet<&str> = KINDS.iter().copied().take(KINDS.len() / 2).collect();
    let seconds: u64 = std::env::var("AGENTCOST_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let started = Instant::now();
    let mut sessions = 0u64;
    let mut runner = TestRunner::new(Config {
        cases: u32::MAX,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        proptest::collection::vec(raw_event(), 0..60),
        proptest::collection::vec(
            (
                0usize..60,
                proptest::option::of(0..WORDS.len()),
                any::<i64>(),
            ),
            0..4,
        ),
    );
    while started.elapsed() < Duration::from_secs(seconds) {
        let (raw, raw_metrics) = strategy.new_tree(&mut runner).expect("an input").current();
        let word = |w: &Vec<Option<usize>>, k: usize| {
            w.get(k)
                .copied()
                .flatten()
                .and_then(|i| WORDS.get(i).copied())
        };
        let events: Vec<Event> = raw
            .iter()
            .enumerate()
            .map(|(i, (kind, w, n, f))| {
                let n = |k: usize| n.get(k).copied().flatten();
                Event {
                    file: if i % 7 == 3 { "f2" } else { "f1" },
                    line: i64::try_from(i).unwrap_or(0) + 1,
                    seq: n(11)
                        .filter(|_| i % 5 == 0)
                        .unwrap_or(i64::try_from(i).unwrap_or(0)),
                    process: i32::try_from(n(0).unwrap_or(0).rem_euclid(3)).unwrap_or(0),
                    kind: KINDS.get(*kind).copied().unwrap_or("other"),
                    timestamp: n(1),
                    agent_id: word(w, 0),
                    parent_tool_call_id: word(w, 1),
                    turn_id: word(w, 2),
                    interaction_id: word(w, 3),
                    model: word(w, 4),
                    api_call_id: word(w, 5),
                    tool_call_id: word(w, 6),
                    tool_name: word(w, 7),
                    output_tokens: n(2),
                    is_autopilot: f[0],
                    initiator: word(w, 8),
                    text: word(w, 9),
                    duration_ms: n(3),
                    interaction_type: word(w, 10),
                    usage_id: word(w, 11),
                    cwd: word(w, 12),
                    repository: word(w, 13),
                    copilot_version: word(w, 14),
                    status_detail: word(w, 15),
                    total_nano_aiu: word(w, 16),
                    total_premium_requests: word(w, 17),
                    total_api_duration_ms: n(4),
                    info_type: word(w, 18),
                    is_byok: f[1],
                    nano_aiu: word(w, 19),
                    input_tokens: n(5),
                    cache_read_tokens: n(6),
                    cache_write_tokens: n(7),
                    reasoning_tokens: n(8),
                    events_file_size_bytes: n(9),
                    byte_offset: n(10),
                    content_bytes: n(12),
                    tool_request_bytes: n(13),
                    total_tokens: n(14),
                    system_tokens: n(15),
                    tool_definitions_tokens: n(16),
                    pre_compaction_tokens: n(17),
                    post_compaction_tokens: n(18),
                }
            })
            .collect();
        let metrics: Vec<Metric> = raw_metrics
            .iter()
            .map(|(line, model, n)| Metric {
                file: "f1",
                line: i64::try_from(*line).unwrap_or(0),
                model: model.and_then(|i| WORDS.get(i).copied()),
                requests: Some(*n),
                tokens: [Some(*n), None, Some(n.wrapping_neg()), Some(1), None],
            })
            .collect();
        let lines: Vec<Line> = events
            .iter()
            .zip(&raw)
            .map(|(event, (_, w, _, _))| Line {
                session: word(w, 20).unwrap_or("s"),
                event_id: word(w, 21),
                token_details: word(w, 22),
                event: *event,
            })
            .collect();
        // Per-call rows beside the log, for the token stage (the pass's on session "s", and
        // on the fold's calls below).
        let observed: Vec<Observed> = raw_metrics
            .iter()
            .map(|(line, model, n)| Observed {
                file: if line % 2 == 0 { "store" } else { "otel" },
                agent_id: model.and_then(|i| WORDS.get(i).copied()),
                tokens: [Some(*n), None, Some(n.wrapping_neg()), Some(1), None],
                nano_aiu: Some("12"),
            })
            .collect();
        let beside: ObservedRows = [("s", observed.clone())].into_iter().collect();
        let began = Instant::now();
        let pass = std::panic::catch_unwind(|| {
            run(
                &lines[..],
                &FxHashSet::default(),
                &metrics,
                &known,
                Some(&beside),
            )
        })
        .unwrap_or_else(|_| panic!("the Copilot pass panicked on {raw:?} {raw_metrics:?}"));
        assert!(began.elapsed() < Duration::from_secs(5), "hang on {raw:?}");
        let kept: usize = pass.sessions.iter().map(|s| s.rows.len()).sum();
        assert!(kept <= lines.len() && (kept == lines.len()) == pass.repeats.is_empty());
        assert_eq!(pass.placed.len(), metrics.len());
        for session in &pass.sessions {
            let fold = session.fold.as_ref();
            let fold = fold.unwrap_or_else(|| panic!("a fold in the pass panicked on {raw:?}"));
            assert_eq!(session.processes.len(), session.rows.len());
            assert_eq!(session.byte_offsets.len(), session.rows.len());
            assert!(fold.calls.iter().all(|c| c.seq >= 1));
            let Tokens::Done(tokens) = &session.tokens else {
                panic!("the token stage in the pass panicked on {raw:?} {raw_metrics:?}");
            };
            assert_eq!(tokens.calls.len(), fold.calls.len());
        }
        let began = Instant::now();
        let folded = std::panic::catch_unwind(|| fold_session(&events, &metrics))
            .unwrap_or_else(|_| panic!("the Copilot fold panicked on {raw:?} {raw_metrics:?}"));
        assert!(began.elapsed() < Duration::from_secs(5), "hang on {raw:?}");
        let s = &folded.session;
        assert_eq!(
            s.llm_calls,
            s.main_calls + s.subagent_calls + s.compaction_calls
        );
        for (i, call) in folded.calls.iter().enumerate() {
            assert_eq!(call.index, i64::try_from(i).unwrap_or(0) + 1);
        }
        for use_observed in [true, false] {
            let session = Session {
                id: "s",
                events: &events,
                calls: &folded.calls,
                row: s,
                metrics: &metrics,
                observed: &observed,
            };
            let tokens = std::panic::catch_unwind(|| session_tokens(&session, use_observed))
                .unwrap_or_else(|_| panic!("the token stage panicked on {raw:?} {raw_metrics:?}"));
            assert_eq!(tokens.calls.len(), folded.calls.len());
        }
        sessions += 1;
    }
    println!(
        "copilot fold fuzz: {sessions} sessions in {:.1} s, no panic",
        started.elapsed().as_secs_f64()
    );
    assert!(sessions > 0);
}

#[test]
fn reconstruction_fit_survives_any_numbers_for_a_stated_time() {
    use _scanner::agents::copilot::fit::{
        fit_session, regressors, CallIn, Item, Member, Part, Prior, Regressors, Target,
    };
    let seconds: u64 = std::env::var("AGENTCOST_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .min(5);
    let number = prop_oneof![
        -10.0f64..1e6,
        Just(0.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(1e300),
        Just(-1e-300),
    ];
    let strategy = (
        proptest::collection::vec((0i64..20, 0usize..3, number.clone(), any::<i64>()), 0..20),
        proptest::collection::vec((0usize..4, 0i64..20, 0usize..3), 0..30),
        proptest::collection::vec(
            (0usize..4, number.clone(), number.clone(), any::<bool>()),
            0..6,
        ),
        proptest::collection::vec((0usize..5, number.clone(), number), 0..8),
    );
    let keys = ["fixed:main|m", "fixed:task|m", "tool", "prose", "item"];
    let rows = ["in:0:m", "read:0:m", "pre:3", "stated-fixed"];
    let parts = [Part::Prompt, Part::Prefix, Part::Fixed];
    let mut runner = TestRunner::new(Config {
        cases: u32::MAX,
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    let mut fits = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        let (c, m, t, p) = strategy.new_tree(&mut runner).expect("an input").current();
        let calls: Vec<Regressors> = c
            .iter()
            .map(|&(seq, key, v, offset)| Regressors {
                seq,
                fixed_key: keys.get(key).copied().unwrap_or("?"),
                c_fixed: v,
                prompt: [v; 5],
                prefix: [v, 0.0, v, -1.0, 0.0],
                offset,
            })
            .collect();
        let members: Vec<Member> = m
            .iter()
            .map(|&(row, seq, part)| Member {
                row: rows.get(row).copied().unwrap_or("?"),
                seq,
                part: parts.get(part).copied().unwrap_or(Part::Prompt),
            })
            .collect();
        let targets: Vec<Target> = t
            .iter()
            .map(|&(row, y, sd, at_least)| Target {
                row: rows.get(row).copied().unwrap_or("?"),
                y,
                sd,
                at_least,
            })
            .collect();
        let priors: Vec<Prior> = p
            .iter()
            .map(|&(key, mean, sd)| Prior {
                param: keys.get(key).copied().unwrap_or("?"),
                mean,
                sd,
            })
            .collect();
        let fitted = std::panic::catch_unwind(|| fit_session(&calls, &members, &targets, &priors))
            .unwrap_or_else(|_| panic!("the fit panicked on {c:?} {m:?} {t:?} {p:?}"));
        assert_eq!(fitted.estimates.len(), calls.len());
        let kinds = ["main", "subagent", "compaction"];
        let events = [
            "user.message",
            "assistant.message",
            "tool.execution_complete",
            "session.compaction_complete",
        ];
        let call_ins: Vec<CallIn> = c
            .iter()
            .map(|&(seq, key, _, time)| CallIn {
                seq,
                kind: kinds.get(key).copied().unwrap_or("main"),
                agent_id: keys.get(key).copied(),
                model: keys.get(key + 1).copied(),
                start_time: Some(time),
                end_time: Some(time.wrapping_add(seq)),
                ..CallIn::default()
            })
            .collect();
        let items: Vec<Item> = c
            .iter()
            .map(|&(seq, key, _, size)| Item {
                seq,
                kind: events.get(key).copied().unwrap_or("user.message"),
                agent: keys.get(key).copied().unwrap_or("main"),
                content_bytes: size,
                tool_request_bytes: size.wrapping_neg(),
                post_compaction_tokens: Some(size),
            })
            .collect();
        let rows = std::panic::catch_unwind(|| regressors(&call_ins, &items))
            .unwrap_or_else(|_| panic!("the regressors panicked on {c:?}"));
        assert_eq!(rows.len(), call_ins.len());
        fits += 1;
    }
    println!("fit and regressors fuzz: {fits} sessions, no panic");
    assert!(fits > 0);
}
