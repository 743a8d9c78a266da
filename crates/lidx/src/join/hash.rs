//! Hash join (paper 1, section 4.3): the outer (smaller) table's tuples go into an
//! in-memory hash table, then the inner table streams past it. Build and probe are timed
//! apart by the caller (paper 1 leaves the build out).
//!
//! The hash table's memory ([`HASH_ENTRY_BYTES`] per outer tuple) and every scan's read
//! buffers are reserved from a [`MemoryBudget`] before they are allocated; over the budget
//! the build fails, naming what did not fit (the grace hash join partitions instead).

use std::collections::HashMap;
use std::ops::Range;

use super::scan::{self, Scan};
use super::{JoinSink, JoinStats};
use crate::Result;
use crate::memory::{MemoryBudget, Reservation};
use crate::storage::{ReadMode, Table};

/// Estimated bytes of one outer tuple in the in-memory hash table (key, value, the map's
/// slot and the value list's share): what the table reserves per tuple.
pub const HASH_ENTRY_BYTES: u64 = 48;

/// The outer table in memory, keyed for probing.
pub struct HashTable {
    map: HashMap<u64, Vec<u64>>,
    stats: JoinStats,
    budget: MemoryBudget,
    _memory: Reservation,
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
    /// from `budget` (which the probes' scans reserve from too).
    pub fn build(
        outer: &Table,
        mode: ReadMode,
        read_tuples: u64,
        budget: &MemoryBudget,
    ) -> Result<HashTable> {
        let memory = budget.reserve(
            outer.len().saturating_mul(HASH_ENTRY_BYTES),
            format!("the hash table of {} outer tuples", outer.len()),
        )?;
        let mut r = Scan::new(outer, mode, read_tuples, 0..outer.len(), budget)?;
        let mut map: HashMap<u64, Vec<u64>> = HashMap::new();
        while let Some(t) = r.peek()? {
            map.entry(t.key).or_default().push(t.value);
            r.advance();
        }
        Ok(HashTable {
            map,
            stats: JoinStats {
                outer_io: r.stats(),
                ..JoinStats::default()
            },
            budget: budget.clone(),
            _memory: memory,
        })
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
            if let Some(values) = self.map.get(&t.key) {
                for &v in values {
                    sink.emit(t.key, v, t.value)?;
                }
                output += values.len() as u64;
            }
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
