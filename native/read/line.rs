//! One line's hygiene, for every agent: what the scanner (`scan`) and the per-call folds
//! (`fold::read_file`) do to a raw line before it is parsed, and the words of its issues. One
//! copy, so a line reads alike in every agent's log: a line of U+00A0 is blank in a Copilot log
//! and in a Claude Code one.
//!
//! In order: a byte order mark opening the line is dropped (Windows tools write one at the
//! start of a file, and `cat` carries it to the start of a line; JSON lets a parser ignore it,
//! RFC 8259, 8.1), bytes that are not UTF-8 are replaced, NUL bytes left by a crash are
//! removed, each with a warning; a line of Unicode White_Space alone (Python's `str.isspace`)
//! is blank, a warning and nothing else; trailing carriage returns are cut.

use std::borrow::Cow;

use crate::read::json::{self, Kind};

/// UTF-8's byte order mark (U+FEFF).
pub const BOM: &[u8] = b"\xEF\xBB\xBF";
/// The warnings of [`clean`].
pub const BOM_IGNORED: &str = "byte order mark (U+FEFF) at the start of the line ignored";
pub const NOT_UTF8: &str = "line is not valid UTF-8; bad bytes replaced";
pub const NUL_REMOVED: &str = "NUL bytes removed (left by a crash)";
pub const BLANK: &str = "blank line ignored";

/// The text of a raw line (its newline already cut) to parse, each repair noted as a warning
/// through `note`; None for a blank line (noted too). `known_clean`: the caller has checked
/// that the bytes are UTF-8 without NULs (the scanner checks a whole block at once for
/// UTF-8, and cleans a line again, unchecked, if it is not JSON and has a NUL: a line with a
/// NUL is never JSON, nor blank).
pub fn clean<'a>(
    raw: &'a [u8],
    known_clean: bool,
    mut note: impl FnMut(&'static str),
) -> Option<Cow<'a, [u8]>> {
    let raw = match raw.strip_prefix(BOM) {
        Some(rest) => {
            note(BOM_IGNORED);
            rest
        }
        None => raw,
    };
    let mut text: Cow<[u8]> = Cow::Borrowed(raw);
    if !known_clean && simdutf8::basic::from_utf8(raw).is_err() {
        note(NOT_UTF8);
        text = Cow::Owned(String::from_utf8_lossy(raw).into_owned().into_bytes());
    }
    if !known_clean && memchr::memchr(0, &text).is_some() {
        note(NUL_REMOVED);
        text = Cow::Owned(text.iter().copied().filter(|&b| b != 0).collect());
    }
    if is_blank(&text) {
        note(BLANK);
        return None;
    }
    let end = text.len() - text.iter().rev().take_while(|&&b| b == b'\r').count();
    Some(match text {
        Cow::Borrowed(bytes) => Cow::Borrowed(bytes.get(..end).unwrap_or(bytes)),
        Cow::Owned(mut bytes) => {
            bytes.truncate(end);
            Cow::Owned(bytes)
        }
    })
}

/// The error of a line that is not JSON: the tokenizer's message, with the column and
/// character it stopped at, and a hint where the line does not end its object (a line cut
/// off by a crash or a copy taken while it was written).
pub fn invalid_json(line: &[u8], error: &json::Error) -> String {
    let text = String::from_utf8_lossy(line);
    let torn = if text.trim_end_matches(python_space).ends_with('}') {
        ""
    } else {
        " (truncated line?)"
    };
    let at = json::char_index(line, error.at);
    format!(
        "invalid JSON{torn}: {}: line 1 column {} (char {at})",
        error.message,
        at + 1
    )
}

/// The error of a line that is JSON but not an object.
pub fn not_an_object(kind: Kind) -> String {
    format!("not a JSON object: {}", python_type(kind))
}

/// Whether UTF-8 text is only Unicode White_Space (a line's first other byte is nearly always
/// ASCII, which settles it without decoding).
fn is_blank(text: &[u8]) -> bool {
    match text
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C))
    {
        None => true,
        Some(b) if b.is_ascii() => false,
        Some(_) => String::from_utf8_lossy(text)
            .chars()
            .all(char::is_whitespace),
    }
}

/// Python's `str.isspace` (for the "truncated line?" hint): Unicode White_Space and the four
/// information separators U+001C..U+001F.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's name of a JSON value's type, for "not a JSON object" messages.
fn python_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Array => "list",
        Kind::Str => "str",
        Kind::Int => "int",
        Kind::Float => "float",
        Kind::True | Kind::False => "bool",
        Kind::Object => "dict",
        Kind::Null | Kind::Missing => "NoneType",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cleaned(raw: &[u8]) -> (Option<Vec<u8>>, Vec<&'static str>) {
        let mut notes = Vec::new();
        let text = clean(raw, false, |n| notes.push(n)).map(Cow::into_owned);
        (text, notes)
    }

    #[test]
    fn repairs_are_warnings_in_order() {
        let (text, notes) = cleaned(b"\xEF\xBB\xBF{\"a\":\"\xff\"}\x00\r\r");
        assert_eq!(text.as_deref(), Some("{\"a\":\"\u{FFFD}\"}".as_bytes()));
        assert_eq!(notes, [BOM_IGNORED, NOT_UTF8, NUL_REMOVED]);
    }

    #[test]
    fn a_line_of_unicode_space_is_blank() {
        for raw in [
            &b""[..],
            b" \t\r",
            "\u{a0}".as_bytes(),
            "\u{2003} \u{3000}".as_bytes(),
        ] {
            assert_eq!(cleaned(raw), (None, vec![BLANK]), "{raw:?}");
        }
        assert_eq!(cleaned(b"\x00\x00").1, [NUL_REMOVED, BLANK]);
        assert!(cleaned("\u{a0}x".as_bytes()).0.is_some());
    }

    #[test]
    fn a_clean_line_is_borrowed() {
        let raw = b"{\"type\":\"x\"}\r";
        let text = clean(raw, true, |_| panic!("no note"));
        assert!(matches!(text, Some(Cow::Borrowed(b"{\"type\":\"x\"}"))));
    }

    #[test]
    fn the_hint_of_a_cut_line() {
        let error = json::Error {
            message: "Expecting ',' delimiter",
            at: 5,
        };
        assert!(invalid_json(b"{\"a\":1", &error).contains("(truncated line?)"));
        assert!(!invalid_json("{\"a\" 1}\u{2003}".as_bytes(), &error).contains("truncated"));
        assert_eq!(not_an_object(Kind::Array), "not a JSON object: list");
    }
}
