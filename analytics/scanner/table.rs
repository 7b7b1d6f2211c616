//! Column builders: the scanner's output, in Arrow's memory layout, with no Python objects.
//!
//! Strings are Arrow *views* (16 bytes per row: a short string inline, a longer one pointing
//! into a data buffer), so a value repeated on many rows (a file's path, its session id, an
//! event type, a model) is stored once and pointed at: [`StrColumn::push_shared`] keeps a
//! small dictionary per column for that. polars' own string type is the same layout, so
//! handing these over copies nothing.
#![forbid(unsafe_code)]

use std::collections::HashMap;

/// Largest data buffer of a string column (view offsets are 32 bits).
const BUFFER_LIMIT: usize = 1 << 30;

/// A nullable column of strings as Arrow views.
#[derive(Default)]
pub struct StrColumn {
    pub views: Vec<u128>,
    pub valid: Vec<bool>,
    pub buffers: Vec<Vec<u8>>,
    shared: HashMap<Vec<u8>, u128>,
}

impl StrColumn {
    pub fn len(&self) -> usize {
        self.views.len()
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
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
        self.views.push(view);
        self.valid.push(true);
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
        let needs_new = self
            .buffers
            .last()
            .is_none_or(|b| b.len() + len > BUFFER_LIMIT);
        if needs_new {
            self.buffers.push(Vec::with_capacity(len.max(64 << 10)));
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
        if !self.valid.get(row).copied().unwrap_or(false) {
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
    pub valid: Vec<bool>,
}

impl<T: Default> Nullable<T> {
    pub fn push(&mut self, value: Option<T>) {
        self.valid.push(value.is_some());
        self.values.push(value.unwrap_or_default());
    }
}

/// A nullable column of 64-bit integers.
pub type IntColumn = Nullable<i64>;
/// A nullable column of booleans.
pub type BoolColumn = Nullable<bool>;

/// One output column, of any of the kinds above.
pub enum Column {
    Str(StrColumn),
    Int(IntColumn),
    Int32(IntColumn),
    Bool(BoolColumn),
    /// Milliseconds since the epoch, UTC.
    Time(IntColumn),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::Str(c) => c.len(),
            Column::Int(c) | Column::Int32(c) | Column::Time(c) => c.values.len(),
            Column::Bool(c) => c.values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Named columns of equal length.
pub struct Table {
    pub names: Vec<&'static str>,
    pub columns: Vec<Column>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }
}
