//! A legacy chat document (`session-*.json`, before April 2026): one JSON object, read as
//! its header followed by its messages, each at the line it starts on.
#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use super::record::Record;
use super::{Current, Fold, Place};
use crate::fold::{self, Line};
use crate::read::json::{self, Fields, Kind};
use crate::read::line as hygiene;

impl Fold {
    /// A legacy chat document (`session-*.json`): one JSON object, its header fields and
    /// `messages[]`. Its lines count as the session's lines read.
    pub(super) fn document(&mut self, file: usize, path: &Path, place: &Place) {
        let raw = match std::fs::read(path) {
            Ok(raw) => raw,
            Err(error) => {
                let message = format!("cannot read the file: {}", error.kind()).to_lowercase();
                self.out.issues.push(crate::read::scan::Issue {
                    file,
                    line: None,
                    severity: "error",
                    message,
                });
                return;
            }
        };
        let lines = raw.split(|&b| b == b'\n').count() - usize::from(raw.ends_with(b"\n"));
        let lines = i64::try_from(lines).unwrap_or(i64::MAX);
        let mut notes = Vec::new();
        let text = hygiene::clean(&raw, false, |warning| notes.push(warning));
        for note in notes {
            self.out.issue(file, 1, "warning", note.into());
        }
        let Some(text) = text else { return };
        let schemas = Arc::clone(&self.schemas);
        let mut fields = Fields::new(&schemas.line);
        let line_of = |at: usize| -> i64 {
            let before = text.get(..at).unwrap_or(&text);
            i64::try_from(memchr::memchr_iter(b'\n', before).count() + 1).unwrap_or(i64::MAX)
        };
        match json::parse(&text, &schemas.line, &mut fields) {
            Ok(Kind::Object) => {}
            Ok(kind) => {
                self.out
                    .issue(file, 1, "error", hygiene::not_an_object(kind));
                return;
            }
            Err(error) => {
                let message = hygiene::invalid_json(&text, &error);
                self.out.issue(file, line_of(error.at), "error", message);
                return;
            }
        }
        let top = Line {
            text: &text,
            number: 1,
            fields: &fields,
        };
        let Record::Header {
            session,
            start,
            subagent,
        } = schemas.record(&top)
        else {
            let message = "not a Gemini CLI chat document (no sessionId); ignored";
            self.out.issue(file, 1, "error", message.into());
            return;
        };
        if !schemas.is_document(&top) {
            let message = "chat document without projectHash or a messages list";
            self.out.issue(file, 1, "warning", message.into());
        }
        let current = Current::new(session, subagent, place.parent.as_deref());
        self.saw(&current, file, start);
        let mut item_fields = Fields::new(&schemas.line);
        for raw in schemas.listed(&top) {
            let at = (raw.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
            let number = line_of(at);
            if !matches!(
                json::parse(raw, &schemas.line, &mut item_fields),
                Ok(Kind::Object)
            ) {
                let message = "message is not a JSON object; ignored".to_owned();
                self.out.issue(file, number, "warning", message);
                continue;
            }
            let item = Line {
                text: raw,
                number,
                fields: &item_fields,
            };
            if matches!(schemas.record(&item), Record::Message) {
                let message = schemas.message(&item);
                self.saw(&current, file, message.time);
                self.message(&current, file, (number, 0), message, false);
            }
        }
        let session = fold::session_of(&mut self.out.sessions, &mut self.index, &current.session);
        session.lines = lines; // a part reads one file: its lines are the document's
    }
}
