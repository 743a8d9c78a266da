//! Sorting an unsorted table through its unclustered indexes, beside the external merge
//! sort of [`crate::sort`] (beyond paper 1, which builds these indexes for joins only):
//!
//! - [`learned_sort`]: the learned partition index, then each partition read in order,
//!   sorted in memory and appended (Kristo et al.'s learned sort, done once on disk, as paper
//!   1, section 4.4 adapts it);
//! - [`btree_sort`]: the B+tree built by inserts, then an in-order scan of its leaves,
//!   each entry's tuple fetched from the table through its position.
//!
//! Both are stable (equal keys keep their input order: a partition holds its tuples in the
//! order they were read and equal keys share a partition; B+tree entries of equal keys are
//! ordered by position), so they write the same table as the external merge sort, byte for
//! byte.

use std::path::Path;

use super::btree::{self, InsertedBTree};
use super::{PartitionFile, PartitionParams};
use crate::memory::MemoryBudget;
use crate::storage::{BLOCK_SIZE, BlockReader, ReadMode, Table, TableWriter, Tuple};
use crate::{Error, Result};

/// What an index-driven sort did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IndexSortReport {
    /// Tuples sorted.
    pub tuples: u64,
    /// Seconds building the index, and writing the sorted table from it.
    pub seconds: (f64, f64),
    /// Bytes written while building the index (its file), and then (the sorted table).
    pub bytes_written: (u64, u64),
    /// Read calls and bytes read while writing the sorted table.
    pub reads: u64,
    /// Bytes read while writing the sorted table.
    pub bytes_read: u64,
}

/// The sorted table's write buffer for `spare` bytes: at most 1 MiB, at least a block.
fn output_buffer(spare: u64) -> usize {
    spare.clamp(BLOCK_SIZE as u64, 1 << 20) as usize
}

/// Sorts `input` into a new table at `out` through a learned partition index built in
/// `scratch_dir` with `params`, within `budget`. `progress` gets tuples done so far.
pub fn learned_sort(
    input: &Table,
    out: &Path,
    params: &PartitionParams,
    scratch_dir: &Path,
    budget: &MemoryBudget,
    mut progress: impl FnMut(u64),
) -> Result<IndexSortReport> {
    crate::files::refuse_same_file(input.path(), out)?;
    let (scratch, _pending) = crate::files::scratch_path(scratch_dir)?;
    // A sort needs no page-sized partitions: each as large as an eighth of the budget
    // (sorted in memory with its scratch, twice the mean for skew, within half of it), so
    // there are few, and their writers flush a page at a time where the budget allows:
    // few, large writes.
    let available = budget.available();
    let partition_tuples = (available / 8 / 32).max(params.partition_tuples);
    let partitions = input.len().div_ceil(partition_tuples).max(1);
    let flush = (available / 4 / (partitions * 16)).clamp(params.flush_tuples, super::PAGE_TUPLES);
    let params = PartitionParams {
        partition_tuples,
        flush_tuples: flush,
        ..*params
    };
    let (index, built) = super::build(input, &scratch, &params, budget, &mut progress)?;
    let started = std::time::Instant::now();
    let parts = PartitionFile::open(&scratch)?;
    let largest = index.skew().largest;
    // The largest partition and the standard library's sort scratch (up to as much again).
    let _held = budget.reserve(largest * 32, "the largest partition, sorted in memory")?;
    let out_bytes = output_buffer(budget.available() / 2);
    let _out = budget.reserve(out_bytes as u64, "the sorted table's write buffer")?;
    let mut writer = TableWriter::create_with_buffer(out, out_bytes)?;
    let mut tuples: Vec<Tuple> = Vec::new();
    let mut report = IndexSortReport {
        tuples: input.len(),
        ..IndexSortReport::default()
    };
    let mut done = 0u64;
    for p in 0..index.partitions() {
        tuples.clear();
        let io = parts.read_partition(p, &mut tuples)?;
        report.reads += io.reads;
        report.bytes_read += io.bytes;
        tuples.sort_by_key(|t| t.key);
        for &t in &tuples {
            writer.push(t)?;
        }
        done += tuples.len() as u64;
        progress(input.len() + done);
    }
    let header = writer.finish()?;
    report.seconds = (
        built.seconds.0 + built.seconds.1,
        started.elapsed().as_secs_f64(),
    );
    report.bytes_written = (
        built.bytes_written,
        header.layout().map_or(0, |l| l.file_len()),
    );
    Ok(report)
}

/// Sorts `input` into a new table at `out` through a B+tree built by inserts in
/// `scratch_dir` within `budget`, then read in order with `frames` pool frames, each
/// tuple fetched from `input` through its position (`mode` reads).
pub fn btree_sort(
    input: &Table,
    out: &Path,
    scratch_dir: &Path,
    budget: &MemoryBudget,
    mode: ReadMode,
    mut progress: impl FnMut(u64),
) -> Result<IndexSortReport> {
    crate::files::refuse_same_file(input.path(), out)?;
    let (scratch, _pending) = crate::files::scratch_path(scratch_dir)?;
    let built = btree::build(input, &scratch, budget, &mut progress)?;
    let started = std::time::Instant::now();
    let out_bytes = output_buffer(budget.available() / 8);
    let _out = budget.reserve(out_bytes as u64, "the sorted table's write buffer")?;
    let frames = (budget.available() / btree::FRAME_BYTES).clamp(btree::MIN_FRAMES, built.frames);
    let _pool = budget.reserve(frames * btree::FRAME_BYTES, "a B+tree's buffer pool")?;
    let mut tree = InsertedBTree::open(&scratch, frames)?;
    let mut reader = BlockReader::new(input, mode)?;
    let mut writer = TableWriter::create_with_buffer(out, out_bytes)?;
    let mut failed: Option<Error> = None;
    let mut done = 0u64;
    tree.scan_from((0, 0), |key, position| {
        let fetched = reader.read_window(position, position + 1).map(|run| {
            run.tuples
                .get((position - run.first_position) as usize)
                .copied()
        });
        let step = match fetched {
            Ok(Some(t)) if t.key == key => writer.push(t),
            Ok(_) => Err(Error::misuse(
                "btree_sort",
                format!("entry ({key}, {position}) does not match the table"),
            )),
            Err(e) => Err(e),
        };
        if let Err(e) = step {
            failed = Some(e);
            return false;
        }
        done += 1;
        if done.is_multiple_of(1 << 20) {
            progress(input.len() + done);
        }
        true
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let header = writer.finish()?;
    let io = reader.stats();
    Ok(IndexSortReport {
        tuples: input.len(),
        seconds: (built.seconds, started.elapsed().as_secs_f64()),
        bytes_written: (
            built.stats.bytes_written,
            header.layout().map_or(0, |l| l.file_len()),
        ),
        reads: io.reads,
        bytes_read: io.bytes,
    })
}
