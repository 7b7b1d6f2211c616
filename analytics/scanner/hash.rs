//! A fast hasher for the engine's own maps and sets, keyed by short strings and numbers.
//!
//! The standard library's default (SipHash with a random key) resists hash flooding, at a
//! cost that showed in the Copilot pass's profile: its maps take a key per event (file and
//! line, event ids, row numbers). The keys here come from the user's own logs, read once on
//! their own machine, so speed wins: this is the multiply-rotate word hash of the Firefox and
//! rustc compilers ("FxHash"), a word of input at a time. Iteration order, as with the
//! default, is no order the output may depend on.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A `HashSet` with [`FastHasher`].
pub type FastSet<T> = HashSet<T, BuildHasherDefault<FastHasher>>;

/// The multiplier of each step: an odd constant with well-mixed bits (FxHash's).
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The FxHash state: each word rotates the state, is mixed in and multiplied.
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buffer = [0u8; 8];
            buffer.copy_from_slice(word);
            self.add(u64::from_le_bytes(buffer));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut buffer = [0u8; 8];
            for (slot, byte) in buffer.iter_mut().zip(rest) {
                *slot = *byte;
            }
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(buffer) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn write_i32(&mut self, n: i32) {
        self.write_u32(n as u32);
    }

    #[inline]
    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash_of<T: Hash>(value: T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(value)
    }

    #[test]
    fn equal_keys_hash_alike_and_near_ones_apart() {
        assert_eq!(hash_of(("f.jsonl", 3i64)), hash_of(("f.jsonl", 3i64)));
        assert_ne!(hash_of("a"), hash_of("a\0"));
        assert_ne!(hash_of(("ab", "c")), hash_of(("a", "bc")));
        assert_ne!(hash_of(1usize), hash_of(2usize));
        let long = "session-0123456789abcdef";
        assert_ne!(hash_of(long), hash_of("session-0123456789abcdeg"));
    }

    #[test]
    fn maps_work_as_maps() {
        let mut map: FastMap<&str, usize> = FastMap::default();
        for (i, key) in ["x", "y", "x", "z"].into_iter().enumerate() {
            *map.entry(key).or_default() += i;
        }
        assert_eq!(map.get("x"), Some(&2));
        assert_eq!(map.len(), 3);
        let set: FastSet<i64> = (0..1000).collect();
        assert!((0..1000).all(|n| set.contains(&n)) && !set.contains(&1000));
    }
}
