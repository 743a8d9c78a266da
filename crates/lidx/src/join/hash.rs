//! Hash join (paper 1, section 4.3): the outer (smaller) table's tuples go into an
//! in-memory hash table, then the inner table streams past it. Build and probe are timed
//! apart by the caller (paper 1 leaves the build out).
//!
//! The hash table's memory ([`HASH_ENTRY_BYTES`] per outer tuple) and every scan's read
//! buffers are reserved from a [`MemoryBudget`] before they are allocated; over the budget
//! the build fails, naming what did not fit (the grace hash join partitions instead).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ops::Range;

use super::scan::{self, Scan};
use super::{JoinSink, JoinStats};
use crate::Result;
use crate::memory::{MemoryBudget, Reservation};
use crate::storage::{ReadMode, Table};

/// Bytes one outer tuple of distinct keys takes in the in-memory hash table, at most: the
/// map is sized for every tuple up front, with at most 8/7 slots per tuple rounded up to a
/// power of two (under 2.3 slots of 17 bytes: key, first value, control byte). What
/// planners assume per tuple; duplicates' further values are reserved as they arrive.
pub const HASH_ENTRY_BYTES: u64 = 48;

/// The outer table in memory, keyed for probing: each key's first value in a map sized
/// once (no rehashing, so no moment holds two tables), and the rare further values of
/// duplicated keys in one vector sorted by key.
pub struct HashTable {
    first: HashMap<u64, u64>,
    /// (key, value) of every value after a key's first, sorted by key, equal keys in input
    /// order.
    more: Vec<(u64, u64)>,
    stats: JoinStats,
    budget: MemoryBudget,
    _memory: Reservation,
}

/// Bytes of a map with room for `capacity` entries of (u64, u64): its slots and control
/// bytes.
fn map_bytes(capacity: usize) -> u64 {
    let slots = (capacity as u64 * 8 / 7).max(4).next_power_of_two();
    slots * 17 + 16
}

impl HashTable {
    /// Bytes a one-thread hash join of an outer table of `outer_tuples` reserves, read
    /// `read_tuples` at a time: the table and the buffers of one scan (each further
    /// thread's probe reserves its own scan's).
    pub fn memory_needed(outer_tuples: u64, read_tuples: u64) -> u64 {
        outer_tuples
            .saturating_mul(HASH_ENTRY_BYTES)
            .saturating_add(scan::buffer_bytes(read_tuples))
    }

    /// Reads `outer` (any order) into a hash table of key to values, its memory reserved
    /// from `budget` (which the probes' scans reserve from too): the map before it is
    /// allocated, the duplicates' vector as it grows, and its sort's scratch.
    pub fn build(
        outer: &Table,
        mode: ReadMode,
        read_tuples: u64,
        budget: &MemoryBudget,
    ) -> Result<HashTable> {
        let n = usize::try_from(outer.len()).unwrap_or(usize::MAX);
        let what = || format!("the hash table of {} outer tuples", outer.len());
        let mut memory = budget.reserve(map_bytes(n), what())?;
        let mut r = Scan::new(outer, mode, read_tuples, 0..outer.len(), budget)?;
        let mut first: HashMap<u64, u64> = HashMap::with_capacity(n);
        let mut more: Vec<(u64, u64)> = Vec::new();
        while let Some(t) = r.peek()? {
            match first.entry(t.key) {
                Entry::Vacant(slot) => {
                    slot.insert(t.value);
                }
                Entry::Occupied(_) => {
                    if more.len() == more.capacity() {
                        // Grow by an eighth: the vector never holds much more than it needs.
                        let extra = more.len() / 8 + 256;
                        memory.grow(extra as u64 * 16)?;
                        more.reserve_exact(extra);
                    }
                    more.push((t.key, t.value));
                }
            }
            r.advance();
        }
        if !more.is_empty() {
            // The stable sort's scratch: half the vector.
            let scratch = budget.reserve(more.len() as u64 * 8, what())?;
            more.sort_by_key(|&(k, _)| k);
            drop(scratch);
        }
        Ok(HashTable {
            first,
            more,
            stats: JoinStats {
                outer_io: r.stats(),
                ..JoinStats::default()
            },
            budget: budget.clone(),
            _memory: memory,
        })
    }

    /// Calls `each` with every value of `key`, in input order.
    #[inline]
    fn values_of(&self, key: u64, mut each: impl FnMut(u64) -> Result<()>) -> Result<u64> {
        let Some(&v) = self.first.get(&key) else {
            return Ok(0);
        };
        each(v)?;
        if self.more.is_empty() {
            return Ok(1);
        }
        let at = self.more.partition_point(|&(k, _)| k < key);
        let mut found = 1;
        for &(_, v) in self.more[at..].iter().take_while(|&&(k, _)| k == key) {
            each(v)?;
            found += 1;
        }
        Ok(found)
    }

    /// Streams `inner` (any order) past the table, emitting every match.
    pub fn probe(
        &self,
        inner: &Table,
        mode: ReadMode,
        read_tuples: u64,
        sink: &mut impl JoinSink,
    ) -> Result<JoinStats> {
        self.probe_range(inner, 0..inner.len(), mode, read_tuples, sink)
    }

    /// [`probe`](Self::probe) of inner positions `range` only (a thread's share).
    pub fn probe_range(
        &self,
        inner: &Table,
        range: Range<u64>,
        mode: ReadMode,
        read_tuples: u64,
        sink: &mut impl JoinSink,
    ) -> Result<JoinStats> {
        let mut s = Scan::new(inner, mode, read_tuples, range, &self.budget)?;
        let mut output = 0u64;
        while let Some(t) = s.peek()? {
            output += self.values_of(t.key, |v| sink.emit(t.key, v, t.value))?;
            s.advance();
        }
        Ok(JoinStats {
            inner_io: s.stats(),
            output,
            ..self.stats
        })
    }
}

/// Builds a hash table on `outer` within `budget` and probes it with `inner`.
pub fn hash_join(
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    read_tuples: u64,
    budget: &MemoryBudget,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    HashTable::build(outer, mode, read_tuples, budget)?.probe(inner, mode, read_tuples, sink)
}
