//! Bytes to fields, for any agent: the JSON tokenizer (`json`), one line's hygiene (`line`:
//! byte order marks, bad UTF-8, NULs, blank lines, and the words of a line's issues), a log
//! format as data (`format`), the scanner that makes every line of every file a row or an
//! issue (`scan`), the Arrow column builders (`table`) and the compact re-serialisation of a
//! validated value (`compact`). Nothing here knows an agent: an agent's JSONL log is a
//! `format::Format`.

pub mod compact;
pub mod format;
pub mod heads;
pub mod json;
pub mod line;
pub mod scan;
pub mod table;
