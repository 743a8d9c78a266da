//! Hash join (paper 1, section 4.3): the outer (smaller) table's tuples go into an
//! in-memory hash table, then the inner table streams past it. Build and probe are timed
//! apart by the caller (paper 1 leaves the build out).

use std::collections::HashMap;
use std::ops::Range;

use super::scan::Scan;
use super::{JoinSink, JoinStats};
use crate::Result;
use crate::storage::{ReadMode, Table};

/// The outer table in memory, keyed for probing.
pub struct HashTable {
    map: HashMap<u64, Vec<u64>>,
    stats: JoinStats,
}

impl HashTable {
    /// Reads `outer` (any order) into a hash table of key to values.
    pub fn build(outer: &Table, mode: ReadMode, read_tuples: u64) -> Result<HashTable> {
        let mut r = Scan::new(outer, mode, read_tuples, 0..outer.len())?;
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
        let mut s = Scan::new(inner, mode, read_tuples, range)?;
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

/// Builds a hash table on `outer` and probes it with `inner`.
pub fn hash_join(
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    read_tuples: u64,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    HashTable::build(outer, mode, read_tuples)?.probe(inner, mode, read_tuples, sink)
}
