//! Joins of two unsorted tables through their unclustered indexes (paper 1, sections 4.4
//! and 5.4), both emitting in key order the same multiset as the sorted joins: one
//! `(key, outer value, inner value)` triple per pair of tuples with equal keys.
//!
//! - [`partition_join`]: the learned route. The outer table's partitions are read in order
//!   and sorted in memory; for each key the inner side's model names the inner partition,
//!   which is read and sorted once (keys arrive in order, and partitions are key ranges in
//!   order, so each inner partition is needed in one stretch). One partition per side is
//!   in memory at a time.
//! - [`btree_join`]: the classic route. A range scan of the outer B+tree streams its
//!   entries in key order; each distinct key is looked up in the inner B+tree; values are
//!   fetched from both tables through the stored positions, a block read each unless the
//!   block is the one read last.
//!
//! [`driver`](super::driver) runs them as `partition` and `btree-inserts` (and paper 1's
//! third route, `sort-merge`: both tables sorted, then merged), building or checking the
//! indexes of both sides first.

use super::{JoinSink, JoinStats};
use crate::Result;
use crate::partition::PartitionFile;
use crate::partition::btree::InsertedBTree;
use crate::storage::{BlockReader, ReadMode, Table, Tuple};

/// What the learned join did besides [`JoinStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionJoinStats {
    /// Page reads of both sides, and the output.
    pub join: JoinStats,
    /// Partitions read from each side (outer, inner).
    pub partitions_read: (u64, u64),
    /// Tuples of the largest partition held at once (outer, inner).
    pub largest_held: (u64, u64),
}

/// Joins the tables behind two partition files, the learned way (see the module
/// documentation), emitting into `sink` in key order.
pub fn partition_join(
    outer: &PartitionFile,
    inner: &PartitionFile,
    sink: &mut impl JoinSink,
) -> Result<PartitionJoinStats> {
    let mut stats = PartitionJoinStats::default();
    let mut outer_tuples: Vec<Tuple> = Vec::new();
    let mut inner_tuples: Vec<Tuple> = Vec::new();
    let mut loaded: Option<u64> = None;
    for p in 0..outer.index().partitions() {
        if outer.index().count(p) == 0 {
            continue;
        }
        outer_tuples.clear();
        stats.join.outer_io += outer.read_partition(p, &mut outer_tuples)?;
        stats.partitions_read.0 += 1;
        stats.largest_held.0 = stats.largest_held.0.max(outer_tuples.len() as u64);
        // Stable: equal keys keep the order they were written in.
        outer_tuples.sort_by_key(|t| t.key);
        for run in outer_tuples.chunk_by(|a, b| a.key == b.key) {
            let key = run[0].key;
            let q = inner.index().partition_of(key);
            if loaded != Some(q) {
                inner_tuples.clear();
                stats.join.inner_io += inner.read_partition(q, &mut inner_tuples)?;
                stats.partitions_read.1 += 1;
                stats.largest_held.1 = stats.largest_held.1.max(inner_tuples.len() as u64);
                inner_tuples.sort_by_key(|t| t.key);
                loaded = Some(q);
            }
            stats.join.lookups += 1;
            let from = inner_tuples.partition_point(|t| t.key < key);
            for i in inner_tuples[from..].iter().take_while(|t| t.key == key) {
                for o in run {
                    sink.emit(key, o.value, i.value)?;
                    stats.join.output += 1;
                }
            }
        }
    }
    Ok(stats)
}

/// Joins two tables through their inserted B+trees, the classic way (see the module
/// documentation), emitting into `sink` in key order. `mode` is how values are fetched
/// from the tables.
pub fn btree_join(
    outer_tree: &mut InsertedBTree,
    outer: &Table,
    inner_tree: &mut InsertedBTree,
    inner: &Table,
    mode: ReadMode,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    let mut stats = JoinStats::default();
    let mut outer_reader = BlockReader::new(outer, mode)?;
    let mut inner_reader = BlockReader::new(inner, mode)?;
    let mut run_key: Option<u64> = None;
    let mut run: Vec<u64> = Vec::new();
    let mut matches: Vec<u64> = Vec::new();
    let mut failed: Option<crate::Error> = None;
    let mut flush = |key: u64, run: &[u64], stats: &mut JoinStats| -> Result<()> {
        matches.clear();
        inner_tree.lookup(key, &mut matches)?;
        stats.lookups += 1;
        for &q in &matches {
            let w = value_at(&mut inner_reader, q)?;
            for &p in run {
                let v = value_at(&mut outer_reader, p)?;
                sink.emit(key, v, w)?;
                stats.output += 1;
            }
        }
        Ok(())
    };
    outer_tree.scan_from((0, 0), |key, position| {
        if run_key != Some(key) {
            if let Some(k) = run_key
                && let Err(e) = flush(k, &run, &mut stats)
            {
                failed = Some(e);
                return false;
            }
            run_key = Some(key);
            run.clear();
        }
        run.push(position);
        true
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some(k) = run_key {
        flush(k, &run, &mut stats)?;
    }
    stats.outer_io = outer_reader.stats();
    stats.inner_io = inner_reader.stats();
    Ok(stats)
}

/// The value of the tuple at `position`, read through `reader` (one block, unless it is
/// the block held).
fn value_at(reader: &mut BlockReader<'_>, position: u64) -> Result<u64> {
    let run = reader.read_window(position, position + 1)?;
    let at = (position - run.first_position) as usize;
    run.tuples.get(at).map(|t| t.value).ok_or_else(|| {
        crate::Error::misuse(
            "btree_join",
            format!("position {position} is past the table"),
        )
    })
}
