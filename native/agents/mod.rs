//! One folder per agent: its log format and the rules that fold its records into the core's
//! tables. `copilot` goes through the scanner (`read::scan`) and its own one-pass pipeline;
//! the others fold through `fold`, one call per API request, and are listed in [`FOLDS`]: the
//! one place the crate names them, so an agent is its folder and its line there.

pub mod claude_code;
pub mod codex;
pub mod copilot;
pub mod gemini_cli;
pub mod kimi;
pub mod pi;

use std::path::PathBuf;

use crate::fold::Folded;

/// An agent folded one call per API request, as the crate knows it.
pub struct Native {
    /// Its id: the `agent` column, the Python registry's `Agent.id`.
    pub id: &'static str,
    /// One group of files (those a call may be copied between) into its calls, sessions,
    /// issues and, when asked (the flag), context items.
    pub fold: fn(&[PathBuf], bool) -> Folded,
    /// Lines of its format for the fuzzers (`native/fuzz.rs`).
    pub seeds: &'static [&'static [u8]],
}

/// Every agent folded one call per API request.
pub const FOLDS: &[Native] = &[
    Native {
        id: "claude-code",
        fold: claude_code::fold_with,
        seeds: claude_code::SEEDS,
    },
    Native {
        id: "codex",
        fold: codex::fold_with,
        seeds: codex::SEEDS,
    },
    Native {
        id: gemini_cli::AGENT,
        fold: gemini_cli::fold_with,
        seeds: gemini_cli::SEEDS,
    },
    Native {
        id: "pi",
        fold: pi::fold_with,
        seeds: pi::SEEDS,
    },
    // OpenClaw writes pi's format in its own home: pi's fold, its own agent id
    Native {
        id: "openclaw",
        fold: pi::fold_openclaw,
        seeds: &[],
    },
    Native {
        id: "kimi",
        fold: kimi::fold_with,
        seeds: kimi::SEEDS,
    },
];
