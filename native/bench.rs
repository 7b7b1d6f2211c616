//! The scanner alone on a tree of logs, without Python: CPU and wall seconds per run, and a
//! digest of everything it produced (every value of every column, the issues, the per-model
//! totals, the failures), so a change to the scanner can be timed and checked for identical
//! output in seconds:
//!
//! ```text
//! cargo run --release --example scan_bench -- TREE [RUNS [BLOCK_BYTES]] [--reference]
//! ```
//!
//! Files are the tree's `*.jsonl`, sorted by path, each with its parent directory's name as
//! hint (as discovery names `events.jsonl` sessions).
//!
//! With `--reference`, the same files are then read by two maintained JSON libraries that
//! validate every line in full and keep nothing (serde_json into `IgnoredAny`, sonic-rs into
//! `IgnoredAny`), on the same threads (rayon, a file at a time), and the last line gives the
//! scanner's CPU time against the faster of them: the scanner does more (every field a
//! column, decoded string lengths, an issue with its line and message for every bad line),
//! and the ratio says what that costs over the floor of reading JSON at all.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use _scanner::agents::copilot::format::COPILOT;
use _scanner::read::scan::{Batch, FileSpec, Scanner, BLOCK};
use _scanner::read::table::{Bits, Column};

fn logs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            logs(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

/// CPU seconds of this process so far (user + system, all threads), from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn digest(batches: &mut [Batch]) -> (usize, usize, u64) {
    let mut h = DefaultHasher::new();
    let mut rows = 0;
    let mut issues = 0;
    for batch in batches {
        batch.events.pad(); // an all-null column may be left empty
        rows += batch.events.rows();
        issues += batch.issues.len();
        for (name, column) in batch.events.names.iter().zip(&batch.events.columns) {
            name.hash(&mut h);
            // Values as 64-bit integers and validity as a flag per row, whatever the column
            // stores them in, so digests stay comparable across layouts.
            let flags = |bits: &Bits| (0..bits.len()).map(|i| bits.get(i)).collect::<Vec<_>>();
            match column {
                Column::Str(c) => (0..c.len()).for_each(|row| c.get(row).hash(&mut h)),
                Column::Int(c) | Column::Time(c) => {
                    c.values.hash(&mut h);
                    flags(&c.valid).hash(&mut h);
                }
                Column::Int32(c) => {
                    c.values
                        .iter()
                        .map(|&v| i64::from(v))
                        .collect::<Vec<_>>()
                        .hash(&mut h);
                    flags(&c.valid).hash(&mut h);
                }
                Column::Bool(c) => {
                    flags(&c.values).hash(&mut h);
                    flags(&c.valid).hash(&mut h);
                }
            }
        }
        format!("{:?}{:?}{:?}", batch.issues, batch.totals, batch.failures).hash(&mut h);
    }
    (rows, issues, h.finish())
}

/// Every non-empty line of every file parsed by `parse` (true: valid JSON); the number of
/// lines and of invalid ones. Files are read whole, a file per task, on rayon's threads.
fn validate(files: &[FileSpec], parse: fn(&[u8]) -> bool) -> (usize, usize) {
    files
        .par_iter()
        .map(|file| {
            let Ok(bytes) = std::fs::read(&file.path) else {
                return (0, 0);
            };
            let mut counts = (0, 0);
            for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                counts.0 += 1;
                if !parse(line) {
                    counts.1 += 1;
                }
            }
            counts
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

fn serde_json_valid(line: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
}

fn sonic_rs_valid(line: &[u8]) -> bool {
    sonic_rs::from_slice::<serde::de::IgnoredAny>(line).is_ok()
}

/// The median of `runs` timings of `work`: (wall, cpu) seconds.
fn median_of(runs: usize, mut work: impl FnMut() -> String) -> (f64, f64, String) {
    let mut times = Vec::new();
    let mut said = String::new();
    for _ in 0..runs.max(1) {
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        said = work();
        times.push((wall.elapsed().as_secs_f64(), cpu_seconds() - cpu));
    }
    times.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (wall, cpu) = times[times.len() / 2];
    (wall, cpu, said)
}

fn main() {
    let reference = std::env::args().any(|a| a == "--reference");
    let mut args = std::env::args().skip(1).filter(|a| a != "--reference");
    let tree = PathBuf::from(args.next().unwrap_or_else(|| ".".into()));
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(3);
    let block: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(BLOCK);
    let mut paths = Vec::new();
    logs(&tree, &mut paths);
    paths.sort();
    let mut bytes = 0;
    let files: Vec<FileSpec> = paths
        .into_iter()
        .map(|path| {
            let size = std::fs::metadata(&path).map(|m| m.len()).ok();
            bytes += size.unwrap_or(0);
            let hint = path
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            FileSpec { path, hint, size }
        })
        .collect();
    let scanner = Scanner::new(COPILOT);
    let gb = bytes as f64 / 1e9;
    let mut scans = Vec::new();
    for _ in 0..runs {
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        let mut batches = scanner.scan(&files, 16 << 20, block);
        let (wall, cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        scans.push(cpu);
        let (rows, issues, digest) = digest(&mut batches);
        println!(
            "{} files, {gb:.2} GB: wall {wall:.2} s, cpu {cpu:.2} s ({:.2} s/GB); {rows} rows, {issues} issues, digest {digest:016x}",
            files.len(),
            cpu / gb
        );
    }
    if !reference {
        return;
    }
    scans.sort_by(f64::total_cmp);
    let scan = scans[scans.len() / 2];
    let mut best = f64::INFINITY;
    for (name, parse) in [
        ("serde_json", serde_json_valid as fn(&[u8]) -> bool),
        ("sonic-rs", sonic_rs_valid),
    ] {
        let (wall, cpu, said) = median_of(runs, || {
            let (lines, invalid) = validate(&files, parse);
            format!("{lines} lines, {invalid} invalid")
        });
        best = best.min(cpu);
        println!(
            "reference {name} (every line validated): wall {wall:.2} s, cpu {cpu:.2} s ({:.2} s/GB); {said}",
            cpu / gb
        );
    }
    println!(
        "scanner vs full validation: {:.2}x CPU (scanner {scan:.2} s, the faster reference {best:.2} s)",
        scan / best
    );
}
