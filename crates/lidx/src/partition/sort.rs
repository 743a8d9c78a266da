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
use super::{Entries, PartitionFile, PartitionParams};
use crate::memory::MemoryBudget;
use crate::sort::{SortOptions, min_sort_memory, sort_table};
use crate::storage::{
    BLOCK_SIZE, BlockReader, IoStats, ReadMode, TUPLE_SIZE, Table, TableWriter, Tuple,
};
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
    /// Read calls while writing the sorted table.
    pub reads: u64,
    /// Bytes read in all: the index build's passes over the input, then the index's pages
    /// or the tuples fetched while writing the sorted table.
    pub bytes_read: u64,
    /// Partitions too large for memory, sorted on disk by the external merge sort (the
    /// learned sort).
    pub spilled_partitions: u64,
}

/// The largest read or write buffer a sort holds.
const MAX_BUFFER: usize = 1 << 20;

/// The sorted table's write buffer for `spare` bytes: at most [`MAX_BUFFER`], at least a
/// block.
fn output_buffer(spare: u64) -> usize {
    spare.clamp(BLOCK_SIZE as u64, MAX_BUFFER as u64) as usize
}

/// Bytes per tuple the in-memory learned sort holds: the tuples as read, their copy
/// scattered into partitions, and each one's partition number.
const IN_MEMORY_BYTES_PER_TUPLE: u64 = 2 * TUPLE_SIZE as u64 + 4;

/// Tuples per partition of the in-memory learned sort: a page, which a core's L1 cache
/// holds while it is sorted (on 4M lognormal tuples 256 sorted in 0.34 s median, 1024 in
/// 0.36 s, 4096 in 0.34 s; the external sort 0.31 to 0.38 s in the same runs).
const IN_MEMORY_PARTITION_TUPLES: u64 = 256;

/// The learned sort's model error, at least: its partitions are many sampled keys wide, so
/// a coarser model places tuples as well, and faster. In memory, on 4M lognormal keys,
/// ε = 32 took 14 ns a tuple to place against 22 ns at ε = 4, the sort as a whole 0.33 s
/// against 0.41 s.
const SORT_EPSILON: u64 = 32;

/// Sorts `input` into a new table at `out` through a learned partition index built in
/// `scratch_dir` with `params`, within `budget`. Where the table and a partitioned copy
/// fit the budget, the partitions stay in memory (Kristo et al.'s learned sort, the model
/// trained on the same sample): one pass over the input, no partitions file. `progress`
/// gets tuples done so far.
pub fn learned_sort(
    input: &Table,
    out: &Path,
    params: &PartitionParams,
    scratch_dir: &Path,
    budget: &MemoryBudget,
    mut progress: impl FnMut(u64),
) -> Result<IndexSortReport> {
    crate::files::refuse_same_file(input.path(), out)?;
    params.check()?;
    let in_memory = input
        .len()
        .saturating_mul(IN_MEMORY_BYTES_PER_TUPLE)
        .saturating_add(2 * MAX_BUFFER as u64);
    if in_memory <= budget.available() {
        return learned_sort_in_memory(input, out, params, budget, progress);
    }
    let (scratch, _pending) = crate::files::scratch_path(scratch_dir)?;
    // A sort needs no page-sized partitions: each as large as an eighth of the budget
    // (sorted in memory with its scratch, twice the mean for skew, within half of it), so
    // there are few, and their writers, which share half the budget, flush whole pages
    // where it allows: a flush of k pages writes k pages in a row with one call, and they
    // are read back with one.
    let available = budget.available();
    let partition_tuples = (available / 8 / 32).max(params.partition_tuples);
    let partitions = input.len().div_ceil(partition_tuples).max(1);
    let share = available / 2 / (partitions * TUPLE_SIZE as u64);
    let flush = match share {
        s if s >= super::PAGE_TUPLES => (s - s % super::PAGE_TUPLES).min(super::MAX_FLUSH_TUPLES),
        s => s.max(params.flush_tuples),
    };
    let params = PartitionParams {
        // The sort writes the tuples out of the partitions: they hold tuples.
        entries: Entries::Tuples,
        partition_tuples,
        flush_tuples: flush,
        epsilon: params.epsilon.max(SORT_EPSILON),
        ..*params
    };
    // Whole blocks spread over the table stand in for the uniform sample: no pass over
    // the input, and a partition the sample misjudges is sorted on disk if it must be.
    let (index, built) = super::build_sampled(
        input,
        &scratch,
        &params,
        budget,
        super::Sampling::Blocks,
        &mut progress,
    )?;
    let started = std::time::Instant::now();
    let parts = PartitionFile::open(&scratch)?;
    let _map = budget.reserve(
        parts.index().size_in_bytes(),
        "the partition index (model and partition map)",
    )?;
    let out_bytes = output_buffer(budget.available() / 4);
    let _out = budget.reserve(out_bytes as u64, "the sorted table's write buffer")?;
    // Partitions up to the largest, or as many tuples as fit with the standard library's
    // sort scratch (up to as much again) beside an external sort's minimum, are sorted in
    // memory; a larger one (a key repeated past the budget, or a sample that misjudged a
    // range) is sorted on disk by the external merge sort.
    let fits = budget
        .available()
        .saturating_sub(min_sort_memory() + SPILL_BUFFER as u64)
        / 32;
    let held = index.skew().largest.min(fits);
    let _held = budget.reserve(held * 32, "the largest partition, sorted in memory")?;
    let mut writer = TableWriter::create_with_buffer(out, out_bytes)?;
    let mut tuples: Vec<Tuple> = Vec::new();
    let mut report = IndexSortReport {
        tuples: input.len(),
        ..IndexSortReport::default()
    };
    let mut done = 0u64;
    for p in 0..index.partitions() {
        if index.count(p) > held {
            let io = sort_on_disk(&parts, p, scratch_dir, budget, &mut writer)?;
            report.reads += io.reads;
            report.bytes_read += io.bytes;
            report.spilled_partitions += 1;
            done += index.count(p);
            progress(input.len() + done);
            continue;
        }
        tuples.clear();
        let io = parts.read_partition(p, &mut tuples)?;
        // The next partition's pages come in while this one is sorted and written (unless
        // it is one to sort on disk, whose pages may not fit the cache).
        if index.count(p + 1) <= held {
            parts.prefetch_partition(p + 1);
        }
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
    report.bytes_read += built.bytes_read.0 + built.bytes_read.1;
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

/// Bytes of the write buffer that copies an oversized partition into a scratch table.
const SPILL_BUFFER: usize = 16 * BLOCK_SIZE;

/// Sorts partition `p` of `parts`, too large for memory, with the external merge sort
/// (within what `budget` has left), appending it to `writer`: copied into a scratch table
/// in the order written, sorted stably into another, and read back. Returns the partition's
/// reads, and the sorted copy's.
fn sort_on_disk(
    parts: &PartitionFile,
    p: u64,
    scratch_dir: &Path,
    budget: &MemoryBudget,
    writer: &mut TableWriter,
) -> Result<IoStats> {
    let (copy, _copy_pending) = crate::files::scratch_path(scratch_dir)?;
    let (sorted, _sorted_pending) = crate::files::scratch_path(scratch_dir)?;
    let mut io = {
        let _buffer = budget.reserve(SPILL_BUFFER as u64, "an oversized partition's copy")?;
        let mut copier = TableWriter::create_with_buffer(&copy, SPILL_BUFFER)?;
        let io = parts.scan_partition(p, SPILL_BUFFER / BLOCK_SIZE, |tuples| {
            tuples.iter().try_for_each(|&t| copier.push(t))
        })?;
        copier.finish()?;
        io
    };
    let options = SortOptions {
        scratch_dir: scratch_dir.to_path_buf(),
        budget: budget.clone(),
    };
    sort_table(&Table::open(&copy)?, &sorted, &options, |_, _| {})?;
    let sorted = Table::open(&sorted)?;
    let _buffer = budget.reserve(SPILL_BUFFER as u64, "an oversized partition's read buffer")?;
    sorted.scan_in_chunks(SPILL_BUFFER, |tuples| {
        tuples.iter().try_for_each(|&t| writer.push(t))
    })?;
    io.bytes += sorted.len() * TUPLE_SIZE as u64;
    io.reads += sorted.len().div_ceil((SPILL_BUFFER / TUPLE_SIZE) as u64);
    Ok(io)
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
    let built = btree::build(input, &scratch, Entries::Pointers, budget, &mut progress)?;
    let started = std::time::Instant::now();
    let out_bytes = output_buffer(budget.available() / 8);
    let _out = budget.reserve(out_bytes as u64, "the sorted table's write buffer")?;
    let mut tree = InsertedBTree::open(&scratch, btree::MIN_FRAMES)?;
    let _levels = budget.reserve(tree.memory_bytes(), "a B+tree's levels above its leaves")?;
    let frames = (budget.available() / btree::FRAME_BYTES).clamp(btree::MIN_FRAMES, built.frames);
    let _pool = budget.reserve(frames * btree::FRAME_BYTES, "a B+tree's buffer pool")?;
    tree.resize_pool(frames);
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
        bytes_read: built.bytes_read + io.bytes,
        spilled_partitions: 0,
    })
}

/// [`learned_sort`] of a table that fits the budget twice over: read whole, partitioned by
/// the model in one counting scatter (stable: input order within a partition), each
/// partition sorted, and written.
fn learned_sort_in_memory(
    input: &Table,
    out: &Path,
    params: &PartitionParams,
    budget: &MemoryBudget,
    mut progress: impl FnMut(u64),
) -> Result<IndexSortReport> {
    let started = std::time::Instant::now();
    let n = input.len();
    let len = usize::try_from(n)
        .map_err(|_| Error::param("table size", "too many tuples for this machine"))?;
    let _held = budget.reserve(
        n * IN_MEMORY_BYTES_PER_TUPLE,
        "the table and its partitioned copy, in memory",
    )?;
    let chunk = super::read_chunk(MAX_BUFFER as u64);
    let _chunk = budget.reserve(chunk as u64, "the sort's read buffer")?;
    let mut tuples: Vec<Tuple> = Vec::with_capacity(len);
    input.scan_in_chunks(chunk, |read| {
        tuples.extend_from_slice(read);
        progress(tuples.len() as u64);
        Ok(())
    })?;
    let amount = super::sample_size(n, params);
    let sample = super::pick_positions(n, amount, params.seed)?
        .into_iter()
        .map(|at| tuples[at as usize].key)
        .collect();
    let coarse = PartitionParams {
        epsilon: params.epsilon.max(SORT_EPSILON),
        ..*params
    };
    let ranker = super::train(sample, &coarse)?;
    let partitions = n.div_ceil(IN_MEMORY_PARTITION_TUPLES).max(1);
    // Rank to partition by one multiplication (monotone: a product with a positive
    // constant, rounded down); nothing saved depends on it, unlike `partition_of`.
    let scale = partitions as f64 / amount.max(1) as f64;
    let last = (partitions - 1) as u32;
    let ids: Vec<u32> = tuples
        .iter()
        .map(|t| ((ranker.rank(t.key) as f64 * scale) as u32).min(last))
        .collect();
    // Partition p's tuples go to sorted[starts[p]..starts[p + 1]], in input order.
    let mut starts = vec![0usize; partitions as usize + 1];
    for &p in &ids {
        starts[p as usize + 1] += 1;
    }
    for p in 0..partitions as usize {
        starts[p + 1] += starts[p];
    }
    let mut next = starts.clone();
    let mut sorted = vec![Tuple { key: 0, value: 0 }; len];
    for (t, &p) in tuples.iter().zip(&ids) {
        sorted[next[p as usize]] = *t;
        next[p as usize] += 1;
    }
    drop((tuples, ids));
    for bounds in starts.windows(2) {
        sorted[bounds[0]..bounds[1]].sort_by_key(|t| t.key);
    }
    let partitioned_s = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let _out = budget.reserve(MAX_BUFFER as u64, "the sorted table's write buffer")?;
    let mut writer = TableWriter::create_with_buffer(out, MAX_BUFFER)?;
    for &t in &sorted {
        writer.push(t)?;
    }
    let header = writer.finish()?;
    progress(2 * n);
    Ok(IndexSortReport {
        tuples: n,
        seconds: (partitioned_s, started.elapsed().as_secs_f64()),
        bytes_written: (0, header.layout().map_or(0, |l| l.file_len())),
        reads: n.div_ceil(chunk as u64 / TUPLE_SIZE as u64),
        bytes_read: n * TUPLE_SIZE as u64,
        spilled_partitions: 0,
    })
}
