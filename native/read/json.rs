//! A strict, streaming JSON tokenizer for one log line, guided by a table of wanted fields.
//!
//! It walks the line once, validating all of it, and records for each wanted field (a node of
//! a [`Schema`]) where its value is and what it is: kind, raw span, and for strings their
//! decoded byte length, so content strings are never copied. Fields that are not wanted are
//! validated and skipped. A field of shape [`Shape::Any`] is also *measured*: the byte length
//! of its compact re-serialisation (as polars' JSON path lookups print a value), computed on
//! the fly.
//!
//! Errors follow CPython's `json` module exactly (message and character position), so an
//! invalid line is reported as it always was; the two deliberate differences are that `NaN`
//! and `Infinity` are not JSON here, and nesting is limited to [`MAX_DEPTH`] levels (where
//! Python's decoder raised `RecursionError`). Duplicate keys: the first one counts.
#![forbid(unsafe_code)]

/// Deepest nesting of objects and arrays accepted in a line.
pub const MAX_DEPTH: usize = 256;

/// The JSON type of a recorded value ([`Kind::Missing`]: the field was not in the line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Missing,
    Null,
    True,
    False,
    Int,
    Float,
    Str,
    Object,
    Array,
}

/// Where a field's value is in the line, and what the tokenizer learnt about it in passing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Value {
    pub kind: Kind,
    /// Byte span of the raw value (a string's includes its quotes).
    pub start: usize,
    pub end: usize,
    /// A string with at least one backslash escape (its span is not its text).
    pub escaped: bool,
    /// A string's decoded length in UTF-8 bytes.
    pub decoded_len: usize,
    /// Bytes of the compact re-serialisation ([`Shape::Any`] fields); None when a number in
    /// it is out of range (polars gives no value then).
    pub measured: Option<usize>,
}

/// A syntax error: CPython's message and the byte offset it points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: &'static str,
    pub at: usize,
}

/// How a wanted field must look: a scalar (an object or array there is dropped), an object of
/// wanted fields (anything but an object or null is dropped), or anything (never dropped;
/// measured).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Scalar,
    Struct,
    Any,
}

/// One wanted field: its key, shape and parent node (the root, 0, has none).
#[derive(Clone, Debug)]
pub struct Node {
    pub name: &'static str,
    pub shape: Shape,
    pub parent: usize,
    children: Vec<(&'static [u8], usize)>,
    keys: Keys,
}

/// A node's children by key, found without comparing bytes one by one: an open-addressing
/// table over a key's length and first 16 bytes (two words), the key in full compared only
/// for keys longer than that.
#[derive(Clone, Debug, Default)]
struct Keys {
    slots: Vec<Slot>,
    shift: u32,
}

/// A child's key in a [`Keys`] table; `child` 0 (the root, never a child) is an empty slot.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    len: usize,
    head: [u64; 2],
    child: usize,
}

/// The first 16 bytes of `key` (zero-padded) as two little-endian words.
fn head_of(key: &[u8]) -> [u64; 2] {
    let mut bytes = [0u8; 16];
    for (to, from) in bytes.iter_mut().zip(key) {
        *to = *from;
    }
    let (lo, hi) = bytes.split_at(8);
    [
        u64::from_le_bytes(lo.try_into().unwrap_or_default()),
        u64::from_le_bytes(hi.try_into().unwrap_or_default()),
    ]
}

/// The head of the `len` bytes at `start` of `s`: two loads and masks when 16 bytes are
/// there to load (nearly always: a key is followed by its value), else [`head_of`].
fn head_at(s: &[u8], start: usize, len: usize) -> [u64; 2] {
    let Some(chunk) = s.get(start..).and_then(<[u8]>::first_chunk::<16>) else {
        return head_of(s.get(start..start + len).unwrap_or(&[]));
    };
    let (lo, hi) = chunk.split_at(8);
    let word = |bytes: &[u8], n: usize| {
        let w = u64::from_le_bytes(bytes.try_into().unwrap_or_default());
        match n {
            0 => 0,
            1..=7 => w & ((1u64 << (8 * n)) - 1),
            _ => w,
        }
    };
    [word(lo, len), word(hi, len.saturating_sub(8))]
}

impl Keys {
    fn new(children: &[(&'static [u8], usize)]) -> Keys {
        if children.is_empty() {
            return Keys::default();
        }
        let mut bits = 1;
        while (1usize << bits) < children.len() * 4 {
            bits += 1;
        }
        let mut keys = Keys {
            slots: vec![Slot::default(); 1 << bits],
            shift: 64 - bits,
        };
        for &(name, child) in children {
            let head = head_of(name);
            let mask = keys.slots.len() - 1;
            let mut at = keys.home(name.len(), head);
            while keys.slots.get(at).is_some_and(|s| s.child != 0) {
                at = (at + 1) & mask;
            }
            if let Some(slot) = keys.slots.get_mut(at) {
                *slot = Slot {
                    len: name.len(),
                    head,
                    child,
                };
            }
        }
        keys
    }

    fn home(&self, len: usize, head: [u64; 2]) -> usize {
        let mixed = (head[0] ^ head[1].rotate_left(31) ^ u64::try_from(len).unwrap_or(0))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        usize::try_from(mixed >> self.shift).unwrap_or(0)
    }

    /// The child named `key`, whose head is `head`; `name` gives a child's full key.
    fn find(
        &self,
        key: &[u8],
        head: [u64; 2],
        name: impl Fn(usize) -> &'static [u8],
    ) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key.len(), head);
        loop {
            let slot = self.slots.get(at)?;
            if slot.child == 0 {
                return None;
            }
            if slot.len == key.len()
                && slot.head == head
                && (key.len() <= 16 || name(slot.child) == key)
            {
                return Some(slot.child);
            }
            at = (at + 1) & mask;
        }
    }
}

/// A tree of wanted fields, node 0 being the line's top-level object.
#[derive(Clone, Debug)]
pub struct Schema {
    pub nodes: Vec<Node>,
    quotes: Quotes,
}

impl Schema {
    /// A schema from (dotted path, shape) pairs; parents must come before their children.
    /// Paths whose parent is not listed are attached to the root.
    pub fn new(fields: &[(&'static str, Shape)]) -> Schema {
        let mut nodes = vec![Node {
            name: "",
            shape: Shape::Struct,
            parent: 0,
            children: Vec::new(),
            keys: Keys::default(),
        }];
        let mut paths: Vec<&str> = vec![""];
        for &(path, shape) in fields {
            let (parent_path, name) = match path.rfind('.') {
                Some(dot) => (
                    path.get(..dot).unwrap_or(""),
                    path.get(dot + 1..).unwrap_or(""),
                ),
                None => ("", path),
            };
            let parent = paths.iter().position(|p| *p == parent_path).unwrap_or(0);
            let index = nodes.len();
            nodes.push(Node {
                name,
                shape,
                parent,
                children: Vec::new(),
                keys: Keys::default(),
            });
            paths.push(path);
            if let Some(node) = nodes.get_mut(parent) {
                node.children.push((name.as_bytes(), index));
            }
        }
        for node in &mut nodes {
            node.children.sort_unstable();
            node.keys = Keys::new(&node.children);
        }
        Schema {
            nodes,
            quotes: Quotes::new(),
        }
    }

    fn has_children(&self, node: usize) -> bool {
        self.nodes.get(node).is_some_and(|n| !n.children.is_empty())
    }

    /// The child of `node` named by the key string `key` whose body starts at `body` in `s`.
    fn lookup(&self, node: usize, s: &[u8], body: usize, key: &Str) -> Option<usize> {
        let keys = &self.nodes.get(node)?.keys;
        let raw = s.get(body..key.end.saturating_sub(1))?;
        let name = |child: usize| {
            self.nodes
                .get(child)
                .map_or(&b""[..], |n| n.name.as_bytes())
        };
        if key.escaped {
            let decoded = unescape(raw);
            return keys.find(&decoded, head_of(&decoded), name);
        }
        keys.find(raw, head_at(s, body, raw.len()), name)
    }

    /// The node of a dotted path, if it is in the schema.
    pub fn find(&self, path: &str) -> Option<usize> {
        let mut node = 0;
        for part in path.split('.') {
            node = self.child(node, part.as_bytes())?;
        }
        Some(node)
    }

    /// The dotted path of a node, for messages.
    pub fn path(&self, mut node: usize) -> String {
        let mut parts = Vec::new();
        while node != 0 {
            match self.nodes.get(node) {
                Some(n) => {
                    parts.push(n.name);
                    node = n.parent;
                }
                None => break,
            }
        }
        parts.reverse();
        parts.join(".")
    }

    fn child(&self, node: usize, key: &[u8]) -> Option<usize> {
        let children = &self.nodes.get(node)?.children;
        children
            .binary_search_by(|(name, _)| (*name).cmp(key))
            .ok()
            .and_then(|at| children.get(at))
            .map(|&(_, index)| index)
    }
}

/// What one line's wanted fields held; reused from line to line.
pub struct Fields {
    pub values: Vec<Value>,
    pub dropped: Vec<bool>,
    seen: Vec<bool>,
    touched: Vec<usize>,
    /// Whether any field was dropped in this line.
    any_dropped: bool,
}

impl Fields {
    pub fn new(schema: &Schema) -> Fields {
        let n = schema.nodes.len();
        Fields {
            values: vec![Value::default(); n],
            dropped: vec![false; n],
            seen: vec![false; n],
            touched: Vec::new(),
            any_dropped: false,
        }
    }

    /// The nodes this line had (claimed: a value recorded, or dropped).
    pub fn touched(&self) -> &[usize] {
        &self.touched
    }

    /// Whether a wanted field had a shape that did not fit (see [`Fields::dropped`]).
    pub fn any_dropped(&self) -> bool {
        self.any_dropped
    }

    fn drop_field(&mut self, node: usize) {
        if let Some(d) = self.dropped.get_mut(node) {
            *d = true;
            self.any_dropped = true;
        }
    }

    fn clear(&mut self) {
        for &i in &self.touched {
            if let Some(v) = self.values.get_mut(i) {
                *v = Value::default();
            }
            if let Some(d) = self.dropped.get_mut(i) {
                *d = false;
            }
            if let Some(s) = self.seen.get_mut(i) {
                *s = false;
            }
        }
        self.touched.clear();
        self.any_dropped = false;
    }

    /// A field's value ([`Kind::Missing`] when absent or dropped).
    pub fn get(&self, node: usize) -> Value {
        self.values.get(node).copied().unwrap_or_default()
    }

    fn claim(&mut self, node: usize) -> bool {
        match self.seen.get_mut(node) {
            Some(seen) if !*seen => {
                *seen = true;
                self.touched.push(node);
                true
            }
            _ => false,
        }
    }
}

/// Parse one line (UTF-8, no newline) against `schema`, filling `fields`; returns the kind of
/// the top-level value.
pub fn parse(line: &[u8], schema: &Schema, fields: &mut Fields) -> Result<Kind, Error> {
    fields.clear();
    if line.starts_with(b"\xEF\xBB\xBF") {
        return Err(Error {
            message: "Unexpected UTF-8 BOM (decode using utf-8-sig)",
            at: 0,
        });
    }
    let mut parser = Parser {
        s: line,
        schema,
        fields,
        quotes: schema.quotes.for_line(line),
    };
    let start = parser.skip_ws(0);
    let (value, end) = parser.value(start, 0, Some(0), false)?;
    let end = parser.skip_ws(end);
    if end != line.len() {
        return Err(Error {
            message: "Extra data",
            at: end,
        });
    }
    Ok(value.kind)
}

/// The character (code point) index of byte offset `at`, as Python counts positions.
pub fn char_index(line: &[u8], at: usize) -> usize {
    line.get(..at)
        .unwrap_or(line)
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count()
}

struct Parser<'a, 'f> {
    s: &'a [u8],
    schema: &'a Schema,
    fields: &'f mut Fields,
    quotes: Option<&'a QuoteSearch>,
}

/// A search for the next quote or backslash: `memchr`'s AVX2 search, 32 bytes at a time
/// where [`plain_end`] looks at 16 (SSE2, the build's baseline), for lines without control
/// characters (none can end a string's plain run there). Built once per schema; None where
/// the CPU has no AVX2.
#[derive(Clone, Copy, Debug)]
struct Quotes(Option<QuoteSearch>);

#[cfg(target_arch = "x86_64")]
type QuoteSearch = memchr::arch::x86_64::avx2::memchr::Two;

impl Quotes {
    #[cfg(target_arch = "x86_64")]
    fn new() -> Quotes {
        Quotes(QuoteSearch::new(b'"', b'\\'))
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn new() -> Quotes {
        Quotes(None)
    }

    /// The search for `line`: None when the line has a control character (a tab or carriage
    /// return between tokens, or one in a string, an error), which only [`plain_end`] stops at.
    fn for_line(&self, line: &[u8]) -> Option<&QuoteSearch> {
        // The least byte, branch-free (vectorised), and one test: a control character is
        // any byte below 0x20.
        let search = self.0.as_ref()?;
        (least_byte(line) >= 0x20).then_some(search)
    }
}

/// The least byte of `bytes` (0xFF for none): 64 at a time into 64 lanes, independent
/// vector minimums with no branch, then the lanes and the tail.
fn least_byte(bytes: &[u8]) -> u8 {
    let mut lanes = [u8::MAX; 64];
    let chunks = bytes.chunks_exact(64);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &b) in lanes.iter_mut().zip(chunk) {
            *lane = (*lane).min(b);
        }
    }
    let least = lanes.iter().fold(u8::MAX, |m, &b| m.min(b));
    tail.iter().fold(least, |m, &b| m.min(b))
}

/// The offset of the first special byte at or after `i` in `s` (`s.len()` if none), as
/// [`plain_end`] finds it: with `search` when the line has no control character.
fn special_at(s: &[u8], i: usize, search: Option<&QuoteSearch>) -> usize {
    match search {
        Some(search) => s
            .get(i..)
            .and_then(|rest| search.find(rest))
            .map_or(s.len(), |at| i + at),
        None => plain_end(s, i),
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug)]
enum QuoteSearch {}

#[cfg(not(target_arch = "x86_64"))]
impl QuoteSearch {
    fn find(&self, _: &[u8]) -> Option<usize> {
        match *self {}
    }
}

/// Where an object or array goes after an item: closed (the offset after it), or on to the
/// next item (its offset).
enum Step {
    Close(usize),
    Next(usize),
}

/// What scanning a string learnt.
struct Str {
    end: usize,
    escaped: bool,
    decoded: usize,
    measured: usize,
}

/// Bytes examined at once when looking for the end of a string's plain run.
const LANES: usize = 16;

/// Whether a byte ends a plain run of string bytes: a quote, a backslash or a control
/// character.
fn special(b: u8) -> bool {
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

const ONES: u64 = 0x0101_0101_0101_0101;

/// The high bit of each byte of `w` (eight bytes, little-endian) that is [`special`]; exact
/// up to the lowest such byte (a flag above it may be false), which is all `trailing_zeros`
/// needs: a borrow starts only at a byte that matches.
fn special_bits(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    (quote | backslash | control) & (ONES * 0x80)
}

/// The offset of the first byte at or after `i` that is [`special`] (`s.len()` if none).
/// One pass, `LANES` bytes at a time: a branch-free test of the chunk (vector compares and
/// one mask test), then the position within it from two words, without a branch; an escape
/// costs a restart here, nothing more. Not inlined: lines with a control character are few,
/// and [`special_at`], inlined where strings are read, stays small without it.
#[inline(never)]
fn plain_end(s: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = s.get(i..).and_then(<[u8]>::first_chunk::<LANES>) {
        if chunk.iter().fold(false, |m, &b| m | special(b)) {
            let (lo, hi) = chunk.split_at(8);
            let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
            let bits =
                u128::from(special_bits(word(lo))) | (u128::from(special_bits(word(hi))) << 64);
            return i + usize::try_from(bits.trailing_zeros() / 8).unwrap_or(0);
        }
        i += LANES;
    }
    while s.get(i).is_some_and(|&b| !special(b)) {
        i += 1;
    }
    i
}

/// For the character after a backslash: the compact length of a one-character escape (the
/// decoded character re-escaped as serde does: `\/` becomes `/`); 0 for `u` and invalid ones.
const SIMPLE_ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'"' as usize] = 2;
    table[b'\\' as usize] = 2;
    table[b'/' as usize] = 1;
    table[b'b' as usize] = 2;
    table[b'f' as usize] = 2;
    table[b'n' as usize] = 2;
    table[b'r' as usize] = 2;
    table[b't' as usize] = 2;
    table
};

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn hex(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some(u32::from(b - b'0')),
        b'a'..=b'f' => Some(u32::from(b - b'a') + 10),
        b'A'..=b'F' => Some(u32::from(b - b'A') + 10),
        _ => None,
    }
}

/// Bytes a decoded character takes in compact JSON (serde's escaping).
fn escaped_len(c: u32) -> usize {
    match c {
        0x22 | 0x5C | 0x08 | 0x0C | 0x0A | 0x0D | 0x09 => 2,
        0..=0x1F => 6,
        _ => utf8_len(c),
    }
}

fn utf8_len(c: u32) -> usize {
    match c {
        0..=0x7F => 1,
        0x80..=0x7FF => 2,
        0x800..=0xFFFF => 3,
        _ => 4,
    }
}

impl Parser<'_, '_> {
    fn at(&self, i: usize) -> Option<u8> {
        self.s.get(i).copied()
    }

    fn skip_ws(&self, mut i: usize) -> usize {
        while self.at(i).is_some_and(is_ws) {
            i += 1;
        }
        i
    }

    /// Whether the line holds `word` at `i` (CPython checks `idx + len - 1 < length` before
    /// comparing, which this is).
    fn word<const N: usize>(&self, i: usize, word: &[u8; N]) -> bool {
        self.s.get(i..).and_then(<[u8]>::first_chunk::<N>) == Some(word)
    }

    fn expecting(i: usize) -> Error {
        Error {
            message: "Expecting value",
            at: i,
        }
    }

    fn nesting(&self, i: usize, depth: usize) -> Result<(), Error> {
        if depth >= MAX_DEPTH {
            return Err(Error {
                message: "Nesting deeper than 256 levels",
                at: i,
            });
        }
        Ok(())
    }

    /// A wanted value starting at `i` (no whitespace before it) for `node` (None: the value
    /// itself is wanted, not its members); `measure`: compute its compact length. Returns it
    /// and the offset just after it.
    fn value(
        &mut self,
        i: usize,
        depth: usize,
        node: Option<usize>,
        measure: bool,
    ) -> Result<(Value, usize), Error> {
        let Some(first) = self.at(i) else {
            return Err(Self::expecting(i));
        };
        let mut value = Value {
            start: i,
            ..Value::default()
        };
        let end = match first {
            b'"' => {
                let s = self.string(i + 1)?;
                value.kind = Kind::Str;
                value.escaped = s.escaped;
                value.decoded_len = s.decoded;
                value.measured = Some(s.measured);
                s.end
            }
            b'{' => {
                self.nesting(i, depth)?;
                value.kind = Kind::Object;
                let members = node.filter(|&n| self.schema.has_children(n));
                let (end, measured) = match (members, measure) {
                    (Some(n), _) => self.object(i + 1, depth + 1, n, measure)?,
                    (None, true) => self.any_object::<true>(i + 1, depth + 1)?,
                    (None, false) => self.any_object::<false>(i + 1, depth + 1)?,
                };
                value.measured = measured;
                end
            }
            b'[' => {
                self.nesting(i, depth)?;
                value.kind = Kind::Array;
                let (end, measured) = if measure {
                    self.any_array::<true>(i + 1, depth + 1)?
                } else {
                    self.any_array::<false>(i + 1, depth + 1)?
                };
                value.measured = measured;
                end
            }
            b'n' if self.word(i, b"null") => {
                value.kind = Kind::Null;
                value.measured = Some(4);
                i + 4
            }
            b't' if self.word(i, b"true") => {
                value.kind = Kind::True;
                value.measured = Some(4);
                i + 4
            }
            b'f' if self.word(i, b"false") => {
                value.kind = Kind::False;
                value.measured = Some(5);
                i + 5
            }
            b'n' | b't' | b'f' => return Err(Self::expecting(i)),
            _ => {
                let (end, float) = self.number(i).ok_or(Self::expecting(i))?;
                value.kind = if float { Kind::Float } else { Kind::Int };
                if measure {
                    value.measured = self.s.get(i..end).and_then(|t| number_len(t, float));
                }
                end
            }
        };
        value.end = end;
        if !measure {
            value.measured = value.measured.filter(|_| value.kind == Kind::Str);
        }
        Ok((value, end))
    }

    /// A value that is not wanted, from `i`: validated, and with `M` its compact length
    /// measured (None when a number in it is out of range; always None without `M`).
    /// Returns the offset after it.
    fn any<const M: bool>(&self, i: usize, depth: usize) -> Result<(usize, Option<usize>), Error> {
        match self.at(i) {
            Some(b'"') => {
                let s = self.string(i + 1)?;
                Ok((s.end, Some(s.measured)))
            }
            Some(b'{') => {
                self.nesting(i, depth)?;
                self.any_object::<M>(i + 1, depth + 1)
            }
            Some(b'[') => {
                self.nesting(i, depth)?;
                self.any_array::<M>(i + 1, depth + 1)
            }
            Some(b'n') if self.word(i, b"null") => Ok((i + 4, Some(4))),
            Some(b't') if self.word(i, b"true") => Ok((i + 4, Some(4))),
            Some(b'f') if self.word(i, b"false") => Ok((i + 5, Some(5))),
            None | Some(b'n' | b't' | b'f') => Err(Self::expecting(i)),
            Some(_) => {
                let (end, float) = self.number(i).ok_or(Self::expecting(i))?;
                let measured = if M {
                    self.s.get(i..end).and_then(|t| number_len(t, float))
                } else {
                    None
                };
                Ok((end, measured))
            }
        }
    }

    /// The members of an object that is not wanted, from `i` (after `{`).
    fn any_object<const M: bool>(
        &self,
        i: usize,
        depth: usize,
    ) -> Result<(usize, Option<usize>), Error> {
        self.any_items::<M>(i, b'}', |at| {
            let (key, value_at) = self.member_key(at)?;
            let (end, value) = self.any::<M>(value_at, depth)?;
            Ok((end, value, key.measured + 1))
        })
    }

    /// The items of an array that is not wanted (all arrays), from `i` (after `[`).
    fn any_array<const M: bool>(
        &self,
        i: usize,
        depth: usize,
    ) -> Result<(usize, Option<usize>), Error> {
        self.any_items::<M>(i, b']', |at| {
            let (end, value) = self.any::<M>(at, depth)?;
            Ok((end, value, 0))
        })
    }

    /// The items of an unwanted object or array, from `i` (after its opening byte) to
    /// `close`. `item` reads one item at its start: its end, its compact length when
    /// measured, and the bytes measured before its value (a member's key and colon); the
    /// brackets and commas are measured here.
    fn any_items<const M: bool>(
        &self,
        i: usize,
        close: u8,
        mut item: impl FnMut(usize) -> Result<(usize, Option<usize>, usize), Error>,
    ) -> Result<(usize, Option<usize>), Error> {
        let mut measured = Some(2usize);
        let mut i = self.skip_ws(i);
        if self.at(i) == Some(close) {
            return Ok((i + 1, measured));
        }
        let mut first = true;
        loop {
            let (end, value, before) = item(i)?;
            if M {
                measured = measured.map(|m| m + before + usize::from(!first));
            }
            first = false;
            match self.next_item(end, close, &mut measured, value, M)? {
                Step::Close(end) => return Ok((end, measured)),
                Step::Next(next) => i = next,
            }
        }
    }

    /// The end of the number at `i` (CPython's grammar) and whether it is a float.
    fn number(&self, start: usize) -> Option<(usize, bool)> {
        let digit = |i: usize| self.at(i).is_some_and(|b| b.is_ascii_digit());
        let mut i = start;
        if self.at(i) == Some(b'-') {
            i += 1;
        }
        match self.at(i) {
            Some(b'1'..=b'9') => {
                i += 1;
                while digit(i) {
                    i += 1;
                }
            }
            Some(b'0') => i += 1,
            _ => return None,
        }
        let mut float = false;
        if self.at(i) == Some(b'.') && digit(i + 1) {
            float = true;
            i += 2;
            while digit(i) {
                i += 1;
            }
        }
        if matches!(self.at(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(self.at(j), Some(b'-' | b'+')) {
                j += 1;
            }
            if digit(j) {
                while digit(j) {
                    j += 1;
                }
                float = true;
                i = j;
            }
        }
        Some((i, float))
    }

    /// The string whose body starts at `body` (after the quote): validated, its decoded and
    /// compact lengths counted on the way.
    #[inline(always)]
    fn string(&self, body: usize) -> Result<Str, Error> {
        let unterminated = || Error {
            message: "Unterminated string starting at",
            at: body - 1,
        };
        // Bytes the escapes take beyond their decoded text, and beyond their compact JSON:
        // the lengths follow from the span at the end, with nothing counted per plain run.
        let mut shrink = 0;
        let mut compact_shrink = 0;
        let mut i = body;
        loop {
            i = special_at(self.s, i, self.quotes);
            match self.at(i) {
                Some(b'"') => {
                    let raw = i - body;
                    return Ok(Str {
                        end: i + 1,
                        escaped: shrink != 0,
                        decoded: raw - shrink,
                        measured: 2 + raw - compact_shrink,
                    });
                }
                Some(b'\\') => {}
                Some(_) => {
                    return Err(Error {
                        message: "Invalid control character at",
                        at: i,
                    })
                }
                None => return Err(unterminated()),
            }
            // A backslash escape.
            let Some(c) = self.at(i + 1) else {
                return Err(unterminated());
            };
            let simple = SIMPLE_ESCAPES.get(usize::from(c)).copied().unwrap_or(0);
            if simple != 0 {
                shrink += 1;
                compact_shrink += 2 - usize::from(simple);
                i += 2;
                continue;
            }
            if c != b'u' {
                return Err(Error {
                    message: "Invalid \\escape",
                    at: i,
                });
            }
            let (code, end) = self.unicode_escape(i + 1)?;
            let raw = end - i;
            shrink += raw - utf8_len(code);
            compact_shrink += raw - escaped_len(code);
            i = end;
        }
    }

    /// A key whose body starts at `body`: as [`Parser::string`], but first one look at the
    /// 16 bytes there (two words, branch-free), where nearly every key ends without an
    /// escape (98% of them in the Copilot logs), instead of the search of any string.
    #[inline(always)]
    fn key(&self, body: usize) -> Result<Str, Error> {
        if let Some(chunk) = self.s.get(body..).and_then(<[u8]>::first_chunk::<16>) {
            let (lo, hi) = chunk.split_at(8);
            let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
            let bits =
                u128::from(special_bits(word(lo))) | (u128::from(special_bits(word(hi))) << 64);
            let len = usize::try_from(bits.trailing_zeros() / 8).unwrap_or(LANES);
            if chunk.get(len) == Some(&b'"') {
                return Ok(Str {
                    end: body + len + 1,
                    escaped: false,
                    decoded: len,
                    measured: 2 + len,
                });
            }
        }
        self.string(body)
    }

    /// A `\uXXXX` escape whose `u` is at `u` (and a following low surrogate, as CPython joins
    /// them): the code point (U+FFFD for a lone surrogate) and the offset after it.
    fn unicode_escape(&self, u: usize) -> Result<(u32, usize), Error> {
        let invalid = Error {
            message: "Invalid \\uXXXX escape",
            at: u,
        };
        let four = |at: usize| -> Option<u32> {
            let mut code = 0;
            for k in 0..4 {
                code = code * 16 + hex(self.at(at + k)?)?;
            }
            Some(code)
        };
        // CPython needs a character after the four digits (the closing quote at least).
        if u + 5 >= self.s.len() {
            return Err(invalid);
        }
        let code = four(u + 1).ok_or(invalid)?;
        let end = u + 5;
        if (0xD800..0xDC00).contains(&code)
            && end + 6 < self.s.len()
            && self.at(end) == Some(b'\\')
            && self.at(end + 1) == Some(b'u')
        {
            let low = four(end + 2).ok_or(Error {
                message: "Invalid \\uXXXX escape",
                at: end + 1,
            })?;
            if (0xDC00..0xE000).contains(&low) {
                return Ok((0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), end + 6));
            }
        }
        if (0xD800..0xE000).contains(&code) {
            return Ok((0xFFFD, end));
        }
        Ok((code, end))
    }

    /// The members of an object with wanted fields (`node`'s children), from `i` (after
    /// `{`); returns the offset after `}` and its compact length when measured.
    fn object(
        &mut self,
        i: usize,
        depth: usize,
        node: usize,
        measure: bool,
    ) -> Result<(usize, Option<usize>), Error> {
        let mut measured = Some(2usize);
        let mut i = self.skip_ws(i);
        if self.at(i) == Some(b'}') {
            return Ok((i + 1, measured));
        }
        let mut first = true;
        loop {
            let (key, value_at) = self.member_key(i)?;
            measured = measured.map(|m| m + key.measured + 1 + usize::from(!first));
            first = false;
            let child = self.schema.lookup(node, self.s, i + 1, &key);
            let (item, end) = self.member(value_at, depth, child, measure)?;
            match self.next_item(end, b'}', &mut measured, item, measure)? {
                Step::Close(end) => return Ok((end, measured)),
                Step::Next(next) => i = next,
            }
        }
    }

    /// The key of an object member whose opening quote is at `i`, and the offset of its
    /// value (after the `:` and any whitespace); CPython's errors where either is missing.
    fn member_key(&self, i: usize) -> Result<(Str, usize), Error> {
        if self.at(i) != Some(b'"') {
            return Err(Error {
                message: "Expecting property name enclosed in double quotes",
                at: i,
            });
        }
        let key = self.key(i + 1)?;
        let colon = self.skip_ws(key.end);
        if self.at(colon) != Some(b':') {
            return Err(Error {
                message: "Expecting ':' delimiter",
                at: colon,
            });
        }
        Ok((key, self.skip_ws(colon + 1)))
    }

    /// After an object member or array item ending at `end`: its compact length added to
    /// `measured` (None unless measuring), then the closing bracket or the comma before the
    /// next one.
    fn next_item(
        &self,
        end: usize,
        close: u8,
        measured: &mut Option<usize>,
        item: Option<usize>,
        measure: bool,
    ) -> Result<Step, Error> {
        *measured = match (*measured, item) {
            (Some(m), Some(v)) if measure => Some(m + v),
            _ => None,
        };
        let i = self.skip_ws(end);
        match self.at(i) {
            Some(b) if b == close => Ok(Step::Close(i + 1)),
            Some(b',') => Ok(Step::Next(self.skip_ws(i + 1))),
            _ => Err(Error {
                message: "Expecting ',' delimiter",
                at: i,
            }),
        }
    }

    /// A member's value, recorded in `fields` when it is a wanted field seen for the first
    /// time (dropped when its shape does not fit); returns its compact length when measured
    /// and the offset after it.
    fn member(
        &mut self,
        i: usize,
        depth: usize,
        child: Option<usize>,
        measure: bool,
    ) -> Result<(Option<usize>, usize), Error> {
        let Some(child) = child.filter(|&c| self.fields.claim(c)) else {
            let (end, measured) = if measure {
                self.any::<true>(i, depth)?
            } else {
                self.any::<false>(i, depth)?
            };
            return Ok((measured, end));
        };
        let shape = self.schema.nodes.get(child).map_or(Shape::Any, |n| n.shape);
        let opens_object = self.at(i) == Some(b'{');
        let (value, end) = match shape {
            Shape::Scalar => self.value(i, depth, None, measure)?,
            Shape::Struct => {
                let inner = if opens_object { Some(child) } else { None };
                self.value(i, depth, inner, measure)?
            }
            Shape::Any => self.value(i, depth, Some(child), true)?,
        };
        let fits = match shape {
            Shape::Scalar => !matches!(value.kind, Kind::Object | Kind::Array),
            Shape::Struct => matches!(value.kind, Kind::Object | Kind::Null),
            Shape::Any => true,
        };
        if fits {
            if let Some(slot) = self.fields.values.get_mut(child) {
                *slot = value;
            }
        } else {
            self.fields.drop_field(child);
        }
        Ok((value.measured, end))
    }
}

/// Bytes of a JSON number as polars re-serialises it (integers in 64 bits as written, else
/// the shortest round-trip digits in ryu's layout with an explicit exponent sign); None when
/// it does not fit a double.
fn number_len(text: &[u8], float: bool) -> Option<usize> {
    number_text(text, float).map(|t| t.len())
}

/// Bytes of a finite double in ryu's layout (see [`float_text`]).
pub fn float_len(value: f64) -> usize {
    float_text(value).len()
}

/// A finite double as polars re-serialises it: shortest round-trip digits in ryu's layout
/// with an explicit exponent sign (`100.0`, `0.001`, `1.5e-7`, `1e+16`).
pub fn float_text(value: f64) -> String {
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value == 0.0 {
        return format!("{sign}0.0");
    }
    let sci = format!("{:e}", value.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let n = i64::try_from(digits.len()).unwrap_or(1);
    let kk = exponent + 1;
    let zeros = |count: i64| "0".repeat(usize::try_from(count).unwrap_or(0));
    let body = if kk - n >= 0 && kk <= 16 {
        format!("{digits}{}.0", zeros(kk - n))
    } else if 0 < kk && kk <= 16 {
        let (int, frac) = digits.split_at(usize::try_from(kk).unwrap_or(0).min(digits.len()));
        format!("{int}.{frac}")
    } else if -5 < kk && kk <= 0 {
        format!("0.{}{digits}", zeros(-kk))
    } else {
        let (head, tail) = digits.split_at(1.min(digits.len()));
        let dot = if tail.is_empty() { "" } else { "." };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{head}{dot}{tail}e{exp_sign}{}", exponent.unsigned_abs())
    };
    format!("{sign}{body}")
}

/// A JSON number's compact text as polars re-serialises it (see [`number_len`]).
pub fn number_text(text: &[u8], float: bool) -> Option<String> {
    let text = std::str::from_utf8(text).ok()?;
    if !float && text != "-0" && text.parse::<i64>().is_ok() {
        return Some(text.to_string());
    }
    let value: f64 = text.parse().ok()?;
    value.is_finite().then(|| float_text(value))
}

/// The decoded text of a validated JSON string body (escapes resolved, lone surrogates
/// replaced by U+FFFD).
pub fn unescape(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while let Some(rest) = body.get(i..).filter(|r| !r.is_empty()) {
        let run = memchr::memchr(b'\\', rest).unwrap_or(rest.len());
        out.extend_from_slice(rest.get(..run).unwrap_or(rest));
        i += run;
        if i >= body.len() {
            break;
        }
        let code = match body.get(i + 1) {
            Some(b'u') => {
                let high = four_hex(body, i + 2);
                i += 6;
                match high {
                    Some(h @ 0xD800..=0xDBFF) => {
                        match (body.get(i..i + 2), four_hex(body, i + 2)) {
                            (Some(b"\\u"), Some(l @ 0xDC00..=0xDFFF)) => {
                                i += 6;
                                0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00)
                            }
                            _ => 0xFFFD,
                        }
                    }
                    Some(c) => c,
                    None => 0xFFFD,
                }
            }
            Some(&c) => {
                i += 2;
                u32::from(match c {
                    b'b' => 0x08,
                    b'f' => 0x0C,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    other => other,
                })
            }
            None => {
                i += 1;
                0xFFFD
            }
        };
        let ch = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
    out
}

fn four_hex(body: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(body.get(at..at + 4)?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::new(&[
            ("type", Shape::Scalar),
            ("data", Shape::Struct),
            ("data.model", Shape::Scalar),
            ("data.result", Shape::Any),
            ("data.result.content", Shape::Any),
        ])
    }

    fn err(line: &str) -> (String, usize) {
        let s = schema();
        let mut f = Fields::new(&s);
        let e = parse(line.as_bytes(), &s, &mut f).unwrap_err();
        (e.message.to_string(), char_index(line.as_bytes(), e.at))
    }

    #[test]
    fn errors_match_cpython() {
        let cases = [
            ("{\"a\":\"x\u{1}\"}", "Invalid control character at", 7),
            ("{\"a\":\"\\q\"}", "Invalid \\escape", 6),
            ("{\"a\":\"\\u12g4\"}", "Invalid \\uXXXX escape", 7),
            ("{\"a\":\"abc", "Unterminated string starting at", 5),
            ("{\"a\":", "Expecting value", 5),
            ("{\"a\" 1}", "Expecting ':' delimiter", 5),
            ("{\"a\":1 \"b\"}", "Expecting ',' delimiter", 7),
            (
                "{1:2}",
                "Expecting property name enclosed in double quotes",
                1,
            ),
            (
                "{\"a\":1,}",
                "Expecting property name enclosed in double quotes",
                7,
            ),
            ("[1,]", "Expecting value", 3),
            ("{\"a\":1}x", "Extra data", 7),
            ("01", "Extra data", 1),
            ("{\"a\":01}", "Expecting ',' delimiter", 6),
            ("-", "Expecting value", 0),
            ("{\"a\":1.}", "Expecting ',' delimiter", 6),
            ("{\"a\":NaN}", "Expecting value", 5),
            ("", "Expecting value", 0),
            ("{", "Expecting property name enclosed in double quotes", 1),
            ("{\"a\":\"\\u00e9é\",\"b\":x}", "Expecting value", 19),
            ("{\"a\":[1,2}", "Expecting ',' delimiter", 9),
            ("{\"a\u{1}\":1}", "Invalid control character at", 3),
            ("{\"abc", "Unterminated string starting at", 1),
            (
                "{\"aaaaaaaaaaaaaaaaaaaa\u{1}\":1}",
                "Invalid control character at",
                22,
            ),
            ("{\"a\\q\":1}", "Invalid \\escape", 3),
        ];
        for (line, message, at) in cases {
            assert_eq!(err(line), (message.to_string(), at), "{line}");
        }
    }

    #[test]
    fn fields_and_measures() {
        let s = schema();
        let mut f = Fields::new(&s);
        let line = br#"{"type":"x","data":{"model":{"id":1},"result":{"content":[1.50, "a\nb"],"k":1E3}}}"#;
        assert_eq!(parse(line, &s, &mut f), Ok(Kind::Object));
        assert!(f.dropped[s.find("data.model").unwrap()]);
        let content = f.get(s.find("data.result.content").unwrap());
        assert_eq!(content.measured, Some(r#"[1.5,"a\nb"]"#.len()));
        let result = f.get(s.find("data.result").unwrap());
        assert_eq!(
            result.measured,
            Some(r#"{"content":[1.5,"a\nb"],"k":1000.0}"#.len())
        );
    }

    #[test]
    fn keys_are_found_whatever_their_length_or_escapes() {
        let s = schema();
        let mut f = Fields::new(&s);
        let node = s.find("type").unwrap();
        for line in [
            &br#"{"type":"x"}"#[..],
            br#"{"t\u0079pe":"x"}"#,
            br#"{"aaaaaaaaaaaaaaaaaaaaaaaa":1,"type":"x","b":2}"#,
            br#"{"a\"b":1,"type":"x"}"#,
            br#"{"type" : "x" }"#,
        ] {
            assert_eq!(parse(line, &s, &mut f), Ok(Kind::Object));
            assert_eq!(f.get(node).kind, Kind::Str, "{line:?}");
        }
        assert_eq!(parse(br#"{"typ":"x"}"#, &s, &mut f), Ok(Kind::Object));
        assert_eq!(f.get(node).kind, Kind::Missing);
    }

    #[test]
    fn float_layout() {
        for (v, text) in [
            (100.0, "100.0"),
            (1.5e-7, "1.5e-7"),
            (1e16, "1e+16"),
            (1e-6, "1e-6"),
            (123.456, "123.456"),
            (0.1, "0.1"),
            (1e-5, "0.00001"),
            (-0.5, "-0.5"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ] {
            assert_eq!(float_len(v), text.len(), "{v}");
        }
    }

    #[test]
    fn quote_search_finds_what_plain_end_finds() {
        let Some(search) = Quotes::new().0 else {
            return; // no AVX2 here: every line takes plain_end
        };
        let mut line = Vec::new();
        for n in 0..200 {
            line.push(match n % 37 {
                0 => b'"',
                11 => b'\\',
                _ => b'a' + (n % 23) as u8,
            });
            if Quotes::new().for_line(&line).is_none() {
                continue;
            }
            for i in 0..=line.len() {
                assert_eq!(special_at(&line, i, Some(&search)), plain_end(&line, i));
            }
        }
        assert!(Quotes::new().for_line(b"{\"a\":\t1}").is_none());
        assert!(Quotes::new().for_line(b"{\"a\":1}").is_some());
        for at in [0, 63, 64, 100, 127, 128, 199] {
            let mut long = vec![b'a'; 200];
            assert_eq!(least_byte(&long), b'a');
            long[at] = 0x1F;
            assert_eq!(least_byte(&long), 0x1F, "{at}");
        }
        assert_eq!(least_byte(b""), u8::MAX);
    }

    #[test]
    fn unescapes() {
        assert_eq!(
            unescape(br#"a\nb\u00e9\ud83d\ude00\ud800x"#),
            "a\nbé😀\u{FFFD}x".as_bytes()
        );
    }
}
