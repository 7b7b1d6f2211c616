//! One folder per agent: its log format and the rules that fold its records into the core's
//! tables. `copilot` goes through the scanner (`read::scan`) and its own one-pass pipeline;
//! the others fold through `fold`, one call per API request, and are listed in [`FOLDS`]: the
//! one place the crate names them, so an agent is its folder and its line there.

pub mod claude_code;
pub mod codex;
pub mod copilot;

use std::path::PathBuf;

use crate::fold::Folded;

/// An agent's fold: one group of files (those a call may be copied between) into its calls,
/// sessions, issues and, when asked, context items.
pub type Fold = fn(&[PathBuf], bool) -> Folded;

/// Every agent folded one call per API request, by its id (the `agent` column; the Python
/// registry's `Agent.id`).
pub const FOLDS: &[(&str, Fold)] = &[
    ("claude-code", claude_code::fold_with),
    ("codex", codex::fold_with),
];
