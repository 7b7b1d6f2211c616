//! The scanner alone on a tree of logs, without Python: CPU and wall seconds per run, and a
//! digest of everything it produced (every value of every column, the issues, the per-model
//! totals, the failures), so a change to the scanner can be timed and checked for identical
//! output in seconds:
//!
//! ```text
//! cargo run --release --example scan_bench -- TREE [RUNS [BLOCK_BYTES]]
//! ```
//!
//! Files are the tree's `*.jsonl`, sorted by path, each with its parent directory's name as
//! hint (as discovery names `events.jsonl` sessions).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

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

fn main() {
    let mut args = std::env::args().skip(1);
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
    for _ in 0..runs {
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        let mut batches = scanner.scan(&files, 16 << 20, block);
        let (wall, cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        let (rows, issues, digest) = digest(&mut batches);
        println!(
            "{} files, {gb:.2} GB: wall {wall:.2} s, cpu {cpu:.2} s ({:.2} s/GB); {rows} rows, {issues} issues, digest {digest:016x}",
            files.len(),
            cpu / gb
        );
    }
}
