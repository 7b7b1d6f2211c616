//! Compact re-serialisation of a JSON value already validated by `json::parse`, as polars'
//! JSON path lookups print one: no whitespace, strings decoded and re-escaped (`"`, `\`, and
//! control characters only), numbers as `json::number_text` writes them.
#![forbid(unsafe_code)]

use crate::read::json::number_text;
use crate::read::json::unescape;

/// Append the compact form of the validated JSON value `raw` to `out`.
pub fn write(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'"' => {
                let end = string_end(raw, i + 1);
                let body = raw.get(i + 1..end.saturating_sub(1)).unwrap_or(&[]);
                escape(&unescape(body), out);
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = raw
                    .iter()
                    .skip(i)
                    .position(|c| !matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .map_or(raw.len(), |n| i + n);
                let number = raw.get(i..end).unwrap_or(&[]);
                let float = number.iter().any(|c| matches!(c, b'.' | b'e' | b'E'));
                match number_text(number, float) {
                    Some(text) => out.extend_from_slice(text.as_bytes()),
                    None => out.extend_from_slice(b"null"),
                }
                i = end;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
}

/// The offset just after the closing quote of the string whose body starts at `body`.
fn string_end(raw: &[u8], body: usize) -> usize {
    let mut i = body;
    while let Some(&b) = raw.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    raw.len()
}

/// A decoded string, quoted and escaped as serde_json does.
fn escape(text: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in text {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1F => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #[test]
    fn compacts() {
        let mut out = Vec::new();
        super::write(
            br#"[ {"a" : 1.50, "b":"\u00e9\n\u001b"}, true, null, -0, 7 ]"#,
            &mut out,
        );
        assert_eq!(
            out,
            r#"[{"a":1.5,"b":"é\n\u001b"},true,null,-0.0,7]"#.as_bytes()
        );
    }
}
