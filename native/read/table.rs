//! Column builders: the scanner's output, in Arrow's memory layout, with no Python objects.
//!
//! Strings are Arrow *views* (16 bytes per row: a short string inline, a longer one pointing
//! into a data buffer), so a value repeated on many rows (a file's path, its session id, an
//! event type, a model) is stored once and pointed at: [`StrColumn::push_shared`] keeps a
//! small dictionary per column for that. Validity (and booleans) are bitmaps, a bit per row,
//! least significant bit first. polars' own string type and Arrow's bitmaps are the same
//! layout, so handing these over copies nothing. Once Arrow drops them, their memory goes to
//! a [`Pool`] the next batches' columns are built in.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustc_hash::FxHashMap;

/// Largest data buffer of a string column (view offsets are 32 bits).
const BUFFER_LIMIT: usize = 1 << 30;
/// A string column's first data buffer, and the most a later one starts with: a full buffer
/// is followed by a new one (twice its size, up to this) rather than grown, so no string is
/// ever copied twice.
const FIRST_BUFFER: usize = 64 << 10;
const BUFFER_STEP: usize = 8 << 20;

/// Most bytes of freed column memory (capacity, of which only what was written is resident)
/// a pool keeps: about two groups' columns, as two groups are scanned at a time (the
/// columns of a group of 64 MB of Copilot logs hold some 32 MB).
const KEPT_LIMIT: usize = 64 << 20;
/// The smallest block a pool keeps.
const KEPT_SMALLEST: usize = 64 << 10;

/// Column memory freed by batches done with, for the next batch's columns ([`Pool::take`]).
///
/// The process maps every large block on its own and unmaps it on free (a fixed glibc mmap
/// threshold, for peak RSS), so a batch's fresh columns cost a page fault per 4 KB written,
/// some 4 us each; the memory of a batch before, taken from here, is already resident. It is
/// kept only while the pool is open ([`Pool::open`], by each scan) and up to a bound;
/// [`Pool::release`] frees it and closes the pool, so what the last scan leaves is not held
/// while the rest of a run needs the memory.
pub struct Pool {
    kept: Mutex<Kept>,
}

/// What a [`Pool`] holds: blocks by element type, their bytes, and whether it keeps more.
pub struct Kept {
    views: Vec<Vec<u128>>,
    longs: Vec<Vec<i64>>,
    ints: Vec<Vec<i32>>,
    bytes: Vec<Vec<u8>>,
    size: usize,
    open: bool,
}

impl Kept {
    const EMPTY: Kept = Kept {
        views: Vec::new(),
        longs: Vec::new(),
        ints: Vec::new(),
        bytes: Vec::new(),
        size: 0,
        open: false,
    };
}

/// The element types of recycled column memory.
pub trait Recycled: Sized + Send + Sync + std::panic::RefUnwindSafe + 'static {
    /// The pool's blocks of this type.
    fn kept(kept: &mut Kept) -> &mut Vec<Vec<Self>>;
}

macro_rules! recycled {
    ($($t:ty => $field:ident),*) => {$(
        impl Recycled for $t {
            fn kept(kept: &mut Kept) -> &mut Vec<Vec<Self>> {
                &mut kept.$field
            }
        }
    )*};
}
recycled!(u128 => views, i64 => longs, i32 => ints, u8 => bytes);

/// The process's pool: the scanner's columns take from it, the Python binding gives their
/// memory back when Arrow drops it.
pub static POOL: Pool = Pool::new();

impl Pool {
    pub const fn new() -> Pool {
        Pool {
            kept: Mutex::new(Kept::EMPTY),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keep freed column memory from now on (a scan starts).
    pub fn open(&self) {
        self.lock().open = true;
    }

    /// Free the kept memory and keep none until the next [`Pool::open`]; the bytes freed.
    pub fn release(&self) -> usize {
        let mut kept = self.lock();
        let freed = std::mem::replace(&mut *kept, Kept::EMPTY);
        drop(kept); // freed outside the lock
        freed.size
    }

    /// Bytes of memory kept.
    pub fn kept_bytes(&self) -> usize {
        self.lock().size
    }

    /// An empty vector with room for `n` values: the smallest kept one that has it, else the
    /// largest, grown (growing a mapped block remaps its pages, it copies none), else a new one.
    pub fn take<T: Recycled>(&self, n: usize) -> Vec<T> {
        let mut guard = self.lock();
        let kept = &mut *guard;
        let list = T::kept(kept);
        let best = list
            .iter()
            .enumerate()
            .filter(|(_, v)| v.capacity() >= n)
            .min_by_key(|(_, v)| v.capacity())
            .or_else(|| list.iter().enumerate().max_by_key(|(_, v)| v.capacity()))
            .map(|(at, _)| at);
        let Some(mut values) = best.map(|at| list.swap_remove(at)) else {
            drop(guard);
            return Vec::with_capacity(n);
        };
        kept.size = kept
            .size
            .saturating_sub(std::mem::size_of_val(values.spare_capacity_mut()));
        drop(guard);
        values.reserve(n);
        values
    }

    /// Give back a column's memory once nothing reads it: kept for [`Pool::take`] while the
    /// pool is open and has room, else freed. Small blocks are freed: the allocator's heap
    /// reuses those (only large ones are mapped on their own), and kept they would be taken
    /// and grown.
    pub fn recycle<T: Recycled>(&self, mut values: Vec<T>) {
        values.clear();
        let bytes = std::mem::size_of_val(values.spare_capacity_mut());
        if bytes < KEPT_SMALLEST {
            return;
        }
        let mut kept = self.lock();
        if kept.open && kept.size + bytes <= KEPT_LIMIT {
            kept.size += bytes;
            T::kept(&mut kept).push(values);
            return;
        }
        drop(kept);
        drop(values); // freed outside the lock
    }
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::new()
    }
}

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

    /// Room for `rows` more rows (in recycled memory, the first time).
    pub fn reserve(&mut self, rows: usize) {
        if self.views.capacity() == 0 {
            self.views = POOL.take(rows);
        }
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
        let view = self.shared_view(text);
        self.views.push(view);
        self.valid.push(true);
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

    /// The view of `text`, its bytes copied into a data buffer unless it is inline (no row
    /// is added: a store of text, as the fold's store of paths, keeps only the buffers).
    pub fn view(&mut self, text: &[u8]) -> u128 {
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
            self.buffers.push(POOL.take(len.max(next)));
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
        self.text(*self.views.get(row)?).map(Cow::into_owned)
    }

    /// The bytes a view points at (inline: copied out of it); None when it points outside the
    /// data buffers.
    fn text(&self, view: u128) -> Option<Cow<'_, [u8]>> {
        let bytes = view.to_le_bytes();
        let word = |at: usize| -> Option<usize> {
            let four = bytes.get(at..at + 4)?.try_into().ok()?;
            usize::try_from(u32::from_le_bytes(four)).ok()
        };
        let len = word(0)?;
        if len <= 12 {
            return bytes.get(4..4 + len).map(|b| Cow::Owned(b.to_vec()));
        }
        let (index, offset) = (word(8)?, word(12)?);
        let text = self
            .buffers
            .get(index)?
            .get(offset..offset.checked_add(len)?)?;
        Some(Cow::Borrowed(text))
    }

    /// The first row (null or not) whose view Arrow's validation would reject, None when
    /// there is none: a string that is not UTF-8, a view pointing outside the data buffers
    /// or whose prefix is not its string's, an inline view with bytes after its string. The
    /// binding hands the scanner's columns to Arrow without that validation (`python.rs`),
    /// which is sound only while this finds nothing; the fuzz target holds the scanner to it.
    pub fn invalid_view(&self) -> Option<usize> {
        self.views.iter().position(|view| {
            let bytes = view.to_le_bytes();
            let Some(text) = self.text(*view) else {
                return true;
            };
            let fits = if text.len() <= 12 {
                bytes
                    .get(4 + text.len()..)
                    .is_some_and(|pad| pad.iter().all(|&b| b == 0))
            } else {
                text.get(..4) == bytes.get(4..8)
            };
            !fits || std::str::from_utf8(&text).is_err()
        })
    }
}

/// A nullable column of fixed-width values (null rows hold the default value).
#[derive(Default)]
pub struct Nullable<T> {
    pub values: Vec<T>,
    pub valid: Bits,
}

impl<T: Default + Clone + Recycled> Nullable<T> {
    /// Room for `rows` more rows (in recycled memory, the first time).
    pub fn reserve(&mut self, rows: usize) {
        if self.values.capacity() == 0 {
            self.values = POOL.take(rows);
        }
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
    /// Nulls up to `rows` rows (inline: a column filled row after row has none to add, and
    /// a row fills a few columns).
    #[inline]
    pub fn pad(&mut self, rows: usize) {
        if self.len() < rows {
            self.pad_to(rows);
        }
    }

    #[inline(never)]
    fn pad_to(&mut self, rows: usize) {
        match self {
            Column::Str(c) => c.pad(rows),
            Column::Int(c) | Column::Time(c) => c.pad(rows),
            Column::Int32(c) => c.pad(rows),
            Column::Bool(c) => c.pad(rows),
        }
    }

    /// Room for `rows` rows if the column has none yet: called before its first value, so a
    /// column no row fills takes no memory (recycled memory goes to the columns written).
    #[inline]
    pub fn reserve_first(&mut self, rows: usize) {
        let empty = match self {
            Column::Str(c) => c.views.capacity() == 0,
            Column::Int(c) | Column::Time(c) => c.values.capacity() == 0,
            Column::Int32(c) => c.values.capacity() == 0,
            Column::Bool(c) => c.values.bytes.capacity() == 0,
        };
        if empty {
            self.reserve(rows);
        }
    }

    #[inline(never)]
    fn reserve(&mut self, rows: usize) {
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

    /// The check the binding relies on finds nothing in a column built by its own pushes, and
    /// finds each kind of view Arrow would reject.
    #[test]
    fn invalid_view_finds_what_arrow_rejects() {
        let mut column = StrColumn::default();
        column.push("short é".as_bytes());
        column.push_null();
        column.push_shared("a longer string, in a data buffer: ü".as_bytes());
        column.pad(4);
        assert_eq!(column.invalid_view(), None);
        let bad = |edit: &dyn Fn(&mut StrColumn)| {
            let mut broken = StrColumn::default();
            broken.push(b"inline");
            broken.push("a longer string, in a data buffer: ü".as_bytes());
            edit(&mut broken);
            broken.invalid_view()
        };
        let last_byte = |c: &mut StrColumn| {
            if let Some(b) = c.buffers.last_mut().and_then(|b| b.last_mut()) {
                *b = 0xFF; // half of `ü` made not UTF-8
            }
        };
        assert_eq!(bad(&last_byte), Some(1));
        let shorter = |c: &mut StrColumn| {
            if let Some(b) = c.buffers.last_mut() {
                b.pop(); // the view points past the buffer's end
            }
        };
        assert_eq!(bad(&shorter), Some(1));
        let prefix = |c: &mut StrColumn| {
            if let Some(b) = c.buffers.last_mut().and_then(|b| b.first_mut()) {
                *b = b'A'; // the view's prefix is no longer its string's
            }
        };
        assert_eq!(bad(&prefix), Some(1));
        let padding = |c: &mut StrColumn| {
            if let Some(v) = c.views.first_mut() {
                *v |= 1 << 120; // a byte after the inline string
            }
        };
        assert_eq!(bad(&padding), Some(0));
        let inline_utf8 = |c: &mut StrColumn| {
            if let Some(v) = c.views.first_mut() {
                *v |= 0xFF << 32; // the inline string's first byte
            }
        };
        assert_eq!(bad(&inline_utf8), Some(0));
    }

    /// A pool keeps large blocks only while open and within its bound, gives the smallest
    /// that fits (else the largest, grown), and frees all on release.
    #[test]
    fn pool_recycles_blocks_while_open() {
        let pool = Pool::new();
        let block = |n: usize| -> Vec<u128> { (0..n as u128).collect() };
        pool.recycle(block(10_000));
        assert_eq!(pool.kept_bytes(), 0, "closed: nothing kept");
        pool.open();
        pool.recycle(block(100));
        assert_eq!(pool.kept_bytes(), 0, "a small block is freed");
        let (small, large) = (block(8_000), block(20_000));
        let small_at = small.as_ptr();
        let (small_bytes, large_bytes) = (small.capacity() * 16, large.capacity() * 16);
        pool.recycle(small);
        pool.recycle(large);
        assert_eq!(pool.kept_bytes(), small_bytes + large_bytes);
        assert!(
            pool.take::<i64>(8_000).capacity() >= 8_000,
            "another type: a new block"
        );
        let taken = pool.take::<u128>(5_000);
        assert!(taken.is_empty() && taken.capacity() >= 5_000);
        assert_eq!(taken.as_ptr(), small_at, "the smallest block that fits");
        assert_eq!(pool.kept_bytes(), large_bytes);
        let grown = pool.take::<u128>(30_000);
        assert!(grown.capacity() >= 30_000);
        assert_eq!(pool.kept_bytes(), 0);
        pool.recycle(vec![0i64; KEPT_LIMIT / 8 + 1]);
        assert_eq!(pool.kept_bytes(), 0, "over the bound: freed");
        pool.recycle(taken);
        assert_eq!(pool.release(), small_bytes);
        assert_eq!(pool.kept_bytes(), 0);
        pool.recycle(grown);
        assert_eq!(pool.kept_bytes(), 0, "released: closed again");
    }

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
