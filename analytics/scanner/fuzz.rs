//! A bounded fuzz run of the scanner (no nightly toolchain or libFuzzer needed): for a stated
//! time (`AGENTCOST_FUZZ_SECONDS`, default 10), files made of random bytes, of damaged real log
//! lines and of generated JSON are scanned; the scanner must not panic (a panic fails the
//! test: `scan` would otherwise turn it into an issue and hide it), must not hang (each file is
//! timed), and must account for every line: one row, or an error, or a blank-line warning.
//! Each file is also scanned in two goes (`scan_from`, cut at a random line end): the two
//! account for the same lines, but a last line without its newline, which waits.
//! proptest drives the inputs; the run prints how many files and bytes it scanned.

use std::io::Write;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

use _scanner::copilot::COPILOT;
use _scanner::scan::{Batch, FileSpec, Resume, Scanner};

const SEEDS: &[&[u8]] = &[
    br#"{"type":"session.start","data":{"sessionId":"s1","copilotVersion":"1.0.80","context":{"cwd":"/x"}},"id":"e1","timestamp":"2026-05-01T10:00:00.000Z"}"#,
    br#"{"type":"assistant.message","data":{"content":"a\nb\u00e9","toolRequests":[{"name":"bash","arguments":{"cmd":"ls -la","n":1.50}}],"outputTokens":12},"id":"e2","timestamp":"2026-05-01T10:00:01.000Z"}"#,
    br#"{"type":"tool.execution_complete","data":{"toolCallId":"t","success":true,"result":{"content":"ok","detailedContent":"x"}},"timestamp":"2026-05-01T10:00:02Z"}"#,
    br#"{"type":"session.shutdown","data":{"shutdownType":"routine","totalNanoAiu":305426000.0,"modelMetrics":{"m":{"requests":{"count":2,"cost":1},"usage":{"inputTokens":10}}},"tokenDetails":[{"tokenType":"input","tokenCount":15}]},"timestamp":"2026-05-01T10:00:03Z"}"#,
    br#"{"type":"session.usage_record","data":{"usage":{"model":"m","inputTokens":"12","isByok":"TRUE","provider":{"id":"copilot"},"accounting":{"usageId":"u"},"copilotUsage":{"totalNanoAiu":1e3,"tokenDetails":[]}}},"timestamp":"2026-05-01T10:00:04+02:00"}"#,
];

/// A seed line damaged: truncated, NULs inserted, bits flipped, bytes inserted.
fn damaged() -> impl Strategy<Value = Vec<u8>> {
    (
        0..SEEDS.len(),
        proptest::collection::vec((0usize..4, any::<usize>(), any::<u8>()), 0..6),
    )
        .prop_map(|(seed, edits)| {
            let mut line = SEEDS.get(seed).copied().unwrap_or(b"").to_vec();
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

fn file() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        damaged(),
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

#[test]
fn scanner_survives_damaged_input_for_a_stated_time() {
    let seconds: u64 = std::env::var("AGENTCOST_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let scanner = Scanner::new(COPILOT);
    let dir = std::env::temp_dir().join(format!("agentcost-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("events.jsonl");
    let started = Instant::now();
    let (mut files, mut bytes, mut slowest) = (0u64, 0u64, Duration::ZERO);
    let mut runner = TestRunner::new(Config {
        cases: u32::MAX,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = file();
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
        }
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
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "fuzz: {files} files, {bytes} bytes in {:.1} s, no panic, slowest file {slowest:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(files > 0);
}
