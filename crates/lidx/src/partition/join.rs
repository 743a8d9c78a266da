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

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::btree::{BTreeStats, FRAME_BYTES, InsertedBTree, MIN_FRAMES};
use super::{PartitionFile, PartitionParams};
use crate::join::{JoinSink, JoinStats};
use crate::memory::MemoryBudget;
use crate::storage::{BlockReader, ReadMode, Table, Tuple};
use crate::{Error, Result};

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

/// Which unclustered route joins two unsorted tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnsortedMethod {
    /// [`partition_join`] over learned partition indexes.
    Partition,
    /// [`btree_join`] over B+trees built by inserts.
    BTreeInserts,
    /// Both tables sorted by [`crate::sort::sort_table`] into scratch tables (each with the
    /// whole budget in turn), then a sort-merge join of those: paper 1's sort-then-merge.
    SortMerge,
}

impl UnsortedMethod {
    /// Every route, in the order reports list them.
    pub const ALL: [UnsortedMethod; 3] = [
        UnsortedMethod::Partition,
        UnsortedMethod::BTreeInserts,
        UnsortedMethod::SortMerge,
    ];

    /// The name `lidx join --method` takes.
    pub fn name(self) -> &'static str {
        match self {
            UnsortedMethod::Partition => "partition",
            UnsortedMethod::BTreeInserts => "btree-inserts",
            UnsortedMethod::SortMerge => "sort-merge",
        }
    }
}

/// A join of two unsorted tables through unclustered indexes, as `lidx join` runs it.
#[derive(Debug)]
pub struct UnsortedJoin<'a> {
    /// The outer table.
    pub outer: &'a Table,
    /// The inner table.
    pub inner: &'a Table,
    /// The route.
    pub method: UnsortedMethod,
    /// Saved indexes of the outer and inner tables (partitions or B+tree files of the
    /// method's kind); each one absent is built into `scratch_dir` and removed after.
    pub indexes: (Option<PathBuf>, Option<PathBuf>),
    /// Where indexes built on the fly go.
    pub scratch_dir: PathBuf,
    /// Memory for the builds and the join (a B+tree join gives each tree's pool half).
    pub budget: MemoryBudget,
    /// How the B+tree join fetches values from the tables.
    pub mode: ReadMode,
}

/// What an unsorted join did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UnsortedJoinReport {
    /// Seconds building the indexes that were not given, or sorting (sort-merge); 0 when both
    /// indexes were given; not counted in `join_s`.
    pub build_s: f64,
    /// Seconds of the join itself.
    pub join_s: f64,
    /// I/O of each side (partition pages, or the tables' blocks behind the trees), lookups
    /// and output.
    pub stats: JoinStats,
    /// Partitions read on each side (the learned route).
    pub partitions_read: (u64, u64),
    /// Leaf I/O of the outer and inner trees (the B+tree route).
    pub tree_io: (BTreeStats, BTreeStats),
}

/// Runs `join`, emitting into `sink` in key order.
pub fn run_unsorted(
    join: &UnsortedJoin<'_>,
    sink: &mut impl JoinSink,
) -> Result<UnsortedJoinReport> {
    // The two index routes differ only in their kind of index; sort-merge has none.
    let learned = match join.method {
        UnsortedMethod::SortMerge => return sort_merge(join, sink),
        UnsortedMethod::Partition => true,
        UnsortedMethod::BTreeInserts => false,
    };
    let mut report = UnsortedJoinReport::default();
    let started = Instant::now();
    let mut scratch = Vec::new();
    let mut index_of = |table: &Table, given: &Option<PathBuf>| -> Result<PathBuf> {
        if let Some(path) = given {
            return Ok(path.clone());
        }
        let (path, pending) = crate::files::scratch_path(&join.scratch_dir)?;
        if learned {
            let params = PartitionParams::default();
            super::build(table, &path, &params, &join.budget, |_| {})?;
        } else {
            super::btree::build(table, &path, &join.budget, |_| {})?;
        }
        let kept = path.to_path_buf();
        scratch.push((path, pending));
        Ok(kept)
    };
    let outer_path = index_of(join.outer, &join.indexes.0)?;
    let inner_path = index_of(join.inner, &join.indexes.1)?;
    if !scratch.is_empty() {
        report.build_s = started.elapsed().as_secs_f64();
    }
    let started = Instant::now();
    if learned {
        let outer = PartitionFile::open(&outer_path)?;
        let inner = PartitionFile::open(&inner_path)?;
        check_count(&outer_path, outer.index().len(), join.outer)?;
        check_count(&inner_path, inner.index().len(), join.inner)?;
        let held = 32 * (outer.index().skew().largest + inner.index().skew().largest);
        let _held = join
            .budget
            .reserve(held, "the two partitions held at once")?;
        let stats = partition_join(&outer, &inner, sink)?;
        report.stats = stats.join;
        report.partitions_read = stats.partitions_read;
    } else {
        let mut outer = InsertedBTree::open(&outer_path, MIN_FRAMES)?;
        let mut inner = InsertedBTree::open(&inner_path, MIN_FRAMES)?;
        check_count(&outer_path, outer.len(), join.outer)?;
        check_count(&inner_path, inner.len(), join.inner)?;
        let _levels = join.budget.reserve(
            outer.memory_bytes() + inner.memory_bytes(),
            "the two B+trees' levels above their leaves",
        )?;
        // The rest of the budget for the two pools, half each.
        let frames = (join.budget.available() / 2 / FRAME_BYTES).max(MIN_FRAMES);
        let _pools = join
            .budget
            .reserve(2 * frames * FRAME_BYTES, "the two B+trees' pools")?;
        outer.resize_pool(frames);
        inner.resize_pool(frames);
        report.stats = btree_join(
            &mut outer, join.outer, &mut inner, join.inner, join.mode, sink,
        )?;
        report.tree_io = (outer.stats(), inner.stats());
    }
    report.join_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// [`UnsortedMethod::SortMerge`]: both tables sorted into scratch tables beside the
/// output (removed after; the sorting is `build_s`), then merged (`join_s`).
fn sort_merge(join: &UnsortedJoin<'_>, sink: &mut impl JoinSink) -> Result<UnsortedJoinReport> {
    let started = Instant::now();
    let options = crate::sort::SortOptions {
        scratch_dir: join.scratch_dir.clone(),
        budget: join.budget.clone(),
    };
    let mut sorted = Vec::new();
    for table in [join.outer, join.inner] {
        let path = crate::files::scratch_path(&join.scratch_dir)?;
        crate::sort::sort_table(table, &path.0, &options, |_, _| {})?;
        sorted.push(path);
    }
    let build_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let outer = Table::open(&sorted[0].0)?;
    let inner = Table::open(&sorted[1].0)?;
    // Scans of both tables read this many tuples at a time: an eighth of the budget between
    // their buffers, the rest for runs of equal keys.
    let read_tuples = (join.budget.available() / 8 / 16 / 4).clamp(256, 1 << 16);
    let stats =
        crate::join::merge_join(&outer, &inner, join.mode, read_tuples, &join.budget, sink)?;
    Ok(UnsortedJoinReport {
        build_s,
        join_s: started.elapsed().as_secs_f64(),
        stats,
        ..UnsortedJoinReport::default()
    })
}

/// Fails unless an index at `path` holds as many tuples as `table`.
fn check_count(path: &Path, n: u64, table: &Table) -> Result<()> {
    if n == table.len() {
        return Ok(());
    }
    Err(Error::IndexMismatch {
        path: path.to_path_buf(),
        problem: format!(
            "the index holds {n} tuples, {} holds {}; rebuild it",
            table.path().display(),
            table.len()
        ),
    })
}
