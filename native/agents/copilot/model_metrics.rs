//! The per-model totals of a `session.shutdown` line (`data.modelMetrics`), decoded into
//! MODEL_METRICS rows.
//!
//! The scanner keeps the field as JSON text (`scan::Totals`): compact JSON, or the text of a
//! string when the field is one (a string that holds JSON is read as that JSON). Its keys are
//! model names, which no fixed table of fields can describe, so it is decoded here, with the
//! rules of the Python reader it replaces (`tests/oracle/reference/model_metrics.py`, the oracle):
//!
//! - the text must be one JSON document (Python's `json` grammar: `NaN`, `Infinity` and
//!   `-Infinity` allowed) whose value is an object, else the line gets a warning and no row;
//! - `{}` is a process that billed nothing: one row without a model, its counters 0;
//! - a model whose value is not an object gets a warning and no row; a key given twice keeps
//!   its first place and its last value;
//! - counters (`requests.count`, `usage.*Tokens`) are whole numbers (`5.0` and `1e3` count,
//!   `1.5`, strings and booleans do not); one beyond 64 bits is left out with a warning;
//! - money (`requests.cost`, `totalNanoAiu`) is kept as exact decimal text: a whole number
//!   as its digits, any other as Python's `str(Decimal(text))` writes it.
//!
//! Safe Rust; it cannot panic on any input, and nesting is skipped without recursion.
#![forbid(unsafe_code)]

use crate::read::json::unescape;

/// One MODEL_METRICS row of a shutdown line, before its file, line, session and process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelRow {
    pub model: Option<String>,
    pub requests_count: Option<i64>,
    pub requests_cost: Option<String>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cache_read_tokens: Option<i64>,
    pub cache_write_tokens: Option<i64>,
    pub reasoning_tokens: Option<i64>,
    pub total_nano_aiu: Option<String>,
}

/// The rows of one `modelMetrics` text, and the warnings of its line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub rows: Vec<ModelRow>,
    pub warnings: Vec<String>,
}

/// The longest exact text kept for a money figure; a longer one (a whole number with an
/// exponent in the thousands) is out of range.
const LONGEST_TEXT: usize = 400;

/// Decode the `modelMetrics` text of one shutdown line.
pub fn decode(text: &[u8]) -> Decoded {
    let mut out = Decoded::default();
    let Some(models) = document_object(text) else {
        out.warnings
            .push("shutdown modelMetrics is not an object; ignored".into());
        return out;
    };
    if models.is_empty() {
        // `{}`: no model was billed in this process (0 requests)
        out.rows.push(ModelRow {
            requests_count: Some(0),
            input_tokens: Some(0),
            output_tokens: Some(0),
            cache_read_tokens: Some(0),
            cache_write_tokens: Some(0),
            ..ModelRow::default()
        });
        return out;
    }
    for (name, value) in models {
        let model = String::from_utf8_lossy(&name).into_owned();
        let Some(values) = object(value) else {
            out.warnings
                .push(format!("modelMetrics[{}] is not an object", quoted(&model)));
            continue;
        };
        let requests = member(&values, b"requests")
            .and_then(object)
            .unwrap_or_default();
        let usage = member(&values, b"usage")
            .and_then(object)
            .unwrap_or_default();
        let mut read = Figures {
            model: &model,
            warnings: &mut out.warnings,
        };
        let requests_count = read.count(&requests, "count");
        let input_tokens = read.count(&usage, "inputTokens");
        let output_tokens = read.count(&usage, "outputTokens");
        let cache_read_tokens = read.count(&usage, "cacheReadTokens");
        let cache_write_tokens = read.count(&usage, "cacheWriteTokens");
        let reasoning_tokens = read.count(&usage, "reasoningTokens");
        let requests_cost = read.money(&requests, "cost");
        let total_nano_aiu = read.money(&values, "totalNanoAiu");
        out.rows.push(ModelRow {
            model: Some(model),
            requests_count,
            requests_cost,
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            reasoning_tokens,
            total_nano_aiu,
        });
    }
    out
}

/// The figures of one model's object, and the warnings of those that cannot be kept.
struct Figures<'a> {
    model: &'a str,
    warnings: &'a mut Vec<String>,
}

impl Figures<'_> {
    /// A counter: a whole number in 64 bits, not below zero (a negative count of requests or
    /// tokens is no count at all: summed, it would take real ones away).
    fn count(&mut self, members: &[(Vec<u8>, &[u8])], key: &str) -> Option<i64> {
        let count = self.read(
            members,
            key,
            Number::whole,
            "is a whole number beyond 64 bits",
        )?;
        if count < 0 {
            self.left_out(key, "is negative");
            return None;
        }
        Some(count)
    }

    /// Money, as exact decimal text.
    fn money(&mut self, members: &[(Vec<u8>, &[u8])], key: &str) -> Option<String> {
        self.read(members, key, Number::text, "is too long a number")
    }

    /// The number `key` of `members` as `get` reads it; a whole number it cannot read (`why`)
    /// is a warning. Anything else it cannot read (a fraction as a count, a string, a
    /// boolean) is left out without one, as the Python reader did.
    fn read<T>(
        &mut self,
        members: &[(Vec<u8>, &[u8])],
        key: &str,
        get: fn(&Number) -> Option<T>,
        why: &str,
    ) -> Option<T> {
        let number = member(members, key.as_bytes()).and_then(Number::of)?;
        let value = get(&number);
        if value.is_none() && number.integral().is_some() {
            self.left_out(key, why);
        }
        value
    }

    /// The warning for a figure `key` left out, and why.
    fn left_out(&mut self, key: &str, why: &str) {
        let model = quoted(self.model);
        self.warnings
            .push(format!("modelMetrics[{model}] {key} {why}; left out"));
    }
}

/// A name in double quotes, with `"`, `\` and control characters escaped, as Python's
/// `json.dumps(name, ensure_ascii=False)` writes it.
fn quoted(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The last value of `key` among an object's members (a repeated key's last value wins).
fn member<'a>(members: &[(Vec<u8>, &'a [u8])], key: &[u8]) -> Option<&'a [u8]> {
    members
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|&(_, v)| v)
}

/// The members of the whole document `text` when it is one object: each key's first place,
/// its last value (the raw bytes of a valid value).
fn document_object(text: &[u8]) -> Option<Vec<(Vec<u8>, &[u8])>> {
    let mut p = Parser { s: text, i: 0 };
    p.ws();
    let start = p.i;
    p.value()?;
    let end = p.i;
    p.ws();
    if p.i != text.len() {
        return None; // extra data after the document
    }
    let members = object(text.get(start..end)?)?;
    let mut kept: Vec<(Vec<u8>, &[u8])> = Vec::with_capacity(members.len());
    for (key, value) in members {
        match kept.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => kept.push((key, value)),
        }
    }
    Some(kept)
}

/// The members (decoded key, raw value) of `raw`, a valid value, when it is an object.
fn object(raw: &[u8]) -> Option<Vec<(Vec<u8>, &[u8])>> {
    let mut p = Parser { s: raw, i: 0 };
    if !p.eat(b'{') {
        return None;
    }
    let mut members = Vec::new();
    p.ws();
    if p.eat(b'}') {
        return Some(members);
    }
    loop {
        p.ws();
        let key = p.key()?;
        p.ws();
        let start = p.i;
        p.value()?;
        members.push((key, raw.get(start..p.i)?));
        p.ws();
        if p.eat(b'}') {
            return Some(members);
        }
        if !p.eat(b',') {
            return None;
        }
    }
}

/// A validating reader of Python's JSON grammar over bytes.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    fn eat_all(&mut self, word: &[u8]) -> bool {
        let hit = self
            .s
            .get(self.i..)
            .is_some_and(|rest| rest.starts_with(word));
        if hit {
            self.i += word.len();
        }
        hit
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A member's key and its `:` (whitespace around both skipped).
    fn key(&mut self) -> Option<Vec<u8>> {
        let key = self.string()?;
        self.ws();
        self.eat(b':').then_some(key)
    }

    /// One value, containers included, checked and skipped with a stack instead of recursion.
    fn value(&mut self) -> Option<()> {
        let mut open: Vec<u8> = Vec::new();
        loop {
            self.ws();
            let mut done = true;
            match self.peek()? {
                b'{' => {
                    self.i += 1;
                    self.ws();
                    if !self.eat(b'}') {
                        self.key()?;
                        open.push(b'}');
                        done = false;
                    }
                }
                b'[' => {
                    self.i += 1;
                    self.ws();
                    if !self.eat(b']') {
                        open.push(b']');
                        done = false;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                _ => self.scalar()?,
            }
            if !done {
                continue;
            }
            // after a value: close what it ends, or go on to the next member or item
            loop {
                let Some(&close) = open.last() else {
                    return Some(());
                };
                self.ws();
                if self.eat(close) {
                    open.pop();
                    continue;
                }
                if !self.eat(b',') {
                    return None;
                }
                if close == b'}' {
                    self.ws();
                    self.key()?;
                }
                break;
            }
        }
    }

    /// A number or a literal (`true`, `false`, `null`, `NaN`, `Infinity`, `-Infinity`).
    fn scalar(&mut self) -> Option<()> {
        for word in [
            &b"true"[..],
            b"false",
            b"null",
            b"NaN",
            b"Infinity",
            b"-Infinity",
        ] {
            if self.eat_all(word) {
                return Some(());
            }
        }
        let end = number_end(self.s, self.i)?;
        self.i = end;
        Some(())
    }

    /// A string, decoded; None when it is not valid (Python's strict rules: no raw control
    /// characters, only JSON's escapes, four hex digits after `\u`).
    fn string(&mut self) -> Option<Vec<u8>> {
        if !self.eat(b'"') {
            return None;
        }
        let body = self.i;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' => match self.s.get(self.i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                    b'u' => {
                        let hex = self.s.get(self.i + 2..self.i + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        self.i += 6;
                    }
                    _ => return None,
                },
                0..=0x1F => return None,
                _ => self.i += 1,
            }
        }
        let text = unescape(self.s.get(body..self.i)?);
        self.i += 1;
        Some(text)
    }
}

/// The end of the JSON number at `at` (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`).
fn number_end(s: &[u8], at: usize) -> Option<usize> {
    let digits = |from: usize| {
        let n = s
            .get(from..)
            .map_or(0, |r| r.iter().take_while(|b| b.is_ascii_digit()).count());
        (n > 0).then_some(from + n)
    };
    let mut i = at + usize::from(s.get(at) == Some(&b'-'));
    i = if s.get(i) == Some(&b'0') {
        i + 1
    } else {
        digits(i)?
    };
    if s.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(s.get(i + 1), Some(b'+' | b'-')));
        i = digits(i + 1 + sign)?;
    }
    Some(i)
}

/// A JSON number as an exact decimal: `digits` (no leading zeros; empty for zero) times ten
/// to `exponent`.
struct Number {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

impl Number {
    /// The number `raw` is (None for anything else, `NaN` and the infinities included).
    fn of(raw: &[u8]) -> Option<Number> {
        if number_end(raw, 0)? != raw.len() {
            return None;
        }
        let negative = raw.first() == Some(&b'-');
        let body = raw.get(usize::from(negative)..)?;
        let (mantissa, exp) = match body.iter().position(|&b| b == b'e' || b == b'E') {
            Some(e) => (body.get(..e)?, body.get(e + 1..)?),
            None => (body, &b""[..]),
        };
        let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
            Some(dot) => (mantissa.get(..dot)?, mantissa.get(dot + 1..)?),
            None => (mantissa, &b""[..]),
        };
        let mut digits: Vec<u8> = int.iter().chain(frac).copied().collect();
        let leading = digits.iter().take_while(|&&d| d == b'0').count();
        digits.drain(..leading);
        let written = exp
            .strip_prefix(b"-")
            .map(|e| (true, e))
            .unwrap_or((false, exp.strip_prefix(b"+").unwrap_or(exp)));
        // Saturated at 64 bits, far beyond any exponent whose text could be written.
        let size = written.1.iter().fold(0i64, |n, &d| {
            n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
        let size = if written.0 { -size } else { size };
        let frac_len = i64::try_from(frac.len()).unwrap_or(i64::MAX);
        Some(Number {
            negative,
            digits,
            exponent: size.saturating_sub(frac_len),
        })
    }

    /// The digits of the whole number this is, without its sign ("0" for zero; empty when it
    /// has more than `LONGEST_TEXT` digits); None when it has a fraction.
    fn integral(&self) -> Option<Vec<u8>> {
        if self.digits.is_empty() {
            return Some(b"0".to_vec());
        }
        let digits = if self.exponent >= 0 {
            let zeros = usize::try_from(self.exponent).unwrap_or(usize::MAX);
            if self.digits.len().saturating_add(zeros) > LONGEST_TEXT {
                return Some(Vec::new());
            }
            let mut out = self.digits.clone();
            out.resize(self.digits.len() + zeros, b'0');
            out
        } else {
            let cut = usize::try_from(self.exponent.unsigned_abs()).unwrap_or(usize::MAX);
            let keep = self.digits.len().checked_sub(cut)?;
            let (head, tail) = self.digits.split_at(keep);
            if !tail.iter().all(|&d| d == b'0') {
                return None;
            }
            if head.is_empty() {
                b"0".to_vec()
            } else {
                head.to_vec()
            }
        };
        Some(if digits.len() > LONGEST_TEXT {
            Vec::new()
        } else {
            digits
        })
    }

    /// The number as a 64-bit integer, when it is a whole number that fits.
    fn whole(&self) -> Option<i64> {
        let digits = self.integral()?;
        let text = std::str::from_utf8(&digits).ok()?;
        let magnitude: i128 = text.parse().ok()?;
        i64::try_from(if self.negative { -magnitude } else { magnitude }).ok()
    }

    /// The exact text: a whole number's digits (`-` only when not zero), else what Python's
    /// `str(Decimal(text))` gives; None when a whole number is too long to write out.
    fn text(&self) -> Option<String> {
        let sign = if self.negative { "-" } else { "" };
        if let Some(digits) = self.integral() {
            if digits.is_empty() {
                return None;
            }
            let zero = digits == b"0";
            let text = String::from_utf8(digits).ok()?;
            return Some(if zero { text } else { format!("{sign}{text}") });
        }
        // Python's Decimal.__str__ (not engineering): plain when the exponent is at most 0
        // and the number not below 1e-6, else scientific with one digit before the point.
        let digits = std::str::from_utf8(&self.digits).ok()?;
        let count = i64::try_from(digits.len()).ok()?;
        let left = self.exponent.saturating_add(count);
        let dot = if self.exponent <= 0 && left > -6 {
            left
        } else {
            1
        };
        let body = if dot <= 0 {
            let zeros = "0".repeat(usize::try_from(-dot).ok()?);
            format!("0.{zeros}{digits}")
        } else {
            let at = usize::try_from(dot).ok()?.min(digits.len());
            let (int, frac) = digits.split_at(at);
            if frac.is_empty() {
                int.to_string()
            } else {
                format!("{int}.{frac}")
            }
        };
        let exp = left - dot;
        let tail = if exp == 0 {
            String::new()
        } else {
            format!("E{exp:+}")
        };
        Some(format!("{sign}{body}{tail}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Decoded {
        decode(text.as_bytes())
    }

    fn text(raw: &str) -> Option<String> {
        Number::of(raw.as_bytes()).and_then(|n| n.text())
    }

    fn whole(raw: &str) -> Option<i64> {
        Number::of(raw.as_bytes()).and_then(|n| n.whole())
    }

    #[test]
    fn decimal_text_as_python_writes_it() {
        for (raw, want) in [
            ("305426000.0", "305426000"),
            ("1e+3", "1000"),
            ("-0.0", "0"),
            ("-0", "0"),
            ("1.50", "1.50"),
            ("0.0015", "0.0015"),
            ("1.5e-7", "1.5E-7"),
            ("1e-6", "0.000001"),
            ("1.2345e-5", "0.000012345"),
            ("-2.5", "-2.5"),
            ("1234567890123456.7", "1234567890123456.7"),
            ("1e+30", "1000000000000000000000000000000"),
            ("123", "123"),
            ("0.1e1", "1"),
            ("12.5e1", "125"),
            ("12.55e1", "125.5"),
        ] {
            assert_eq!(text(raw).as_deref(), Some(want), "{raw}");
        }
        assert_eq!(text("1e999"), None);
        assert_eq!(text("NaN"), None);
        assert_eq!(text("\"5\""), None);
    }

    #[test]
    fn whole_numbers_in_64_bits() {
        assert_eq!(whole("5"), Some(5));
        assert_eq!(whole("5.0"), Some(5));
        assert_eq!(whole("1e3"), Some(1000));
        assert_eq!(whole("-5"), Some(-5));
        assert_eq!(whole("1.5"), None);
        assert_eq!(whole("9223372036854775807"), Some(i64::MAX));
        assert_eq!(whole("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(whole("9223372036854775808"), None);
        assert_eq!(whole("1e30"), None);
        assert_eq!(whole("true"), None);
    }

    #[test]
    fn a_model_row_per_model() {
        let got = rows(
            r#"{"gpt-5":{"requests":{"count":3,"cost":1.5},"usage":{"inputTokens":100,
            "outputTokens":7.0,"cacheReadTokens":"9","cacheWriteTokens":1.5},"totalNanoAiu":305426000.0}}"#,
        );
        assert_eq!(got.warnings, Vec::<String>::new());
        assert_eq!(
            got.rows,
            vec![ModelRow {
                model: Some("gpt-5".into()),
                requests_count: Some(3),
                requests_cost: Some("1.5".into()),
                input_tokens: Some(100),
                output_tokens: Some(7),
                total_nano_aiu: Some("305426000".into()),
                ..ModelRow::default()
            }]
        );
    }

    #[test]
    fn empty_object_is_zero_requests() {
        let got = rows(" {} ");
        assert_eq!(got.rows.len(), 1);
        assert_eq!(got.rows[0].model, None);
        assert_eq!(got.rows[0].requests_count, Some(0));
        assert_eq!(got.rows[0].reasoning_tokens, None);
    }

    #[test]
    fn repeated_keys_keep_first_place_and_last_value() {
        let got =
            rows(r#"{"a":{"requests":{"count":1}},"b":{},"a":{"requests":{"count":2,"count":3}}}"#);
        let names: Vec<_> = got.rows.iter().map(|r| r.model.clone().unwrap()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(got.rows[0].requests_count, Some(3));
    }

    #[test]
    fn what_is_not_an_object_is_reported() {
        for bad in [
            "[]",
            "5",
            "\"x\"",
            "{",
            "{\"a\":1,}",
            "{} x",
            "",
            "{\"a\":01}",
            "{'a':1}",
        ] {
            let got = rows(bad);
            assert!(got.rows.is_empty(), "{bad}");
            assert_eq!(
                got.warnings,
                ["shutdown modelMetrics is not an object; ignored"]
            );
        }
        let got = rows(r#"{"m\"1":[1,{"x":[]}],"ok":{}}"#);
        assert_eq!(got.warnings, [r#"modelMetrics["m\"1"] is not an object"#]);
        assert_eq!(got.rows.len(), 1);
    }

    #[test]
    fn numbers_beyond_64_bits_are_reported() {
        let got =
            rows(r#"{"m":{"requests":{"count":1e30,"cost":1e999},"usage":{"inputTokens":-1e19}}}"#);
        assert_eq!(got.rows[0].requests_count, None);
        assert_eq!(got.rows[0].input_tokens, None);
        assert_eq!(got.rows[0].requests_cost, None);
        assert_eq!(
            got.warnings,
            [
                r#"modelMetrics["m"] count is a whole number beyond 64 bits; left out"#,
                r#"modelMetrics["m"] inputTokens is a whole number beyond 64 bits; left out"#,
                r#"modelMetrics["m"] cost is too long a number; left out"#,
            ]
        );
    }

    #[test]
    fn negative_counts_are_left_out() {
        let got = rows(r#"{"m":{"requests":{"count":-2,"cost":-1},"usage":{"inputTokens":-0}}}"#);
        assert_eq!(got.rows[0].requests_count, None);
        assert_eq!(got.rows[0].input_tokens, Some(0));
        assert_eq!(got.rows[0].requests_cost.as_deref(), Some("-1"));
        assert_eq!(
            got.warnings,
            [r#"modelMetrics["m"] count is negative; left out"#]
        );
    }

    #[test]
    fn deep_nesting_and_literals() {
        let deep = format!(
            "{{\"m\":{{\"x\":{}{}}}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(rows(&deep).rows.len(), 1);
        let got = rows(r#"{"m":{"requests":{"count":NaN,"cost":-Infinity},"usage":null}}"#);
        assert_eq!(got.rows[0].requests_count, None);
        assert!(got.warnings.is_empty());
    }
}
