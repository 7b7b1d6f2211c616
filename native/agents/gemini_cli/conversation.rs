//! The conversation a session holds as a recording is replayed (see [`Conversation`]).
#![forbid(unsafe_code)]

/// The conversation a file's session holds at the moment, as Gemini CLI replays it: each
/// prompt's and reply's id and context bytes, in order. When messages leave it (a
/// `$rewindTo`, or a checkpoint that no longer lists them: a rewind, `/compress`), the model
/// is sent only what is left: the fold notes a `compaction` item sized as
/// the conversation left (the messages a replacing checkpoint lists add no items of their
/// own), so the context attribution stops charging later calls for what they were not sent.
#[derive(Default)]
pub struct Conversation {
    messages: Vec<(String, i64)>,
    /// The latest stamp read in the file (a rewind line has none of its own).
    pub last_time: Option<i64>,
}

impl Conversation {
    /// A new session's conversation, starting at `start`.
    pub fn starting(start: Option<i64>) -> Conversation {
        Conversation {
            messages: Vec::new(),
            last_time: start,
        }
    }

    /// A prompt or reply written (again): its context bytes as of this copy.
    pub fn add(&mut self, id: &str, bytes: i64) {
        match self.messages.iter_mut().find(|(known, _)| known == id) {
            Some(kept) => kept.1 = bytes,
            None => self.messages.push((id.to_owned(), bytes)),
        }
    }

    /// `$rewindTo id`: whether messages left.
    pub fn rewind(&mut self, id: &str) -> bool {
        let at = self.messages.iter().position(|(known, _)| known == id);
        at.is_some_and(|at| {
            self.messages.truncate(at);
            true
        })
    }

    /// A checkpoint lists the conversation: whether a message left it.
    pub fn replace(&mut self, listed: Vec<(String, i64)>) -> bool {
        let left = self
            .messages
            .iter()
            .any(|(id, _)| !listed.iter().any(|(kept, _)| kept == id));
        self.messages = listed;
        left
    }

    /// The context bytes of the conversation.
    pub fn bytes(&self) -> i64 {
        self.messages
            .iter()
            .fold(0, |sum, (_, bytes)| sum.saturating_add(*bytes))
    }
}
