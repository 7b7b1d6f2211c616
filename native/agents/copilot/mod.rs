//! GitHub Copilot CLI: the `events.jsonl` format (`format`), the per-session fold into calls
//! and a SESSIONS row (`fold`), the token stage (`tokens`) with its fit (`fit`, solved by
//! `solve`) and calibration to the shutdown totals (`calibrate`), the shutdowns' per-model
//! totals (`model_metrics`), and the one pass from a group's scanned lines to all of these
//! (`pass`).

pub mod calibrate;
pub mod fit;
pub mod fold;
pub mod format;
pub mod model_metrics;
pub mod pass;
pub mod solve;
pub mod tokens;
