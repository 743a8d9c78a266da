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
//!   entries in key order; each distinct key is looked up in the inner B+tree.
//!
//! Both take each side's values where its index keeps them ([`Entries::Tuples`]) or fetch
//! them from its table through the stored positions ([`Entries::Pointers`], the paper's),
//! a block read each unless the block is the one read last: the same fetch, counted the
//! same way, for both routes. A key's outer values are fetched once, then each inner
//! match's.
//!
//! [`driver`](super::driver) runs them as `partition` and `btree-inserts` (and paper 1's
//! third route, `sort-merge`: both tables sorted, then merged), building or checking the
//! indexes of both sides first.

use super::{JoinSink, JoinStats};
use crate::Result;
use crate::partition::btree::InsertedBTree;
use crate::partition::{Entries, PartitionFile};
use crate::storage::{BlockReader, IoStats, ReadMode, Table, Tuple};

/// What the learned join did besides [`JoinStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionJoinStats {
    /// Page reads of both sides (partitions and, for pointers, table blocks), and the
    /// output.
    pub join: JoinStats,
    /// Partitions read from each side (outer, inner).
    pub partitions_read: (u64, u64),
    /// Tuples of the largest partition held at once (outer, inner).
    pub largest_held: (u64, u64),
    /// Table blocks read to fetch values through pointers (outer, inner); 0 for a side
    /// whose index holds tuples.
    pub fetch_io: (IoStats, IoStats),
}

/// Where a side's values come from: the words its index holds, or its table, through the
/// positions its index holds.
enum Values<'t> {
    /// The words are the values.
    Held,
    /// The words are positions into the table this reader reads.
    Fetched(BlockReader<'t>),
}

impl<'t> Values<'t> {
    /// The values of an index with `entries` over `table`, read with `mode`.
    fn of(entries: Entries, table: &'t Table, mode: ReadMode) -> Result<Values<'t>> {
        Ok(match entries {
            Entries::Tuples => Values::Held,
            Entries::Pointers => Values::Fetched(BlockReader::new(table, mode)?),
        })
    }

    /// The value an entry's `word` stands for.
    #[inline]
    fn value(&mut self, word: u64) -> Result<u64> {
        match self {
            Values::Held => Ok(word),
            Values::Fetched(reader) => value_at(reader, word),
        }
    }

    /// The table reads made so far.
    fn io(&self) -> IoStats {
        match self {
            Values::Held => IoStats::default(),
            Values::Fetched(reader) => reader.stats(),
        }
    }
}

/// Emits every pair of a key's outer words and inner words, values taken from `values`:
/// the outer ones once each, into `held`, then each inner match's.
fn emit_key(
    key: u64,
    outer: impl Iterator<Item = u64>,
    inner: impl Iterator<Item = u64>,
    values: &mut (Values<'_>, Values<'_>),
    held: &mut Vec<u64>,
    sink: &mut impl JoinSink,
    output: &mut u64,
) -> Result<()> {
    let mut inner = inner.peekable();
    if inner.peek().is_none() {
        return Ok(());
    }
    held.clear();
    for word in outer {
        held.push(values.0.value(word)?);
    }
    for word in inner {
        let w = values.1.value(word)?;
        for &v in held.iter() {
            sink.emit(key, v, w)?;
            *output += 1;
        }
    }
    Ok(())
}

/// Joins the tables behind two partition files, the learned way (see the module
/// documentation), emitting into `sink` in key order. `tables` are the (outer, inner)
/// tables the files index: a side whose partitions hold pointers fetches its values there,
/// read with `mode`.
pub fn partition_join(
    files: (&PartitionFile, &PartitionFile),
    tables: (&Table, &Table),
    mode: ReadMode,
    sink: &mut impl JoinSink,
) -> Result<PartitionJoinStats> {
    let (outer, inner) = files;
    let mut stats = PartitionJoinStats::default();
    let mut values = (
        Values::of(outer.index().entries(), tables.0, mode)?,
        Values::of(inner.index().entries(), tables.1, mode)?,
    );
    let mut outer_tuples: Vec<Tuple> = Vec::new();
    let mut inner_tuples: Vec<Tuple> = Vec::new();
    let mut held = Vec::new();
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
            let matches = inner_tuples[from..].iter().take_while(|t| t.key == key);
            emit_key(
                key,
                run.iter().map(|t| t.value),
                matches.map(|t| t.value),
                &mut values,
                &mut held,
                sink,
                &mut stats.join.output,
            )?;
        }
    }
    stats.fetch_io = (values.0.io(), values.1.io());
    stats.join.outer_io += stats.fetch_io.0;
    stats.join.inner_io += stats.fetch_io.1;
    Ok(stats)
}

/// Joins two tables through their inserted B+trees, the classic way (see the module
/// documentation), emitting into `sink` in key order. A side whose leaves hold pointers
/// fetches its values from its table, read with `mode`.
pub fn btree_join(
    outer_tree: &mut InsertedBTree,
    outer: &Table,
    inner_tree: &mut InsertedBTree,
    inner: &Table,
    mode: ReadMode,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    let mut stats = JoinStats::default();
    let mut values = (
        Values::of(outer_tree.entries(), outer, mode)?,
        Values::of(inner_tree.entries(), inner, mode)?,
    );
    let mut run_key: Option<u64> = None;
    let mut run: Vec<u64> = Vec::new();
    let mut matches: Vec<u64> = Vec::new();
    let mut held = Vec::new();
    let mut failed: Option<crate::Error> = None;
    let mut flush = |key: u64, run: &[u64], stats: &mut JoinStats| -> Result<()> {
        matches.clear();
        inner_tree.lookup(key, &mut matches)?;
        stats.lookups += 1;
        emit_key(
            key,
            run.iter().copied(),
            matches.iter().copied(),
            &mut values,
            &mut held,
            sink,
            &mut stats.output,
        )
    };
    outer_tree.scan_from((0, 0), |key, word| {
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
        run.push(word);
        true
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some(k) = run_key {
        flush(k, &run, &mut stats)?;
    }
    stats.outer_io = values.0.io();
    stats.inner_io = values.1.io();
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
