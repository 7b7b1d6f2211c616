//! The core's neutral item kinds (`analytics/core/items.py` says what each means): the
//! `item` column of the folds' items. Each agent maps its own records to them; the core
//! never reads an agent's record types.

/// A message given to the model as the user's turn.
pub const PROMPT: &str = "prompt";
/// The model's own output kept in context: text, reasoning, tool requests.
pub const REPLY: &str = "reply";
/// Names the tool of a call (no bytes): the `TOOL_OUTPUT` of the same call is labelled by it.
pub const TOOL_CALL: &str = "tool_call";
/// A tool's result returned to the model.
pub const TOOL_OUTPUT: &str = "tool_output";
/// System prompt or instructions text.
pub const SYSTEM: &str = "system";
/// A compaction's summary, which replaces the items before it.
pub const COMPACTION: &str = "compaction";
/// The agent says its task is done (no bytes).
pub const TASK_COMPLETE: &str = "task_complete";
