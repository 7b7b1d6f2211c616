//! agentcost's native engine (`analytics._scanner`): agents' log bytes in, the core's columnar
//! tables out (EVENTS, CALLS, SESSIONS, ISSUES), every line accounted for.
//!
//! The folders show the flow, as the Python package's do:
//! - `read`: bytes to fields. The strict JSON tokenizer guided by a table of wanted fields
//!   (`json`), a log format as data (`format`), the scanner that turns files into columns or
//!   issues (`scan`), the Arrow column builders (`table`) and compact re-serialisation
//!   (`compact`). It knows no agent.
//! - `fold`: what every per-call fold shares: reading a file's lines into parsed fields, and
//!   the agent-agnostic CALLS, SESSIONS and ISSUES rows with their Arrow columns.
//! - `agents/<agent>`: one folder per agent, its format and its rules: `copilot` (the events
//!   format, its fold, token stage, fit and one-pass pipeline), `claude_code`, `codex`.
//! - `python`: the PyO3 binding and the Arrow C data interface, the only code that knows
//!   Python; built with the `python` feature (maturin turns it on).
//!
//! Everything outside `python` is safe Rust that cannot panic on any input and builds and is
//! tested without Python. Maps hash with `rustc_hash` (FxHash): their keys are short strings
//! and numbers from local logs.

pub mod agents;
pub mod fold;
pub mod read;

#[cfg(feature = "python")]
mod python;
