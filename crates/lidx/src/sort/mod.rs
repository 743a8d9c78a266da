//! External merge sort under a memory budget: of a table's tuples, the sort-then-merge
//! route for unsorted tables of paper 1 (section 5.4), and of wider fixed-width records,
//! the entries the sort-merge joins over LSM-trees sort (paper 5, section 3.3).
//!
//! Two phases, each reading and writing in large sequential I/Os:
//! 1. **Runs**: records go into a run buffer as large as the budget allows; each full
//!    buffer is sorted in memory and written to an unnamed scratch file (Linux's
//!    `O_TMPFILE`, so nothing is left behind even when the process is killed).
//! 2. **Merge**: the runs are merged k at a time through a heap, each run behind a read buffer
//!    of at least [`MIN_MERGE_READ`]; when more runs exist than the budget can give buffers,
//!    groups of them are merged into longer runs first (one more pass over the data each).
//!
//! The sort is **stable**: equal keys keep their input order (runs are consecutive pieces of
//! the input, each sorted stably, and the merge breaks ties by run number), so sorting the
//! same tuples always writes the same table.
//!
//! [`RecordSorter`] is the sort, fed one record at a time; [`sort_table`] is its user for
//! tables (8-byte payloads: the values).
//!
//! Memory: everything that grows with the data is reserved from the [`MemoryBudget`] before
//! it is allocated: the input chunk, the run buffer together with the scratch space the
//! standard library's stable sort takes, the merge's read buffers and heap, and the output
//! writer's buffer.

use std::path::{Path, PathBuf};

use crate::memory::{MemoryBudget, Reservation};
use crate::storage::{BLOCK_SIZE, TUPLE_SIZE, Table, TableWriter, Tuple};
use crate::{Error, Result};

mod records;
#[cfg(test)]
mod tests;

pub use records::{MIN_MERGE_READ, RecordSorter, SortedRecords, min_sort_memory_for};

/// The input chunk read at a time while forming runs, at most.
const MAX_INPUT_CHUNK: usize = 4 << 20;

/// The output writer's buffer, at most.
const MAX_OUTPUT_BUFFER: usize = 1 << 20;

/// A table's value: the payload [`sort_table`] sorts with each key.
const VALUE_BYTES: usize = TUPLE_SIZE - 8;

/// What an external sort did, in the units paper 1 argues in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortReport {
    /// Records (a table's tuples) sorted.
    pub records: u64,
    /// Runs written by the first phase (1 when the input fit in the run buffer; then no
    /// scratch file is written).
    pub runs: u64,
    /// Passes over the data after the first phase: 1 for a single merge, more when runs
    /// had to be merged in groups first (0 when there was one run).
    pub merge_passes: u32,
    /// Largest number of runs merged at once.
    pub fan_in: u64,
    /// Records the largest run buffer held.
    pub run_records: u64,
    /// Bytes read: the input once, and the scratch runs once per pass.
    pub bytes_read: u64,
    /// Read calls made for those bytes.
    pub read_calls: u64,
    /// Bytes written: the scratch runs, and the output table (its data, checksums and header).
    pub bytes_written: u64,
    /// The budget's peak after the sort: the most bytes the sort reserved at once, when the
    /// budget was its alone.
    pub peak_reserved: u64,
}

/// Where a sort may put its scratch runs, and how much memory it may use.
#[derive(Clone, Debug)]
pub struct SortOptions {
    /// Directory for the unnamed scratch files (the output's directory by default).
    pub scratch_dir: PathBuf,
    /// The budget everything is reserved from.
    pub budget: MemoryBudget,
}

/// The smallest budget [`sort_table`] works with: enough for a block of input and the
/// sorter's smallest (see [`min_sort_memory_for`]).
pub fn min_sort_memory() -> u64 {
    min_sort_memory_for(VALUE_BYTES) + BLOCK_SIZE as u64
}

/// Sorts the (key, value) tuples of `input` by key, stably, into a new table at `out`
/// (written atomically, sorted flag set), within `options.budget`. A budget with less than
/// [`min_sort_memory`] bytes left is refused before anything is read. `progress` gets the
/// phase and the number of tuples read or merged so far in it.
pub fn sort_table(
    input: &Table,
    out: &Path,
    options: &SortOptions,
    mut progress: impl FnMut(SortPhase, u64),
) -> Result<SortReport> {
    input.require_pairs("sorting")?;
    crate::files::refuse_same_file(input.path(), out)?;
    let budget = &options.budget;
    if budget.available() < min_sort_memory() {
        return Err(too_small(budget, min_sort_memory()));
    }
    // The input chunk, from what the sorter's smallest run buffer leaves.
    let spare = budget.available() - min_sort_memory_for(VALUE_BYTES);
    let chunk = (budget.available() / 8)
        .min(spare)
        .clamp(BLOCK_SIZE as u64, MAX_INPUT_CHUNK as u64);
    let chunk = chunk - chunk % BLOCK_SIZE as u64;
    let (mut bytes_read, mut read_calls) = (0u64, 0u64);
    let sorter = {
        let _chunk_held = budget.reserve(chunk, "the sort's input chunk")?;
        let mut sorter = RecordSorter::new(VALUE_BYTES, input.len(), options)?;
        let mut read = 0u64;
        input.scan_in_chunks(chunk as usize, |tuples| {
            bytes_read += (tuples.len() * TUPLE_SIZE) as u64;
            read_calls += 1;
            for t in tuples {
                sorter.push(t.key, &t.value.to_le_bytes())?;
            }
            read += tuples.len() as u64;
            progress(SortPhase::Runs, read);
            Ok(())
        })?;
        sorter
    };
    let keep = (budget.available() / 8).clamp(BLOCK_SIZE as u64, MAX_OUTPUT_BUFFER as u64);
    let mut sorted = sorter.finish(keep, |n| progress(SortPhase::Merge, n))?;
    let (mut writer, _out_held) = output_writer(out, budget)?;
    let mut merged = 0u64;
    while let Some((key, value)) = sorted.next_record()? {
        let value = <[u8; VALUE_BYTES]>::try_from(value)
            .map_err(|_| Error::misuse("sort::sort_table", "a sorted record of another width"))?;
        writer.push(Tuple {
            key,
            value: u64::from_le_bytes(value),
        })?;
        merged += 1;
        if merged.is_multiple_of(1 << 20) {
            progress(SortPhase::Merge, merged);
        }
    }
    let header = writer.finish()?;
    let mut report = *sorted.report();
    progress(SortPhase::Merge, report.records);
    report.bytes_read += bytes_read;
    report.read_calls += read_calls;
    report.bytes_written += header.layout().map_or(0, |l| l.file_len());
    report.peak_reserved = budget.peak();
    Ok(report)
}

/// The output table's writer, with a buffer of up to [`MAX_OUTPUT_BUFFER`] bytes (at least
/// a block) reserved from what `budget` has left.
fn output_writer(out: &Path, budget: &MemoryBudget) -> Result<(TableWriter, Reservation)> {
    let bytes = budget
        .available()
        .clamp(BLOCK_SIZE as u64, MAX_OUTPUT_BUFFER as u64);
    let held = budget.reserve(bytes, "the sorted table's write buffer")?;
    Ok((TableWriter::create_with_buffer(out, bytes as usize)?, held))
}

/// The phase a sort's progress count belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortPhase {
    /// Reading the input and writing sorted runs.
    Runs,
    /// Merging runs into longer ones, or into the output.
    Merge,
}

/// The error for a budget too small to sort in, naming the smallest that works.
fn too_small(budget: &MemoryBudget, min: u64) -> Error {
    Error::param(
        "memory limit",
        format!(
            "{} bytes left of {} cannot sort: an external sort needs at least {min} bytes",
            budget.available(),
            budget.limit(),
        ),
    )
}
