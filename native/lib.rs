//! agentcost's native log scanner (`analytics._scanner`): JSONL agent logs in, columnar
//! EVENTS and ISSUES out, every line accounted for.
//!
//! The core (`json`, `format`, `copilot`, `table`, `scan`, `compact`, and `model_metrics`,
//! which decodes the shutdowns' per-model totals) is safe Rust that cannot panic on any input
//! and builds without Python; `python` is the PyO3 binding, which
//! hands the columns to polars through the Arrow C data interface. `solve` is a small
//! numeric kernel of the prompt reconstruction that lives here for the same reason: speed
//! without a Python object per value. `calls`, `claude` and `codex` fold Claude Code and Codex
//! CLI logs into agent-agnostic calls, sessions and issues (one call per API request);
//! `copilot_fold` folds each Copilot session's ordered events into its calls and sessions row,
//! `copilot_tokens` gives those calls their tokens and the session its sums and fit, and
//! `copilot_pass` goes from a group's scanned lines to both in one pass. Their maps hash
//! with `rustc_hash` (FxHash).

pub mod calibrate;
pub mod calls;
pub mod claude;
pub mod codex;
pub mod compact;
pub mod copilot;
pub mod copilot_fold;
pub mod copilot_pass;
pub mod copilot_tokens;
pub mod fit;
pub mod format;
pub mod json;
pub mod model_metrics;
pub mod scan;
pub mod solve;
pub mod table;

#[cfg(feature = "python")]
mod python;
