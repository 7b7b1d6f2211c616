//! A log format as data: the fields to find in each line and the rules that turn them into
//! columns. The scanner (`scan.rs`) knows nothing of Copilot; a second agent's JSONL log is a
//! second [`Format`].
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::read::json::{unescape, Kind, Value};

/// How a column's value is made from the fields of a line.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// The text of the first present (non-null) field.
    Text(&'static [&'static str]),
    /// As `Text`, for a value repeated on many rows (stored once per batch).
    Shared(&'static [&'static str]),
    /// As `Text`, cut to this many characters.
    Limited(&'static [&'static str], usize),
    /// The first present field as a whole number: a number or numeric text, truncated;
    /// null when it is not a finite number in 64 bits.
    Int(&'static [&'static str]),
    /// `true` when the field's text is `true` in any case; null when absent.
    Flag(&'static [&'static str]),
    /// As `Flag`, false when absent.
    FlagOrFalse(&'static [&'static str]),
    /// An ISO-8601 time with a zone, as UTC milliseconds.
    Time(&'static [&'static str]),
    /// On lines of the given types, the first present of their fields as a JSON path lookup
    /// gives it (of shape `Any`: a string's text, anything else's compact JSON).
    MatchedOn(&'static [(&'static str, &'static [&'static str])]),
    /// As `MatchedOn`, its length in bytes.
    MeasuredOn(&'static [(&'static str, &'static [&'static str])]),
    /// Bytes of text the event adds to the conversation (format-specific, see `Format`).
    ContentBytes,
}

/// The dtype of a column built by a [`Rule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    Str,
    Int,
    Bool,
    Time,
}

impl Rule {
    pub fn dtype(self) -> Dtype {
        match self {
            Rule::Text(_) | Rule::Shared(_) | Rule::Limited(..) | Rule::MatchedOn(_) => Dtype::Str,
            Rule::Int(_) | Rule::MeasuredOn(_) | Rule::ContentBytes => Dtype::Int,
            Rule::Flag(_) | Rule::FlagOrFalse(_) => Dtype::Bool,
            Rule::Time(_) => Dtype::Time,
        }
    }

    /// The field paths the rule reads, first present first.
    pub fn paths(self) -> &'static [&'static str] {
        match self {
            Rule::Text(p)
            | Rule::Shared(p)
            | Rule::Limited(p, _)
            | Rule::Int(p)
            | Rule::Flag(p)
            | Rule::FlagOrFalse(p)
            | Rule::Time(p) => p,
            Rule::MatchedOn(_) | Rule::MeasuredOn(_) | Rule::ContentBytes => &[],
        }
    }

    /// The (event type, field paths) pairs of a type-dependent rule.
    pub fn by_type(self) -> &'static [(&'static str, &'static [&'static str])] {
        match self {
            Rule::MatchedOn(t) | Rule::MeasuredOn(t) => t,
            _ => &[],
        }
    }
}

/// Which event types add text to the conversation, and from which fields.
#[derive(Clone, Copy, Debug)]
pub struct Content {
    /// Types whose first present field of `text` is their content.
    pub text_types: &'static [&'static str],
    pub text: &'static [&'static str],
    /// The assistant's message type: the sum of `assistant` fields (absent counts 0).
    pub assistant_type: &'static str,
    pub assistant: &'static [&'static str],
    /// Measured extras by type: (type, first present of paths), added to the content.
    pub extras: &'static [(&'static str, &'static [&'static str])],
}

/// One log format: its fields (in the order shape warnings name them), its columns.
#[derive(Clone, Copy, Debug)]
pub struct Format {
    pub fields: &'static [(&'static str, crate::read::json::Shape)],
    pub columns: &'static [(&'static str, Rule)],
    /// The event type field; a line without one is an error.
    pub type_field: &'static str,
    pub time_field: &'static str,
    /// The field with each event's own id, and the column that holds it.
    pub id_field: &'static str,
    pub id_column: &'static str,
    /// The type that starts a session, and the field with its id.
    pub start_type: &'static str,
    pub session_field: &'static str,
    /// The type that starts another process of the same session.
    pub resume_type: &'static str,
    /// Per-model totals handed to Python as JSON text: (type, field).
    pub totals: (&'static str, &'static str),
    pub content: Content,
}

/// The text of a scalar value in `line`: a string decoded, a number as polars prints one, a
/// boolean as `true`/`false`; None for null, absent and containers.
pub fn text<'a>(line: &'a [u8], value: Value) -> Option<Cow<'a, [u8]>> {
    let raw = line.get(value.start..value.end)?;
    match value.kind {
        Kind::Str => {
            let body = raw.get(1..raw.len().saturating_sub(1))?;
            Some(if value.escaped {
                Cow::Owned(unescape(body))
            } else {
                Cow::Borrowed(body)
            })
        }
        Kind::Int => Some(Cow::Borrowed(raw)),
        Kind::Float => {
            let number: f64 = std::str::from_utf8(raw).ok()?.parse().ok()?;
            Some(Cow::Owned(number.to_string().into_bytes()))
        }
        Kind::True => Some(Cow::Borrowed(b"true")),
        Kind::False => Some(Cow::Borrowed(b"false")),
        Kind::Null | Kind::Missing | Kind::Object | Kind::Array => None,
    }
}

/// The byte length of [`text`] (a string's decoded length is known from the scan: nothing
/// is decoded).
pub fn text_len(line: &[u8], value: Value) -> Option<usize> {
    match value.kind {
        Kind::Str => Some(value.decoded_len),
        _ => text(line, value).map(|t| t.len()),
    }
}

/// A value as a whole number (see [`Rule::Int`]).
pub fn whole(line: &[u8], value: Value) -> Option<i64> {
    let text = text(line, value)?;
    let number: f64 = std::str::from_utf8(&text).ok()?.parse().ok()?;
    // Doubles in [-2^63, 2^63) truncate into an i64; polars' cast gives null outside.
    if number.is_finite() && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&number)
    {
        // The range check above makes this conversion exact and in range.
        #[allow(clippy::cast_possible_truncation)]
        Some(number.trunc() as i64)
    } else {
        None
    }
}

/// A value as a flag (see [`Rule::Flag`]).
pub fn flag(line: &[u8], value: Value) -> Option<bool> {
    text(line, value).map(|t| t.eq_ignore_ascii_case(b"true"))
}

/// The byte length a JSON path lookup gives for a value (a string's decoded text, anything
/// else's compact JSON); None for null and absent values.
pub fn measured(value: Value) -> Option<usize> {
    match value.kind {
        Kind::Missing | Kind::Null => None,
        Kind::Str => Some(value.decoded_len),
        _ => value.measured,
    }
}

/// The first `n` characters of UTF-8 text.
pub fn first_chars(text: &[u8], n: usize) -> &[u8] {
    let mut chars = 0;
    for (i, &b) in text.iter().enumerate() {
        if b & 0xC0 != 0x80 {
            if chars == n {
                return text.get(..i).unwrap_or(text);
            }
            chars += 1;
        }
    }
    text
}

/// UTC milliseconds of `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, the form Copilot writes.
pub fn timestamp(text: &[u8]) -> Option<i64> {
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        if part.is_empty() {
            return None;
        }
        part.iter().try_fold(0i64, |n, &b| {
            b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0'))
        })
    };
    let sep = |at: usize, c: u8| text.get(at) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if year < 1 || !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0;
    if sep(i, b'.') {
        let digits = text
            .get(i + 1..)?
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if !(1..=9).contains(&digits) {
            return None;
        }
        let fraction = num(i + 1..i + 1 + digits.min(3))?;
        millis = fraction * [100, 10, 1][digits.min(3) - 1];
        i += 1 + digits;
    }
    let offset_minutes = match text.get(i..)? {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = h * 60 + m;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(b"1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            timestamp(b"2026-05-01T10:00:00.123456Z"),
            Some(1_777_629_600_123)
        );
        assert_eq!(
            timestamp(b"2026-05-01T10:00:00+02:00"),
            Some(1_777_622_400_000)
        );
        assert_eq!(timestamp(b"2026-05-01T10:00:00"), None);
        assert_eq!(timestamp(b"2026-05-01"), None);
        assert_eq!(timestamp(b"2026-13-01T10:00:00Z"), None);
        assert_eq!(timestamp(b"2026-02-29T10:00:00Z"), None);
    }
}
