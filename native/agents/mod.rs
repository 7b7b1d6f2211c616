//! One folder per agent: its log format and the rules that fold its records into the core's
//! tables. `copilot` goes through the scanner (`read::scan`) and its own one-pass pipeline;
//! `claude_code` and `codex` fold through `fold`, one call per API request.

pub mod claude_code;
pub mod codex;
pub mod copilot;
