//! Column builders: the scanner's output, in Arrow's memory layout, with no Python objects.
//!
//! Strings are Arrow *views* (16 bytes per row: a short string inline, a longer one pointing
//! into a data buffer), so a value repeated on many rows (a file's path, its session id, an
//! event type, a model) is stored once and pointed at: [`StrColumn::push_shared`] keeps a
//! small dictionary per column for that. Validity (and booleans) are bitmaps, a bit per row,
//! least significant bit first. polars' own string type and Arrow's bitmaps are the same
//! layout, so handing these over copies nothing.
#![forbid(unsafe_code)]

use rustc_hash::FxHashMap;

/// Largest data buffer of a string column (view offsets are 32 bits).
const BUFFER_LIMIT: usize = 1 << 30;
/// A string column's first data buffer, and the most a later one starts with: a full buffer
/// is followed by a new one (twice its size, up to this) rather than grown, so no string is
/// ever copied twice.
const FIRST_BUFFER: usize = 64 << 10;
const BUFFER_STEP: usize = 8 << 20;

/// A growable bitmap in Arrow's layout (bit `i` is bit `i % 8` of byte `i / 8`); the bits
/// after the last are always zero, so appending zeros is only growing the bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bits {
    bytes: Vec<u8>,
    len: usize,
}

impl Bits {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room for `n` more bits.
    pub fn reserve(&mut self, n: usize) {
        let bytes = (self.len + n).div_ceil(8);
        self.bytes.reserve(bytes.saturating_sub(self.bytes.len()));
    }

    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if let Some(byte) = self.bytes.last_mut() {
            *byte |= u8::from(bit) << (self.len % 8);
        }
        self.len += 1;
    }

    /// Append `n` copies of `bit`, a byte at a time.
    pub fn extend(&mut self, bit: bool, n: usize) {
        let len = self.len + n;
        if bit {
            // The last byte's free bits, then whole bytes; the bits after `len` are cleared.
            if let Some(byte) = self
                .bytes
                .last_mut()
                .filter(|_| !self.len.is_multiple_of(8))
            {
                *byte |= 0xFF << (self.len % 8);
            }
            self.bytes.resize(len.div_ceil(8), 0xFF);
            if let Some(byte) = self.bytes.last_mut().filter(|_| !len.is_multiple_of(8)) {
                *byte &= 0xFF >> (8 - len % 8);
            }
        } else {
            self.bytes.resize(len.div_ceil(8), 0);
        }
        self.len = len;
    }

    /// Append the bits of `other`.
    pub fn append(&mut self, other: &Bits) {
        (0..other.len).for_each(|i| self.push(other.get(i)));
    }

    /// Bit `i` (false past the end).
    pub fn get(&self, i: usize) -> bool {
        self.bytes
            .get(i / 8)
            .is_some_and(|byte| (byte >> (i % 8)) & 1 == 1)
    }

    /// The bytes (the last one's unused bits zero), for an Arrow buffer.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

impl FromIterator<bool> for Bits {
    fn from_iter<I: IntoIterator<Item = bool>>(bits: I) -> Bits {
        let mut out = Bits::default();
        bits.into_iter().for_each(|bit| out.push(bit));
        out
    }
}

/// A nullable column of strings as Arrow views.
#[derive(Default)]
pub struct StrColumn {
    pub views: Vec<u128>,
    pub valid: Bits,
    pub buffers: Vec<Vec<u8>>,
    shared: FxHashMap<Vec<u8>, u128>,
    /// The last shared string pushed and its view (the same value often fills a run of rows).
    last: Option<(Vec<u8>, u128)>,
}

impl StrColumn {
    pub fn len(&self) -> usize {
        self.views.len()
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    /// Room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.views.reserve(rows);
        self.valid.reserve(rows);
    }

    /// Nulls up to `rows` rows.
    pub fn pad(&mut self, rows: usize) {
        if self.views.len() < rows {
            self.valid.extend(false, rows - self.views.len());
            self.views.resize(rows, 0);
        }
    }

    pub fn push_null(&mut self) {
        self.views.push(0);
        self.valid.push(false);
    }

    /// Append a string, stored with this row only.
    pub fn push(&mut self, text: &[u8]) {
        let view = self.view(text);
        self.views.push(view);
        self.valid.push(true);
    }

    /// Append a string likely repeated on other rows: stored once, pointed at by all of them.
    pub fn push_shared(&mut self, text: &[u8]) {
        self.push_shared_n(text, 1);
    }

    /// Append `n` rows of a shared string (see [`StrColumn::push_shared`]).
    pub fn push_shared_n(&mut self, text: &[u8], n: usize) {
        let view = self.shared_view(text);
        self.views.resize(self.views.len() + n, view);
        self.valid.extend(true, n);
    }

    fn shared_view(&mut self, text: &[u8]) -> u128 {
        if text.len() <= 12 {
            return self.view(text); // inline: nothing to share
        }
        if let Some((last, view)) = &self.last {
            if last.as_slice() == text {
                return *view;
            }
        }
        let view = match self.shared.get(text) {
            Some(&view) => view,
            None => {
                let view = self.view(text);
                if self.shared.len() < 4096 {
                    self.shared.insert(text.to_vec(), view);
                }
                view
            }
        };
        match &mut self.last {
            Some((last, at)) => {
                last.clear();
                last.extend_from_slice(text);
                *at = view;
            }
            None => self.last = Some((text.to_vec(), view)),
        }
        view
    }

    pub fn push_opt(&mut self, text: Option<&[u8]>, shared: bool) {
        match (text, shared) {
            (Some(t), true) => self.push_shared(t),
            (Some(t), false) => self.push(t),
            (None, _) => self.push_null(),
        }
    }

    /// The view of `text`, its bytes copied into a data buffer unless it is inline.
    fn view(&mut self, text: &[u8]) -> u128 {
        let len = text.len();
        let length = u32::try_from(len).unwrap_or(u32::MAX);
        if len <= 12 {
            let mut bytes = [0u8; 16];
            bytes[..4].copy_from_slice(&length.to_le_bytes());
            if let Some(dst) = bytes.get_mut(4..4 + len) {
                dst.copy_from_slice(text);
            }
            return u128::from_le_bytes(bytes);
        }
        let full = |b: &Vec<u8>| b.len() + len > b.capacity().min(BUFFER_LIMIT);
        if self.buffers.last().is_none_or(full) {
            let next = self
                .buffers
                .last()
                .map_or(FIRST_BUFFER, |b| (b.capacity() * 2).min(BUFFER_STEP));
            self.buffers.push(Vec::with_capacity(len.max(next)));
        }
        let index = self.buffers.len() - 1;
        let buffer = self.buffers.last_mut().map_or(0, |b| {
            let offset = b.len();
            b.extend_from_slice(text);
            offset
        });
        let mut bytes = [0u8; 16];
        bytes[..4].copy_from_slice(&length.to_le_bytes());
        if let Some(prefix) = text.get(..4) {
            bytes[4..8].copy_from_slice(prefix);
        }
        bytes[8..12].copy_from_slice(&u32::try_from(index).unwrap_or(0).to_le_bytes());
        bytes[12..16].copy_from_slice(&u32::try_from(buffer).unwrap_or(0).to_le_bytes());
        u128::from_le_bytes(bytes)
    }

    /// The string of row `row` (None when null), for tests and checks.
    pub fn get(&self, row: usize) -> Option<Vec<u8>> {
        if !self.valid.get(row) {
            return None;
        }
        let bytes = self.views.get(row)?.to_le_bytes();
        let len = u32::from_le_bytes(bytes[..4].try_into().ok()?) as usize;
        if len <= 12 {
            return bytes.get(4..4 + len).map(<[u8]>::to_vec);
        }
        let index = u32::from_le_bytes(bytes[8..12].try_into().ok()?) as usize;
        let offset = u32::from_le_bytes(bytes[12..16].try_into().ok()?) as usize;
        self.buffers
            .get(index)?
            .get(offset..offset + len)
            .map(<[u8]>::to_vec)
    }
}

/// A nullable column of fixed-width values (null rows hold the default value).
#[derive(Default)]
pub struct Nullable<T> {
    pub values: Vec<T>,
    pub valid: Bits,
}

impl<T: Default + Clone> Nullable<T> {
    /// Room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.values.reserve(rows);
        self.valid.reserve(rows);
    }

    /// Nulls up to `rows` rows.
    pub fn pad(&mut self, rows: usize) {
        if self.values.len() < rows {
            self.valid.extend(false, rows - self.values.len());
            self.values.resize(rows, T::default());
        }
    }

    pub fn push(&mut self, value: Option<T>) {
        self.valid.push(value.is_some());
        self.values.push(value.unwrap_or_default());
    }
}

/// A nullable column of 64-bit integers.
pub type IntColumn = Nullable<i64>;
/// A nullable column of 32-bit integers.
pub type Int32Column = Nullable<i32>;

/// A nullable column of booleans, values and validity both bitmaps (null rows are false).
#[derive(Default)]
pub struct BoolColumn {
    pub values: Bits,
    pub valid: Bits,
}

impl BoolColumn {
    /// Room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.values.reserve(rows);
        self.valid.reserve(rows);
    }

    /// Nulls up to `rows` rows.
    pub fn pad(&mut self, rows: usize) {
        if let Some(n) = rows.checked_sub(self.values.len()) {
            self.values.extend(false, n);
            self.valid.extend(false, n);
        }
    }

    pub fn push(&mut self, value: Option<bool>) {
        self.valid.push(value.is_some());
        self.values.push(value.unwrap_or(false));
    }
}

/// One output column, of any of the kinds above.
pub enum Column {
    Str(StrColumn),
    Int(IntColumn),
    Int32(Int32Column),
    Bool(BoolColumn),
    /// Milliseconds since the epoch, UTC.
    Time(IntColumn),
}

impl Column {
    /// Nulls up to `rows` rows.
    pub fn pad(&mut self, rows: usize) {
        match self {
            Column::Str(c) => c.pad(rows),
            Column::Int(c) | Column::Time(c) => c.pad(rows),
            Column::Int32(c) => c.pad(rows),
            Column::Bool(c) => c.pad(rows),
        }
    }

    /// Room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        match self {
            Column::Str(c) => c.reserve(rows),
            Column::Int(c) | Column::Time(c) => c.reserve(rows),
            Column::Int32(c) => c.reserve(rows),
            Column::Bool(c) => c.reserve(rows),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Column::Str(c) => c.len(),
            Column::Int(c) | Column::Time(c) => c.values.len(),
            Column::Int32(c) => c.values.len(),
            Column::Bool(c) => c.values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Named columns of equal length, but that an empty column is all null (the table's rows
/// of nulls).
pub struct Table {
    pub names: Vec<&'static str>,
    pub columns: Vec<Column>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.columns.iter().map(Column::len).max().unwrap_or(0)
    }

    /// Every column at the table's length (empty ones as nulls).
    pub fn pad(&mut self) {
        let rows = self.rows();
        for column in &mut self.columns {
            column.pad(rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
        /// Pushing, padding and appending bits agree with a list of flags, and the bytes hold
        /// nothing after the last bit (Arrow's layout).
        #[test]
        fn bits_match_a_list_of_flags(steps in prop::collection::vec((any::<bool>(), 0usize..20, any::<bool>()), 0..40)) {
            let mut bits = Bits::default();
            let mut flags: Vec<bool> = Vec::new();
            for (bit, n, one) in steps {
                if one {
                    bits.push(bit);
                    flags.push(bit);
                } else {
                    bits.extend(bit, n);
                    flags.extend(std::iter::repeat_n(bit, n));
                }
            }
            let mut twice = bits.clone();
            twice.append(&bits);
            prop_assert_eq!(bits.len(), flags.len());
            for (i, &flag) in flags.iter().enumerate() {
                prop_assert_eq!(bits.get(i), flag);
                prop_assert_eq!(twice.get(i + flags.len()), flag);
            }
            prop_assert!(!bits.get(flags.len()));
            let collected: Bits = flags.iter().copied().collect();
            prop_assert_eq!(&collected, &bits);
            let bytes = bits.into_bytes();
            prop_assert_eq!(bytes.len(), flags.len().div_ceil(8));
            let set: u32 = bytes.iter().map(|b| b.count_ones()).sum();
            prop_assert_eq!(set as usize, flags.iter().filter(|&&f| f).count());
        }
    }
}
